#!/usr/bin/env bash
# setup.sh - install missing Debian packages (when root), configure and build into BUILD_DIR.
# Sourced by tools/demo.sh and tools/test.sh; usable alone:  tools/setup.sh [extra cmake args]
# Env: BUILD_DIR (default: build), SWIN_JOBS (default: nproc).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}

need=() want=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)   # tests/cli_install.sh
[ -f /usr/include/cjson/cJSON.h ] || need+=(libcjson-dev)
[ -f /usr/include/stb/stb_image.h ] || need+=(libstb-dev)
[ -f /usr/include/jpeglib.h ] || need+=(libjpeg62-turbo-dev)
# optional: MPI (mpirun -np N swin classify, tests/cli_mpi.sh); installed when root, else noted
command -v mpicc >/dev/null 2>&1 || want+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || want+=(openmpi-bin)
if [ $((${#need[@]} + ${#want[@]})) -gt 0 ] && [ -z "${CMAKE_PREFIX_PATH:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]} ${want[*]}" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" "${want[@]}" >&2
  elif [ ${#need[@]} -gt 0 ]; then
    echo "setup: missing packages; run:  sudo apt-get install ${need[*]} ${want[*]}" >&2
    exit 2
  else
    echo "setup: building without MPI; for mpirun -np N swin classify:  sudo apt-get install ${want[*]}" >&2
  fi
fi

cmake -S "$root" -B "$build" "$@" >"$root/.cmake-configure.log" 2>&1 || {
  cat "$root/.cmake-configure.log" >&2; exit 2; }
cmake --build "$build" -j "${SWIN_JOBS:-$(nproc)}" 2>&1 | grep -vE '^\[ *[0-9]+%\]' >&2 || true
test "${PIPESTATUS[0]}" = 0 -a -x "$build/swin" || { echo "setup: build failed" >&2; exit 2; }
