// libFuzzer entry point for one target (GPUGUARD_FUZZ_TARGET names it); built by `make fuzz`.

#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gpuguard::fuzz::GPUGUARD_FUZZ_TARGET(data, size);
}
