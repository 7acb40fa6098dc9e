#!/usr/bin/env bash
# cli_ncu_profile.sh - tools/ncu_profile.py (one kernel launch's instructions by opcode under Nsight
# Compute) against a stand-in for ncu that writes a report file when asked to profile and answers
# --import with a made-up source page (CSV) and details page: the arguments it is given, the
# per-opcode counts, shares and per-output figures, the instructions with the most samples, the
# headline metrics and stall reasons, and the refusals (no ncu, no command, nothing profiled).
# No GPU: only the tool's logic is under test.
# Usage (CTest): cli_ncu_profile.sh SWIN_BINARY SOURCE_DIR BUILD_DIR; exits 77 without python3.
set -u
. "$(dirname "$0")/clilib.sh"
src=$2
need_python3
tool=$src/tools/ncu_profile.py
fake=$tmp/ncu
# the stand-in: profiling (-o REP) records its arguments and creates REP.ncu-rep unless
# FAKE_NOTHING=1; --import prints the source page (CSV) or the details page
cat > "$fake" <<'STUB'
#!/usr/bin/env bash
if [ "$1" = "--import" ]; then
  case "$*" in
    *"--page source"*)
      cat <<'CSV'
"Kernel Name","void k<1>(int)",
"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","# Samples","Instructions Executed","Thread Instructions Executed"
"0x7f0000000100","      FFMA R1, R2, R3, R4","30","20","30","1000","32000"
"0x7f0000000110","      @!P0 FFMA.FTZ R1, R2, R3, R4","10","5","10","1000","32000"
"0x7f0000000120","      MUFU.RCP R5, R5","50","40","50","500","16000"
"0x7f0000000130","      BRA 0x10","10","10","10","500","16000"
CSV
      ;;
    *"--page details"*)
      printf '    Section: GPU Speed Of Light Throughput\n    Duration                         us       454.50\n'
      printf '    Issue Slots Busy               %%        66.40\n    Issued Warp Per Scheduler                        0.68\n'
      printf '    Stall Not Selected              inst         1.37\n    Stall Wait                      inst         1.08\n'
      ;;
  esac
  exit 0
fi
echo "$*" > "$(dirname "$0")/args"
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && [ "${FAKE_NOTHING:-0}" != 1 ] && : > "$a.ncu-rep"
  prev=$a
done
echo "==PROF== made up"
exit 0
STUB
chmod +x "$fake"

python3 "$tool" --ncu "$fake" --kernel gemm_tma --launch-skip 4 --outputs 3200 --top 2 -- ./swin bench -n 1 \
    > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 0 ] && ok "profile read: exit 0" || bad "profile read: exit $rc"
grep -q -- '--kernel-name regex:gemm_tma --launch-skip 4 --launch-count 1 .*--section SourceCounters .*-o .*profile ./swin bench -n 1$' "$tmp/args" &&
    ok "ncu asked for one launch, its source counters, then the command" || bad "ncu arguments: $(cat "$tmp/args")"
grep -q '^kernel: void k<1>(int)$' "$tmp/out" && ok "the kernel's name" || bad "kernel name"
# 3,000 warp instructions over 3,200 outputs: 30 thread instructions an output; FFMA (two lines,
# one predicated) 2,000 = 66.7%, 20 an output, 40% of the samples; MUFU 500, 5 an output, 50%
grep -q '^warp instructions executed: 3,000, 30.00 thread instructions an output (3,200 outputs); warp-state samples: 100$' "$tmp/out" &&
    ok "totals and instructions per output" || bad "totals line"
grep -Eq '^FFMA +2,000 +66\.7% +20\.00 +40\.0%$' "$tmp/out" && ok "FFMA row: predicate and modifiers folded in" ||
    bad "FFMA row"
grep -Eq '^MUFU +500 +16\.7% +5\.00 +50\.0%$' "$tmp/out" && ok "MUFU row" || bad "MUFU row"
[ "$(grep -A2 'the 2 instructions with the most samples' "$tmp/out" | sed -n 2p | awk '{print $1, $2}')" = "000020 50.0%" ] &&
    ok "the top instructions, by offset in the kernel" || bad "top instructions"
grep -Eq '^Duration +us +454\.50$' "$tmp/out" && grep -Eq '^Issue Slots Busy +% +66\.40$' "$tmp/out" &&
    ok "headline metrics from the details page" || bad "headline metrics"
grep -Eq '^  Stall Not Selected +1\.37$' "$tmp/out" && ok "stall reasons" || bad "stall reasons"

# nothing profiled (no launch matched): exit 1 and a message naming the regex
FAKE_NOTHING=1 python3 "$tool" --ncu "$fake" --kernel nosuch -- ./swin > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q "ncu profiled nothing.*'nosuch' after skipping 0" "$tmp/err" && ok "nothing profiled: exit 1, named" ||
    bad "nothing profiled: exit $rc"

# refusals: exit 2
python3 "$tool" --ncu "$tmp/no-such-ncu" -- ./swin > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "not found (Nsight Compute" "$tmp/err" && ok "no ncu: exit 2" || bad "no ncu: exit $rc"
for args in "--kernel x" "--kernel x --" "--outputs -1 -- ./swin"; do
    # shellcheck disable=SC2086
    python3 "$tool" --ncu "$fake" $args > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc = 2 ] && grep -q 'ncu_profile.py: ' "$tmp/err" && ok "refused: $args" || bad "bad arguments '$args': exit $rc"
done
python3 "$tool" --help > "$tmp/out" 2>&1 && grep -q 'ncu_profile.py - where one kernel launch' "$tmp/out" &&
    ok "--help" || bad "--help"
finish cli_ncu_profile
