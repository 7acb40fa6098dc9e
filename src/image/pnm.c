/* pnm.c - binary PNM (P5 grey, P6 RGB) to RGB8, as Pillow's PpmImagePlugin decodes it:
 * samples of one byte (maxval < 256) or two big-endian bytes, each clamped to maxval and scaled to
 * 0..255 by round(v / maxval * 255) (Python's round: half to even; maxval 255 is read as is).
 * Pillow opens a P5 with maxval > 255 as mode I and convert('RGB') then clips it to 255 (white);
 * here it is scaled like a P6 (image.h lists it with the 16-bit grey PNGs).
 * Done here, not by stb_image: Debian's stb 2.27 reads 16-bit samples in the wrong byte order,
 * overflows its buffer converting 16-bit grey to RGB, overflows an int on a long maxval, ignores
 * maxval otherwise and leaves a truncated file's missing pixels uninitialised (tools/fuzz.sh
 * found the overflows).
 * Test: build/tests/test_preprocess (PNM cases), tests/test_fuzz_replay.c.
 */
#include "pnm.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "jpeg.h" /* swin_image_check_size */

/* the next number after whitespace and '#' comments; 0 when there is none */
static int pnm_int(const uint8_t *d, size_t n, size_t *p, long *v) {
    for (;;) {
        while (*p < n && isspace(d[*p])) (*p)++;
        if (*p < n && d[*p] == '#') {
            while (*p < n && d[*p] != '\n') (*p)++;
            continue;
        }
        break;
    }
    if (*p >= n || !isdigit(d[*p])) return 0;
    *v = 0;   /* every digit is read; past 9 digits the value sticks at 10^9 */
    for (; *p < n && isdigit(d[*p]); (*p)++) *v = *v >= 100000000L ? 1000000000L : *v * 10 + (d[*p] - '0');
    return 1;
}

int swin_pnm_header(const uint8_t *d, size_t n, long *w, long *h, long *maxval, size_t *offset) {
    size_t p = 2;
    if (!pnm_int(d, n, &p, w) || !pnm_int(d, n, &p, h) || !pnm_int(d, n, &p, maxval) || p >= n) return 0;
    *offset = p + 1;   /* one whitespace byte, then the pixels */
    return 1;
}

swin_status swin_pnm_decode(const uint8_t *d, size_t n, const char *name, swin_image_alloc_fn alloc, void *ctx,
                            swin_image *out, int *custom) {
    *out = (swin_image){0};
    *custom = 0;
    if (n < 2 || (d[1] != '5' && d[1] != '6'))
        return swin_fail(SWIN_ERR_IMAGE, "%s: unsupported PNM (P%c; the binary P5 and P6 are read)", name,
                         n >= 2 ? d[1] : '?');
    long w = 0, h = 0, maxval = 0;
    size_t off = 0;
    if (!swin_pnm_header(d, n, &w, &h, &maxval, &off))
        return swin_fail(SWIN_ERR_IMAGE, "%s: truncated or corrupt PNM header", name);
    if (w < 1 || h < 1) return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt PNM header (%ldx%ld pixels)", name, w, h);
    SWIN_TRY(swin_image_check_size(name, "PNM", w, h));
    if (maxval < 1 || maxval > 65535)
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt PNM header (maxval %ld, expected 1 to 65535)", name, maxval);
    size_t ch = d[1] == '6' ? 3 : 1, bytes = maxval > 255 ? 2 : 1, samples = (size_t)w * (size_t)h * ch;
    if (off > n || samples * bytes > n - off)
        return swin_fail(SWIN_ERR_IMAGE, "%s: truncated PNM (the file ends before the image data)", name);
    size_t pixels = (size_t)w * (size_t)h;
    uint8_t *rgb = alloc ? alloc(ctx, pixels * 3) : NULL;
    if (rgb) *custom = 1;
    else if (!(rgb = malloc(pixels * 3))) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", name);
    uint8_t lut[256];   /* one-byte samples */
    for (long v = 0; v < 256 && bytes == 1; v++) lut[v] = (uint8_t)nearbyint((v < maxval ? v : maxval) / (double)maxval * 255.0);
    const uint8_t *s = d + off;
    for (size_t i = 0; i < samples; i++) {
        uint8_t v;
        if (bytes == 1) {
            v = lut[s[i]];
        } else {
            long x = (long)s[2 * i] << 8 | s[2 * i + 1];
            v = (uint8_t)nearbyint((x < maxval ? x : maxval) / (double)maxval * 255.0);
        }
        if (ch == 3) rgb[i] = v;
        else rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = v;
    }
    out->rgb = rgb;
    out->width = (int)w;
    out->height = (int)h;
    return SWIN_OK;
}
