/* formats.c - what an image file's bytes say before any decoder reads them (see formats.h): the
 * format by its magic number, the size its header claims, and whether the image data is all there.
 * stb_image decodes truncated GIF, BMP, TGA and some PNG files without complaint (black or zeros for
 * the missing part) where PIL refuses them ("image file is truncated"); these checks let decode.c
 * refuse them too, and refuse a huge declared size before any pixel memory is allocated.
 * Test: build/tests/test_preprocess (bad-image cases), tests/test_fuzz_replay.c.
 */
#include "formats.h"

#include <stdlib.h>
#include <string.h>

#include "pnm.h"

const char *const swin_format_name[] = {"image", "JPEG", "PNG", "GIF", "BMP", "PNM", "TGA"};

swin_format swin_format_sniff(const uint8_t *d, size_t n) {
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return SWIN_FMT_JPEG;
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) return SWIN_FMT_PNG;
    if (n >= 6 && (!memcmp(d, "GIF87a", 6) || !memcmp(d, "GIF89a", 6))) return SWIN_FMT_GIF;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return SWIN_FMT_BMP;
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7') return SWIN_FMT_PNM;
    return SWIN_FMT_UNKNOWN; /* TGA has no magic number: stb decides */
}

static unsigned le16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }

/* ---- the size a header claims, read without stb (whose failure reason is that of the last
 * format it tried): 1 when found. Lets us refuse huge images with a clear message. */
int swin_format_size(swin_format fmt, const uint8_t *d, size_t n, long *w, long *h) {
    switch (fmt) {
    case SWIN_FMT_PNG:
        if (n < 24) return 0;
        *w = (long)((uint32_t)d[16] << 24 | (uint32_t)d[17] << 16 | (uint32_t)d[18] << 8 | d[19]);
        *h = (long)((uint32_t)d[20] << 24 | (uint32_t)d[21] << 16 | (uint32_t)d[22] << 8 | d[23]);
        return 1;
    case SWIN_FMT_GIF:
        if (n < 10) return 0;
        *w = (long)le16(d + 6);
        *h = (long)le16(d + 8);
        return 1;
    case SWIN_FMT_BMP:
        if (n < 26 || le32(d + 14) < 40) return 0;
        *w = labs((long)(int32_t)le32(d + 18));
        *h = labs((long)(int32_t)le32(d + 22));
        return 1;
    case SWIN_FMT_PNM: {
        long maxval;
        size_t off;
        swin_pnm_header(d, n, w, h, &maxval, &off);
        return *w > 0 && *h > 0;
    }
    case SWIN_FMT_JPEG: /* the first SOFn segment: FF Cx len(2) precision(1) height(2) width(2) */
        for (size_t p = 2; p + 9 <= n;) {
            if (d[p] != 0xFF) return 0;
            uint8_t m = d[p + 1];
            if (m == 0xFF) { p++; continue; }
            if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
                *h = (long)(d[p + 5] << 8 | d[p + 6]);
                *w = (long)(d[p + 7] << 8 | d[p + 8]);
                return 1;
            }
            if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { p += 2; continue; }
            if (m == 0xDA) return 0;
            p += 2 + ((size_t)d[p + 2] << 8 | d[p + 3]);
        }
        return 0;
    default: return 0;
    }
}

/* ---- completeness checks: 1 when the file stops before its image data does */

/* Skip GIF data sub-blocks starting at *p; 1 if the terminator is missing. */
static int gif_skip_blocks(const uint8_t *d, size_t n, size_t *p) {
    while (*p < n && d[*p] != 0) *p += (size_t)d[*p] + 1;
    if (*p >= n) return 1;
    (*p)++;
    return 0;
}

/* Check the first frame is complete, and clear the transparency flag of the graphic control
 * extension before it: PIL's convert('RGB') shows the transparent index as its palette colour,
 * stb would leave those pixels black. d is our private copy. */
