#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan into build-fuzz/
# and run each one for SECONDS, one after the other; print per target the executions, the
# findings (crashes, leaks, timeouts, out-of-memory), the slowest input of its corpus, and a total.
#   tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default 60 s and every target
# Seeds: tests/data (configs, images) and tests/fuzz/make_seeds.c (tiny checkpoints, references),
# plus the regression cases of tests/data/fuzz/<target>/. The corpus grows in build-fuzz/corpus/
# across runs; findings land in build-fuzz/artifacts/<target>/ (crash-*, leak-*, timeout-*, oom-*):
# fix the library, copy the input to tests/data/fuzz/<target>/DESCRIPTION--STATUS (the status the
# fixed code returns; tests/test_fuzz_replay.c replays it in every test run) and run again.
# Limits per input: 1 s (-timeout), FUZZ_RSS_MB of memory (default 2048), FUZZ_MAX_LEN bytes
# (default 65536). Env: FUZZ_DIR (default build-fuzz), FUZZ_NICE (default 10).
# Exit: 0 when no target found anything, 1 otherwise, 2 when it cannot build.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift $(($# > 0 ? 1 : 0))
build=${FUZZ_DIR:-$root/build-fuzz}
rss=${FUZZ_RSS_MB:-2048}
max_len=${FUZZ_MAX_LEN:-65536}
prio=${FUZZ_NICE:-10}
case $secs in '' | *[!0-9]*) echo "usage: tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;; esac

# ---- build
cc=${CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "fuzz: $cc not found; on Debian: apt-get install clang libclang-rt-14-dev" >&2
  exit 2
fi
mkdir -p "$build" && CC=$cc cmake -S "$root" -B "$build" -DSWIN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/build.log" 2>&1 &&
  nice -n "$prio" cmake --build "$build" --target fuzz -j "$(nproc)" >>"$build/build.log" 2>&1 || {
  tail -n 30 "$build/build.log" >&2
  echo "fuzz: build failed (log: $build/build.log)" >&2
  exit 2
}
bin=$build/tests/fuzz
read -r -a all <"$bin/targets.txt"
IFS=';' read -r -a all <<<"${all[*]}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

# ---- seeds: generated ones, copies from tests/data, the regression cases
seeds=$build/seeds
rm -rf "$seeds"
"$bin/fuzz_make_seeds" "$seeds" >"$build/seeds.log" 2>&1 || { cat "$build/seeds.log" >&2; exit 2; }
copy() {   # copy TARGET FILES...: the files up to 16 KiB
  local t=$1
  shift
  mkdir -p "$seeds/$t"
  for f in "$@"; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 16384 ] && cp "$f" "$seeds/$t/$(basename "$(dirname "$f")")_$(basename "$f")"
  done
}
d=$root/tests/data
shopt -s nullglob
copy config_timm "$root"/weights/digits/config.json "$d"/ref_timm_*/config.json
copy config_hf "$d"/ref_hf_*/config.json
copy preprocessor_config "$d"/ref_hf_*/preprocessor_config.json
copy jpeg "$d"/jpeg/*.jpg "$d"/preprocess/*.jpg
copy jpeg_entropy "$d"/jpeg/*.jpg
copy image "$d"/preprocess/*.png "$d"/preprocess/*.bmp "$d"/preprocess/*.gif "$d"/preprocess/*.ppm \
  "$d"/preprocess/*.tga "$d"/digits/00[0-4]*.png
for t in "${all[@]}"; do
  mkdir -p "$seeds/$t"
  for f in "$d"/fuzz/"$t"/*; do cp "$f" "$seeds/$t/regression_$(basename "$f")"; done
done

# ---- run
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
total=0 found=0
rows=()
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { echo "fuzz: no target '$t' (targets: ${all[*]})" >&2; exit 2; }
  corpus=$build/corpus/$t art=$build/artifacts/$t log=$build/logs/$t.log
  mkdir -p "$corpus" "$art" "$build/logs"
  echo "fuzz: $t for $secs s ..." >&2
  start=$(date +%s)
  nice -n "$prio" "$bin/fuzz_$t" -max_total_time="$secs" -timeout=1 -rss_limit_mb="$rss" -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$art/" "$corpus" "$seeds/$t" >"$log" 2>&1
  rc=$?
  wall=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
  execs=${execs:-0}
  crash=0 leak=0 timeout=0 oom=0
  grep -q 'ERROR: LeakSanitizer' "$log" && leak=1
  grep -q 'ERROR: libFuzzer: timeout' "$log" && timeout=1
  grep -q 'ERROR: libFuzzer: out-of-memory' "$log" && oom=1
  if [ $rc -ne 0 ] && [ $leak$timeout$oom = 000 ]; then crash=1; fi
  # the slowest input of the corpus: each one run once, timed by libFuzzer ("Executed F in N ms")
  slow=$(find "$corpus" "$seeds/$t" -type f -print0 |
    xargs -0 -r -n 500 nice -n "$prio" "$bin/fuzz_$t" -rss_limit_mb="$rss" 2>&1 |
    sed -n 's/^Executed \(.*\) in \([0-9]*\) ms$/\2 \1/p' | sort -n | tail -n 1)
  units=$(find "$corpus" -type f | wc -l)
  total=$((total + execs))
  n=$((crash + leak + timeout + oom))
  found=$((found + n))
  rows+=("$(printf '%-20s %12s %7s %6s %5s %7s %4s %7s %7s  %s' "$t" "$execs" "$wall" "$crash" "$leak" "$timeout" \
    "$oom" "${slow%% *}" "$units" "$(basename "${slow#* }")")")
  if [ $n -gt 0 ]; then
    echo "fuzz: $t found something (log: $log):" >&2
    grep -E 'ERROR:|SUMMARY:|runtime error|Test unit written' "$log" | head -n 8 >&2
  fi
done

printf '%-20s %12s %7s %6s %5s %7s %4s %7s %7s  %s\n' target executions wall_s crash leak timeout oom ms corpus \
  "slowest corpus input"
for r in "${rows[@]}"; do echo "$r"; done
printf '%-20s %12s\n' total "$total"
echo "limits: -timeout=1 -rss_limit_mb=$rss -max_len=$max_len; logs in $build/logs, findings in $build/artifacts"
[ $found -eq 0 ]
