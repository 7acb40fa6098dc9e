#!/usr/bin/env bash
# gpu_check.sh - every correctness check that needs the GPU, as ONE command on a GPU machine:
# build, the ctest suite, `swin verify --device cuda` on every fixture and precision, and
# compute-sanitizer; logs into OUTDIR, one summary table printed last.
#
#   bash tools/gpu_check.sh [--out DIR] [--build-dir DIR] [--no-ctest] [--no-cpu-suite]
#                           [--no-verify] [--no-sanitizers] [--sanitize "TEST..."] [--cpu-dry-run]
#
#   1. cJSON / stb / libjpeg-turbo: when not installed, the .debs/ packages are unpacked into a
#      temporary prefix
#   2. configure and build everything in build-gpu/ (build.log)
#   3. ctest -L gpu, then the rest of the suite (ctest -LE gpu), so together the full suite
#      runs once (ctest.log)
#   4. swin verify --device cuda on every tests/data/ref_*/ fixture in fp32, tf32, fp16, bf16, fp8,
#      plus fp16 with --attention unfused, fp16 with --mlp fused and unfused (the default, auto,
#      is fused on Hopper), tf32 with --mlp unfused and fp16 with --graphs off (verify.log); then
#      random-weight full-size Swin-T, SwinV2-T and Swin-B 384 (random_model.py, make_reference.py
#      --pick: inputs whose top-1 is no near-tie) in fp16, bf16, tf32 and the one-kernel MLP, which
#      only Swin's own widths reach, and fp16 with the qkv projection inside the attention kernel at
#      every width it takes (SWIN_ATTN_QKV=2: at batch 4 the default fuses only the first stage), and
#      that with V1's window partition and norm1 inside it too (SWIN_ATTN_GATHER=1; V2 gathers by default),
#      and with proj, the residual and the norm after it in the same kernel (SWIN_ATTN_PROJ=2: opt-in),
#      and fp16 / bf16 with SwinV2's norm2 in fc2's epilogue (SWIN_FC2_POST_LN=1: at batch 4 the
#      default does not fuse it), and fp8 as is, with every FP8 linear layer on cuBLASLt
#      (SWIN_GEMM_TMA_FP8=0) and with every one on the persistent TMA kernel (=1, at every size)
#   5. compute-sanitizer: memcheck (with leak check) over one fp16 and one fp8 verify; racecheck and memcheck
#      over test_gpu_attention, test_gpu_attention_qkv, test_gpu_attention_proj, test_gpu_gemm (our tensor-core GEMM's cases), test_gpu_fp8, test_gpu_mlp, test_gpu_lnfold, test_gpu_post_ln, test_gpu_patch_embed,
#      test_gpu_preprocess,
#      test_gpu_jpeg_exact and test_gpu_jpeg_huff, memcheck over test_gpu_pipeline, with SWIN_TEST_QUICK=1 (sanitizer.log)
#   6. the summary table (also summary.txt): per fixture and precision the max abs error,
#      relative error, top-1 and PASS/FAIL as `swin verify` prints them ("unsupported on GPU" for
#      a fixture whose geometry the CUDA engine refuses at session creation: not a failure);
#      ctest totals;
#      sanitizer error counts; GPU and driver.
# --no-ctest / --no-verify / --no-sanitizers skip step 3 / 4 / 5 (the summary says "not run"), to
#   split the check over several calls of a machine with a time limit per command;
#   --no-cpu-suite runs only `ctest -L gpu` in step 3 (CI runs the rest).
# --sanitize "TEST...": step 5 over those GPU tests only (e.g. "test_gpu_jpeg_huff test_gpu_pipeline"
#   after a change to their kernels), without the verify memchecks; the summary lists what ran.
# --cpu-dry-run: verify with --device cpu (fp32 only: the CPU engine's one precision), no
#   sanitizers, GPU tests may skip: checks this script's parsing on a machine without a GPU.
# Env: GPU_CHECK_CUDA_ARCH (CMAKE_CUDA_ARCHITECTURES, default 90), GPU_CHECK_VERIFY_JOBS (fixture
#   verifies run at once in step 4, default 4; 1 runs them one after the other), GPU_CHECK_SANITIZER_TIMEOUT
#   (seconds per compute-sanitizer run, default 150; a run cut short counts as failed),
#   GPU_CHECK_JOBS (GPU tests run at once in step 3, default 4; the tests that measure free
#   device memory are RUN_SERIAL in CTest and run alone).
# OUTDIR: --out, else $OUT when set, else gpu-check-out. Exit 0 only when everything passed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
dry=0 run_ctest=1 run_cpu_suite=1 run_verify=1 run_san=1 build="" out=${OUT:-gpu-check-out}
san_tests="test_gpu_attention test_gpu_attention_qkv test_gpu_attention_proj test_gpu_gemm test_gpu_fp8 test_gpu_mlp test_gpu_lnfold test_gpu_post_ln test_gpu_patch_embed test_gpu_preprocess test_gpu_jpeg_exact test_gpu_jpeg_huff test_gpu_pipeline"
san_verify=1
while [ $# -gt 0 ]; do
  case $1 in
    --cpu-dry-run) dry=1 ;;
    --no-ctest) run_ctest=0 ;;
    --no-cpu-suite) run_cpu_suite=0 ;;
    --no-verify) run_verify=0 ;;
    --no-sanitizers) run_san=0 ;;
    --sanitize) san_tests=${2:?--sanitize needs a list of tests}; san_verify=0; shift ;;
    --build-dir) build=${2:?--build-dir needs a value}; shift ;;
    --out) out=${2:?--out needs a value}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
