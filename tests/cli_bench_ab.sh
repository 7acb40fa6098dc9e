#!/usr/bin/env bash
# cli_bench_ab.sh - tools/bench_ab.py (an A/B of environment settings with `swin bench`) against a
# stand-in for swin that answers `bench --json` with made-up times that depend on its environment:
# the settings take turns round after round, the table's best medians and ratios, the breakdown
# table, --json's records, a failing setting reported by name and round while the others run, and
# bad arguments refused. No GPU: only the tool's logic is under test.
# Usage (CTest): cli_bench_ab.sh SWIN_BINARY SOURCE_DIR BUILD_DIR; exits 77 without python3.
set -u
. "$(dirname "$0")/clilib.sh"
src=$2
need_python3
ab=$src/tools/bench_ab.py
fake=$tmp/swin
# the stand-in: FAKE_MS is batch 1's median (batch 8: 4 times it; calls after the second 0.5 ms slower), FAKE_FAIL=1
# fails, and every call appends its FAKE_MS to $tmp/calls
cat > "$fake" <<'STUB'
#!/usr/bin/env bash
echo "${FAKE_MS:-none}" >> "$(dirname "$0")/calls"
[ "${FAKE_FAIL:-0}" = 1 ] && { echo "swin bench: no usable GPU (made up)" >&2; exit 3; }
n=$(wc -l < "$(dirname "$0")/calls")
python3 - "${FAKE_MS:-2}" "$n" "$*" <<'PY'
import json, sys
ms, n, args = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ms += 0.5 if n > 2 else 0.0          # later calls slower: the best round must be the first
bd = "--breakdown" in args
def res(b, m):
    r = {"batch": b, "median_ms": m, "p10_ms": m, "p90_ms": m, "img_per_s": b * 1000 / m}
    r["breakdown"] = {"ops": [{"name": "fc1+gelu", "ms": m / 2}, {"name": "qkv", "ms": m / 4}]} if bd else None
    return r
print(json.dumps({"tool": "swin", "arch": "swin_tiny_patch4_window7_224", "precision": "fp16", "gpu": "Made-up GPU",
                  "results": [res(1, ms), res(8, 4 * ms)]}))
PY
STUB
chmod +x "$fake"

# two settings, two rounds: A (2 ms) is the baseline, B (1 ms) twice as fast
python3 "$ab" --swin "$fake" --json "$tmp/runs.jsonl" "FAKE_MS=2" "FAKE_MS=1" -- --batch 1,8 --breakdown \
    > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 0 ] && ok "two settings: exit 0" || bad "two settings: exit $rc"
[ "$(tr '\n' ' ' < "$tmp/calls")" = "2 1 2 1 " ] && ok "the settings take turns, round after round" ||
    bad "call order: $(tr '\n' ' ' < "$tmp/calls")"
# batch 1: A rounds 2.000 2.500 best 2.000; B 1.000 1.500 best 1.000, 2.000x the baseline
grep -Eq '^ +1 +FAKE_MS=2 +2\.000 +2\.500 +2\.000 +500\.0 +1\.000x$' "$tmp/out" && ok "baseline row: rounds, best, img/s" ||
    bad "baseline row of batch 1"
grep -Eq '^ +1 +FAKE_MS=1 +1\.000 +1\.500 +1\.000 +1000\.0 +2\.000x$' "$tmp/out" && ok "faster setting: ratio 2.000x" ||
    bad "second setting's row of batch 1"
grep -Eq '^ +8 +FAKE_MS=1 +4\.000 +6\.000 +4\.000 +2000\.0 +2\.000x$' "$tmp/out" && ok "batch 8 row" || bad "batch 8 row"
grep -Eq '^fc1\+gelu +1\.000 +0\.500$' "$tmp/out" && grep -q '^breakdown, batch 8' "$tmp/out" &&
    ok "breakdown table per op and setting (best rounds)" || bad "breakdown table"
[ "$(wc -l < "$tmp/runs.jsonl")" = 4 ] &&
    python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; assert [(x["setting"],x["round"]) for x in r]==[("FAKE_MS=2",1),("FAKE_MS=1",1),("FAKE_MS=2",2),("FAKE_MS=1",2)]' "$tmp/runs.jsonl" &&
    ok "--json: every run, with its setting and round" || bad "--json records"

# a failing setting: named with its round, the others still measured, exit 1
rm -f "$tmp/calls"
python3 "$ab" --swin "$fake" --rounds 1 "" "FAKE_FAIL=1 FAKE_MS=3" -- --batch 1 > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 1 ] && ok "a failing setting: exit 1" || bad "a failing setting: exit $rc"
grep -q 'setting FAKE_FAIL=1 FAKE_MS=3, round 1: exit 3: swin bench: no usable GPU (made up)' "$tmp/err" &&
    ok "the failure names the setting, the round and the error" || bad "failure message"
grep -Eq '^ +1 +\(as is\) +2\.000 +2\.000' "$tmp/out" && grep -Eq '^ +1 +FAKE_FAIL=1 FAKE_MS=3 +- +-' "$tmp/out" &&
    ok "the other setting still measured, the failed one shown as -" || bad "table with a failed setting"

# bad arguments: exit 2, nothing run
rm -f "$tmp/calls"
for args in "NOT_A_SETTING -- --batch 1" "A=1 -- --batch 1 --json" "A=1 --rounds 0 -- --batch 1" "A=1 B=2"; do
    # shellcheck disable=SC2086
    python3 "$ab" --swin "$fake" $args > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc = 2 ] && [ ! -f "$tmp/calls" ] && grep -q 'bench_ab.py: ' "$tmp/err" && ok "refused: $args" ||
        bad "bad arguments '$args': exit $rc"
done
python3 "$ab" --help > "$tmp/out" 2>&1 && grep -q 'bench_ab.py - compare environment settings' "$tmp/out" &&
    ok "--help" || bad "--help"
finish cli_bench_ab
