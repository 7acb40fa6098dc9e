/* test_preprocess.c - image decoding, PIL-exact resizing and timm / HF preprocessing against
 * reference tensors made by tools/export_preprocess.py (tests/data/preprocess/): Pillow 13's
 * (reference.safetensors, the default) and Pillow 12's (reference_pillow12.safetensors, pillow = 12,
 * shapes where the two resize in different orders); and the errors for bad images (made in a
 * temporary directory at test time).
 *   build/tests/test_preprocess <source dir>
 * Prints, per reference, the share of identical pixels / values and the largest difference. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "preprocess.h"
#include "resize.h"
#include "swin.h"
#include "testutil.h"

/* ---- a minimal safetensors reader for the reference file (U8 and F32 only). The project's
 * own reader (src/safetensors.c) has no U8; this keeps the test independent of it. */
typedef struct {
    char name[160];
    int u8; /* 1: U8, 0: F32 */
    int rank;
    long shape[4];
    size_t numel;
    const void *data;
    char meta[256]; /* __metadata__[name], or "" */
} ref_tensor;

typedef struct {
    uint8_t *file;
    ref_tensor t[128];
    int n;
} ref_set;

static ref_set g_ref;   /* reference.safetensors: Pillow 13 */
static ref_set g_p12;   /* reference_pillow12.safetensors: Pillow 12 */

static int ref_load(const char *path, ref_set *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    s->file = malloc((size_t)size);
    if (!s->file || fread(s->file, 1, (size_t)size, f) != (size_t)size || size < 8) { fclose(f); return 0; }
    fclose(f);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | s->file[i];
    if (hl > (uint64_t)size - 8) return 0;
    cJSON *root = cJSON_ParseWithLength((const char *)s->file + 8, (size_t)hl);
    if (!root) return 0;
    const uint8_t *data = s->file + 8 + hl;
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    for (cJSON *e = root->child; e && s->n < 128; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        ref_tensor *t = &s->t[s->n++];
        snprintf(t->name, sizeof t->name, "%s", e->string);
        const char *dt = cJSON_GetObjectItem(e, "dtype")->valuestring;
        t->u8 = !strcmp(dt, "U8");
        cJSON *sh = cJSON_GetObjectItem(e, "shape"), *off = cJSON_GetObjectItem(e, "data_offsets");
        t->rank = cJSON_GetArraySize(sh);
        t->numel = 1;
        for (int i = 0; i < t->rank && i < 4; i++) {
            t->shape[i] = (long)cJSON_GetArrayItem(sh, i)->valuedouble;
            t->numel *= (size_t)t->shape[i];
        }
        t->data = data + (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        cJSON *m = meta ? cJSON_GetObjectItemCaseSensitive(meta, e->string) : NULL;
        snprintf(t->meta, sizeof t->meta, "%s", m && cJSON_IsString(m) ? m->valuestring : "");
    }
    cJSON_Delete(root);
    return s->n > 0;
}

/* a tensor of reference.safetensors, by name */
static const ref_tensor *ref_find(const char *name) {
    for (int i = 0; i < g_ref.n; i++)
        if (!strcmp(g_ref.t[i].name, name)) return &g_ref.t[i];
    return NULL;
}

/* ---- decoding: our RGB8 vs PIL's convert('RGB'), identical for every format (JPEG through
 * libjpeg-turbo with Pillow's settings; more JPEG kinds in tests/test_jpeg.c) */
static void test_decode(const char *dir) {
    for (int i = 0; i < g_ref.n; i++) {
        const ref_tensor *r = &g_ref.t[i];
        if (strncmp(r->name, "decoded.", 8)) continue;
        const char *file = r->name + 8;
        char path[2048 + 200];
        if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) continue;
        swin_image img;
        swin_status st = swin_image_load(path, &img);
        if (!CHECK(st == SWIN_OK, "%s: %s", path, swin_last_error())) continue;
        if (!CHECK(img.width == r->shape[1] && img.height == r->shape[0], "%s: %dx%d, PIL %ldx%ld", file,
                   img.width, img.height, r->shape[1], r->shape[0])) { swin_image_free(&img); continue; }
        const uint8_t *ref = r->data;
        size_t same = 0, n = r->numel;
        int maxd = 0;
        double sumd = 0;
        for (size_t k = 0; k < n; k++) {
            int d = abs((int)img.rgb[k] - (int)ref[k]);
            same += d == 0;
            sumd += d;
            if (d > maxd) maxd = d;
        }
        printf("decode  %-34s %6.2f%% identical, max diff %3d, mean %.3f\n", file, 100.0 * same / n,
               maxd, sumd / n);
        CHECK(same == n, "%s: %zu of %zu values differ from PIL's", file, n - same, n);
        swin_image_free(&img);
    }
}

/* ---- resampling: ours vs PIL's resize of the same RGB8 pixels */

/* r is "resize.<file>.<interp>.<W>x<H>": its source (decoded.<file> of reference.safetensors),
 * interpolation and size; 0 when the name does not parse or the source is missing */
