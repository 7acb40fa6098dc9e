#!/usr/bin/env python3
"""bench_torch.py - the PyTorch side of the benchmark: timm Swin models, eager and torch.compile.

Measures the same grid as `swin bench` (arch x precision x batch) with randomly initialised timm
models (pretrained=False; the weights do not change the timing), so the two can sit side by side
in docs/PERFORMANCE.md (written by tools/perf_table.py from a real device run).

  python3 tools/bench_torch.py --arch swin_tiny_patch4_window7_224 --precision fp16 \
      --batch 1,8,64,256 --mode eager,compile --precompile-jobs 8 --json torch.json

Precisions: fp16 / bf16 = model and input in that dtype end to end (like the swin engine);
tf32 = fp32 tensors with TF32 matmul and cuDNN allowed; fp32 = both TF32 switches off.
Modes: eager; compile = torch.compile(dynamic=False), mode='reduce-overhead' (CUDA graphs) for
batch <= 8 and mode='default' above, one compiled module per batch size.

Timing: warm-up, then --iters forward passes inside torch.inference_mode(), each bracketed by CUDA
events and synchronised (latency, not pipelined throughput); median, p10 and p90 are reported and
img/s = batch / median.

--precompile-jobs N: compiling takes 20-60 s per configuration, so a first phase compiles every
requested compile configuration in N parallel subprocesses, filling the on-disk Inductor / FX-graph
caches (TORCHINDUCTOR_CACHE_DIR, by default a fresh temporary folder); the measuring phase then
re-creates each compiled module (cache hits) and times one configuration at a time, so timings
never overlap with compilation or with each other. A configuration that fails records
{"error": ...} and the others go on. Progress, with timestamps, goes to stderr.

The two phases can also run as two invocations sharing --cache-dir (tools/perf.sh overlaps the
first with building swin):
  bench_torch.py ... --mode compile --precompile-jobs 8 --precompile-only --cache-dir D --json pre.json
  bench_torch.py ... --mode compile --cache-dir D --precompiled pre.json --json compile.json
With --precompiled, a configuration that did not compile there records its error instead of
compiling inline. --time-limit bounds the whole invocation: precompiles still running then are
stopped, and configurations not started record "skipped". The JSON file is rewritten after every
configuration, so a run cut short keeps what it measured.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

T0 = time.time()

ARCHS = ("swin_tiny_patch4_window7_224", "swinv2_tiny_window8_256")
PRECISIONS = ("fp16", "bf16", "tf32", "fp32")
MODES = ("eager", "compile")


def log(msg):
    print(f"[bench_torch {time.strftime('%H:%M:%S')} +{time.time() - T0:6.1f}s] {msg}",
          file=sys.stderr, flush=True)


def csv_list(kind, allowed=None, conv=str):
    def parse(text):
        items = [conv(x.strip()) for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty {kind} list")
        for x in items:
            if allowed is not None and x not in allowed:
                raise argparse.ArgumentTypeError(
                    f"unknown {kind} '{x}' (choose from {', '.join(allowed)})")
            if conv is int and x <= 0:
                raise argparse.ArgumentTypeError(f"{kind} must be positive, got {x}")
        return items
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Benchmark timm Swin models (eager and torch.compile) on CUDA.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("-a", "--arch", type=csv_list("arch"), default=ARCHS[0],
                   help="comma-separated timm model names, e.g. " + ",".join(ARCHS))
    p.add_argument("-p", "--precision", type=csv_list("precision", PRECISIONS), default="fp16",
                   help="comma-separated: " + ",".join(PRECISIONS))
    p.add_argument("-b", "--batch", type=csv_list("batch", conv=int), default="1,8,64,256",
                   help="comma-separated batch sizes")
    p.add_argument("-m", "--mode", type=csv_list("mode", MODES), default="eager",
                   help="comma-separated: eager,compile")
    p.add_argument("-n", "--iters", type=int, default=50, help="timed iterations per configuration")
    p.add_argument("-w", "--warmup", type=int, default=10, help="untimed iterations first")
    p.add_argument("-j", "--precompile-jobs", type=int, default=0,
                   help="compile every compile configuration first in N parallel subprocesses "
                        "(0: compile inline, one at a time)")
    p.add_argument("--cache-dir", default=None,
                   help="TORCHINDUCTOR_CACHE_DIR to use (default: a fresh temporary folder, or "
                        "the environment's TORCHINDUCTOR_CACHE_DIR when set)")
    p.add_argument("--precompile-only", action="store_true",
                   help="run only the compile phase (needs --precompile-jobs); with --json, "
                        "write which configurations compiled")
    p.add_argument("--precompiled", metavar="PATH", default=None,
                   help="the --json of a --precompile-only run with the same --cache-dir: "
                        "configurations that did not compile there are not compiled again")
    p.add_argument("--time-limit", type=float, default=0,
                   help="seconds from start; configurations not started by then record an "
                        "error, precompiles still running are stopped (0: no limit)")
    p.add_argument("--device", default="cuda", help="torch device (cpu only to test this script)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write the results as JSON to PATH (or stdout when no PATH is given)")
    p.add_argument("--precompile-one", nargs=3, metavar=("ARCH", "PRECISION", "BATCH"),
                   help=argparse.SUPPRESS)  # internal: the subprocess of --precompile-jobs
    a = p.parse_args(argv)
    if a.iters < 1 or a.warmup < 0 or a.precompile_jobs < 0:
        p.error("--iters must be >= 1, --warmup and --precompile-jobs >= 0")
    if a.precompile_only and (a.precompile_jobs < 1 or "compile" not in a.mode):
        p.error("--precompile-only needs --precompile-jobs N (N >= 1) and --mode compile")
    return a


def time_left(a):
    return a.time_limit - (time.time() - T0) if a.time_limit else float("inf")


# ---- model, precision and compile settings

def set_precision(torch, precision):
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)


def compile_mode(batch):
    return "reduce-overhead" if batch <= 8 else "default"


def make_model(torch, timm, arch, precision, device, seed):
    """Random-init timm model in eval mode, its dtype, and its input shape [C, H, W]."""
    dtype = set_precision(torch, precision)
    torch.manual_seed(seed)
    model = timm.create_model(arch, pretrained=False)
    chw = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
    model = model.eval().to(device=device, dtype=dtype)
    return model, dtype, chw


def build(torch, timm, arch, precision, batch, mode, device, seed):
    """Returns (callable, input). For compile, the first call (in the warm-up) compiles."""
    model, dtype, chw = make_model(torch, timm, arch, precision, device, seed)
    x = torch.randn((batch,) + chw, device=device, dtype=torch.float32).to(dtype)
    if mode == "eager":
        return model, x
    cmode = compile_mode(batch) if device.startswith("cuda") else "default"
    compiled = torch.compile(model, mode=cmode, dynamic=False)
    if cmode == "reduce-overhead":
        mark = torch.compiler.cudagraph_mark_step_begin

        def fn(inp):
            mark()
            return compiled(inp)
        return fn, x
    return compiled, x


def reset_compiler(torch):
    torch._dynamo.reset()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ---- timing

def percentile(sorted_vals, q):
    """Linear-interpolated percentile (q in [0, 100]) of an ascending list."""
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = (len(sorted_vals) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def time_it(torch, fn, x, iters, warmup, device):
    cuda = device.startswith("cuda")
    for _ in range(warmup):
        fn(x)
    if cuda:
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        if cuda:
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return {"median_ms": percentile(times, 50), "p10_ms": percentile(times, 10),
            "p90_ms": percentile(times, 90)}


def measure(torch, timm, cfg, a):
    arch, precision, mode, batch = cfg
    t = time.time()
    fn, x = build(torch, timm, arch, precision, batch, mode, a.device, a.seed)
    with torch.inference_mode():
        fn(x)  # compiles (or loads from the cache) outside the timed loop
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()
        first_s = time.time() - t
        r = time_it(torch, fn, x, a.iters, a.warmup, a.device)
    r["img_per_s"] = batch / (r["median_ms"] / 1e3)
    r["first_call_s"] = round(first_s, 2)
    if mode == "compile":
        r["compile_mode"] = compile_mode(batch) if a.device.startswith("cuda") else "default"
    del fn, x
    return r


# ---- precompile phase

def precompile_one(a):
    """Subprocess body: compile one (arch, precision, batch) and run it a few times."""
    import torch
    import timm
    arch, precision, batch = a.precompile_one[0], a.precompile_one[1], int(a.precompile_one[2])
    fn, x = build(torch, timm, arch, precision, batch, "compile", a.device, a.seed)
    with torch.inference_mode():
        for _ in range(3):  # reduce-overhead records its CUDA graph after a warm-up call
            fn(x)
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()
    return 0


def precompile_all(cfgs, a, env):
    """Compiles every compile configuration in a.precompile_jobs parallel subprocesses.
    Returns {(arch, precision, batch): {"precompile_s": s} or {"error": message}}."""
    todo = [(arch, prec, batch) for arch, prec, mode, batch in cfgs if mode == "compile"]
    env = dict(env)
    # each subprocess compiles with its own worker pool: share the cores instead of oversubscribing
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS",
                   str(max(1, (os.cpu_count() or 1) // a.precompile_jobs)))
    done, running, queue = {}, [], list(todo)

    def on_term(signum, frame):  # stopped from outside: take the compile subprocesses along
        for _, proc, _, _ in running:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    log(f"precompile: {len(todo)} configurations, {a.precompile_jobs} at a time, "
        f"{env['TORCHINDUCTOR_COMPILE_THREADS']} compile threads each")
    t_phase = time.time()
    while queue or running:
        if time_left(a) <= 0:
            for key, proc, errf, t in running:
                os.killpg(proc.pid, signal.SIGKILL)  # the subprocess and its compile workers
                proc.wait()
                errf.close()
                done[key] = {"error": f"skipped: --time-limit {a.time_limit:g}s reached while "
                                      f"compiling ({time.time() - t:.0f}s in)"}
                log(f"precompile stopped {' '.join(map(str, key))}: time limit")
            for key in queue:
                done[key] = {"error": f"skipped: --time-limit {a.time_limit:g}s reached "
                                      "before compiling"}
            queue, running = [], []
            break
        while queue and len(running) < a.precompile_jobs:
            arch, prec, batch = queue.pop(0)
            cmd = [sys.executable, os.path.abspath(__file__), "--device", a.device,
                   "--seed", str(a.seed), "--precompile-one", arch, prec, str(batch)]
            errf = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errf,
                                    start_new_session=True)
            running.append(((arch, prec, batch), proc, errf, time.time()))
            log(f"precompile start {arch} {prec} batch {batch}")
        time.sleep(0.5)
        still = []
        for key, proc, errf, t in running:
            rc = proc.poll()
            if rc is None:
                still.append((key, proc, errf, t))
                continue
            errf.seek(0)
            tail = errf.read()[-3000:]
            errf.close()
            if rc != 0:
                last = [ln for ln in tail.strip().splitlines() if ln.strip()]
                done[key] = {"error": f"compile failed (exit {rc}): " + (last[-1] if last else "")}
                log(f"precompile FAILED {' '.join(map(str, key))}:\n{tail}")
            else:
                done[key] = {"precompile_s": round(time.time() - t, 1)}
                log(f"precompile done  {key[0]} {key[1]} batch {key[2]} in {time.time() - t:.1f}s")
        running = still
    log(f"precompile phase: {time.time() - t_phase:.1f}s")
    return done


def load_precompiled(path):
    """{(arch, precision, batch): row} from the --json of a --precompile-only run."""
    with open(path) as f:
        d = json.load(f)
    return {(r["arch"], r["precision"], r["batch"]): r for r in d.get("results", [])
            if r.get("mode") == "compile"}


# ---- environment description

def describe(torch, timm):
    info = {"tool": "torch", "torch": torch.__version__, "timm": timm.__version__,
            "cuda": torch.version.cuda, "gpu": None, "driver": None, "cudnn": None}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cudnn"] = torch.backends.cudnn.version()
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                  "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=30)
            info["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        except (OSError, IndexError, subprocess.TimeoutExpired):
            pass
    info["python"] = sys.version.split()[0]
    return info


def recorded_command(argv):
    """The command line for the report, with file and folder arguments cut to their base names
    (temporary paths of the machine that ran it mean nothing to a reader)."""
    out, path_next = [], False
    for arg in argv:
        if path_next:
            arg, path_next = os.path.basename(arg.rstrip("/")), False
        elif arg in ("--json", "--cache-dir", "--precompiled"):
            path_next = True
        elif arg.startswith(("--json=", "--cache-dir=", "--precompiled=")):
            k, v = arg.split("=", 1)
            arg = k + "=" + os.path.basename(v.rstrip("/"))
        out.append(arg)
    return "python3 tools/bench_torch.py " + " ".join(out)


def write_json(a, info, results):
    doc = dict(info, results=results)
    text = json.dumps(doc, indent=2)
    if a.json == "-":
        return text
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, a.json)
    return text


def main(argv):
    a = parse_args(argv)
    cache = a.cache_dir or os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    tmp = None
    if not cache:
        tmp = tempfile.TemporaryDirectory(prefix="bench_torch_inductor_")
        cache = tmp.name
    os.makedirs(cache, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(cache)
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")

    if a.precompile_one:
        return precompile_one(a)

    import torch
    import timm
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("bench_torch: CUDA is not available (use --device cpu to test the script)",
              file=sys.stderr)
        return 2
    info = describe(torch, timm)
    info.update({"iters": a.iters, "warmup": a.warmup, "device": a.device,
                 "command": recorded_command(argv)})
    log(f"torch {info['torch']} timm {info['timm']} cuda {info['cuda']} gpu {info['gpu']} "
        f"driver {info['driver']}; inductor cache {cache}")
    # precision outermost: with a --time-limit, the first precisions listed are the ones kept
    cfgs = [(arch, prec, mode, batch) for mode in a.mode for prec in a.precision
            for arch in a.arch for batch in a.batch]

    pre = {}
    if a.precompile_jobs > 0 and "compile" in a.mode:
        pre = precompile_all(cfgs, a, os.environ)
    elif a.precompiled:
        pre = load_precompiled(a.precompiled)
    if a.precompile_only:
        results = [dict({"arch": k[0], "precision": k[1], "mode": "compile", "batch": k[2]}, **v)
                   for k, v in pre.items()]
        text = write_json(a, info, results)
        if a.json == "-":
            print(text)
        return 1 if results and all("error" in r for r in results) else 0

    results = []
    t_phase = time.time()
    for cfg in cfgs:
        arch, prec, mode, batch = cfg
        row = {"arch": arch, "precision": prec, "mode": mode, "batch": batch}
        key = (arch, prec, batch)
        if time_left(a) <= 0:
            row["error"] = f"skipped: --time-limit {a.time_limit:g}s reached"
        elif mode == "compile" and (a.precompile_jobs > 0 or a.precompiled) and \
                "error" in pre.get(key, {"error": "not in the --precompiled file"}):
            row["error"] = pre.get(key, {"error": "not in the --precompiled file"})["error"]
        else:
            log(f"measure {arch} {prec} {mode} batch {batch}")
            try:
                row.update(measure(torch, timm, cfg, a))
                log(f"  median {row['median_ms']:.3f} ms (p10 {row['p10_ms']:.3f}, p90 "
                    f"{row['p90_ms']:.3f}), {row['img_per_s']:.0f} img/s, first call "
                    f"{row['first_call_s']:.1f}s")
            except Exception as e:  # one failing configuration must not stop the others
                msg = str(e).strip().splitlines()
                row["error"] = f"{type(e).__name__}: {msg[0] if msg else ''}"
                log(f"  FAILED: {traceback.format_exc()[-1500:]}")
        if "error" in row:
            log(f"  {arch} {prec} {mode} batch {batch}: {row['error']}")
        elif key in pre and "precompile_s" in pre[key]:
            row["precompile_s"] = pre[key]["precompile_s"]
        results.append(row)
        if a.json and a.json != "-":
            write_json(a, info, results)
        if mode == "compile":
            reset_compiler(torch)
        elif torch.cuda.is_available():
            torch.cuda.empty_cache()
    log(f"measure phase: {time.time() - t_phase:.1f}s")

    text = write_json(a, info, results)
    if a.json == "-":
        print(text)
    elif not a.json:
        for r in results:
            tail = r.get("error") or (f"{r['median_ms']:9.3f} ms  p10 {r['p10_ms']:.3f}  "
                                      f"p90 {r['p90_ms']:.3f}  {r['img_per_s']:10.0f} img/s")
            print(f"{r['arch']:32s} {r['precision']:5s} {r['mode']:8s} {r['batch']:4d}  {tail}")
    if tmp:
        tmp.cleanup()
    return 1 if all("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
