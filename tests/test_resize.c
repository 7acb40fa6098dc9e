/* test_resize.c - every CPU resize kernel makes the same bytes as the reference (the plain C
 * loops of src/image/resize.c, themselves checked against Pillow by test_preprocess).
 *   build/tests/test_resize
 * Table-driven: each case names a resize and a window; it runs with bilinear and bicubic, in
 * Pillow 12's and Pillow 13's pass order, on a source of noise and saturated blocks (so that the
 * negative lobes clamp at 0 and 255), with guard bytes after the output. Without AVX2 on this
 * CPU the AVX2 kernel must be refused, and AUTO must still match. Each resize (nearest too) is
 * also moved onto parts of its source (swin_resize_plan_to_part, what a part decode's image
 * needs) and must make the same bytes there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resize.h"
#include "testutil.h"

enum { GUARD = 32 };

static const struct {
    const char *what;
    int sw, sh, dw, dh, wx0, wy0, ww, wh;
} CASES[] = {
    {"timm 224, landscape photo", 500, 375, 330, 248, 53, 12, 224, 224},
    {"timm 224, portrait photo", 375, 500, 248, 330, 12, 53, 224, 224},
    {"hf 224, portrait (Pillow 13: vertical first)", 333, 500, 224, 224, 0, 0, 224, 224},
    {"downscale 2.5x: 3 groups of taps", 640, 480, 256, 192, 16, -16, 224, 224},
    {"downscale 16x: any number of groups", 1000, 800, 60, 50, 0, 0, 60, 50},
    {"upscale: 1 group", 4, 3, 13, 11, 0, 0, 13, 11},
    {"one pixel", 1, 1, 7, 5, 0, 0, 7, 5},
    {"rows under 16 bytes: the reference runs", 5, 4, 3, 2, 0, 0, 3, 2},
    {"window over every edge", 97, 61, 300, 20, 100, -3, 250, 30},
    {"window larger than the image", 17, 9, 6, 9, -2, -2, 10, 13},
    {"width unchanged, tall", 20, 700, 20, 100, 0, 0, 20, 100},
    {"height unchanged", 700, 20, 100, 20, 3, 0, 90, 20},
    {"odd sizes", 61, 97, 37, 59, 5, 7, 31, 47},
};

static void fill_source(uint8_t *src, int w, int h) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                int block = ((x / 7) + (y / 5) + c) % 4; /* 0: noise, 1: black, 2: white, 3: noise */
                src[((size_t)y * w + x) * 3 + c] = block == 1 ? 0 : block == 2 ? 255 : (uint8_t)tu_uniform(0, 256);
            }
}

/* out [wh * ww * 3 + GUARD] <- the plan applied by kernel k */
static swin_status apply(const swin_resize_plan *pl, swin_resize_kernel k, const uint8_t *src, uint8_t *out,
                         size_t bytes) {
    memset(out, 0xA5, bytes + GUARD);
    return swin_resize_plan_apply_kernel(pl, k, src, out);
}

static int guards_intact(const uint8_t *out, size_t bytes) {
    for (int g = 0; g < GUARD; g++)
        if (out[bytes + g] != 0xA5) return 0;
    return 1;
}

/* swin_resize_plan_to_part: the plan moved onto a part of the source (the part decode's) makes the
 * same window as the whole plan on the whole source, for the exact part it reads, that part with
 * random margins, and the whole image; a part one column or row short is refused. 1 when all hold. */
static int check_parts(int i, swin_interp interp, int pillow, const uint8_t *src, const uint8_t *ref, size_t bytes,
                       uint8_t *got) {
    const int sw = CASES[i].sw, sh = CASES[i].sh;
    swin_resize_plan pl;
    if (swin_resize_plan_make(sw, sh, CASES[i].dw, CASES[i].dh, CASES[i].wx0, CASES[i].wy0, CASES[i].ww, CASES[i].wh,
                              interp, pillow, &pl) != SWIN_OK)
        return 0;
    swin_rect need;
    swin_resize_plan_source(&pl, &need);
    swin_resize_plan_free(&pl);
    if (need.x0 == need.x1) need = (swin_rect){0, 0, 1, 1};   /* nothing read: any part will do */
    int ok = 1;
    for (int t = 0; t < 5; t++) {
        swin_rect r = need;
        if (t == 1 || t == 2) {   /* random margins */
            r.x0 -= tu_uniform(0, 1 + r.x0), r.y0 -= tu_uniform(0, 1 + r.y0);
            r.x1 += tu_uniform(0, 1 + sw - r.x1), r.y1 += tu_uniform(0, 1 + sh - r.y1);
        }
        if (t == 3) r = (swin_rect){0, 0, sw, sh};
        const int short_x = t == 4 && need.x1 - need.x0 > 1;   /* one column short: refused */
        if (t == 4) {
            if (short_x) r.x1--;
            else if (need.y1 - need.y0 > 1) r.y1--;
            else continue;
        }
        const int w = r.x1 - r.x0, h = r.y1 - r.y0;
        uint8_t *part = malloc((size_t)w * h * 3);
        for (int y = 0; part && y < h; y++)
            memcpy(part + (size_t)y * w * 3, src + ((size_t)(r.y0 + y) * sw + r.x0) * 3, (size_t)w * 3);
        const swin_status made = swin_resize_plan_make(sw, sh, CASES[i].dw, CASES[i].dh, CASES[i].wx0,
                                                       CASES[i].wy0, CASES[i].ww, CASES[i].wh, interp, pillow, &pl);
        swin_status st = made == SWIN_OK ? swin_resize_plan_to_part(&pl, r.x0, r.y0, w, h) : made;
        if (t == 4) {
            ok &= CHECK(st == SWIN_ERR_ARGUMENT, "%s: a part one %s short of what the plan reads was taken (%d)",
                        CASES[i].what, short_x ? "column" : "row", st);
        } else {
            ok &= CHECK(st == SWIN_OK && apply(&pl, SWIN_RESIZE_KERNEL_AUTO, part, got, bytes) == SWIN_OK &&
                            !memcmp(got, ref, bytes) && guards_intact(got, bytes),
                        "%s (interp %d, Pillow %d): the plan on part [%d, %d) x [%d, %d) makes other bytes",
                        CASES[i].what, (int)interp, pillow, r.x0, r.x1, r.y0, r.y1);
        }
        if (made == SWIN_OK) swin_resize_plan_free(&pl);   /* a refused move leaves the plan as it was */
        free(part);
    }
    return ok;
}

