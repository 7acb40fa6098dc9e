#!/usr/bin/env python3
"""bench_pipeline.py - image files in, classes out: `swin classify` end to end against PyTorch.

Normally run through tools/bench_pipeline.sh, which adds the log and the markdown table:

  python3 tools/bench_pipeline.py --photos PHOTO_DIR --out OUTDIR --swin build/swin \
      [--count 10000] [--quick]

Writes OUTDIR/pipeline.json (rewritten after every step, so a run cut short keeps what it
measured); tools/pipeline_table.py turns it into the markdown section of docs/PERFORMANCE.md.
Every step records {"error": ...} when it fails and the others go on; exit 1 only when the swin
exact run failed (2: bad arguments). Progress, with timestamps, goes to stderr.

Steps (in this order; a step not started by --time-limit records "skipped"):
  env        GPU, driver, CUDA runtimes, library versions, CPUs, date
  model      random-weight timm swin_tiny_patch4_window7_224 (torch.manual_seed(0)) saved as a
             timm hub-layout directory (model.safetensors + config.json)
  files      the JPEGs of PHOTO_DIR copied round-robin into a temporary folder until there are
             --count files, rounded up to a multiple of --batch (no partial last batch, so no
             re-capture or re-compile inside a timed pass); a list file; a separate small set of
             bad files (truncated, empty, not an image, missing)
  swin       one untimed warm-up (first 512 files), then timed runs: exact (--decoder cpu:
             libjpeg on the CPU threads, GPU preprocessing), the same with whole images decoded
             (SWIN_DECODE_PART=0: the part decoding's gain in one run), --decoder gpu (exact too: JPEGs
             decoded on the GPU; the default), --preprocess-device cpu, --decoder nvjpeg
             (recorded as an error when this build has no such option); the other exact modes'
             printed results compared with --decoder cpu's file by file; the bad-file set through
             each mode that ran
  nvjpeg_ceiling  tools/nvjpeg_ceiling (--nvjpeg-ceiling; built with nvJPEG) on the same timed
             files: nvJPEG's own decoding rate, JPEG engines with 1, 2, 4 threads x batches of
             64, 256 (state set up once), and the default backend on 256 files; the best row is
             the ceiling that the table states next to swin's nvJPEG mode
  parity     `swin preprocess` against timm's eval transform and transformers' ViTImageProcessor
             (PIL backend) on every distinct photo: share of values exactly equal, largest
             difference in 8-bit levels
Every `swin classify` and `swin preprocess` gets `--pillow MAJOR` of the Pillow installed here
(PIL.__version__, recorded in the config and the parity step): Pillow 12 and 13 resize some shapes
in different pass orders, and parity is measured against the Pillow that the references use.
  one_thread `swin preprocess` against Pillow + numpy doing timm's eval transform, both pinned
             to one CPU, on the photos copied 4x
  torch      DataLoader(num_workers=cpu_count, pin_memory) + timm transform + torch.compile
             (fp16), in a subprocess with a timeout; eager fp16 too unless --quick
  agreement  top-1 of every file: swin exact vs PyTorch, nvJPEG vs exact, CPU vs GPU
             preprocessing; also only over files whose PyTorch top-1 beats the runner-up by more
             than --margin in probability (random weights make near-ties)

The copied files (about 1.2 GB for 10,000 files) live under a temporary folder that is deleted
at the end (--keep-files keeps it); nothing large is written to OUTDIR.
--device cpu runs the same steps on the CPU (swin fp32, PyTorch fp32 without pinned memory):
only to test this script on a machine without a GPU, with a small --count and --batch.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

T0 = time.time()
ARCH = "swin_tiny_patch4_window7_224"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
WARMUP_FILES = 512
ONE_THREAD_COPIES = 4

SUMMARY_RE = re.compile(r"swin classify: (\d+) images, (\d+) failed, ([0-9.]+) s, "
                        r"([0-9.]+|inf|nan) img/s")
TIMING_HEAD_RE = re.compile(r"time per stage \(ms\b([^)]*)\)")
THREADS_RE = re.compile(r"over (\d+) threads?")
SLOTS_RE = re.compile(r"([A-Za-z-]+) slots")
FALLBACK_RE = re.compile(r"(\d+) JPEGs? from (?:nvJPEG|the GPU decoder) to the CPU")
STAGE_RE = re.compile(r"([A-Za-z][\w-]*)\s+(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def log(msg):
    print(f"[bench_pipeline {time.strftime('%H:%M:%S')} +{time.time() - T0:6.1f}s] {msg}",
          file=sys.stderr, flush=True)


def err_text(e):
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def last_line(text, default="no message"):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else default


def rate(n, s):
    return n / s if s and s > 0 else None


def usable_cpus():
    try:
        return sorted(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return list(range(os.cpu_count() or 1))


def pin(cpus):
    """Best effort: some sandboxes refuse or ignore CPU affinity. True when it was set."""
    try:
        os.sched_setaffinity(0, cpus)
        return True
    except (OSError, AttributeError):
        return False


# ---- arguments

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="End-to-end benchmark of `swin classify` on JPEG files against PyTorch.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--photos", required=True,
                   help="folder of JPEG photos (*.jpg, *.jpeg, any case)")
    p.add_argument("--out", required=True, help="output folder for pipeline.json")
    p.add_argument("--swin", default=None, help="the swin binary (default: build/swin)")
    p.add_argument("--nvjpeg-ceiling", default=None,
                   help="tools/nvjpeg_ceiling built with nvJPEG (default: nvjpeg_ceiling next to "
                        "the swin binary); the step is recorded as an error when it is missing")
    p.add_argument("--count", type=int, default=10000,
                   help="timed files (rounded up to a multiple of --batch)")
    p.add_argument("--batch", type=int, default=256, help="batch size, swin and PyTorch")
    p.add_argument("--quick", action="store_true", help="skip the PyTorch eager pass")
    p.add_argument("--margin", type=float, default=1e-3,
                   help="agreement is also reported over files whose PyTorch top-1 probability "
                        "beats the runner-up by more than this")
    p.add_argument("--time-limit", type=float, default=330,
                   help="seconds for the whole run: steps not started by then are skipped and "
                        "subprocess timeouts are cut to what is left (0: no limit)")
    p.add_argument("--work-dir", default=None,
                   help="where the copied files go (default: a new folder under the temp dir)")
    p.add_argument("--keep-files", action="store_true", help="do not delete the copied files")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu only to test this script without a GPU")
    p.add_argument("--command", default=None, help="the command line to record as provenance")
    p.add_argument("--torch-worker", metavar="CONFIG", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.count < 1 or a.batch < 1:
        p.error("--count and --batch must be positive")
    return a


# ---- the report: one JSON document, rewritten after every step

class Report:
    def __init__(self, path, doc):
        self.path = path
        self.doc = doc

    def save(self):
        self.doc["elapsed_s"] = round(time.time() - T0, 1)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, self.path)


class Run:
    """Step runner: a failing step records its error, the next one goes on."""
    def __init__(self, a, report):
        self.a = a
        self.report = report

    def left(self):
        return self.a.time_limit - (time.time() - T0) if self.a.time_limit else float("inf")

    def timeout(self, cap, reserve=5.0):
        return max(5.0, min(cap, self.left() - reserve))

    def step(self, key, fn, *args, need=0.0):
        """Runs fn(*args) -> dict, stores it under doc[key]; returns it (None on failure)."""
        if self.left() < need:
            res = {"error": f"skipped: --time-limit {self.a.time_limit:g}s "
                            f"({self.left():.0f}s left, this step needs about {need:.0f}s)"}
            log(f"{key}: {res['error']}")
            self.report.doc[key] = res
            self.report.save()
            return None
        log(f"== {key}")
        t = time.time()
        try:
            res = fn(*args)
        except Exception as e:  # one failing step must not stop the others
            log(f"{key} FAILED:\n{traceback.format_exc()[-2500:]}")
            res = {"error": err_text(e)}
        res.setdefault("step_s", round(time.time() - t, 1))
        self.report.doc[key] = res
        self.report.save()
        log(f"== {key}: {'error: ' + res['error'] if 'error' in res else 'ok'} "
            f"({time.time() - t:.1f}s)")
        return None if "error" in res else res


# ---- env

def sh(cmd, timeout=30):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.stdout if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def cudart_of(binary):
    """The CUDA runtime the binary loads: the real file name of its libcudart (ldd)."""
    out = sh(["ldd", binary]) or ""
    for line in out.splitlines():
        m = re.search(r"libcudart\.so\S*\s+=>\s+(\S+)", line)
        if m:
            real = os.path.basename(os.path.realpath(m.group(1)))
            v = re.search(r"\.so\.([\d.]+)$", real)
            return v.group(1) if v else real
    return "static or not linked" if out else None


def step_env(a):
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "python": platform.python_version(), "platform": platform.platform(),
           "cpu_count": os.cpu_count(), "cpus_usable": len(usable_cpus())}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.+)", f.read())
            env["cpu"] = m.group(1).strip() if m else None
    except OSError:
        env["cpu"] = None
    q = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
            "--format=csv,noheader"])
    if q:
        first = [x.strip() for x in q.strip().splitlines()[0].split(",")]
        env.update(gpu=first[0], driver=first[1] if len(first) > 1 else None,
                   gpu_memory=first[2] if len(first) > 2 else None,
                   gpus=len(q.strip().splitlines()))
        m = re.search(r"CUDA Version:\s*([\d.]+)", sh(["nvidia-smi"]) or "")
        env["driver_cuda"] = m.group(1) if m else None
    else:
        env["gpu"] = None
        env["gpu_note"] = "nvidia-smi not found or failed"
    env["swin_cudart"] = cudart_of(a.swin) if os.path.exists(a.swin) else None
    for mod in ("torch", "torchvision", "timm", "transformers", "PIL", "numpy", "safetensors"):
        try:
            m = __import__(mod)
            env[mod if mod != "PIL" else "pillow"] = getattr(m, "__version__", "?")
        except Exception as e:
            env[mod if mod != "PIL" else "pillow"] = f"not available ({err_text(e)})"
    try:
        import torch
        env["torch_cuda"] = torch.version.cuda
    except Exception:
        pass
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rev = sh(["git", "-C", root, "rev-parse", "--short", "HEAD"])
        env["git_commit"] = rev.strip() if rev else None
    except Exception:
        env["git_commit"] = None
    try:
        du = shutil.disk_usage("/dev/shm")
        env["dev_shm_free_gib"] = round(du.free / 2**30, 1)
    except OSError:
        env["dev_shm_free_gib"] = None
    log(f"gpu {env.get('gpu')} driver {env.get('driver')} swin cudart {env.get('swin_cudart')} "
        f"torch {env.get('torch')} timm {env.get('timm')} cpus {env['cpu_count']}")
    return env


# ---- model

def step_model(a, ctx):
    import torch
    import timm
    import safetensors.torch as st
    from pathlib import Path
    from timm.models._hub import save_config_for_hf
    torch.manual_seed(0)
    model = timm.create_model(ARCH, pretrained=False).eval()
    d = os.path.join(ctx["work"], "model")
    os.makedirs(d, exist_ok=True)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    st.save_file(sd, os.path.join(d, "model.safetensors"))
    save_config_for_hf(model, Path(d) / "config.json")
    dcfg = timm.data.resolve_data_config({}, model=model)
    ctx["model_dir"] = d
    ctx["data_config"] = dcfg
    return {"arch": ARCH, "seed": 0, "pretrained": False,
            "params": sum(p.numel() for p in model.parameters()),
            "data_config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in dcfg.items()}}


# ---- files

def list_photos(folder):
    names = sorted(n for n in os.listdir(folder)
                   if n.lower().endswith((".jpg", ".jpeg")) and not n.startswith(".")
                   and os.path.isfile(os.path.join(folder, n)))
    return [os.path.abspath(os.path.join(folder, n)) for n in names]


def write_list(path, files):
    with open(path, "w") as f:
        f.write("".join(p + "\n" for p in files))
    return path


def make_bad_set(folder, photos):
    """A few good and bad files; returns [(path, kind)]. 'missing' is listed, never written."""
    os.makedirs(folder, exist_ok=True)
    with open(photos[0], "rb") as f:
        good = f.read()
    items = []

    def put(name, data, kind):
        p = os.path.join(folder, name)
        if data is not None:
            with open(p, "wb") as f:
                f.write(data)
        items.append((p, kind))
    put("good_first.jpg", good, "good")
    put("truncated_half.jpg", good[:len(good) // 2], "truncated (first half of a JPEG)")
    put("empty.jpg", b"", "empty file")
    put("text.jpg", b"this is not an image\n" * 20, "text named .jpg")
    rnd = bytes((i * 1103515245 + 12345) >> 16 & 0xFF for i in range(4096))
    put("soi_then_garbage.jpg", b"\xff\xd8\xff\xe0" + rnd, "JPEG SOI marker then garbage")
    put("missing.jpg", None, "listed but does not exist")
    with open(photos[-1], "rb") as f:
        put("good_last.jpg", f.read(), "good")
    return items


def pil_outcome(path):
    from PIL import Image
    try:
        with Image.open(path) as im:
            im.convert("RGB")
        return "ok"
    except Exception as e:
        return err_text(e)


def step_files(a, ctx):
    photos = list_photos(a.photos)
    if not photos:
        raise RuntimeError(f"{a.photos}: no .jpg/.jpeg files")
    n = int(math.ceil(a.count / a.batch) * a.batch)
    d = os.path.join(ctx["work"], "files")
    os.makedirs(d, exist_ok=True)
    t = time.time()
    files = []
    for i in range(n):
        src = photos[i % len(photos)]
        stem = os.path.splitext(os.path.basename(src))[0]
        dst = os.path.join(d, f"{i:06d}_{stem}.jpg")
        shutil.copyfile(src, dst)
        files.append(dst)
    copy_s = time.time() - t
    ctx["photos"] = photos
    ctx["files"] = files
    ctx["photo_of"] = [i % len(photos) for i in range(n)]
    ctx["list"] = write_list(os.path.join(ctx["work"], "files.txt"), files)
    ctx["warm_list"] = write_list(os.path.join(ctx["work"], "warmup.txt"), files[:WARMUP_FILES])
    bad = make_bad_set(os.path.join(ctx["work"], "bad"), photos)
    ctx["bad"] = bad
    ctx["bad_list"] = write_list(os.path.join(ctx["work"], "bad.txt"), [p for p, _ in bad])
    total = sum(os.path.getsize(p) for p in photos)
    log(f"{n} files ({len(photos)} distinct photos, {total * n / len(photos) / 2**20:.0f} MiB) "
        f"in {copy_s:.1f}s under {d}")
    return {"count": n, "count_requested": a.count, "distinct_photos": len(photos),
            "photo_names": [os.path.basename(p) for p in photos],
            "mean_photo_bytes": round(total / len(photos)), "copy_s": round(copy_s, 2),
            "bad_set": [{"file": os.path.basename(p), "kind": k,
                         "pillow": pil_outcome(p).replace(os.path.dirname(p) + os.sep, "")
                         if os.path.exists(p) else "no such file"} for p, k in bad]}


# ---- swin runs

def installed_pillow():
    """The installed Pillow's version and major version, or (None, None)."""
    try:
        import PIL
        return PIL.__version__, int(PIL.__version__.split(".")[0])
    except Exception:
        return None, None


