#!/usr/bin/env bash
# soak.sh - classify many files with bad ones mixed in, and watch the process's memory.
#   tools/soak.sh [--files N] [--every K] [--swin PATH] [--dir DIR] [--keep] [--memory-report-only]
#                 [-- CLASSIFY_ARGS...]
# Makes N files (default 100000): copies of a set of 6 x K (default K 100: 600) files, good images
# (tests/data/digits PNGs, the JPEGs made by tools/export_jpeg.py in tests/data/jpeg and
# tests/data/preprocess, and the BMP/GIF/PPM/TGA/PNG of tests/data/preprocess) with a bad one every
# K-th file (1% by default): a truncated PNG, a truncated JPEG, an empty file, a text file, a PNG
# and a JPEG declaring 60000x60000 pixels. Runs `swin classify --json --list` over them (the embedded digits model on the CPU
# unless CLASSIFY_ARGS say otherwise), samples its VmRSS (/proc/PID/status) every second into
# rss.csv, and checks:
#   - exit status 1 (some files were bad), one JSON line per file, in input order;
#   - every good file classified, every bad file reported in its place with its reason
#     (truncated / empty file / not an image / too large);
#   - resident memory flat: after the warm-up (the first 10% of the samples, at least 3), no sample
#     more than 10% above the median of the rest, and the least-squares slope over them, times
#     their duration, under 5% of that median. Needs 20 samples or more (N large enough to run
#     20 s); with fewer, or with --memory-report-only (short runs, sanitizer builds whose allocator
#     quarantine grows by design), the memory is reported, not judged.
# Prints files, failures, wall time, images/s, and RSS at start / after warm-up / max / end with the
# slope. Exit 0 when every check passed, 1 otherwise, 2 on bad usage. The files live in DIR
# (default: a new directory under TMPDIR), removed at the end unless --keep. Builds build/ with
# tools/setup.sh when --swin is not given. tests/cli_soak.sh runs it on 240 files, K = 20.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
files=100000 every=100 swin= dir= keep=0 judge=1
while [ $# -gt 0 ]; do
  case $1 in
    --files) files=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --swin) swin=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --memory-report-only) judge=0; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case $files$every in *[!0-9]*) echo "soak: --files and --every need positive numbers" >&2; exit 2 ;; esac
[ "$files" -gt 0 ] && [ "$every" -gt 0 ] || { echo "soak: --files and --every need positive numbers" >&2; exit 2; }
if [ -z "$swin" ]; then
  "$root/tools/setup.sh" >/dev/null || exit 2
  swin=${BUILD_DIR:-$root/build}/swin
fi
[ -x "$swin" ] || { echo "soak: $swin is not an executable" >&2; exit 2; }
if [ -z "$dir" ]; then dir=$(mktemp -d "${TMPDIR:-/tmp}/swin_soak_XXXXXX") || exit 2; else mkdir -p "$dir" || exit 2; fi
[ $keep = 1 ] || trap 'rm -rf "$dir"' EXIT
d=$root/tests/data

