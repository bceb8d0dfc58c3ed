#include <doctest/doctest.h>

#include <memory>
#include <set>

#include "engine/config.h"
#include "engine/dra.h"
#include "engine/evaluate.h"
#include "engine/inventory.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;

namespace {

std::shared_ptr<Inventory> inventory_of(const std::string& yaml, bool complete = false) {
  std::set<KindRef> kinds(dra_kinds().begin(), dra_kinds().end());
  auto inv = std::make_shared<Inventory>(kinds);
  uint32_t id = 0;
  for (auto& o : gpuguard::test::load_objects(yaml)) {
    o.id = id++;
    const std::string ns = o.cluster_scoped() ? "" : (o.namespace_.empty() ? "default" : o.namespace_);
    inv->add(std::make_shared<Object>(std::move(o)), ns);
  }
  inv->set_complete(complete);
  return inv;
}

DraGpus resolve(const Inventory& inv, const std::string& pod_spec_yaml, const std::string& ns = "team-a") {
  auto objs = gpuguard::test::load_objects("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: " + ns +
                                           "}\nspec:\n" + pod_spec_yaml);
  REQUIRE(objs.size() == 1);
  const auto claims = pod_claims(member(objs[0].root(), "spec"));
  return resolve_dra_gpus(inv, ns, claims, default_gpu_device_classes());
}

constexpr const char* kOneGpuClaim = R"(  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
)";

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("DRA: a v1 ResourceClaimTemplate of NVIDIA's GPU class is a GPU request") {
  auto inv = inventory_of(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}
)");
  DraGpus g = resolve(*inv, kOneGpuClaim);
  REQUIRE(g.requests.size() == 1);
  CHECK(g.known());
  const auto& r = g.requests[0];
  CHECK(r.device_class == "gpu.nvidia.com");
  CHECK(r.count == 1);
  CHECK_FALSE(r.all);
  CHECK_FALSE(r.shared);
  CHECK(r.product == "NVIDIA H100 80GB HBM3");
  CHECK_FALSE(r.product_unknown);
  CHECK(r.profile.empty());
  CHECK_FALSE(r.profile_unknown);
  CHECK(r.source == "ResourceClaimTemplate team-a/one-gpu");
  CHECK(r.pod_claim == "gpu");
  CHECK(r.sharing == DraSharing::none);

  // Another namespace's template of that name is not the pod's.
  DraGpus other = resolve(*inv, kOneGpuClaim, "team-b");
  CHECK_FALSE(other.any());
  CHECK_FALSE(other.known());
  REQUIRE(other.missing.size() == 1);
  CHECK(other.missing[0] == "ResourceClaimTemplate team-b/one-gpu");
}

TEST_CASE("DRA: v1beta1 puts the class on the request; v1beta2 like v1") {
  auto inv = inventory_of(R"(apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - {name: gpus, deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 4}
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: shared-mig, namespace: team-a}
spec:
  devices:
    requests:
    - name: mig
      exactly:
        deviceClassName: mig.nvidia.com
        allocationMode: All
        selectors:
        - cel: {expression: 'device.attributes["gpu.nvidia.com"]["profile"] == "1g.5gb"'}
)");
  DraGpus g = resolve(*inv, R"(  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: one-gpu}
  - {name: mig, resourceClaimName: shared-mig}
  containers: [{name: c, image: x}]
)");
  REQUIRE(g.requests.size() == 2);
  CHECK(g.requests[0].count == 4);
  CHECK(g.requests[0].request == "gpus");
  CHECK(g.requests[1].device_class == "mig.nvidia.com");
  CHECK(g.requests[1].all);
  CHECK(g.requests[1].count == 32);
  CHECK(g.requests[1].shared);
  CHECK(g.requests[1].profile == "1g.5gb");
  CHECK(g.requests[1].source == "ResourceClaim team-a/shared-mig");
}