def pillow_flag(a):
    """`--pillow MAJOR` for swin: resize in the installed Pillow's pass order."""
    return ["--pillow", str(a.pillow_major)] if a.pillow_major else []


SWIN_RUN_MODES = ("exact", "exact_whole", "exact_gpu", "cpu_preprocess", "nvjpeg")


def swin_env(mode):
    """What a mode sets in swin's environment (exact_whole: libjpeg decodes whole images)."""
    return {"SWIN_DECODE_PART": "0"} if mode == "exact_whole" else {}


def swin_argv(a, ctx, mode, list_path):
    argv = [a.swin, "classify", "--model", ctx["model_dir"], "--device", a.device,
            "--precision", "fp16" if a.device == "cuda" else "fp32", "--batch", str(a.batch),
            "--json", "--timing", "--list", list_path] + pillow_flag(a)
    if mode in ("exact", "exact_whole"):
        argv += ["--decoder", "cpu"]
    elif mode == "cpu_preprocess":
        argv += ["--preprocess-device", "cpu"]
    elif mode == "nvjpeg":
        argv += ["--decoder", "nvjpeg"]
    elif mode == "exact_gpu":
        argv += ["--decoder", "gpu"]
    return argv


def shown(argv, ctx):
    """The command with the temporary paths replaced by names."""
    names = {ctx.get("model_dir"): "MODEL_DIR", ctx.get("list"): "FILES.txt",
             ctx.get("warm_list"): "FIRST512.txt", ctx.get("bad_list"): "BAD.txt"}
    return " ".join(names.get(x, "swin" if i == 0 else x) for i, x in enumerate(argv))


