#!/usr/bin/env bash
# cli_gpu_nvjpeg_ceiling.sh - tools/nvjpeg_ceiling (built with nvJPEG): usage errors exit 2 with a
# one-line reason, a missing file exits 1 naming it (no GPU needed for these); then, on a GPU,
# 7 JPEG fixtures (6 baseline, 1 progressive) listed 3 times through --threads 1,2 --batch 4
# --init once,each: exit 0, a header, 4 hardware rows whose images + refused make 21 with the
# progressive copies among the refused, a default-backend row, and the best line.
# Exits 77 when the tool is not built (no nvJPEG) or, after the usage checks, without a GPU.
#   usage: cli_gpu_nvjpeg_ceiling.sh SWIN_BINARY SOURCE_DIR BUILD_DIR
set -u
src=$2
build=${3:-$(dirname "$1")}
. "$src/tests/clilib.sh"
tool=$build/nvjpeg_ceiling
if [ ! -x "$tool" ]; then
  echo "cli_gpu_nvjpeg_ceiling: skipped: $tool not built (CMake found no nvJPEG)"
  exit 77
fi
run() { "$tool" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
jpeg=$src/tests/data/jpeg

run --help
[ $rc -eq 0 ] && grep -q "^usage: nvjpeg_ceiling" "$tmp/out" && ok "--help exits 0 with the usage" || bad "--help: exit $rc"
for args in "" "--threads 0 $jpeg" "--batch 1,x $jpeg" "--init never $jpeg" "--bogus $jpeg" "--threads"; do
  # shellcheck disable=SC2086
  run $args
  if [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^nvjpeg_ceiling: .*(try --help)" "$tmp/err" &&
     [ ! -s "$tmp/out" ]; then ok "usage error '$args': exit 2, one line"
  else bad "usage error '$args': exit $rc"; fi
done
run "$tmp/missing.jpg"
[ $rc -eq 1 ] && grep -q "missing.jpg: cannot read the file" "$tmp/err" && ok "missing file: exit 1, named" ||
  bad "missing file: exit $rc"

names="baseline_420_160x120 baseline_422_97x61 baseline_444_64x48 restart_blocks_420_120x80 restart_rows_422_70x50
       optimized_420_80x56 progressive_420_150x100"
for copy in 1 2 3; do for n in $names; do echo "$jpeg/$n.jpg"; done; done >"$tmp/list"
run --threads 1,2 --batch 4 --init once,each --default-images 8 --list "$tmp/list"
if [ $rc -ne 0 ] && grep -qE "no CUDA device|no hardware backend|nvjpegCreateEx\(NVJPEG_BACKEND_HARDWARE\) failed" \
     "$tmp/out" "$tmp/err"; then
  echo "cli_gpu_nvjpeg_ceiling: GPU part skipped: $(head -n1 "$tmp/err")"
  finish cli_gpu_nvjpeg_ceiling || exit 1
  exit 77
fi
[ $rc -eq 0 ] && ok "21 fixtures: exit 0" || bad "21 fixtures: exit $rc"
grep -q "^backend  *threads  *batch  *init  *format  *interp  *images  *refused  *seconds  *img/s$" "$tmp/out" &&
  ok "header" || bad "no header"
rows=$(awk '$1 == "hardware" && NF == 10 && $7 + $8 == 21 && $8 >= 3 && $10 > 0' "$tmp/out" | wc -l)
[ "$rows" -eq 4 ] && ok "4 hardware rows, images + refused = 21, the progressive copies refused" ||
  bad "hardware rows: $rows of 4 as expected"
awk '$1 == "default" && NF == 10 && $7 + $8 == 8 && $10 > 0 {found = 1} END {exit !found}' "$tmp/out" &&
  ok "default-backend row over 8 files" || bad "no default-backend row"
grep -qE "^best: hardware threads [12] batch 4 init (once|each) format rgbi interp 1: [0-9.]+ img/s \([0-9]+ images\)$" \
  "$tmp/out" && ok "best line" || bad "no best line"
finish cli_gpu_nvjpeg_ceiling