static int resize_ref_parse(const ref_tensor *r, const ref_tensor **src, swin_interp *mode, int *w, int *h) {
    static const char *const INTERP[] = {"nearest", "bilinear", "bicubic"};
    char file[160], interp[160], key[200];
    const char *last = strrchr(r->name, '.'), *mid;
    if (strncmp(r->name, "resize.", 7) || sscanf(last + 1, "%dx%d", w, h) != 2) return 0;
    for (mid = last - 1; mid > r->name && *mid != '.'; mid--) {}
    snprintf(interp, sizeof interp, "%.*s", (int)(last - mid - 1), mid + 1);
    snprintf(file, sizeof file, "%.*s", (int)(mid - r->name - 7), r->name + 7);
    snprintf(key, sizeof key, "decoded.%s", file);
    *src = ref_find(key);
    for (int m = 0; m < 3; m++)
        if (!strcmp(interp, INTERP[m])) *mode = (swin_interp)m;
    return *src != NULL && strcmp(interp, INTERP[*mode]) == 0;
}

/* identical bytes of a and b [n]; *maxd: the largest difference */
static size_t same_u8(const uint8_t *a, const uint8_t *b, size_t n, int *maxd) {
    size_t same = 0;
    *maxd = 0;
    for (size_t k = 0; k < n; k++) {
        int d = abs((int)a[k] - (int)b[k]);
        same += d == 0;
        if (d > *maxd) *maxd = d;
    }
    return same;
}

/* out [r's shape] <- our resize of r's source as Pillow `pillow` does; 0 on failure (reported) */
static int resize_like(const ref_tensor *r, int pillow, uint8_t *out) {
    const ref_tensor *src = NULL;
    swin_interp mode = SWIN_INTERP_NEAREST;
    int w, h;
    if (!CHECK(resize_ref_parse(r, &src, &mode, &w, &h), "%s: no source or bad interpolation", r->name)) return 0;
    swin_status st = swin_resize_rgb8_window(src->data, (int)src->shape[1], (int)src->shape[0], w, h, 0, 0, w, h,
                                             mode, pillow, out);
    return CHECK(st == SWIN_OK, "%s: %s", r->name, swin_last_error());
}

/* the default (Pillow 13) against reference.safetensors; and Pillow 12's order, which must differ
 * from it on some shapes (the height shrinking much more than the width), else the default would
 * not be telling the versions apart */
static void test_resize(void) {
    size_t all = 0, all_same = 0;
    int order_sensitive = 0;
    for (int i = 0; i < g_ref.n; i++) {
        const ref_tensor *r = &g_ref.t[i];
        if (strncmp(r->name, "resize.", 7)) continue;
        uint8_t *out = malloc(r->numel), *o12 = malloc(r->numel);
        int maxd, maxd12;
        if (!resize_like(r, 0, out) || !resize_like(r, 12, o12)) { free(out); free(o12); continue; }
        size_t same = same_u8(out, r->data, r->numel, &maxd), same12 = same_u8(o12, r->data, r->numel, &maxd12);
        all += r->numel;
        all_same += same;
        printf("resize  %-44s %7.3f%% identical, max diff %d", r->name + 7, 100.0 * same / r->numel, maxd);
        if (same12 < r->numel)
            printf("; as Pillow 12: %.1f%% differ, max %d", 100.0 * (r->numel - same12) / r->numel, maxd12);
        printf("\n");
        order_sensitive += same12 < r->numel;
        CHECK(same * 1000 >= r->numel * 999 && maxd <= 1, "%s: %zu of %zu differ, max %d", r->name,
              r->numel - same, r->numel, maxd);
        free(out);
        free(o12);
    }
    printf("resize  all: %zu of %zu values identical (%.4f%%); %d where Pillow 12's order differs\n", all_same,
           all, 100.0 * all_same / all, order_sensitive);
    CHECK(all > 0, "no resize references found");
    CHECK(order_sensitive >= 2, "reference.safetensors: Pillow 12's order differs on %d resizes, expected >= 2",
          order_sensitive);
}

/* A window of the resized image equals the same crop of the full resize, zero outside; in the
 * pass order of Pillow 13 and of Pillow 12. */
static void test_resize_window(void) {
    const ref_tensor *src = ref_find("decoded.grad_97x61.png");
    if (!CHECK(src != NULL, "decoded.grad_97x61.png missing")) return;
    static const struct { int dw, dh, x0, y0, ww, wh; } CASES[] = {
        {112, 71, 24, 4, 64, 64}, {53, 84, -5, 10, 64, 64}, {300, 20, 100, -3, 50, 30},
        {97, 61, 10, 10, 20, 20}, {40, 25, 39, 24, 3, 3}, {20, 20, -30, -30, 10, 10}};
    for (int pillow = 0; pillow <= 12; pillow += 12)
        for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
            for (int mode = 0; mode < 3; mode++) {
                int dw = CASES[c].dw, dh = CASES[c].dh, x0 = CASES[c].x0, y0 = CASES[c].y0;
                int ww = CASES[c].ww, wh = CASES[c].wh;
                uint8_t *full = malloc((size_t)dw * dh * 3), *win = malloc((size_t)ww * wh * 3 + 16);
                memset(win + (size_t)ww * wh * 3, 0xAB, 16); /* guard bytes */
                swin_resize_rgb8_window(src->data, 97, 61, dw, dh, 0, 0, dw, dh, (swin_interp)mode, pillow, full);
                swin_resize_rgb8_window(src->data, 97, 61, dw, dh, x0, y0, ww, wh, (swin_interp)mode, pillow, win);
                int bad = 0;
                for (int y = 0; y < wh; y++)
                    for (int x = 0; x < ww; x++)
                        for (int k = 0; k < 3; k++) {
                            int fx = x0 + x, fy = y0 + y;
                            int want = fx >= 0 && fy >= 0 && fx < dw && fy < dh ? full[((size_t)fy * dw + fx) * 3 + k]
                                                                                 : 0;
                            bad += win[((size_t)y * ww + x) * 3 + k] != want;
                        }
                for (int g = 0; g < 16; g++) bad += win[(size_t)ww * wh * 3 + g] != 0xAB;
                CHECK(bad == 0, "window %dx%d at (%d,%d) of %dx%d, mode %d, pillow %d: %d values differ", ww, wh,
                      x0, y0, dw, dh, mode, pillow, bad);
                free(full);
                free(win);
            }
        }
}

