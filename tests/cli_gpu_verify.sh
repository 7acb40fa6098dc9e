#!/usr/bin/env bash
# cli_gpu_verify.sh - `swin verify --device cuda` on every tests/data/ref_*/ fixture in every
# precision (verify's default tolerances: fp32 1e-4, tf32/fp16 5e-3, bf16 3e-2, fp8 as the README
# derives it, top-1 agreement; fp8 calibrates itself on random images, as the references' inputs are),
# plus fp16 with --attention unfused, fp16 with --mlp fused and unfused and fp16 with --graphs off. Checks that each run exits 0,
# that its last line starts with PASS and that the stage outputs were compared (the engine's
# stage hook: a line per stage, none FAIL; below fp32 a stage may be "over", which does not decide). Exits 77 (skipped) only when the first verify
# reports that there is no usable GPU; any other failure fails the test. A fixture whose geometry
# the CUDA engine refuses at session creation ("is not supported on the GPU yet", exit 2: non-square
# or padded grids, odd merges) is counted as unsupported on GPU, not as a failure.
# The verifies run SWIN_TEST_VERIFY_JOBS at a time (default 4) and are judged and printed in order.
#   usage: cli_gpu_verify.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
shopt -s nullglob
refs=("$src"/tests/data/ref_*/)
if [ ${#refs[@]} -eq 0 ]; then
  echo "cli_gpu_verify: no fixtures under $src/tests/data/ref_*/"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 unsupported=0 n=0
jobs_max=${SWIN_TEST_VERIFY_JOBS:-4}   # verifies at once: short processes on tiny models

# verify DIR [extra flags...]: one verify in the background (the first one in the foreground: a
# machine without a usable GPU skips the test there), its output into $tmp/N.*
verify() {
  local dir=${1%/}
  shift
  n=$((n + 1))
  echo "$(basename "$dir") $*" >"$tmp/$n.name"
  if [ $n -gt 1 ]; then
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  fi
  ( rc=0
    "$swin" verify --model "$dir" --reference "${REF:-$dir/reference.safetensors}" --device cuda "$@" \
      >"$tmp/$n.out" 2>"$tmp/$n.err" || rc=$?
    echo $rc >"$tmp/$n.rc" ) &
  if [ $n = 1 ]; then
    wait
    if [ "$(cat "$tmp/1.rc")" -ne 0 ] && grep -qE "no CUDA driver|no GPU found|no usable GPU|built without CUDA" "$tmp/1.err" "$tmp/1.out"; then
      echo "cli_gpu_verify: skipped: $(head -n1 "$tmp/1.err")"
      exit 77
    fi
  fi
}

# judge N: the verdict of verify N, in input order
judge() {
  local i=$1 name rc last
  name=$(cat "$tmp/$i.name")
  rc=$(cat "$tmp/$i.rc" 2>/dev/null || echo 1)
  last=$(tail -n1 "$tmp/$i.out")
  if [ "$rc" -eq 0 ] && [[ $last == PASS* ]] && grep -qE '^stage 0 .*  (PASS|over .*)$' "$tmp/$i.out" &&
     ! grep -qE '^stage .*FAIL' "$tmp/$i.out"; then
    echo "ok   $name: $last"
    passed=$((passed + 1))
  elif [ "$rc" -eq 2 ] && grep -qE 'is not supported on the GPU yet|has no FP8 tensor cores' "$tmp/$i.err"; then
    # a geometry the CUDA engine refuses by design at session creation (README, GPU engine)
    echo "unsupported on GPU  $name: $(head -n1 "$tmp/$i.err")"
    unsupported=$((unsupported + 1))
  else
    echo "FAIL $name (exit $rc)"
    sed 's/^/    /' "$tmp/$i.out" "$tmp/$i.err"
    failed=$((failed + 1))
  fi
}

for dir in "${refs[@]}"; do
  for p in fp32 tf32 fp16 bf16 fp8; do verify "$dir" --precision "$p"; done
  verify "$dir" --precision fp16 --attention unfused
  verify "$dir" --precision fp16 --mlp fused
  verify "$dir" --precision fp16 --mlp unfused   # the default (auto) is fused on Hopper
  verify "$dir" --precision tf32 --mlp unfused   # tf32's default is fused on Hopper too
  verify "$dir" --precision fp16 --graphs off
done

# the stored models at other input sizes (reference_<H>x<W>.safetensors, tools/export_reference.py
# RESIZED): --img-size on the GPU
for ref in "$src"/tests/data/ref_*/reference_*x*.safetensors; do
  size=${ref##*/reference_}
  size=${size%.safetensors}
  for p in fp32 fp16; do REF=$ref verify "$(dirname "$ref")" --precision "$p" --img-size "$size"; done
done
wait
for ((i = 1; i <= n; i++)); do judge $i; done

echo "cli_gpu_verify: $passed passed, $failed failed, $unsupported unsupported on GPU"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
