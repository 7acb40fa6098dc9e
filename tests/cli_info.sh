#!/usr/bin/env bash
# cli_info.sh - `swin info`: preset descriptions (parameter counts are timm's, GFLOPs = 2 x MACs
# of every GEMM), JSON output, and usage errors (exit 2, one line on stderr naming the problem).
#   bash tests/cli_info.sh path/to/swin SRC_DIR BUILD_DIR
set -u
swin=$1
src=$2
fails=0; checks=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

ok()   { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); fails=$((fails + 1)); echo "not ok: $*" >&2; }
# expect_out NAME PATTERN: last command's stdout contains PATTERN (fixed string)
expect_out() { if grep -qF -- "$2" "$tmp/out"; then ok; else fail "$1: stdout lacks '$2'"; sed 's/^/  | /' "$tmp/out" >&2; fi; }
# usage CASE EXPECTED_STDERR ARGS...: exit 2, exactly one stderr line containing the text
usage() {
  local name=$1 want=$2; shift 2
  "$swin" info "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 2 ]; then fail "$name: exit $rc, expected 2"; return; fi
  if ! grep -qF -- "$want" "$tmp/err"; then fail "$name: stderr '$(cat "$tmp/err")' lacks '$want'"; return; fi
  if [ "$(wc -l <"$tmp/err")" -ne 1 ]; then fail "$name: stderr is not one line"; return; fi
  ok
}

# ---- presets: params as timm counts them (sum of p.numel() over model.parameters())
while read -r arch params; do
  "$swin" info --arch "$arch" >"$tmp/out" 2>"$tmp/err" || fail "$arch: exit $?"
  expect_out "$arch" "($params)"
done <<'LIST'
swin_tiny_patch4_window7_224 28288354
swin_small_patch4_window7_224 49606258
swin_base_patch4_window12_384 87903584
swin_large_patch4_window12_384 196735516
swinv2_tiny_window16_256 28347154
swinv2_base_window12to24_192to384 87918816
swinv2_large_window12_192 228772549
LIST

# swin_tiny: 28.29M params, ~4.5 GMAC = 8.7-9.0 GFLOPs; stage 3 at 7x7 has window 7 and no shift
"$swin" info --arch swin_tiny_patch4_window7_224 >"$tmp/out" 2>&1
expect_out tiny "params      28.29M (28288354)"
expect_out tiny "Swin V1, timm layout, 4 stages"
gf=$(sed -n 's/^compute *\([0-9.]*\) GFLOPs.*/\1/p' "$tmp/out")
if awk -v g="${gf:-0}" 'BEGIN { exit !(g >= 8.7 && g <= 9.0) }'; then ok; else fail "tiny: GFLOPs '$gf' not in [8.7, 9.0]"; fi
expect_out tiny "(4.49 GMAC)"
if grep -Eq '^ +3 +7 +768 +2 +24 +32 +7 +0 ' "$tmp/out"; then ok; else fail "tiny: stage 3 row (res 7, window 7, shift 0)"; fi
if grep -Eq '^ +0 +56 +96 +2 +3 +32 +7 +3 ' "$tmp/out"; then ok; else fail "tiny: stage 0 row (res 56, window 7, shift 3)"; fi
expect_out tiny "bicubic, crop_pct 0.900"

# V2 window 16 at 256: the last stage (8x8) clamps the window to 8 and does not shift
"$swin" info --arch swinv2_tiny_window16_256 >"$tmp/out" 2>&1
if grep -Eq '^ +3 +8 +768 +2 +24 +32 +8 +0 ' "$tmp/out"; then ok; else fail "v2 window16: stage 3 row (window 8, shift 0)"; fi
"$swin" info --arch swinv2_base_window12to24_192to384 >"$tmp/out" 2>&1
expect_out v2-384 "pretrained_window"
if grep -Eq '^ +3 +12 +1024 +2 +32 +32 +12 +0 +4096 +6$' "$tmp/out"; then ok; else fail "v2-384: stage 3 row (window 12, pretrained 6)"; fi