/* ---- preprocessing geometry: timm's resize + center crop, numbers from torchvision */
static void test_plan(void) {
    static const struct { int w, h, size; float crop_pct; int rw, rh, x0, y0; } CASES[] = {
        {97, 61, 48, 0.9f, 84, 53, 18, 2},        /* crop top round(2.5) = 2: half to even */
        {97, 61, 64, 0.9f, 112, 71, 24, 4},       {61, 97, 64, 0.9f, 71, 112, 4, 24},
        {300, 200, 224, 0.875f, 384, 256, 80, 16}, {200, 300, 224, 0.9f, 248, 372, 12, 74},
        {500, 375, 224, 0.9f, 330, 248, 53, 12},  {97, 61, 64, 1.2f, 84, 53, 10, -5}, /* padded */
        {256, 256, 224, 0.875f, 256, 256, 16, 16}, {1000, 10, 224, 1.0f, 22400, 224, 11088, 0},
        {333, 333, 384, 1.0f, 384, 384, 0, 0},    {640, 427, 224, 0.95f, 352, 235, 64, 6}, /* 5.5 -> 6 */
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        swin_preprocess_params p = {.style = SWIN_PRE_TIMM, .interp = SWIN_INTERP_BICUBIC,
                                    .size = CASES[c].size, .crop_pct = CASES[c].crop_pct};
        int rw, rh, x0, y0;
        swin_status st = swin_preprocess_plan(&p, CASES[c].w, CASES[c].h, &rw, &rh, &x0, &y0);
        CHECK(st == SWIN_OK && rw == CASES[c].rw && rh == CASES[c].rh && x0 == CASES[c].x0 && y0 == CASES[c].y0,
              "%dx%d size %d crop %.3f: got %dx%d at (%d,%d), torchvision %dx%d at (%d,%d)", CASES[c].w,
              CASES[c].h, CASES[c].size, CASES[c].crop_pct, rw, rh, x0, y0, CASES[c].rw, CASES[c].rh,
              CASES[c].x0, CASES[c].y0);
    }
}

/* ---- non-square inputs: timm's ResizeKeepRatio + CenterCrop((H, W)), numbers from timm 1.0.31
 * (ResizeKeepRatio.get_params) and torchvision's crop; transformers resizes straight to H x W */
static void test_plan_rect(void) {
    static const struct { int w, h, oh, ow; float crop_pct; int rw, rh, x0, y0; } CASES[] = {
        {97, 61, 48, 64, 0.9f, 84, 53, 10, 2},        {61, 97, 48, 64, 0.9f, 71, 113, 4, 32},
        {300, 200, 224, 160, 0.875f, 384, 256, 112, 16}, {500, 375, 192, 256, 0.95f, 269, 202, 6, 5}, /* 6.5 -> 6 */
        {640, 427, 100, 300, 1.0f, 300, 200, 0, 50},  {61, 97, 64, 32, 1.2f, 33, 53, 0, -5},   /* padded */
        {1000, 10, 32, 64, 1.0f, 3200, 32, 1568, 0},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        swin_preprocess_params p = {.style = SWIN_PRE_TIMM, .interp = SWIN_INTERP_BICUBIC, .height = CASES[c].oh,
                                    .width = CASES[c].ow, .crop_pct = CASES[c].crop_pct};
        int rw, rh, x0, y0;
        swin_status st = swin_preprocess_plan(&p, CASES[c].w, CASES[c].h, &rw, &rh, &x0, &y0);
        CHECK(st == SWIN_OK && rw == CASES[c].rw && rh == CASES[c].rh && x0 == CASES[c].x0 && y0 == CASES[c].y0,
              "%dx%d to %dx%d crop %.3f: got %dx%d at (%d,%d), timm %dx%d at (%d,%d)", CASES[c].w, CASES[c].h,
              CASES[c].oh, CASES[c].ow, CASES[c].crop_pct, rw, rh, x0, y0, CASES[c].rw, CASES[c].rh, CASES[c].x0,
              CASES[c].y0);
        CHECK(swin_preprocess_floats(&p) == (size_t)3 * CASES[c].oh * CASES[c].ow, "floats of %dx%d",
              CASES[c].oh, CASES[c].ow);
        p.style = SWIN_PRE_HF;
        st = swin_preprocess_plan(&p, CASES[c].w, CASES[c].h, &rw, &rh, &x0, &y0);
        CHECK(st == SWIN_OK && rw == CASES[c].ow && rh == CASES[c].oh && x0 == 0 && y0 == 0,
              "hf %dx%d to %dx%d: got %dx%d at (%d,%d)", CASES[c].w, CASES[c].h, CASES[c].oh, CASES[c].ow, rw, rh,
              x0, y0);
    }
    /* a square config keeps size (and the shorter-side resize, bit for bit), a non-square one height/width */
    swin_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.img_h = cfg.img_w = 224;
    swin_preprocess_params sq = swin_preprocess_params_from_config(&cfg);
    cfg.img_w = 160;
    swin_preprocess_params re = swin_preprocess_params_from_config(&cfg);
    CHECK(sq.size == 224 && sq.height == 0 && sq.width == 0 && re.height == 224 && re.width == 160 &&
          swin_preprocess_height(&re) == 224 && swin_preprocess_width(&re) == 160,
          "params from config: square size %d (%dx%d), rect %dx%d", sq.size, sq.height, sq.width, re.height,
          re.width);
}

