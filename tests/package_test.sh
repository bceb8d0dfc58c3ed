#!/usr/bin/env bash
# The Debian package (`make package`), built with CPack from the tree under test and checked:
#   - its name, version and files (gpuguard and gpuguard-net in /usr/bin, one folder);
#   - Depends names the Debian package of every shared library the two programs load (readelf's
#     NEEDED, resolved with ldconfig and dpkg -S), so `apt-get install ./gpuguard_*.deb` on a
#     machine without the build's -dev packages brings what the programs need;
#   - unpacked into a scratch root, `gpuguard version` prints the version and the commit, lint
#     finds a finding, and `serve --help` runs gpuguard-net from beside gpuguard;
#   - with GPUGUARD_TEST_INSTALL=1 (CI sets it: a fresh machine, as root) it is installed with
#     `apt-get install ./gpuguard_*.deb`, run from PATH, and removed again; otherwise apt-get only
#     simulates the install, which still resolves every dependency it declares.
#   tests/package_test.sh BINARY_DIR SOURCE_DIR
# Exit 77 (ctest: skipped) when cpack or dpkg-deb is missing, saying which.
set -euo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
for tool in cpack dpkg-deb dpkg-shlibdeps readelf; do
  command -v "$tool" >/dev/null || { echo "package test skipped: $tool is not installed (scripts/bootstrap.sh --test installs it)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "package test: FAILED: $*" >&2; exit 1; }

cpack -G DEB --config "$bin/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
shopt -s nullglob
debs=("$work"/out/gpuguard_*.deb)
((${#debs[@]} == 1)) || fail "expected one gpuguard_*.deb, got: ${debs[*]:-none}"
deb=${debs[0]}
echo "package: $(basename "$deb") ($(stat -c %s "$deb") bytes)"

version=$(sed -n 's/^project(gpuguard VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $(dpkg-deb -f "$deb" Package) == gpuguard ]] || fail "Package is not gpuguard"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "Version $(dpkg-deb -f "$deb" Version) is not $version"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
files=$(dpkg-deb -c "$deb" | awk '{print $NF}')
grep -qx './usr/bin/gpuguard' <<<"$files" || fail "no /usr/bin/gpuguard in the package"
grep -qx './usr/bin/gpuguard-net' <<<"$files" || fail "no /usr/bin/gpuguard-net in the package"

# Every shared library a program needs comes from a package Depends names (or from libc6, which
# every Debian system has and dpkg-shlibdeps names too).
dep_names=$(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//; s/ //g')
ldconfig -p >"$work/ldconfig.txt"  # read from a file: awk's early exit would break ldconfig's pipe
for program in gpuguard gpuguard-net; do
  for lib in $(readelf -d "$bin/cli/$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v l="$lib" '$1 == l && /x86-64|x86_64|AArch64|aarch64/ {print $NF; exit}' "$work/ldconfig.txt")
    [[ -n "$path" ]] || path=$(awk -v l="$lib" '$1 == l {print $NF; exit}' "$work/ldconfig.txt")
    [[ -n "$path" ]] || fail "$program needs $lib, which ldconfig does not know"
    owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)
    owner=${owner%%:*}
    [[ -n "$owner" ]] || fail "$program needs $lib ($path), which no installed package owns"
    echo "$program: $lib from $owner"
    grep -qx "$owner" <<<"$dep_names" || fail "$program needs $lib from $owner, which Depends does not name"
  done
done

check_programs() {  # $1: the folder gpuguard is in
  local out rc
  out=$("$1/gpuguard" version) || fail "$1/gpuguard version"
  [[ $out =~ ^gpuguard\ $version\ \(commit\ [0-9a-f]{12}(-dirty)?\)$|^gpuguard\ $version\ \(commit\ unknown\)$ ]] ||
    fail "gpuguard version printed: $out"
  echo "$out"
  rc=0
  "$1/gpuguard" lint --no-config --fail-on warning "$src/tests/rules/gpu-priority-class-missing/disallowed" >"$work/lint.txt" 2>&1 || rc=$?
  ((rc == 1)) || { cat "$work/lint.txt"; fail "lint --fail-on warning of a disallowed fixture exited $rc, not 1"; }
  grep -q 'gpu-priority-class-missing' "$work/lint.txt" || fail "lint did not report gpu-priority-class-missing"
  "$1/gpuguard" serve --help >"$work/serve.txt" 2>&1 || { cat "$work/serve.txt"; fail "serve --help (gpuguard-net beside gpuguard)"; }
}

mkdir "$work/root"
dpkg-deb -x "$deb" "$work/root"
check_programs "$work/root/usr/bin"

if [[ "${GPUGUARD_TEST_INSTALL:-}" == 1 ]]; then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install $deb"; }
  [[ $(command -v gpuguard) == /usr/bin/gpuguard ]] || fail "gpuguard on PATH is $(command -v gpuguard), not /usr/bin/gpuguard"
  check_programs /usr/bin
  "${sudo[@]}" apt-get remove -y -qq gpuguard >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get remove gpuguard"; }
  echo "installed with apt-get, run from /usr/bin, removed"
else
  apt-get install --simulate "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install --simulate $deb"; }
  echo "apt-get install --simulate resolved every dependency (GPUGUARD_TEST_INSTALL=1 installs it for real)"
fi
echo "package test: passed"