int swin_gif_prepare(uint8_t *d, size_t n) {
    if (n < 13) return 1;
    size_t p = 13;
    if (d[10] & 0x80) p += (size_t)3 << ((d[10] & 7) + 1);
    while (p < n) {
        if (d[p] == 0x21) { /* extension */
            if (p + 2 > n) return 1;
            uint8_t label = d[p + 1];
            p += 2;
            if (label == 0xF9 && p + 1 < n && d[p] >= 4) d[p + 1] &= (uint8_t)~1u;
            if (gif_skip_blocks(d, n, &p)) return 1;
        } else if (d[p] == 0x2C) { /* image descriptor, optional local palette, LZW data */
            if (p + 10 > n) return 1;
            uint8_t flags = d[p + 9];
            p += 10;
            if (flags & 0x80) p += (size_t)3 << ((flags & 7) + 1);
            p += 1; /* LZW minimum code size */
            if (p > n) return 1;
            return gif_skip_blocks(d, n, &p);
        } else {
            return 0; /* trailer or junk: stb reports it */
        }
    }
    return 1;
}

/* the BMP header fields both checks below read, as stb reads them: 1 when d holds a header stb accepts
 * the size of (w, h made positive), -1 when the file ends inside it, 0 for a size stb refuses */
typedef struct {
    int64_t off, hsz, w, h;
    unsigned bpp;
    int32_t comp;
} bmp_header;

static int bmp_read_header(const uint8_t *d, size_t n, bmp_header *b) {
    if (n < 18) return -1;
    b->off = le32(d + 10), b->hsz = le32(d + 14), b->comp = 0;
    if (b->hsz != 12 && b->hsz != 40 && b->hsz != 56 && b->hsz != 108 && b->hsz != 124) return 0;
    if (n < 14 + (size_t)b->hsz) return -1;
    if (b->hsz == 12) {
        b->w = le16(d + 18), b->h = le16(d + 20), b->bpp = le16(d + 24);
    } else {
        b->w = (int32_t)le32(d + 18), b->h = (int32_t)le32(d + 22), b->bpp = le16(d + 28);
        b->comp = (int32_t)le32(d + 30);
    }
    if (b->w < 0) b->w = -b->w;
    if (b->h < 0) b->h = -b->h;
    return 1;
}

/* BMP: the header as stb reads it (sizes 12, 40, 56, 108, 124; compression as a signed int, of
 * which 1, 2 and 4 up are refused by stb: no pixel rows to check then), and the rows after the
 * data offset. */
int swin_bmp_truncated(const uint8_t *d, size_t n) {
    bmp_header b;
    const int r = bmp_read_header(d, n, &b);
    if (r <= 0) return r < 0;   /* cut inside the header; or a header stb refuses */
    if (b.comp == 1 || b.comp == 2 || b.comp >= 4) return 0;
    const int64_t row = (b.w * b.bpp + 31) / 32 * 4;
    return b.off + row * b.h > (int64_t)n;
}

/* BMP with a palette (1, 4 or 8 bits a pixel): stb reads as many palette entries as the data
 * offset leaves room for (a count that can come out negative) into an array it does not clear,
 * and looks each pixel up there, so a pixel whose index is past the entries read takes its colour
 * from uninitialised memory: a different picture from run to run (found by tools/fuzz.sh image,
 * whose check decodes every file twice). Returns 1 when the data offset leaves no room for a
 * palette (*entries 0) or some pixel's index is past the palette stb reads (*entries: its size,
 * *index: the first such index), else 0. Call it after swin_bmp_truncated (a truncated file is not
 * scanned here). */