/* ---- preprocessing values vs timm / transformers */
/* meta: "size=S ..." or "size=HxW ..." (height x width), then crop_pct, interp, mean and std */
static int parse_params(const char *meta, swin_preprocess_params *p) {
    char interp[16];
    int n = 0, h, w;
    if (sscanf(meta, "size=%dx%d%n", &h, &w, &n) == 2 && n > 0) p->height = h, p->width = w;
    else if (sscanf(meta, "size=%d%n", &p->size, &n) != 1 || n == 0) return 0;
    if (sscanf(meta + n, " crop_pct=%f interp=%15s mean=%f,%f,%f std=%f,%f,%f", &p->crop_pct, interp, &p->mean[0],
               &p->mean[1], &p->mean[2], &p->std[0], &p->std[1], &p->std[2]) != 8)
        return 0;
    p->interp = !strcmp(interp, "nearest") ? SWIN_INTERP_NEAREST
              : !strcmp(interp, "bilinear") ? SWIN_INTERP_BILINEAR : SWIN_INTERP_BICUBIC;
    return 1;
}

/* r is "timm.<file>.<k>" or "hf.<file>.<k>": p <- its parameters (style included), *src <- the
 * decoded.<file> of reference.safetensors, file <- <file>; 0 when any is missing (reported) */
static int value_ref_parse(const ref_tensor *r, swin_preprocess_params *p, const ref_tensor **src, char *file,
                           size_t cap) {
    int hf = !strncmp(r->name, "hf.", 3);
    *p = (swin_preprocess_params){.style = hf ? SWIN_PRE_HF : SWIN_PRE_TIMM};
    if (!CHECK(parse_params(r->meta, p), "%s: bad metadata '%s'", r->name, r->meta)) return 0;
    char key[200];
    const char *f0 = r->name + (hf ? 3 : 5), *dot = strrchr(r->name, '.');
    snprintf(file, cap, "%.*s", (int)(dot - f0), f0);
    snprintf(key, sizeof key, "decoded.%s", file);
    *src = ref_find(key);
    return CHECK(*src && r->numel == swin_preprocess_floats(p), "%s: no source or wrong size", r->name);
}

/* one 8-bit level through the normalisation, plus float rounding */
static double level_tolerance(const swin_preprocess_params *p) {
    return 1.0 / 255.0 / fminf(p->std[0], fminf(p->std[1], p->std[2])) + 1e-5;
}

static void compare_f32(const char *what, const char *name, const float *a, const float *b, size_t n,
                        double tol, size_t *exact_out) {
    size_t exact = 0;
    double maxd = 0;
    for (size_t k = 0; k < n; k++) {
        double d = fabs((double)a[k] - b[k]);
        exact += a[k] == b[k];
        if (d > maxd || d != d) maxd = d != d ? INFINITY : d;
    }
    printf("%-7s %-40s %7.3f%% identical, max |diff| %.3g (tolerance %.3g)\n", what, name, 100.0 * exact / n,
           maxd, tol);
    CHECK(maxd <= tol, "%s %s: max diff %g > %g", what, name, maxd, tol);
    if (exact_out) *exact_out = exact;
}

static void test_preprocess(const char *dir) {
    for (int i = 0; i < g_ref.n; i++) {
        const ref_tensor *r = &g_ref.t[i];
        int hf = !strncmp(r->name, "hf.", 3);
        if (!hf && strncmp(r->name, "timm.", 5)) continue;
        swin_preprocess_params p;
        const ref_tensor *src;
        char file[128], path[2048];
        if (!value_ref_parse(r, &p, &src, file, sizeof file)) continue;
        double tol_px = level_tolerance(&p);
        float *out = malloc(r->numel * sizeof(float));
        /* from PIL's decoded pixels: the resize and arithmetic are the same, expect bit-exact */
        swin_image img = {.width = (int)src->shape[1], .height = (int)src->shape[0], .rgb = (uint8_t *)src->data};
        swin_status st = swin_preprocess_image(&p, &img, out);
        CHECK(st == SWIN_OK, "%s: %s", r->name, swin_last_error());
        size_t exact = 0;
        compare_f32(hf ? "hf" : "timm", r->name, out, r->data, r->numel, tol_px, &exact);
        CHECK(exact * 1000 >= r->numel * 999, "%s: only %zu of %zu values bit-exact", r->name, exact, r->numel);
        /* from the file through our decoder, which decodes as PIL does (see test_decode) */
        snprintf(path, sizeof path, "%s/%s", dir, file);
        st = swin_preprocess_file(&p, path, out);
        CHECK(st == SWIN_OK, "%s: %s", path, swin_last_error());
        compare_f32("  +file", r->name, out, r->data, r->numel, tol_px, NULL);
        free(out);
    }
}

