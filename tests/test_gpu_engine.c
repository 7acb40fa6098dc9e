/* test_gpu_engine.c - the CUDA engine against the CPU reference, whole models.
 *
 * Two tiny random models (a V1 with absolute position embedding, 2 stages, shift and no-shift
 * blocks; a V2 with 3 stages and a window clamped to the resolution) run on the CPU reference
 * session and on the GPU in fp32, tf32, fp16 and bf16, fused and unfused attention, graphs on and
 * off, batches 1 and 3. Checks: logits rel error max|d|/max|ref| within fp32 1e-4, tf32/fp16 5e-3,
 * bf16 3e-2; the same input twice gives bit-identical logits (graph replay after the first,
 * un-captured run); switching batch sizes works; batch > max_batch is refused; an absent device
 * index is refused with a message; the memory plan describes itself. Six more models run the
 * geometries where timm and transformers differ (non-square inputs and windows, a shift along one
 * dimension, grids padded to the window in either order, images padded to the patch, odd grids at
 * a merge); windows over 32 a side are refused (SWIN_ERR_UNSUPPORTED, the shape named).
 * Programmatic Dependent Launch (kernels/common.cuh) changes no bit: every model's logits with it
 * on and off (swin_pdl_set) are identical, un-captured and replayed, in every precision and
 * attention (on a GPU below compute capability 9.0 both are plain launches). test_gpu_engine_nopdl
 * runs the whole test again with SWIN_PDL=0 (PDL is on by default).
 * Exits 77 when there is no usable GPU.  Run: ctest -R test_gpu_engine
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "ops.h"
#include "testutil.h"

#define MAXB 3

typedef struct {
    const char *name;
    int version, img, patch, window, embed, stages, depths[4], heads[4], ape, classes;
    float mlp;
    int img_w;            /* 0: img (square) */
    swin_family family;   /* whose geometry (padding order, windows) */
} tiny_cfg;

static const tiny_cfg MODELS[] = {
    /* res 14 (window 7, shift 3) then 7 == window (no shift); head_dim 16 */
    {"tiny_v1", 1, 56, 4, 7, 48, 2, {2, 1}, {3, 6}, 1, 10, 4.0f, 0, SWIN_FAMILY_TIMM},
    /* res 16 (window 8, shift 4), 8 == window, 4 < window (clamped); head_dim 32 */
    {"tiny_v2", 2, 64, 4, 8, 32, 3, {2, 2, 1}, {1, 2, 4}, 0, 16, 2.0f, 0, SWIN_FAMILY_TIMM},
    /* timm 32x64, window 4: 8x16 (shift 2, 2), 4x8 (shift 0 along H, 2 along W), 2x4 windows */
    {"tiny_v1_rect_timm", 1, 32, 4, 4, 32, 3, {2, 2, 2}, {1, 2, 4}, 0, 10, 2.0f, 64, SWIN_FAMILY_TIMM},
    /* transformers 48x80, window 3: 12x20 -> 12x21 and 6x10 -> 6x12 padded before the roll, 3x5 -> 3x6;
     * absolute position embedding */
    {"tiny_v1_pad_hf", 1, 48, 4, 3, 32, 3, {2, 2, 2}, {1, 2, 4}, 1, 10, 2.0f, 80, SWIN_FAMILY_HF},
    /* timm 64, window 7: 16 -> 21 and 8 -> 14 padded after the roll (shift 3), 4 clamped */
    {"tiny_v2_pad_timm", 2, 64, 4, 7, 32, 3, {2, 2, 2}, {1, 2, 4}, 0, 10, 2.0f, 0, SWIN_FAMILY_TIMM},
    /* transformers 62x54: the image padded to 64x56 (grid 16x14), windows from the constructor's
     * 15: 7 (shift 3) padded to 21x14, then 8x7 (window 7, no shift) padded to 14x7 */
    {"tiny_v2_pad_hf", 2, 62, 4, 7, 32, 2, {2, 2}, {1, 2}, 0, 10, 2.0f, 54, SWIN_FAMILY_HF},
    /* timm 44x60, window 3: 11x15 padded to 12x15, the odd grid merged to 6x8 (zero padded) */
    {"tiny_v1_odd_timm", 1, 44, 4, 3, 32, 2, {2, 2}, {1, 2}, 0, 10, 2.0f, 60, SWIN_FAMILY_TIMM},
    /* transformers 50x66: the image padded to 52x68 (13x17), odd merges to 7x9 and 4x5 */
    {"tiny_v2_odd_hf", 2, 50, 4, 3, 32, 3, {2, 2, 2}, {1, 2, 4}, 0, 10, 2.0f, 66, SWIN_FAMILY_HF},
};