# ---- the set of 6 x K: good files in order, a bad one at every K-th position
set=$dir/set
rm -rf "$set" && mkdir -p "$set"
shopt -s nullglob
good=("$d"/digits/*.png "$d"/jpeg/*.jpg "$d"/preprocess/*.jpg "$d"/preprocess/*.png "$d"/preprocess/*.bmp
  "$d"/preprocess/*.gif "$d"/preprocess/*.ppm "$d"/preprocess/*.tga)
[ ${#good[@]} -ge 100 ] || { echo "soak: too few images under $d" >&2; exit 2; }
size=$((6 * every))
bad_kinds=(truncated_png truncated_jpeg empty not_an_image huge_png huge_jpeg)
make_bad() {   # make_bad KIND FILE
  case $1 in
    truncated_png) head -c $(($(stat -c %s "$d/digits/0021_1.png") / 2)) "$d/digits/0021_1.png" >"$2" ;;
    truncated_jpeg) head -c $(($(stat -c %s "$d/jpeg/baseline_420_160x120.jpg") * 6 / 10)) "$d/jpeg/baseline_420_160x120.jpg" >"$2" ;;
    empty) : >"$2" ;;
    not_an_image) printf 'this is a text file, not an image\n' >"$2" ;;
    huge_png) # the PNG signature and an IHDR chunk (CRC included) claiming 60000x60000 RGB, nothing more
      printf '\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\xea\x60\x00\x00\xea\x60\x08\x02\x00\x00\x00\x0f\xb0\xe2\x15' >"$2" ;;
    huge_jpeg) # SOI and a baseline SOF0 of 60000x60000, 3 components, then zeros
      printf '\xff\xd8\xff\xc0\x00\x11\x08\xea\x60\xea\x60\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01' >"$2"
      head -c 4096 /dev/zero >>"$2" ;;
  esac
}
reason_of() {   # the words the message must hold for a kind
  case $1 in
    truncated_*) echo "truncated" ;;
    empty) echo "empty file" ;;
    not_an_image) echo "not an image" ;;
    huge_*) echo "60000x60000 pixels is too large" ;;
  esac
}
: >"$dir/set.txt"   # NAME KIND (KIND "good" or a bad kind), in set order
g=0 b=0
for ((i = 0; i < size; i++)); do
  if [ $((i % every)) = $((every - 1)) ]; then
    k=${bad_kinds[$b]}
    b=$((b + 1))
    name=$(printf '%04d_%s.%s' "$i" "$k" "$( [ "${k%jpeg}" != "$k" ] && echo jpg || echo png)")
    make_bad "$k" "$set/$name"
  else
    src=${good[$((g % ${#good[@]}))]}
    g=$((g + 1))
    name=$(printf '%04d_%s' "$i" "$(basename "$src")")
    cp "$src" "$set/$name"
    k=good
  fi
  echo "$name $k" >>"$dir/set.txt"
done

# ---- copies: whole sets copied at once, then the list of the first N paths
copies=$(((files + size - 1) / size))
for ((c = 0; c < copies; c++)); do cp -r "$set" "$dir/copy$c"; done
awk -v dir="$dir" -v n="$files" -v size="$size" '{ name[NR - 1] = $1; kind[NR - 1] = $2 }
  END { for (i = 0; i < n; i++) { c = int(i / size); print dir "/copy" c "/" name[i % size] > dir "/list.txt";
        print kind[i % size] > dir "/kinds.txt" } }' "$dir/set.txt"
nbad=$(grep -vc '^good$' "$dir/kinds.txt")
echo "soak: $files files ($nbad bad) in $dir, swin: $swin" >&2

# ---- run, sampling VmRSS every second
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
start=$(now)
"$swin" classify --json --list "$dir/list.txt" "$@" >"$dir/out.jsonl" 2>"$dir/err.txt" &
pid=$!
echo "seconds,vmrss_kib" >"$dir/rss.csv"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null)
  [ "${rss:-0}" -gt 0 ] && echo "$(elapsed "$start"),$rss" >>"$dir/rss.csv"
  sleep 1
done
wait "$pid"
rc=$?
wall=$(elapsed "$start")

# ---- checks
failed=0
check() {   # check OK TEXT
  if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}
check "$([ $rc = 1 ] && echo 1)" "exit status $rc (1: some files were bad)"
lines=$(wc -l <"$dir/out.jsonl")
check "$([ "$lines" = "$files" ] && echo 1)" "$lines JSON lines for $files files"
sed -n 's/^{"file":"\(.*\)","\(top\|error\)":.*/\1/p' "$dir/out.jsonl" >"$dir/order.txt"
check "$(cmp -s "$dir/order.txt" "$dir/list.txt" && echo 1)" "results in input order"
# per line: good -> "top", bad -> "error" holding the kind's reason
verdicts=$(paste -d '\t' "$dir/kinds.txt" "$dir/out.jsonl" | while IFS=$'\t' read -r kind line; do
  if [ "$kind" = good ]; then
    case $line in *'"top":[{"index":'*) echo classified ;; *) echo "good-failed" ;; esac
  else
    r=$(reason_of "$kind")
    case $line in *'"error":"'*"$r"*) echo reported ;; *) echo "bad-missed" ;; esac
  fi
