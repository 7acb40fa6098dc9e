#!/usr/bin/env python3
"""export_preprocess.py - synthetic test images and the reference tensors for
tests/test_preprocess.c.

Regenerate (overwrites the images and reference.safetensors; needs Pillow 13 or newer):
    python3 tools/export_preprocess.py --out tests/data/preprocess
The Pillow 12 reference (reads the images already there, writes reference_pillow12.safetensors
only; needs Pillow 12 or older, e.g. in a virtual environment with pillow==12.3.0):
    python3 tools/export_preprocess.py --out tests/data/preprocess --pillow12

Needs Pillow, numpy, torch, torchvision, timm (1.0.29 was used), transformers (5.17) and
safetensors. All images are generated here from formulas and a fixed random seed, so they
may be redistributed with the project.

reference.safetensors holds
  decoded.<file>               U8 [H, W, 3]  PIL Image.open(file).convert('RGB')
                                             (16-bit grey PNG: high byte, see src/image/image.h)
  resize.<file>.<interp>.<W>x<H> U8 [H, W, 3] PIL resize of decoded.<file>
  timm.<file>.<k>              F32 [3, S, S] timm.data.create_transform(...) eval transform
  hf.<file>.<k>                F32 [3, S, S] transformers ViTImageProcessorPil (PIL backend)
and __metadata__ maps each timm./hf. tensor to its parameters:
  "size=S crop_pct=P interp=bicubic mean=a,b,c std=d,e,f"

reference_pillow12.safetensors holds, made by Pillow 12 (which always resizes horizontally
first, where Pillow 13 runs the vertical pass first when the height shrinks more than twice as
much as the width, so the intermediate rounding differs), from the decoded.<file> pixels of
reference.safetensors:
  resize.<file>.<interp>.<W>x<H> U8 [H, W, 3]  shapes where the orders differ, and controls
  hf.<file>.<k>                F32 [3, H, W]  ViTImageProcessorPil of portrait images
and __metadata__ gives each tensor "order13=vertical_first" (Pillow 13 runs the other order and
both passes resize, so its result differs) or "order13=same"; hf tensors also their parameters,
"size=S" or "size=HxW" (height x width).
"""
import argparse
import io
import os
import struct
import sys
import zlib

import numpy as np
import PIL
from PIL import Image

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
HALF = (0.5, 0.5, 0.5)