static const double TOL[4] = {1e-4, 5e-3, 5e-3, 3e-2};   /* fp32, tf32, fp16, bf16 */

static swin_status make_model(const tiny_cfg *t, swin_model **out) {
    swin_config c;
    memset(&c, 0, sizeof c);
    c.version = t->version;
    snprintf(c.arch, sizeof c.arch, "%s", t->name);
    c.img_h = t->img;
    c.img_w = t->img_w ? t->img_w : t->img;
    c.family = t->family;
    c.patch_size = t->patch;
    c.in_chans = 3;
    c.embed_dim = t->embed;
    c.num_stages = t->stages;
    for (int s = 0; s < t->stages; s++) {
        c.depths[s] = t->depths[s];
        c.num_heads[s] = t->heads[s];
    }
    c.window_size = t->window;
    c.mlp_ratio = t->mlp;
    c.qkv_bias = 1;
    c.ln_eps = 1e-5f;
    c.ape = t->ape;
    c.num_classes = t->classes;
    for (int i = 0; i < 3; i++) { c.mean[i] = 0.5f; c.std[i] = 0.25f; }
    return swin_model_random_config(&c, 1234 + t->version, out);
}

static double rel_err(const float *got, const float *ref, size_t n) {
    double m = tu_max_abs(ref, n);
    return tu_max_abs_diff(got, ref, n) / (m > 0 ? m : 1);
}

/* One GPU configuration: batch 1, batch 3, batch 3 again (replay), batch 1 again, batch 4. */
static int run_config(const swin_model *m, const float *input, const float *ref, int classes,
                      swin_precision p, swin_attention attn, int graphs, const char *name) {
    swin_session_options o = swin_session_options_default();
    o.device = SWIN_DEVICE_CUDA;
    o.precision = p;
    o.attention = attn;
    o.graphs = graphs;
    o.max_batch = MAXB;
    swin_session *s = NULL;
    swin_status st = swin_session_create(m, &o, &s);
    if (st == SWIN_ERR_NO_DEVICE) return st;
    char what[160];
    snprintf(what, sizeof what, "%s %s %s graphs %s", name, swin_precision_str(p),
             attn == SWIN_ATTN_FUSED ? "fused" : "unfused", graphs ? "on" : "off");
    if (!CHECK(st == SWIN_OK, "%s: create: %s", what, swin_last_error())) return st;

    size_t n3 = (size_t)MAXB * classes;
    float *a1 = calloc(classes, sizeof(float)), *b1 = calloc(classes, sizeof(float));
    float *a3 = calloc(n3, sizeof(float)), *b3 = calloc(n3, sizeof(float));
    float *big = calloc((size_t)(MAXB + 1) * classes, sizeof(float));
    st = swin_forward(s, input, 1, a1);
    CHECK(st == SWIN_OK, "%s: batch 1: %s", what, swin_last_error());
    st = swin_forward(s, input, MAXB, a3);
    CHECK(st == SWIN_OK, "%s: batch %d: %s", what, MAXB, swin_last_error());
    st = swin_forward(s, input, MAXB, b3);
    CHECK(st == SWIN_OK, "%s: batch %d again: %s", what, MAXB, swin_last_error());
    st = swin_forward(s, input, 1, b1);
    CHECK(st == SWIN_OK, "%s: batch 1 again: %s", what, swin_last_error());

    double e1 = rel_err(a1, ref, classes), e3 = rel_err(a3, ref, n3);
    CHECK(e1 <= TOL[p], "%s: batch 1 rel error %.3g > %.3g", what, e1, TOL[p]);
    CHECK(e3 <= TOL[p], "%s: batch %d rel error %.3g > %.3g", what, MAXB, e3, TOL[p]);
    CHECK(!memcmp(a3, b3, n3 * sizeof(float)), "%s: batch %d twice differs (max %.3g)", what, MAXB,
          tu_max_abs_diff(a3, b3, n3));
    CHECK(!memcmp(a1, b1, classes * sizeof(float)), "%s: batch 1 twice differs (max %.3g)", what,
          tu_max_abs_diff(a1, b1, classes));
    CHECK(swin_forward(s, input, MAXB + 1, big) == SWIN_ERR_ARGUMENT, "%s: batch %d above max batch %d accepted",
          what, MAXB + 1, MAXB);
    printf("  %-34s rel error batch 1 %.2e, batch %d %.2e (tol %.0e)\n", what, e1, MAXB, e3, TOL[p]);
    free(a1); free(b1); free(a3); free(b3); free(big);
    swin_session_free(s);
    return SWIN_OK;
}