done | sort | uniq -c)
classified=$(echo "$verdicts" | awk '$2 == "classified" { print $1 }')
reported=$(echo "$verdicts" | awk '$2 == "reported" { print $1 }')
check "$([ "${classified:-0}" = $((files - nbad)) ] && echo 1)" "${classified:-0} of $((files - nbad)) good files classified"
check "$([ "${reported:-0}" = "$nbad" ] && echo 1)" "${reported:-0} of $nbad bad files reported in place with their reason"
summary=$(tail -n 1 "$dir/err.txt")
errs=$(grep -c '^swin classify: .*: ' "$dir/err.txt")
check "$([ "$errs" = "$nbad" ] && echo 1)" "stderr: $errs lines naming a bad file and why"
check "$(echo "$summary" | grep -q "^swin classify: $files images, $nbad failed, " && echo 1)" "summary: $summary"

# RSS: start, after warm-up, max, end, slope (KiB per minute) by least squares after the warm-up
read -r n r0 rw rmax rend med slope drift < <(awk -F, 'NR > 1 { t[n] = $1; r[n] = $2; n++ }
  END {
    if (n == 0) { print 0, 0, 0, 0, 0, 0, 0, 0; exit }
    w = int(n / 10); if (w < 3) w = 3; if (w >= n) w = n - 1
    m = 0; for (i = w; i < n; i++) { s[m++] = r[i]; if (r[i] > mx) mx = r[i] }
    for (i = 0; i < m; i++) for (j = i + 1; j < m; j++) if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
    med = m % 2 ? s[(m - 1) / 2] : (s[m / 2 - 1] + s[m / 2]) / 2
    st = 0; sr = 0; for (i = w; i < n; i++) { st += t[i]; sr += r[i] }
    mt = st / m; mr = sr / m; num = 0; den = 0
    for (i = w; i < n; i++) { num += (t[i] - mt) * (r[i] - mr); den += (t[i] - mt) ^ 2 }
    slope = den > 0 ? num / den * 60 : 0   # KiB per minute; drift: over the samples after the warm-up
    printf "%d %d %d %d %d %d %.1f %.0f\n", n, r[0], r[w], mx, r[n - 1], med, slope, slope * (t[n - 1] - t[w]) / 60
  }' "$dir/rss.csv")
echo "files $files, failures $nbad expected / $(grep -c '"error":' "$dir/out.jsonl") reported, wall ${wall}s," \
  "$(awk -v n="$files" -v w="$wall" 'BEGIN { printf "%.0f", n / w }') files/s"
echo "VmRSS KiB: start $r0, after warm-up $rw, median $med, max $rmax, end $rend; slope $slope KiB/min" \
  "over $n samples (rss.csv)"
if [ $judge = 0 ]; then
  echo "note: --memory-report-only: memory reported, not judged"
elif [ "$n" -ge 20 ]; then
  check "$(awk -v mx="$rmax" -v med="$med" 'BEGIN { print ((mx <= med * 1.10) ? 1 : 0) }')" \
    "memory flat: max $rmax KiB within 10% of the post-warm-up median $med KiB"
  check "$(awk -v d="$drift" -v med="$med" 'BEGIN { print ((d < med * 0.05 && d > -med * 0.05) ? 1 : 0) }')" \
    "memory flat: the slope makes $drift KiB over the run after the warm-up, under 5% of the median"
else
  echo "note: $n RSS samples (fewer than 20): memory reported, not judged"
fi
[ $keep = 1 ] && echo "kept: $dir (list.txt, out.jsonl, err.txt, rss.csv)"
[ $failed -eq 0 ]