# ---- synthetic images
def gradient_edges(w, h, seed):
    """Gradients, a checkerboard, thin lines and a hard-edged disc: resampling stress."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 255 * x / max(w - 1, 1)
    g = 255 * y / max(h - 1, 1)
    b = 127.5 + 127.5 * np.sin(x / 3.0) * np.cos(y / 5.0)
    img = np.stack([r, g, b], -1)
    img[(x // 4 + y // 4) % 2 == 0] *= 0.3                       # checkerboard
    img[::7, :, :] = 255                                          # thin white lines
    img[:, ::11, 1] = 0
    disc = (x - w * 0.6) ** 2 + (y - h * 0.4) ** 2 < (min(w, h) * 0.25) ** 2
    img[disc] = (250, 10, 40)
    rng = np.random.default_rng(seed)
    img += rng.normal(0, 6, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def smooth_noise(w, h, seed):
    """Photo-like: smooth blobs plus fine noise (JPEG-friendly)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    for _ in range(12):
        cx, cy, s = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(8, 60)
        col = rng.uniform(-120, 120, 3)
        img += col * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * s * s))[..., None]
    img += 128 + rng.normal(0, 12, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def png16(arr, color_type):
    """Minimal 16-bit PNG writer (PIL cannot write 16-bit RGB)."""
    h, w = arr.shape[:2]
    raw = b"".join(b"\x00" + arr[i].astype(">u2").tobytes() for i in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


def make_images(out):
    """Write the test images; return {file name: decoded RGB uint8 array}."""
    files = {}

    def save(name, im, **kw):
        im.save(os.path.join(out, name), **kw)
        files[name] = None

    save("grad_97x61.png", Image.fromarray(gradient_edges(97, 61, 1)))
    save("noise_300x200_progressive.jpg", Image.fromarray(smooth_noise(300, 200, 2)),
         quality=90, progressive=True)
    save("photo_160x120_420.jpg", Image.fromarray(smooth_noise(160, 120, 3)),
         quality=85, subsampling=2)
    save("grey_64x80.png", Image.fromarray(gradient_edges(64, 80, 4)).convert("L"))
    rgba = np.dstack([gradient_edges(120, 90, 5), np.tile(np.linspace(0, 255, 120), (90, 1))])
    save("rgba_120x90.png", Image.fromarray(rgba.astype(np.uint8), "RGBA"))
    pal = Image.fromarray(gradient_edges(70, 50, 6)).quantize(colors=16)
    save("palette_70x50.png", pal, transparency=3)
    rng = np.random.default_rng(7)
    with open(os.path.join(out, "rgb16_40x30.png"), "wb") as f:
        f.write(png16(rng.integers(0, 65536, (30, 40, 3)).astype(np.uint16), 2))
    files["rgb16_40x30.png"] = None
    grey16 = (np.mgrid[0:21, 0:33][1] * 2000 + rng.integers(0, 300, (21, 33))).astype(np.uint16)
    with open(os.path.join(out, "grey16_33x21.png"), "wb") as f:
        f.write(png16(grey16, 0))
    files["grey16_33x21.png"] = None
    save("bmp_50x40.bmp", Image.fromarray(gradient_edges(50, 40, 8)))
    gif = Image.fromarray(gradient_edges(45, 35, 9)).quantize(colors=32)
    save("gif_45x35.gif", gif, transparency=5)
    save("tga_30x20.tga", Image.fromarray(gradient_edges(30, 20, 10)))
    save("ppm_31x17.ppm", Image.fromarray(gradient_edges(31, 17, 11)))

    for name in files:
        im = Image.open(os.path.join(out, name))
        if im.mode == "I;16":  # PIL clips to 255; we (and src/image/image.h) keep the high byte
            a = np.array(im).astype(np.uint16) >> 8
            files[name] = np.repeat(a.astype(np.uint8)[..., None], 3, -1)
        else:
            files[name] = np.array(im.convert("RGB"))
    return files


# ---- reference transforms
INTERP = {"nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR,
          "bicubic": Image.Resampling.BICUBIC}

RESIZES = [  # (file, [(w, h), ...]): up, down, one axis only, tiny, nearly equal
    ("grad_97x61.png", [(120, 80), (40, 25), (97, 30), (33, 61), (7, 5), (96, 62)]),
    ("noise_300x200_progressive.jpg", [(72, 48), (90, 60), (301, 40), (1, 1)]),
    ("grey_64x80.png", [(80, 100)]),
]

TIMM = [  # (file, size, crop_pct, interp, mean, std)
    ("grad_97x61.png", 64, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("grad_97x61.png", 48, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),     # half-to-even crop
    ("grad_97x61.png", 64, 1.2, "bilinear", IMAGENET_MEAN, IMAGENET_STD),    # zero padding
    ("grad_97x61.png", 40, 0.875, "nearest", HALF, HALF),
    ("noise_300x200_progressive.jpg", 64, 0.875, "bilinear", IMAGENET_MEAN, IMAGENET_STD),
    ("noise_300x200_progressive.jpg", 56, 1.0, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("photo_160x120_420.jpg", 64, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("grey_64x80.png", 48, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("rgba_120x90.png", 48, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("palette_70x50.png", 32, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("rgb16_40x30.png", 32, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("grey16_33x21.png", 32, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("bmp_50x40.bmp", 32, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("gif_45x35.gif", 32, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("tga_30x20.tga", 32, 0.9, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("ppm_31x17.ppm", 32, 0.9, "bilinear", IMAGENET_MEAN, IMAGENET_STD),
]

HF = [  # (file, size, interp, mean, std)
    ("grad_97x61.png", 64, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("noise_300x200_progressive.jpg", 64, "bicubic", HALF, HALF),
    ("photo_160x120_420.jpg", 48, "bilinear", IMAGENET_MEAN, IMAGENET_STD),
    ("rgba_120x90.png", 32, "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("gif_45x35.gif", 45, "bicubic", IMAGENET_MEAN, IMAGENET_STD),              # width unchanged
]


# Pillow 12: shapes where Pillow 13 resizes vertically first (the height shrinks more than twice
# as much as the width, and both sides change), and controls where both versions agree
PILLOW12_RESIZES = [  # (file, [(w, h, interps), ...])
    ("grad_97x61.png", [(90, 20, ("bicubic", "bilinear")), (110, 16, ("bicubic",)),  # order differs
                        (80, 26, ("bicubic",)),      # just over the rule: 35 > 2 * 17
                        (80, 27, ("bicubic",)),      # just under: 34 = 2 * 17, same order
                        (97, 10, ("bilinear",)),     # the rule fires, one pass only: same
                        (40, 25, ("bicubic",))]),    # the rule does not fire
    ("grey_64x80.png", [(40, 20, ("bicubic", "bilinear")), (32, 40, ("bicubic",))]),
    ("photo_160x120_420.jpg", [(150, 12, ("bicubic",))]),
]

PILLOW12_HF = [  # (file, (height, width), interp, mean, std): a portrait image made smaller
    ("grey_64x80.png", (49, 49), "bicubic", IMAGENET_MEAN, IMAGENET_STD),
    ("grey_64x80.png", (20, 36), "bilinear", HALF, HALF),
]


def params(size, crop_pct, interp, mean, std):
    f = lambda v: ",".join(repr(float(x)) for x in v)
    return f"size={size} crop_pct={crop_pct!r} interp={interp} mean={f(mean)} std={f(std)}"


def order13(w, h, ow, oh):
    """Pillow 13 resizes vertically first ((h - oh) > 0 and (h - oh) > 2 (w - ow), Resample.c
    ImagingResampleInner) and both passes run: then its result differs from Pillow 12's."""
    v_first = h - oh > 0 and h - oh > (w - ow) * 2
    return "vertical_first" if v_first and w != ow else "same"


def hf_processor(size, interp, mean, std):
    from transformers.image_utils import PILImageResampling
    from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil
    h, w = size if isinstance(size, tuple) else (size, size)
    return ViTImageProcessorPil(size={"height": h, "width": w},
                                resample=PILImageResampling[interp.upper()],
                                image_mean=list(mean), image_std=list(std))


def pillow_major():
    return int(PIL.__version__.split(".")[0])


def write_pillow12(out):
    """reference_pillow12.safetensors from the images in out, checked to decode to the pixels
    that reference.safetensors holds (the C test resizes those)."""
    from safetensors.numpy import load_file, save_file
    ref = load_file(os.path.join(out, "reference.safetensors"))
    decoded = {}
    for name in {n for n, _ in PILLOW12_RESIZES} | {n for n, *_ in PILLOW12_HF}:
        rgb = np.array(Image.open(os.path.join(out, name)).convert("RGB"))
        if not np.array_equal(rgb, ref[f"decoded.{name}"]):
            sys.exit(f"{name}: Pillow {PIL.__version__} decodes it differently from reference.safetensors")
        decoded[name] = rgb
    tensors, meta = {}, {}
    for name, shapes in PILLOW12_RESIZES:
        src = Image.fromarray(decoded[name])
        for w, h, interps in shapes:
            for interp in interps:
                key = f"resize.{name}.{interp}.{w}x{h}"
                tensors[key] = np.array(src.resize((w, h), INTERP[interp]))
                meta[key] = f"order13={order13(src.width, src.height, w, h)}"
    for k, (name, (h, w), interp, mean, std) in enumerate(PILLOW12_HF):
        out_px = hf_processor((h, w), interp, mean, std)(Image.fromarray(decoded[name]), return_tensors="np")
        key = f"hf.{name}.{k}"
        tensors[key] = np.ascontiguousarray(out_px["pixel_values"][0].astype(np.float32))
        size = h if h == w else f"{h}x{w}"
        rows, cols = decoded[name].shape[:2]
        meta[key] = params(size, 1.0, interp, mean, std) + f" order13={order13(cols, rows, w, h)}"
    path = os.path.join(out, "reference_pillow12.safetensors")
    save_file(tensors, path, metadata=meta)
    os.chmod(path, 0o644)
    print(f"wrote {len(tensors)} tensors made by Pillow {PIL.__version__} to {path} "
          f"({os.path.getsize(path) / 1e3:.0f} kB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory (tests/data/preprocess)")
    ap.add_argument("--pillow12", action="store_true",
                    help="write reference_pillow12.safetensors from the images in --out (Pillow <= 12)")
    args = ap.parse_args()
    if args.pillow12:
        if pillow_major() >= 13:
            sys.exit(f"--pillow12 needs Pillow 12 or older; this is Pillow {PIL.__version__}")
        write_pillow12(args.out)
        return
    if pillow_major() < 13:
        sys.exit(f"reference.safetensors follows Pillow 13's resize; this is Pillow {PIL.__version__} "
                 f"(run with Pillow 13, or use --pillow12)")
    os.makedirs(args.out, exist_ok=True)

    import timm.data
    from safetensors.numpy import save_file

    decoded = make_images(args.out)
    tensors, meta = {}, {}
    for name, rgb in decoded.items():
        tensors[f"decoded.{name}"] = np.ascontiguousarray(rgb)
    for name, sizes in RESIZES:
        src = Image.fromarray(decoded[name])
        for w, h in sizes:
            for interp, mode in INTERP.items():
                tensors[f"resize.{name}.{interp}.{w}x{h}"] = np.array(src.resize((w, h), mode))
    for k, (name, size, crop_pct, interp, mean, std) in enumerate(TIMM):
        tf = timm.data.create_transform(input_size=(3, size, size), crop_pct=crop_pct,
                                        interpolation=interp, mean=mean, std=std)
        key = f"timm.{name}.{k}"
        tensors[key] = tf(Image.fromarray(decoded[name])).numpy().astype(np.float32)
        meta[key] = params(size, crop_pct, interp, mean, std)
    for k, (name, size, interp, mean, std) in enumerate(HF):
        proc = hf_processor(size, interp, mean, std)
        out = proc(Image.fromarray(decoded[name]), return_tensors="np")["pixel_values"][0]
        key = f"hf.{name}.{k}"
        tensors[key] = np.ascontiguousarray(out.astype(np.float32))
        meta[key] = params(size, 1.0, interp, mean, std)
    path = os.path.join(args.out, "reference.safetensors")
    save_file(tensors, path, metadata=meta)
    os.chmod(path, 0o644)
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {len(decoded)} images and {len(tensors)} tensors to {args.out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
