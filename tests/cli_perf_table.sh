#!/usr/bin/env bash
# cli_perf_table.sh - tools/perf_table.py, which writes docs/PERFORMANCE.md, on made-up inputs (no GPU):
# the goals table (met, not met, not measured), the ratios to PyTorch, two merged runs (the later
# run's row wins; both runs listed) and the Programmatic Dependent Launch line (one state for every
# row, and per model and precision when merged runs differ), each run's host, and the per-op calls
# (one count per batch where the batches differ). The numbers are invented; only the
# formatting is under test.
# Usage (CTest): cli_perf_table.sh SWIN_BINARY SOURCE_DIR BUILD_DIR; exits 77 without python3.
set -u
. "$(dirname "$0")/clilib.sh"
src=$2
need_python3
T=$tmp
mkdir -p "$T/r1" "$T/r2"
check() {   # check TEXT COMMAND...: ok when the command succeeds
    local text=$1
    shift
    if "$@"; then ok "$text"; else bad "$text"; fi
}

# swin_rec ARCH PREC PDL BATCH MS: one `swin bench --json` record of one batch
swin_rec() {
    python3 - "$@" <<'EOF'
import json, sys
arch, prec, pdl, batch, ms = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), float(sys.argv[5])
print(json.dumps({"tool": "swin", "arch": arch, "precision": prec, "graphs": True, "pdl": pdl,
                  "gpu": "Test GPU", "driver": "13.0", "cuda_runtime": "13.0",
                  "command": f"swin bench --arch {arch} --precision {prec} --batch {batch} --json",
                  "results": [{"batch": batch, "median_ms": ms, "p10_ms": ms, "p90_ms": ms,
                               "img_per_s": batch * 1000.0 / ms, "tflops": 1.0}]}))
EOF
}
ST=swin_tiny_patch4_window7_224
# run 1 (earlier): Swin-T fp16 batch 1 at 0.5 ms and batch 256 at 10 ms, PDL off; bf16 batch 256
swin_rec $ST fp16 0 1 0.5 > "$T/r1/swin.jsonl"
swin_rec $ST fp16 0 256 10.0 >> "$T/r1/swin.jsonl"
swin_rec $ST bf16 0 256 8.0 >> "$T/r1/swin.jsonl"
echo '{"tool": "perf", "date": "2026-01-01 10:00 UTC", "gpu": "Test GPU", "command": "run one", "failed": []}' \
    > "$T/r1/perf_run.json"
cat > "$T/r1/torch_compile.json" <<EOF
{"tool": "torch", "torch": "9.9", "timm": "9.9", "cuda": "13.0", "gpu": "Test GPU", "iters": 20, "warmup": 10,
 "results": [{"arch": "$ST", "precision": "fp16", "mode": "compile", "batch": 256, "median_ms": 20.0,
              "img_per_s": 12800.0}]}
EOF
# run 2 (later): Swin-T fp16 batch 1 again at 0.2 ms with PDL on (it beats run 1's 0.5)
swin_rec $ST fp16 1 1 0.2 > "$T/r2/swin.jsonl"
echo '{"tool": "perf", "date": "2026-01-02 10:00 UTC", "gpu": "Test GPU", "host": "7 CPUs, 3 GPUs", "command": "run two", "failed": []}' \
    > "$T/r2/perf_run.json"

python3 "$src/tools/perf_table.py" -o "$T/merged.md" "$T/r1" "$T/r2" > "$T/log" 2>&1
check "perf_table.py on two runs exits 0" test $? -eq 0
md=$T/merged.md
check "both runs are listed" grep -q "2 runs of tools/perf.sh, merged" "$md"
check "run one named" grep -q '`run one`' "$md"
check "run two named" grep -q '`run two`' "$md"
check "run two's host beside its GPU" grep -q 'Test GPU (7 CPUs, 3 GPUs): `run two`' "$md"
check "run one, without a host, has none" grep -q 'Test GPU: `run one`' "$md"
# the later run's batch-1 row wins: 0.2 ms meets the 0.25 ms goal
check "batch 1 goal from the later run, met" \
    grep -qE "^\| $ST fp16 batch 1 latency \| 0\.20 ms \| <= 0\.25 ms \| .* \| met \|" "$md"
check "batch 256 goal not met (25,600 img/s)" \
    grep -qE "^\| $ST fp16 batch 256 throughput \| 25,600 img/s \| >= 35,000 img/s \| .*\*\*not met\*\* \|" "$md"
check "bf16 batch 256 goal (32,000 img/s) not met" \
    grep -qE "^\| $ST bf16 batch 256 throughput \| 32,000 img/s .*\*\*not met\*\* \|" "$md"
check "a goal without a row is not measured" \
    grep -qE "^\| $ST tf32 batch 256 throughput \| not measured \|" "$md"
check "torch.compile ratio in the same row (20 ms / 10 ms = 2.00x)" \
    grep -qE "^\| fp16 \| 256 \| 10\.000 \| 25,600 \|.*\| 20\.000 \| .*\| 2\.00x \|" "$md"
check "PDL per model and precision when the rows differ" \
    grep -q "Programmatic Dependent Launch (per model and precision.*$ST bf16 off; $ST fp16 off/on" "$md"

# one run alone: one PDL state for every row
python3 "$src/tools/perf_table.py" -o "$T/one.md" "$T/r2" > "$T/log" 2>&1
check "perf_table.py on one run exits 0" test $? -eq 0
check "one PDL state for every row" grep -q "Programmatic Dependent Launch: on in every row" "$T/one.md"
check "no merge list for one run" bash -c "! grep -q 'merged into one table' '$T/one.md'"
check "one run's host in the header" grep -q '^Host: 7 CPUs, 3 GPUs' "$T/one.md"

# the per-op breakdown: an op's calls per batch column when the batches differ (the engine's choices
# depend on the batch), one number when they agree
mkdir -p "$T/r3"
python3 - "$ST" > "$T/r3/swin.jsonl" <<'EOF'
import json, sys
def op(name, cls, calls, ms):
    return {"name": name, "class": cls, "calls": calls, "ms": ms, "per_stage_ms": [ms, 0.0, 0.0, 0.0]}
def res(batch, fused_calls):
    ops = [op("qkv+attention", "attention", fused_calls, 0.1), op("proj", "gemm", 12, 0.2)]
    return {"batch": batch, "median_ms": 1.0, "p10_ms": 1.0, "p90_ms": 1.0, "img_per_s": batch * 1000.0,
            "tflops": 1.0, "breakdown": {"gemm_ms": 0.2, "attention_ms": 0.1, "norm_shift_merge_ms": 0.0,
                                         "other_ms": 0.0, "per_stage_ms": [0.3, 0.0, 0.0, 0.0], "ops": ops}}
print(json.dumps({"tool": "swin", "arch": sys.argv[1], "precision": "fp16", "graphs": True, "pdl": True,
                  "gpu": "Test GPU", "driver": "13.0", "cuda_runtime": "13.0", "command": "bench",
                  "results": [res(1, 10), res(8, 2)]}))
EOF
python3 "$src/tools/perf_table.py" -o "$T/ops.md" "$T/r3" > "$T/log" 2>&1
check "perf_table.py on a breakdown exits 0" test $? -eq 0
check "calls per batch where they differ" grep -qE '^\| qkv\+attention \| attention \| 10 / 2 \| 0\.100 ' "$T/ops.md"
check "one count where the batches agree" grep -qE '^\| proj \| gemm \| 12 \| 0\.200 ' "$T/ops.md"

finish cli_perf_table