TEST_CASE("DRA: firstAvailable sub-requests, sharing config, admin access") {
  auto inv = inventory_of(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - {name: big, deviceClassName: gpu.nvidia.com, count: 2}
        - {name: cpu, deviceClassName: cpu.example.com}
      - name: debug
        exactly: {deviceClassName: gpu.nvidia.com, adminAccess: true}
      config:
      - requests: [gpu]
        opaque:
          driver: gpu.nvidia.com
          parameters:
            apiVersion: resource.nvidia.com/v1beta1
            kind: GpuConfig
            sharing: {strategy: TimeSlicing, timeSlicingConfig: {interval: Long}}
      - requests: [debug]
        opaque:
          driver: gpu.nvidia.com
          parameters: {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: MPS}}
)");
  DraGpus g = resolve(*inv, kOneGpuClaim);
  REQUIRE(g.requests.size() == 2);  // the cpu.example.com sub-request is no GPU
  CHECK(g.requests[0].request == "gpu/big");
  CHECK(g.requests[0].alternative);
  CHECK(g.requests[0].count == 2);
  CHECK(g.requests[0].sharing == DraSharing::time_slicing);
  CHECK(g.requests[1].request == "debug");
  CHECK(g.requests[1].admin_access);
  CHECK(g.requests[1].sharing == DraSharing::mps);
  // cpu.example.com is not in the inventory, which is not the whole cluster: it might be a GPU class.
  CHECK_FALSE(g.known());
}

TEST_CASE("DRA: a class is a GPU class by name, by suffix, or by selecting NVIDIA's driver") {
  auto inv = inventory_of(R"(apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: h100}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}
  config:
  - opaque: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig, sharing: {strategy: MPS}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: dranet.net}
spec:
  selectors:
  - cel: {expression: "device.driver == 'dra.net'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - {name: a, exactly: {deviceClassName: h100}}
      - {name: b, exactly: {deviceClassName: mig-1g-12gb.gpu.nvidia.com}}
      - {name: c, exactly: {deviceClassName: dranet.net}}
      - {name: d, exactly: {deviceClassName: vfio.gpu.nvidia.com}}
)", /*complete=*/true);
  DraGpus g = resolve(*inv, kOneGpuClaim);
  REQUIRE(g.requests.size() == 3);
  CHECK(g.known());
  CHECK(g.requests[0].device_class == "h100");
  CHECK(g.requests[0].product == "NVIDIA H100 80GB HBM3");  // from the class's selector
  CHECK(g.requests[0].sharing == DraSharing::mps);          // from the class's config
  CHECK(g.requests[1].device_class == "mig-1g-12gb.gpu.nvidia.com");
  CHECK(g.requests[2].device_class == "vfio.gpu.nvidia.com");

  CHECK(device_class_matches("gpu.nvidia.com", default_gpu_device_classes()));
  CHECK_FALSE(device_class_matches(".gpu.nvidia.com", default_gpu_device_classes()));
  CHECK_FALSE(device_class_matches("compute-domain-default-channel.nvidia.com", default_gpu_device_classes()));
  CHECK_FALSE(device_class_matches("nvidia.com/gpu", default_gpu_device_classes()));
}

TEST_CASE("DRA: a template without claims, a pod claim naming neither or both") {
  auto inv = inventory_of("");
  CHECK(resolve(*inv, "  containers: [{name: c, image: x}]\n").known());
  CHECK_FALSE(resolve(*inv, "  containers: [{name: c, image: x}]\n").any());
  auto objs = gpuguard::test::load_objects(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  resourceClaims:
  - {name: a}
  - {name: b, resourceClaimName: x, resourceClaimTemplateName: t}
  - {name: c, resourceClaimName: x}
  containers: []
)");
  const auto claims = pod_claims(member(objs[0].root(), "spec"));
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].name == "c");
  CHECK(claims[0].claim == "x");
}