/* Logits of batch MAXB with PDL off and on, each from the first (un-captured) forward and from the
 * graph replay after it, must be identical. SWIN_GEMM_TUNE=0 meanwhile: the two sessions time
 * their GEMM candidates separately and could pick different algorithms, which would change bits. */
static void test_pdl_identical(const swin_model *m, const float *input, int classes, const char *name) {
    const size_t n = (size_t)MAXB * classes;
    const char *tune = getenv("SWIN_GEMM_TUNE");
    char *tune_was = tune ? strdup(tune) : NULL;
    setenv("SWIN_GEMM_TUNE", "0", 1);
    int active = 0;
    for (int p = SWIN_FP32; p <= SWIN_BF16; p++)
        for (int a = 0; a < 2; a++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s %s", name, swin_precision_str((swin_precision)p),
                     a == SWIN_ATTN_FUSED ? "fused" : "unfused");
            float *got[2] = {calloc(2 * n, sizeof(float)), calloc(2 * n, sizeof(float))};
            int ok = 1;
            for (int pdl = 0; pdl < 2 && ok; pdl++) {
                swin_pdl_set(pdl);
                swin_session_options o = swin_session_options_default();
                o.device = SWIN_DEVICE_CUDA;
                o.precision = (swin_precision)p;
                o.attention = (swin_attention)a;
                o.max_batch = MAXB;
                swin_session *s = NULL;
                ok = CHECK(swin_session_create(m, &o, &s) == SWIN_OK, "%s pdl %d: create: %s", what, pdl,
                           swin_last_error());
                if (pdl) active = swin_pdl_enabled();
                for (int r = 0; r < 2 && ok; r++)   /* un-captured (then captured), then the replay */
                    ok = CHECK(swin_forward(s, input, MAXB, got[pdl] + r * n) == SWIN_OK, "%s pdl %d: forward %d: %s",
                               what, pdl, r, swin_last_error());
                swin_session_free(s);
            }
            swin_pdl_set(-1);
            if (ok)
                CHECK(!memcmp(got[0], got[1], 2 * n * sizeof(float)), "%s: logits with PDL differ from those without "
                      "(max %.3g)", what, tu_max_abs_diff(got[0], got[1], 2 * n));
            free(got[0]);
            free(got[1]);
        }
    if (tune_was) setenv("SWIN_GEMM_TUNE", tune_was, 1);
    else unsetenv("SWIN_GEMM_TUNE");
    free(tune_was);
    printf("  PDL on and off: identical logits checked in every precision and attention (PDL %s on this GPU)\n",
           active ? "active" : "not available");
}

static int test_model(const tiny_cfg *t) {
    swin_model *m = NULL;
    if (!CHECK(make_model(t, &m) == SWIN_OK, "%s: %s", t->name, swin_last_error())) return SWIN_OK;
    int classes = t->classes;
    size_t n_in = (size_t)MAXB * 3 * t->img * (t->img_w ? t->img_w : t->img);
    float *input = malloc(n_in * sizeof(float)), *ref = calloc((size_t)MAXB * classes, sizeof(float));
    tu_fill(input, n_in, -2.0f, 2.0f);

    swin_session_options o = swin_session_options_default();   /* CPU fp32 reference */
    o.max_batch = MAXB;
    swin_session *cpu = NULL;
    swin_status st = swin_session_create(m, &o, &cpu);
    CHECK(st == SWIN_OK, "%s: cpu session: %s", t->name, swin_last_error());
    if (st == SWIN_OK) {
        CHECK(swin_forward(cpu, input, MAXB, ref) == SWIN_OK, "%s: cpu forward: %s", t->name, swin_last_error());
        swin_session_free(cpu);
    }
    printf("%s: version %d, img %dx%d, classes %d, max|logit| %.3g\n", t->name, t->version, t->img,
           t->img_w ? t->img_w : t->img, classes,
           tu_max_abs(ref, (size_t)MAXB * classes));

    for (int p = SWIN_FP32; p <= SWIN_BF16 && st == SWIN_OK; p++)
        for (int a = 0; a < 2 && st == SWIN_OK; a++)
            for (int g = 1; g >= 0 && st == SWIN_OK; g--)
                st = run_config(m, input, ref, classes, (swin_precision)p, (swin_attention)a, g, t->name);
    if (st == SWIN_OK) test_pdl_identical(m, input, classes, t->name);
    free(input);
    free(ref);
    swin_model_free(m);
    return st;
}

