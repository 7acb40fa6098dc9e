#!/usr/bin/env python3
"""ncu_profile.py - where one kernel launch spends its instructions: runs a command under Nsight
Compute (ncu) with source counters on one launch of a kernel, then prints, per SASS opcode, the
warp instructions executed, their share, the thread instructions per output element (with
--outputs) and the share of the warp-state samples, the launch's headline metrics and stall
reasons, and the instructions that drew the most samples. Everything goes to stdout, so a run on
a remote GPU machine needs no files back.

  python3 tools/ncu_profile.py [--kernel REGEX] [--launch-skip N] [--outputs N] [--top N]
                               [--ncu PATH] [--keep DIR] -- COMMAND [ARG...]
  python3 tools/ncu_profile.py --kernel gemm_tma_kernel --launch-skip 4 --outputs $((50176*1536)) \\
      -- build/swin bench --precision fp16 --batch 256 -n 1 --graphs off

--launch-skip N profiles the (N+1)-th launch whose name matches REGEX (Swin-T's fc1 + GELU: launch
k is block k's; --graphs off, since ncu profiles kernels, not graphs). --outputs N divides the
instructions by N / 32 (the kernel's output elements: a GEMM's M x N), which makes kernels of
different shapes comparable. --keep DIR keeps the report (DIR/profile.ncu-rep) for the ncu GUI.
Exit status: 0 when the profile was read, 1 when ncu failed or profiled nothing, 2 on bad
arguments or without ncu. Nothing here is a pass/fail check (never asserted in a test).
"""
import argparse
import collections
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

SECTIONS = ["SpeedOfLight", "ComputeWorkloadAnalysis", "SchedulerStats", "WarpStateStats", "SourceCounters"]
# lines of ncu's details page worth printing (name as ncu writes it)
HEADLINE = ["Duration", "SM Frequency", "Issue Slots Busy", "Compute (SM) Throughput", "DRAM Throughput",
            "One or More Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
            "Warp Cycles Per Issued Instruction"]


def opcode(sass):
    """the mnemonic of a SASS line, predicate and modifiers dropped: '@!P0 FFMA.FTZ R1, ...' -> FFMA"""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0].rstrip(";") if words else "?"


def number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def read_source(text):
    """ncu --page source --csv: [(kernel name, [(address, sass, executed, samples)])]"""
    kernels = []
    rows = list(csv.reader(io.StringIO(text)))
    i = 0
    while i < len(rows):
        row = rows[i]
        if row and row[0] == "Kernel Name":
            name = row[1] if len(row) > 1 else "?"
            head = rows[i + 1] if i + 1 < len(rows) else []
            col = {h: k for k, h in enumerate(head)}
            need = ["Address", "Source", "Instructions Executed"]
            if any(h not in col for h in need):
                raise ValueError(f"source page of {name}: no column {[h for h in need if h not in col]}")
            samp = col.get("Warp Stall Sampling (All Samples)")
            ins = []
            i += 2
            while i < len(rows) and not (rows[i] and rows[i][0] == "Kernel Name"):
                r = rows[i]
                if len(r) > col["Instructions Executed"]:
                    ins.append((r[col["Address"]], r[col["Source"]].strip(), number(r[col["Instructions Executed"]]),
                                number(r[samp]) if samp is not None and len(r) > samp else 0.0))
                i += 1
            kernels.append((name, ins))
        else:
            i += 1
    return kernels


def read_details(text):
    """ncu --page details: the HEADLINE metrics and the 'Stall ...' lines, as (name, unit, value)"""
    out, stalls = [], []
    for line in text.splitlines():
        m = re.match(r"^\s{2,}(\S.*?)\s{2,}(\S+)?\s+([-0-9.,]+)\s*$", line)
        if not m:
            continue
        name, unit, value = m.group(1).strip(), m.group(2) or "", m.group(3)
        if name in HEADLINE and name not in [n for n, _, _ in out]:
            out.append((name, unit, value))
        elif name.startswith("Stall ") and name not in [n for n, _, _ in stalls]:
            stalls.append((name, unit, value))
    return out, stalls


