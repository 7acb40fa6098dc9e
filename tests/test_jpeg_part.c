/* test_jpeg_part.c - decoding only the part of a JPEG that preprocessing reads
 * (swin_image_decode_part, src/image/jpeg.c) gives the whole decode's pixels there, and the same
 * preprocessed input, bit for bit; broken files are refused as a whole decode refuses them.
 *   build/tests/test_jpeg_part <source dir>
 * 1. JPEGs made here with libjpeg's encoder: grey, 4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1, CMYK and
 *    YCCK; baseline, progressive (also with scans left out, so that libjpeg smooths the blocks
 *    with their neighbours' DC values), with restart intervals, arithmetic-coded; random sizes from 40 to 720 pixels and
 *    smooth colour gradients under noise (so that chroma upsampling at a crop's edges would show),
 *    against six preprocessing geometries (timm at 224, 384 and 48 pixels, bicubic, bilinear and
 *    nearest, Pillow 12's and 13's pass order; hf, which reads every pixel). For each: the part
 *    holds what swin_preprocess_source_rect names, its pixels there are the whole decode's, and
 *    swin_preprocess_image of the part equals that of the whole image. Counts how many were
 *    decoded in part (a test of parts that never happen would pass vacuously) and how many pixels
 *    in the margins differed (libjpeg's crop edges: allowed there, and the reason for the margins).
 * 2. The committed fixtures (tests/data/jpeg: every kind Pillow reads) at 32 and 48 pixels.
 * 3. Broken files: each encoded file truncated at several points (most of them in the rows below
 *    the part, which a part decode still reads) and with an end-of-image marker put into its
 *    entropy-coded data: the part decode's status and message are the whole decode's. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "image.h"
#include "preprocess.h"
#include "swin.h"
#include "jpeg_encode.h"
#include "testutil.h"

// ---- geometries
static swin_preprocess_params geometry(int size, float crop_pct, swin_interp interp, swin_preprocess_style style,
                                       int pillow) {
    swin_preprocess_params p;
    memset(&p, 0, sizeof p);
    p.style = style, p.interp = interp, p.size = size, p.crop_pct = crop_pct, p.pillow = pillow;
    for (int c = 0; c < 3; c++) p.mean[c] = 0.45f + 0.01f * c, p.std[c] = 0.22f + 0.01f * c;
    return p;
}

static swin_preprocess_params g_geo[6];
static const char *const GEO_NAME[6] = {"timm 224 bicubic 0.9 (Pillow 12)", "timm 224 bilinear 0.875 (Pillow 13)",
                                        "timm 384 bicubic 1.0 (Pillow 13)", "timm 224 nearest 0.9",
                                        "timm 48 bicubic 0.95 (Pillow 12)", "hf 224 bicubic"};

static void make_geometries(void) {
    g_geo[0] = geometry(224, 0.9f, SWIN_INTERP_BICUBIC, SWIN_PRE_TIMM, 12);
    g_geo[1] = geometry(224, 0.875f, SWIN_INTERP_BILINEAR, SWIN_PRE_TIMM, 13);
    g_geo[2] = geometry(384, 1.0f, SWIN_INTERP_BICUBIC, SWIN_PRE_TIMM, 13);
    g_geo[3] = geometry(224, 0.9f, SWIN_INTERP_NEAREST, SWIN_PRE_TIMM, 12);
    g_geo[4] = geometry(48, 0.95f, SWIN_INTERP_BICUBIC, SWIN_PRE_TIMM, 12);
    g_geo[5] = geometry(224, 0.9f, SWIN_INTERP_BICUBIC, SWIN_PRE_HF, 12);
}

// ---- the check of one file against one geometry
static long g_cases, g_parts, g_margin_diff;

/* 1 when the part decode of d agrees with the whole decode (wh) for geometry p */
static int check_part(const uint8_t *d, size_t n, const char *name, const swin_image *wh,
                      const swin_preprocess_params *p, const char *geo) {
    g_cases++;
    swin_image part;
    int custom = 0;
    if (!CHECK(swin_image_decode_part(d, n, name, p, NULL, NULL, &part, &custom) == SWIN_OK, "%s, %s: part decode "
              "failed: %s", name, geo, swin_last_error()))
        return 0;
    int ok = 1;
    const int W = wh->width, H = wh->height;
    const int is_part = part.full_width > 0;
    swin_rect need;
    ok &= CHECK(swin_preprocess_source_rect(p, W, H, &need) == SWIN_OK, "%s: source rect: %s", name,
                 swin_last_error());
    if (is_part) {
        g_parts++;
        ok &= CHECK(part.full_width == W && part.full_height == H && part.x0 >= 0 && part.y0 >= 0 &&
                         part.x0 + part.width <= W && part.y0 + part.height <= H,
                     "%s, %s: part %dx%d at (%d, %d) of %dx%d, the image is %dx%d", name, geo, part.width,
                     part.height, part.x0, part.y0, part.full_width, part.full_height, W, H);
        ok &= CHECK(need.x0 >= part.x0 && need.x1 <= part.x0 + part.width && need.y0 >= part.y0 &&
                         need.y1 <= part.y0 + part.height,
                     "%s, %s: part [%d, %d) x [%d, %d) lacks needed [%d, %d) x [%d, %d)", name, geo, part.x0,
                     part.x0 + part.width, part.y0, part.y0 + part.height, need.x0, need.x1, need.y0, need.y1);
        if (ok) {
            long bad = 0, margin = 0;
            for (int y = 0; y < part.height; y++)
                for (int x = 0; x < part.width; x++) {
                    const int X = part.x0 + x, Y = part.y0 + y;
                    const int differs = memcmp(part.rgb + ((size_t)y * part.width + x) * 3,
                                               wh->rgb + ((size_t)Y * W + X) * 3, 3) != 0;
                    const int needed = X >= need.x0 && X < need.x1 && Y >= need.y0 && Y < need.y1;
                    bad += differs && needed;
                    margin += differs && !needed;
                }
            g_margin_diff += margin;
            ok &= CHECK(bad == 0, "%s, %s: %ld needed pixels differ from the whole decode", name, geo, bad);
        }
    } else {
        ok &= CHECK(part.width == W && part.height == H && part.x0 == 0 && part.y0 == 0 &&
                         !memcmp(part.rgb, wh->rgb, (size_t)W * H * 3),
                     "%s, %s: a whole decode through decode_part differs", name, geo);
    }
    const size_t nf = swin_preprocess_floats(p);
    float *a = malloc(nf * sizeof *a), *b = malloc(nf * sizeof *b);
    if (a && b) {
        for (size_t i = 0; i < nf; i++) a[i] = b[i] = -1234.5f;   /* poisoned */
        swin_status sa = swin_preprocess_image(p, wh, a), sb = swin_preprocess_image(p, &part, b);
        ok &= CHECK(sa == SWIN_OK && sb == SWIN_OK, "%s, %s: preprocess whole %d / part %d: %s", name, geo, sa, sb,
                     swin_last_error());
        ok &= CHECK(sa != SWIN_OK || memcmp(a, b, nf * sizeof *a) == 0,
                     "%s, %s: the part preprocesses differently from the whole image", name, geo);
    }
    free(a);
    free(b);
    swin_image_free(&part);
    return ok;
}

