#!/usr/bin/env python3
"""bench_ab.py - compare environment settings (a kernel switch on and off, ...) with `swin bench`
in one run: the settings take turns, round after round, on the same GPU, and one table gives each
batch's median per setting and round, the best of the rounds, and its ratio to the first setting.

  python3 tools/bench_ab.py [--rounds R] [--swin PATH] [--json FILE] SETTING [SETTING ...] -- BENCH_ARGS
  python3 tools/bench_ab.py SWIN_GEMM_TMA_SPLIT=0 "" -- --precision tf32 --batch 64,256 -n 30

A SETTING is VAR=VALUE pairs separated by spaces ("A=1 B=0"), or "" for the environment as it is;
BENCH_ARGS go to every `swin bench --json` run unchanged (the first setting is the baseline).
With --breakdown among them, a second table gives each op's time (ms, all blocks) per setting, from
the best round of each. --json FILE keeps every run's `swin bench --json` object, with its setting
and round. Exit status: 0 when every run succeeded, 1 when one failed (its setting, round and the
error are printed; the others still run), 2 on bad arguments. Nothing here is a pass/fail check:
the numbers are for the reader (never asserted in a test).
"""
import argparse
import json
import os
import subprocess
import sys


def parse_setting(text):
    env = {}
    for item in text.split():
        name, eq, value = item.partition("=")
        if not eq or not name or not name.replace("_", "").isalnum() or name[0].isdigit():
            raise ValueError(f"setting '{text}': '{item}' is not VAR=VALUE")
        env[name] = value
    return env


def label(text):
    return text if text.strip() else "(as is)"


def run_once(swin, env_over, bench_args):
    env = dict(os.environ)
    env.update(env_over)
    cmd = [swin, "bench", "--json"] + bench_args
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    except OSError as e:
        return None, f"cannot run {swin}: {e}"
    if p.returncode != 0:
        err = (p.stderr.strip() or p.stdout.strip() or "no message").splitlines()[-1]
        return None, f"exit {p.returncode}: {err}"
    try:
        return json.loads(p.stdout), None
    except json.JSONDecodeError as e:
        return None, f"output is not JSON ({e})"


def main():
    argv = sys.argv[1:]
    own = argv[:argv.index("--")] if "--" in argv else argv
    if "-h" in own or "--help" in own:
        print(__doc__)
        return 0
    if "--" not in argv:
        print("bench_ab.py: give the settings, then --, then swin bench's arguments (try --help)", file=sys.stderr)
        return 2
    cut = argv.index("--")
    ap = argparse.ArgumentParser(description="A/B of environment settings with swin bench (see the file's header)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, each setting once a round (default 2)")
    ap.add_argument("--swin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "swin"),
                    help="the swin binary (default: build/swin)")
    ap.add_argument("--json", help="write every run's JSON object here (JSON Lines)")
    ap.add_argument("settings", nargs="+", help='VAR=VALUE ... per setting, "" for the environment as is')
    a = ap.parse_args(argv[:cut])
    bench_args = argv[cut + 1:]
    if a.rounds < 1:
        print("bench_ab.py: --rounds must be at least 1", file=sys.stderr)
        return 2
    if "--json" in bench_args:
        print("bench_ab.py: --json is added by bench_ab.py itself; leave it out of BENCH_ARGS", file=sys.stderr)
        return 2
    try:
        envs = [parse_setting(s) for s in a.settings]
    except ValueError as e:
        print(f"bench_ab.py: {e}", file=sys.stderr)
        return 2

    ns = len(a.settings)
    runs = [[None] * a.rounds for _ in range(ns)]   # [setting][round] -> bench JSON
    failed = 0
    out = open(a.json, "w") if a.json else None
    for r in range(a.rounds):
        for s in range(ns):
            obj, err = run_once(a.swin, envs[s], bench_args)
            if err:
                failed += 1
                print(f"bench_ab.py: setting {label(a.settings[s])}, round {r + 1}: {err}", file=sys.stderr)
                continue
            runs[s][r] = obj
            if out:
                out.write(json.dumps({"setting": a.settings[s], "round": r + 1, "bench": obj}) + "\n")
    if out:
        out.close()

    first = next((o for row in runs for o in row if o), None)
    if first is None:
        print("bench_ab.py: no run succeeded", file=sys.stderr)
        return 1
    print(f"swin bench {' '.join(bench_args)}: {first.get('arch')}, {first.get('precision')}, "
          f"{first.get('gpu')}, {a.rounds} rounds, settings in turn; median ms per round")
    batches = []
    for row in runs:
        for o in row:
            for res in (o or {}).get("results", []):
                if res["batch"] not in batches:
                    batches.append(res["batch"])

    def median(o, batch):
        for res in (o or {}).get("results", []):
            if res["batch"] == batch:
                return res["median_ms"]
        return None

    w = max(len(label(s)) for s in a.settings)
    head = f"{'batch':>5}  {'setting':<{w}}  " + "  ".join(f"{'round ' + str(r + 1):>9}" for r in range(a.rounds))
    print(head + f"  {'best ms':>9}  {'img/s':>10}  {'vs first':>8}")
    best = {}
    for b in batches:
        for s in range(ns):
            ms = [median(runs[s][r], b) for r in range(a.rounds)]
            got = [m for m in ms if m is not None]
            best[(s, b)] = min(got) if got else None
            cells = "  ".join(f"{m:9.3f}" if m is not None else f"{'-':>9}" for m in ms)
            bm = best[(s, b)]
            base = best.get((0, b))
            ratio = f"{base / bm:7.3f}x" if bm and base else f"{'-':>8}"
            ips = f"{b * 1000.0 / bm:10.1f}" if bm else f"{'-':>10}"
            bms = f"{bm:9.3f}" if bm else f"{'-':>9}"
            print(f"{b:5d}  {label(a.settings[s]):<{w}}  {cells}  {bms}  {ips}  {ratio}")
    print("vs first: the first setting's best median over this one's (above 1: this one is faster)")

    # --breakdown: each op per setting, from the round with the best median of each batch
    for b in batches:
        ops, per = [], []
        for s in range(ns):
            bo = None
            for r in range(a.rounds):
                m = median(runs[s][r], b)
                if m is not None and m == best[(s, b)]:
                    bo = next(res for res in runs[s][r]["results"] if res["batch"] == b).get("breakdown")
                    break
            per.append({op["name"]: op["ms"] for op in (bo or {}).get("ops", [])})
            for op in (bo or {}).get("ops", []):
                if op["name"] not in ops:
                    ops.append(op["name"])
        if not ops:
            continue
        print(f"\nbreakdown, batch {b} (ms, all blocks; the best round of each setting)")
        ow = max(len(o) for o in ops)
        print(f"{'op':<{ow}}  " + "  ".join(f"{'setting ' + str(s + 1):>10}" for s in range(ns)))
        for o in ops:
            print(f"{o:<{ow}}  " + "  ".join(f"{per[s][o]:10.3f}" if o in per[s] else f"{'-':>10}" for s in range(ns)))
        print("settings: " + "; ".join(f"{s + 1} {label(t)}" for s, t in enumerate(a.settings)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