build=${build:-build-gpu}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -f "$out"/build.log "$out"/ctest.log "$out"/verify.log "$out"/sanitizer.log "$out"/summary.txt
if [ $dry = 1 ]; then
  device=cpu; variants=("fp32|--precision fp32")
else
  device=cuda
  variants=("fp32|--precision fp32" "tf32|--precision tf32" "fp16|--precision fp16"
            "bf16|--precision bf16" "fp8|--precision fp8" "fp16 unfused|--precision fp16 --attention unfused"
            "fp16 mlp fused|--precision fp16 --mlp fused" "fp16 mlp unfused|--precision fp16 --mlp unfused"
            "tf32 mlp unfused|--precision tf32 --mlp unfused" "fp16 graphs off|--precision fp16 --graphs off")
fi
failed=()
T0=$SECONDS
step() { echo "== $* ($((SECONDS - T0))s)"; }

# ---- 1. dependencies
prefix=
if [ ! -f /usr/include/cjson/cJSON.h ] || [ ! -f /usr/include/stb/stb_image.h ] ||
   [ ! -f /usr/include/jpeglib.h ]; then
  if ls .debs/*.deb >/dev/null 2>&1; then
    # inside the build directory, so that a later call on the same machine finds the prefix its
    # CMake cache names; programs run outside the build tree need
    # LD_LIBRARY_PATH=$build/deps/usr/lib/x86_64-linux-gnu
    mkdir -p "$build/deps"
    for f in .debs/*.deb; do dpkg -x "$f" "$build/deps"; done
    prefix=$(cd "$build/deps/usr" && pwd)
  fi
fi

# ---- 2. build
step "build ($build)"
build_ok=1
cuda_arch=()
[ $dry = 0 ] && cuda_arch=(-DCMAKE_CUDA_ARCHITECTURES="${GPU_CHECK_CUDA_ARCH:-90}")
{ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda_arch[@]}" \
    ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} &&
  cmake --build "$build" -j "$(nproc)"; } >"$out/build.log" 2>&1 || build_ok=0
if [ $build_ok = 0 ] || [ ! -x "$build/swin" ]; then
  build_ok=0
  failed+=("build")
  tail -n 40 "$out/build.log"
fi

# ---- 3. ctest
# ctest_run NAME ARGS...: runs ctest, appends to ctest.log, leaves "NAME|passed|failed|skipped|total"
ctest_run() {
  local name=$1
  shift
  echo "######## ctest $*" >>"$out/ctest.log"
  ctest --test-dir "$build" --output-on-failure --timeout 600 "$@" >"$work/ctest" 2>&1
  local rc=$?
  cat "$work/ctest" >>"$out/ctest.log"
  local p f s t
  p=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed +[0-9.]+ sec' "$work/ctest")
  s=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped|^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Skipped +[0-9.]+ sec' "$work/ctest")
  t=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+:' "$work/ctest")
  f=$((t - p - s))
  echo "$name|$p|$f|$s|$t|$rc" >>"$work/ctest.tsv"
  [ $rc = 0 ] && [ $f = 0 ] || failed+=("$name")
  # on the GPU machine a skipped GPU test means the GPU was not usable: that is a failure
  [ $dry = 0 ] && [ "$s" != 0 ] && [[ $name == *"-L gpu"* ]] && failed+=("$name: $s skipped")
}
: >"$work/ctest.tsv"
if [ $run_ctest = 1 ] && [ $build_ok = 1 ]; then
  step "ctest -L gpu"
  ctest_run "ctest -L gpu" -L gpu -j "${GPU_CHECK_JOBS:-4}"
  if [ $run_cpu_suite = 1 ]; then
    step "ctest -LE gpu"
    ctest_run "ctest -LE gpu (rest of the suite)" -LE gpu -j "$(nproc)"
  fi
fi

# ---- 4. swin verify on every fixture
step "swin verify --device $device"
: >"$work/verify.tsv"
shopt -s nullglob
fixtures=(tests/data/ref_*/)
[ ${#fixtures[@]} = 0 ] && failed+=("no tests/data/ref_*/ fixtures")
[ $run_verify = 0 ] && fixtures=()
field() {  # field PHRASE FILE: the first word after PHRASE on its line
  grep -m1 -E "^$1" "$2" | sed -E "s/^$1[: ]*//" | awk '{print $1}'
}
# record FIXTURE LABEL EXIT: the verdict of the verify output in $work/v, into verify.tsv
record() {
  local last verdict=FAIL
  last=$(grep -v '^[[:space:]]*$' "$work/v" | tail -n1)
  [ "$3" = 0 ] && [[ $last == PASS* ]] && verdict=PASS
  # a geometry the CUDA engine refuses by design (session creation, exit 2): reported, not failed
  [ "$3" = 2 ] && grep -q 'is not supported on the GPU yet' "$work/v" && verdict=UNSUPPORTED
  [ $verdict = FAIL ] && failed+=("verify $1 $2")
  # a top-1 that differs where the reference's own margin is within twice the logits' max abs
  # error (swin verify says "a near-tie"): named, with that margin; the verdict stays
  local ties
  ties=$(sed -nE 's/^ *sample ([0-9]+): .* is ([0-9.e+-]+) above .*a near-tie\)$/sample \1 margin \2/p' "$work/v" |
    paste -sd, -)
  [ -n "$ties" ] && last="$last; near-tie: $ties"
  printf '%s|%s|%s|%s|%s|%s|%s\n' "$1" "$2" "$(field 'max abs error' "$work/v")" \
    "$(field 'relative error' "$work/v")" "$(field 'top-1( agreement)?' "$work/v")" \
    "$verdict" "${last:0:200}" >>"$work/verify.tsv"
}
# verify_start N FIXTURE MODEL_DIR REFERENCE DEVICE "LABEL|[VAR=VALUE...] FLAGS...": one swin verify
# (the environment settings first in the variant) in the background, its output, exit status and
# description into $work/runs/N.*; verify_collect N then logs it into verify.log and records its
# verdict. The fixtures' verifies run GPU_CHECK_VERIFY_JOBS at a time (default 4): each is a short
# process on a tiny model (205 of them took 269 s one at a time on the H200, 1.3 s each, start-up,
# tuning and capture included); they are collected in order afterwards, so the logs and the table
# read as a sequential run.
mkdir -p "$work/runs"
verify_start() {
  local n=$1 fx=$2 md=$3 ref=$4 dev=$5 label=${6%%|*}
  local -a flags envs=()
  read -r -a flags <<<"${6#*|}"
  while [[ ${flags[0]} == *=* ]]; do envs+=("${flags[0]}"); flags=("${flags[@]:1}"); done
  printf '%s\n%s\n%s\n' "$fx" "$label" \
    "######## $fx $label: ${envs[*]:+${envs[*]} }swin verify --model $md --device $dev ${flags[*]}" >"$work/runs/$n.meta"
  if [ $build_ok = 1 ]; then
    ( rc=0
      env "${envs[@]}" timeout 300 "$build/swin" verify --model "$md" --reference "$ref" --device "$dev" \
        "${flags[@]}" >"$work/runs/$n.out" 2>&1 || rc=$?
      echo $rc >"$work/runs/$n.rc" ) &
  else
    echo "FAIL not run: the build failed" >"$work/runs/$n.out"
    echo 1 >"$work/runs/$n.rc"
  fi
}
verify_collect() {
  local n=$1 fx label head rc
  { read -r fx; read -r label; read -r head; } <"$work/runs/$n.meta"
  rc=$(cat "$work/runs/$n.rc" 2>/dev/null || echo 1)
  { echo "$head (exit $rc)"; cat "$work/runs/$n.out"; } >>"$out/verify.log"
  cp "$work/runs/$n.out" "$work/v"
  record "$fx" "$label" "$rc"
}
# verify_variant (the arguments of verify_start without N): one verify, waited for and recorded
verify_variant() {
  verify_start 0 "$@"
  wait
  verify_collect 0
}
nrun=0
for dir in "${fixtures[@]}"; do
  dir=${dir%/}
  for v in "${variants[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "${GPU_CHECK_VERIFY_JOBS:-4}" ]; do wait -n; done
    nrun=$((nrun + 1))
    verify_start $nrun "$(basename "$dir")" "$dir" "$dir/reference.safetensors" "$device" "$v"
  done
done
wait
for ((i = 1; i <= nrun; i++)); do verify_collect $i; done

# ---- 4b. full-size models: the fixtures are small (C 8 to 32, and 96 in the two _c96), so the
# kernels that take only Swin's own widths (the one-kernel MLP: C 96, 128, 192; the qkv projection
# in the attention kernel: C 96 to 512) need real shapes. Random-weight Swin-T,
# SwinV2-T and Swin-B 384 (C 128, 12x12 windows; tools/random_model.py) with a float64
# reference of 4 random inputs (tools/make_reference.py); needs python3 with torch and timm (the
# GPU machine has them). The 4 are the draws of 32 whose top-1 leads the runner-up by the most
# (--pick): random weights make near-ties (SwinV2-T's first 4 draws: margins 0.008, 0.003, 0.001
# and 0.014 of max|logit|, under bf16's error of about 0.008), whose top-1 at reduced precision is
# a coin toss; the 4 picked lead by 0.05 to 0.09.
full_variants=("fp16|--precision fp16" "bf16|--precision bf16" "tf32|--precision tf32"
               "fp16 mlp one kernel|SWIN_MLP_ONE_KERNEL=2 --precision fp16"
               "bf16 mlp one kernel|SWIN_MLP_ONE_KERNEL=2 --precision bf16"
               "fp16 qkv every width|SWIN_ATTN_QKV=2 --precision fp16"
               "fp16 gathered partition|SWIN_ATTN_GATHER=1 SWIN_ATTN_QKV=2 --precision fp16"
               "fp16 attention half one kernel|SWIN_ATTN_PROJ=2 SWIN_ATTN_QKV=2 --precision fp16"
               "fp16 fc2 post-norm epilogue|SWIN_FC2_POST_LN=1 --precision fp16"
               "bf16 fc2 post-norm epilogue|SWIN_FC2_POST_LN=1 --precision bf16"
               "fp8|--precision fp8"
               "fp8 linear layers on cuBLASLt|SWIN_GEMM_TMA_FP8=0 --precision fp8"
               "fp8 linear layers on the TMA kernel|SWIN_GEMM_TMA_FP8=1 SWIN_GEMM_TMA_MIN_TILES=0 --precision fp8")
if [ $dry = 0 ] && [ $run_verify = 1 ] && [ $build_ok = 1 ]; then
  step "full-size models"
  for arch in swin_tiny_patch4_window7_224 swinv2_tiny_window8_256 swin_base_patch4_window12_384; do
    fx=full_$arch md=$work/$arch
    if ! { python3 tools/random_model.py "$arch" "$md" &&
           python3 tools/make_reference.py "$md" --batch 4 --pick 32 -o "$md/ref.safetensors"; } >"$work/m" 2>&1; then
      cat "$work/m" >>"$out/verify.log"
      failed+=("full-size $arch: model or reference not made (python3 with torch and timm?)")
      echo "$fx|model|||||$(tail -n1 "$work/m")" >>"$work/verify.tsv"
      continue
    fi
    for v in "${full_variants[@]}"; do verify_variant "$fx" "$md" "$md/ref.safetensors" cuda "$v"; done
  done
fi

# ---- 5. compute-sanitizer
: >"$work/san.tsv"
# sanitize NAME TOOL CMD...: "NAME|exit|errors|summary line"
sanitize() {
  local name=$1 tool=$2
  shift 2
  local -a extra=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  echo "######## $name: compute-sanitizer --tool $tool ${extra[*]} $*" >>"$out/sanitizer.log"
  local rc=0
  timeout "${GPU_CHECK_SANITIZER_TIMEOUT:-150}" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 "$@" \
    >"$work/s" 2>&1 || rc=$?
  cat "$work/s" >>"$out/sanitizer.log"
  local summary n
  summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$work/s" | tail -n1 | sed 's/^=* *//')
  n=$(echo "$summary" | grep -oE '[0-9]+ (error|hazard)' | head -n1 | awk '{print $1}')
  [ -z "$summary" ] && summary="no summary line (exit $rc)"
  echo "$name|$rc|${n:-?}|$summary" >>"$work/san.tsv"
  [ $rc = 0 ] && [ "${n:-?}" = 0 ] || failed+=("$name")
}
if [ $dry = 0 ] && [ $build_ok = 1 ] && [ $run_san = 1 ]; then
  step "compute-sanitizer"
  fx=tests/data/ref_timm_v1_w7
  [ -d $fx ] || fx=${fixtures[0]%/}
  if [ -n "$fx" ] && [ $san_verify = 1 ]; then
    sanitize "memcheck: verify fp16 $(basename "$fx")" memcheck "$build/swin" verify \
      --model "$fx" --reference "$fx/reference.safetensors" --device cuda --precision fp16
    sanitize "memcheck: verify fp8 $(basename "$fx")" memcheck "$build/swin" verify \
      --model "$fx" --reference "$fx/reference.safetensors" --device cuda --precision fp8
  fi
  export SWIN_TEST_QUICK=1
  # the persistent TMA GEMM (kernels/sm90/gemm_tma.cu) on every shape the tests give it, not only
  # on outputs of 2 x SMs tiles as by default, and on the linear layers without GELU as well
  export SWIN_GEMM_TMA_MIN_TILES=0 SWIN_GEMM_TMA_LINEAR=1
  for t in $san_tests; do
    if [ -x "$build/tests/$t" ]; then
      # racecheck on the attention: the quick cases with one image and one head, fused kernels only
      # (SWIN_TEST_QUICK=2: racecheck reports hazards inside cuBLAS's own sm90 GEMMs, which the
      # unfused baseline runs; excluding them by name crashed the sanitizer)
      # (the same for test_gpu_gemm and test_gpu_mlp: SWIN_TEST_QUICK=2 runs only our kernels' cases)
      { [ $t = test_gpu_attention ] || [ $t = test_gpu_gemm ] || [ $t = test_gpu_mlp ]; } && SWIN_TEST_QUICK=2
      [ $t = test_gpu_pipeline ] || sanitize "racecheck: $t (quick)" racecheck "$build/tests/$t" "$root"
      SWIN_TEST_QUICK=1
      sanitize "memcheck: $t (quick)" memcheck "$build/tests/$t" "$root"
    else
      echo "no $t|-|?|not built" >>"$work/san.tsv"
      failed+=("$t not built")
    fi
  done
  unset SWIN_TEST_QUICK SWIN_GEMM_TMA_MIN_TILES SWIN_GEMM_TMA_LINEAR
fi

# ---- 6. summary, printed last
step "summary"
{
  echo
  echo "==== gpu_check summary ($( [ $dry = 1 ] && echo "CPU dry run" || echo GPU)) ===="
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1 |
      sed 's/^/GPU: /; s/, /, driver /'
  else
    echo "GPU: none (nvidia-smi not found)"
  fi
  echo "build ($build): $([ $build_ok = 1 ] && echo ok || echo FAILED)"
  echo
  printf '%-24s %-16s %-12s %-12s %-7s %s\n' fixture precision "max abs err" "rel err" top-1 result
  while IFS='|' read -r fx label mae rel top verdict last; do
    printf '%-24s %-16s %-12s %-12s %-7s %s\n' "$fx" "$label" "${mae:--}" "${rel:--}" \
      "${top:--}" "$( [ "$verdict" = UNSUPPORTED ] && echo "unsupported on GPU" || echo "$verdict")$(
        [ "$verdict" = FAIL ] && echo ": $last")"
  done <"$work/verify.tsv"
  [ $run_verify = 0 ] && echo "verify: not run (--no-verify)"
  nv=$(wc -l <"$work/verify.tsv")
  np=$(grep -c '|PASS|' "$work/verify.tsv")
  nu=$(grep -c '|UNSUPPORTED|' "$work/verify.tsv")
  echo "verify: $np of $nv PASS, $nu unsupported on GPU (geometry the CUDA engine refuses: README, GPU engine)"
  echo
  if [ -s "$work/ctest.tsv" ]; then
    while IFS='|' read -r name p f s t rc; do
      echo "$name: $p passed, $f failed, $s skipped, of $t (exit $rc)"
    done <"$work/ctest.tsv"
  else
    echo "ctest: not run"
  fi
  if [ -s "$work/san.tsv" ]; then
    while IFS='|' read -r name rc n summary; do
      echo "sanitizer $name: $n errors (exit $rc; $summary)"
    done <"$work/san.tsv"
    [ $san_verify = 0 ] && echo "sanitizers: only $san_tests (--sanitize; no verify memchecks)"
  else
    echo "sanitizers: not run$([ $dry = 1 ] && echo " (CPU dry run)")$([ $run_san = 0 ] && echo " (--no-sanitizers)")"
  fi
  echo
  if [ ${#failed[@]} = 0 ]; then
    echo "RESULT: PASS ($((SECONDS - T0))s)"
  else
    more=""
    [ ${#failed[@]} -gt 8 ] && more="; ... and $((${#failed[@]} - 8)) more"
    echo "RESULT: FAIL (${#failed[@]}): $(printf '%s; ' "${failed[@]:0:8}" | sed 's/; $//')$more"
  fi
} | tee "$out/summary.txt"
[ ${#failed[@]} = 0 ]