/* ---- Pillow 12's pass order: reference_pillow12.safetensors, made by Pillow 12. With pillow = 12
 * every tensor matches bit for bit. Where its metadata says order13=vertical_first (Pillow 13
 * resizes the other way round and both passes run), the default must differ from it, else the
 * fixture would not exercise the order; elsewhere (order13=same, the controls) the default matches
 * it too. A tensor that reference.safetensors also holds must match that with the default. */
static int order_differs(const ref_tensor *r) { return strstr(r->meta, "order13=vertical_first") != NULL; }

static void test_pillow12_resize(int *n_differ, int *n_same) {
    for (int i = 0; i < g_p12.n; i++) {
        const ref_tensor *r = &g_p12.t[i], *r13 = ref_find(r->name);
        if (strncmp(r->name, "resize.", 7)) continue;
        uint8_t *o12 = malloc(r->numel), *o13 = malloc(r->numel);
        int d12, d13, differs = order_differs(r);
        if (resize_like(r, 12, o12) && resize_like(r, 0, o13)) {
            size_t s12 = same_u8(o12, r->data, r->numel, &d12), s13 = same_u8(o13, r->data, r->numel, &d13);
            printf("pil12   %-40s pillow 12: %7.3f%% identical; default: %5.1f%% differ, max %d (%s)\n",
                   r->name + 7, 100.0 * s12 / r->numel, 100.0 * (r->numel - s13) / r->numel, d13,
                   differs ? "orders differ" : "same order");
            CHECK(s12 == r->numel, "%s: pillow 12: %zu of %zu values differ from Pillow 12's, max %d", r->name,
                  r->numel - s12, r->numel, d12);
            if (differs)
                CHECK(s13 < r->numel, "%s: the default order gives Pillow 12's result: the fixture does not "
                      "exercise the order", r->name);
            else
                CHECK(s13 == r->numel, "%s: both versions resize in one order here, yet the default differs "
                      "in %zu values", r->name, r->numel - s13);
            if (r13 && CHECK(r13->numel == r->numel, "%s: shapes of the two references differ", r->name))
                CHECK(same_u8(o13, r13->data, r->numel, &d13) == r->numel, "%s: default differs from Pillow 13's",
                      r->name);
            *(differs ? n_differ : n_same) += 1;
        }
        free(o12);
        free(o13);
    }
}

static void test_pillow12_hf(const char *dir, int *n_differ) {
    for (int i = 0; i < g_p12.n; i++) {
        const ref_tensor *r = &g_p12.t[i];
        if (strncmp(r->name, "hf.", 3)) continue;
        swin_preprocess_params p;
        const ref_tensor *src;
        char file[128], path[2048];
        if (!value_ref_parse(r, &p, &src, file, sizeof file)) continue;
        float *out = malloc(r->numel * sizeof(float));
        swin_image img = {.width = (int)src->shape[1], .height = (int)src->shape[0], .rgb = (uint8_t *)src->data};
        size_t exact = 0, exact13 = 0;
        p.pillow = 12;
        CHECK(swin_preprocess_image(&p, &img, out) == SWIN_OK, "%s: %s", r->name, swin_last_error());
        compare_f32("pil12", r->name, out, r->data, r->numel, 0.0, &exact);
        CHECK(exact == r->numel, "%s: pillow 12: only %zu of %zu values bit-exact", r->name, exact, r->numel);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        CHECK(swin_preprocess_file(&p, path, out) == SWIN_OK, "%s: %s", path, swin_last_error());
        compare_f32("  +file", r->name, out, r->data, r->numel, 0.0, NULL);
        p.pillow = 0;
        CHECK(swin_preprocess_image(&p, &img, out) == SWIN_OK, "%s: %s", r->name, swin_last_error());
        for (size_t k = 0; k < r->numel; k++) exact13 += out[k] == ((const float *)r->data)[k];
        printf("pil12   %-40s default: %5.1f%% of values differ (%s)\n", r->name,
               100.0 * (r->numel - exact13) / r->numel, order_differs(r) ? "orders differ" : "same order");
        CHECK(order_differs(r) ? exact13 < r->numel : exact13 == r->numel,
              "%s: default: %zu of %zu values differ from Pillow 12's, metadata '%s'", r->name, r->numel - exact13,
              r->numel, r->meta);
        *n_differ += order_differs(r);
        free(out);
    }
}

static void test_pillow12(const char *dir) {
    int n_differ = 0, n_same = 0, n_hf = 0;
    test_pillow12_resize(&n_differ, &n_same);
    test_pillow12_hf(dir, &n_hf);
    printf("pil12   %d resizes where the orders differ, %d controls, %d hf transforms where they differ\n", n_differ,
           n_same, n_hf);
    CHECK(n_differ >= 4 && n_same >= 2 && n_hf >= 2, "reference_pillow12.safetensors: %d resizes where the orders "
          "differ (expected >= 4), %d controls (>= 2), %d hf transforms (>= 2)", n_differ, n_same, n_hf);
}

