#pragma once
// The serving certificate, reloaded from its files without a restart: every TLS handshake picks
// the current pair through SSL_CTX_set_cert_cb, so rotation never touches the live SSL_CTX
// (facts/webhook.md §3).

#include <openssl/ssl.h>

#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gpuguard::webhook {

struct CertPair {
  X509* leaf = nullptr;
  STACK_OF(X509)* chain = nullptr;
  EVP_PKEY* key = nullptr;
  double not_after = 0;  // Unix time
  ~CertPair();
  CertPair() = default;
  CertPair(const CertPair&) = delete;
  CertPair& operator=(const CertPair&) = delete;
};

class CertStore {
 public:
  CertStore(std::string cert_path, std::string key_path);
  // Loads the files; an error message when they cannot be used (the old pair stays).
  std::optional<std::string> load();
  // Loads again when either file changed (content, size, inode or mtime). Returns whether it did
  // load, and the error if the new files were bad.
  bool reload_if_changed(std::optional<std::string>& error);
  [[nodiscard]] std::shared_ptr<const CertPair> current() const;
  [[nodiscard]] bool valid_now() const;

  // Sets up a server context: TLS 1.2 minimum, forward-secret AEAD ciphers only, no
  // compression or renegotiation, the per-handshake certificate callback, and client
  // certificate verification when `client_ca` is given.
  bool configure(SSL_CTX& ctx, const std::string& client_ca, std::string& error);

 private:
  static int on_handshake(SSL* ssl, void* arg);
  struct Stamp {
    std::filesystem::file_time_type cert_mtime, key_mtime;
    uintmax_t cert_size = 0, key_size = 0;
    std::string cert_target, key_target;
    bool operator==(const Stamp&) const = default;
  };
  [[nodiscard]] Stamp stamp() const;

  std::string cert_path_, key_path_;
  mutable std::mutex mu_;
  std::shared_ptr<const CertPair> current_;
  Stamp loaded_;
};

}  // namespace gpuguard::webhook
