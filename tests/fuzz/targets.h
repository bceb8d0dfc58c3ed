#pragma once
// The fuzz targets' bodies (issue 9), shared by the libFuzzer entry points (tests/fuzz/main_*.cpp,
// `make fuzz`) and the regression test that replays every input a fuzzer ever crashed on
// (tests/fuzz/regressions/<target>/, run by `make test`).

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gpuguard::fuzz {

using Target = int (*)(const uint8_t* data, size_t size);

int yaml(const uint8_t* data, size_t size);        // the YAML loader alone
int lint(const uint8_t* data, size_t size);        // loader + every rule, complete inventory, + mutate
int json(const uint8_t* data, size_t size);        // JSON text → object → every rule and fix (the webhook's path)
int admission(const uint8_t* data, size_t size);   // AdmissionReview decode → evaluate → encode, both endpoints
int config(const uint8_t* data, size_t size);      // .gpuguard.yaml loader
int quantity(const uint8_t* data, size_t size);    // resource.Quantity parser and arithmetic
int mig(const uint8_t* data, size_t size);         // MIG catalog parser and placement solver, checked by an oracle

struct Named {
  std::string_view name;
  Target target;
};
// Every target, by the name of its binary (`fuzz_<name>`) and regression folder.
const std::vector<Named>& targets();

}  // namespace gpuguard::fuzz
