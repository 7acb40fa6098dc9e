#!/usr/bin/env python3
"""perf_table.py - write PERFORMANCE.md from the JSON of `swin bench --json` and tools/bench_torch.py.

  python3 tools/perf_table.py -o PERFORMANCE.md OUTDIR            # every *.json / *.jsonl in it
  python3 tools/perf_table.py -o PERFORMANCE.md swin.jsonl torch_eager.json torch_compile.json

tools/perf.sh runs it at the end of a device run; docs/PERFORMANCE.md is that output, copied, never
edited by hand. Inputs: a file holds one JSON object, a list of them, or one object per line
(JSON Lines). Objects with "tool": "swin" are `swin bench --json` outputs (optionally with
"command", or with "error" when the run failed); "tool": "torch" ones come from bench_torch.py;
"tool": "perf" ones (perf_run.json) name a tools/perf.sh run: its date, GPU, host (when recorded), command and failed
phases. Several runs can go into one table (perf.sh's PERF_MERGE): each is listed.
Rows are keyed by (arch, precision, batch) and, for torch, mode; a measured row beats one without
a time, otherwise the later input wins. Nothing here measures anything: it only formats.
"""
import argparse
import datetime
import glob
import json
import os
import sys

PRECISION_ORDER = ("fp8", "fp16", "bf16", "tf32", "fp32")
TINY_V1 = "swin_tiny_patch4_window7_224"
TINY_V2 = "swinv2_tiny_window8_256"

# (arch, precision, batch, metric, comparison, target); metric "ms" = median latency, "ips" = img/s.
# The open goals: speed, second wave, and FP8 (their issues give the same figures).
B384 = "swin_base_patch4_window12_384"
GOALS = [
    (TINY_V1, "fp16", 1, "ms", "<=", 0.25),
    (TINY_V1, "fp16", 8, "ms", "<=", 0.45),
    (TINY_V1, "fp16", 256, "ips", ">=", 35000),
    (TINY_V1, "bf16", 256, "ips", ">=", 35000),
    (TINY_V1, "tf32", 256, "ips", ">=", 16000),
    (TINY_V1, "fp32", 256, "ips", ">=", 4500),
    (TINY_V2, "fp16", 1, "ms", "<=", 0.28),
    (TINY_V2, "fp16", 256, "ips", ">=", 28000),
    (B384, "fp16", 1, "ms", "<=", 0.8),
    (B384, "fp16", 64, "ips", ">=", 4500),
    (TINY_V1, "fp8", 64, "ips", ">=", 40000),
    (TINY_V1, "fp8", 256, "ips", ">=", 50000),
]
# fused vs unfused attention, checked on every fp16 row at a batch of at least RATIO_MIN_BATCH
RATIO_GOALS = [("attention_ratio", "attention ops alone", 3.0), ("e2e_ratio", "end to end", 1.2)]
RATIO_MIN_BATCH = 64


# ---- reading

def read_objects(path):
    with open(path) as f:
        text = f.read()
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise SystemExit(f"perf_table: {path}:{n}: not JSON: {e}")
        return out


def expand(inputs):
    files = []
    for p in inputs:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "*.json")) +
                            glob.glob(os.path.join(p, "*.jsonl")))
        else:
            files.append(p)
    return files


def timed(row):
    return row is not None and isinstance(row.get("median_ms"), (int, float))


def put(table, key, row):
    """Keeps a measured row over one without a time; otherwise the later one wins."""
    old = table.get(key)
    if timed(old) and not timed(row):
        return
    table[key] = row


