#!/usr/bin/env bash
# cli_classify.sh - `swin classify` and `swin preprocess` with the bundled digits model
# (weights/digits) on tests/data/digits/*.png. Checks the printed text, not only exit codes:
#   - files: one "path: label (p), ..." line each, 5 labels, probabilities descending, <= 1;
#   - a directory: every PNG once, in sorted order; top-1 = the label in the file name for
#     >= 80% of them (the model's held-out accuracy is far higher);
#   - --list gives the same lines as the files; --top 3 and --top 99 (clamped to 10 classes);
#   - --batch 1 and --batch 7 give the same classes; --json lines parse and carry the fields;
#   - a bad file mixed in: reported on stderr with its path, the others classified, exit 1,
#     and an {"file", "error"} line in --json;
#   - --out FILE: the very bytes of stdout (text and --json), nothing on stdout; '-' is stdout; a
#     file that cannot be written: exit 2 before any work;
#   - usage errors exit 2 (no images, bad flags, a missing model named in the message); --device
#     lists: bad syntax and duplicates refused; cuda:all without a GPU: exit 2 saying why;
#   - preprocess writes tensor 'input' [N, 3, 32, 32] F32, and refuses bad images;
#   - --pillow 12 resizes in Pillow 12's order (another input where the height shrinks much more
#     than the width), --pillow 13 as the default; a bad version exits 2.
# Skips (77) until weights/digits exists.
#   usage: cli_classify.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
export LC_ALL=C
source "$src/tests/clilib.sh"
need_digits cli_classify
run() { "$swin" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

shopt -s nullglob
pngs=("$digits"/*.png) # sorted: LC_ALL=C
if [ ${#pngs[@]} -lt 10 ]; then echo "cli_classify: fewer than 10 PNGs in $digits"; exit 1; fi
three=("${pngs[@]:0:3}")

# check_lines FILE N K: N lines "path: l (p), ... K times", probabilities descending in [0, 1]
check_lines() {
  awk -v n="$2" -v k="$3" '
    { i = index($0, ": "); if (i == 0) { print "no \": \" in: " $0; bad = 1; next }
      rest = substr($0, i + 2); m = split(rest, parts, /, /)
      if (m != k) { print "expected " k " labels: " $0; bad = 1 }
      prev = 2
      for (j = 1; j <= m; j++) {
        if (parts[j] !~ /^[^ ]+ \((0|1)\.[0-9][0-9][0-9]\)$/) { print "bad entry \"" parts[j] "\""; bad = 1; continue }
        p = parts[j]; sub(/.*\(/, "", p); sub(/\)/, "", p); p += 0
        if (p > prev || p < 0 || p > 1) { print "probabilities not descending in [0,1]: " $0; bad = 1 }
        prev = p
      } }
    END { if (NR != n) { print "expected " n " lines, got " NR; bad = 1 } exit bad }' "$1"
}

# ---- files
run classify -m "$model" "${three[@]}"
if [ $rc -eq 0 ] && check_lines "$tmp/out" 3 5 && [ "$(cut -d: -f1 "$tmp/out")" = "$(printf '%s\n' "${three[@]}")" ]; then
  ok "three files: 3 lines of 5 labels, in the order given"
else bad "three files (rc $rc)"; fi
cp "$tmp/out" "$tmp/files.txt"

# ---- the default model is weights/digits in the source tree
run classify "${three[@]}"
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/files.txt"; then ok "default model: same output as --model $model"
else bad "default model (rc $rc)"; fi

# ---- a directory
run classify -m "$model" "$digits"
if [ $rc -eq 0 ] && check_lines "$tmp/out" ${#pngs[@]} 5 && [ "$(cut -d: -f1 "$tmp/out" | sed 's#//*#/#g')" = "$(printf '%s\n' "${pngs[@]}" | sed 's#//*#/#g')" ]; then
  ok "directory: ${#pngs[@]} images, sorted"
else bad "directory (rc $rc)"; fi
cp "$tmp/out" "$tmp/dir.txt"
right=$(awk '{ f = $1; sub(/:$/, "", f); n = split(f, a, "_"); lab = a[n]; sub(/\.png$/, "", lab)
               if ($2 == lab) c++ } END { print c + 0 }' "$tmp/dir.txt")
if [ $((right * 100)) -ge $((${#pngs[@]} * 80)) ]; then ok "directory: top-1 right for $right of ${#pngs[@]}"
else bad "directory: top-1 right for only $right of ${#pngs[@]}"; fi

# ---- --list, same lines as the files; blank lines and CRLF tolerated
printf '%s\r\n\n' "${three[@]}" >"$tmp/list.txt"
run classify -m "$model" --list "$tmp/list.txt"
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/files.txt"; then ok "--list: same output as the files"
else bad "--list (rc $rc)"; fi

# ---- --top
run classify -m "$model" --top 3 "${three[@]}"
if [ $rc -eq 0 ] && check_lines "$tmp/out" 3 3; then ok "--top 3"; else bad "--top 3 (rc $rc)"; fi
run classify -m "$model" -k 99 "${pngs[0]}"
if [ $rc -eq 0 ] && check_lines "$tmp/out" 1 10; then ok "--top 99: clamped to the 10 classes"; else bad "--top 99 (rc $rc)"; fi

# ---- batch size does not change the answers
run classify -m "$model" --batch 1 --top 1 "$digits"; cut -d' ' -f2 "$tmp/out" >"$tmp/b1"
run classify -m "$model" --batch 7 --top 1 "$digits"; cut -d' ' -f2 "$tmp/out" >"$tmp/b7"
if [ $rc -eq 0 ] && cmp -s "$tmp/b1" "$tmp/b7" && [ "$(wc -l <"$tmp/b1")" -eq ${#pngs[@]} ]; then
  ok "--batch 1 and --batch 7: same classes"
else bad "--batch 1 vs 7"; fi

# ---- the pipeline: any number of decoder threads, same output in the same order; summary line
run classify -m "$model" --batch 5 --threads 1 --top 2 "$digits"; cp "$tmp/out" "$tmp/t1"
run classify -m "$model" --batch 5 --threads 4 --top 2 --timing "$digits"
if [ $rc -eq 0 ] && cmp -s "$tmp/t1" "$tmp/out" &&
  grep -q "^swin classify: ${#pngs[@]} images, 0 failed, [0-9.]* s, [0-9.]* img/s$" "$tmp/err" &&
  grep -q "time per stage" "$tmp/err" && grep -q "  read [0-9.]*  decode [0-9.]*" "$tmp/err"; then
  ok "--threads 1 and 4: identical output; summary line and --timing on stderr"
else bad "--threads / summary (rc $rc)"; fi
run classify -m "$model" --preprocess-device cpu --top 2 "$digits"
if [ $rc -eq 0 ] && cmp -s "$tmp/t1" "$tmp/out"; then ok "--preprocess-device cpu on a CPU session"
else bad "--preprocess-device cpu (rc $rc)"; fi

# ---- a bad file among good ones
mkdir -p "$tmp/mixed/sub"
cp "${pngs[0]}" "$tmp/mixed/a.png"
cp "${pngs[1]}" "$tmp/mixed/sub/c.PNG"
printf 'not an image at all' >"$tmp/mixed/b.png"
echo "notes" >"$tmp/mixed/notes.txt"
run classify -m "$model" --top 2 "$tmp/mixed"
if [ $rc -eq 1 ] && check_lines "$tmp/out" 2 2 && grep -q "$tmp/mixed/b.png: not an image" "$tmp/err" &&
  [ "$(cut -d: -f1 "$tmp/out" | tr '\n' ' ')" = "$tmp/mixed/a.png $tmp/mixed/sub/c.PNG " ]; then
  ok "bad file: reported with its path, others classified (recursive, any case), exit 1"
else bad "bad file (rc $rc)"; fi
run classify -m "$model" "$tmp/mixed/a.png" "$tmp/does-not-exist.png"
if [ $rc -eq 1 ] && check_lines "$tmp/out" 1 5 && grep -q "does-not-exist.png: cannot open" "$tmp/err"; then
  ok "missing file: reported, exit 1"
else bad "missing file (rc $rc)"; fi

# ---- --json
run classify -m "$model" --json --top 3 "$tmp/mixed"
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/out")" -eq 3 ] &&
  grep -q '^{"file":"[^"]*/a.png","top":\[{"index":[0-9],"label":"[^"]*","prob":[0-9.e-]*},' "$tmp/out" &&
  grep -q '^{"file":"[^"]*/b.png","error":"[^"]*b.png: not an image' "$tmp/out"; then
  ok "--json: result and error objects"
else bad "--json (rc $rc)"; fi
if command -v python3 >/dev/null 2>&1; then
  if python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "error" in o: continue
    t = o["top"]; assert len(t) == 3, o
    assert all(set(e) == {"index", "label", "prob"} for e in t), o
    assert all(t[i]["prob"] >= t[i + 1]["prob"] for i in range(2)), o
' "$tmp/out"; then ok "--json: every line parses, 3 entries, descending"
  else bad "--json does not parse"; fi
fi
cp "${pngs[0]}" "$tmp/we\"ird \\name.png"
run classify -m "$model" --json "$tmp/we\"ird \\name.png"
if [ $rc -eq 0 ] && grep -qF 'we\"ird \\name.png' "$tmp/out"; then ok "--json: quotes and backslashes escaped"
else bad "--json escaping (rc $rc)"; fi

# ---- --out FILE: what stdout would have shown, byte for byte
run classify -m "$model" --top 3 "$tmp/mixed" "${three[@]}"; cp "$tmp/out" "$tmp/stdout.txt"; cp "$tmp/err" "$tmp/stderr.txt"
run classify -m "$model" --top 3 --out "$tmp/res.txt" "$tmp/mixed" "${three[@]}"
if [ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && cmp -s "$tmp/res.txt" "$tmp/stdout.txt" && [ "$(wc -l <"$tmp/res.txt")" -eq 5 ] &&
  grep -q "b.png: not an image" "$tmp/err"; then
  ok "--out: the bytes stdout shows, nothing on stdout, bad file on stderr, exit 1"
else bad "--out (rc $rc)"; fi
run classify -m "$model" --top 3 --json "$tmp/mixed" "${three[@]}"; cp "$tmp/out" "$tmp/stdout.json"
run classify -m "$model" --top 3 --json -o "$tmp/res.jsonl" "$tmp/mixed" "${three[@]}"
if [ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && cmp -s "$tmp/res.jsonl" "$tmp/stdout.json" &&
  [ "$(grep -c '"error"' "$tmp/res.jsonl")" -eq 1 ]; then ok "-o with --json: one object per line, the error in place"
else bad "-o --json (rc $rc)"; fi
run classify -m "$model" --top 3 --out - "$tmp/mixed" "${three[@]}"
if [ $rc -eq 1 ] && cmp -s "$tmp/out" "$tmp/stdout.txt"; then ok "--out -: stdout"; else bad "--out - (rc $rc)"; fi
run classify -m "$model" --out "$tmp/no-dir/res.txt" "${three[@]}"
if [ $rc -eq 2 ] && grep -q "$tmp/no-dir/res.txt: cannot write" "$tmp/err" && [ ! -s "$tmp/out" ] &&
  ! grep -q "images, " "$tmp/err"; then ok "--out into a missing directory: exit 2 before any work"
else bad "--out unwritable (rc $rc)"; fi

# ---- --device lists (several GPUs): syntax and duplicates are refused before anything runs
for dev in "cuda:" "cuda:x" "cuda:0,,1" "cuda:0," "cuda:all,1" "cuda:-1" "cuda:1024" "cuda: 0" "gpu:0"; do
  run classify -m "$model" --device "$dev" "${pngs[0]}"
  if [ $rc -eq 2 ] && grep -qF "bad --device '$dev'" "$tmp/err"; then ok "--device '$dev': refused, exit 2"
  else bad "--device '$dev' (rc $rc)"; fi
done
run classify -m "$model" --device cuda:0,2,0 "${pngs[0]}"
if [ $rc -eq 2 ] && grep -q "cuda:0 is listed twice" "$tmp/err"; then ok "--device cuda:0,2,0: duplicate named, exit 2"
else bad "--device duplicate (rc $rc)"; fi
# cuda:all runs where there is a GPU; elsewhere exit 2 saying why
no_gpu="no CUDA driver|no GPU found|no usable GPU|built without CUDA"
for dev in cuda:all cuda:0,1023; do
  run classify -m "$model" --device "$dev" "${pngs[0]}"
  if [ $rc -eq 2 ] && grep -qE -- "--device $dev: .*($no_gpu|cuda:1023 does not exist)" "$tmp/err" && [ ! -s "$tmp/out" ]; then
    ok "--device $dev: exit 2 ($(head -n1 "$tmp/err" | cut -c1-80))"
  elif [ $dev = cuda:all ] && [ $rc -eq 0 ] && check_lines "$tmp/out" 1 5; then ok "--device cuda:all: ran on the GPUs"
  else bad "--device $dev (rc $rc)"; fi
done

# ---- usage errors: exit 2, one line naming the problem
usage_case() { # expected-text args...
  local want=$1; shift
  run "$@"
  if [ $rc -eq 2 ] && grep -q -- "$want" "$tmp/err"; then ok "usage: $* -> exit 2"; else bad "usage: $* (rc $rc)"; fi
}
usage_case "no images" classify
usage_case "unknown option" classify --frobnicate "${pngs[0]}"
usage_case "bad --top" classify --top 0 "${pngs[0]}"
usage_case "bad --batch" classify --batch x "${pngs[0]}"
usage_case "bad --device" classify --device tpu "${pngs[0]}"
usage_case "bad --preprocess" classify --preprocess torch "${pngs[0]}"
usage_case "$tmp/no-model" classify --model "$tmp/no-model" "${pngs[0]}"
usage_case "needs a value" classify "${pngs[0]}" --top
usage_case "bad --threads" classify --threads 0 "${pngs[0]}"
usage_case "bad --preprocess-device" classify --preprocess-device tpu "${pngs[0]}"
usage_case "needs --device cuda" classify --preprocess-device gpu "${pngs[0]}"
usage_case "bad --decoder" classify --decoder stb "${pngs[0]}"
usage_case "nvjpeg needs --device cuda" classify --decoder nvjpeg "${pngs[0]}"
usage_case "gpu needs --device cuda and GPU preprocessing" classify --decoder gpu "${pngs[0]}"
usage_case "gpu needs --device cuda and GPU preprocessing" classify --device cuda --preprocess-device cpu \
  --decoder gpu "${pngs[0]}"
usage_case "expected auto, cpu, gpu or nvjpeg" classify --decoder gpus "${pngs[0]}"
# --decoder auto on the CPU is libjpeg: the same bytes as --decoder cpu
jpgs=("$src"/tests/data/jpeg/baseline_*.jpg "$src"/tests/data/jpeg/grey_70x50.jpg)
run classify --json --decoder auto "${jpgs[@]}"
cp "$tmp/out" "$tmp/auto.json"
run classify --json --decoder cpu "${jpgs[@]}"
if [ $rc -eq 0 ] && [ -s "$tmp/out" ] && cmp -s "$tmp/out" "$tmp/auto.json"; then ok "--decoder auto on the CPU = cpu"
else bad "--decoder auto vs cpu on the CPU (rc $rc)"; fi
usage_case "bad --pillow 'x' (expected a Pillow version" classify --pillow x "${pngs[0]}"
usage_case "bad --pillow '12.x'" preprocess --pillow 12.x --out "$tmp/x.safetensors" "${pngs[0]}"
run classify -m "$model" --help
if [ $rc -eq 0 ] && grep -q "fp16 on cuda" "$tmp/out" && grep -q -- "--list" "$tmp/out" &&
  grep -q -- "--pillow VERSION .*(default 13; Pillow 12" "$tmp/out"; then ok "--help: exit 0, --pillow's default"
else bad "--help (rc $rc)"; fi

# ---- preprocess
run preprocess -m "$model" --out "$tmp/in.safetensors" "${three[@]}"
if [ $rc -eq 0 ] && grep -q "input \[3, 3, 32, 32\]" "$tmp/out" && [ -s "$tmp/in.safetensors" ]; then
  ok "preprocess: 3 images"
else bad "preprocess (rc $rc)"; fi
if command -v python3 >/dev/null 2>&1; then
  if python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
t = h["input"]; assert t["dtype"] == "F32" and t["shape"] == [3, 3, 32, 32], t
assert t["data_offsets"][1] - t["data_offsets"][0] == 3 * 3 * 32 * 32 * 4 and len(b) == 8 + n + t["data_offsets"][1]
vals = struct.unpack("<%df" % (3 * 3 * 32 * 32), b[8 + n:])
assert all(-1.0 <= v <= 1.0 for v in vals) and min(vals) == -1.0, (min(vals), max(vals))  # mean = std = 0.5
' "$tmp/in.safetensors"; then ok "preprocess: header and values (mean = std = 0.5 -> [-1, 1])"
  else bad "preprocess: bad file"; fi
fi
run preprocess -m "$model" --out "$tmp/bad.safetensors" "${three[0]}" "$tmp/mixed/b.png"
if [ $rc -eq 1 ] && grep -q "b.png: not an image" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]; then
  ok "preprocess: bad image -> exit 1, nothing written"
else bad "preprocess bad image (rc $rc)"; fi
# the tensor is streamed through a temporary file beside --out: a bad image leaves an existing
# file as it was and no temporary one; a non-regular --out (/dev/null) is written directly
cp "$tmp/in.safetensors" "$tmp/keep.safetensors"
run preprocess -m "$model" --out "$tmp/keep.safetensors" "${three[0]}" "$tmp/mixed/b.png" "${three[1]}"
if [ $rc -eq 1 ] && cmp -s "$tmp/in.safetensors" "$tmp/keep.safetensors" && ! ls "$tmp" | grep -q '\.tmp-'; then
  ok "preprocess: bad image -> the existing --out file unchanged, no temporary file left"
else bad "preprocess bad image over an existing file (rc $rc)"; fi
run preprocess -m "$model" --out /dev/null "${three[@]}"
if [ $rc -eq 0 ] && grep -q "/dev/null: input \[3, 3, 32, 32\]" "$tmp/out"; then ok "preprocess --out /dev/null"
else bad "preprocess --out /dev/null (rc $rc)"; fi
usage_case "--out" preprocess "${three[0]}"

# ---- --pillow: a portrait image resized to a square (hf), the height shrinking more than twice as
# much as the width: Pillow 13 resizes vertically first, Pillow 12 horizontally first
tall=$src/tests/data/preprocess/grey_64x80.png
pre() { run preprocess -m "$model" --preprocess hf --img-size 56 "$@" "$tall"; }
pre --pillow 12.3.0 --out "$tmp/p12.safetensors"; r12=$rc; l12=$(cat "$tmp/out")
pre --pillow 13 --out "$tmp/p13.safetensors"; r13=$rc
pre --out "$tmp/pdef.safetensors"
if [ $r12 -eq 0 ] && [ $r13 -eq 0 ] && [ $rc -eq 0 ] && [[ $l12 == *"input [1, 3, 56, 56] (hf, bicubic, Pillow 12)" ]] &&
  grep -q "input \[1, 3, 56, 56\] (hf, bicubic, Pillow 13)$" "$tmp/out" &&
  cmp -s "$tmp/p13.safetensors" "$tmp/pdef.safetensors" && ! cmp -s "$tmp/p12.safetensors" "$tmp/p13.safetensors"; then
  ok "preprocess --pillow 12.3.0: another input (Pillow 12's order); --pillow 13 = the default"
else bad "preprocess --pillow (rc $r12 $r13 $rc)"; fi
run classify -m "$model" --pillow 12 "${three[@]}"
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/files.txt"; then ok "classify --pillow 12: upscaled digits, same output"
else bad "classify --pillow 12 (rc $rc)"; fi

finish cli_classify