def parse_timing(err):
    lines = err.splitlines()
    for i, line in enumerate(lines):
        m = TIMING_HEAD_RE.search(line)
        if not m:
            continue
        t = {"header": line.strip()}
        th, sl = THREADS_RE.search(line), SLOTS_RE.search(line)
        t["threads"] = int(th.group(1)) if th else None
        t["slots"] = sl.group(1) if sl else None
        fb = FALLBACK_RE.search(line)
        t["nvjpeg_to_cpu"] = int(fb.group(1)) if fb else None
        stages = {}
        for nxt in lines[i + 1:i + 4]:
            if not nxt[:1].isspace():
                break
            for k, v in STAGE_RE.findall(nxt):
                stages[k] = float(v)
        t["stages_ms"] = stages
        return t
    return None


def parse_results(path, full=None):
    """{file: top-1 index} and {file: error} from `swin classify --json` stdout; full (a dict),
    when given, receives {file: the whole top-k list as printed (indices and probabilities)}."""
    top1, errors, junk = {}, {}, 0
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError:
                junk += 1
                continue
            if "error" in o:
                errors[o.get("file")] = o["error"]
            elif o.get("top"):
                top1[o.get("file")] = o["top"][0].get("index")
                if full is not None:
                    full[o.get("file")] = json.dumps(o["top"], sort_keys=True)
    return top1, errors, junk