int swin_bmp_palette_short(const uint8_t *d, size_t n, int *entries, int *index) {
    *entries = *index = 0;
    bmp_header b;
    if (bmp_read_header(d, n, &b) <= 0) return 0;
    /* no palette; or stb refuses the compression (1, 2, 4 up; 3, bitfields, below 16 bits a pixel):
     * a negative value passes its checks and the pixels are read as uncompressed (fuzz) */
    if ((b.bpp != 1 && b.bpp != 4 && b.bpp != 8) || b.comp > 0) return 0;
    /* stb's count, in its integer arithmetic (int division, arithmetic shift) */
    const int64_t psize = b.hsz == 12 ? (b.off - 14 - 24) / 3 : (b.off - 14 - b.hsz) >> 2;
    if (psize == 0 || psize > 256) return 0;   /* stb refuses these itself */
    *entries = psize < 0 ? 0 : (int)psize;
    if (psize < 0) return 1;                   /* no room for a palette at all */
    const int64_t stride = (b.w * b.bpp + 31) / 32 * 4, need = (int64_t)1 << b.bpp;
    if (psize >= need) return 0;               /* every index is in the palette */
    if (b.off + stride * b.h > (int64_t)n) return 0;   /* truncated: swin_bmp_truncated refuses it */
    for (int64_t y = 0; y < b.h; y++) {
        const uint8_t *row = d + b.off + y * stride;
        for (int64_t x = 0; x < b.w; x++) {
            const int v = b.bpp == 8 ? row[x] : b.bpp == 4 ? (x & 1 ? row[x / 2] & 15 : row[x / 2] >> 4)
                                                          : (row[x / 8] >> (7 - (x & 7))) & 1;
            if (v >= psize) {
                *index = v;
                return 1;
            }
        }
    }
    return 0;
}

/* PNG: the chunks up to IEND are walked before stb sees them. A chunk cut short by the end of the
 * file is truncation: stb would first grow its buffer to the length the chunk claims (2 GiB for a
 * file of a few hundred bytes) and fail only then. And stb 2.27 adds an offset to a NULL pointer
 * (undefined behaviour) when the first IDAT chunk is empty, so empty IDATs are left out of a copy
 * for stb: *copy (malloc'd) of *n bytes. Returns 1 when truncated, -1 out of memory, else 0 (no
 * IEND: stb reports it). */
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

int swin_png_prepare(const uint8_t *d, size_t *n, uint8_t **copy) {
    int empty = 0;
    size_t p = 8, end = *n, q = 8;
    for (; p < *n; p += 12 + be32(d + p)) {
        if (*n - p < 12 || be32(d + p) > *n - p - 12) return 1;
        if (!memcmp(d + p + 4, "IEND", 4)) break;
        empty |= be32(d + p) == 0 && !memcmp(d + p + 4, "IDAT", 4);
    }
    if (!empty) return 0;
    end = p;   /* IEND or the end of the file: from there on copied as it is */
    if (!(*copy = malloc(*n))) return -1;
    memcpy(*copy, d, 8);
    for (p = 8; p < end; p += 12 + be32(d + p))
        if (be32(d + p) != 0 || memcmp(d + p + 4, "IDAT", 4)) {
            memcpy(*copy + q, d + p, 12 + be32(d + p));
            q += 12 + be32(d + p);
        }
    memcpy(*copy + q, d + end, *n - end);
    *n = q + (*n - end);
    return 0;
}

/* TGA: the pixel data must be all there; RLE data (types 9, 10, 11) is walked packet by packet
 * (a header byte, then one pixel repeated or up to 128 literal ones) until it covers the image,
 * since stb would decode zeros past the end of the file. */
int swin_tga_truncated(const uint8_t *d, size_t n) {
    if (n < 18) return 1;
    unsigned type = d[2];
    int64_t start = 18 + (int64_t)d[0], bpp = (d[16] + 7) / 8, pixels = (int64_t)le16(d + 12) * le16(d + 14);
    if (d[1]) start += (int64_t)le16(d + 5) * ((d[7] + 7) / 8);
    if (type == 1 || type == 2 || type == 3) return start + pixels * bpp > (int64_t)n;
    if (type != 9 && type != 10 && type != 11) return 0; /* stb refuses it */
    int64_t p = start;
    for (int64_t covered = 0; covered < pixels;) {
        if (p >= (int64_t)n) return 1;
        int64_t len = (d[p] & 0x7f) + 1;
        p += 1 + (d[p] & 0x80 ? 1 : len) * bpp;
        covered += len;
    }
    return p > (int64_t)n;
}