class Data:
    def __init__(self):
        self.swin = {}      # (arch, precision, batch) -> row (+ "graphs")
        self.torch = {}     # (arch, precision, mode, batch) -> row
        self.swin_errors = []   # whole-run failures: (arch, precision, message)
        self.env_swin = {}
        self.env_torch = {}
        self.commands = []
        self.archs = []
        self.files = []
        self.runs = []          # tool "perf" objects, one per tools/perf.sh run, by date
        self.gpus = []          # every GPU a swin or torch input names
        self.torch_iters = []   # (timed iterations, warm-up) of each torch input

    def arch_seen(self, arch):
        if arch not in self.archs:
            self.archs.append(arch)

    def add(self, obj, path):
        tool = obj.get("tool")
        if tool in ("swin", "torch") and obj.get("command") and obj["command"] not in self.commands:
            self.commands.append(obj["command"])
        if tool in ("swin", "torch") and obj.get("gpu") and obj["gpu"] not in self.gpus:
            self.gpus.append(obj["gpu"])
        if tool == "swin":
            self.add_swin(obj)
        elif tool == "torch":
            self.add_torch(obj)
        elif tool == "perf":
            if obj not in self.runs:
                self.runs.append(obj)
                self.runs.sort(key=lambda r: r.get("date", ""))
        else:
            print(f"perf_table: {path}: skipping an object without tool swin/torch",
                  file=sys.stderr)

    def add_swin(self, obj):
        arch, prec = obj.get("arch", "?"), obj.get("precision", "?")
        self.arch_seen(arch)
        if "error" in obj:
            self.swin_errors.append((arch, prec, obj["error"]))
        for k in ("gpu", "driver", "cuda_runtime"):
            if obj.get(k):
                self.env_swin[k] = obj[k]
        for r in obj.get("results") or []:
            row = dict(r, graphs=obj.get("graphs"), pdl=obj.get("pdl"))
            key = (arch, prec, r.get("batch"))
            old = self.swin.get(key)
            if old and old.get("breakdown") and not row.get("breakdown"):
                row["breakdown"] = old["breakdown"]
            put(self.swin, key, row)

    def add_torch(self, obj):
        for k in ("torch", "timm", "cuda", "cudnn", "gpu", "driver", "python", "iters", "warmup"):
            if obj.get(k) is not None:
                self.env_torch[k] = obj[k]
        it = (obj.get("iters"), obj.get("warmup"))
        if it[0] is not None and it not in self.torch_iters:
            self.torch_iters.append(it)
        for r in obj.get("results") or []:
            if not timed(r) and "error" not in r:
                continue  # a --precompile-only row: nothing measured
            self.arch_seen(r.get("arch", "?"))
            put(self.torch, (r.get("arch"), r.get("precision"), r.get("mode"), r.get("batch")), r)


# ---- formatting helpers

def num(x, digits=3):
    return "—" if x is None else f"{x:,.{digits}f}"


def ips(x):
    return "—" if x is None else f"{x:,.0f}"


def ratio(x):
    return "—" if x is None else f"{x:.2f}x"


def prec_key(p):
    return PRECISION_ORDER.index(p) if p in PRECISION_ORDER else len(PRECISION_ORDER)


class Notes:
    """Footnotes for cells that hold an error instead of a number."""
    def __init__(self):
        self.items = []

    def ref(self, text):
        if text not in self.items:
            self.items.append(text)
        return f"err[{self.items.index(text) + 1}]"


def cell_ms(row, what, notes):
    if row is None:
        return "—"
    if "error" in row:
        return notes.ref(f"{what}: {row['error']}")
    return num(row.get("median_ms"))


# ---- sections

