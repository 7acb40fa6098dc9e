#!/usr/bin/env python3
"""export_reference.py - reference fixtures for `swin verify` made by timm and transformers.

    python3 tools/export_reference.py --out tests/data              # write every case
    python3 tools/export_reference.py --out tests/data --case hf_v2_w8
    python3 tools/export_reference.py --compare tests/data          # regenerate in memory and
                                                                    # diff against the files

Each case builds a small RANDOM-INIT Swin (no downloads) with timm or transformers, perturbs every
parameter (LayerNorm weights/biases, biases, position tables, V2 logit_scale and cpb MLP, absolute
position embeddings: nothing is left at 0 or 1), and writes tests/data/ref_<case>/:
  config.json + model.safetensors   the checkpoint in its hub layout (timm: timm's own
                                    save_config_for_hf() format with model_args; HF: save_pretrained)
  preprocessor_config.json          HF cases only, as on the hub
  reference.safetensors             input   F32 [B,3,H,W]  random normal, B = 2
                                    logits  F32 [B,classes] computed in float64 from the stored
                                            (possibly bf16/f16-rounded) weights
                                    stageK  F32 [B,H,W,C] output of stage K (after its blocks;
                                            tools/swin_ref.py records them)
                                    __metadata__: library versions, case description
  ref_timm_v1_w12/perturbed_{rel,top1}.safetensors   broken references (tests/cli_verify.sh)
  ref_<case>/reference_<H>x<W>.safetensors   the stored model run at another input size (RESIZED)
Every sample's top-1 logit beats the runner-up by >= 5% of max|logit| (the input is re-drawn
otherwise), so top-1 agreement is meaningful at bf16. Runs on CPU in float64 with fixed seeds, so
it gives the same files on any machine with the same library versions.
"""
import argparse
import copy
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import torch
import safetensors.torch as st
import timm
import transformers
from transformers import (SwinConfig, SwinForImageClassification, Swinv2Config,
                          Swinv2ForImageClassification, ViTImageProcessor)

from swin_ref import StageRecorder, stage_modules, timm_add_abs_pos

BATCH = 2
MARGIN = 0.05
IMNET_MEAN = (0.485, 0.456, 0.406)
IMNET_STD = (0.229, 0.224, 0.225)

