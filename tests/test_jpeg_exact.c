/* test_jpeg_exact.c - the split JPEG decode (src/image/jpeg.h: swin_jpeg_read_coefs, then
 * swin_jpeg_reconstruct with jpeg_exact.h's arithmetic) against libjpeg's whole decode
 * (swin_jpeg_decode, which test_jpeg proves equal to Pillow's pixels), bit for bit.
 *   build/tests/test_jpeg_exact <source dir> [more JPEG files...]
 * 1. every .jpg in tests/data/jpeg: the layouts the split covers (grey; YCbCr at 4:4:4, 4:2:2,
 *    4:2:0; RGB; baseline, progressive, optimised, restart markers; odd and 1-2 pixel sizes) give
 *    exactly the whole decode's pixels; CMYK is refused as unsupported (the caller decodes it
 *    whole). Prints per file the layout and the number of differing values, which must be 0;
 * 2. the same for any files given after the source dir (e.g. a folder of photos);
 * 3. a truncated file is refused with SWIN_ERR_IMAGE naming it, as the whole decode refuses it;
 *    damaged entropy-coded data is refused or decoded without a crash (under ASan+UBSan in CI).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg.h"
#include "swin.h"
#include "testutil.h"

static int g_split, g_whole_only;

/* one file: split decode vs whole decode; returns 1 when the split covered it */
static int check_file(const char *path, const uint8_t *data, size_t size) {
    swin_image ref;
    int custom = 0;
    if (swin_jpeg_decode(data, size, path, NULL, NULL, NULL, &ref, &custom) != SWIN_OK) {
        printf("skip %-48s (the whole decode refuses it: %s)\n", path, swin_last_error());
        return 0;
    }
    swin_jpeg_coefs c;
    swin_status st = swin_jpeg_read_coefs(data, size, path, &c);
    if (st == SWIN_ERR_UNSUPPORTED) {
        printf("ok   %-48s %dx%d not covered by the split: %s\n", path, ref.width, ref.height, swin_last_error());
        g_whole_only++;
        swin_image_free(&ref);
        return 0;
    }
    if (!CHECK(st == SWIN_OK, "%s: swin_jpeg_read_coefs: %s", path, swin_last_error())) {
        swin_image_free(&ref);
        return 0;
    }
    const swin_jx_image *r = &c.rec;
    CHECK(r->w == ref.width && r->h == ref.height, "%s: %dx%d against %dx%d", path, r->w, r->h, ref.width, ref.height);
    size_t n = (size_t)r->w * r->h * 3;
    uint8_t *rgb = malloc(n), *scratch = malloc(c.scratch_bytes);
    if (!CHECK(rgb && scratch, "out of memory")) goto done;
    memset(rgb, 0xA5, n);   /* poison: a pixel not written shows */
    swin_jpeg_reconstruct(&c, rgb, scratch);
    size_t diff = 0, first = n;
    int worst = 0;
    for (size_t i = 0; i < n; i++)
        if (rgb[i] != ref.rgb[i]) {
            int d = abs((int)rgb[i] - (int)ref.rgb[i]);
            if (first == n) first = i;
            if (d > worst) worst = d;
            diff++;
        }
    char layout[64];
    if (r->nc == 1) snprintf(layout, sizeof layout, "grey");
    else snprintf(layout, sizeof layout, "%s chroma %dx%d", r->ycc ? "YCbCr" : "RGB", r->fx[1], r->fy[1]);
    printf("%s %-48s %dx%d %-18s %zu of %zu values differ", diff ? "FAIL" : "ok  ", path, r->w, r->h, layout, diff, n);
    if (diff) printf(" (first at pixel %zu, largest %d levels)", first / 3, worst);
    printf("\n");
    CHECK(diff == 0, "%s: the split decode differs from the whole decode in %zu values", path, diff);
    g_split++;
done:
    free(rgb), free(scratch);
    swin_jpeg_coefs_free(&c);
    swin_image_free(&ref);
    return 1;
}