// ---- 1. encoded here
typedef struct {
    const char *name;
    int nc, hs, vs, progressive, restart;   /* progressive 2: AC refinement left out, 3: DC alone
                                               (libjpeg then smooths the blocks: decompress_smooth_data) */
    J_COLOR_SPACE jpeg_space;   /* 4 components: JCS_CMYK or JCS_YCCK */
    int arith;                  /* arithmetic coding (libjpeg skips rows through its arithmetic decoder) */
} layout;

static const layout LAYOUTS[] = {
    {"grey", 1, 1, 1, 0, 0, JCS_GRAYSCALE, 0},          {"4:4:4", 3, 1, 1, 0, 0, JCS_YCbCr, 0},
    {"4:2:2", 3, 2, 1, 0, 0, JCS_YCbCr, 0},             {"4:2:0", 3, 2, 2, 0, 0, JCS_YCbCr, 0},
    {"4:4:0", 3, 1, 2, 0, 0, JCS_YCbCr, 0},             {"4:1:1", 3, 4, 1, 0, 0, JCS_YCbCr, 0},
    {"4:2:0 progressive", 3, 2, 2, 1, 0, JCS_YCbCr, 0}, {"4:2:2 restart", 3, 2, 1, 0, 3, JCS_YCbCr, 0},
    {"grey progressive", 1, 1, 1, 1, 0, JCS_GRAYSCALE, 0}, {"4:4:0 progressive", 3, 1, 2, 1, 0, JCS_YCbCr, 0},
    {"CMYK", 4, 1, 1, 0, 0, JCS_CMYK, 0},               {"YCCK 4:2:0", 4, 2, 2, 0, 0, JCS_YCCK, 0},
    {"4:2:0 AC unrefined", 3, 2, 2, 2, 0, JCS_YCbCr, 0}, {"4:2:2 DC only", 3, 2, 1, 3, 0, JCS_YCbCr, 0},
    {"grey AC unrefined", 1, 1, 1, 2, 0, JCS_GRAYSCALE, 0},
    {"4:2:0 arithmetic", 3, 2, 2, 0, 0, JCS_YCbCr, 1},  {"4:2:2 arith. restart", 3, 2, 1, 0, 2, JCS_YCbCr, 1},
    {"4:2:0 arith. progr.", 3, 2, 2, 1, 0, JCS_YCbCr, 1},
};
enum { N_LAYOUTS = sizeof LAYOUTS / sizeof LAYOUTS[0] };

