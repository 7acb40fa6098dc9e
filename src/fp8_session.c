/* fp8_session.c - the session's FP8 helpers (fp8_session.h): random calibration images and the
 * CPU emulation's weights. Test: tests/test_fp8.c, tests/cli_fp8.sh. */
#include "fp8_session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RANDOM_SEED 0x5EED0F8ull

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void swin_fp8_random_images(const swin_config *c, int first, int n, float *out) {
    size_t plane = (size_t)c->img_h * c->img_w;
    for (int i = 0; i < n; i++) {
        uint64_t state = RANDOM_SEED + (uint64_t)(first + i);   /* image k is the same in any batch */
        for (int ch = 0; ch < 3; ch++) {
            float *o = out + ((size_t)i * 3 + ch) * plane;
            for (size_t p = 0; p < plane; p++) {
                float v = (float)(splitmix64(&state) >> 56) / 255.0f;
                o[p] = (v - c->mean[ch]) / c->std[ch];
            }
        }
    }
}

static void warn(const swin_session_options *o, const char *msg) {
    if (o->warn) o->warn(msg, o->warn_user);
    else fprintf(stderr, "warning: %s\n", msg);
}

static swin_status calibrate_random(const swin_model *m, const swin_session_options *o, swin_fp8_record_fn record,
                                    void *ctx, float *scale) {
    const swin_config *c = &m->cfg;
    int n = swin_fp8_scale_count(m), B = o->max_batch < SWIN_FP8_RANDOM_IMAGES ? o->max_batch : SWIN_FP8_RANDOM_IMAGES;
    float *x = malloc(sizeof(float) * 3 * c->img_h * c->img_w * (size_t)B);
    float *amax = calloc((size_t)n + 1, sizeof(float));
    swin_status st = x && amax ? SWIN_OK : swin_fail(SWIN_ERR_MEMORY, "out of memory for the FP8 calibration");
    for (int i = 0; st == SWIN_OK && i < SWIN_FP8_RANDOM_IMAGES; i += B) {
        int b = SWIN_FP8_RANDOM_IMAGES - i < B ? SWIN_FP8_RANDOM_IMAGES - i : B;
        swin_fp8_random_images(c, i, b, x);
        st = record(ctx, x, b, amax);
    }
    if (st == SWIN_OK) st = swin_fp8_check_amax(m, amax, "FP8 calibration on random images");
    if (st == SWIN_OK) {
        swin_fp8_scales_from_amax(n, amax, SWIN_FP8_DEFAULT_MARGIN, scale);
        char msg[256];
        snprintf(msg, sizeof msg, "fp8: no scales file, so the FP8 input scales come from %d random images; "
                 "`swin calibrate --images DIR` on real images gives better ones", SWIN_FP8_RANDOM_IMAGES);
        warn(o, msg);
    }
    free(x);
    free(amax);
    return st;
}

swin_status swin_fp8_input_scales(const swin_model *m, const swin_session_options *o, swin_fp8_record_fn record,
                                  void *ctx, float *scale) {
    if (o->fp8_scales) return swin_fp8_scales_read(m, o->fp8_scales, scale);
    return calibrate_random(m, o, record, ctx, scale);
}

#ifdef SWIN_HAVE_CUDA
typedef struct {
    swin_engine *e;
    int scales;   /* swin_fp8_scale_count */
} engine_ctx;

static swin_status engine_record(void *ctx, const float *x, int n, float *amax) {
    engine_ctx *c = ctx;
    SWIN_TRY(swin_engine_calibrate_forward(c->e, x, n));
    return swin_engine_amax(c->e, amax, c->scales);
}

swin_status swin_fp8_engine_setup(swin_engine *e, const swin_model *m, const swin_session_options *o) {
    engine_ctx c = {e, swin_fp8_scale_count(m)};
    float *scale = calloc((size_t)c.scales + 1, sizeof(float));
    if (!scale) return swin_fail(SWIN_ERR_MEMORY, "out of memory for the FP8 scales");
    swin_status st = swin_fp8_input_scales(m, o, engine_record, &c, scale);
    if (st == SWIN_OK) st = swin_engine_set_fp8_scales(e, scale, c.scales);
    free(scale);
    return st;
}
#endif