TEST_CASE("DRA: CEL equalities are read, anything else is unknown") {
  auto eq = [](std::string_view e, std::string_view attr) { return cel_attribute_equality(e, attr); };
  CHECK(eq("device.attributes['gpu.nvidia.com'].profile == '1g.5gb'", "profile").value == "1g.5gb");
  CHECK(eq("'1g.5gb' == device.attributes['gpu.nvidia.com'].profile", "profile").value == "1g.5gb");
  CHECK(eq("device.attributes['gpu.nvidia.com'].type == 'mig' && (device.attributes['gpu.nvidia.com'].profile == '2g.10gb')",
           "profile")
            .value == "2g.10gb");
  CHECK_FALSE(eq("device.attributes['gpu.nvidia.com'].type == 'gpu'", "profile").value);
  CHECK_FALSE(eq("device.attributes['gpu.nvidia.com'].type == 'gpu'", "profile").unknown);
  CHECK(eq("device.attributes['gpu.nvidia.com'].profile != '1g.5gb'", "profile").unknown);
  CHECK(eq("device.attributes['gpu.nvidia.com'].profile == '1g.5gb' || device.attributes['gpu.nvidia.com'].profile == '2g.10gb'",
           "profile")
            .unknown);
  CHECK(eq("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')", "productName").unknown);
  CHECK(eq("!(device.attributes['gpu.nvidia.com'].productName == 'x')", "productName").unknown);
  CHECK(eq("device.attributes['other.example.com'].profile == '1g.5gb'", "profile").unknown);
  CHECK(eq("device.attributes['gpu.nvidia.com'].profile == '1g.5gb' && device.attributes['gpu.nvidia.com'].profile == '2g.10gb'",
           "profile")
            .unknown);
  CHECK_FALSE(eq("device.attributes['gpu.nvidia.com'].profileX == 'a'", "profile").unknown);
  CHECK(eq("device.attributes['gpu.nvidia.com']['profile'] == '1g.5gb' && device.attributes['gpu.nvidia.com'].type == 'mig'",
           "profile")
            .value == "1g.5gb");
  CHECK(eq("device.attributes['gpu.nvidia.com'].productName == \"NVIDIA A100-SXM4-40GB\"", "productName").value ==
        "NVIDIA A100-SXM4-40GB");
  CHECK(eq("device.attributes['gpu.nvidia.com'].productName == 'it\\'s'", "productName").unknown);  // escapes: not read
}

}  // TEST_SUITE


TEST_SUITE("unit") {

TEST_CASE("DRA: config gpuDeviceClasses adds classes, and refuses what is not a DeviceClass name") {
  auto c = load_config("gpuDeviceClasses: [h100.example.com, '*.accel.example.com']\n", "t.yaml", gpuguard::test::registry());
  REQUIRE(c.has_value());
  const auto& classes = c->settings.gpu_device_classes;
  CHECK(device_class_matches("gpu.nvidia.com", classes));
  CHECK(device_class_matches("h100.example.com", classes));
  CHECK(device_class_matches("big.accel.example.com", classes));
  CHECK_FALSE(device_class_matches("accel.example.com", classes));
  for (const char* bad : {"gpuDeviceClasses: [nvidia.com/gpu]\n", "gpuDeviceClasses: [Upper.example.com]\n",
                          "gpuDeviceClasses: gpu.example.com\n", "gpuDeviceClasses: ['*']\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(load_config(bad, "t.yaml", gpuguard::test::registry()).has_value());
  }
}

}  // TEST_SUITE


TEST_SUITE("unit") {

TEST_CASE("DRA: an admitted pod's claim template is found in the cluster state (the webhook's evaluation)") {
  const Config config = default_config(gpuguard::test::registry());
  const std::string pod = R"(apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a}
spec:
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
)";
  auto admit = [&](const std::string& state_yaml) {
    auto base = std::make_shared<Inventory>(kinds_read(gpuguard::test::registry(), config));
    uint32_t id = 0;
    for (auto& o : gpuguard::test::load_objects(state_yaml)) {
      o.id = id++;
      const std::string ns = o.cluster_scoped() ? "" : o.namespace_;
      base->add(std::make_shared<Object>(std::move(o)), ns);
    }
    EvalOptions eo;
    eo.base = base;
    eo.focus_on_added = true;
    eo.only_rules = {"gpu-priority-class-missing", "gpu-toleration-missing"};
    Evaluation eval(gpuguard::test::registry(), config, eo);
    auto objs = gpuguard::test::load_objects(pod);
    eval.add(std::move(objs[0]));
    return eval.finish();
  };
  // The template of the pod's namespace is in the state: both rules see a GPU pod.
  Result r = admit(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
)");
  REQUIRE(r.findings.size() == 2);
  for (const auto& f : r.findings) {
    CHECK(f.object.name() == "p");
    CHECK(f.message.find("through DRA (claim gpu: ResourceClaimTemplate team-a/one-gpu, DeviceClass gpu.nvidia.com)") !=
          std::string::npos);
  }
  // Not in the state (or in another namespace): nothing.
  CHECK(admit(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-b}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
)").findings.empty());
}

}  // TEST_SUITE
