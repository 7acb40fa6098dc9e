#!/usr/bin/env bash
# cli_malformed.sh - `swin info --model` on broken checkpoints and configs: each case must exit 2
# with one line on stderr naming the file and the problem (never a crash, never exit 0).
# The library-level cases (>= 15, incl. NaN/Inf weights and shape errors) are in test_malformed.c.
#   bash tests/cli_malformed.sh path/to/swin SRC_DIR BUILD_DIR
set -u
swin=$1
fails=0; checks=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# bad CASE EXPECTED_STDERR ARGS...
bad() {
  local name=$1 want=$2; shift 2
  checks=$((checks + 1))
  "$swin" info "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 2 ]; then fails=$((fails + 1)); echo "not ok: $name: exit $rc, expected 2 ($(cat "$tmp/err"))" >&2; return; fi
  if ! grep -qF -- "$want" "$tmp/err" || [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    fails=$((fails + 1)); echo "not ok: $name: stderr '$(cat "$tmp/err")' lacks '$want' or is not one line" >&2
  fi
}

# st NAME BYTES: raw bytes (printf escapes); sth NAME HEADER [DATA]: a correct length prefix
st() { printf "$2" >"$tmp/$1"; }
sth() {
  local n=${#2}
  { printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))\\x00\\x00\\x00\\x00\\x00\\x00"
    printf '%s%s' "$2" "${3:-}"; } >"$tmp/$1"
}

st short.safetensors 'abc'
bad "file shorter than 8 bytes" "short.safetensors: file is 3 bytes, shorter than the 8-byte header length" \
    --model "$tmp/short.safetensors" --arch swin_tiny_patch4_window7_224
st beyond.safetensors '\xff\x00\x00\x00\x00\x00\x00\x00{}'
bad "header length beyond file" "beyond.safetensors: header length 255 exceeds" \
    --model "$tmp/beyond.safetensors" --arch swin_tiny_patch4_window7_224
st json.safetensors '\x05\x00\x00\x00\x00\x00\x00\x00{"a":'
bad "invalid header JSON" "json.safetensors: header is not valid JSON" \
    --model "$tmp/json.safetensors" --arch swin_tiny_patch4_window7_224
sth range.safetensors '{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}' 1234
bad "offsets out of range" "range.safetensors: tensor 'w' data_offsets [0, 16] run past the data block of 4 bytes" \
    --model "$tmp/range.safetensors" --arch swin_tiny_patch4_window7_224
sth empty.safetensors '{}'
bad "missing tensor" "empty.safetensors: missing tensor 'patch_embed.proj.weight'" \
    --model "$tmp/empty.safetensors" --arch swin_tiny_patch4_window7_224
bad "bare file without --arch" "empty.safetensors: a bare .safetensors file needs its architecture (--arch" \
    --model "$tmp/empty.safetensors"
bad "unknown --arch for a bare file" "unknown architecture 'swin_huge'" --model "$tmp/empty.safetensors" --arch swin_huge

mkdir -p "$tmp/noweights" && echo '{"architecture": "swin_tiny_patch4_window7_224"}' >"$tmp/noweights/config.json"
bad "directory without model.safetensors" "noweights: directory has no model.safetensors" --model "$tmp/noweights"

mkdir -p "$tmp/cfg" && cp "$tmp/empty.safetensors" "$tmp/cfg/model.safetensors"
echo '{"architecture": "swin_tiny_patch4_window7_224",' >"$tmp/cfg/config.json"
bad "config.json invalid JSON" "config.json: invalid JSON" --model "$tmp/cfg"
echo '{"model_type": "swin", "depths": "two"}' >"$tmp/cfg/config.json"
bad "config depths a string" "config.json: field 'depths' must be an array of integers (got a string)" --model "$tmp/cfg"
echo '{"architecture": "vit_base_patch16_224"}' >"$tmp/cfg/config.json"
bad "unknown architecture" "config.json: unknown architecture 'vit_base_patch16_224'" --model "$tmp/cfg"
echo '{"model_type": "swin", "image_size": 64, "patch_size": 4, "window_size": 7, "embed_dim": 96, "depths": [2, 2, 2], "num_heads": [3, 6, 12], "num_labels": 10}' >"$tmp/cfg/config.json"
bad "transformers Swin V1 window clamped below its table" \
    "config.json: hf-swin: stage 2 grid 4x4 clamps the window to 4, below the configured 7" --model "$tmp/cfg"

# a config value that contradicts the weights (the library's cases are in test_malformed.c)
mkdir -p "$tmp/w7" && cp "$2/tests/data/ref_timm_v1_w7/model.safetensors" "$tmp/w7/"
sed 's/"window_size": 7/"window_size": 8/' "$2/tests/data/ref_timm_v1_w7/config.json" >"$tmp/w7/config.json"
bad "window_size contradicts the bias table" \
    "w7/config.json: window_size 8 contradicts layers.0.blocks.0.attn.relative_position_bias_table [169, 3] (window 7)" \
    --model "$tmp/w7"

echo "cli_malformed: $((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ] && [ $checks -gt 0 ]