static unsigned g_seed = 12345;
static unsigned rnd(void) {
    g_seed = g_seed * 1103515245u + 12345u;
    return g_seed >> 16;
}

typedef struct {
    const layout *l;
    int w, gx, gy;   /* the gradients' slopes */
} fill_state;

/* smooth colour gradients under noise */
static void fill_row(void *ctx, int y, unsigned char *row) {
    const fill_state *f = ctx;
    const int nc = f->l->nc;
    for (int x = 0; x < f->w; x++)
        for (int k = 0; k < nc; k++) {
            int v = (x * f->gx * (k + 1) + y * f->gy * (3 - k % 3)) % 256 + (int)(rnd() % 40) - 20;
            row[(size_t)x * nc + k] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
}

/* a w x h picture in layout l, malloc'd (*n bytes) */
static unsigned char *encode(const layout *l, int w, int h, unsigned long *n) {
    jpeg_enc e;
    jpeg_enc_begin(&e, w, h, l->nc, 85, l->restart);
    if (l->nc == 4) jpeg_set_colorspace(&e.c, l->jpeg_space);
    e.c.arith_code = l->arith ? TRUE : FALSE;
    e.c.comp_info[0].h_samp_factor = l->hs, e.c.comp_info[0].v_samp_factor = l->vs;
    if (l->nc == 4) e.c.comp_info[3].h_samp_factor = l->hs, e.c.comp_info[3].v_samp_factor = l->vs;
    jpeg_scan_info scans[4];
    if (l->progressive == 1) jpeg_simple_progression(&e.c);
    if (l->progressive >= 2) {   /* the DC in full, then (2) each component's AC to all but its last bit */
        const int ns = l->progressive == 2 ? 1 + l->nc : 1;
        scans[0] = (jpeg_scan_info){l->nc, {0, 1, 2, 3}, 0, 0, 0, 0};
        for (int k = 1; k < ns; k++) scans[k] = (jpeg_scan_info){1, {k - 1}, 1, 63, 0, 1};
        e.c.scan_info = scans, e.c.num_scans = ns;
    }
    fill_state f = {l, w, 0, 0};
    f.gx = 1 + (int)(rnd() % 5), f.gy = 1 + (int)(rnd() % 5);
    unsigned char *out = jpeg_enc_rows(&e, fill_row, &f);
    *n = e.n;
    return out;
}

// ---- 3. broken files: the part decode refuses what the whole decode refuses, in the same words
static long g_broken, g_broken_refused;

static void check_broken(const uint8_t *d, size_t n, const char *name, const swin_preprocess_params *p) {
    swin_image whole, part;
    int custom;
    swin_status sw = swin_image_decode(d, n, name, &whole);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", sw == SWIN_OK ? "" : swin_last_error());
    swin_status sp = swin_image_decode_part(d, n, name, p, NULL, NULL, &part, &custom);
    g_broken++;
    g_broken_refused += sw != SWIN_OK;
    CHECK(sw == sp, "%s: whole decode status %d, part decode %d (%s)", name, sw, sp, swin_last_error());
    if (sw != SWIN_OK && sp != SWIN_OK)
        CHECK(!strcmp(msg, swin_last_error()), "%s: whole decode says '%s', part decode '%s'", name, msg,
              swin_last_error());
    if (sw == SWIN_OK) swin_image_free(&whole);
    if (sp == SWIN_OK) swin_image_free(&part);
}

static void break_file(const uint8_t *d, size_t n, const char *what) {
    uint8_t *b = malloc(n + 2);
    if (!b) return;
    char name[256];
    for (int k = 0; k <= 20; k++) {   /* truncated from the middle to 2 bytes before the end */
        const size_t m = k < 20 ? n / 2 + (n / 2) * (size_t)k / 20 : n - 2;
        memcpy(b, d, m);
        for (int g = 0; g < 2; g++) {
            snprintf(name, sizeof name, "%s cut at %zu of %zu", what, m, n);
            check_broken(b, m, name, &g_geo[g]);
        }
    }
    for (size_t k = 0; k < 3; k++) {   /* an end-of-image marker put into the data near the end */
        const size_t at = n - 2 - (n / 10) * (k + 1) / 3;
        memcpy(b, d, n);
        b[at] = 0xFF, b[at + 1] = 0xD9;
        snprintf(name, sizeof name, "%s EOI at %zu of %zu", what, at, n);
        check_broken(b, n, name, &g_geo[0]);
    }
    free(b);
}

static void test_encoded(void) {
    long per_layout[N_LAYOUTS] = {0};
    for (int li = 0; li < N_LAYOUTS; li++) {
        const layout *l = &LAYOUTS[li];
        for (int k = 0; k < 6; k++) {
            int w = 40 + (int)(rnd() % 681), h = 40 + (int)(rnd() % 681);
            if (k == 0) w = 500, h = 375;   /* ImageNet's usual shapes */
            if (k == 1) w = 375, h = 500;
            unsigned long n;
            unsigned char *d = encode(l, w, h, &n);
            char name[96];
            snprintf(name, sizeof name, "%s %dx%d", l->name, w, h);
            swin_image wh;
            if (!CHECK(d && swin_image_decode(d, n, name, &wh) == SWIN_OK, "%s: whole decode failed: %s", name,
                      swin_last_error())) {
                free(d);
                continue;
            }
            for (int g = 0; g < 6; g++) {
                const long before = g_parts;
                check_part(d, n, name, &wh, &g_geo[g], GEO_NAME[g]);
                per_layout[li] += g_parts - before;
            }
            swin_image_free(&wh);
            if (k < 2) break_file(d, n, name);
            free(d);
        }
    }
    for (int li = 0; li < N_LAYOUTS; li++) {
        printf("encoded %-20s 6 files x 6 geometries: %ld decoded in part\n", LAYOUTS[li].name, per_layout[li]);
        CHECK(per_layout[li] >= 6, "%s: only %ld part decodes (expected the 224-pixel crops of the larger files)",
              LAYOUTS[li].name, per_layout[li]);
    }
}

// ---- 2. the fixtures
static void test_fixtures(const char *root) {
    static const char *const FILES[] = {"baseline_420_160x120.jpg", "baseline_422_97x61.jpg",
                                        "baseline_444_64x48.jpg", "cmyk_60x40.jpg", "cmyk_progressive_31x19.jpg",
                                        "grey_70x50.jpg", "grey_progressive_33x47.jpg", "odd_420_37x23.jpg",
                                        "optimized_420_80x56.jpg", "progressive_420_150x100.jpg",
                                        "restart_blocks_420_120x80.jpg", "restart_rows_422_70x50.jpg",
                                        "rgb_nontransformed_48x32.jpg", "junk_before_eoi_24x16.jpg"};
    const swin_preprocess_params small[2] = {geometry(32, 0.9f, SWIN_INTERP_BICUBIC, SWIN_PRE_TIMM, 12),
                                             geometry(48, 1.0f, SWIN_INTERP_BILINEAR, SWIN_PRE_TIMM, 13)};
    long parts = 0, files = 0;
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/data/jpeg/%s", root, FILES[i]);
        uint8_t *d;
        size_t n;
        swin_image wh;
        if (!CHECK(swin_image_read_file(path, &d, &n) == SWIN_OK, "%s", swin_last_error())) continue;
        if (CHECK(swin_image_decode(d, n, FILES[i], &wh) == SWIN_OK, "%s", swin_last_error())) {
            files++;
            for (int g = 0; g < 2; g++) {
                const long before = g_parts;
                check_part(d, n, FILES[i], &wh, &small[g], g ? "timm 48 bilinear 1.0" : "timm 32 bicubic 0.9");
                parts += g_parts - before;
            }
            swin_image_free(&wh);
        }
        free(d);
    }
    printf("fixtures: %ld files x 2 geometries: %ld decoded in part\n", files, parts);
    CHECK(parts >= 4, "only %ld fixture part decodes", parts);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : ".";
    make_geometries();
    test_encoded();
    test_fixtures(root);
    printf("%ld checks, %ld decoded in part; %ld margin pixels differed from the whole decode (allowed)\n", g_cases,
           g_parts, g_margin_diff);
    printf("broken files: %ld, of which the whole decode refused %ld; the part decode agreed on all\n", g_broken,
           g_broken_refused);
    CHECK(g_broken_refused >= g_broken / 2, "only %ld of %ld broken files refused", g_broken_refused, g_broken);
    return tu_finish("test_jpeg_part");
}
