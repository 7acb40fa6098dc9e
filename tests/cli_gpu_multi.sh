#!/usr/bin/env bash
# cli_gpu_multi.sh - `swin classify --device cuda:all` against `--device cuda:0` on the 360 bundled
# digits plus a truncated PNG and a missing file, and `swin bench --device cuda:all`:
#   - classify (--json, batch 16; and text with --out): output byte-identical to cuda:0, 360
#     results and the 2 errors in their places, exit 1 both ways; cuda:0,1,... listed by hand
#     gives the same bytes as cuda:all;
#   - with 2+ GPUs: the summary says "N GPUs" and --timing shows every GPU with images (the
#     work was really spread); with one GPU, cuda:all is cuda:0 (a plain summary line);
#   - bench --device cuda:all --json: one per_gpu entry per GPU with img/s > 0, the total the sum
#     (2+ GPUs), or the one-GPU report (1 GPU).
# SWIN_GEMM_TUNE=0 on both sides: the autotuner may keep different GEMM algorithms on two GPUs
# (or two runs), which changes the last bits of the logits and so the 6-decimal probabilities.
# Exits 77 (skipped) only when the first run reports that there is no usable GPU.
#   usage: cli_gpu_multi.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
export LC_ALL=C SWIN_GEMM_TUNE=0
source "$src/tests/clilib.sh"
need_digits cli_gpu_multi
run() { "$swin" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

shopt -s nullglob
pngs=("$digits"/*.png)
[ ${#pngs[@]} -ge 300 ] || { echo "cli_gpu_multi: fewer than 300 PNGs in $digits"; exit 1; }
head -c 60 "${pngs[0]}" >"$tmp/truncated.png"
{ printf '%s\n' "${pngs[@]:0:100}"; echo "$tmp/truncated.png"; printf '%s\n' "${pngs[@]:100:150}";
  echo "$tmp/missing.png"; printf '%s\n' "${pngs[@]:250}"; } >"$tmp/list.txt"
n=$(( ${#pngs[@]} + 2 ))

run classify -m "$model" --device cuda:0 --json --batch 16 --list "$tmp/list.txt"
if [ $rc -eq 2 ] && grep -qE "no CUDA driver|no GPU found|no usable GPU|built without CUDA" "$tmp/err"; then
  echo "cli_gpu_multi: skipped: $(head -n1 "$tmp/err")"
  exit 77
fi
cp "$tmp/out" "$tmp/cuda0.jsonl"
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/cuda0.jsonl")" -eq $n ] &&
  sed -n '101p' "$tmp/cuda0.jsonl" | grep -qF "{\"file\":\"$tmp/truncated.png\",\"error\":" &&
  sed -n '252p' "$tmp/cuda0.jsonl" | grep -qF "{\"file\":\"$tmp/missing.png\",\"error\":" &&
  [ "$(grep -c '"top":' "$tmp/cuda0.jsonl")" -eq ${#pngs[@]} ]; then
  ok "cuda:0: ${#pngs[@]} results, the 2 errors on lines 101 and 252, exit 1"
else bad "cuda:0 (rc $rc)"; fi

run classify -m "$model" --device cuda:all --json --batch 16 --timing --list "$tmp/list.txt"
cp "$tmp/err" "$tmp/all.err"
if [ $rc -eq 1 ] && cmp -s "$tmp/out" "$tmp/cuda0.jsonl"; then ok "cuda:all --json: byte-identical to cuda:0"
else bad "cuda:all --json differs from cuda:0 (rc $rc)"; cmp "$tmp/out" "$tmp/cuda0.jsonl"; fi

gpus=$(grep -oE "^swin classify: $n images, 2 failed, [0-9.]* s, [0-9.]* img/s(, [0-9]+ GPUs)?( \(after a [0-9.]* s warm-up\))?$" \
         "$tmp/all.err" | sed -nE 's/.*, ([0-9]+) GPUs( \(after .*)?$/\1/p')
gpus=${gpus:-1}
if [ "$gpus" -ge 2 ]; then
  spread=$(grep -cE "^  cuda:[0-9]+: [1-9][0-9]* images in [1-9][0-9]* batches" "$tmp/all.err")
  if [ "$spread" -eq "$gpus" ]; then ok "cuda:all: $gpus GPUs, every one classified images (--timing)"
  else bad "cuda:all: only $spread of $gpus GPUs show images in --timing"; fi
  list=$(seq -s, 0 $((gpus - 1)))
  run classify -m "$model" --device "cuda:$list" --json --batch 16 --list "$tmp/list.txt"
  if [ $rc -eq 1 ] && cmp -s "$tmp/out" "$tmp/cuda0.jsonl"; then ok "cuda:$list: byte-identical to cuda:0"
  else bad "cuda:$list (rc $rc)"; fi
elif grep -qE "^swin classify: $n images, 2 failed, [0-9.]* s, [0-9.]* img/s( \(after a [0-9.]* s warm-up\))?$" "$tmp/all.err"; then
  ok "one GPU: cuda:all ran as cuda:0 (plain summary line)"
else bad "cuda:all summary line"; cat "$tmp/all.err"; fi

run classify -m "$model" --device cuda:0 --batch 16 --out "$tmp/cuda0.txt" --list "$tmp/list.txt"
run classify -m "$model" --device cuda:all --batch 16 --out "$tmp/all.txt" --list "$tmp/list.txt"
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/all.txt")" -eq ${#pngs[@]} ] && cmp -s "$tmp/all.txt" "$tmp/cuda0.txt"; then
  ok "cuda:all --out (text): byte-identical to cuda:0"
else bad "cuda:all --out text (rc $rc)"; fi

# ---- bench: every GPU timed at once
run bench --device cuda:all --batch 8 --iters 5 --warmup 2 --json
if [ $rc -ne 0 ]; then bad "bench cuda:all (rc $rc)"
elif [ "$gpus" -ge 2 ]; then
  if command -v python3 >/dev/null 2>&1; then
    if python3 -c '
import json, sys
o = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert len(o["gpus"]) == n, o["gpus"]
r = o["results"][0]; assert r["batch"] == 8, r
assert len(r["per_gpu"]) == n and all(g["img_per_s"] > 0 for g in r["per_gpu"]), r
assert abs(sum(g["img_per_s"] for g in r["per_gpu"]) - r["total_img_per_s"]) <= 0.1 * n, r
assert r["alone"]["img_per_s"] > 0 and r["scaling"] > 0, r
' "$tmp/out" "$gpus"; then ok "bench cuda:all --json: $gpus GPUs, per-GPU img/s, total the sum"
    else bad "bench cuda:all --json"; fi
  elif grep -q '"per_gpu":\[' "$tmp/out"; then ok "bench cuda:all --json: per_gpu present (no python3 to parse)"
  else bad "bench cuda:all --json: no per_gpu"; fi
elif grep -q '"results":\[{"batch":8,"median_ms":' "$tmp/out" && ! grep -q per_gpu "$tmp/out"; then
  ok "bench cuda:all on one GPU: the one-GPU report"
else bad "bench cuda:all on one GPU"; fi

finish cli_gpu_multi