# ---- the cases: (name, builder, kwargs, description)
CASES = [
    dict(name="timm_v1_w7", kind="timm", arch="swin_tiny_patch4_window7_224",
         args=dict(img_size=56, patch_size=4, window_size=7, embed_dim=48, depths=[2, 1],
                   num_heads=[3, 6], mlp_ratio=4.0, num_classes=10),
         desc="timm Swin V1, img 56, window 7: res 14 (shift 3) then res 7 == window (no shift); "
              "3 and 6 heads, head_dim 16"),
    dict(name="timm_v1_w12", kind="timm", arch="swin_base_patch4_window12_384",
         args=dict(img_size=48, patch_size=2, window_size=12, embed_dim=32, depths=[2, 2, 1],
                   num_heads=[1, 2, 4], mlp_ratio=2.0, num_classes=12),
         desc="timm Swin V1, patch 2, window 12, 3 stages: res 24 (shift 6), 12 == window, "
              "6 < window (clamped); mlp_ratio 2"),
    dict(name="timm_v2_w8", kind="timm", arch="swinv2_tiny_window8_256",
         args=dict(img_size=64, patch_size=4, window_size=8, embed_dim=32, depths=[2, 2, 1],
                   num_heads=[1, 2, 4], mlp_ratio=2.0, num_classes=16),
         desc="timm Swin V2, img 64, window 8: res 16 (shift 4), 8 == window, 4 < window"),
    dict(name="timm_v2_pre", kind="timm", arch="swinv2_tiny_window8_256",
         args=dict(img_size=64, patch_size=4, window_size=8, embed_dim=32, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=4.0, num_classes=10, pretrained_window_sizes=[6, 4]),
         desc="timm Swin V2, window 8 with pretrained_window_sizes [6, 4] (cpb coords rescaled)"),
    dict(name="timm_v1_bf16", kind="timm", arch="swin_tiny_patch4_window7_224", dtype="bf16",
         args=dict(img_size=56, patch_size=4, window_size=7, embed_dim=32, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=4.0, num_classes=10),
         desc="timm Swin V1 stored in BF16 (logits from the rounded weights)"),
    dict(name="timm_old_v1_ape", kind="timm_old", arch="swin_tiny_patch4_window7_224",
         args=dict(img_size=56, patch_size=4, window_size=7, embed_dim=32, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=4.0, num_classes=10, ape=True),
         desc="MS-original / timm<0.9 layout: downsample at the end of stages, head.weight, "
              "absolute_pos_embed [1,L,C], relative_position_index (I64) and attn_mask buffers"),
    dict(name="hf_v1_w7", kind="hf1",
         args=dict(image_size=56, patch_size=4, window_size=7, embed_dim=32, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=2.0, num_labels=10),
         desc="transformers Swin, window 7, save_pretrained names (attention.self.query ...)"),
    dict(name="hf_v1_v5names", kind="hf1", names="state_dict",
         args=dict(image_size=56, patch_size=4, window_size=7, embed_dim=32, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=2.0, num_labels=10, use_absolute_embeddings=True),
         desc="transformers 5.x Swin with in-memory names (q_proj/k_proj/v_proj/o_proj, mlp.fc1/fc2, "
              "relative_position_bias.relative_position_bias_table) and absolute position embeddings"),
    dict(name="hf_v2_w8", kind="hf2",
         args=dict(image_size=64, patch_size=4, window_size=8, embed_dim=16, depths=[2, 2, 1],
                   num_heads=[1, 2, 4], mlp_ratio=4.0, num_labels=16),
         desc="transformers Swinv2, window 8, 3 stages (16 shifted, 8 == window, 4 clamped), "
              "head_dim 16"),
    dict(name="hf_v2_pre_f16", kind="hf2", dtype="f16", logit_scale_max=5.0,
         args=dict(image_size=64, patch_size=4, window_size=8, embed_dim=32, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=4.0, num_labels=10, pretrained_window_sizes=[6, 4]),
         desc="transformers Swinv2 stored in F16, pretrained_window_sizes [6, 4]"),
    # ---- non-square inputs, grids that are not multiples of the window, odd grids. Each library
    # is its own checkpoints' reference (README "Input sizes"). timm 1.0.29 builds the blocks of a
    # stage after an odd merge for floor(h/2) (1.0.31: ceil) and V2's static shift mask without
    # the padding, so the timm cases keep to geometry where both versions build the same model.
    dict(name="timm_v1_rect", kind="timm", arch="swin_tiny_patch4_window7_224",
         args=dict(img_size=[32, 64], patch_size=4, window_size=4, embed_dim=8, depths=[2, 2, 1],
                   num_heads=[1, 2, 2], mlp_ratio=2.0, num_classes=10),
         desc="timm Swin V1, 32x64 input, window 4: grids 8x16 (shift 2,2), 4x8 (window 4x4, shift "
              "0 along H, 2 along W), 2x4 (window clamped to 2x4 per dimension, no shift)"),
    dict(name="timm_v2_rect", kind="timm", arch="swinv2_tiny_window8_256",
         args=dict(img_size=[32, 64], patch_size=4, window_size=4, embed_dim=8, depths=[2, 2, 1],
                   num_heads=[1, 2, 2], mlp_ratio=2.0, num_classes=10, pretrained_window_sizes=[0, 3, 0]),
         desc="timm Swin V2, 32x64, window 4: shift (0, 2) at 4x8, 2x4 windows (cpb coordinates of "
              "a non-square window) at 2x4; pretrained_window_sizes [0, 3, 0]"),
    dict(name="timm_v1_pad", kind="timm", arch="swin_tiny_patch4_window7_224",
         args=dict(img_size=64, patch_size=4, window_size=7, embed_dim=8, depths=[2, 2, 1],
                   num_heads=[1, 2, 2], mlp_ratio=2.0, num_classes=10),
         desc="timm Swin V1, 64 with window 7 (256 / window 7 scaled down): grids 16 and 8 padded "
              "to 21 and 14 after the roll (shift 3), 4 clamps the window"),
    dict(name="timm_v1_odd", kind="timm", arch="swin_tiny_patch4_window7_224",
         args=dict(img_size=[44, 60], patch_size=4, window_size=3, embed_dim=8, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=2.0, num_classes=10),
         desc="timm Swin V1, 44x60, window 3: grid 11x15 padded to 12x15 (shift 1), the odd grid "
              "merged (zero padded) to 6x8, padded to 6x9"),
    dict(name="timm_v2_pad", kind="timm", arch="swinv2_tiny_window8_256",
         args=dict(img_size=[60, 68], patch_size=4, window_size=7, embed_dim=8, depths=[1, 1],
                   num_heads=[1, 2], mlp_ratio=2.0, num_classes=10),
         desc="timm Swin V2, 60x68, window 7: grid 15x17 padded to 21x21, odd merge to 8x9 padded "
              "to 14x14 (one block per stage: timm 1.0.29 cannot shift a padded V2 grid)"),
    dict(name="hf_v1_rect", kind="hf1",
         args=dict(image_size=[48, 80], patch_size=4, window_size=3, embed_dim=8, depths=[2, 2, 1],
                   num_heads=[1, 2, 2], mlp_ratio=2.0, num_labels=10),
         desc="transformers Swin, 48x80, window 3: grids 12x20 and 6x10 padded to 12x21 and 6x12 "
              "before the roll (shift 1), 3x5 (min side == window: no shift) padded to 3x6"),
    dict(name="hf_v1_odd", kind="hf1",
         args=dict(image_size=[50, 78], patch_size=4, window_size=3, embed_dim=8, depths=[2, 2, 2],
                   num_heads=[1, 2, 2], mlp_ratio=2.0, num_labels=10),
         desc="transformers Swin, 50x78 (the image padded to 52x80 for the patches), window 3: "
              "grids 13x20, 7x10, 4x5 (odd merges), all padded and shifted"),
    # embed_dim 16, not 8: with head_dim 8 this random model amplified rounding ~50x (fp32 stage
    # error 2.4e-5; one fp16-sized relative perturbation of the patch-embedding output alone moved
    # the logits by 5.6e-3; PyTorch's own bf16 forward was off by 4.2e-2), so fp16/tf32 runs
    # measured the weights' conditioning, not the geometry. head_dim 8 stays covered by
    # timm_v2_rect and hf_v2_pad (tools/precision_floor.py shows each fixture's sensitivity).
    dict(name="hf_v2_rect", kind="hf2",
         args=dict(image_size=[36, 64], patch_size=4, window_size=4, embed_dim=16, depths=[2, 2, 1],
                   num_heads=[1, 2, 2], mlp_ratio=2.0, num_labels=10),
         desc="transformers Swinv2, 36x64, window 4: grid 9x16 padded to 12x16 before the roll "
              "(shift 2); the odd merge gives 5x8, whose window comes from the constructor's height "
              "9 // 2 = 4 (no shift), padded to 8x8; 3x4 takes a square 2x2 window from 9 // 4 = 2"),
    dict(name="hf_v2_pad", kind="hf2",
         args=dict(image_size=[66, 50], patch_size=4, window_size=7, embed_dim=8, depths=[2, 2],
                   num_heads=[1, 2], mlp_ratio=2.0, num_labels=10, pretrained_window_sizes=[5, 0]),
         desc="transformers Swinv2, 66x50 (patch grid 17x13 after padding the image; windows from "
              "the constructor's 16x12), window 7: 17x13 padded to 21x14, odd merge to 9x7 padded "
              "to 14x7, shift 3 everywhere; pretrained_window_sizes [5, 0]"),
    # Swin-T's and SwinV2-T's first-stage width (C 96, 3 heads of 32) with their windows: the CUDA
    # engine runs these blocks' qkv GEMM inside the attention kernel (kernels/attention_qkv.cuh,
    # fp16 / bf16); one stage each, so that the files stay small
    dict(name="timm_v1_c96", kind="timm", arch="swin_tiny_patch4_window7_224",
         args=dict(img_size=56, patch_size=4, window_size=7, embed_dim=96, depths=[2],
                   num_heads=[3], mlp_ratio=2.0, num_classes=10),
         desc="timm Swin V1, one stage at Swin-T's first-stage width: C 96, 3 heads of 32, window 7 "
              "at res 14 (shift 3)"),
    dict(name="timm_v2_c96", kind="timm", arch="swinv2_tiny_window8_256",
         args=dict(img_size=64, patch_size=4, window_size=8, embed_dim=96, depths=[2],
                   num_heads=[3], mlp_ratio=2.0, num_classes=10),
         desc="timm Swin V2, one stage at SwinV2-T's first-stage width: C 96, 3 heads of 32, window 8 "
              "at res 16 (shift 4)"),
]