def run_swin(a, ctx, run, mode, list_path, cap, full=None):
    argv = swin_argv(a, ctx, mode, list_path)
    out_path = os.path.join(ctx["work"], f"swin_{mode}_{os.path.basename(list_path)}.jsonl")
    env = swin_env(mode)
    res = {"mode": mode, "command": "".join(f"{k}={v} " for k, v in env.items()) + shown(argv, ctx)}
    log(f"$ {res['command']}")
    t = time.time()
    try:
        with open(out_path, "w") as out:
            p = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True,
                               errors="replace", timeout=run.timeout(cap), env=dict(os.environ, **env))
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        err = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes)
               else (e.stderr or "")) + f"\ntimed out after {e.timeout:.0f}s"
    except OSError as e:
        rc, err = "not run", f"cannot run {a.swin}: {e.strerror}"
    wall = time.time() - t
    res.update(rc=rc, wall_s=round(wall, 3))
    tail = [ln for ln in err.splitlines() if ln.strip()]
    res["stderr_tail"] = tail[-12:]
    m = None
    for line in err.splitlines():
        m = SUMMARY_RE.search(line) or m
    if m:
        res.update(images=int(m.group(1)), failed=int(m.group(2)), swin_s=float(m.group(3)),
                   swin_img_per_s=float(m.group(4)))
        res["process_img_per_s"] = rate(res["images"], wall)
        res["timing"] = parse_timing(err)
    else:
        res["error"] = f"exit {rc}: {last_line(err)}"
    top1, errors, junk = ({}, {}, 0)
    if os.path.exists(out_path):
        top1, errors, junk = parse_results(out_path, full)
        os.remove(out_path)
    res.update(stdout_results=len(top1), stdout_errors=len(errors), stdout_unparsed=junk)
    log(f"  exit {rc}, {wall:.2f}s wall" + (f", swin: {res['images']} images, {res['failed']} "
                                            f"failed, {res['swin_img_per_s']:.1f} img/s"
                                            if m else f": {res.get('error')}"))
    return res, top1, errors


def photo_consistency(ctx, top1):
    """How many photos got one top-1 over all their copies, and how many distinct classes."""
    by_photo = {}
    for f, k in zip(ctx["files"], ctx["photo_of"]):
        if top1.get(f) is not None:
            by_photo.setdefault(k, set()).add(top1[f])
    return {"photos_consistent": sum(1 for s in by_photo.values() if len(s) == 1),
            "photos_seen": len(by_photo),
            "top1_classes": len(set().union(*by_photo.values())) if by_photo else 0}


def step_swin(a, ctx, run):
    res = {}
    if not os.access(a.swin, os.X_OK):
        raise RuntimeError(f"{a.swin}: not an executable file (pass --swin PATH)")
    warm, _, _ = run_swin(a, ctx, run, "exact", ctx["warm_list"], 120)
    res["warmup"] = {k: warm.get(k) for k in ("command", "rc", "wall_s", "images", "failed",
                                              "swin_img_per_s", "error") if k in warm}
    ctx["top1"] = {}
    full = {"exact": {}, "exact_whole": {}, "exact_gpu": {}}   # the whole printed top-5 of the exact modes
    for mode in SWIN_RUN_MODES:
        if run.left() < 15:
            res[mode] = {"mode": mode, "error": "skipped: --time-limit reached"}
            continue
        r, top1, _ = run_swin(a, ctx, run, mode, ctx["list"], 180, full.get(mode))
        if "error" not in r:
            r.update(photo_consistency(ctx, top1))
            ctx["top1"][mode] = top1
        res[mode] = r
        run.report.doc["swin"] = res
        run.report.save()
    for mode in ("exact_whole", "exact_gpu"):
        if full["exact"] and full[mode] and isinstance(res.get(mode), dict):
            same = sum(1 for f, v in full["exact"].items() if full[mode].get(f) == v)
            res[mode]["identical_to_exact"] = {"files": len(full["exact"]), "identical": same}
            log(f"  {mode} vs --decoder cpu: {same}/{len(full['exact'])} files with identical "
                "top-5 indices and probabilities")
    return res


def step_bad(a, ctx, run):
    """The bad-file set through every swin mode that ran: each file reported, the others go on."""
    res = {"files": [{"file": os.path.basename(p), "kind": k} for p, k in ctx["bad"]]}
    ref = ctx["top1"].get("exact", {})
    photo_index = {p: i for i, p in enumerate(ctx["photos"])}
    good_ref = {}
    for p, k in ctx["bad"]:
        if k == "good":  # the same bytes as a photo: compare with that photo's top-1 in exact
            src = ctx["photos"][0] if os.path.basename(p) == "good_first.jpg" else ctx["photos"][-1]
            i = photo_index[src]
            good_ref[p] = next((ref[f] for f, j in zip(ctx["files"], ctx["photo_of"])
                                if j == i and f in ref), None)
    for mode in SWIN_RUN_MODES:
        if mode not in ctx["top1"]:
            continue
        r, top1, errors = run_swin(a, ctx, run, mode, ctx["bad_list"], 60)
        per = {}
        for p, k in ctx["bad"]:
            b = os.path.basename(p)
            if p in top1:
                per[b] = "classified"
                if p in good_ref and good_ref[p] is not None:
                    per[b] += (" (same top-1 as in the timed run)" if top1[p] == good_ref[p]
                               else " (top-1 DIFFERS from the timed run)")
            elif p in errors:
                per[b] = "error: " + errors[p].replace(os.path.dirname(p) + os.sep, "")
            else:
                per[b] = "no output line"
        res[mode] = {"command": r["command"], "rc": r["rc"], "images": r.get("images"),
                     "failed": r.get("failed"), "per_file": per}
        if "error" in r and r.get("images") is None:
            res[mode]["error"] = r["error"]
    return res


# ---- nvJPEG's own ceiling on the timed files

