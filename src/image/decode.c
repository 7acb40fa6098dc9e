/* decode.c - read image files into RGB8 (see image.h for the conversion rules): JPEG goes to
 * libjpeg-turbo (jpeg.c), binary PNM to pnm.c, the other formats to stb_image.
 *
 * stb_image is permissive: it decodes a truncated GIF, BMP or TGA without complaint, filling the
 * missing part with black. PIL refuses those ("image file is truncated"), so the checks below
 * look for the end of the data before stb sees it.
 * Test: build/tests/test_preprocess (bad-image cases at the end of tests/test_preprocess.c),
 * build/tests/test_jpeg.
 */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "image.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "jpeg.h"
#include "pnm.h"

/* ---- stb_image, compiled here only, for the formats we support */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_ONLY_TGA
#define STBI_MAX_DIMENSIONS SWIN_IMAGE_MAX_SIDE
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

typedef enum { FMT_UNKNOWN, FMT_JPEG, FMT_PNG, FMT_GIF, FMT_BMP, FMT_PNM, FMT_TGA } image_format;
static const char *const FORMAT_NAME[] = {"image", "JPEG", "PNG", "GIF", "BMP", "PNM", "TGA"};

static image_format sniff(const uint8_t *d, size_t n) {
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return FMT_JPEG;
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) return FMT_PNG;
    if (n >= 6 && (!memcmp(d, "GIF87a", 6) || !memcmp(d, "GIF89a", 6))) return FMT_GIF;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return FMT_BMP;
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7') return FMT_PNM;
    return FMT_UNKNOWN; /* TGA has no magic number: stb decides */
}

static unsigned le16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }

/* ---- the size a header claims, read without stb (whose failure reason is that of the last
 * format it tried): 1 when found. Lets us refuse huge images with a clear message. */
