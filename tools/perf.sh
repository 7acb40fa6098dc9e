#!/usr/bin/env bash
# perf.sh - the whole performance comparison as ONE command on a GPU machine: build swin, run
# `swin bench --json` and tools/bench_torch.py (timm eager and torch.compile) over the same grid,
# then tools/perf_table.py writes OUTDIR/PERFORMANCE.md. Copy that file to docs/; never edit it.
# The end-to-end section of docs/PERFORMANCE.md (tools/bench_pipeline.sh, a run of its own) is
# carried over into it unchanged.
#
#   bash tools/perf.sh [OUTDIR]        (default OUTDIR: $OUT when set, else perf-out)
#
# Run from anywhere; it works in the repository root. Where cJSON / stb are not installed, the
# Debian packages in .debs/ are unpacked into a temporary prefix (see shared DEVICE notes).
# Phases, each timed: deps; build (build-perf/) while torch.compile precompiles in the
# background; swin bench; timm eager; torch.compile (cache hits, one configuration at a time);
# table. No two timed phases overlap, and nothing else runs while one is timed.
#
# Environment (defaults in brackets):
#   PERF_ARCHS               [swin_tiny_patch4_window7_224 swinv2_tiny_window8_256]
#   PERF_PRECISIONS          [fp16 tf32 fp32]; fp8 runs swin only (PyTorch has no FP8 Swin: its
#                            rows are compared with fp16 in their own section), with --breakdown
#   PERF_COMPILE_PRECISIONS  torch.compile precisions [= PERF_PRECISIONS without fp8]
#   PERF_BATCHES             [1,8,64,256]
#   PERF_ITERS               timed iterations, both tools [50]
#   PERF_COMPILE_JOBS        parallel torch.compile subprocesses [8]
#   PERF_PRECOMPILE_S        seconds the precompile phase may take [200]
#   PERF_DEADLINE_S          seconds for the whole script; later configurations are skipped and
#                            reported as such, never silently dropped [540]
#   PERF_TORCH               0 to skip PyTorch [1]
#   PERF_CUDA_ARCH           CMAKE_CUDA_ARCHITECTURES [90]
#   PERF_MERGE               OUTDIRs of earlier perf.sh runs (space-separated, relative to the
#                            repository root like OUTDIR; their JSON files
#                            carried along) whose rows join this run's table, e.g. a grid too long
#                            for one command split by PERF_ARCHS: part 1 to DIR1, then part 2 with
#                            PERF_MERGE=DIR1. Each run is listed with its date, GPU and command;
#                            where two runs measured the same row, this run's wins. []
#   PERF_TABLE_ONLY          1: measure nothing, only write OUTDIR/PERFORMANCE.md from the
#                            PERF_MERGE runs (no GPU needed) [0]
# Files in OUTDIR (8, within what a device run returns): swin.jsonl, torch_eager.json,
# torch_compile.json, perf_run.json (this run: date, GPU, host, command), PERFORMANCE.md, perf.log,
# build.log, torch_precompile.log.
# Exit status: 0 when every phase ran, 1 when any failed (the table is still written).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
out=${1:-${OUT:-perf-out}}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)

ARCHS=${PERF_ARCHS:-swin_tiny_patch4_window7_224 swinv2_tiny_window8_256}
PRECS=${PERF_PRECISIONS:-fp16 tf32 fp32}
TPRECS=$(echo "$PRECS" | tr ' ' '\n' | grep -vx fp8 | tr '\n' ' ' | sed 's/ *$//')   # what PyTorch runs
CPRECS=${PERF_COMPILE_PRECISIONS:-$TPRECS}
BATCHES=${PERF_BATCHES:-1,8,64,256}
ITERS=${PERF_ITERS:-50}
JOBS=${PERF_COMPILE_JOBS:-8}
PRECOMPILE_S=${PERF_PRECOMPILE_S:-200}
DEADLINE=${PERF_DEADLINE_S:-540}
TORCH=${PERF_TORCH:-1}
CUDA_ARCH=${PERF_CUDA_ARCH:-90}
MERGE=${PERF_MERGE:-}
TABLE_ONLY=${PERF_TABLE_ONLY:-0}
build="build-perf"
csv() { echo "$*" | tr -s ' ,' ',' | sed 's/^,//; s/,$//'; }

