#!/usr/bin/env python3
"""random_model.py - a full-size Swin with random weights, as a timm model directory, for checks
that need real widths and depths (the test fixtures are small: C 8 to 32), e.g. the Hopper
kernels that only take Swin's own widths:

    python3 tools/random_model.py swin_tiny_patch4_window7_224 /tmp/swin_t
    python3 tools/make_reference.py /tmp/swin_t --batch 24 -o /tmp/swin_t/ref.safetensors
    build/swin verify --model /tmp/swin_t --reference /tmp/swin_t/ref.safetensors --device cuda --precision fp16

timm.create_model(ARCH, pretrained=False) with every parameter redrawn as the fixtures are
(tools/export_reference.py perturb: unit-gain linear weights, LayerNorm gains around 1, random
biases and position tables; nothing left at 0 or 1), so activations are of order 1 everywhere.
Writes MODEL_DIR/config.json (timm's save_config_for_hf) and MODEL_DIR/model.safetensors.
Needs torch, timm, safetensors (and transformers, which export_reference.py imports).
"""
import argparse
import os
import sys
from pathlib import Path

import safetensors.torch as st
import timm
import torch
from timm.models._hub import save_config_for_hf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_reference import perturb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("arch", help="timm architecture, e.g. swin_tiny_patch4_window7_224")
    ap.add_argument("model_dir", metavar="MODEL_DIR")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not a.arch.startswith("swin"):
        sys.exit(f"random_model.py: {a.arch}: not a Swin architecture")
    torch.manual_seed(a.seed)
    model = timm.create_model(a.arch, pretrained=False).eval()
    gen = torch.Generator().manual_seed(a.seed)
    perturb(model, gen)
    os.makedirs(a.model_dir, exist_ok=True)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    st.save_file(sd, os.path.join(a.model_dir, "model.safetensors"))
    save_config_for_hf(model, Path(a.model_dir) / "config.json")
    print(f"random_model.py: {a.arch} (seed {a.seed}, {sum(p.numel() for p in model.parameters()):,} parameters)"
          f" -> {a.model_dir}")


if __name__ == "__main__":
    main()