static void check_path(const char *path) {
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    if (!CHECK(data != NULL, "cannot read %s", path)) return;
    check_file(path, data, size);
    free(data);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    char dir[1024], path[1400];
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    char *names[256];
    int nn = tu_list_files(dir, ".jpg", names, 256);
    if (!CHECK(nn > 0, "no .jpg files in %s", dir)) return tu_finish("test_jpeg_exact");
    for (int i = 0; i < nn; i++) check_path(names[i]);
    /* the fixtures hold at least these layouts: the test must not pass on nothing */
    CHECK(g_split >= 15, "only %d fixtures went through the split decode (expected >= 15)", g_split);
    CHECK(g_whole_only >= 2, "the CMYK fixtures should be refused by the split (%d were)", g_whole_only);
    for (int i = 2; i < argc; i++) check_path(argv[i]);

    /* a truncated file: the same refusal as the whole decode */
    snprintf(path, sizeof path, "%s/baseline_420_160x120.jpg", dir);
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    if (CHECK(data && size > 100, "cannot read %s", path)) {
        swin_jpeg_coefs c;
        swin_status st = swin_jpeg_read_coefs(data, size / 2, "half.jpg", &c);
        printf("%s truncated: %s\n", st == SWIN_ERR_IMAGE ? "ok  " : "FAIL", swin_last_error());
        CHECK(st == SWIN_ERR_IMAGE && strstr(swin_last_error(), "half.jpg") && c.buf == NULL,
              "a truncated JPEG: %s, %s", swin_status_str(st), swin_last_error());
    }
    /* damaged entropy-coded data (byte flips past the header): refused as an image error or
     * decoded, never a crash, an overflow or a read out of bounds (this runs under ASan+UBSan in
     * tools/test.sh --sanitize). Not required to equal the whole decode: damaged data can give
     * coefficients whose IDCT overflows libjpeg-turbo's 16-bit SIMD arithmetic, whose output then
     * depends on the CPU's instruction set (valid files stay far inside it); counted and printed. */
    int refused = 0, decoded = 0, differ = 0;
    for (int t = 0; data && t < 200; t++) {
        uint8_t *bad = malloc(size);
        if (!CHECK(bad != NULL, "out of memory")) break;
        memcpy(bad, data, size);
        uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
        for (int k = 0; k < 4; k++) {
            r ^= r >> 29, r *= 0xBF58476D1CE4E5B9ull;
            bad[size / 2 + r % (size / 2 - 2)] ^= (uint8_t)(1u << (r >> 61));
        }
        swin_jpeg_coefs c;
        swin_status st = swin_jpeg_read_coefs(bad, size, "flipped.jpg", &c);
        CHECK(st == SWIN_OK || st == SWIN_ERR_IMAGE, "damaged copy %d: %s", t, swin_status_str(st));
        if (st != SWIN_OK) {
            refused++;
        } else {
            swin_image ref;
            int custom = 0;
            uint8_t *rgb = malloc((size_t)c.rec.w * c.rec.h * 3), *scratch = malloc(c.scratch_bytes);
            if (CHECK(rgb && scratch, "out of memory")) {
                swin_jpeg_reconstruct(&c, rgb, scratch);
                if (swin_jpeg_decode(bad, size, "flipped.jpg", NULL, NULL, NULL, &ref, &custom) == SWIN_OK) {
                    differ += memcmp(rgb, ref.rgb, (size_t)c.rec.w * c.rec.h * 3) != 0;
                    swin_image_free(&ref);
                }
            }
            free(rgb), free(scratch);
            swin_jpeg_coefs_free(&c);
            decoded++;
        }
        free(bad);
    }
    printf("ok   200 damaged copies: %d refused, %d decoded (%d of them not equal to the whole decode)\n", refused,
           decoded, differ);
    free(data);
    for (int i = 0; i < nn; i++) free(names[i]);
    return tu_finish("test_jpeg_exact");
}
