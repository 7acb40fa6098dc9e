#!/usr/bin/env python3
"""precision_floor.py - how sensitive a model and its reference are to reduced precision, measured
with the model's own library: tells a fixture that is ill-conditioned from an engine that is wrong.

    python3 tools/precision_floor.py tests/data/ref_*            # every fixture
    python3 tools/precision_floor.py MODEL_DIR --reference REF   # your own model and reference

For each model directory (timm or transformers layout, read as tools/make_reference.py reads it)
and its reference (default MODEL_DIR/reference.safetensors):
  own error     the library's own forward in fp32, fp16 and bf16 (tf32 too on a GPU) against the
                float64 reference: max|d| / max|ref| per stage and for the logits, the measure
                `swin verify` prints. PyTorch keeps weights, activations and the residual stream in
                the low precision, so this is a pessimistic floor, not swin's bound. fp16 "nan"
                on padded V2 models is PyTorch's: F.normalize's eps (1e-12) is 0 in fp16, so the
                all-zero key of a padding token becomes 0/0.
  sensitivity   the largest logit change (same measure) when the output of one Linear or
                LayerNorm gets a random relative perturbation of 2^-11 (one fp16 rounding), and
                the module that causes it: about how much a model amplifies the rounding of a
                single 16-bit tensor. Well-conditioned fixtures stay near or below 2e-3; a fixture
                far above it cannot hold the fp16 tolerance (5e-3) however exact the engine is.
Runs on the GPU when torch sees one (--device cpu to force the CPU; fp16 on the CPU is slow but
works). Needs torch, safetensors, and timm or transformers for the layout.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import safetensors.torch as st  # noqa: E402

from make_reference import Refusal, load_model  # noqa: E402
from swin_ref import StageRecorder, stage_modules  # noqa: E402

ULP16 = 2.0 ** -11


def rel(out, ref):
    ref = ref.double()
    out, ref = out.double().cpu(), ref.double().cpu()
    return float((out - ref).abs().max() / ref.abs().max())


def own_errors(model, forward, ref, device, precisions):
    """{precision: {"stageK": rel, ..., "logits": rel}} of the library's own forward."""
    res = {}
    stages = sorted(k for k in ref if k.startswith("stage"))
    for name in precisions:
        dt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
              "bf16": torch.bfloat16}[name]
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        torch.backends.cudnn.allow_tf32 = name == "tf32"
        m = model.to(device, dt)
        with StageRecorder(stage_modules(m)) as rec, torch.no_grad():
            logits = forward(ref["input"].to(device, dt))
        got = rec.tensors()
        res[name] = {k: rel(got[k], ref[k]) for k in stages if k in got}
        res[name]["logits"] = rel(logits, ref["logits"])
    torch.backends.cuda.matmul.allow_tf32 = False
    return res


def sensitivity(model, forward, ref, device, seed=0):
    """(largest logit change, module name) over one-tensor perturbations of 2^-11, in float64."""
    m = model.to(device, torch.float64)
    x = ref["input"].to(device, torch.float64)
    with torch.no_grad():
        base = forward(x)
    gen = torch.Generator(device=device).manual_seed(seed)
    worst = (0.0, "")
    for name, mod in m.named_modules():
        if not isinstance(mod, (torch.nn.Linear, torch.nn.LayerNorm)):
            continue

        def hook(_mod, _args, out):
            return out * (1 + ULP16 * torch.randn(out.shape, generator=gen, device=device, dtype=out.dtype))
        h = mod.register_forward_hook(hook)
        with torch.no_grad():
            e = rel(forward(x), base)
        h.remove()
        worst = max(worst, (e, name))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[1:]))
    ap.add_argument("model_dirs", metavar="MODEL_DIR", nargs="+")
    ap.add_argument("--reference", help="the reference file (one MODEL_DIR only; default "
                    "MODEL_DIR/reference.safetensors)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    if a.reference and len(a.model_dirs) != 1:
        ap.error("--reference goes with one MODEL_DIR")
    precisions = ["fp32", "tf32", "fp16", "bf16"] if a.device.startswith("cuda") else ["fp32", "fp16", "bf16"]
    print(f"device {a.device}; torch {torch.__version__}; own error = max|d|/max|ref| of the "
          f"library's forward; sensitivity = worst logit change from one tensor perturbed by 2^-11")
    rc = 0
    for d in a.model_dirs:
        d = d.rstrip("/")
        path = a.reference or os.path.join(d, "reference.safetensors")
        try:
            if not os.path.isfile(path):
                raise Refusal(f"{path}: no such reference file")
            ref = st.load_file(path)
            _, (model, forward, _, _) = load_model(d)
        except Refusal as e:
            print(f"precision_floor: {e}", file=sys.stderr)
            rc = 2
            continue
        model.eval()
        own = own_errors(model, forward, ref, a.device, precisions)
        sens, where = sensitivity(model, forward, ref, a.device)
        print(f"{os.path.basename(d)}: sensitivity {sens:.1e} ({where})")
        for p, errs in own.items():
            print(f"  {p:5s} " + "  ".join(f"{k.replace('stage', 'stage ')} {v:.1e}" for k, v in errs.items()))
    return rc


if __name__ == "__main__":
    sys.exit(main())
