#!/usr/bin/env bash
# cli_verify.sh - `swin verify` on the CPU against every tests/data/ref_*/ fixture (timm and
# transformers models, tools/export_reference.py), plus the ways verify must refuse or fail:
#   - every fixture: exit 0, report lines present, last line "PASS rel X <= 1e-04, top-1 B/B"
#     with X <= 1e-4 recomputed from the printed number; one "stage K ... PASS" line for each
#     stage of the model (every fixture's reference holds them all), none FAIL;
#   - perturbed logits (ref_timm_v1_w12/perturbed_rel, no stage outputs): FAIL, exit 1, rel ~2e-3,
#     "stages      none in the reference"; PASS at 5e-3;
#   (tests/cli_verify_stages.sh: perturbed weights, the first divergent stage named)
#   - swapped top-1 (perturbed_top1): FAIL at --tolerance 0.9 (top-1 1/2), the sample named with the
#     reference's margin between the two classes (and in --json's top1_mismatches);
#   - missing / truncated / mismatched reference, missing model, bad flags: exit 2 with the path;
#   - --img-size: three stored models at other (non-square, padded) sizes PASS; sizes that would
#     need resampled tensors (a V1 window change, absolute position embeddings) exit 2.
#   usage: cli_verify.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
data=$src/tests/data
source "$src/tests/clilib.sh"