def img_hw(args):
    """(H, W) of a case's img_size / image_size: an int or [H, W]."""
    s = args.get("img_size", args.get("image_size"))
    return (s, s) if isinstance(s, int) else (int(s[0]), int(s[1]))


# ---- perturbation: every parameter gets a non-trivial random value
def perturb(model, gen, logit_scale_max=3.5):
    def rn(t, std, mean=0.0):
        return (torch.randn(t.shape, generator=gen, dtype=torch.float64) * std + mean).to(t.dtype)

    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            low = name.lower()
            if "logit_scale" in low:
                # logit_scale uniform in [1.5, logit_scale_max]; timm/HF initialise it at log(10).
                # By default exp(logit_scale) <= 33. Random (untrained) q, k at the clamp
                # (exp = 100) make the model so ill-conditioned that PyTorch itself misses its
                # own float64 logits by 6e-2 (fp16) and 1e-1 (bf16); measured on the fixtures
                # made with a 5.0 maximum. One case (hf_v2_pre_f16) keeps 5.0 so the clamp at
                # log(100) stays covered, and it is still well conditioned.
                u = torch.rand(p.shape, generator=gen, dtype=torch.float64)
                p.copy_((1.5 + (logit_scale_max - 1.5) * u).to(p.dtype))
            elif "relative_position_bias_table" in low:
                p.copy_(rn(p, 1.0))
            elif "cpb_mlp" in low or "continuous_position_bias_mlp" in low:
                if p.dim() == 2 and p.shape[1] == 2:
                    p.copy_(rn(p, 1.0))
                elif p.dim() == 2:
                    p.copy_(rn(p, 2.0 / math.sqrt(p.shape[1])))
                else:
                    p.copy_(rn(p, 0.5))
            elif "pos" in low and ("embed" in low):
                p.copy_(rn(p, 0.5))
            elif p.dim() == 1 and leaf == "weight":      # LayerNorm gain
                p.copy_(rn(p, 0.2, 1.0))
            elif p.dim() == 1:                           # every bias (LN, linear, q/v bias)
                p.copy_(rn(p, 0.2))
            else:                                        # linear / conv weights: unit gain
                fan_in = p[0].numel()
                p.copy_(rn(p, 1.0 / math.sqrt(fan_in)))
            assert not (p == 0).any() and not (p == 1).any(), name


