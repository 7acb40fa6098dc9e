#!/usr/bin/env bash
# bench_pipeline.sh - the end-to-end `swin classify` benchmark as ONE command on a GPU machine:
# JPEG files in, classes out, swin (exact, CPU preprocessing, nvJPEG) against a PyTorch
# DataLoader + torch.compile pipeline, plus nvJPEG's own ceiling on the same files
# (tools/nvjpeg_ceiling), preprocessing parity, a one-thread preprocessing comparison and top-1
# agreement. tools/bench_pipeline.py does the work (see its docstring for
# the steps), tools/pipeline_table.py writes the markdown.
#
#   bash tools/bench_pipeline.sh PHOTO_DIR OUTDIR [--swin BUILD/swin] [--count 10000] [--quick]
#                                [--time-limit 330] [--nvjpeg-ceiling BUILD/nvjpeg_ceiling]
#
# PHOTO_DIR: a folder of JPEG photos (e.g. some ImageNet validation photos); they are copied
# round-robin into a temporary folder (deleted at the end) until there are --count files.
# The swin binary must already be built (default build/swin); set LD_LIBRARY_PATH for its
# libraries. nvjpeg_ceiling (default: next to the swin binary) is built with it when CMake finds
# nvJPEG; without it that step is recorded as an error and the rest runs. Needs python3 with
# torch, timm, transformers, Pillow, safetensors and numpy; no network. About 3-4 minutes for
# 10,000 files on an H200 (torch.compile takes about a minute); steps not started within
# --time-limit seconds are skipped and reported as such.
# Files in OUTDIR: pipeline.json (all numbers), pipeline.md (the section for
# docs/PERFORMANCE.md), pipeline.log. Put the section into the docs with
#   python3 tools/pipeline_table.py --update docs/PERFORMANCE.md OUTDIR/pipeline.json
# Exit status: 0 when the swin exact run worked (other failures are in the JSON and the table),
# 1 when it failed, 2 for bad arguments.
set -uo pipefail

usage() { sed -n '2,/^# 1 when/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
photos='' out='' swin=$root/build/swin count=10000 quick='' limit=330 ceiling=''
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --swin) swin=${2:?--swin needs a path}; shift 2 ;;
    --count) count=${2:?--count needs a number}; shift 2 ;;
    --time-limit) limit=${2:?--time-limit needs seconds}; shift 2 ;;
    --nvjpeg-ceiling) ceiling=${2:?--nvjpeg-ceiling needs a path}; shift 2 ;;
    --quick) quick=--quick; shift ;;
    -*) echo "bench_pipeline.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) if [ -z "$photos" ]; then photos=$1; elif [ -z "$out" ]; then out=$1; else
         echo "bench_pipeline.sh: one PHOTO_DIR and one OUTDIR, got '$1' too" >&2; exit 2; fi
       shift ;;
  esac
done
if [ -z "$photos" ] || [ -z "$out" ]; then
  echo "usage: bash tools/bench_pipeline.sh PHOTO_DIR OUTDIR [--swin PATH] [--count N]" \
       "[--quick] [--time-limit S] [--nvjpeg-ceiling PATH]" >&2
  exit 2
fi
case $count in ''|*[!0-9]*) echo "bench_pipeline.sh: bad --count '$count'" >&2; exit 2 ;; esac
[ -d "$photos" ] || { echo "bench_pipeline.sh: $photos: not a folder" >&2; exit 2; }
[ -x "$swin" ] || echo "bench_pipeline.sh: warning: $swin is not executable; the swin steps" \
  "will fail (pass --swin PATH)" >&2
# nvJPEG's own ceiling on the same files: tools/nvjpeg_ceiling, run by bench_pipeline.py
ceiling=${ceiling:-$(dirname "$swin")/nvjpeg_ceiling}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
rm -f "$out/pipeline.json" "$out/pipeline.md" "$out/pipeline.log"

cmdline="tools/bench_pipeline.sh PHOTO_DIR OUTDIR"
cmdline+=" --swin $(basename "$(dirname "$swin")")/$(basename "$swin")"
cmdline+=" --count $count${quick:+ --quick}"
{
  echo "bench_pipeline.sh: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); photos $photos; swin $swin;" \
       "count $count${quick:+; quick}; time limit ${limit}s"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
} 2>&1 | tee -a "$out/pipeline.log"

python3 "$root/tools/bench_pipeline.py" --photos "$photos" --out "$out" --swin "$swin" \
  --nvjpeg-ceiling "$ceiling" --count "$count" --time-limit "$limit" $quick --command "$cmdline" 2>&1 |
  tee -a "$out/pipeline.log"
rc=${PIPESTATUS[0]}

if [ -s "$out/pipeline.json" ]; then
  python3 "$root/tools/pipeline_table.py" -o "$out/pipeline.md" "$out/pipeline.json" 2>&1 |
    tee -a "$out/pipeline.log"
  [ "${PIPESTATUS[0]}" = 0 ] || echo "bench_pipeline.sh: pipeline_table.py failed" |
    tee -a "$out/pipeline.log"
  [ -s "$out/pipeline.md" ] && { echo; cat "$out/pipeline.md"; }
else
  echo "bench_pipeline.sh: no pipeline.json was written" | tee -a "$out/pipeline.log"
  [ "$rc" = 0 ] && rc=1
fi
echo "bench_pipeline.sh: exit $rc; results in $out (pipeline.json, pipeline.md, pipeline.log)"
exit "$rc"