def section_env(d, out, date, perf_command):
    es, et = d.env_swin, d.env_torch
    if d.runs:   # the last run's date: when the numbers were taken, not when the table was
        date = d.runs[-1].get("date") or date
    out.append(f"Date: {date}  ")
    gpu = es.get("gpu") or et.get("gpu") or "unknown"
    out.append(f"GPU: {gpu}, driver {es.get('driver') or et.get('driver') or 'unknown'}  ")
    if len(d.runs) == 1 and d.runs[0].get("host"):
        out.append(f"Host: {d.runs[0]['host']}  ")
    out.append(f"swin: CUDA runtime {es.get('cuda_runtime', 'unknown')}  ")
    if et:
        out.append(f"PyTorch: torch {et.get('torch', '?')} (CUDA {et.get('cuda', '?')}, cuDNN "
                   f"{et.get('cudnn', '?')}), timm {et.get('timm', '?')}, python "
                   f"{et.get('python', '?')}")
    if len(d.gpus) > 1:
        out.append("")
        out.append(f"**Warning:** the inputs name several GPUs ({', '.join(d.gpus)}); "
                   "ratios across them compare different GPUs.")
    if len(d.runs) > 1:
        out.append("")
        out.append(f"{len(d.runs)} runs of tools/perf.sh, merged into one table (PERF_MERGE); where "
                   "runs measured the same row, the later run's numbers are shown, so a row's swin "
                   "and PyTorch numbers may come from different runs:")
        out.append("")
        for r in d.runs:
            failed = r.get("failed") or []
            why = f" (failed: {'; '.join(failed)})" if failed else ""
            host = f" ({r['host']})" if r.get("host") else ""
            out.append(f"- {r.get('date', '?')}, {r.get('gpu', '?')}{host}: `{r.get('command', '?')}`{why}")
    out.append("")
    out.append("## How it was measured")
    out.append("")
    out.append("- swin: `swin bench`, random weights, input resident on the GPU, CUDA events "
               "around each forward, median and p10/p90 of the timed iterations after a warm-up; "
               "TFLOP/s from the model's FLOP count. The fused/unfused ratios are unfused time over "
               "fused time, measured in the same run (attention ops alone, and end to end; the MLP's "
               "end to end, `--mlp fused` against unfused).")
    pdl = {}   # Programmatic Dependent Launch (bench's "pdl") of the rows shown, by arch and precision
    for (arch, prec, _), row in d.swin.items():
        if row.get("pdl") is not None:
            pdl.setdefault((arch, prec), set()).add("on" if row["pdl"] else "off")
    states = set().union(*pdl.values())
    if len(states) == 1:
        out.append(f"- swin's kernels launched with Programmatic Dependent Launch: {states.pop()} in every row.")
    elif pdl:
        parts = [f"{a} {p} {'/'.join(sorted(v))}" for (a, p), v in sorted(pdl.items())]
        out.append("- swin's kernels launched with Programmatic Dependent Launch (per model and precision, "
                   "from the run that measured the rows): " + "; ".join(parts) + ".")
    if et:
        its = " or ".join(f"{i} timed iterations after {w} warm-up" for i, w in d.torch_iters) or \
            f"{et.get('iters', '?')} timed iterations after {et.get('warmup', '?')} warm-up"
        out.append(f"- PyTorch: `tools/bench_torch.py`, timm models with random weights "
                   f"(pretrained=False), {its}{' (per run: its command)' if len(d.torch_iters) > 1 else ''} "
                   f"inside `torch.inference_mode()`, CUDA events "
                   "around each forward, median. fp16/bf16: model and input in that dtype; tf32: "
                   "TF32 matmul and cuDNN allowed; fp32: both off. torch.compile: dynamic=False, "
                   "mode='reduce-overhead' (CUDA graphs) for batch <= 8, 'default' above, compiled "
                   "before timing.")
    out.append("- Ratios \"vs eager\" and \"vs compile\" are the PyTorch median over the swin "
               "median: above 1x, swin is faster.")
    out.append("")
    out.append("Commands:")
    out.append("")
    out.append("```")
    if perf_command:
        out.append(perf_command)
    for r in d.runs:
        if r.get("command") and r["command"] != perf_command:
            out.append(r["command"])
    out.extend(d.commands or ["(no commands recorded in the inputs)"])
    out.append("```")
    out.append("")


