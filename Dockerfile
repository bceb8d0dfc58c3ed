# gpuguard, built on Debian 12 and run as a non-root user with only its runtime libraries.
#   docker build -t gpuguard .
#   docker run --rm -v "$PWD:/work" -w /work gpuguard lint deploy/

FROM debian:12 AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends cmake g++ make pkg-config \
      libyaml-dev libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev libssl-dev libre2-dev \
      libcli11-dev libvalijson-dev libjemalloc-dev libboost1.81-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY engine engine
COPY rules rules
COPY kube kube
COPY webhook webhook
COPY cli cli
# The release build with profile-guided optimisation (scripts/pgo-build.sh): an instrumented build
# (with bench_admission, whose sources and test helpers come along) trained on the rules' fixtures,
# the examples and a GPU Pod's AdmissionReview, then the build that uses its profiles.
COPY bench bench
COPY scripts scripts
COPY examples examples
COPY tests tests
# The commit `gpuguard version` prints (the build has no .git): docker build --build-arg GPUGUARD_COMMIT=$(git rev-parse --short=12 HEAD)
ARG GPUGUARD_COMMIT=unknown
RUN JOBS="$(nproc)" scripts/pgo-build.sh /build -DGPUGUARD_TESTS=OFF -DGPUGUARD_BENCH=OFF \
 && strip /build/cli/gpuguard /build/cli/gpuguard-net

FROM debian:12-slim
# The shared libraries the two programs link (ldd; gpuguard-net needs most of them), and CA
# certificates; nothing else.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      libyaml-0-2 libyaml-cpp0.7 libre2-9 libcpp-httplib0.11 libssl3 libjemalloc2 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 gpuguard && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin gpuguard
COPY --from=build /build/cli/gpuguard /build/cli/gpuguard-net /usr/local/bin/
USER 65532:65532
EXPOSE 8443 9090
ENTRYPOINT ["/usr/local/bin/gpuguard"]
CMD ["--help"]