def round_to(model, dtype):
    """Round parameters to the storage dtype and back, so float64 logits match the stored file."""
    if dtype is None:
        return
    td = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(td).to(p.dtype))


# ---- model builders: return (model, forward(x) -> logits, list of stage modules to hook)
def build_timm(case):
    args = dict(case["args"])
    ape = args.pop("ape", False)
    model = timm.create_model(case["arch"], pretrained=False, **args)
    H, W = img_hw(args)
    model.pretrained_cfg = {**model.pretrained_cfg, "input_size": (3, H, W),
                            "num_classes": args["num_classes"]}
    # timm >= 0.9 dropped ape; the old layout case adds the parameter by hand
    forward = timm_add_abs_pos(model) if ape else model
    return model, forward, stage_modules(model)


def build_hf(case):
    v2 = case["kind"] == "hf2"
    cfg = (Swinv2Config if v2 else SwinConfig)(**case["args"])
    cfg.id2label = {i: f"class_{chr(ord('a') + i)}" for i in range(cfg.num_labels)}
    cfg.label2id = {v: k for k, v in cfg.id2label.items()}
    model = (Swinv2ForImageClassification if v2 else SwinForImageClassification)(cfg)

    def forward(x):
        return model(pixel_values=x).logits

    return model, forward, stage_modules(model)