work=$(mktemp -d)
bg_pid=
tee_pid=
cleanup() {
  [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
  rm -rf "$work"
  if [ -n "$tee_pid" ]; then  # let tee write the last lines before the script ends
    exec >&- 2>&-
    wait "$tee_pid" 2>/dev/null
  fi
}
trap cleanup EXIT
merge_abs=()
for m in $MERGE; do   # before anything is written: OUTDIR may not be one of them
  [ -d "$m" ] || { echo "perf.sh: PERF_MERGE: '$m' is not a folder" >&2; exit 2; }
  m=$(cd "$m" && pwd)
  [ "$m" != "$out" ] || { echo "perf.sh: PERF_MERGE names OUTDIR itself ('$m')" >&2; exit 2; }
  [ -s "$m/perf_run.json" ] || { echo "perf.sh: PERF_MERGE: '$m' holds no perf_run.json (not a perf.sh OUTDIR)" >&2; exit 2; }
  merge_abs+=("$m")
done
rm -f "$out"/swin.jsonl "$out"/torch_eager.json "$out"/torch_compile.json "$out"/PERFORMANCE.md \
      "$out"/perf.log "$out"/build.log "$out"/torch_precompile.log "$out"/perf_run.json
run_date=$(date -u '+%Y-%m-%d %H:%M UTC')
exec > >(tee -a "$out/perf.log") 2>&1
tee_pid=$!

T0=$SECONDS
failed=()
phase_t=$SECONDS
phase() {  # phase NAME: ends the previous phase (printing its duration) and starts NAME
  [ -n "${phase_name:-}" ] && printf '== %-22s %4ds  (total %4ds)\n' "$phase_name" \
    $((SECONDS - phase_t)) $((SECONDS - T0))
  phase_name=$1
  phase_t=$SECONDS
  [ -n "$phase_name" ] && echo "== $phase_name ..."
}
left() { echo $((DEADLINE - (SECONDS - T0))); }
limit() { local t=$(($(left) - $1)); [ $t -lt 1 ] && t=1; echo $t; }  # seconds left, less a reserve

# write_run: this run's perf_run.json (date, GPU, host, command, the phases that failed so far)
write_run() {
  local cmdline gpu_name host ngpu
  cmdline="PERF_ARCHS='$ARCHS' PERF_PRECISIONS='$PRECS' PERF_COMPILE_PRECISIONS='$CPRECS'"
  cmdline+=" PERF_BATCHES=$BATCHES PERF_ITERS=$ITERS"
  [ "$TORCH" = 1 ] || cmdline+=" PERF_TORCH=$TORCH"
  cmdline+=" bash tools/perf.sh OUTDIR"
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  # the machine around the GPU: its CPUs (launch-bound rows depend on them), how many GPUs it
  # has and which ones this run saw
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  host="$(nproc) CPUs, $ngpu GPU"
  [ "$ngpu" = 1 ] || host+="s"
  [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && host+=", CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
  python3 -c 'import json, sys; print(json.dumps({"tool": "perf", "date": sys.argv[1], "gpu": sys.argv[2] or "unknown",
                                              "host": sys.argv[3], "command": sys.argv[4], "failed": sys.argv[5:]}))' \
    "$run_date" "$gpu_name" "$host" "$cmdline" "${failed[@]}" >"$out/perf_run.json" || failed+=("perf_run.json")
}

