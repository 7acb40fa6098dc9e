#!/usr/bin/env bash
# test.sh - set up, build and run the test suite.
#   tools/test.sh              normal build in build/, all tests (GPU tests skip without a GPU)
#   tools/test.sh --sanitize   ASan+UBSan build in build-asan/, CPU tests only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR=${BUILD_DIR:-$root/build-asan}
  "$root/tools/setup.sh" -DSWIN_SANITIZE=ON -DSWIN_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  exec ctest --test-dir "$BUILD_DIR" -L cpu --output-on-failure -j "$(nproc)"
fi
"$root/tools/setup.sh"
exec ctest --test-dir "${BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)"