/* --pillow's parser, and a plan refuses a negative version */
static void test_pillow_versions(void) {
    static const struct { const char *s; int major; } CASES[] = {
        {"12", 12}, {"12.3", 12}, {"12.3.0", 12}, {"13", 13}, {"9.5.0", 9}, {"999", 999},
        {"x", -1}, {"", -1}, {"12.", -1}, {".12", -1}, {"12..3", -1}, {"12.3.0.1", -1}, {"-12", -1},
        {"0", -1}, {"1000", -1}, {"12a", -1}, {"12.x", -1}, {" 12", -1}, {"13.0.0.dev0", -1}};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        int major = -7;
        swin_status st = swin_pillow_parse(CASES[i].s, &major);
        if (CASES[i].major > 0)
            CHECK(st == SWIN_OK && major == CASES[i].major, "Pillow '%s': status %d, major %d", CASES[i].s, (int)st,
                  major);
        else
            CHECK(st == SWIN_ERR_ARGUMENT && major == -7 && strstr(swin_last_error(), "Pillow version"),
                  "Pillow '%s' should be refused: status %d, '%s'", CASES[i].s, (int)st, swin_last_error());
    }
    CHECK(swin_pillow_parse(NULL, &(int){0}) == SWIN_ERR_ARGUMENT, "Pillow NULL should be refused");
    swin_resize_plan pl;
    swin_status st = swin_resize_plan_make(8, 8, 4, 4, 0, 0, 4, 4, SWIN_INTERP_BILINEAR, -1, &pl);
    CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "Pillow version -1"), "plan with pillow -1: %d '%s'",
          (int)st, swin_last_error());
}

/* ---- bad images: each must fail with SWIN_ERR_IMAGE and a message naming path and problem */
static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(data, 1, n, f); fclose(f); }
}

static size_t read_prefix(const char *path, uint8_t *buf, size_t max) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, max, f);
    fclose(f);
    return n;
}

static uint32_t crc32_png(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

/* A PNG signature and IHDR claiming w x h RGB, then nothing else. */
static size_t png_header(uint8_t *b, uint32_t w, uint32_t h) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memcpy(b, sig, 8);
    uint8_t *c = b + 8;
    const uint8_t ihdr[17] = {'I', 'H', 'D', 'R', w >> 24, w >> 16, w >> 8, w, h >> 24, h >> 16, h >> 8, h,
                              8, 2, 0, 0, 0};
    c[0] = c[1] = c[2] = 0;
    c[3] = 13;
    memcpy(c + 4, ihdr, 17);
    uint32_t crc = crc32_png(ihdr, 17);
    c[21] = crc >> 24; c[22] = crc >> 16; c[23] = crc >> 8; c[24] = (uint8_t)crc;
    return 8 + 25;
}

/* A 3x2 RLE TGA (type 10, 24 bit, top-left origin): a run of 3, two literal pixels, a run of 1. */
static const uint8_t TGA_RLE[] = {0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 2, 0, 24, 0x20,
                                  0x82, 1, 2, 3, 0x01, 10, 20, 30, 40, 50, 60, 0x80, 7, 8, 9};

/* The RLE TGA decodes to its pixels (BGR in the file); its truncation is a bad-image case below. */
static void test_tga_rle(void) {
    static const uint8_t want[18] = {3, 2, 1, 3, 2, 1, 3, 2, 1, 30, 20, 10, 60, 50, 40, 9, 8, 7};
    swin_image img;
    swin_status st = swin_image_decode(TGA_RLE, sizeof TGA_RLE, "rle.tga", &img);
    int ok = st == SWIN_OK && img.width == 3 && img.height == 2 && !memcmp(img.rgb, want, sizeof want);
    printf("rle     rle.tga 3x2 -> %s\n", ok ? "pixels as written" : swin_last_error());
    CHECK(ok, "RLE TGA: status %d (%s)", (int)st, swin_last_error());
    swin_image_free(&img);
}

/* Binary PNM as Pillow reads it: samples clamped to maxval and scaled to 0..255, two big-endian
 * bytes past maxval 255 (values below are Pillow 13's, except the 16-bit PGM: Pillow clips its
 * mode I to white, swin scales it as a PPM). stb_image 2.27 read 16-bit samples in the wrong byte
 * order and overflowed its buffer on 16-bit grey (found by tools/fuzz.sh); it no longer reads PNM. */
static void test_pnm(void) {
    static const struct { const char *name, *data; size_t len; int w, h; uint8_t want[6]; } OK[] = {
        {"16.pgm", "P5\n2 1\n65535\n\x12\x34\xab\xcd", 17, 2, 1, {18, 18, 18, 171, 171, 171}},
        {"15.pgm", "P5\n2 1\n15\n\x05\x0f", 12, 2, 1, {85, 85, 85, 255, 255, 255}},
        {"300.ppm", "P6 1 1 300 \x01\x02\x03\x04\x05\x06", 17, 1, 1, {219, 255, 255}},
    };
    for (int i = 0; i < 3; i++) {
        swin_image img;
        swin_status st = swin_image_decode(OK[i].data, OK[i].len, OK[i].name, &img);
        int ok = st == SWIN_OK && img.width == OK[i].w && img.height == OK[i].h &&
                 !memcmp(img.rgb, OK[i].want, (size_t)OK[i].w * 3);
        printf("pnm     %-8s -> %s\n", OK[i].name, ok ? "pixels as Pillow scales them" : swin_last_error());
        CHECK(ok, "%s: status %d (%s)", OK[i].name, (int)st, swin_last_error());
        swin_image_free(&img);
    }
    static const struct { const char *data, *expect; } BAD[] = {
        {"P5\n2 1\n65535\n\x12\x34\xab", "truncated PNM"},
        {"P6\n1 1\n99999999999999999999 \x01\x02\x03", "maxval 1000000000"},
        {"P5\n1 1\n0\n\x01", "maxval 0"},
        {"P5\n0 1\n255\n", "0x1 pixels"},
        {"P3\n1 1\n255\n1 2 3\n", "unsupported PNM (P3"},
        {"P6\n1 1\n", "corrupt PNM header"},
    };
    for (int i = 0; i < 6; i++) {
        swin_image img;
        swin_status st = swin_image_decode(BAD[i].data, strlen(BAD[i].data), "bad.pnm", &img);
        printf("bad     pnm %d -> %s\n", i, swin_last_error());
        CHECK(st == SWIN_ERR_IMAGE && img.rgb == NULL && strstr(swin_last_error(), BAD[i].expect), "PNM case %d: %s",
              i, swin_last_error());
    }
}