CEILING_ARGS = ["--threads", "1,2,4", "--batch", "64,256", "--init", "once",
                "--default-images", "256"]


def parse_ceiling(text):
    """Rows, the best line and the preamble of tools/nvjpeg_ceiling's output."""
    keys = ("backend", "threads", "batch", "init", "format", "interp", "images", "refused",
            "seconds", "img_per_s")
    res = {"rows": [], "about": []}
    for line in text.splitlines():
        f = line.split()
        if len(f) == len(keys) and f[0] in ("hardware", "default"):
            try:
                row = dict(zip(keys, f))
                for k in ("threads", "batch", "interp", "images", "refused"):
                    row[k] = int(row[k])
                row["seconds"] = float(row["seconds"])
                row["img_per_s"] = float(row["img_per_s"])
                res["rows"].append(row)
            except ValueError:
                pass
        elif line.startswith("best: "):
            res["best_line"] = line.strip()
        elif line.startswith("nvjpeg_ceiling: "):
            res["about"].append(line[len("nvjpeg_ceiling: "):].strip())
    hw = [r for r in res["rows"] if r["backend"] == "hardware"]
    if hw:
        best = max(hw, key=lambda r: r["img_per_s"])
        res["best"] = best
        res["img_per_s"] = best["img_per_s"]
    return res


def step_nvjpeg_ceiling(a, ctx, run):
    if a.device != "cuda":
        raise RuntimeError("not run: --device cpu")
    if not os.access(a.nvjpeg_ceiling, os.X_OK):
        raise RuntimeError(f"{a.nvjpeg_ceiling}: not built (CMake builds it when it finds nvJPEG; "
                           "or pass --nvjpeg-ceiling PATH)")
    argv = [a.nvjpeg_ceiling] + CEILING_ARGS + ["--list", ctx["list"]]
    cmd = " ".join([os.path.basename(a.nvjpeg_ceiling)] + CEILING_ARGS + ["--list", "FILES.txt"])
    log(f"$ {cmd}")
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                           timeout=run.timeout(120))
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"{cmd}: timed out after {e.timeout:.0f}s")
    for line in p.stdout.splitlines():
        log(f"  {line}")
    res = parse_ceiling(p.stdout)
    res.update(command=cmd, rc=p.returncode)
    if p.returncode != 0 or "best" not in res:
        res["error"] = f"exit {p.returncode}: {last_line(p.stderr, last_line(p.stdout))}"
    return res


# ---- preprocessing parity and the one-thread comparison

def swin_preprocess(a, ctx, files, out, style=None, cpu=None, timeout=120):
    argv = [a.swin, "preprocess", "--model", ctx["model_dir"], "--out", out] + pillow_flag(a)
    if style:
        argv += ["--preprocess", style]
    argv += files
    env = dict(os.environ, OMP_NUM_THREADS="1") if cpu is not None else None
    pre = (lambda: pin({cpu})) if cpu is not None else None
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout,
                       env=env, preexec_fn=pre)
    s = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"swin preprocess exit {p.returncode}: {last_line(p.stderr)}")
    return s


def compare(ours, ref, std):
    """Share of values exactly equal, largest and mean difference in 8-bit levels."""
    import numpy as np
    if ours.shape != ref.shape:
        raise RuntimeError(f"shape {list(ours.shape)} vs reference {list(ref.shape)}")
    d = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    levels = d * (np.asarray(std, dtype=np.float64) * 255.0)[None, :, None, None]
    equal = ours == ref
    return {"images": int(ours.shape[0]), "values": int(ours.size),
            "equal_fraction": float(equal.mean()),
            "max_levels": int(np.rint(levels.max())) if levels.size else 0,
            "max_levels_exact": float(levels.max()) if levels.size else 0.0,
            "mean_abs_levels": float(levels.mean()),
            "images_identical": int(equal.reshape(equal.shape[0], -1).all(1).sum()),
            "values_over_1_level": int((np.rint(levels) > 1).sum())}


def hf_processor():
    try:  # transformers 5.x: the PIL backend has its own class
        from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil as P
    except ImportError:  # 4.x: ViTImageProcessor is the PIL one
        from transformers import ViTImageProcessor as P
    return P(size={"height": 224, "width": 224}, resample=3, image_mean=list(IMAGENET_MEAN),
             image_std=list(IMAGENET_STD)), P.__name__


