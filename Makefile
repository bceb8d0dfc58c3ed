# gpuguard: the two quick-start commands, and the rest of the developer loop.
#   make demo   install what is missing, build (Release), lint the shipped examples
#   make test   install what is missing, build, run every test

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# The test tree: optimised as shipped, with line tables only (-g1) for backtraces; full debug info
# made each compile about 20 % slower, and CI builds this tree from scratch (hence the
# precompiled headers too; see CMakeLists.txt).
TEST_BUILD = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DGPUGUARD_PCH=ON

.PHONY: demo release package test test-hostile-webhook test-sanitize sanitize-build build docs clean bootstrap bench fuzz

bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	@cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DGPUGUARD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build build/release -j$(JOBS) --target gpuguard gpuguard-net -- --no-print-directory
	@echo
	@echo '$$ gpuguard lint --config examples/.gpuguard.yaml examples/'
	@build/release/cli/gpuguard lint --config examples/.gpuguard.yaml examples/; test $$? -le 1
	@echo
	@echo '$$ gpuguard lint --config examples/.gpuguard.yaml --complete examples/   # the same files as a whole cluster'
	@build/release/cli/gpuguard lint --config examples/.gpuguard.yaml --complete examples/; test $$? -le 1

# The release build with profile-guided optimisation (scripts/pgo-build.sh, into build/pgo): what
# the Docker image ships and the benchmarks measure, 7–13 % faster than the plain build above
# and twice its build time (an instrumented build and a training run come first).
release: bootstrap
	@JOBS=$(JOBS) scripts/pgo-build.sh build/pgo $(CMAKE_FLAGS)

# The Debian package of gpuguard and gpuguard-net, from the release build above (what the image
# ships): build/package/gpuguard_<version>_<arch>.deb, installed with
# `apt-get install ./build/package/gpuguard_*.deb`. Its Depends come from dpkg-shlibdeps.
package: release
	@scripts/bootstrap.sh --package
	@cpack -G DEB --config build/pgo/CPackConfig.cmake -B build/package
	@ls build/package/gpuguard_*.deb

test:
	@scripts/bootstrap.sh --test
	@scripts/test-tools.sh
	@cmake -S . -B build/test $(TEST_BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build/test -j$(JOBS) -- --no-print-directory
	@ctest --test-dir build/test --output-on-failure -j$(JOBS)

# The webhook against hostile clients alone (part of `make test`): slow clients, header floods,
# large reviews, expensive handshakes, framing tricks, exemption by annotation (about 2 minutes).
test-hostile-webhook:
	@scripts/bootstrap.sh --test
	@cmake -S . -B build/test $(TEST_BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build/test -j$(JOBS) -- --no-print-directory
	@ctest --test-dir build/test --output-on-failure -R '^hostile-webhook$$'

build: bootstrap
	@cmake -S . -B build/test $(TEST_BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build/test -j$(JOBS) -- --no-print-directory

# Regenerate rules/README.md, the rule pages and schemas/config.schema.json from the rules' metadata.
docs: build
	@build/test/cli/gpuguard docs .

clean:
	rm -rf build

# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer, built with clang 14
# in the tree `make fuzz` uses too (instrumented for libFuzzer as well), so CI builds it once.
# -O1 -g1: what ASan recommends, line tables for its reports, and a build CI can afford; no
# benchmarks (the test tree builds them, and timing instrumented code measures nothing).
SANITIZE_DIR = build/sanitize
sanitize-build:
	@BOOTSTRAP_EXTRA="clang-14 libclang-rt-14-dev" scripts/bootstrap.sh --test
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
	  -DGPUGUARD_SANITIZE=ON -DGPUGUARD_FUZZ=ON -DGPUGUARD_BENCH=OFF -DGPUGUARD_PCH=ON -DGPUGUARD_WERROR=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(SANITIZE_DIR) -j$(JOBS) -- --no-print-directory

test-sanitize: sanitize-build
	@scripts/test-tools.sh
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j$(JOBS)

# Benchmarks (issue 9): ratios against floors measured in the same run. Not part of `make test`.
bench:
	@BOOTSTRAP_EXTRA="wrk openssl" scripts/bootstrap.sh
	@JOBS=$(JOBS) scripts/pgo-build.sh build/pgo $(CMAKE_FLAGS)
	@bench/lint.sh build/pgo $(BENCH_SIZES)
	@bench/webhook.sh build/pgo
	@build/pgo/bench/bench_kube_cache

# libFuzzer (clang 14) with ASan and UBSan: each target runs SECONDS (default 60) from seeds in
# tests/ and ../shared/corpus; a crash stops the run and leaves its input in build/sanitize/artifacts/
# (add it to tests/fuzz/regressions/<target>/, where `make test` replays it).
SECONDS ?= 60
fuzz: sanitize-build
	@scripts/fuzz.sh $(SANITIZE_DIR) $(SECONDS)