/* tmp/dst <- the first num/den of dir/src's bytes */
static void truncate_copy(const char *dir, const char *src, const char *tmp, const char *dst, size_t num,
                          size_t den) {
    static uint8_t buf[1 << 16];
    char in[2048], out[2048];
    snprintf(in, sizeof in, "%s/%s", dir, src);
    snprintf(out, sizeof out, "%s/%s", tmp, dst);
    write_file(out, buf, read_prefix(in, buf, sizeof buf) * num / den);
}

/* An 8-bit BMP whose palette has 4 entries (fewer than 256 is allowed): pixels within it decode to
 * its colours; a pixel past it is refused (stb would take its colour from uninitialised memory). */
static void test_bmp_short_palette(void) {
    uint8_t b[14 + 40 + 16 + 8];
    memset(b, 0, sizeof b);
    const uint32_t off = 14 + 40 + 16;
    b[0] = 'B', b[1] = 'M', b[2] = sizeof b;
    b[10] = (uint8_t)off, b[14] = 40, b[18] = 4, b[22] = 2, b[26] = 1, b[28] = 8;   /* 4 x 2, 8 bits */
    b[46] = 4;                                                                     /* colours used */
    for (int i = 0; i < 4; i++)   /* palette: BGRx */
        b[54 + 4 * i] = (uint8_t)(10 + i), b[55 + 4 * i] = (uint8_t)(20 + i), b[56 + 4 * i] = (uint8_t)(30 + i);
    const uint8_t px[8] = {0, 1, 2, 3, 3, 2, 1, 0};   /* bottom row first */
    memcpy(b + off, px, 8);
    swin_image img;
    int ok = CHECK(swin_image_decode(b, sizeof b, "pal4.bmp", &img) == SWIN_OK, "pal4.bmp: %s", swin_last_error());
    if (ok) {
        int right = img.width == 4 && img.height == 2;
        for (int y = 0; right && y < 2; y++)
            for (int x = 0; x < 4; x++) {   /* stored bottom-up */
                const int k = px[(1 - y) * 4 + x];
                const uint8_t *p = img.rgb + (y * 4 + x) * 3;
                right &= p[0] == 30 + k && p[1] == 20 + k && p[2] == 10 + k;
            }
        CHECK(right, "pal4.bmp: pixels are not the palette's colours");
        swin_image_free(&img);
    }
    b[off + 5] = 9;   /* past the 4 entries */
    swin_status st = swin_image_decode(b, sizeof b, "pal4_bad.bmp", &img);
    CHECK(st == SWIN_ERR_IMAGE && strstr(swin_last_error(), "pal4_bad.bmp: corrupt BMP (a pixel is colour 9 of a "
                                                            "palette of 4)"),
          "a pixel past the palette: status %d, '%s'", st, st == SWIN_OK ? "" : swin_last_error());
    if (st == SWIN_OK) swin_image_free(&img);
    /* stb takes a negative compression as none: the same check must run (pixel 9 still there) */
    b[30] = 0xe3, b[31] = 0x72, b[32] = 0xe7, b[33] = 0xfc;
    st = swin_image_decode(b, sizeof b, "pal4_neg.bmp", &img);
    CHECK(st == SWIN_ERR_IMAGE && strstr(swin_last_error(), "colour 9 of a palette of 4"),
          "a pixel past the palette, compression negative: status %d, '%s'", st, st == SWIN_OK ? "" : swin_last_error());
    if (st == SWIN_OK) swin_image_free(&img);
    b[off + 5] = 1;   /* every pixel in the palette again: decoded as with compression 0 */
    st = swin_image_decode(b, sizeof b, "pal4_neg_ok.bmp", &img);
    CHECK(st == SWIN_OK, "palette BMP, compression negative: %s", st == SWIN_OK ? "" : swin_last_error());
    if (st == SWIN_OK) swin_image_free(&img);
    printf("BMP with a 4-entry palette: decoded; with a pixel past it: refused (compression 0 and negative)\n");
}