/* An absent device is refused with a message that names it; the plan describes itself. */
static void test_device_and_plan(void) {
    swin_model *m = NULL;
    if (!CHECK(make_model(&MODELS[0], &m) == SWIN_OK, "model: %s", swin_last_error())) return;
    swin_session_options o = swin_session_options_default();
    o.device = SWIN_DEVICE_CUDA;
    o.device_index = 1023;
    swin_session *s = NULL;
    swin_status st = swin_session_create(m, &o, &s);
    CHECK(st == SWIN_ERR_NO_DEVICE && strstr(swin_last_error(), "cuda:1023 does not exist"),
          "cuda:1023: status %d, message '%s'", (int)st, swin_last_error());
    swin_session_free(s);
    s = NULL;
    o.device_index = 0;
    o.precision = SWIN_FP16;
    o.max_batch = 8;
    st = swin_session_create(m, &o, &s);
    CHECK(st == SWIN_OK, "plan session: %s", swin_last_error());
    if (st == SWIN_OK) {
        char buf[4096];
        CHECK(swin_session_describe(s, buf, sizeof buf) == SWIN_OK, "describe: %s", swin_last_error());
        CHECK(strstr(buf, "total") && strstr(buf, "max batch 8"), "plan lacks its total:\n%s", buf);
        printf("%s", buf);
        swin_session_free(s);
    }
    swin_model_free(m);
}

/* A geometry the engine does not run (windows over 32 a side: the CPU reference runs them) is
 * refused at session creation with SWIN_ERR_UNSUPPORTED naming the shape. */
static void test_refuses_new_geometry(void) {
    static const struct { int version, h, w, window; swin_family family; const char *needle; } G[] = {
        {2, 80, 160, 40, SWIN_FAMILY_TIMM, "stage 0 has 20x40 windows (at most 32 a side)"},
    };
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++) {
        swin_config c;
        memset(&c, 0, sizeof c);
        c.version = G[i].version;
        snprintf(c.arch, sizeof c.arch, "tiny_geometry_%zu", i);
        c.img_h = G[i].h, c.img_w = G[i].w, c.patch_size = 4, c.in_chans = 3, c.embed_dim = 16;
        c.num_stages = 2, c.depths[0] = c.depths[1] = 2, c.num_heads[0] = 1, c.num_heads[1] = 2;
        c.window_size = G[i].window, c.family = G[i].family, c.mlp_ratio = 2.0f, c.qkv_bias = 1;
        c.ln_eps = 1e-5f, c.num_classes = 4;
        for (int k = 0; k < 3; k++) { c.mean[k] = 0.5f; c.std[k] = 0.25f; }
        swin_model *m = NULL;
        if (!CHECK(swin_model_random_config(&c, 7, &m) == SWIN_OK, "geometry %zu: %s", i, swin_last_error()))
            continue;
        CHECK(!swin_model_plain_geometry(m, NULL, 0), "geometry %zu should not be plain", i);
        swin_session_options o = swin_session_options_default();
        o.device = SWIN_DEVICE_CUDA;
        swin_session *s = NULL;
        swin_status st = swin_session_create(m, &o, &s);
        CHECK(st == SWIN_ERR_UNSUPPORTED && strstr(swin_last_error(), G[i].needle) &&
              strstr(swin_last_error(), "is not supported on the GPU yet"),
              "geometry %zu: status %d, message '%s'", i, (int)st, swin_last_error());
        swin_session_free(s);
        swin_model_free(m);
    }
}

int main(int argc, char **argv) {
    (void)argc; (void)argv;
    tu_seed(42);
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) {
        if (test_model(&MODELS[i]) == SWIN_ERR_NO_DEVICE) {
            printf("test_gpu_engine: skipped: %s\n", swin_last_error());
            return TU_SKIP;
        }
    }
    test_device_and_plan();
    test_refuses_new_geometry();
    return tu_finish("test_gpu_engine");
}