# ---- saving in the hub layouts
def timm_old_state_dict(model):
    """timm 1.0 names -> MS-original / old timm: downsample at the end of the previous stage,
    head.weight, plus the relative_position_index and attn_mask buffers those checkpoints carry."""
    out = {}
    for k, v in model.state_dict().items():
        parts = k.split(".")
        if parts[0] == "layers" and parts[2] == "downsample":
            parts[1] = str(int(parts[1]) - 1)
        if parts[0] == "head" and parts[1] == "fc":
            parts = ["head"] + parts[2:]
        out[".".join(parts)] = v
    for s, layer in enumerate(model.layers):
        for b, blk in enumerate(layer.blocks):
            out[f"layers.{s}.blocks.{b}.attn.relative_position_index"] = \
                blk.attn.relative_position_index.to(torch.int64)
            if getattr(blk, "attn_mask", None) is not None:
                out[f"layers.{s}.blocks.{b}.attn_mask"] = blk.attn_mask.float()
    return out


def save_timm(case, model, d, td):
    from timm.models._hub import save_config_for_hf
    sd = timm_old_state_dict(model) if case["kind"] == "timm_old" else model.state_dict()
    sd = {k: (v.to(td) if v.is_floating_point() else v).contiguous() for k, v in sd.items()}
    st.save_file(sd, os.path.join(d, "model.safetensors"))
    margs = {k: v for k, v in case["args"].items() if k != "num_classes"}
    save_config_for_hf(model, Path(d) / "config.json", model_args=margs)


def save_hf(case, model, d, td):
    if case.get("names") == "state_dict":
        sd = {k: v.to(td).contiguous() for k, v in model.state_dict().items()}
        st.save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        model.config.save_pretrained(d)
    else:
        copy.deepcopy(model).to(td).save_pretrained(d)  # .to() would round buffers too
    H, W = img_hw(case["args"])
    ViTImageProcessor(size={"height": H, "width": W}, resample=3, image_mean=list(IMNET_MEAN),
                      image_std=list(IMNET_STD)).save_pretrained(d)


def draw_input(forward, stage_mods, H, W, gen, what):
    """A random input whose float64 logits have a clear top-1 for every sample (drawn in float32, as
    stored, so the logits belong to the stored input); the logits and stageK [B, H, W, C] outputs
    of that last forward, the smallest top-1 gap and the number of draws."""
    with StageRecorder(stage_mods) as rec:
        for attempt in range(200):
            x = torch.randn(BATCH, 3, H, W, generator=gen, dtype=torch.float32).double()
            with torch.no_grad():
                logits = forward(x)
            top = logits.topk(2, dim=1).values
            gap = (top[:, 0] - top[:, 1]) / logits.abs().amax(dim=1)
            if bool((gap >= MARGIN).all()):
                return x, logits, rec.tensors(), float(gap.min()), attempt + 1
    raise RuntimeError(f"{what}: no input with a top-1 margin of {MARGIN} in 200 draws")


