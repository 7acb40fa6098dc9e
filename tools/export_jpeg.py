#!/usr/bin/env python3
"""export_jpeg.py - small JPEG test files of every kind Pillow writes, and the pixels Pillow
decodes from them, for tests/test_jpeg.c.

Regenerate (overwrites the files and reference.safetensors):
    python3 tools/export_jpeg.py --out tests/data/jpeg
Test:  build/tests/test_jpeg .   (every file must decode to exactly Pillow's pixels)

Needs Pillow (13.0.0 was used) and numpy. The images are made here from formulas and a fixed
random seed (smooth colour blobs, hard colour edges and noise, so that chroma upsampling and the
IDCT matter), so they may be redistributed with the project.

reference.safetensors holds decoded.<file>: U8 [H, W, 3], Pillow's Image.open(file).convert('RGB'),
and __metadata__ maps each tensor to a one-line description of the file.
"""
import argparse
import io
import json
import os
import struct

import numpy as np
from PIL import Image


def photo(w, h, seed):
    """Photo-like RGB: smooth blobs, two saturated hard-edged stripes, fine noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.full((h, w, 3), 128.0)
    for _ in range(8):
        cx, cy, s = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(3, 0.5 * max(w, h) + 3)
        img += rng.uniform(-110, 110, 3) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * s * s))[..., None]
    img[(x + 2 * y) % 23 < 4] = (230, 20, 30)   # red diagonal stripes
    img[np.abs(x - 0.7 * w) < 1.5] = (20, 40, 235)   # a blue vertical bar
    img += rng.normal(0, 7, img.shape)
    return Image.fromarray(np.clip(np.rint(img), 0, 255).astype(np.uint8))


def jpeg_bytes(im, **kw):
    b = io.BytesIO()
    im.save(b, "JPEG", **kw)
    return b.getvalue()


def insert_after_segment(data, marker, extra):
    """Insert bytes after the first segment with this marker (FF marker len16 payload)."""
    p = 2
    while data[p + 1] != marker:
        p += 2 + struct.unpack(">H", data[p + 2:p + 4])[0]
    end = p + 2 + struct.unpack(">H", data[p + 2:p + 4])[0]
    return data[:end] + extra + data[end:]


def make_files():
    """{file name: (bytes, description)}"""
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90; Pillow (and we) ignore it
    f = {}
    f["baseline_420_160x120.jpg"] = (jpeg_bytes(photo(160, 120, 1), quality=85, subsampling=2),
                                     "baseline, 4:2:0, quality 85")
    f["baseline_422_97x61.jpg"] = (jpeg_bytes(photo(97, 61, 2), quality=90, subsampling=1),
                                   "baseline, 4:2:2, odd size")
    f["baseline_444_64x48.jpg"] = (jpeg_bytes(photo(64, 48, 3), quality=75, subsampling=0),
                                   "baseline, 4:4:4")
    f["odd_420_37x23.jpg"] = (jpeg_bytes(photo(37, 23, 4), quality=80, subsampling=2),
                              "baseline, 4:2:0, size not a multiple of the MCU")
    f["tiny_420_1x1.jpg"] = (jpeg_bytes(photo(1, 1, 5), subsampling=2), "1x1, 4:2:0")
    f["tiny_422_2x3.jpg"] = (jpeg_bytes(photo(2, 3, 6), subsampling=1), "2x3, 4:2:2")
    f["q100_444_40x24.jpg"] = (jpeg_bytes(photo(40, 24, 7), quality=100, subsampling=0),
                               "quality 100: large coefficients, clamping in the IDCT")
    f["optimized_420_80x56.jpg"] = (jpeg_bytes(photo(80, 56, 8), quality=70, optimize=True),
                                    "optimized Huffman tables")
    f["progressive_420_150x100.jpg"] = (jpeg_bytes(photo(150, 100, 9), quality=85, progressive=True),
                                        "progressive, 4:2:0")
    f["progressive_444_37x23.jpg"] = (jpeg_bytes(photo(37, 23, 10), progressive=True, subsampling=0),
                                      "progressive, 4:4:4, odd size")
    f["restart_blocks_420_120x80.jpg"] = (
        jpeg_bytes(photo(120, 80, 11), quality=80, restart_marker_blocks=3),
        "restart marker every 3 MCUs")
    f["restart_rows_422_70x50.jpg"] = (
        jpeg_bytes(photo(70, 50, 12), subsampling=1, restart_marker_rows=1),
        "restart marker every MCU row, 4:2:2")
    grey = photo(70, 50, 13).convert("L")
    f["grey_70x50.jpg"] = (jpeg_bytes(grey, quality=85), "greyscale (mode L), replicated to RGB")
    f["grey_progressive_33x47.jpg"] = (jpeg_bytes(photo(33, 47, 14).convert("L"), progressive=True),
                                       "greyscale, progressive, odd size")
    f["grey_1x1.jpg"] = (jpeg_bytes(Image.new("L", (1, 1), 77)), "greyscale 1x1")
    f["cmyk_60x40.jpg"] = (jpeg_bytes(photo(60, 40, 15).convert("CMYK"), quality=90),
                           "CMYK with an Adobe marker (inverted), Pillow's cmyk2rgb")
    cmyk = np.asarray(photo(31, 19, 16).convert("CMYK")).copy()
    cmyk[..., 3] = np.linspace(0, 255, 31)[None, :]  # a black ramp, so K matters
    f["cmyk_progressive_31x19.jpg"] = (jpeg_bytes(Image.fromarray(cmyk, "CMYK"), progressive=True),
                                       "CMYK, progressive, black ramp")
    f["rgb_nontransformed_48x32.jpg"] = (jpeg_bytes(photo(48, 32, 17), keep_rgb=True),
                                         "RGB components (Adobe transform 0), no YCbCr")
    f["exif_orientation6_40x30.jpg"] = (jpeg_bytes(photo(40, 30, 18), exif=exif.tobytes()),
                                        "EXIF orientation 6, ignored")
    small = jpeg_bytes(photo(24, 16, 19))
    f["junk_before_eoi_24x16.jpg"] = (small[:-2] + b"\x00\x17" * 5 + small[-2:],
                                      "10 junk bytes before the end marker (libjpeg warns, Pillow decodes)")
    f["junk_in_header_24x16.jpg"] = (insert_after_segment(small, 0xDB, b"\x00\x00\x00"),
                                     "3 junk bytes after a header segment (libjpeg warns, Pillow decodes)")
    return f


def save_safetensors(path, tensors, meta):
    """U8 tensors only; the format is an 8-byte header length, a JSON header, then the data."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, np.uint8)
        header[name] = {"dtype": "U8", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory (tests/data/jpeg)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tensors, meta = {}, {}
    for name, (data, what) in make_files().items():
        with open(os.path.join(args.out, name), "wb") as fp:
            fp.write(data)
        tensors[f"decoded.{name}"] = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        meta[f"decoded.{name}"] = what
    save_safetensors(os.path.join(args.out, "reference.safetensors"), tensors, meta)
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {len(tensors)} JPEG files and their references to {args.out} ({total / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
