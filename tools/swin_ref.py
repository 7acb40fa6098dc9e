"""swin_ref.py - what tools/export_reference.py and tools/make_reference.py share: the stage
outputs a reference file holds, recorded from a timm or transformers Swin, and the timm forward
with an absolute position embedding (MS-original checkpoints; timm >= 0.9 has none).

A reference file (read by `swin verify`, src/cli/cmd_verify.c) holds
    input   F32 [B, 3, H, W]   normalised pixels
    logits  F32 [B, classes]
    stageK  F32 [B, H_K, W_K, C_K]  output of stage K after its blocks (before the next merge)

    mods = stage_modules(model)                    # one module per stage: its last block
    with StageRecorder(mods) as rec:
        logits = model(x)
    tensors = {"input": ..., "logits": ..., **rec.tensors()}
Imported with tools/ on sys.path (the scripts next to it do that by being run from there).
"""
import math

import torch


def stage_modules(model):
    """The module whose output is stage K's output, for each stage: the last block of the stage
    (timm: model.layers[K].blocks[-1], output [B, H, W, C]; transformers: encoder.layers[K].blocks[-1]
    of model.swin / model.swinv2, output ([B, H*W, C], ...))."""
    if hasattr(model, "layers"):                               # timm
        return [layer.blocks[-1] for layer in model.layers]
    base = getattr(model, "swinv2", None) or getattr(model, "swin", None)
    if base is None:
        raise ValueError(f"{type(model).__name__}: neither a timm Swin (model.layers) nor a "
                         "transformers Swin(v2)ForImageClassification")
    return [layer.blocks[-1] for layer in base.encoder.layers]


def _hw_of(args, kwargs, tokens):
    """(H, W) of a transformers block call: its input_dimensions argument, else a square."""
    dims = kwargs.get("input_dimensions", args[1] if len(args) > 1 else None)
    if dims is not None:
        return int(dims[0]), int(dims[1])
    side = int(round(math.sqrt(tokens)))
    if side * side != tokens:
        raise ValueError(f"stage output of {tokens} tokens without input_dimensions: not a square")
    return side, side


class StageRecorder:
    """Forward hooks on the stage modules; tensors() gives {"stageK": F32 [B, H, W, C]} of the
    last forward that ran inside the `with` block."""

    def __init__(self, modules):
        self.modules = list(modules)
        self.feats = {}
        self.hooks = []

    def _hook(self, k):
        def hook(mod, args, kwargs, out):
            f = out[0] if isinstance(out, tuple) else out
            if f.dim() == 3:                                   # transformers blocks: [B, L, C]
                h, w = _hw_of(args, kwargs, f.shape[1])
                f = f.reshape(f.shape[0], h, w, f.shape[2])
            self.feats[k] = f.detach()
        return hook

    def __enter__(self):
        self.hooks = [m.register_forward_hook(self._hook(k), with_kwargs=True)
                      for k, m in enumerate(self.modules)]
        return self

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()
        self.hooks = []
        return False

    def tensors(self):
        return {f"stage{k}": f.float().contiguous() for k, f in sorted(self.feats.items())}


def timm_add_abs_pos(model, pos=None):
    """Give a timm Swin the absolute position embedding that timm >= 0.9 dropped (`ape`): registers
    `absolute_pos_embed` [1, L, C] (zeros unless pos is given) and returns forward(x) -> logits that
    adds it after the patch embedding, as MS-original Swin did."""
    if pos is None:
        L = math.prod(model.patch_embed.grid_size)
        pos = torch.zeros(1, L, model.patch_embed.proj.out_channels)
    model.register_parameter("absolute_pos_embed", torch.nn.Parameter(pos))

    def forward(x):
        h = model.patch_embed(x)                               # [B, H, W, C] after patch norm
        h = h + model.absolute_pos_embed.reshape(h.shape[1:]).unsqueeze(0)
        h = model.norm(model.layers(h))
        return model.forward_head(h)

    return forward
