// gpuguard audit, the part gpuguard-net runs (cli/net.h): list a live cluster (the kinds the
// enabled rules check and read), write what it listed as one YAML file per object, and lint those
// files as a complete cluster — so `gpuguard lint --complete DIR` over an `--snapshot DIR` gives
// exactly the audit's findings.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/lint.h"
#include "cli/net.h"
#include "engine/evaluate.h"
#include "engine/json.h"
#include "engine/kinds.h"
#include "engine/object.h"
#include "engine/yaml_emit.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/resources.h"

namespace gpuguard::cli {

namespace fs = std::filesystem;
using engine::json;

namespace {

// The metadata string `key` of an object ("" when absent or not a string).
std::string meta(const json& obj, std::string_view key) {
  const json* md = engine::member(obj, "metadata");
  auto v = md ? engine::string_at(*md, key) : std::nullopt;
  return v ? std::string(*v) : std::string();
}

// A Pod or ReplicaSet whose controller is a kind with a pod template (a ReplicaSet, Job,
// Deployment, training job, …): the template is linted on the controller, so the generated
// object would only repeat its findings.
bool made_by_controller(const engine::KindRef& kind, const json& obj) {
  if (!((kind.group.empty() && kind.kind == "Pod") || (kind.group == "apps" && kind.kind == "ReplicaSet"))) return false;
  const json* md = engine::member(obj, "metadata");
  const json* refs = md ? engine::member(*md, "ownerReferences") : nullptr;
  if (!refs || !refs->is_array()) return false;
  for (const auto& ref : *refs) {
    if (!ref.is_object() || !engine::bool_at(ref, "controller").value_or(false)) continue;
    auto api = engine::string_at(ref, "apiVersion");
    auto k = engine::string_at(ref, "kind");
    if (!api || !k) continue;
    const engine::Gvk gvk = engine::parse_gvk(*api, *k);
    const auto& kinds = engine::pod_template_kinds();
    if (std::find(kinds.begin(), kinds.end(), engine::KindRef{gvk.group, gvk.kind}) != kinds.end()) return true;
  }
  return false;
}

// "ml/deployments.apps/train.yaml", "_cluster/priorityclasses.scheduling.k8s.io/high.yaml".
fs::path snapshot_path(const kube::Resource& res, const json& obj) {
  const std::string name = meta(obj, "name");
  const std::string ns = res.namespaced ? meta(obj, "namespace") : "";
  const std::string folder = res.group.empty() ? res.plural : res.plural + "." + res.group;
  return fs::path(ns.empty() ? "_cluster" : ns) / folder / (name + ".yaml");
}

}  // namespace

int run_audit(const engine::Registry& registry, const AuditOptions& opts) {
  auto loaded = load_run_config(opts.config_path, opts.no_config, registry);
  if (!loaded) return kExitUsage;
  engine::Config config = std::move(*loaded);
  auto outputs = parse_outputs(opts.report, "audit");
  if (!outputs) return kExitUsage;

  auto cluster = kube::resolve_config(opts.kubeconfig, opts.context, kube::Environment::current());
  if (!cluster) {
    std::cerr << "gpuguard audit: " << cluster.error() << "\n";
    return kExitUsage;
  }
  auto client = kube::Client::create(*cluster);
  if (!client) {
    std::cerr << "gpuguard audit: " << client.error() << "\n";
    return kExitUsage;
  }
  // The rules whose answer depends on the Kubernetes version read the cluster's own (the config's
  // kubernetesVersion stands only when /version cannot be read). A snapshot linted later needs it
  // in its config: say which it was.
  if (auto version = (*client)->server_version()) {
    if (*version != config.settings.kubernetes_version)
      std::cerr << "gpuguard audit: the API server runs Kubernetes " << *version << " (kubernetesVersion "
                << config.settings.kubernetes_version << " of the config not used)\n";
    config.settings.kubernetes_version = *version;
  } else {
    std::cerr << "gpuguard audit: cannot read the API server's version (" << version.error().message << "); kubernetesVersion "
              << config.settings.kubernetes_version << " assumed\n";
  }

  // Where the listed objects go: the snapshot folder (kept), or a temporary one.
  fs::path root;
  std::unique_ptr<fs::path, void (*)(fs::path*)> cleanup(nullptr, [](fs::path* p) {
    std::error_code ec;
    fs::remove_all(*p, ec);
    delete p;
  });
  if (!opts.snapshot.empty()) {
    root = opts.snapshot;
    std::error_code ec;
    if (fs::exists(root, ec) && !fs::is_empty(root, ec)) {
      std::cerr << "gpuguard audit: --snapshot " << root.string() << " is not empty (a snapshot is written into an empty or new folder)\n";
      return kExitUsage;
    }
    fs::create_directories(root, ec);
    if (ec) {
      std::cerr << "gpuguard audit: cannot create " << root.string() << ": " << ec.message() << "\n";
      return kExitUsage;
    }
  } else {
    std::string tmpl = (fs::temp_directory_path() / "gpuguard-audit-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      std::cerr << "gpuguard audit: cannot create a temporary folder\n";
      return kExitUsage;
    }
    root = tmpl;
    cleanup.reset(new fs::path(root));
  }

  const auto resources = kube::resources_for(engine::kinds_audited(registry, config));
  std::vector<engine::Diagnostic> diags;
  bool complete = true;
  size_t listed = 0, skipped_owned = 0, written = 0;
  std::map<std::string, size_t> absent;
  for (const auto& res : resources) {
    const std::string what = res.group.empty() ? res.plural : res.plural + "." + res.group;
    auto version = (*client)->discover(res);
    if (!version) {
      if (version.error().status == 404) {  // not installed: nothing of it exists
        absent[what] = 0;
        continue;
      }
      if (version.error().status == 0) {  // no answer at all (connect, TLS): every kind would fail alike
        std::cerr << "gpuguard audit: cannot reach the API server: " << version.error().message << "\n";
        return kExitUsage;
      }
      diags.push_back({engine::Severity::error, cluster->server, {}, "cannot discover " + what + ": " + version.error().message});
      complete = false;
      continue;
    }
    // With --namespace, namespaced kinds come from that namespace, and of the Namespaces only it.
    const bool ns_scoped = !opts.namespace_.empty() && res.namespaced;
    auto page = (*client)->list_all(res, *version, ns_scoped ? opts.namespace_ : "", opts.page_size);
    if (!page) {
      diags.push_back({engine::Severity::error, cluster->server, {}, "cannot list " + what + ": " + page.error().message});
      complete = false;
      continue;
    }
    for (auto& item : page->items) {
      if (!opts.namespace_.empty() && res.group.empty() && res.kind == "Namespace" &&
          meta(item, "name") != opts.namespace_)
        continue;
      ++listed;
      if (!opts.include_owned && made_by_controller(res.kind_ref(), item)) {
        ++skipped_owned;
        continue;
      }
      if (json* md = engine::member(item, "metadata"); md && md->is_object()) md->erase("managedFields");
      // Names the API accepts never hold '/' or start with '.'; a server that sends one is not
      // followed out of the snapshot folder.
      const std::string name = meta(item, "name"), ns = res.namespaced ? meta(item, "namespace") : "";
      if (name.empty() || name.find('/') != std::string::npos || name.front() == '.' || ns.find('/') != std::string::npos ||
          (!ns.empty() && ns.front() == '.')) {
        diags.push_back({engine::Severity::error, cluster->server, {}, "a " + res.kind + " with an unusable name \"" + name + "\" was left out"});
        continue;
      }
      const fs::path rel = snapshot_path(res, item);
      std::error_code ec;
      fs::create_directories(root / rel.parent_path(), ec);
      std::ofstream out(root / rel, std::ios::binary);
      out << engine::to_yaml(item);
      out.close();
      if (!out) {
        std::cerr << "gpuguard audit: cannot write " << (root / rel).string() << "\n";
        return kExitUsage;
      }
      ++written;
    }
  }
  std::cerr << "gpuguard audit: " << cluster->source << ": listed " << listed << " objects of " << resources.size() - absent.size()
            << " kinds";
  if (skipped_owned) std::cerr << " (" << skipped_owned << " Pods and ReplicaSets made by controllers left to their controllers)";
  if (!absent.empty()) {
    std::cerr << "; not installed:";
    for (const auto& [what, n] : absent) std::cerr << " " << what;
  }
  std::cerr << "\n";
  if (!opts.snapshot.empty()) std::cerr << "gpuguard audit: snapshot of " << written << " objects in " << root.string() << "\n";

  // Lint the snapshot as `lint --complete DIR` would (complete only when every list succeeded).
  std::vector<engine::Diagnostic> input_diags;
  auto inputs = engine::expand_inputs({root.string()}, input_diags);
  if (opts.snapshot.empty()) {
    // Name the files as they would be named in a snapshot folder called "cluster".
    const std::string prefix = root.string() + "/";
    for (auto& in : inputs)
      if (in.display.rfind(prefix, 0) == 0) in.display = "cluster/" + in.display.substr(prefix.size());
  }
  diags.insert(diags.end(), input_diags.begin(), input_diags.end());
  if (!complete) std::cerr << "gpuguard audit: some kinds could not be listed; rules that need the whole cluster stay quiet\n";
  return lint_and_report(inputs, config, registry, complete, 0, 256, *outputs, opts.report, std::move(diags), "audit");
}

}  // namespace gpuguard::cli