# --img-size 192x256 (timm, per dimension): 6x8 in the last stage clamps the window to 6x7 and
# shifts along W only; every stage pads; parameters as timm.create_model(img_size=(192, 256)) counts
"$swin" info --arch swin_tiny_patch4_window7_224 --img-size 192x256 >"$tmp/out" 2>&1 || fail "img-size: exit $?"
expect_out img-size "input       3 x 192 x 256, patch 4"
if grep -Eq '^ +3 +6x8 +768 +2 +24 +32 +6x7 +0x3 ' "$tmp/out"; then ok; else fail "img-size: stage 3 row (6x8, window 6x7, shift 0x3)"; fi
expect_out img-size "padding     stage 2: 12x16 tokens padded to 14x21 (timm: roll, pad, attend, crop, roll back)"
expect_out img-size "params      28.29M (28287106)"
expect_out img-size "per 192x256 image"
# 256 with window 7: grids 64/32/16/8 padded to 70/35/21/14
"$swin" info --arch swin_tiny_patch4_window7_224 --img-size 256 >"$tmp/out" 2>&1 || fail "img-size 256: exit $?"
expect_out img-size-256 "padding     stage 0: 64x64 tokens padded to 70x70"
expect_out img-size-256 "padding     stage 3: 8x8 tokens padded to 14x14"
# transformers Swinv2: one square window from the grid's height (48x80 -> 12x20, 6x10, 3x5)
"$swin" info --model "$src/tests/data/ref_hf_v2_w8" --img-size 48x80 >"$tmp/out" 2>&1 || fail "img-size hf: exit $?"
expect_out img-size-hf "Swin V2, Hugging Face layout"
if grep -Eq '^ +1 +6x10 +32 +2 +2 +16 +6 +0 ' "$tmp/out"; then ok; else fail "img-size hf: stage 1 row (6x10, window 6, shift 0)"; fi
expect_out img-size-hf "padding     stage 0: 12x20 tokens padded to 16x24 (transformers: pad, roll, attend, roll back, crop)"
"$swin" info --arch swin_tiny_patch4_window7_224 --img-size 192x256 --json >"$tmp/out" 2>&1 || fail "img-size json: exit $?"
expect_out img-size-json '"img_h":	192'
expect_out img-size-json '"window":	[6, 7]'

# JSON
"$swin" info --arch swin_tiny_patch4_window7_224 --json >"$tmp/out" 2>&1 || fail "json: exit $?"
expect_out json '"params":	28288354'
expect_out json '"arch":	"swin_tiny_patch4_window7_224"'
expect_out json '"window":	7'

# help: exit 0, defaults and presets listed
"$swin" info --help >"$tmp/out" 2>&1 && ok || fail "--help: exit $?"
expect_out help "(default cpu"
expect_out help "swinv2_large_window12to24_192to384"

# ---- usage errors
usage "unknown flag" "unknown option '--bogus'" --bogus
usage "missing value" "--model needs a value" --model
usage "bad batch" "bad --batch '0'" --arch swin_tiny_patch4_window7_224 --batch 0
usage "bad device" "bad --device 'tpu'" --device tpu
usage "bad precision" "unknown precision 'fp4'" --precision fp4
usage "unknown arch" "unknown architecture 'swin_nano'" --arch swin_nano
usage "missing model" "no such file or directory" --model "$tmp/nowhere"
usage "bad --img-size" "bad --img-size '224x'" --img-size 224x
usage "V1 window change" "relative_position_bias_table (layers.2.blocks.*.attn) is for 6x6 windows" \
  --model "$src/tests/data/ref_timm_v1_w12" --img-size 64

# --device cuda: the session plan on a GPU build, else one clear line and exit 2
"$swin" info --arch swin_tiny_patch4_window7_224 --device cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ]; then expect_out cuda "session plan"
elif [ $rc -eq 2 ] && [ -s "$tmp/err" ]; then ok
else fail "--device cuda: exit $rc, stderr '$(cat "$tmp/err")'"; fi

echo "cli_info: $((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ] && [ $checks -gt 0 ]