def section_arch(d, arch, out, notes):
    keys = {(p, b) for (a, p, b) in d.swin if a == arch}
    keys |= {(p, b) for (a, p, m, b) in d.torch if a == arch}
    errors = []
    for a, p, msg in d.swin_errors:
        if a == arch and (p, msg) not in errors:
            errors.append((p, msg))
    if not keys and not errors:
        return
    out.append(f"## {arch}")
    out.append("")
    if not keys:
        out.extend(f"- swin bench {p} failed: {msg}" for p, msg in errors)
        out.append("")
        return
    graphs = {r.get("graphs") for (a, _, _), r in d.swin.items() if a == arch}
    if graphs == {False}:
        out.append("swin ran with CUDA graphs off.")
        out.append("")
    out.append("| precision | batch | swin ms | swin img/s | swin TFLOP/s | timm eager ms | "
               "torch.compile ms | vs eager | vs compile | attention fused/unfused | "
               "e2e fused/unfused | MLP fused/unfused e2e |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for p, b in sorted(keys, key=lambda k: (prec_key(k[0]), k[1])):
        s = d.swin.get((arch, p, b))
        e = d.torch.get((arch, p, "eager", b))
        c = d.torch.get((arch, p, "compile", b))
        sm = s.get("median_ms") if timed(s) else None
        ve = e["median_ms"] / sm if sm and timed(e) else None
        vc = c["median_ms"] / sm if sm and timed(c) else None
        out.append(
            f"| {p} | {b} | {cell_ms(s, f'swin {arch} {p} batch {b}', notes)} | "
            f"{ips(s.get('img_per_s')) if timed(s) else '—'} | "
            f"{num(s.get('tflops'), 1) if timed(s) else '—'} | "
            f"{cell_ms(e, f'timm eager {arch} {p} batch {b}', notes)} | "
            f"{cell_ms(c, f'torch.compile {arch} {p} batch {b}', notes)} | "
            f"{ratio(ve)} | {ratio(vc)} | "
            f"{ratio(s.get('attention_ratio')) if timed(s) else '—'} | "
            f"{ratio(s.get('e2e_ratio')) if timed(s) else '—'} | "
            f"{ratio(s.get('mlp_ratio')) if timed(s) else '—'} |")
    out.append("")
    if errors:
        out.extend(f"- swin bench {p} failed: {msg}" for p, msg in errors)
        out.append("")


def section_breakdown(d, out):
    rows = [(k, r) for k, r in d.swin.items() if timed(r) and r.get("breakdown")]
    if not rows:
        return
    out.append("## Where the time goes (swin)")
    out.append("")
    out.append("From `swin bench --breakdown`: an un-captured forward with an event before every "
               "op, so the sum is larger than the CUDA-graph time above. Per-stage times include "
               "the patch embedding in the first stage and the head in the last.")
    out.append("")
    out.append("| arch | precision | batch | GEMM ms | attention ms | norm/shift/merge ms | "
               "other ms | sum ms | per stage ms |")
    out.append("|---|---|--:|--:|--:|--:|--:|--:|---|")
    order = {a: i for i, a in enumerate(d.archs)}
    for (a, p, b), r in sorted(rows, key=lambda kr: (order.get(kr[0][0], 99), prec_key(kr[0][1]),
                                                     kr[0][2])):
        bd = r["breakdown"]
        parts = [bd.get(k) for k in ("gemm_ms", "attention_ms", "norm_shift_merge_ms", "other_ms")]
        total = sum(x for x in parts if x is not None)
        stages = " / ".join(num(x) for x in bd.get("per_stage_ms") or [])
        out.append(f"| {a} | {p} | {b} | " + " | ".join(num(x) for x in parts) +
                   f" | {num(total)} | {stages or '—'} |")
    out.append("")
    section_ops(d, rows, order, out)


def section_fp8(d, out):
    """fp8 against fp16 in the same run: end to end, torch.compile fp16, and the GEMMs alone
    (the breakdown's GEMM class; the quantisation ops count as "other")."""
    keys = sorted(((a, b) for (a, p, b), r in d.swin.items() if p == "fp8" and timed(r)
                   and timed(d.swin.get((a, "fp16", b)))), key=lambda ab: (ab[0], ab[1]))
    if not keys:
        return
    out.append("## FP8 against fp16")
    out.append("")
    out.append("Same run. fp8: E4M3 GEMMs on the FP8 tensor cores for every block and merge linear, "
               "in Swin V1's 7x7 windows also attention's q, k and v stored in E4M3 (runs from 2026-11-29 "
               "13:00 UTC on), the rest fp16; PyTorch has no FP8 Swin, so the comparison is torch.compile in fp16. "
               "GEMM ms from `--breakdown` (un-captured, an event per op); on Hopper fc1 carries the GELU in "
               "both precisions (`fc1+gelu`, and in fp8 also fc2's quantisation: `fc1+gelu+quantize`), so "
               "the GEMM columns include it; quantize ms: the remaining input quantisation ops.")
    out.append("")
    if any((o.get("name") or "").endswith("qkv+attention") for a, b in keys
           for o in (d.swin[(a, "fp16", b)].get("breakdown") or {}).get("ops") or []):
        out.append("fp16 ran some blocks' qkv GEMM inside the attention kernel (op `qkv+attention`: the first "
                   "stage's, C <= 128, and at small batches the wider ones'), fp8 as an FP8 GEMM: those GEMMs "
                   "count in fp16's attention ms, not its GEMM ms, so the GEMM speedup compares fp8's GEMMs with "
                   "fewer fp16 ones.")
        out.append("")
    out.append("| arch | batch | fp8 ms | fp8 img/s | fp16 ms | fp8 speedup | torch.compile fp16 ms | "
               "fp8 vs compile | GEMM ms fp16 | GEMM ms fp8 | GEMM speedup | quantize ms |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for a, b in keys:
        s8, s16 = d.swin[(a, "fp8", b)], d.swin[(a, "fp16", b)]
        c = d.torch.get((a, "fp16", "compile", b))
        g8 = (s8.get("breakdown") or {}).get("gemm_ms")
        g16 = (s16.get("breakdown") or {}).get("gemm_ms")
        ops8 = (s8.get("breakdown") or {}).get("ops") or []
        q = [o["ms"] for o in ops8 if o.get("name") in ("quantize", "gelu+quantize")]
        sp = s16["median_ms"] / s8["median_ms"] if s8.get("median_ms") else None
        vc = c["median_ms"] / s8["median_ms"] if timed(c) and s8.get("median_ms") else None
        gs = g16 / g8 if g8 and g16 else None
        out.append(f"| {a} | {b} | {num(s8['median_ms'])} | {ips(s8.get('img_per_s'))} | "
                   f"{num(s16['median_ms'])} | {ratio(sp)} | {num(c['median_ms']) if timed(c) else '—'} | "
                   f"{ratio(vc)} | {num(g16) if g16 else '—'} | {num(g8) if g8 else '—'} | {ratio(gs)} | "
                   f"{num(sum(q)) if q else '—'} |")
    out.append("")


def section_ops(d, rows, order, out):
    """Per named op (summed over blocks), one table per arch and precision, a column per batch."""
    groups = {}
    for (a, p, b), r in rows:
        if r["breakdown"].get("ops"):
            groups.setdefault((a, p), []).append((b, r["breakdown"]))
    for (a, p) in sorted(groups, key=lambda ap: (order.get(ap[0], 99), prec_key(ap[1]))):
        cols = sorted(groups[(a, p)], key=lambda bb: bb[0])
        out.append(f"Per op, {a} {p} (ms per forward, all blocks; share of the profiled sum; calls "
                   "per forward, one per batch column where the batches differ):")
        out.append("")
        out.append("| op | family | calls | " + " | ".join(f"batch {b}" for b, _ in cols) + " |")
        out.append("|---|---|--:|" + "--:|" * len(cols))
        names = []
        for _, bd in cols:
            for o in bd["ops"]:
                if (o["name"], o["class"]) not in names:
                    names.append((o["name"], o["class"]))
        for name, cls in names:
            cells, calls = [], []
            for _, bd in cols:
                o = next((o for o in bd["ops"] if o["name"] == name and o["class"] == cls), None)
                total = sum(x["ms"] for x in bd["ops"]) or 1.0
                if o is None:
                    cells.append("—")
                    calls.append("—")
                else:
                    calls.append(str(o["calls"]))
                    cells.append(f"{num(o['ms'])} ({100.0 * o['ms'] / total:.0f}%)")
            # the engine's choices can differ by batch (e.g. the qkv projection inside the
            # attention kernel at small batches only): then a count per batch column
            shown = calls[0] if len(set(calls)) == 1 else " / ".join(calls)
            out.append(f"| {name} | {cls} | {shown} | " + " | ".join(cells) + " |")
        out.append("")


def goal_line(what, measured, cmp, target, unit, digits):
    if measured is None:
        return f"| {what} | not measured | {cmp} {target:,.{digits}f} {unit} | — | not measured |"
    met = measured <= target if cmp == "<=" else measured >= target
    gap = measured - target
    rel = 100.0 * gap / target
    return (f"| {what} | {measured:,.{digits}f} {unit} | {cmp} {target:,.{digits}f} {unit} | "
            f"{gap:+,.{digits}f} {unit} ({rel:+.0f}%) | {'met' if met else '**not met**'} |")


def section_goals(d, out):
    out.append("## Goals")
    out.append("")
    out.append("Measured is the swin median from the tables below; the gap is measured minus "
               "target. The fused/unfused goals are checked on every fp16 row at batch >= "
               f"{RATIO_MIN_BATCH}.")
    out.append("")
    out.append("| goal | measured | target | gap | status |")
    out.append("|---|--:|--:|--:|---|")
    met = total = 0
    for arch, p, b, metric, cmp, target in GOALS:
        r = d.swin.get((arch, p, b))
        if metric == "ms":
            v = r["median_ms"] if timed(r) else None
            line = goal_line(f"{arch} {p} batch {b} latency", v, cmp, target, "ms", 2)
        else:
            v = r.get("img_per_s") if timed(r) else None
            line = goal_line(f"{arch} {p} batch {b} throughput", v, cmp, target, "img/s", 0)
        out.append(line)
        total += 1
        met += line.endswith("| met |")
    for field, label, target in RATIO_GOALS:
        rows = sorted(((a, b, r) for (a, p, b), r in d.swin.items()
                       if p == "fp16" and b >= RATIO_MIN_BATCH and timed(r)),
                      key=lambda x: (d.archs.index(x[0]) if x[0] in d.archs else 99, x[1]))
        if not rows:
            out.append(goal_line(f"fused vs unfused, {label} (fp16)", None, ">=", target, "x", 1))
            total += 1
        for a, b, r in rows:
            line = goal_line(f"fused vs unfused, {label}: {a} fp16 batch {b}", r.get(field),
                             ">=", target, "x", 2)
            out.append(line)
            total += 1
            met += line.endswith("| met |")
    out.append("")
    out.append(f"{met} of {total} goals met.")
    out.append("")


def render(d, date, perf_command):
    out = ["# Performance", "",
           "Generated by tools/perf_table.py -- do not edit. Regenerate on a GPU machine with "
           "`tools/perf.sh OUTDIR` and copy OUTDIR/PERFORMANCE.md to docs/.", ""]
    section_env(d, out, date, perf_command)
    notes = Notes()
    section_goals(d, out)
    for arch in d.archs:
        section_arch(d, arch, out, notes)
    section_fp8(d, out)
    section_breakdown(d, out)
    if notes.items:
        out.append("## Errors and skipped configurations")
        out.append("")
        for i, t in enumerate(notes.items, 1):
            out.append(f"{i}. {t}")
        out.append("")
    return "\n".join(out)


def main(argv):
    p = argparse.ArgumentParser(description="Write PERFORMANCE.md from benchmark JSON.")
    p.add_argument("inputs", nargs="+", help="JSON / JSON Lines files, or folders of them")
    p.add_argument("-o", "--output", default="-", help="output file (- for stdout)")
    p.add_argument("--date", default=None, help="date line (default: now, UTC)")
    p.add_argument("--perf-command", default=None,
                   help="the command that produced the inputs, listed first under Commands")
    a = p.parse_args(argv)
    d = Data()
    files = [f for f in expand(a.inputs)
             if os.path.abspath(f) != os.path.abspath(a.output)]
    if not files:
        print("perf_table: no input files", file=sys.stderr)
        return 2
    for f in files:
        try:
            objs = read_objects(f)
        except OSError as e:
            print(f"perf_table: {f}: {e.strerror}", file=sys.stderr)
            return 2
        for o in objs:
            if isinstance(o, dict):
                d.add(o, f)
    if not d.swin and not d.torch and not d.swin_errors:
        print("perf_table: no swin or torch results in the inputs", file=sys.stderr)
        return 1
    date = a.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = render(d, date, a.perf_command)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
