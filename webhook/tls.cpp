#include "webhook/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

namespace gpuguard::webhook {

CertPair::~CertPair() {
  if (leaf) X509_free(leaf);
  if (chain) sk_X509_pop_free(chain, X509_free);
  if (key) EVP_PKEY_free(key);
}

namespace {

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  if (!e) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

std::optional<std::string> read_all(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + path;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  if (out.size() > (1u << 20)) return path + " is over 1 MiB";
  return std::nullopt;
}

double asn1_time_to_unix(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

CertStore::CertStore(std::string cert_path, std::string key_path)
    : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}

CertStore::Stamp CertStore::stamp() const {
  Stamp s;
  std::error_code ec;
  s.cert_mtime = std::filesystem::last_write_time(cert_path_, ec);
  s.cert_size = std::filesystem::file_size(cert_path_, ec);
  s.key_mtime = std::filesystem::last_write_time(key_path_, ec);
  s.key_size = std::filesystem::file_size(key_path_, ec);
  // Kubernetes swaps a `..data` symlink when a mounted Secret changes: follow the links.
  s.cert_target = std::filesystem::weakly_canonical(cert_path_, ec).string();
  s.key_target = std::filesystem::weakly_canonical(key_path_, ec).string();
  return s;
}

std::optional<std::string> CertStore::load() {
  Stamp before = stamp();
  std::string cert_pem, key_pem;
  if (auto e = read_all(cert_path_, cert_pem)) return e;
  if (auto e = read_all(key_path_, key_pem)) return e;
  auto pair = std::make_shared<CertPair>();
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  pair->leaf = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  if (!pair->leaf) {
    BIO_free(cb);
    return cert_path_ + ": no PEM certificate: " + openssl_error();
  }
  pair->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr)) sk_X509_push(pair->chain, extra);
  ERR_clear_error();  // the loop ends on "no start line"
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  pair->key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  if (!pair->key) return key_path_ + ": no PEM private key: " + openssl_error();
  if (X509_check_private_key(pair->leaf, pair->key) != 1) return key_path_ + " does not match the certificate in " + cert_path_;
  pair->not_after = asn1_time_to_unix(X509_get0_notAfter(pair->leaf));
  std::lock_guard lock(mu_);
  current_ = std::move(pair);
  loaded_ = before;
  return std::nullopt;
}

bool CertStore::reload_if_changed(std::optional<std::string>& error) {
  Stamp now = stamp();
  {
    std::lock_guard lock(mu_);
    if (now == loaded_) return false;
  }
  error = load();
  if (error) {
    std::lock_guard lock(mu_);
    loaded_ = now;  // do not retry the same bad files on every poll
  }
  return true;
}

std::shared_ptr<const CertPair> CertStore::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

bool CertStore::valid_now() const {
  auto c = current();
  return c && c->not_after > static_cast<double>(std::time(nullptr));
}

int CertStore::on_handshake(SSL* ssl, void* arg) {
  auto* self = static_cast<CertStore*>(arg);
  auto pair = self->current();
  if (!pair) return 0;
  if (SSL_use_certificate(ssl, pair->leaf) != 1) return 0;
  if (SSL_use_PrivateKey(ssl, pair->key) != 1) return 0;
  if (pair->chain && sk_X509_num(pair->chain) > 0 && SSL_set1_chain(ssl, pair->chain) != 1) return 0;
  return 1;
}

bool CertStore::configure(SSL_CTX& ctx, const std::string& client_ca, std::string& error) {
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) {
    error = "cannot set TLS 1.2 as the minimum: " + openssl_error();
    return false;
  }
  // Mozilla "intermediate" TLS 1.2 suites: ECDHE key exchange (forward secrecy), AEAD only.
  static constexpr const char* kTls12Ciphers =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
      "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  if (SSL_CTX_set_cipher_list(&ctx, kTls12Ciphers) != 1) {
    error = "cannot set the cipher list: " + openssl_error();
    return false;
  }
  // Key exchange on elliptic curves only. OpenSSL's default group list also offers the finite-field
  // groups in TLS 1.3: a ClientHello with an ffdhe8192 key share cost the server ~130 ms of CPU
  // against ~1 ms for x25519 (DHEat, CVE-2002-20001). Go's TLS client (the API server) offers
  // X25519, P-256 and P-384 (crypto/tls defaultCurvePreferences).
  if (SSL_CTX_set1_groups_list(&ctx, "X25519:P-256:P-384") != 1) {
    error = "cannot set the key exchange groups: " + openssl_error();
    return false;
  }
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Idle connections keep no read or write buffer (about 34 KiB each otherwise).
  SSL_CTX_set_mode(&ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_cert_cb(&ctx, &CertStore::on_handshake, this);
  if (!client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(&ctx, client_ca.c_str(), nullptr) != 1) {
      error = "cannot load the client CA " + client_ca + ": " + openssl_error();
      return false;
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca.c_str());
    if (names) SSL_CTX_set_client_CA_list(&ctx, names);
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

}  // namespace gpuguard::webhook