/* a qkv site's channel scales where it stores q, k, v in E4M3 (fp8.h swin_fp8_qkv_e4m3_block: as
 * the GPU does), else NULL; *hd its head_dim */
static const float *channel_scales(const swin_model *m, const swin_fp8_site *site, const float *scale, int *hd) {
    if (site->out_off < 0 || !(scale[site->out_off] > 0.0f)) return NULL;
    const swin_dims d = swin_block_dims(m, site->stage, site->block, 1);
    *hd = d.head_dim;
    return swin_fp8_qkv_e4m3_block(&d) ? scale + site->out_off : NULL;
}

swin_status swin_fp8_emulation_create(const swin_model *m, int max_batch, const float *scale, swin_fp8_forward *out,
                                      size_t *bytes) {
    int n = swin_fp8_sites(m, NULL);
    swin_fp8_site *site = malloc(sizeof *site * (size_t)(n > 0 ? n : 1));
    if (!site) return swin_fail(SWIN_ERR_MEMORY, "out of memory for the FP8 sites");
    swin_fp8_sites(m, site);
    // one allocation: the sites' parameters, the xq scratch, then per site wq [N, K], ws [N] and,
    // for a qkv site with them, a copy of its channel scales [N] (the caller frees scale[])
    size_t off = 0, most = 0, xq = swin_forward_cpu_xq_floats(m, max_batch);
    swin_carve(NULL, &off, sizeof(swin_fp8_linear_w) * (size_t)n);
    swin_carve(NULL, &off, sizeof(float) * xq);
    for (int i = 0; i < n; i++) {
        int hd = 0;
        size_t nk = (size_t)site[i].N * site[i].K, so = channel_scales(m, &site[i], scale, &hd) ? (size_t)site[i].N : 0;
        swin_carve(NULL, &off, sizeof(float) * (nk + (size_t)site[i].N + so));
        if (nk > most) most = nk;
    }
    char *base = malloc(off);
    uint8_t *q = malloc(most ? most : 1);   /* one site's E4M3 bytes at a time */
    if (!base || !q) {
        free(base);
        free(q);
        free(site);
        return swin_fail(SWIN_ERR_MEMORY, "cannot allocate %zu MB for the FP8 weights and scratch", off >> 20);
    }
    off = 0;
    swin_fp8_linear_w *w = swin_carve(base, &off, sizeof(swin_fp8_linear_w) * (size_t)n);
    out->xq = swin_carve(base, &off, sizeof(float) * xq);
    for (int i = 0; i < n; i++) {
        int N = site[i].N, K = site[i].K, hd = 0;
        const float *so = channel_scales(m, &site[i], scale, &hd);
        float *wq = swin_carve(base, &off, sizeof(float) * ((size_t)N * K + (size_t)N + (so ? (size_t)N : 0)));
        float *ws = wq + (size_t)N * K, *out_s = so ? ws + N : NULL;
        swin_fp8_quantize_weights(site[i].w, N, K, q, ws);
        for (size_t k = 0; k < (size_t)N * K; k++) wq[k] = swin_e4m3_to_float(q[k]);
        if (so) swin_fp8_qkv_scales(so, N / 3, hd, out_s);
        w[i] = (swin_fp8_linear_w){wq, ws, site[i].w->b, scale[i], out_s};
    }
    free(q);
    free(site);
    out->sites = w;
    out->amax = NULL;
    if (bytes) *bytes = off;
    return SWIN_OK;
}

void swin_fp8_emulation_free(swin_fp8_forward *f) {
    if (!f) return;
    free((void *)f->sites);   /* the one allocation starts with the sites */
    f->sites = NULL;
    f->xq = NULL;
}
