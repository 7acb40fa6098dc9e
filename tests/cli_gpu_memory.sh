#!/usr/bin/env bash
# cli_gpu_memory.sh - a batch that cannot fit on the GPU is refused before any work, with the memory
# plan: `swin bench` and `swin info` with Swin-L at 384 and --batch 4096 exit 2 with
#   swin bench: cuda:0: batch 4096 in fp16 needs X GiB (weights .., activations .., workspaces ..,
#   input/output .., headroom ..); Y GiB free of Z GiB: at most batch N fits
# on stderr and nothing on stdout; a batch that fits (1) still runs. Exits 77 without a usable GPU.
#   usage: cli_gpu_memory.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
. "$src/tests/clilib.sh"
arch=swin_large_patch4_window12_384
plan='cuda:[0-9]+: batch 4096 in fp16 needs [0-9.]+ GiB \(weights [0-9.]+ [GM]iB, activations [0-9.]+ GiB, workspaces [0-9.]+ [GM]iB, input/output [0-9.]+ GiB, headroom [0-9.]+ MiB for cuBLAS and CUDA graphs\); [0-9.]+ GiB free of [0-9.]+ GiB: at most batch [0-9]+ fits'

run() {
  local t0=$SECONDS
  "$swin" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  took=$((SECONDS - t0))
}

run info --model "$src/weights/digits" --device cuda   # a GPU at all? (cheap: the digits model)
if [ $rc -ne 0 ] && grep -qE "no CUDA driver|no GPU found|no usable GPU|built without CUDA" "$tmp/err"; then
  echo "cli_gpu_memory: skipped: $(head -n1 "$tmp/err")"
  exit 77
fi
for cmd in bench info; do
  if [ $cmd = bench ]; then run bench --arch $arch --batch 4096 --iters 1 --warmup 0
  else run info --arch $arch --device cuda --batch 4096; fi
  # bench spends a few seconds making 197M random weights on the host before the GPU is asked
  if [ $rc -eq 2 ] && grep -qE "^swin $cmd: $plan\$" "$tmp/err" && [ ! -s "$tmp/out" ] && [ $took -lt 60 ]; then
    ok "$cmd --batch 4096 refused in ${took}s: $(head -n1 "$tmp/err")"
  else
    bad "$cmd --batch 4096: expected exit 2 and the plan on stderr (exit $rc, ${took}s)"
  fi
done

run bench --arch $arch --batch 1 --iters 2 --warmup 1
if [ $rc -eq 0 ] && grep -q "$arch" "$tmp/out"; then ok "bench --batch 1 runs"
else bad "bench --batch 1 (exit $rc)"; fi

finish cli_gpu_memory
