#!/usr/bin/env bash
# cli_mpi.sh - `mpirun -np N swin classify` on the CPU with the bundled digits model: the output of
# 2 and 3 ranks must be the output of one process, byte for byte.
#   - a list of 26 entries (not a multiple of 3; 13 batches of 2) with a truncated PNG, an
#     empty file and a missing file, one in each rank's block: --out (text), --json --out and
#     stdout all `cmp` equal to one process's, every bad file in its place (its JSON error object
#     at its line, its message on stderr once and in input order), exit status 1 as one process
#     gives; all good files: exit 0; more ranks than batches;
#   - the summary line once, from rank 0, counting every rank's images;
#   - a usage error: exit 2, said once (not by every rank);
#   - a rank that dies (killed while it waits on a FIFO it reads as an image): mpirun ends the job
#     with a non-zero status, nothing hangs, and the --out file holds exactly the results of rank
#     0's block (whole lines, a prefix of one process's output).
# Skips (77) when swin was built without MPI (after checking that such a build refuses to run as
# one of several processes) or mpirun is missing.
# Open MPI settings: --oversubscribe (more ranks than cores), root allowed (CI runs as root), and
# no single-copy (CMA) transfers between ranks, which containers without ptrace rights refuse.
# In the ASan build the ranks run with tests/lsan_mpi.supp (Open MPI's allocations at exit).
#   usage: cli_mpi.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
export LC_ALL=C
source "$src/tests/clilib.sh"
need_digits cli_mpi
shopt -s nullglob
pngs=("$digits"/*.png)
[ ${#pngs[@]} -ge 23 ] || { echo "cli_mpi: fewer than 23 PNGs in $digits"; exit 1; }

if ! "$swin" --version | grep -q "MPI on"; then
  # a build without MPI must not run once per rank (each would classify every image)
  OMPI_COMM_WORLD_SIZE=3 "$swin" classify -m "$model" "${pngs[0]}" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q "one of 3 processes, but this swin was built without MPI" "$tmp/err"; then
    echo "FAIL a build without MPI started as one of 3 processes: rc $rc, expected 2 and a message"
    cat "$tmp/err"
    exit 1
  fi
  echo "ok   a build without MPI refuses to run as one of 3 processes (exit 2)"
  echo "cli_mpi: swin was built without MPI (apt-get install libopenmpi-dev openmpi-bin, reconfigure), skipped"
  exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "cli_mpi: mpirun not found (apt-get install openmpi-bin), skipped"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# the ASan build (ignored otherwise): Open MPI's own allocations are not swin's leaks
mpi_lsan=suppressions=$src/tests/lsan_mpi.supp:fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}
mpi() { # mpi NP swin-args...: runs mpirun with a time limit; stdout $tmp/out, stderr $tmp/err, status $rc
  local np=$1
  shift
  LSAN_OPTIONS=$mpi_lsan timeout 300 mpirun --oversubscribe -np "$np" "$swin" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
one() { "$swin" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# ---- the list: 26 entries, batch 2 -> 13 batches: 3 ranks take 4, 4 and 5 of them (inputs 0-7,
# 8-15, 16-25), 2 ranks 6 and 7 (0-11, 12-25); a bad file in each block of 3
head -c 60 "${pngs[0]}" >"$tmp/truncated.png"
: >"$tmp/empty.png"
list=$tmp/list.txt
: >"$list"
g=0
for i in $(seq 0 25); do
  case $i in
    3) echo "$tmp/truncated.png" ;;
    10) echo "$tmp/empty.png" ;;
    21) echo "$tmp/missing.png" ;;
    *) echo "${pngs[$g]}"; g=$((g + 1)) ;;
  esac
done >"$list"
bad_files=("$tmp/truncated.png" "$tmp/empty.png" "$tmp/missing.png")
bad_lines=(4 11 22)

one classify -m "$model" --batch 2 --list "$list" --out "$tmp/one.txt"
rc_one=$rc
grep "^swin classify: $tmp/" "$tmp/err" >"$tmp/one.msgs"
one classify -m "$model" --batch 2 --json --list "$list" --out "$tmp/one.jsonl"
one classify -m "$model" --batch 2 --list "$list"
cp "$tmp/out" "$tmp/one.stdout"
if [ $rc_one -eq 1 ] && [ "$(wc -l <"$tmp/one.txt")" -eq 23 ] && [ "$(wc -l <"$tmp/one.jsonl")" -eq 26 ] &&
  [ "$(wc -l <"$tmp/one.msgs")" -eq 3 ] && cmp -s "$tmp/one.txt" "$tmp/one.stdout"; then
  ok "one process: 23 results, 3 bad files, exit 1"
else bad "one process (rc $rc_one)"; fi

# check_bad FILE: each bad file's JSON error object on its line
check_bad() {
  local k line
  for k in 0 1 2; do
    line=$(sed -n "${bad_lines[$k]}p" "$1")
    case $line in
      "{\"file\":\"${bad_files[$k]}\",\"error\":\"${bad_files[$k]}: "*) ;;
      *) echo "    line ${bad_lines[$k]}: $line"; return 1 ;;
    esac
  done
}
check_bad "$tmp/one.jsonl" && ok "one process: each bad file's error object on its line" || bad "one process --json"

for np in 2 3; do
  mpi $np classify -m "$model" --batch 2 --list "$list" --out "$tmp/mpi.txt"
  grep "^swin classify: $tmp/" "$tmp/err" >"$tmp/mpi.msgs"
  if [ $rc -eq 1 ] && cmp -s "$tmp/mpi.txt" "$tmp/one.txt" && [ ! -s "$tmp/out" ] && cmp -s "$tmp/mpi.msgs" "$tmp/one.msgs" &&
    [ "$(grep -c "^swin classify: 26 images, 3 failed, [0-9.]* s, [0-9.]* img/s, $np ranks$" "$tmp/err")" -eq 1 ] &&
    [ "$(grep -c "images, " "$tmp/err")" -eq 1 ]; then
    ok "-np $np --out: identical to one process; bad files on stderr once, in order; one summary; exit 1"
  else bad "-np $np --out (rc $rc)"; cmp "$tmp/mpi.txt" "$tmp/one.txt"; fi
  mpi $np classify -m "$model" --batch 2 --json --list "$list" --out "$tmp/mpi.jsonl"
  if [ $rc -eq 1 ] && cmp -s "$tmp/mpi.jsonl" "$tmp/one.jsonl" && check_bad "$tmp/mpi.jsonl"; then
    ok "-np $np --json --out: identical, each error object on its line"
  else bad "-np $np --json (rc $rc)"; fi
  mpi $np classify -m "$model" --batch 2 --list "$list"
  if [ $rc -eq 1 ] && cmp -s "$tmp/out" "$tmp/one.stdout"; then ok "-np $np to stdout: identical"
  else bad "-np $np stdout (rc $rc)"; fi
done

# all good: exit 0 (23 files, 12 batches of 2); and more ranks than batches
grep -v "^$tmp/" "$list" >"$tmp/good.txt"
one classify -m "$model" --batch 2 --list "$tmp/good.txt"
cp "$tmp/out" "$tmp/good.one"
mpi 3 classify -m "$model" --batch 2 --list "$tmp/good.txt"
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/good.one" && [ "$(wc -l <"$tmp/out")" -eq 23 ]; then
  ok "-np 3, every file good: identical, exit 0"
else bad "-np 3 all good (rc $rc)"; fi
one classify -m "$model" "${pngs[@]:0:2}"
cp "$tmp/out" "$tmp/two.one"
mpi 3 classify -m "$model" "${pngs[@]:0:2}"
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/two.one" && grep -q "2 images, 0 failed" "$tmp/err"; then
  ok "-np 3 with one batch of 2 images: ranks without work, same output"
else bad "-np 3, 2 images (rc $rc)"; fi

# ---- a usage error: every rank finds it, rank 0 says it
mpi 3 classify -m "$model" --top 0 "${pngs[0]}"
if [ $rc -eq 2 ] && [ "$(grep -c "bad --top" "$tmp/err")" -eq 1 ]; then ok "-np 3 usage error: said once, exit 2"
else bad "-np 3 usage error (rc $rc)"; fi
mpi 2 classify -m "$tmp/no-model" "${pngs[0]}"
if [ $rc -eq 2 ] && [ "$(grep -c "$tmp/no-model" "$tmp/err")" -eq 1 ]; then ok "-np 2 missing model: said once, exit 2"
else bad "-np 2 missing model (rc $rc)"; fi

# ---- a rank dies: rank 1 blocks opening a FIFO in its block and is killed; rank 0 has written
# its block (inputs 0-11 of 26 with -np 2) and waits for rank 1's results
fifo=$tmp/stuck.png
mkfifo "$fifo"
sed "17s|.*|$fifo|" "$list" >"$tmp/dies.txt"
LSAN_OPTIONS=$mpi_lsan timeout 300 mpirun --oversubscribe -np 2 "$swin" classify -m "$model" --batch 2 --list "$tmp/dies.txt" \
  --out "$tmp/dies.out" >"$tmp/out" 2>"$tmp/err" &
job=$!
# descendants PID: the processes under PID (timeout -> mpirun -> the ranks)
descendants() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$c"; descendants "$c"; done
}
rank1=
for _ in $(seq 600); do   # up to 60 s for rank 0's 10 result lines (inputs 0-11 hold 2 bad files)
  if [ -z "$rank1" ]; then
    for p in $(descendants $job); do
      tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
    done
  fi
  [ -n "$rank1" ] && [ -f "$tmp/dies.out" ] && [ "$(wc -l <"$tmp/dies.out")" -ge 10 ] && break
  sleep 0.1
done
if [ -n "$rank1" ]; then kill -KILL "$rank1" 2>/dev/null; fi
wait $job
rc=$?
head -n 10 "$tmp/one.txt" >"$tmp/rank0.txt"
if [ -n "$rank1" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && cmp -s "$tmp/dies.out" "$tmp/rank0.txt"; then
  ok "rank 1 killed: mpirun exits $rc, --out holds rank 0's 10 results (a prefix of one process's output)"
else
  bad "rank 1 killed (rank 1 pid '${rank1}', rc $rc; 124 = hung)"
  diff "$tmp/dies.out" "$tmp/rank0.txt" | head -n 5
fi

finish cli_mpi