def pil_numpy_transform(path, size=224, crop_pct=0.9, mean=IMAGENET_MEAN, std=IMAGENET_STD):
    """timm's eval transform with Pillow and numpy: shorter side to floor(size / crop_pct)
    (bicubic), center crop, /255, normalise, CHW float32."""
    import numpy as np
    from PIL import Image
    scale = math.floor(size / crop_pct)
    with Image.open(path) as im:
        im = im.convert("RGB")
    w, h = im.size
    if w <= h:
        nw, nh = scale, int(scale * h / w)
    else:
        nw, nh = int(scale * w / h), scale
    im = im.resize((nw, nh), Image.Resampling.BICUBIC)
    left, top = int(round((nw - size) / 2.0)), int(round((nh - size) / 2.0))
    im = im.crop((left, top, left + size, top + size))
    x = np.asarray(im, dtype=np.float32) / np.float32(255.0)
    x = (x - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def step_parity(a, ctx, run):
    import numpy as np
    from PIL import Image
    import timm.data
    from safetensors.numpy import load_file
    photos = ctx["photos"]
    res = {"photos": len(photos), "pillow": a.pillow_version, "swin_pillow": a.pillow_major}
    std = ctx["data_config"].get("std", IMAGENET_STD)

    def one(name, style, reference):
        try:
            out = os.path.join(ctx["work"], f"parity_{name}.safetensors")
            swin_preprocess(a, ctx, photos, out, style=style, timeout=run.timeout(120))
            ours = load_file(out)["input"]
            os.remove(out)
            r = compare(ours, reference(), std)
            log(f"  {name}: {100 * r['equal_fraction']:.4f}% of values equal, max "
                f"{r['max_levels']} levels, {r['images_identical']}/{r['images']} identical")
        except Exception as e:
            log(f"  {name} FAILED:\n{traceback.format_exc()[-1500:]}")
            r = {"error": err_text(e)}
        res[name] = r

    tf = timm.data.create_transform(**ctx["data_config"])

    def timm_ref():
        out = []
        for p in photos:
            with Image.open(p) as im:
                out.append(tf(im.convert("RGB")).numpy().astype(np.float32))
        return np.stack(out)

    def hf_ref():
        proc, cls = hf_processor()
        res["hf_processor"] = cls
        out = []
        for p in photos:
            with Image.open(p) as im:
                out.append(proc(im.convert("RGB"), return_tensors="np")["pixel_values"][0])
        return np.stack(out).astype(np.float32)

    one("timm", None, timm_ref)
    res["timm"]["reference"] = "timm.data.create_transform(**resolve_data_config({}, model))"
    one("hf", "hf", hf_ref)
    res["hf"]["reference"] = ("ViTImageProcessor(size 224x224, resample=3 bicubic, ImageNet "
                              "mean/std), PIL backend")
    try:  # the Pillow+numpy baseline of the one-thread timing does timm's transform too
        ours = np.stack([pil_numpy_transform(p) for p in photos])
        r = compare(ours, timm_ref(), std)
        res["pillow_numpy_vs_timm"] = r
    except Exception as e:
        res["pillow_numpy_vs_timm"] = {"error": err_text(e)}
    return res


def step_one_thread(a, ctx, run):
    import numpy as np
    reps = 3
    n = len(ctx["photos"]) * ONE_THREAD_COPIES
    files = ctx["files"][:n]  # round-robin copies: the photos, 4 times
    if len(files) < n:  # a --count below that: the originals, each named 4 times
        files = [ctx["photos"][i % len(ctx["photos"])] for i in range(n)]
    cpu = usable_cpus()[-1]
    # the tensors go to /dev/null: the Pillow + numpy side keeps its arrays in memory and writes
    # no file either (the 118 MB file is work the comparison should not charge to swin)
    out = os.devnull
    tmo = run.timeout(120)
    res = {"files": len(files), "cpu": cpu, "repeats": reps,
           "swin_command": " ".join(["swin preprocess --model MODEL_DIR --out /dev/null"] +
                                    pillow_flag(a)) +
                           f" <{len(files)} files> (pinned to CPU {cpu}, OMP_NUM_THREADS=1)"}
    swin_preprocess(a, ctx, files[:8], out, cpu=cpu, timeout=tmo)  # warm-up
    one = [swin_preprocess(a, ctx, files[:1], out, cpu=cpu, timeout=tmo) for _ in range(reps)]
    full = [swin_preprocess(a, ctx, files, out, cpu=cpu, timeout=tmo) for _ in range(reps)]
    s_full, s_one = min(full), min(one)
    res["swin"] = {"runs_s": [round(x, 4) for x in full], "best_s": round(s_full, 4),
                   "img_per_s": rate(len(files), s_full),
                   "startup_s": round(s_one, 4),
                   "img_per_s_after_startup": rate(len(files) - 1, s_full - s_one)}
    try:
        import torch
        torch.set_num_threads(1)
    except Exception:
        pass
    old = usable_cpus()
    res["pinned"] = pin({cpu})
    try:
        buf = np.empty((len(files), 3, 224, 224), dtype=np.float32)
        for p in files[:8]:
            pil_numpy_transform(p)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            for i, p in enumerate(files):
                buf[i] = pil_numpy_transform(p)
            times.append(time.perf_counter() - t)
    finally:
        pin(set(old))
    res["pillow_numpy"] = {"runs_s": [round(x, 4) for x in times], "best_s": round(min(times), 4),
                           "img_per_s": rate(len(files), min(times))}
    sw = res["swin"]["img_per_s_after_startup"]
    pn = res["pillow_numpy"]["img_per_s"]
    res["ratio"] = sw / pn if sw and pn else None
    res["ratio_with_startup"] = (res["swin"]["img_per_s"] / pn
                                 if res["swin"]["img_per_s"] and pn else None)
    log(f"  swin {res['swin']['img_per_s']:.1f} img/s ({sw or 0:.1f} after {s_one:.2f}s startup),"
        f" Pillow+numpy {pn:.1f} img/s")
    return res


# ---- PyTorch, in a subprocess

def step_torch(a, ctx, run):
    cfg = {"device": a.device, "list": ctx["list"], "model_dir": ctx["model_dir"],
           "batch": a.batch, "workers": os.cpu_count() or 1, "eager": not a.quick,
           "out": os.path.join(ctx["work"], "torch_result.json"),
           "cache": os.path.join(ctx["work"], "inductor")}
    cfg_path = os.path.join(ctx["work"], "torch_config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    tmo = run.timeout(300, reserve=10)
    argv = [sys.executable, os.path.abspath(__file__), "--photos", a.photos, "--out", a.out,
            "--torch-worker", cfg_path]
    log(f"torch worker, timeout {tmo:.0f}s")
    rc = None
    p = subprocess.Popen(argv, start_new_session=True)  # stderr: ours (progress is logged)
    try:
        rc = p.wait(timeout=tmo)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the worker, its DataLoader and compile workers
        p.wait()
        rc = f"killed after {tmo:.0f}s (time limit)"
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    log(f"torch worker exit {rc}")
    res = {"rc": rc}
    try:
        with open(cfg["out"]) as f:
            res.update(json.load(f))
    except (OSError, ValueError) as e:
        res["error"] = f"worker exit {rc}, no result ({err_text(e)})"
    for k in ("compile", "eager"):
        if k in res and "top1" in res[k]:
            ctx.setdefault("torch_top1", {})[k] = res[k].pop("top1")
            ctx.setdefault("torch_margin", {})[k] = res[k].pop("margin")
    if rc != 0 and "error" not in res:
        res["worker_error"] = f"worker exit {rc}"
        for k in ("compile", "eager"):
            if k == "compile" or not a.quick:
                res.setdefault(k, {"error": f"not finished: worker exit {rc}"})
    return res


class Files:
    """torch Dataset over image paths: PIL open + convert('RGB') + the transform."""
    def __init__(self, paths, tf):
        self.paths, self.tf = paths, tf

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.paths[i]) as im:
            return self.tf(im.convert("RGB"))


def torch_worker(cfg_path):
    with open(cfg_path) as f:
        cfg = json.load(f)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cfg["cache"]  # a cold compile, nothing kept
    out = {}

    def save():
        with open(cfg["out"] + ".tmp", "w") as f:
            json.dump(out, f)
        os.replace(cfg["out"] + ".tmp", cfg["out"])

    import torch
    import timm
    import timm.data
    from safetensors.torch import load_file
    from torch.utils.data import DataLoader
    dev = cfg["device"]
    cuda = dev == "cuda"
    if cuda and not torch.cuda.is_available():
        out["error"] = "CUDA is not available to torch"
        save()
        return 2
    out["env"] = {"torch": torch.__version__, "timm": timm.__version__, "cuda": torch.version.cuda,
                  "gpu": torch.cuda.get_device_name(0) if cuda else None,
                  "cudnn": torch.backends.cudnn.version() if cuda else None}
    torch.manual_seed(0)
    model = timm.create_model(ARCH, pretrained=False)
    model.load_state_dict(load_file(os.path.join(cfg["model_dir"], "model.safetensors")))
    dcfg = timm.data.resolve_data_config({}, model=model)
    tf = timm.data.create_transform(**dcfg)
    dtype = torch.float16 if cuda else torch.float32
    model = model.to(dev, dtype).eval()
    with open(cfg["list"]) as f:
        paths = [ln.rstrip("\n") for ln in f if ln.strip()]
    ds = Files(paths, tf)
    B = cfg["batch"]
    out["setup"] = {"files": len(paths), "batch": B, "num_workers": cfg["workers"],
                    "pin_memory": cuda, "dtype": str(dtype).replace("torch.", ""),
                    "transform": repr(tf).replace("\n", " ")}
    # each worker hands whole float32 batches over through /dev/shm, 2 in flight per worker
    need = cfg["workers"] * 2 * B * 3 * 224 * 224 * 4
    try:
        free = shutil.disk_usage("/dev/shm").free
        out["setup"]["dev_shm_free_gib"] = round(free / 2**30, 1)
        if free < need:
            print(f"[torch worker] warning: /dev/shm has {free / 2**30:.1f} GiB free, the "
                  f"DataLoader may need {need / 2**30:.1f} GiB", file=sys.stderr, flush=True)
    except OSError:
        pass
    save()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def one_pass(fn, name):
        top1, margin = [], []
        first = None
        sync()
        t0 = time.perf_counter()
        loader = DataLoader(ds, batch_size=B, shuffle=False, num_workers=cfg["workers"],
                            pin_memory=cuda, persistent_workers=False)
        with torch.inference_mode():
            for x in loader:
                n = x.shape[0]
                x = x.to(dev, non_blocking=True).to(dtype)
                if n < B:  # never with the rounded count; keeps one shape for the compiled model
                    x = torch.cat([x, x.new_zeros((B - n,) + tuple(x.shape[1:]))])
                logits = fn(x)[:n]
                p = logits.float().softmax(1)
                v, i = p.topk(2, dim=1)
                top1.append(i[:, 0].cpu())
                margin.append((v[:, 0] - v[:, 1]).cpu())
                if first is None:
                    first = time.perf_counter() - t0
        wall = time.perf_counter() - t0
        top1 = torch.cat(top1).tolist()
        margin = torch.cat(margin).tolist()
        n = len(top1)
        r = {"images": n, "wall_s": round(wall, 3), "img_per_s": rate(n, wall),
             "first_batch_s": round(first, 3) if first is not None else None,
             "img_per_s_after_first_batch": rate(n - B, wall - first) if first and n > B else None,
             "top1": top1, "margin": margin}
        print(f"[torch worker {time.strftime('%H:%M:%S')}] {name}: {n} images in {wall:.2f}s, "
              f"{r['img_per_s'] or 0:.1f} img/s (first batch after {first or 0:.2f}s)",
              file=sys.stderr, flush=True)
        return r

    # torch.compile (mode default), compiled and warmed up on a random batch before timing
    try:
        t = time.perf_counter()
        compiled = torch.compile(model)
        with torch.inference_mode():  # the timed pass runs in inference mode too
            x = torch.randn(B, 3, *dcfg["input_size"][1:], device=dev).to(dtype)
            compiled(x)
            sync()
            compile_s = time.perf_counter() - t
            for _ in range(3):
                compiled(x)
            sync()
        del x
        print(f"[torch worker] compiled in {compile_s:.1f}s", file=sys.stderr, flush=True)
        r = one_pass(compiled, "DataLoader + torch.compile")
        r["compile_s"] = round(compile_s, 1)
        r["mode"] = "torch.compile(model), mode default"
        out["compile"] = r
    except Exception as e:
        traceback.print_exc()
        out["compile"] = {"error": err_text(e)}
    save()
    if cfg["eager"]:
        try:
            r = one_pass(model, "DataLoader + eager")
            r["mode"] = "eager"
            out["eager"] = r
        except Exception as e:
            traceback.print_exc()
            out["eager"] = {"error": err_text(e)}
        save()
    return 0 if "error" not in out.get("compile", {}) else 1


# ---- agreement

def at(x, i, f):
    """Top-1 of file f (index i): swin results are keyed by path, PyTorch's are in list order."""
    if isinstance(x, dict):
        return x.get(f)
    return x[i] if i < len(x) else None


def agree(files, a, b, margin=None, thr=None):
    pairs = [(at(a, i, f), at(b, i, f), at(margin, i, f) if margin else None)
             for i, f in enumerate(files)]
    pairs = [p for p in pairs if p[0] is not None and p[1] is not None]
    same = sum(1 for x, y, _ in pairs if x == y)
    r = {"files": len(pairs), "same": same, "fraction": same / len(pairs) if pairs else None}
    if margin is not None:
        sel = [(x, y) for x, y, m in pairs if m is not None and m > thr]
        s2 = sum(1 for x, y in sel if x == y)
        r.update(margin_files=len(sel), margin_same=s2,
                 margin_fraction=s2 / len(sel) if sel else None)
    return r


def step_agreement(a, ctx):
    files = ctx.get("files") or []
    sw = ctx.get("top1", {})
    tt = ctx.get("torch_top1", {})
    tm = ctx.get("torch_margin", {})
    ref_margin = tm.get("compile") or tm.get("eager")
    res = {"margin_threshold": a.margin, "pairs": []}
    if ref_margin:
        res["files_over_margin"] = sum(1 for m in ref_margin if m > a.margin)
        res["files"] = len(ref_margin)
        s = sorted(ref_margin)
        res["margin_median"] = s[len(s) // 2]
    pairs = [("swin exact", "PyTorch torch.compile", sw.get("exact"), tt.get("compile")),
             ("swin exact", "PyTorch eager", sw.get("exact"), tt.get("eager")),
             ("swin exact, whole images decoded", "swin exact", sw.get("exact_whole"), sw.get("exact")),
             ("swin exact, GPU decoding", "swin exact", sw.get("exact_gpu"), sw.get("exact")),
             ("swin nvJPEG", "swin exact", sw.get("nvjpeg"), sw.get("exact")),
             ("swin CPU preprocessing", "swin exact", sw.get("cpu_preprocess"), sw.get("exact")),
             ("PyTorch eager", "PyTorch torch.compile", tt.get("eager"), tt.get("compile"))]
    for x, y, ax, by in pairs:
        if ax is None or by is None:
            continue
        r = agree(files, ax, by, ref_margin, a.margin)
        r.update(a=x, b=y)
        res["pairs"].append(r)
        log(f"  {x} vs {y}: {r['same']}/{r['files']} same top-1"
            + (f"; margin > {a.margin:g}: {r['margin_same']}/{r['margin_files']}"
               if "margin_files" in r else ""))
    for k, v in tt.items():
        by_photo = {}
        for f_i, k2 in enumerate(ctx["photo_of"][:len(v)]):
            by_photo.setdefault(k2, set()).add(v[f_i])
        res[f"torch_{k}_top1_classes"] = len(set().union(*by_photo.values())) if by_photo else 0
        res[f"torch_{k}_photos_consistent"] = sum(1 for s in by_photo.values() if len(s) == 1)
        res[f"torch_{k}_photos_seen"] = len(by_photo)
    # the top-1 of each distinct photo (its first copy) in every run, to look at by hand
    runs = [(f"swin {k}", v) for k, v in sw.items()] + [(f"torch {k}", v) for k, v in tt.items()]
    per = []
    for i, name in enumerate(os.path.basename(p) for p in ctx["photos"]):
        row = {"photo": name}
        if i < len(files):
            for label, v in runs:
                row[label] = at(v, i, files[i])
            if ref_margin and i < len(ref_margin):
                row["torch margin"] = ref_margin[i]
        per.append(row)
    res["per_photo"] = per
    if not res["pairs"]:
        raise RuntimeError("no two runs with top-1 results to compare")
    return res


# ---- main

def main(argv):
    a = parse_args(argv)
    if a.torch_worker:
        rc = torch_worker(a.torch_worker)
        sys.stderr.flush()
        os._exit(rc)  # results are saved: no waiting on DataLoader / compile-pool teardown
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    a.swin = os.path.abspath(a.swin or os.path.join(root, "build", "swin"))
    a.nvjpeg_ceiling = os.path.abspath(a.nvjpeg_ceiling or
                                       os.path.join(os.path.dirname(a.swin), "nvjpeg_ceiling"))
    a.pillow_version, a.pillow_major = installed_pillow()
    if not os.path.isdir(a.photos):
        print(f"bench_pipeline: {a.photos}: not a folder", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(128 + s))  # so the files get deleted
    report = Report(os.path.join(a.out, "pipeline.json"), {
        "tool": "bench_pipeline",
        "command": a.command or "python3 tools/bench_pipeline.py " + " ".join(argv),
        "config": {"count_requested": a.count, "batch": a.batch, "quick": a.quick,
                   "margin": a.margin, "device": a.device,
                   "precision": "fp16" if a.device == "cuda" else "fp32",
                   "photo_dir": os.path.abspath(a.photos), "swin": a.swin,
                   "time_limit_s": a.time_limit, "pillow": a.pillow_version,
                   "swin_pillow_flag": " ".join(pillow_flag(a)) or None}})
    run = Run(a, report)
    work = a.work_dir or tempfile.mkdtemp(prefix="bench_pipeline_")
    os.makedirs(work, exist_ok=True)
    ctx = {"work": os.path.abspath(work)}
    log(f"work folder {ctx['work']}; time limit {a.time_limit:g}s")
    try:
        run.step("env", step_env, a)
        ok_model = run.step("model", step_model, a, ctx)
        ok_files = run.step("files", step_files, a, ctx) if ok_model else None
        if ok_files:
            run.step("swin", step_swin, a, ctx, run, need=20)
            if ctx.get("top1"):
                run.step("bad_files", step_bad, a, ctx, run, need=20)
            run.step("nvjpeg_ceiling", step_nvjpeg_ceiling, a, ctx, run, need=20)
            run.step("parity", step_parity, a, ctx, run, need=15)
            run.step("one_thread", step_one_thread, a, ctx, run, need=30)
            run.step("torch", step_torch, a, ctx, run, need=60)
            run.step("agreement", step_agreement, a, ctx)
        else:
            for k in ("swin", "nvjpeg_ceiling", "parity", "one_thread", "torch", "agreement"):
                report.doc[k] = {"error": "not run: " + ("model" if not ok_model else "files")
                                 + " step failed"}
        report.save()
    finally:
        if not a.keep_files and not a.work_dir:
            shutil.rmtree(ctx["work"], ignore_errors=True)
            log(f"deleted {ctx['work']}")
    exact = report.doc.get("swin", {}).get("exact", {})
    ok = (isinstance(exact, dict) and "error" not in exact and exact.get("images")
          and exact.get("failed", 0) < exact["images"])
    log(f"done in {time.time() - T0:.0f}s; swin exact run {'ok' if ok else 'FAILED'}; "
        f"{report.path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
