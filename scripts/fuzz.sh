#!/usr/bin/env bash
# Fuzzes the control-message parser (tests/fuzz/wire_fuzzer.cc) and the UCX
# plugin's address/key blob parsers (tests/fuzz/blob_fuzzer.cc) for a bounded
# time: installs clang and its libFuzzer runtime when missing, configures
# build-fuzz/ with clang, builds only the fuzzers and runs ctest wire_fuzz and
# blob_fuzz there (30 s and 20 s of libFuzzer with ASan+UBSan on scratch
# copies of tests/fuzz/corpus and tests/fuzz/blob_corpus).  Exits non-zero on a finding; the input that triggered
# it is left in build-fuzz/tests/fuzz-artifacts/.  scripts/test.sh ends with it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-$ADXL_ROOT/build-fuzz}"

# Configuring the project needs its usual packages too (UCX, GoogleTest, ...).
adxl_install_packages "${ADXL_PACKAGES[@]}" clang
# Debian splits the sanitizer and libFuzzer runtimes out of clang
# (libclang-rt-<major>-dev, a recommendation that --no-install-recommends skips).
clang_major="$(clang --version | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1)"
if [[ -n "$clang_major" ]] && apt-cache show "libclang-rt-$clang_major-dev" >/dev/null 2>&1; then
  adxl_install_packages "libclang-rt-$clang_major-dev"
fi

CC=clang CXX=clang++ cmake -S "$ADXL_ROOT" -B "$FUZZ_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$FUZZ_BUILD_DIR" --target wire_fuzzer blob_fuzzer -j"$(nproc)"
cd "$FUZZ_BUILD_DIR"
ctest --output-on-failure --no-tests=error -R '^(wire|blob)_fuzz$'