# ---- one case
def run_case(case, out_dir, quiet=False):
    seed = 1000 + [c["name"] for c in CASES].index(case["name"])
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model, forward, stage_mods = (build_hf if case["kind"].startswith("hf") else build_timm)(case)
    model.eval()
    perturb(model, gen, case.get("logit_scale_max", 3.5))
    round_to(model, case.get("dtype"))
    td = {None: torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[case.get("dtype")]

    d = os.path.join(out_dir, "ref_" + case["name"])
    os.makedirs(d, exist_ok=True)
    (save_hf if case["kind"].startswith("hf") else save_timm)(case, model, d, td)

    model = model.double()
    H, W = img_hw(case["args"])
    x, logits, stages, gap, tries = draw_input(forward, stage_mods, H, W, gen, case["name"])
    tensors = {"input": x.float().contiguous(), "logits": logits.float().contiguous(), **stages}
    meta = {"case": case["name"], "description": case["desc"], "seed": str(seed),
            "weights_dtype": case.get("dtype") or "f32", "torch": torch.__version__,
            "timm": timm.__version__, "transformers": transformers.__version__,
            "compute": "float64 on CPU, stored as F32",
            "generator": "tools/export_reference.py"}
    st.save_file(tensors, os.path.join(d, "reference.safetensors"), metadata=meta)

    nparam = sum(p.numel() for p in model.parameters())
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    return dict(name=case["name"], params=nparam, bytes=size, classes=logits.shape[1],
                res=[int(f.shape[1]) for f in tensors_stage(tensors)], gap=gap,
                maxlogit=float(logits.abs().max()), tries=tries)


def write_negatives(out_dir, name="timm_v1_w12"):
    """Two broken references for tests/cli_verify.sh, next to the case's reference:
    perturbed_rel.safetensors   logits moved by 2e-3 * max|logit| (top-1 kept): FAIL at 1e-4
    perturbed_top1.safetensors  sample 1's two best classes swapped: FAIL at any tolerance < 1"""
    d = os.path.join(out_dir, "ref_" + name)
    ref = st.load_file(os.path.join(d, "reference.safetensors"))
    x, lg = ref["input"], ref["logits"].double()
    sign = torch.tensor([(-1.0) ** i for i in range(lg.numel())], dtype=torch.float64).reshape(lg.shape)
    rel = lg + 2e-3 * lg.abs().max() * sign
    assert bool((rel.argmax(1) == lg.argmax(1)).all())
    top = lg.clone()
    i, j = lg[1].topk(2).indices.tolist()
    top[1, i], top[1, j] = lg[1, j], lg[1, i]
    meta = {"case": name, "generator": "tools/export_reference.py"}
    for fname, logits, what in (("perturbed_rel", rel, "logits + 2e-3 max|logit| (+-)"),
                                ("perturbed_top1", top, "sample 1 top-2 classes swapped")):
        st.save_file({"input": x.contiguous(), "logits": logits.float().contiguous()},
                     os.path.join(d, fname + ".safetensors"), metadata={**meta, "description": what})


# ---- stored models run at another input size (`swin ... --img-size HxW`): (case, (H, W)). The
# sizes keep every V1 window (so the tables keep their shapes) and, for timm V2, every padded grid
# unshifted (timm 1.0.29 cannot shift one).
RESIZED = [("timm_v1_w7", (56, 84)), ("timm_v2_w8", (32, 64)), ("hf_v2_w8", (48, 80))]


def write_resized(out_dir, name, hw):
    """reference_<H>x<W>.safetensors next to case `name`'s reference: its stored weights run at an
    H x W input as timm.create_model(arch, img_size=(H, W)) + load_state_dict, or transformers'
    from_pretrained(dir, image_size=[H, W]), build the model (windows, shifts and padding of the new
    grids; the tensors keep their shapes). tests/cli_verify.sh checks `swin verify --img-size HxW`."""
    case = next(c for c in CASES if c["name"] == name)
    d = os.path.join(out_dir, "ref_" + name)
    H, W = hw
    if case["kind"].startswith("hf"):
        cls = Swinv2ForImageClassification if case["kind"] == "hf2" else SwinForImageClassification
        model = cls.from_pretrained(d, image_size=[H, W])

        def forward(x):
            return model(pixel_values=x).logits
    else:
        model = timm.create_model(case["arch"], pretrained=False, **{**case["args"], "img_size": [H, W]})
        model.load_state_dict(st.load_file(os.path.join(d, "model.safetensors")))
        forward = model
    model = model.double().eval()
    seed = 2000 + [c["name"] for c in CASES].index(name)
    gen = torch.Generator().manual_seed(seed)
    x, logits, stages, _, _ = draw_input(forward, stage_modules(model), H, W, gen, f"{name} at {H}x{W}")
    tensors = {"input": x.float().contiguous(), "logits": logits.float().contiguous(), **stages}
    meta = {"case": name, "description": f"the stored model of {name} run at {H}x{W}", "seed": str(seed),
            "torch": torch.__version__, "timm": timm.__version__, "transformers": transformers.__version__,
            "compute": "float64 on CPU, stored as F32", "generator": "tools/export_reference.py"}
    st.save_file(tensors, os.path.join(d, f"reference_{H}x{W}.safetensors"), metadata=meta)


def tensors_stage(t):
    return [t[k] for k in sorted(t) if k.startswith("stage")]


def compare(ref_dir, names):
    """Regenerate into a temporary folder and report the largest difference per file."""
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for c in CASES:
            if names and c["name"] not in names:
                continue
            run_case(c, tmp)
            files = ["model.safetensors", "reference.safetensors"]
            for name, (H, W) in RESIZED:
                if name == c["name"]:
                    write_resized(tmp, name, (H, W))
                    files.append(f"reference_{H}x{W}.safetensors")
            for f in files:
                a = st.load_file(os.path.join(tmp, "ref_" + c["name"], f))
                b = st.load_file(os.path.join(ref_dir, "ref_" + c["name"], f))
                if set(a) != set(b):
                    print(f"{c['name']}/{f}: tensor names differ")
                    worst = math.inf
                    continue
                diff = max(float((a[k].double() - b[k].double()).abs().max()) for k in a)
                scale = max(float(b[k].double().abs().max()) for k in b)
                print(f"{c['name']:18s} {f:24s} max|diff| {diff:.3e}  (max|value| {scale:.3g})")
                worst = max(worst, diff / scale)
    print(f"worst relative difference {worst:.3e}")
    return 0 if worst <= 1e-6 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="folder that receives ref_<case>/ (e.g. tests/data)")
    ap.add_argument("--compare", metavar="DIR", help="regenerate and diff against DIR/ref_<case>/")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    a = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    if a.compare:
        return compare(a.compare, a.case)
    if not a.out:
        ap.error("--out or --compare is required")
    rows = [run_case(c, a.out) for c in CASES if not a.case or c["name"] in a.case]
    if not a.case or "timm_v1_w12" in a.case:
        write_negatives(a.out)
    for name, hw in RESIZED:
        if not a.case or name in a.case:
            write_resized(a.out, name, hw)
    print(f"torch {torch.__version__}, timm {timm.__version__}, transformers {transformers.__version__}")
    print(f"{'case':18s} {'params':>8s} {'KiB':>6s} {'cls':>4s} {'stage res':12s} "
          f"{'min gap':>8s} {'max|logit|':>10s} draws")
    for r in rows:
        print(f"{r['name']:18s} {r['params']:8d} {r['bytes'] / 1024:6.0f} {r['classes']:4d} "
              f"{str(r['res']):12s} {r['gap']:8.3f} {r['maxlogit']:10.3f} {r['tries']}")
    print(f"total {sum(r['bytes'] for r in rows) / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
