#!/usr/bin/env python3
"""make_reference.py - a reference file for `swin verify`, made by timm or transformers from any
Swin model directory (the one you give `swin --model`), so that verify can check swin on your
own checkpoint and name the first stage that diverges.

    python3 tools/make_reference.py MODEL_DIR -o ref.safetensors                 # random input
    python3 tools/make_reference.py MODEL_DIR a.jpg b.png -o ref.safetensors     # your images
    build/swin verify --model MODEL_DIR --reference ref.safetensors

MODEL_DIR holds config.json + model.safetensors in one of the two hub layouts:
  timm          config.json with "architecture" and "model_args": timm.create_model(architecture,
                pretrained=False, **model_args) with the config's pretrained_cfg, then the state
                dict (MS-original / old timm names through timm's own checkpoint_filter_fn;
                an `absolute_pos_embed` is added as MS-original Swin used it)
  transformers  config.json with model_type swin / swinv2: Swin(v2)ForImageClassification
                .from_pretrained(MODEL_DIR), offline; every weight must come from the file
Input: IMAGES through the model's own preprocessing (timm: resolve_data_config + create_transform;
transformers: the directory's AutoImageProcessor, PIL backend, or ViTImageProcessor defaults at
the model's size when it has no preprocessor_config.json); without images, random normal
[--batch, 3, S, S] from --seed; with --pick N, the --batch of N such draws whose top-1 leads its
runner-up by the most (of max|logit|), so that a top-1 check at reduced precision is not decided
by near-ties (random weights give many). The model runs on the CPU in float64 from the stored
weights.
The file holds (tools/swin_ref.py records the stages; src/cli/cmd_verify.c reads them):
  input   F32 [B,3,S,S]    logits  F32 [B,classes]    stageK  F32 [B,H,W,C] for every stage
  __metadata__: generator, model directory, layout, input, library versions
Needs torch and safetensors, plus timm or transformers for the layout (Pillow for images).
Exit 0 written, 2 bad usage or a model/image that cannot be used (one line on stderr).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import safetensors.torch as st  # noqa: E402

from swin_ref import StageRecorder, stage_modules, timm_add_abs_pos  # noqa: E402

TOP1_MARGIN_WARN = 0.01   # of max|logit|: below it, top-1 may flip at reduced precision


class Refusal(Exception):
    """A one-line reason to exit 2."""


# ---- timm layout
def load_timm(d, cfg):
    import timm
    arch = cfg["architecture"]
    kwargs = dict(cfg.get("model_args") or {})
    ape = bool(kwargs.pop("ape", False))
    pcfg = dict(cfg.get("pretrained_cfg") or {})
    if "num_classes" in cfg:                  # as timm's own hub loader does
        pcfg["num_classes"] = cfg["num_classes"]
        kwargs.setdefault("num_classes", cfg["num_classes"])
    try:
        model = timm.create_model(arch, pretrained=False, pretrained_cfg=pcfg or None, **kwargs)
    except Exception as e:  # unknown architecture, bad argument
        raise Refusal(f"{d}/config.json: timm cannot build '{arch}' with {kwargs}: {e}")
    sd = st.load_file(os.path.join(d, "model.safetensors"))
    sd = {k: v.float() if v.is_floating_point() else v for k, v in sd.items()}
    forward = model
    if ape or "absolute_pos_embed" in sd:      # timm >= 0.9 has no ape: add it as MS-original did
        pos = sd.get("absolute_pos_embed")
        forward = timm_add_abs_pos(model, None if pos is None else torch.zeros_like(pos))
    try:
        model.load_state_dict(sd, strict=True)
    except RuntimeError as first:             # MS-original / old timm names: timm's own mapping
        filt = getattr(sys.modules[type(model).__module__], "checkpoint_filter_fn", None)
        if filt is None:
            raise Refusal(f"{d}/model.safetensors does not fit {arch}: {first}")
        try:
            model.load_state_dict(filt(sd, model), strict=True)
        except RuntimeError as e:
            raise Refusal(f"{d}/model.safetensors does not fit {arch}: {e}")
    S = tuple(model.patch_embed.img_size)
    return model, forward, S, lambda: timm_transform(model, S)


def timm_transform(model, S):
    import timm.data
    dc = timm.data.resolve_data_config({}, model=model)
    if tuple(dc["input_size"][1:]) != S:      # pretrained_cfg made for another size
        print(f"make_reference: note: pretrained_cfg input_size {dc['input_size']} != model "
              f"{S}; preprocessing to the model's size", file=sys.stderr)
        dc = timm.data.resolve_data_config({"input_size": (3, *S)}, model=model)
    tf = timm.data.create_transform(**dc)
    return lambda imgs: torch.stack([tf(im) for im in imgs])


# ---- transformers layout
def load_hf(d, cfg):
    import transformers
    transformers.utils.logging.disable_progress_bar()
    kind = cfg.get("model_type")
    cls = {"swin": transformers.SwinForImageClassification,
           "swinv2": transformers.Swinv2ForImageClassification}.get(kind)
    if cls is None:
        raise Refusal(f"{d}/config.json: model_type '{kind}' is not swin or swinv2")
    try:  # float32 so that buffers are computed as at training time; weights widen exactly
        model, info = cls.from_pretrained(d, local_files_only=True, dtype=torch.float32,
                                          output_loading_info=True)
    except TypeError:                          # transformers 4.x spelling
        model, info = cls.from_pretrained(d, local_files_only=True, torch_dtype=torch.float32,
                                          output_loading_info=True)
    bad = list(info.get("missing_keys") or []) + [str(k) for k in info.get("mismatched_keys") or []]
    if bad:
        raise Refusal(f"{d}/model.safetensors: {len(bad)} weights missing or mis-shaped for {cls.__name__} "
                      f"(they would be random): {', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''}")
    S = model.config.image_size
    S = (S, S) if isinstance(S, int) else tuple(S)

    def forward(x):
        return model(pixel_values=x).logits

    return model, forward, S, lambda: hf_transform(d, S)


def hf_transform(d, S):
    import transformers
    if os.path.exists(os.path.join(d, "preprocessor_config.json")):
        try:  # transformers 5.x: the PIL backend (Pillow's resize, as swin's own preprocessing)
            proc = transformers.AutoImageProcessor.from_pretrained(d, local_files_only=True, backend="pil")
        except (TypeError, ValueError):
            proc = transformers.AutoImageProcessor.from_pretrained(d, local_files_only=True, use_fast=False)
    else:
        cls = getattr(transformers, "ViTImageProcessorPil", None) or transformers.ViTImageProcessor
        proc = cls(size={"height": S[0], "width": S[1]})
    return lambda imgs: proc(images=imgs, return_tensors="pt")["pixel_values"]


# ---- the reference
def load_model(d):
    path = os.path.join(d, "config.json")
    if not os.path.isfile(path):
        raise Refusal(f"{d}: no config.json (expected a timm or transformers model directory)")
    if not os.path.isfile(os.path.join(d, "model.safetensors")):
        raise Refusal(f"{d}: no model.safetensors")
    with open(path) as f:
        cfg = json.load(f)
    if "architecture" in cfg:
        return "timm", load_timm(d, cfg)
    if "model_type" in cfg:
        return "transformers", load_hf(d, cfg)
    raise Refusal(f"{path}: neither timm ('architecture') nor transformers ('model_type')")


def read_images(paths, transform):
    from PIL import Image
    imgs = []
    for p in paths:
        try:
            with Image.open(p) as im:
                imgs.append(im.convert("RGB"))
        except (OSError, ValueError) as e:
            raise Refusal(f"{p}: cannot read the image ({e})")
    return transform()(imgs)


def pick_margins(model, forward, x, batch):
    """The `batch` rows of x (in their order) whose float64 logits have the largest top-1 margins
    (top-1 minus runner-up, over max|logit|), and their indices."""
    model.eval()
    model.double()
    with torch.no_grad():
        logits = torch.cat([forward(x[i:i + 4].double()) for i in range(0, x.shape[0], 4)])
    if logits.shape[1] < 2:
        return x[:batch], list(range(batch))
    top = logits.topk(2, dim=1)
    margin = (top.values[:, 0] - top.values[:, 1]) / logits.abs().amax(dim=1)
    picked = sorted(int(i) for i in margin.topk(batch).indices)
    return x[picked], picked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[1:]))
    ap.add_argument("model_dir", metavar="MODEL_DIR")
    ap.add_argument("images", metavar="IMAGES", nargs="*", help="images (the batch); none: random input")
    ap.add_argument("-o", "--out", required=True, help="the reference .safetensors to write")
    ap.add_argument("--batch", type=int, help="random inputs to draw (default 2; with IMAGES: their number)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")
    ap.add_argument("--pick", type=int, metavar="N",
                    help="random input: draw N and keep the --batch with the largest top-1 margins")
    a = ap.parse_args()
    if a.batch is not None and (a.batch < 1 or (a.images and a.batch != len(a.images))):
        ap.error(f"--batch {a.batch}: expected >= 1{' and the number of IMAGES' if a.images else ''}")
    if a.pick is not None and (a.images or a.pick < (a.batch or 2)):
        ap.error(f"--pick {a.pick}: for random input only, and at least --batch ({a.batch or 2}) draws")
    torch.use_deterministic_algorithms(True)
    try:
        layout, (model, forward, S, transform) = load_model(a.model_dir)
        if a.images:
            x = read_images(a.images, transform)
            what = "images: " + ", ".join(os.path.basename(p) for p in a.images)
        else:
            gen = torch.Generator().manual_seed(a.seed)
            x = torch.randn(a.pick or a.batch or 2, 3, *S, generator=gen, dtype=torch.float32)
            what = f"random normal, seed {a.seed}"
            if a.pick:
                x, picked = pick_margins(model, forward, x, a.batch or 2)
                what += f", the {len(picked)} of {a.pick} draws with the largest top-1 margins: {picked}"
    except Refusal as e:
        print(f"make_reference: {e}", file=sys.stderr)
        return 2
    if tuple(x.shape[2:]) != S:
        print(f"make_reference: preprocessing made {tuple(x.shape)}, the model takes {S}", file=sys.stderr)
        return 2

    model.eval()
    model.double()
    x = x.float()                              # stored as F32: the float64 run uses exactly that
    with StageRecorder(stage_modules(model)) as rec, torch.no_grad():
        logits = forward(x.double())
    tensors = {"input": x.contiguous(), "logits": logits.float().contiguous(), **rec.tensors()}
    import importlib.metadata as md
    versions = {}
    for lib in ("torch", "timm", "transformers"):
        try:
            versions[lib] = md.version(lib)
        except md.PackageNotFoundError:
            pass
    meta = {"generator": "tools/make_reference.py", "model_dir": os.path.abspath(a.model_dir),
            "layout": layout, "input": what, "compute": "float64 on CPU, stored as F32", **versions}
    st.save_file(tensors, a.out, metadata=meta)

    # ---- what was written
    print(f"{a.out}: {layout} model {a.model_dir}, {what}")
    for k, t in tensors.items():
        print(f"  {k:8s} {list(t.shape)}  max|value| {float(t.abs().max()):.4g}")
    top = logits.topk(min(2, logits.shape[1]), dim=1)
    for b in range(logits.shape[0]):
        line = f"  sample {b}: top-1 class {int(top.indices[b, 0])}"
        if logits.shape[1] > 1:
            gap = float(top.values[b, 0] - top.values[b, 1]) / float(logits[b].abs().max())
            line += f", margin {gap:.3f} of max|logit|"
            if gap < TOP1_MARGIN_WARN:
                line += " (small: top-1 may differ at fp16/bf16)"
        print(line)
    print(f"check: swin verify --model {a.model_dir} --reference {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