static int header_size(image_format fmt, const uint8_t *d, size_t n, long *w, long *h) {
    switch (fmt) {
    case FMT_PNG:
        if (n < 24) return 0;
        *w = (long)((uint32_t)d[16] << 24 | (uint32_t)d[17] << 16 | (uint32_t)d[18] << 8 | d[19]);
        *h = (long)((uint32_t)d[20] << 24 | (uint32_t)d[21] << 16 | (uint32_t)d[22] << 8 | d[23]);
        return 1;
    case FMT_GIF:
        if (n < 10) return 0;
        *w = (long)le16(d + 6);
        *h = (long)le16(d + 8);
        return 1;
    case FMT_BMP:
        if (n < 26 || le32(d + 14) < 40) return 0;
        *w = labs((long)(int32_t)le32(d + 18));
        *h = labs((long)(int32_t)le32(d + 22));
        return 1;
    case FMT_PNM: {
        long maxval;
        size_t off;
        swin_pnm_header(d, n, w, h, &maxval, &off);
        return *w > 0 && *h > 0;
    }
    case FMT_JPEG: /* the first SOFn segment: FF Cx len(2) precision(1) height(2) width(2) */
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

/* The pixel limit in force: SWIN_IMAGE_MAX_PIXELS, lower in the fuzzing build (tools/fuzz.sh sets
 * SWIN_FUZZ_MAX_PIXELS) so that a legitimate but large image, which a 64 KiB file can declare and
 * fill (PNG, GIF, RLE and progressive JPEG compress a plain picture a thousandfold), decodes within
 * libFuzzer's one-second budget under the sanitizers. The code paths are the same. */
#ifdef SWIN_FUZZ_MAX_PIXELS
#define MAX_PIXELS ((long long)SWIN_FUZZ_MAX_PIXELS)
#else
#define MAX_PIXELS SWIN_IMAGE_MAX_PIXELS
#endif

static int too_large(long w, long h) {
    return w > SWIN_IMAGE_MAX_SIDE || h > SWIN_IMAGE_MAX_SIDE || (long long)w * h > MAX_PIXELS;
}

static swin_status refuse_size(const char *name, const char *format, long w, long h) {
    return swin_fail(SWIN_ERR_IMAGE, "%s: %s of %ldx%ld pixels is too large (limits: %d per side, %lld in all)",
                     name, format, w, h, SWIN_IMAGE_MAX_SIDE, MAX_PIXELS);
}

swin_status swin_image_check_size(const char *name, const char *format, long w, long h) {
    return too_large(w, h) ? refuse_size(name, format, w, h) : SWIN_OK;
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
static int gif_prepare(uint8_t *d, size_t n) {
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

static int bmp_truncated(const uint8_t *d, size_t n) {
    if (n < 54) return n < 26;
    uint32_t off = le32(d + 10), hsz = le32(d + 14);
    if (hsz < 40) return 0;
    int64_t w = (int32_t)le32(d + 18), h = (int32_t)le32(d + 22);
    unsigned bpp = le16(d + 28);
    uint32_t comp = le32(d + 30);
    if (comp != 0 && comp != 3 && comp != 6) return 0; /* RLE and friends: stb refuses them */
    if (w < 0) w = -w;
    if (h < 0) h = -h;
    int64_t row = (w * bpp + 31) / 32 * 4;
    return (int64_t)off + row * h > (int64_t)n;
}

/* PNG: the chunks up to IEND are walked before stb sees them. A chunk cut short by the end of the
 * file is truncation: stb would first grow its buffer to the length the chunk claims (2 GiB for a
 * file of a few hundred bytes) and fail only then. And stb 2.27 adds an offset to a NULL pointer
 * (undefined behaviour) when the first IDAT chunk is empty, so empty IDATs are left out of a copy
 * for stb: *copy (malloc'd) of *n bytes. Returns 1 when truncated, -1 out of memory, else 0 (no
 * IEND: stb reports it). */
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static int png_prepare(const uint8_t *d, size_t *n, uint8_t **copy) {
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
static int tga_truncated(const uint8_t *d, size_t n) {
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

/* ---- decoding */

swin_status swin_image_decode(const void *data, size_t size, const char *name, swin_image *out) {
    int custom;
    return swin_image_decode_into(data, size, name, NULL, NULL, out, &custom);
}

swin_status swin_image_decode_into(const void *data, size_t size, const char *name, swin_image_alloc_fn alloc,
                                   void *ctx, swin_image *out, int *custom) {
    *out = (swin_image){0};
    *custom = 0;
    const uint8_t *d = data;
    if (size == 0) return swin_fail(SWIN_ERR_IMAGE, "%s: empty file", name);
    if (size > SWIN_IMAGE_MAX_FILE_BYTES || size > (size_t)INT32_MAX)
        return swin_fail(SWIN_ERR_IMAGE, "%s: file larger than %zu MiB", name,
                         SWIN_IMAGE_MAX_FILE_BYTES >> 20);
    image_format fmt = sniff(d, size);
    long hw = 0, hh = 0;
    int w = 0, h = 0, comp = 0;
    if (header_size(fmt, d, size, &hw, &hh) && too_large(hw, hh))
        return refuse_size(name, FORMAT_NAME[fmt], hw, hh);
    if (fmt == FMT_JPEG) return swin_jpeg_decode(d, size, name, alloc, ctx, out, custom);
    if (fmt == FMT_PNM) return swin_pnm_decode(d, size, name, alloc, ctx, out, custom);
    if (!stbi_info_from_memory(d, (int)size, &w, &h, &comp)) {
        const char *why = stbi_failure_reason();
        if (fmt == FMT_UNKNOWN)
            return swin_fail(SWIN_ERR_IMAGE, "%s: not an image (supported: JPEG, PNG, BMP, GIF, TGA, "
                             "PNM)", name);
        return swin_fail(SWIN_ERR_IMAGE, "%s: truncated or corrupt %s header (%s)", name,
                         FORMAT_NAME[fmt], why && *why ? why : "unknown");
    }
    if (fmt == FMT_UNKNOWN) fmt = FMT_TGA;
    hw = w;
    hh = h;
    if (w <= 0 || h <= 0 || too_large(w, h)) return refuse_size(name, FORMAT_NAME[fmt], hw, hh);

    uint8_t *copy = NULL;
    int truncated = 0;
    switch (fmt) {
    case FMT_BMP: truncated = bmp_truncated(d, size); break;
    case FMT_TGA: truncated = tga_truncated(d, size); break;
    case FMT_PNG:
        truncated = png_prepare(d, &size, &copy);
        if (truncated < 0) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
        if (copy) d = copy;
        break;
    case FMT_GIF:
        copy = malloc(size);
        if (!copy) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
        memcpy(copy, d, size);
        truncated = gif_prepare(copy, size);
        d = copy;
        break;
    default: break;
    }
    if (truncated) {
        free(copy);
        return swin_fail(SWIN_ERR_IMAGE, "%s: truncated %s (the file ends before the image data)",
                         name, FORMAT_NAME[fmt]);
    }

    int w2 = 0, h2 = 0, comp2 = 0;
    uint8_t *px = stbi_load_from_memory(d, (int)size, &w2, &h2, &comp2, 3);
    free(copy);
    if (!px) {
        const char *why = stbi_failure_reason();
        if (why && !strcmp(why, "outofmem")) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt or truncated %s (%s)", name, FORMAT_NAME[fmt],
                         why && *why ? why : "unknown");
    }
    if (w2 != w || h2 != h) { /* header and data disagree: never trust either */
        stbi_image_free(px);
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt %s (size %dx%d in the header, %dx%d decoded)",
                         name, FORMAT_NAME[fmt], w, h, w2, h2);
    }
    /* stb allocates with malloc (STBI_MALLOC is not overridden): the caller frees with free() */
    uint8_t *mine = alloc ? alloc(ctx, (size_t)w * h * 3) : NULL;
    if (mine) {
        memcpy(mine, px, (size_t)w * h * 3);
        stbi_image_free(px);
        px = mine;
        *custom = 1;
    }
    out->rgb = px;
    out->width = w;
    out->height = h;
    return SWIN_OK;
}

swin_status swin_image_read_file(const char *path, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return swin_fail(SWIN_ERR_IMAGE, "%s: cannot open (%s)", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return swin_fail(SWIN_ERR_IMAGE, "%s: is a directory", path);
    FILE *f = fopen(path, "rb");
    if (!f) return swin_fail(SWIN_ERR_IMAGE, "%s: cannot open (%s)", path, strerror(errno));
    /* read at most MAX + 1 bytes whatever stat said (the file may be a pipe or growing) */
    size_t cap = SWIN_IMAGE_MAX_FILE_BYTES + 1, len = 0;
    size_t alloc = S_ISREG(st.st_mode) && (uint64_t)st.st_size < cap ? (size_t)st.st_size + 1 : 1 << 20;
    uint8_t *buf = malloc(alloc);
    swin_status s = SWIN_OK;
    if (!buf) { fclose(f); return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path); }
    for (;;) {
        size_t got = fread(buf + len, 1, alloc - len, f);
        len += got;
        if (len < alloc) break; /* EOF or error */
        if (len >= cap) break;
        size_t na = alloc * 2 < cap ? alloc * 2 : cap;
        uint8_t *nb = realloc(buf, na);
        if (!nb) { s = swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path); break; }
        buf = nb;
        alloc = na;
    }
    if (s == SWIN_OK && ferror(f)) s = swin_fail(SWIN_ERR_IMAGE, "%s: read error", path);
    fclose(f);
    if (s != SWIN_OK) { free(buf); return s; }
    *data = buf;
    *size = len;
    return SWIN_OK;
}

swin_status swin_image_load(const char *path, swin_image *out) {
    *out = (swin_image){0};
    uint8_t *buf = NULL;
    size_t len = 0;
    SWIN_TRY(swin_image_read_file(path, &buf, &len));
    swin_status s = swin_image_decode(buf, len, path, out);
    free(buf);
    return s;
}

void swin_image_free(swin_image *img) {
    if (!img) return;
    free(img->rgb);
    *img = (swin_image){0};
}

int swin_image_has_extension(const char *path) {
    static const char *const EXT[] = {"jpg", "jpeg", "jpe", "jfif", "png", "bmp", "gif",
                                      "tga", "pnm", "ppm", "pgm"};
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return 0;
    dot++;
    for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++) {
        size_t k = 0;
        while (EXT[i][k] && dot[k] && tolower((unsigned char)dot[k]) == EXT[i][k]) k++;
        if (!EXT[i][k] && !dot[k]) return 1;
    }
    return 0;
}
