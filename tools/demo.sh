#!/usr/bin/env bash
# demo.sh - set up, build, and classify the bundled digit images with the embedded model.
#   tools/demo.sh [swin classify options]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
exec "${BUILD_DIR:-$root/build}/swin" classify "$@" "$root/tests/data/digits"