# run ARGS...: swin verify ARGS, stdout in $tmp/out, stderr in $tmp/err, exit code in $rc
run() { "$swin" verify "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
last() { tail -n1 "$tmp/out"; }
# number after "rel " on the last line
rel_of() { last | sed -n 's/^[A-Z]* rel \([0-9.e+-]*\) .*/\1/p'; }
# lt A B: A < B as numbers
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

# ---- every fixture passes at fp32
shopt -s nullglob
refs=("$data"/ref_*/)
if [ ${#refs[@]} -lt 8 ]; then
  echo "cli_verify: expected at least 8 fixtures under $data/ref_*/, found ${#refs[@]}"
  exit 1
fi
for dir in "${refs[@]}"; do
  dir=${dir%/}
  name=$(basename "$dir")
  run --model "$dir" --reference "$dir/reference.safetensors"
  r=$(rel_of)
  if [ $rc -eq 0 ] && [[ $(last) =~ ^PASS\ rel\ [0-9.e+-]+\ \<=\ 1e-04,\ top-1\ ([0-9]+)/([0-9]+)$ ]] &&
     [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ -n "$r" ] && lt "$r" 1.0001e-4 &&
     grep -q '^device      cpu, fp32$' "$tmp/out" && grep -q '^relative error  ' "$tmp/out" &&
     grep -q "^top-1 agreement ${BASH_REMATCH[1]}/${BASH_REMATCH[1]}\$" "$tmp/out" &&
     nst=$("$swin" info --model "$dir" | sed -n 's/^variant .* \([0-9]\) stages$/\1/p') && [ -n "$nst" ] &&
     [ "$(grep -cE '^stage [0-9] +\[.*  PASS$' "$tmp/out")" = "$nst" ] && ! grep -qE '^stage .*FAIL' "$tmp/out"; then
    ok "$name: $nst stages, $(last)"
  else
    bad "$name (exit $rc)"
  fi
done

# ---- --json
d=$data/ref_timm_v1_w7
run --model "$d" --reference "$d/reference.safetensors" --json
if [ $rc -eq 0 ] && grep -q '"pass": true' "$tmp/out" && grep -q '"top1_agree": 2, "top1_mismatches": \[\]' "$tmp/out" &&
   grep -q '"stages": \[{"stage": 0, "shape": \[2, 14, 14, 48\], .*"pass": true}, {"stage": 1, ' "$tmp/out" &&
   grep -q '"first_divergent_stage": null' "$tmp/out" &&
   [ "$(wc -l <"$tmp/out")" -eq 1 ]; then ok "--json: one object, pass true, 2 stages"; else bad "--json (exit $rc)"; fi

# ---- perturbed references must fail
d=$data/ref_timm_v1_w12
run --model "$d" --reference "$d/perturbed_rel.safetensors"
r=$(rel_of)
if [ $rc -eq 1 ] && [[ $(last) == FAIL\ rel\ *\ \>\ 1e-04,\ top-1\ 2/2 ]] && [ -n "$r" ] && lt 1.5e-3 "$r" && lt "$r" 2.5e-3 &&
   grep -q '^stages      none in the reference' "$tmp/out"; then
  ok "perturbed logits: $(last)"
else
  bad "perturbed logits should FAIL with rel ~2e-3 (exit $rc)"
fi
run --model "$d" --reference "$d/perturbed_rel.safetensors" --tolerance 5e-3
if [ $rc -eq 0 ] && [[ $(last) == PASS\ rel\ *\ \<=\ 5e-03,\ top-1\ 2/2 ]]; then ok "perturbed logits at 5e-3: $(last)"
else bad "perturbed logits should PASS at --tolerance 5e-3 (exit $rc)"; fi
run --model "$d" --reference "$d/perturbed_top1.safetensors" --tolerance 0.9
if [ $rc -eq 1 ] && [[ $(last) == FAIL\ rel\ *\ \<=\ 9e-01,\ top-1\ 1/2 ]] &&
   grep -qE "^  sample 1: top-1 [0-9]+, reference [0-9]+ \(the reference's logit of [0-9]+ is [0-9.e+-]+ above that of [0-9]+" "$tmp/out"; then
  ok "swapped top-1: $(last); $(grep '^  sample 1' "$tmp/out")"
else
  bad "swapped top-1 should FAIL on top-1 alone, naming the sample and the reference's margin (exit $rc)"
fi
run --model "$d" --reference "$d/perturbed_top1.safetensors" --tolerance 0.9 --json
if [ $rc -eq 1 ] && grep -qE '"top1_agree": 1, "top1_mismatches": \[\{"sample": 1, "top1": [0-9]+, "reference_top1": [0-9]+, "reference_margin": [0-9.e+-]+\}\]' "$tmp/out"; then
  ok "swapped top-1, --json: the mismatch listed"
else
  bad "swapped top-1 --json should list sample 1 in top1_mismatches (exit $rc)"
fi

# ---- bad input: exit 2, one line naming the file
expect2() {   # expect2 DESCRIPTION NEEDLE ARGS...
  local what=$1 needle=$2
  shift 2
  run "$@"
  if [ $rc -eq 2 ] && grep -qF -- "$needle" "$tmp/err" && [ ! -s "$tmp/out" ]; then ok "$what: $(head -n1 "$tmp/err")"
  else bad "$what: expected exit 2 and '$needle' on stderr (exit $rc)"; fi
}
d=$data/ref_timm_v1_w7
expect2 "missing reference" "$tmp/nope.safetensors" --model "$d" --reference "$tmp/nope.safetensors"
head -c 100 "$d/reference.safetensors" >"$tmp/trunc.safetensors"
expect2 "truncated reference" "$tmp/trunc.safetensors" --model "$d" --reference "$tmp/trunc.safetensors"
expect2 "reference of another model" "tensor 'input' has shape [2, 3, 64, 64]" \
  --model "$d" --reference "$data/ref_timm_v2_w8/reference.safetensors"
expect2 "classes differ" "tensor 'logits' has shape [2, 16], expected [2, 10]" \
  --model "$data/ref_timm_v2_pre" --reference "$data/ref_timm_v2_w8/reference.safetensors"
expect2 "missing model" "$tmp/no_model" --model "$tmp/no_model" --reference "$d/reference.safetensors"
expect2 "no --reference" "--reference FILE is required" --model "$d"
expect2 "unknown flag" "unknown option '--frobnicate'" --model "$d" --reference "$d/reference.safetensors" --frobnicate
expect2 "bad tolerance" "bad --tolerance '-1'" --model "$d" --reference "$d/reference.safetensors" --tolerance -1
expect2 "bad --mlp" "bad --mlp 'half'" --model "$d" --reference "$d/reference.safetensors" --mlp half
expect2 "cpu fp16" "fp32 only" --model "$d" --reference "$d/reference.safetensors" --precision fp16

# ---- --img-size: a stored model at another input size, against timm.create_model(img_size=) /
# transformers' image_size (reference_<H>x<W>.safetensors, tools/export_reference.py RESIZED)
for x in "timm_v1_w7 56x84" "timm_v2_w8 32x64" "hf_v2_w8 48x80"; do
  fx=${x% *} size=${x#* }
  d=$data/ref_$fx
  run --model "$d" --reference "$d/reference_$size.safetensors" --img-size "$size"
  if [ $rc -eq 0 ] && [[ $(last) == PASS\ rel\ *\ \<=\ 1e-04,\ top-1\ 2/2 ]] && grep -q ", $size px, " "$tmp/out" &&
     ! grep -qE '^stage .*FAIL' "$tmp/out"; then
    ok "--img-size $size ($fx): $(last)"
  else
    bad "--img-size $size ($fx) should PASS (exit $rc)"
  fi
done
d=$data/ref_timm_v1_w7
expect2 "--img-size: the model's own size, input of another" "tensor 'input' has shape [2, 3, 56, 56], expected [B, 3, 56, 84]" \
  --model "$d" --reference "$d/reference.safetensors" --img-size 56x84
expect2 "--img-size changes a V1 window" "stage 2 has 8x8 windows, but its relative_position_bias_table" \
  --model "$data/ref_timm_v1_w12" --reference "$d/reference.safetensors" --img-size 64
expect2 "--img-size with absolute position embeddings" "absolute_pos_embed is for the 14x14 patch grid of 56x56" \
  --model "$data/ref_timm_old_v1_ape" --reference "$d/reference.safetensors" --img-size 64
expect2 "bad --img-size" "bad --img-size '0x8'" --model "$d" --reference "$d/reference.safetensors" --img-size 0x8

# ---- help
run --help
if [ $rc -eq 0 ] && grep -q '^usage: swin verify' "$tmp/out" && grep -q -- '--tolerance' "$tmp/out"; then ok "--help"
else bad "--help (exit $rc)"; fi

finish cli_verify
