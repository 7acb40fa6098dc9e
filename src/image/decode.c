/* decode.c - read image files into RGB8 (see image.h for the conversion rules): JPEG goes to
 * libjpeg-turbo (jpeg.c), binary PNM to pnm.c, the other formats to stb_image.
 *
 * stb_image is permissive: it decodes a truncated GIF, BMP or TGA without complaint, filling the
 * missing part with black. PIL refuses those ("image file is truncated"), so formats.c looks for
 * the end of the data, and reads the size the header claims, before stb sees the file.
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
#include "formats.h"
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

/* ---- decoding */

swin_status swin_image_decode(const void *data, size_t size, const char *name, swin_image *out) {
    int custom;
    return swin_image_decode_into(data, size, name, NULL, NULL, out, &custom);
}

swin_status swin_image_decode_into(const void *data, size_t size, const char *name, swin_image_alloc_fn alloc,
                                   void *ctx, swin_image *out, int *custom) {
    return swin_image_decode_part(data, size, name, NULL, alloc, ctx, out, custom);
}

swin_status swin_image_decode_part(const void *data, size_t size, const char *name,
                                   const struct swin_preprocess_params *part_for, swin_image_alloc_fn alloc,
                                   void *ctx, swin_image *out, int *custom) {
    *out = (swin_image){0};
    *custom = 0;
    const uint8_t *d = data;
    if (size == 0) return swin_fail(SWIN_ERR_IMAGE, "%s: empty file", name);
    if (size > SWIN_IMAGE_MAX_FILE_BYTES || size > (size_t)INT32_MAX)
        return swin_fail(SWIN_ERR_IMAGE, "%s: file larger than %zu MiB", name,
                         SWIN_IMAGE_MAX_FILE_BYTES >> 20);
    swin_format fmt = swin_format_sniff(d, size);
    long hw = 0, hh = 0;
    int w = 0, h = 0, comp = 0;
    if (swin_format_size(fmt, d, size, &hw, &hh) && too_large(hw, hh))
        return refuse_size(name, swin_format_name[fmt], hw, hh);
    if (fmt == SWIN_FMT_JPEG) return swin_jpeg_decode(d, size, name, part_for, alloc, ctx, out, custom);
    if (fmt == SWIN_FMT_PNM) return swin_pnm_decode(d, size, name, alloc, ctx, out, custom);
    if (!stbi_info_from_memory(d, (int)size, &w, &h, &comp)) {
        const char *why = stbi_failure_reason();
        if (fmt == SWIN_FMT_UNKNOWN)
            return swin_fail(SWIN_ERR_IMAGE, "%s: not an image (supported: JPEG, PNG, BMP, GIF, TGA, "
                             "PNM)", name);
        return swin_fail(SWIN_ERR_IMAGE, "%s: truncated or corrupt %s header (%s)", name,
                         swin_format_name[fmt], why && *why ? why : "unknown");
    }
    if (fmt == SWIN_FMT_UNKNOWN) fmt = SWIN_FMT_TGA;
    hw = w;
    hh = h;
    if (w <= 0 || h <= 0 || too_large(w, h)) return refuse_size(name, swin_format_name[fmt], hw, hh);

    uint8_t *copy = NULL;
    int truncated = 0;
    switch (fmt) {
    case SWIN_FMT_BMP: truncated = swin_bmp_truncated(d, size); break;
    case SWIN_FMT_TGA: truncated = swin_tga_truncated(d, size); break;
    case SWIN_FMT_PNG:
        truncated = swin_png_prepare(d, &size, &copy);
        if (truncated < 0) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
        if (copy) d = copy;
        break;
    case SWIN_FMT_GIF:
        copy = malloc(size);
        if (!copy) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
        memcpy(copy, d, size);
        truncated = swin_gif_prepare(copy, size);
        d = copy;
        break;
    default: break;
    }
    if (truncated) {
        free(copy);
        return swin_fail(SWIN_ERR_IMAGE, "%s: truncated %s (the file ends before the image data)",
                         name, swin_format_name[fmt]);
    }
    int entries, index;
    if (fmt == SWIN_FMT_BMP && swin_bmp_palette_short(d, size, &entries, &index)) {
        if (!entries)
            return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt BMP (its data offset leaves no room for the palette)", name);
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt BMP (a pixel is colour %d of a palette of %d)", name, index,
                         entries);
    }

    int w2 = 0, h2 = 0, comp2 = 0;
    uint8_t *px = stbi_load_from_memory(d, (int)size, &w2, &h2, &comp2, 3);
    free(copy);
    if (!px) {
        const char *why = stbi_failure_reason();
        if (why && !strcmp(why, "outofmem")) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt or truncated %s (%s)", name, swin_format_name[fmt],
                         why && *why ? why : "unknown");
    }
    if (w2 != w || h2 != h) { /* header and data disagree: never trust either */
        stbi_image_free(px);
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt %s (size %dx%d in the header, %dx%d decoded)",
                         name, swin_format_name[fmt], w, h, w2, h2);
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