# make_table: PERFORMANCE.md from the PERF_MERGE runs and this one (what OUTDIR holds)
make_table() {
  inputs=()
  for d in "${merge_abs[@]}" "$out"; do   # earlier runs first: this run's rows win
    for f in perf_run.json swin.jsonl torch_eager.json torch_compile.json; do
      [ -s "$d/$f" ] && inputs+=("$d/$f")
    done
  done
  if [ ${#inputs[@]} -gt 0 ]; then
    python3 tools/perf_table.py -o "$out/PERFORMANCE.md" "${inputs[@]}" || failed+=("perf_table")
    # the end-to-end section (tools/bench_pipeline.sh, its own run, which names its GPU and date)
    # is carried over from docs/PERFORMANCE.md rather than dropped
    if [ -s "$out/PERFORMANCE.md" ] && grep -q '<!-- pipeline:begin' docs/PERFORMANCE.md 2>/dev/null; then
      { echo; sed -n '/<!-- pipeline:begin/,/<!-- pipeline:end -->/p' docs/PERFORMANCE.md; } >>"$out/PERFORMANCE.md"
    fi
  else
    failed+=("perf_table (no inputs)")
  fi
}

if [ "$TABLE_ONLY" = 1 ]; then   # nothing measured: the table of the PERF_MERGE runs
  [ ${#merge_abs[@]} -gt 0 ] || { echo "perf.sh: PERF_TABLE_ONLY=1 needs PERF_MERGE" >&2; exit 2; }
  phase table
  make_table
  phase ""
  [ ${#failed[@]} -eq 0 ] || { printf 'perf.sh: FAILED: %s\n' "${failed[@]}"; exit 1; }
  echo "perf.sh: table of ${#merge_abs[@]} runs in OUTDIR/PERFORMANCE.md"
  exit 0
fi

echo "perf.sh: archs [$ARCHS] precisions [$PRECS] compile precisions [$CPRECS] batches" \
     "[$BATCHES] iters $ITERS, deadline ${DEADLINE}s"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

# ---- deps: cJSON and stb from .debs/ when the system lacks them
phase deps
prefix=
if [ ! -f /usr/include/cjson/cJSON.h ] || [ ! -f /usr/include/stb/stb_image.h ]; then
  if ls .debs/*.deb >/dev/null 2>&1; then   # beside the build, not in $work: the CMake cache keeps the path
    mkdir -p "$build/deps"
    for f in .debs/*.deb; do dpkg -x "$f" "$build/deps" || failed+=("unpack $f"); done
    prefix=$root/$build/deps/usr
  else
    echo "perf.sh: cJSON/stb not installed and no .debs/ folder: the build will fail"
  fi
fi

# ---- build, with torch.compile precompiling beside it (nothing is timed in this phase)
phase "build + precompile"
if [ "$TORCH" = 1 ] && [ -n "$(csv "$CPRECS")" ]; then
  python3 tools/bench_torch.py --arch "$(csv "$ARCHS")" --precision "$(csv "$CPRECS")" \
    --batch "$BATCHES" --mode compile --precompile-jobs "$JOBS" --precompile-only \
    --cache-dir "$work/inductor" --time-limit "$PRECOMPILE_S" --json "$work/precompile.json" \
    >"$out/torch_precompile.log" 2>&1 &
  bg_pid=$!
fi
build_ok=1
{ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
    ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} &&
  cmake --build "$build" -j "$(nproc)" --target swin; } >"$out/build.log" 2>&1 || build_ok=0
if [ $build_ok = 1 ] && [ -x "$build/swin" ]; then
  echo "build: ok ($((SECONDS - phase_t))s)"
else
  build_ok=0
  failed+=("build")
  echo "build: FAILED; the end of build.log:"
  tail -n 30 "$out/build.log"
fi
if [ -n "$bg_pid" ]; then
  wait "$bg_pid" || echo "precompile: exit $? (see torch_precompile.log)"
  bg_pid=
  grep -E "precompile (done|FAILED|stopped)|precompile phase" "$out/torch_precompile.log" | tail -n 40
fi

# ---- swin bench
phase "swin bench"
# swin_bench ARCH PRECISION BATCHES [FLAGS...]: appends one JSON line to swin.jsonl, with the
# command, or an error record when the run failed or was skipped
swin_bench() {
  local arch=$1 prec=$2 batches=$3
  shift 3
  local -a argv=("$build/swin" bench --arch "$arch" --precision "$prec" --batch "$batches"
                 --iters "$ITERS" --json "$@")
  local cmd="${argv[*]}"
  local rc=0 lim
  lim=$(left)
  if [ $build_ok = 0 ]; then
    rc=skip; echo "build failed" >"$work/err"
  elif [ "$lim" -le 10 ]; then
    rc=skip; echo "skipped: PERF_DEADLINE_S=$DEADLINE reached" >"$work/err"
  else
    echo "\$ $cmd"
    timeout "$lim" "${argv[@]}" >"$work/json" 2>"$work/err" || rc=$?
    cat "$work/err"
  fi
  python3 - "$cmd" "$rc" "$arch" "$prec" "$work/json" "$work/err" >>"$out/swin.jsonl" <<'EOF'
import json, sys
cmd, rc, arch, prec, jpath, epath = sys.argv[1:]
doc = None
if rc == "0":
    try:
        doc = json.loads(open(jpath).read())
    except (OSError, ValueError) as e:
        rc = f"0 but no JSON ({e})"
if not isinstance(doc, dict):
    err = [l for l in open(epath).read().splitlines() if l.strip()]
    why = err[-1] if err else "no message"
    doc = {"tool": "swin", "arch": arch, "precision": prec,
           "error": why if rc == "skip" else f"exit {rc}: {why}"}
doc["command"] = cmd
print(json.dumps(doc))
EOF
  rm -f "$work/json"
  [ "$rc" = 0 ] || failed+=("swin bench $arch $prec")
}
for arch in $ARCHS; do
  for prec in $PRECS; do
    if [ "$prec" = fp16 ] || [ "$prec" = fp8 ]; then  # the breakdown: per op class, stage and op
      swin_bench "$arch" "$prec" "$BATCHES" --breakdown
    else
      swin_bench "$arch" "$prec" "$BATCHES"
    fi
  done
done

# ---- PyTorch: eager, then torch.compile from the warm caches
if [ "$TORCH" = 1 ]; then
  phase "timm eager"
  python3 tools/bench_torch.py --arch "$(csv "$ARCHS")" --precision "$(csv "$TPRECS")" \
    --batch "$BATCHES" --mode eager --iters "$ITERS" --time-limit "$(limit 20)" \
    --json "$out/torch_eager.json" || failed+=("timm eager")
  if [ -n "$(csv "$CPRECS")" ]; then
    phase "torch.compile"
    pre=()
    [ -f "$work/precompile.json" ] && pre=(--precompiled "$work/precompile.json")
    python3 tools/bench_torch.py --arch "$(csv "$ARCHS")" --precision "$(csv "$CPRECS")" \
      --batch "$BATCHES" --mode compile --iters "$ITERS" --cache-dir "$work/inductor" "${pre[@]}" \
      --time-limit "$(limit 15)" --json "$out/torch_compile.json" || failed+=("torch.compile")
  fi
fi

# ---- the table
phase table
write_run
make_table
phase ""

if [ -f "$out/PERFORMANCE.md" ]; then
  echo
  sed -n '/^## Goals/,/goals met/p' "$out/PERFORMANCE.md"
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'perf.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "perf.sh: done in $((SECONDS - T0))s; results in OUTDIR/PERFORMANCE.md"