def report(name, ins, outputs, top):
    tot = sum(e for _, _, e, _ in ins) or 1.0
    ts = sum(s for _, _, _, s in ins)
    print(f"kernel: {name}")
    per = f", {tot * 32 / outputs:.2f} thread instructions an output ({outputs:,} outputs)" if outputs else ""
    print(f"warp instructions executed: {int(tot):,}{per}; warp-state samples: {int(ts):,}")
    byop = collections.defaultdict(lambda: [0.0, 0.0])
    for _, sass, e, s in ins:
        byop[opcode(sass)][0] += e
        byop[opcode(sass)][1] += s
    print(f"\n{'opcode':<12} {'warp instr':>14} {'share':>7} {'per output':>11} {'samples':>8}")
    for op, (e, s) in sorted(byop.items(), key=lambda kv: -kv[1][0]):
        if e == 0 and s == 0:
            continue
        po = f"{e * 32 / outputs:11.2f}" if outputs else f"{'-':>11}"
        sh = f"{100 * s / ts:7.1f}%" if ts else f"{'-':>8}"
        print(f"{op:<12} {int(e):>14,} {100 * e / tot:6.1f}% {po} {sh}")
    if top and ts:
        base = None
        try:
            base = min(int(a, 16) for a, _, _, _ in ins)
        except ValueError:
            pass
        print(f"\nthe {top} instructions with the most samples (offset in the kernel):")
        for a, sass, e, s in sorted(ins, key=lambda x: -x[3])[:top]:
            off = f"{int(a, 16) - base:06x}" if base is not None else a
            print(f"  {off}  {100 * s / ts:5.1f}%  {int(e):>12,}  {sass}")


def main():
    ap = argparse.ArgumentParser(prog="ncu_profile.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default=".", help="regex of the kernel name (default: any)")
    ap.add_argument("--launch-skip", type=int, default=0, help="matching launches to skip (default 0)")
    ap.add_argument("--outputs", type=int, default=0, help="the kernel's output elements (for per-output counts)")
    ap.add_argument("--top", type=int, default=15, help="instructions with the most samples to list (default 15)")
    ap.add_argument("--ncu", default=os.environ.get("NCU", "ncu"), help="the ncu binary (default: ncu, or $NCU)")
    ap.add_argument("--keep", help="keep the report as DIR/profile.ncu-rep")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to profile")
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        print("ncu_profile.py: give the options, then --, then the command to profile (try --help)", file=sys.stderr)
        return 2
    if a.launch_skip < 0 or a.outputs < 0 or a.top < 0:
        print("ncu_profile.py: --launch-skip, --outputs and --top take numbers >= 0", file=sys.stderr)
        return 2
    ncu = shutil.which(a.ncu)
    if not ncu:
        print(f"ncu_profile.py: '{a.ncu}' not found (Nsight Compute; --ncu PATH or NCU=PATH)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="ncu_profile.")
    try:
        rep = os.path.join(work, "profile")
        prof = [ncu, "--kernel-name", f"regex:{a.kernel}", "--launch-skip", str(a.launch_skip), "--launch-count", "1"]
        for s in SECTIONS:
            prof += ["--section", s]
        p = subprocess.run(prof + ["-o", rep] + cmd, capture_output=True, text=True)
        if not os.path.exists(rep + ".ncu-rep"):
            tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-8:])
            print(f"ncu_profile.py: ncu profiled nothing (exit {p.returncode}); no launch matched '{a.kernel}' "
                  f"after skipping {a.launch_skip}, or the command failed:\n{tail}", file=sys.stderr)
            return 1
        if p.returncode != 0:
            print(f"ncu_profile.py: note: the profiled command exited {p.returncode}", file=sys.stderr)
        src = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--page", "source", "--csv", "--print-source", "sass"],
                             capture_output=True, text=True)
        det = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--page", "details"], capture_output=True, text=True)
        if src.returncode != 0:
            print(f"ncu_profile.py: reading the source page failed (exit {src.returncode}): "
                  f"{src.stderr.strip()[-400:]}", file=sys.stderr)
            return 1
        try:
            kernels = read_source(src.stdout)
        except ValueError as e:
            print(f"ncu_profile.py: {e}", file=sys.stderr)
            return 1
        if not kernels:
            print("ncu_profile.py: the report's source page names no kernel", file=sys.stderr)
            return 1
        head, stalls = read_details(det.stdout)
        for name, ins in kernels:
            report(name, ins, a.outputs, a.top)
        if head:
            print("\n" + "\n".join(f"{n:<36} {u:>6} {v:>12}" for n, u, v in head))
        if stalls:
            print("\nstall reasons (cycles a warp spends in each per instruction issued):")
            print("\n".join(f"  {n:<34} {v:>8}" for n, _, v in stalls))
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            shutil.copy(rep + ".ncu-rep", os.path.join(a.keep, "profile.ncu-rep"))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