int main(void) {
    const swin_interp INTERP[] = {SWIN_INTERP_BILINEAR, SWIN_INTERP_BICUBIC};
    const int PILLOW[] = {12, 13};
    int have_avx2 = 0, compared = 0, parts = 0;
    tu_seed(7);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        int sw = CASES[i].sw, sh = CASES[i].sh;
        size_t bytes = (size_t)CASES[i].ww * CASES[i].wh * 3;
        uint8_t *src = malloc((size_t)sw * sh * 3), *ref = malloc(bytes + GUARD), *got = malloc(bytes + GUARD);
        fill_source(src, sw, sh);
        for (int m = 0; m < 2; m++)
            for (int v = 0; v < 2; v++) {
                swin_resize_plan pl;
                if (!CHECK(swin_resize_plan_make(sw, sh, CASES[i].dw, CASES[i].dh, CASES[i].wx0, CASES[i].wy0,
                                                 CASES[i].ww, CASES[i].wh, INTERP[m], PILLOW[v], &pl) == SWIN_OK,
                           "%s: plan: %s", CASES[i].what, swin_last_error()))
                    continue;
                CHECK(apply(&pl, SWIN_RESIZE_KERNEL_C, src, ref, bytes) == SWIN_OK && guards_intact(ref, bytes),
                      "%s: reference kernel failed or wrote past the window", CASES[i].what);
                swin_status avx2 = apply(&pl, SWIN_RESIZE_KERNEL_AVX2, src, got, bytes);
                if (avx2 == SWIN_OK) {
                    have_avx2 = 1;
                    size_t differ = 0;
                    for (size_t b = 0; b < bytes; b++) differ += got[b] != ref[b];
                    CHECK(differ == 0 && guards_intact(got, bytes), "%s (%s, Pillow %d, %s first): AVX2 differs "
                          "from the reference in %zu of %zu bytes, guards %s", CASES[i].what,
                          m ? "bicubic" : "bilinear", PILLOW[v], pl.h_first ? "horizontal" : "vertical", differ,
                          bytes, guards_intact(got, bytes) ? "intact" : "overwritten");
                    compared++;
                } else {
                    CHECK(avx2 == SWIN_ERR_UNSUPPORTED, "%s: AVX2 refused with %s", CASES[i].what,
                          swin_last_error());
                }
                CHECK(apply(&pl, SWIN_RESIZE_KERNEL_AUTO, src, got, bytes) == SWIN_OK && !memcmp(got, ref, bytes),
                      "%s: the default kernel differs from the reference", CASES[i].what);
                swin_resize_plan_free(&pl);
                parts += check_parts((int)i, INTERP[m], PILLOW[v], src, ref, bytes, got);
            }
        swin_resize_plan pn;   /* nearest: the parts alone (one pass, no kernels to compare) */
        if (swin_resize_plan_make(sw, sh, CASES[i].dw, CASES[i].dh, CASES[i].wx0, CASES[i].wy0, CASES[i].ww,
                                  CASES[i].wh, SWIN_INTERP_NEAREST, 13, &pn) == SWIN_OK) {
            CHECK(apply(&pn, SWIN_RESIZE_KERNEL_AUTO, src, ref, bytes) == SWIN_OK, "%s: nearest", CASES[i].what);
            swin_resize_plan_free(&pn);
            parts += check_parts((int)i, SWIN_INTERP_NEAREST, 13, src, ref, bytes, got);
        }
        free(src);
        free(ref);
        free(got);
    }
    printf("plans moved onto parts of the source: %d of %d resizes gave the same bytes on 4 parts each\n", parts,
           (int)(sizeof CASES / sizeof CASES[0]) * 5);
    if (have_avx2)
        printf("resize kernels: AVX2 identical to the reference on %d resizes\n", compared);
    else
        printf("resize kernels: no AVX2 on this CPU; AUTO checked against the reference only\n");
    return tu_finish("test_resize");
}