static void test_bad_images(const char *dir) {
    char tmp[1024];
    if (!CHECK(tu_tmpdir(tmp, sizeof tmp, "swin_test_preprocess") == 0, "cannot make a temp dir")) return;
    static uint8_t buf[1 << 16];
    char src[2048], path[2048];
    struct { const char *name, *expect; } cases[16];
    int nc = 0;
#define CASE(n, e) (cases[nc].name = (n), cases[nc].expect = (e), nc++)
    CASE("missing.png", "No such file");
    snprintf(path, sizeof path, "%s/empty.jpg", tmp);
    write_file(path, "", 0), CASE("empty.jpg", "empty");
    truncate_copy(dir, "grad_97x61.png", tmp, "truncated.png", 1, 2), CASE("truncated.png", "truncated PNG");
    truncate_copy(dir, "photo_160x120_420.jpg", tmp, "truncated.jpg", 6, 10), CASE("truncated.jpg", "truncated JPEG");
    truncate_copy(dir, "noise_300x200_progressive.jpg", tmp, "truncated_progressive.jpg", 1, 3),
        CASE("truncated_progressive.jpg", "truncated JPEG");
    snprintf(src, sizeof src, "%s/noise_300x200_progressive.jpg", dir);
    size_t n = read_prefix(src, buf, sizeof buf);
    for (size_t i = 2; i + 20 < n; i++)
        if (buf[i] == 0xFF && buf[i + 1] == 0xC4) { memset(buf + i + 5, 0x20, 16); break; } /* 512 codes */
    snprintf(path, sizeof path, "%s/bad_huffman.jpg", tmp);
    write_file(path, buf, n), CASE("bad_huffman.jpg", "corrupt JPEG");
    truncate_copy(dir, "gif_45x35.gif", tmp, "truncated.gif", 2, 3), CASE("truncated.gif", "truncated GIF");
    truncate_copy(dir, "bmp_50x40.bmp", tmp, "truncated.bmp", 1, 2), CASE("truncated.bmp", "truncated BMP");
    truncate_copy(dir, "tga_30x20.tga", tmp, "truncated.tga", 1, 2), CASE("truncated.tga", "truncated");
    snprintf(path, sizeof path, "%s/huge.ppm", tmp);
    write_file(path, "P6\n# big\n20000 30\n255\n", 22), CASE("huge.ppm", "20000x30 pixels is too large");
    tu_seed(42);
    for (int i = 0; i < 4096; i++) buf[i] = (uint8_t)tu_uniform(0, 256);
    buf[2] = 0x7F; /* not a TGA image type either */
    snprintf(path, sizeof path, "%s/random.png", tmp);
    write_file(path, buf, 4096), CASE("random.png", "not an image");
    snprintf(path, sizeof path, "%s/huge_side.png", tmp);
    write_file(path, buf, png_header(buf, 60000, 60000)), CASE("huge_side.png", "60000x60000 pixels is too large");
    snprintf(path, sizeof path, "%s/huge_area.png", tmp);
    write_file(path, buf, png_header(buf, 12000, 12000)), CASE("huge_area.png", "12000x12000 pixels is too large");
    snprintf(path, sizeof path, "%s/truncated_rle.tga", tmp);   /* the RLE packets stop short of the image */
    write_file(path, TGA_RLE, sizeof TGA_RLE - 4), CASE("truncated_rle.tga", "truncated TGA");
#undef CASE
    for (int i = 0; i < nc; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, cases[i].name);
        swin_image img = {0};
        swin_status st = swin_image_load(path, &img);
        const char *msg = swin_last_error();
        printf("bad     %-26s -> %s\n", cases[i].name, msg);
        CHECK(st == SWIN_ERR_IMAGE && img.rgb == NULL, "%s: status %d, expected SWIN_ERR_IMAGE", path, (int)st);
        CHECK(strstr(msg, path) != NULL && strstr(msg, cases[i].expect) != NULL,
              "%s: message '%s' should name the file and say '%s'", cases[i].name, msg, cases[i].expect);
        unlink(path);
    }
    swin_image img;
    CHECK(swin_image_load(tmp, &img) == SWIN_ERR_IMAGE && strstr(swin_last_error(), "directory"),
          "a directory is refused: %s", swin_last_error());
    tu_rmtree(tmp);
}

static void test_extensions(void) {
    static const struct { const char *path; int yes; } CASES[] = {
        {"a.jpg", 1}, {"b.JPEG", 1}, {"dir.png/x", 0}, {"c.Png", 1}, {"d.txt", 0}, {"e", 0},
        {"f.gif", 1}, {"g.bmp", 1}, {".jpgx", 0}, {"h.tga", 1}, {"i.ppm", 1}, {"j.jpg.bak", 0}};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        CHECK(swin_image_has_extension(CASES[i].path) == CASES[i].yes, "extension of %s", CASES[i].path);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : ".";
    char dir[1024], ref[1100], ref12[1100];
    snprintf(dir, sizeof dir, "%s/tests/data/preprocess", root);
    snprintf(ref, sizeof ref, "%s/reference.safetensors", dir);
    snprintf(ref12, sizeof ref12, "%s/reference_pillow12.safetensors", dir);
    if (CHECK(ref_load(ref, &g_ref), "cannot read %s", ref)) {
        test_decode(dir);
        test_resize();
        test_resize_window();
        test_preprocess(dir);
        if (CHECK(ref_load(ref12, &g_p12), "cannot read %s", ref12)) test_pillow12(dir);
        test_bad_images(dir);
        test_bmp_short_palette();
        test_tga_rle();
        test_pnm();
    }
    test_pillow_versions();
    test_plan();
    test_plan_rect();
    test_extensions();
    free(g_ref.file);
    free(g_p12.file);
    return tu_finish("test_preprocess");
}
