#!/usr/bin/env bash
# cli_verify_stages.sh - `swin verify` names the first stage that diverges. A fixture's
# model.safetensors is copied with one weight shifted (tests/perturb_tensor.c, the project's own
# safetensors reader/writer: no python needed) and verified against the fixture's reference, which
# holds every stage's output (`stageK`):
#   - stage 2 of ref_timm_v1_w12 (mlp.fc1.weight + 0.01): stages 0, 1 PASS, stage 2 FAIL, exit 1,
#     last line "FAIL rel X > 1e-04, top-1 2/2; first divergence at stage 2 (rel R > 1e-04)",
#     --json "first_divergent_stage": 2;
#   - stage 1 of ref_hf_v2_w8 (query.weight + 0.01, transformers names): first divergence stage 1;
#   - stage 2's mlp.fc2.weight + 0.01 (the same shift on every channel of a token, which the final
#     LayerNorm removes): the logits still match, stage 2 does not: FAIL at stage 2, exit 1;
#   - the head (head.fc.bias + 0.05): every stage PASS, the logits FAIL, "first divergence after
#     stage 2", --json "first_divergent_stage": null.
#   usage: cli_verify_stages.sh SWIN_BINARY SOURCE_DIR BUILD_DIR
set -u
swin=$1
src=$2
build=${3:?cli_verify_stages: the build directory is needed (it holds tests/perturb_tensor)}
data=$src/tests/data
perturb=$build/tests/perturb_tensor
source "$src/tests/clilib.sh"

if [ ! -x "$perturb" ]; then
  echo "cli_verify_stages: $perturb was not built (cmake --build $build)"
  exit 1
fi

# model FIXTURE TENSOR DELTA: $tmp/model = the fixture with TENSOR + DELTA
model() {
  rm -rf "$tmp/model" && mkdir -p "$tmp/model" && cp "$data/$1"/*.json "$tmp/model/" &&
    "$perturb" "$data/$1/model.safetensors" "$tmp/model/model.safetensors" "$2" "$3" >"$tmp/out" 2>"$tmp/err"
}
# run FIXTURE ARGS...: verify $tmp/model against FIXTURE's reference
run() {
  local fx=$1
  shift
  "$swin" verify --model "$tmp/model" --reference "$data/$fx/reference.safetensors" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
last() { tail -n1 "$tmp/out"; }
# stage_is K PASS|FAIL: the report line of stage K ends with that verdict
stage_is() { grep -qE "^stage $1 +\[[0-9, ]+\] +max abs error [0-9.e+-]+  rel [0-9.e+-]+  \(max\|ref\| [0-9.e+-]+\)  $2\$" "$tmp/out"; }

# ---- stage 2 of a 3-stage timm V1
fx=ref_timm_v1_w12
if model $fx layers.2.blocks.0.mlp.fc1.weight 0.01; then
  run $fx
  if [ $rc -eq 1 ] && stage_is 0 PASS && stage_is 1 PASS && stage_is 2 FAIL &&
     [[ $(last) =~ ^FAIL\ rel\ [0-9.e+-]+\ \>\ 1e-04,\ top-1\ [0-9]/2\;\ first\ divergence\ at\ stage\ 2\ \(rel\ [0-9.e+-]+\ \>\ 1e-04\)$ ]]; then
    ok "stage 2 perturbed: $(last)"
  else
    bad "stage 2 perturbed: expected stages 0, 1 PASS, 2 FAIL, exit 1 and 'first divergence at stage 2' (exit $rc)"
  fi
  run $fx --json
  if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/out")" -eq 1 ] && grep -q '"first_divergent_stage": 2, "pass": false}$' "$tmp/out" &&
     grep -q '{"stage": 1, "shape": \[2, 12, 12, 64\], [^}]*"pass": true}' "$tmp/out" &&
     grep -q '{"stage": 2, "shape": \[2, 6, 6, 128\], [^}]*"pass": false}' "$tmp/out"; then
    ok "stage 2 perturbed, --json: first_divergent_stage 2"
  else
    bad "stage 2 perturbed, --json (exit $rc)"
  fi
else
  bad "perturb_tensor on $fx"
fi

# ---- stage 1 of a 3-stage transformers V2 (HF tensor names)
fx=ref_hf_v2_w8
if model $fx swinv2.encoder.layers.1.blocks.0.attention.self.query.weight 0.01; then
  run $fx
  if [ $rc -eq 1 ] && stage_is 0 PASS && stage_is 1 FAIL && stage_is 2 FAIL &&
     [[ $(last) == FAIL\ *\;\ first\ divergence\ at\ stage\ 1\ \(rel\ *\ \>\ 1e-04\) ]]; then
    ok "stage 1 perturbed (HF): $(last)"
  else
    bad "stage 1 perturbed (HF): expected stage 0 PASS, 1 and 2 FAIL, 'first divergence at stage 1' (exit $rc)"
  fi
else
  bad "perturb_tensor on $fx"
fi

# ---- a change the logits cannot see: the same shift on every channel, removed by the final norm
fx=ref_timm_v1_w12
if model $fx layers.2.blocks.0.mlp.fc2.weight 0.01; then
  run $fx
  if [ $rc -eq 1 ] && stage_is 1 PASS && stage_is 2 FAIL &&
     [[ $(last) =~ ^FAIL\ rel\ [0-9.e+-]+\ \<=\ 1e-04,\ top-1\ 2/2\;\ first\ divergence\ at\ stage\ 2\  ]]; then
    ok "stage 2 shifted, logits unchanged: $(last)"
  else
    bad "stage 2 shifted: the logits match but stage 2 must FAIL the run (exit $rc)"
  fi
else
  bad "perturb_tensor on $fx"
fi

# ---- the head: every stage matches, the logits do not
if model $fx head.fc.bias 0.05; then
  run $fx
  if [ $rc -eq 1 ] && stage_is 0 PASS && stage_is 1 PASS && stage_is 2 PASS &&
     [[ $(last) =~ ^FAIL\ rel\ [0-9.e+-]+\ \>\ 1e-04,\ top-1\ [0-9]/2\;\ first\ divergence\ after\ stage\ 2\ \(the\ last\ stage\ compared\)$ ]]; then
    ok "head perturbed: $(last)"
  else
    bad "head perturbed: expected every stage PASS, logits FAIL, 'first divergence after stage 2' (exit $rc)"
  fi
  run $fx --json
  if [ $rc -eq 1 ] && grep -q '"first_divergent_stage": null, "pass": false}$' "$tmp/out"; then
    ok "head perturbed, --json: first_divergent_stage null"
  else
    bad "head perturbed, --json (exit $rc)"
  fi
else
  bad "perturb_tensor on $fx"
fi

# ---- the unperturbed copy passes (the copy itself changes nothing)
if model $fx head.fc.bias 0; then
  run $fx
  if [ $rc -eq 0 ] && stage_is 2 PASS && [[ $(last) == PASS\ rel\ *\ \<=\ 1e-04,\ top-1\ 2/2 ]]; then ok "copy + 0: $(last)"
  else bad "copy + 0 should PASS (exit $rc)"; fi
else
  bad "perturb_tensor on $fx"
fi

finish cli_verify_stages
