/* test_fp8.c - the FP8 arithmetic of src/fp8.h on the CPU: E4M3 conversion, the sites of a model,
 * weight quantisation, the emulated GEMM and the forward's sites.
 *
 *   - decoding: every code against anchors from the OCP FP8 spec and the structure of E4M3
 *     (strictly increasing, each value a 4-bit significand times a power of two);
 *   - encoding: every code's value round-trips; 300,000 random floats of every magnitude and
 *     every midpoint between neighbours (and one float either side) against a brute-force search
 *     for the nearest E4M3 value, ties to the even code, saturation to +-448; NaN, +-inf, +-0;
 *   - sites of the digits model (weights/digits): count, order, names, shapes, weight pointers,
 *     out_off (the qkv sites' output channels after the sites, contiguous, -1 elsewhere) and
 *     swin_fp8_scale_count; of a transformers fixture: timm's names whatever the checkpoint's
 *     layout, its out_off the same way;
 *   - per-channel weight quantisation on hand-made rows; swin_linear_fp8_cpu against the formula,
 *     without and with output channel scales (the round trip after GELU, before the residual);
 *     swin_absmax_cols_cpu on a hand-made matrix;
 *   - the forward: site 0's recorded amax against LayerNorm of the patch embedding computed apart,
 *     its output channels' amax against its qkv GEMM over the padded windows computed apart,
 *     every entry recorded; the emulated logits near fp32 but not equal, moved by the q, k, v
 *     round trip (the channel scales, which the emulation copies) and by one input scale.
 * Scales files and sessions: tests/test_fp8_session.c. Run: ctest -R test_fp8 (argv[1] = source dir).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8.h"
#include "fp8_session.h"
#include "layers.h"
#include "testutil.h"

// ---- decoding

static void test_decode(void) {
    static const struct { uint8_t code; float value; } anchors[] = {
        {0x00, 0.0f}, {0x01, 0x1p-9f}, {0x07, 7 * 0x1p-9f}, {0x08, 0x1p-6f}, {0x0F, 1.875f * 0x1p-6f},
        {0x38, 1.0f}, {0x39, 1.125f}, {0x3F, 1.875f}, {0x40, 2.0f}, {0x70, 128.0f}, {0x78, 256.0f}, {0x7D, 416.0f},
        {0x7E, 448.0f}, {0xB8, -1.0f}, {0xFE, -448.0f}, {0x81, -0x1p-9f}};
    for (size_t i = 0; i < sizeof anchors / sizeof anchors[0]; i++)
        CHECK(swin_e4m3_to_float(anchors[i].code) == anchors[i].value, "code 0x%02X decodes to %g, expected %g",
              anchors[i].code, (double)swin_e4m3_to_float(anchors[i].code), (double)anchors[i].value);
    CHECK(isnan(swin_e4m3_to_float(0x7F)) && isnan(swin_e4m3_to_float(0xFF)), "0x7F and 0xFF are NaN");
    CHECK(swin_e4m3_to_float(0x80) == 0.0f && signbit(swin_e4m3_to_float(0x80)), "0x80 is -0");
    int mono = 1, shape = 1, sym = 1;
    for (int c = 1; c <= 0x7E; c++) mono &= swin_e4m3_to_float((uint8_t)c) > swin_e4m3_to_float((uint8_t)(c - 1));
    for (int c = 0; c <= 0x7E; c++) {
        double v = ldexp(swin_e4m3_to_float((uint8_t)c), 9);   /* an integer m 2^k, m < 16 */
        while (v >= 16 && fmod(v, 2) == 0) v /= 2;
        shape &= v == floor(v) && v < 16;
        sym &= swin_e4m3_to_float((uint8_t)(c | 0x80)) == -swin_e4m3_to_float((uint8_t)c);
    }
    CHECK(mono, "codes 0x00..0x7E decode to strictly increasing values");
    CHECK(shape, "every value is a 4-bit significand times 2^(k-9)");
    CHECK(sym, "the sign bit negates");
}

// ---- encoding against a brute-force nearest search

/* nearest E4M3 code to x: the smallest |x| - value, ties to the even code, saturating */
static uint8_t nearest(float x) {
    double a = fabs((double)x);
    int best = 0;
    for (int c = 1; c <= 0x7E; c++) {
        double d = fabs(a - swin_e4m3_to_float((uint8_t)c)), db = fabs(a - swin_e4m3_to_float((uint8_t)best));
        if (d < db || (d == db && (c & 1) == 0)) best = c;
    }
    if (a > 448.0) best = 0x7E;
    return (uint8_t)(best | (signbit(x) ? 0x80 : 0));
}

static void test_encode(void) {
    int round_trip = 1;
    for (int c = 0; c < 256; c++)
        if ((c & 0x7F) != 0x7F) round_trip &= swin_e4m3_from_float(swin_e4m3_to_float((uint8_t)c)) == c;
    CHECK(round_trip, "every code's value encodes to that code");
    int bad = 0;
    for (int c = 0; c < 0x7E && bad < 5; c++) {   /* midpoints: ties to even; one float off: the nearer */
        float lo = swin_e4m3_to_float((uint8_t)c), hi = swin_e4m3_to_float((uint8_t)(c + 1)), mid = (lo + hi) / 2;
        uint8_t even = (uint8_t)(c % 2 == 0 ? c : c + 1);
        if (swin_e4m3_from_float(mid) != even || swin_e4m3_from_float(nextafterf(mid, 0)) != c ||
            swin_e4m3_from_float(nextafterf(mid, 1000)) != c + 1 || swin_e4m3_from_float(-mid) != (even | 0x80)) {
            CHECK(0, "midpoint %g between 0x%02X and 0x%02X", (double)mid, c, c + 1);
            bad++;
        }
    }
    CHECK(bad == 0, "every midpoint rounds to the even code, a float either side to the nearer");
    tu_seed(8);
    bad = 0;
    for (int i = 0; i < 300000; i++) {
        float x = ldexpf(tu_uniform(1.0f, 2.0f), (int)floorf(tu_uniform(-14.0f, 11.0f)));
        if (i % 2) x = -x;
        if (swin_e4m3_from_float(x) != nearest(x) && bad++ < 5)
            CHECK(0, "%.9g encodes to 0x%02X, the nearest is 0x%02X", (double)x, swin_e4m3_from_float(x), nearest(x));
    }
    CHECK(bad == 0, "300000 random floats of 2^-14 .. 2^11 encode to the nearest value (%d wrong)", bad);
    CHECK(swin_e4m3_from_float(NAN) == 0x7F && swin_e4m3_from_float(-NAN) == 0x7F, "NaN gives 0x7F");
    CHECK(swin_e4m3_from_float(INFINITY) == 0x7E && swin_e4m3_from_float(-INFINITY) == 0xFE, "+-inf saturate");
    CHECK(swin_e4m3_from_float(464.0f) == 0x7E && swin_e4m3_from_float(1e30f) == 0x7E &&
          swin_e4m3_from_float(-500.0f) == 0xFE, "beyond 448 saturates");
    CHECK(swin_e4m3_from_float(0.0f) == 0x00 && swin_e4m3_from_float(-0.0f) == 0x80, "+-0 keep their sign");
    CHECK(swin_e4m3_from_float(0x1p-10f) == 0x00 && swin_e4m3_from_float(3 * 0x1p-10f) == 0x02 &&
          swin_e4m3_from_float(0x1p-149f) == 0x00 && swin_e4m3_from_float(-0x1p-11f) == 0x80,
          "subnormal ties to even; the smallest floats flush to zero");
    CHECK(swin_e4m3_from_float(15 * 0x1p-10f) == 0x08, "half-way between 7 x 2^-9 and 2^-6 rounds up to 0x08");
}

// ---- sites

/* the model in src/dir, NULL after a failed check */
static swin_model *load(const char *src, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", src, dir);
    swin_model *m = NULL;
    swin_load_options lo = swin_load_options_default();
    CHECK(swin_model_load(path, &lo, &m) == SWIN_OK, "load %s: %s", path, swin_last_error());
    return m;
}

static void test_sites(const char *src) {
    swin_model *m = load(src, "weights/digits");
    if (!m) return;
    static const struct { const char *name; int K, N; } want[17] = {
        {"layers.0.blocks.0.attn.qkv", 64, 192}, {"layers.0.blocks.0.attn.proj", 64, 64},
        {"layers.0.blocks.0.mlp.fc1", 64, 256},  {"layers.0.blocks.0.mlp.fc2", 256, 64},
        {"layers.0.blocks.1.attn.qkv", 64, 192}, {"layers.0.blocks.1.attn.proj", 64, 64},
        {"layers.0.blocks.1.mlp.fc1", 64, 256},  {"layers.0.blocks.1.mlp.fc2", 256, 64},
        {"layers.1.downsample.reduction", 256, 128},
        {"layers.1.blocks.0.attn.qkv", 128, 384}, {"layers.1.blocks.0.attn.proj", 128, 128},
        {"layers.1.blocks.0.mlp.fc1", 128, 512},  {"layers.1.blocks.0.mlp.fc2", 512, 128},
        {"layers.1.blocks.1.attn.qkv", 128, 384}, {"layers.1.blocks.1.attn.proj", 128, 128},
        {"layers.1.blocks.1.mlp.fc1", 128, 512},  {"layers.1.blocks.1.mlp.fc2", 512, 128}};
    swin_fp8_site s[17];
    CHECK(swin_fp8_sites(m, NULL) == 17, "digits: %d sites, expected 17", swin_fp8_sites(m, NULL));
    CHECK(swin_fp8_sites(m, s) == 17, "digits: sites filled");
    const swin_stage_w *st = m->w.stages;
    const swin_linear_w *w[17] = {&st[0].blocks[0].qkv, &st[0].blocks[0].proj, &st[0].blocks[0].fc1,
                                  &st[0].blocks[0].fc2, &st[0].blocks[1].qkv, &st[0].blocks[1].proj,
                                  &st[0].blocks[1].fc1, &st[0].blocks[1].fc2, &st[1].merge.reduction,
                                  &st[1].blocks[0].qkv, &st[1].blocks[0].proj, &st[1].blocks[0].fc1,
                                  &st[1].blocks[0].fc2, &st[1].blocks[1].qkv, &st[1].blocks[1].proj,
                                  &st[1].blocks[1].fc1, &st[1].blocks[1].fc2};
    for (int i = 0; i < 17; i++) {
        char name[64];
        swin_fp8_site_name(&s[i], name, sizeof name);
        CHECK(!strcmp(name, want[i].name) && s[i].K == want[i].K && s[i].N == want[i].N && s[i].w == w[i],
              "site %d: %s [K %d, N %d], expected %s [%d, %d] and the model's weights", i, name, s[i].K, s[i].N,
              want[i].name, want[i].K, want[i].N);
    }
    /* the qkv sites 0, 4, 9 and 13: their 192, 192, 384 and 384 channels after the 17 sites */
    static const int off[17] = {17, -1, -1, -1, 209, -1, -1, -1, -1, 401, -1, -1, -1, 785, -1, -1, -1};
    for (int i = 0; i < 17; i++)
        CHECK(s[i].out_off == off[i], "site %d: out_off %d, expected %d", i, s[i].out_off, off[i]);
    CHECK(swin_fp8_scale_count(m) == 17 + 2 * 192 + 2 * 384, "digits: %d scale entries, expected 1169",
          swin_fp8_scale_count(m));
    swin_model_free(m);
    /* a transformers checkpoint (HF names, merges at the end of stages): timm's names, merge first */
    if (!(m = load(src, "tests/data/ref_hf_v1_w7"))) return;
    int n = swin_fp8_sites(m, NULL), at = 4 * m->w.stages[0].depth;
    swin_fp8_site *hs = malloc(sizeof *hs * (size_t)n);
    char name[64] = "";
    if (hs) {
        swin_fp8_sites(m, hs);
        swin_fp8_site_name(&hs[at], name, sizeof name);
    }
    CHECK(hs && !strcmp(name, "layers.1.downsample.reduction") && hs[at].w == &m->w.stages[1].merge.reduction &&
          hs[at].K == 4 * m->w.stages[0].dim, "ref_hf_v1_w7: site %d is '%s', the merge of stage 1", at, name);
    int next = n, contiguous = hs != NULL;   /* each qkv site's channels right after the previous one's */
    for (int i = 0; hs && i < n; i++) {
        contiguous &= hs[i].out_off == (hs[i].kind == SWIN_SITE_QKV ? next : -1);
        if (hs[i].kind == SWIN_SITE_QKV) next += hs[i].N;
    }
    CHECK(contiguous && next == swin_fp8_scale_count(m), "ref_hf_v1_w7: out_off contiguous in site order, ending at "
          "the scale count %d (%d)", swin_fp8_scale_count(m), next);
    free(hs);
    swin_model_free(m);
}

// ---- weight quantisation and the emulated GEMM

static void test_quantize(void) {
    float w[3 * 4] = {0, 0, 0, 0,  2.0f, -2.0f, 1.0f, 0.001f,  0.3f, -0.1f, 0.05f, 0.2f};
    swin_linear_w lw = {w, NULL};
    uint8_t q[12];
    float ws[3];
    swin_fp8_quantize_weights(&lw, 3, 4, q, ws);
    CHECK(ws[0] == 1.0f && q[0] == 0 && q[3] == 0, "an all-zero row: scale 1, zeros");
    CHECK(ws[1] == 2.0f / 448.0f && q[4] == 0x7E && q[5] == 0xFE, "row max 2: scale 2/448, +-2 -> +-448");
    CHECK(ws[2] == 0.3f / 448.0f && q[8] == 0x7E, "row max 0.3 (first element) maps to 448");
    int close = 1;
    for (int i = 4; i < 12; i++) {
        float back = swin_e4m3_to_float(q[i]) * ws[i / 4];
        close &= fabsf(back - w[i]) <= 0x1p-4f * fabsf(w[i]) + 0x1p-10f * ws[i / 4];
    }
    CHECK(close, "dequantised weights within 2^-4 relative (or half a subnormal step)");

    enum { M = 5, K = 7, N = 3 };
    float x[M * K], wt[N * K], b[N], res[M * N], out[M * N], xq[M * K], wq[N * K], wsc[N];
    uint8_t qb[N * K];
    tu_seed(3);
    tu_fill(x, M * K, -3, 3);
    tu_fill(wt, N * K, -1, 1);
    tu_fill(b, N, -1, 1);
    tu_fill(res, M * N, -1, 1);
    swin_linear_w lin = {wt, b};
    swin_fp8_quantize_weights(&lin, N, K, qb, wsc);
    for (int i = 0; i < N * K; i++) wq[i] = swin_e4m3_to_float(qb[i]);
    swin_fp8_linear_w f = {wq, wsc, b, 3.0f * 2 / 448, NULL};
    swin_linear_fp8_cpu(out, x, &f, res, M, K, N, SWIN_ACT_NONE, xq);
    int same = 1;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)swin_e4m3_to_float(swin_e4m3_from_float(x[m * K + k] * (1.0f / f.s))) * wq[n * K + k];
            float y = (float)acc * f.s * wsc[n] + b[n] + res[m * N + n];
            same &= out[m * N + n] == y;
        }
    CHECK(same, "swin_linear_fp8_cpu = (sum xq wq) s ws[n] + b[n] + residual, bit for bit");

    /* with output channel scales: the round trip after GELU, before the residual */
    float so[N] = {0.01f, 2.0f / 448, 1e-3f}, plain[M * N];
    f.out_s = NULL;
    swin_linear_fp8_cpu(plain, x, &f, NULL, M, K, N, SWIN_ACT_GELU, xq);
    f.out_s = so;
    swin_linear_fp8_cpu(out, x, &f, res, M, K, N, SWIN_ACT_GELU, xq);
    int trip = 1, moved = 0;
    for (int i = 0; i < M * N; i++) {
        float y = swin_e4m3_to_float(swin_e4m3_from_float(plain[i] * (1.0f / so[i % N]))) * so[i % N] + res[i];
        trip &= out[i] == y;
        moved += out[i] != plain[i] + res[i];
    }
    CHECK(trip && moved > 0, "with out_s: e4m3(gelu(y) / so[n]) so[n] + residual, bit for bit (%d of %d moved)", moved,
          M * N);
}

static void test_absmax_cols(void) {
    float x[3 * 4] = {1, -2, 0, 3,  -4, 1, 0, NAN,  2, 0.5f, 0, -1}, amax[4] = {0.5f, 3, 0, 0};
    swin_absmax_cols_cpu(amax, x, 3, 4);
    CHECK(amax[0] == 4 && amax[1] == 3 && amax[2] == 0 && isnan(amax[3]),
          "column amax: 4 (a later row), 3 (the running value), 0 (zeros), NaN kept (got %g %g %g %g)", (double)amax[0],
          (double)amax[1], (double)amax[2], (double)amax[3]);
}

// ---- the forward's sites

static double rel(const float *a, const float *b, size_t n) { return tu_max_abs_diff(a, b, n) / tu_max_abs(b, n); }

/* max |y[m, n]| over the rows of y [M, N], per column, into amax [N] (test_forward's own loop) */
static void column_max(float *amax, const float *y, int M, int N) {
    for (int n = 0; n < N; n++) amax[n] = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) amax[n] = fmaxf(amax[n], fabsf(y[(size_t)m * N + n]));
}

static void test_forward(const char *src) {
    swin_model *m = load(src, "weights/digits");
    if (!m) return;
    enum { B = 4 };
    const swin_config *c = &m->cfg;
    int n = swin_fp8_sites(m, NULL), count = swin_fp8_scale_count(m), C = c->embed_dim;
    int L = m->w.stages[0].res_h * m->w.stages[0].res_w;
    swin_dims d = swin_block_dims(m, 0, 0, B);
    int Tp = B * swin_dims_nw(&d) * swin_dims_n(&d);
    size_t nin = (size_t)B * 3 * c->img_h * c->img_w, nl = (size_t)B * c->num_classes;
    float *x = malloc(nin * sizeof(float)), *scratch = malloc(swin_forward_cpu_scratch(m, B) * sizeof(float));
    float *amax = calloc((size_t)count, sizeof(float)), *scale = malloc((size_t)count * sizeof(float));
    float *l32 = malloc(nl * sizeof(float)), *l8 = malloc(nl * sizeof(float)), *lp = malloc(nl * sizeof(float));
    float *l8in = malloc(nl * sizeof(float));
    float *cols = malloc((size_t)B * L * 3 * c->patch_size * c->patch_size * sizeof(float));
    float *tok = malloc((size_t)B * L * C * sizeof(float)), *win = malloc((size_t)Tp * C * sizeof(float));
    float *qkv = malloc((size_t)Tp * 3 * C * sizeof(float)), *qkv_amax = malloc((size_t)3 * C * sizeof(float));
    if (!CHECK(x && scratch && amax && scale && l32 && l8 && lp && l8in && cols && tok && win && qkv && qkv_amax,
               "allocation"))
        goto done;
    swin_fp8_random_images(c, 0, B, x);
    swin_forward_cpu(l32, x, m, B, scratch);
    swin_fp8_forward rec = {amax, NULL, NULL};
    swin_forward_cpu_fp8(l8, x, m, B, scratch, NULL, &rec);
    CHECK(memcmp(l8, l32, nl * sizeof(float)) == 0, "recording leaves the fp32 logits as they are");
    /* site 0 (layers.0.blocks.0.attn.qkv) sees LN1(LN(patch_embed(x))), in windows padded with zero tokens */
    swin_im2col_patch_cpu(cols, x, B, c->img_h, c->img_w, c->patch_size, m->w.stages[0].res_h, m->w.stages[0].res_w);
    swin_linear_cpu(tok, cols, &m->w.patch_embed, NULL, B * L, 3 * c->patch_size * c->patch_size, C, SWIN_ACT_NONE);
    swin_layernorm_cpu(tok, tok, &m->w.patch_norm, B * L, C, c->ln_eps);
    swin_ln_shift_partition_cpu(win, tok, &m->w.stages[0].blocks[0].norm1, &d);
    swin_linear_cpu(qkv, win, &m->w.stages[0].blocks[0].qkv, NULL, Tp, C, 3 * C, SWIN_ACT_NONE);
    column_max(qkv_amax, qkv, Tp, 3 * C);
    swin_layernorm_cpu(tok, tok, &m->w.stages[0].blocks[0].norm1, B * L, C, c->ln_eps);
    float want = swin_absmax_cpu(tok, (size_t)B * L * C);
    CHECK(amax[0] == want, "site 0 amax %g, LN1 of the patch embedding computed apart %g", (double)amax[0], (double)want);
    int same = 1, differ = 0;
    for (int k = 0; k < 3 * C; k++) {
        same &= amax[n + k] == qkv_amax[k];
        differ += k > 0 && qkv_amax[k] != qkv_amax[0];
    }
    CHECK(same && differ > 0, "site 0's %d output channel amax = its qkv output over the %d window rows computed "
          "apart (and not all equal: %d differ from channel 0's %g)", 3 * C, Tp, differ, (double)qkv_amax[0]);
    int all = 1;
    for (int i = 0; i < count; i++) all &= isfinite(amax[i]) && amax[i] > 0;
    CHECK(all, "every site and qkv channel recorded a finite amax > 0");

    /* digits' 4x4 windows are not a geometry whose q, k, v fp8.h stores in E4M3: no round trip */
    swin_fp8_scales_from_amax(count, amax, 2.0f, scale);
    swin_fp8_forward emu;
    if (!CHECK(swin_fp8_emulation_create(m, B, scale, &emu, NULL) == SWIN_OK, "emulation: %s", swin_last_error()))
        goto done;
    int none = 1;
    for (int i = 0; i < n; i++) none &= !emu.sites[i].out_s;
    CHECK(none && !swin_fp8_qkv_e4m3_block(&d), "digits (4x4 windows): no site with E4M3 q, k, v");
    swin_forward_cpu_fp8(l8in, x, m, B, scratch, NULL, &emu);
    double ri = rel(l8in, l32, nl);
    CHECK(ri > 1e-4 && ri < 0.22, "fp8 logits %.3g from fp32 relative: emulated (> 1e-4), close (< 0.22)", ri);
    swin_fp8_emulation_free(&emu);
    scale[n - 1] /= 64;   /* the last fc2's inputs saturate */
    if (CHECK(swin_fp8_emulation_create(m, B, scale, &emu, NULL) == SWIN_OK, "emulation: %s", swin_last_error())) {
        swin_forward_cpu_fp8(lp, x, m, B, scratch, NULL, &emu);
        double rp = rel(lp, l8in, nl);
        CHECK(rp > 1e-2, "the last site's scale / 64 moves the logits by %.3g relative (> 1e-2)", rp);
        swin_fp8_emulation_free(&emu);
    }
done:
    free(x), free(scratch), free(amax), free(scale), free(l32), free(l8), free(lp), free(l8in), free(cols), free(tok);
    free(win), free(qkv), free(qkv_amax);
    swin_model_free(m);
}

/* swin_fp8_qkv_scale: clamped to fp16's normal range, rounded to fp16 with ties to even */
static void test_qkv_scale(void) {
    static const struct { float in, want; } C[] = {
        {1.0f, 1.0f}, {0.1f, 0.0999755859375f}, {1e-9f, 0x1p-14f}, {0x1p-15f, 0x1p-14f}, {1e9f, 65504.0f},
        {65519.0f, 65504.0f}, {1.0f + 0x1p-11f, 1.0f}, {1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f},
        {0.0123f, 0.012298583984375f}};
    int bad = 0;
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        float got = swin_fp8_qkv_scale(C[i].in);
        if (got != C[i].want && bad++ < 3)
            printf("  swin_fp8_qkv_scale(%.9g) = %.9g, expected %.9g\n", (double)C[i].in, (double)got, (double)C[i].want);
    }
    CHECK(bad == 0, "swin_fp8_qkv_scale: %d of %zu cases wrong", bad, sizeof C / sizeof C[0]);
}

/* swin_fp8_qkv_scales on two heads of 4 channels (C 8): k and v as swin_fp8_qkv_scale; q's
 * products with k's scales one f a head (the largest file-scale product over the head, clamped), in
 * place as in a copy; the clamps at 2^-100 and 2^100 */
static void test_qkv_scales(void) {
    enum { C = 8, HD = 4 };
    float so[3 * C], out[3 * C], in_place[3 * C];
    for (int i = 0; i < 3 * C; i++) so[i] = 0.01f * (float)(1 + (i * 7) % 11);
    so[2] = 3.0f;   /* head 0's largest q scale; head 1's: whichever product is largest */
    swin_fp8_qkv_scales(so, C, HD, out);
    memcpy(in_place, so, sizeof so);
    swin_fp8_qkv_scales(in_place, C, HD, in_place);
    int bad = memcmp(out, in_place, sizeof out) != 0;
    for (int n = C; n < 3 * C; n++) bad += out[n] != swin_fp8_qkv_scale(so[n]);
    for (int h = 0; h < C / HD; h++) {
        float f = 0.0f;
        for (int c = h * HD; c < (h + 1) * HD; c++) f = fmaxf(f, so[c] * out[C + c]);
        if (h == 0) bad += f != 3.0f * out[C + 2];
        for (int c = h * HD; c < (h + 1) * HD; c++) {
            bad += out[c] != f / out[C + c];
            bad += fabsf(out[c] * out[C + c] - f) > 2e-7f * f;   /* the GPU's f[h]: out[c] out[C + c] */
        }
    }
    CHECK(bad == 0, "swin_fp8_qkv_scales: %d values wrong", bad);
    for (int i = 0; i < C; i++) so[i] = 1e-40f;   /* q scales whose products underflow, then overflow */
    swin_fp8_qkv_scales(so, C, HD, out);
    int lo = fabsf(out[0] * out[C] - 0x1p-100f) <= 0x1p-122f, fin = 1;
    for (int i = 0; i < C; i++) so[i] = 3e38f;
    swin_fp8_qkv_scales(so, C, HD, out);
    for (int i = 0; i < 3 * C; i++) fin &= isfinite(out[i]) && out[i] > 0.0f && isfinite(1.0f / out[i]);
    CHECK(lo && fin && fabsf(out[0] * out[C] - 0x1p100f) <= 0x1p78f, "swin_fp8_qkv_scales: f[h] not clamped to [2^-100, 2^100] (%g)",
          (double)(out[0] * out[C]));
}

/* q, k, v in E4M3 (fp8.h swin_fp8_qkv_e4m3_block): a random V1 model of head_dim 32 in 7x7 windows
 * (every block of that geometry) and its V2 twin (none: V1 only), calibrated on random images:
 * the V1 emulation holds its own copy of each qkv site's channel scales and none for other
 * sites; the round trip moves the logits, which stay within fp8's tolerance of fp32; the V2
 * emulation makes no round trip; with the channel scales 0 the V1 one makes none either. */
static void test_qkv_e4m3(void) {
    enum { B = 2 };
    for (int version = 1; version <= 2; version++) {
        swin_config c;
        memset(&c, 0, sizeof c);
        c.version = version;
        snprintf(c.arch, sizeof c.arch, "fp8_qkv_v%d", version);
        c.img_h = c.img_w = 56, c.patch_size = 4, c.in_chans = 3, c.embed_dim = 64, c.num_stages = 2;
        c.depths[0] = c.depths[1] = 2, c.num_heads[0] = 2, c.num_heads[1] = 4;
        c.window_size = 7, c.mlp_ratio = 4.0f, c.qkv_bias = 1, c.ln_eps = 1e-5f, c.num_classes = 10;
        for (int i = 0; i < 3; i++) c.mean[i] = 0.5f, c.std[i] = 0.25f;
        swin_model *m = NULL;
        if (!CHECK(swin_model_random_config(&c, 7 + version, &m) == SWIN_OK, "random model: %s", swin_last_error()))
            continue;
        int n = swin_fp8_sites(m, NULL), count = swin_fp8_scale_count(m);
        swin_fp8_site *site = malloc(sizeof *site * (size_t)n);
        size_t nin = (size_t)B * 3 * 56 * 56, nl = (size_t)B * c.num_classes;
        float *x = malloc(nin * sizeof(float)), *scratch = malloc(swin_forward_cpu_scratch(m, B) * sizeof(float));
        float *amax = calloc((size_t)count, sizeof(float)), *scale = malloc((size_t)count * sizeof(float));
        float *l32 = malloc(nl * sizeof(float)), *lq = malloc(nl * sizeof(float)), *l8 = malloc(nl * sizeof(float));
        swin_fp8_sites(m, site);
        swin_fp8_random_images(&c, 0, B, x);
        swin_forward_cpu(l32, x, m, B, scratch);
        swin_fp8_forward rec = {amax, NULL, NULL};
        swin_forward_cpu_fp8(lq, x, m, B, scratch, NULL, &rec);
        swin_fp8_scales_from_amax(count, amax, 2.0f, scale);
        swin_fp8_forward emu;
        if (CHECK(swin_fp8_emulation_create(m, B, scale, &emu, NULL) == SWIN_OK, "emulation: %s", swin_last_error())) {
            int copies = 1, qkv = 0;
            for (int i = 0; i < n; i++) {
                const float *so = emu.sites[i].out_s;
                if (site[i].kind != SWIN_SITE_QKV || version == 2) { copies &= !so; continue; }
                qkv++;
                copies &= so && (so < scale || so >= scale + count);
                float *want = malloc((size_t)site[i].N * sizeof(float));
                swin_fp8_qkv_scales(scale + site[i].out_off, site[i].N / 3, 32, want);
                for (int j = 0; copies && j < site[i].N; j++) copies &= so[j] == want[j];
                free(want);
            }
            CHECK(copies && (version == 2 || qkv == 4), "v%d: the emulation's channel scales: %s", version,
                  version == 1 ? "its own copy for each of the 4 qkv sites, none elsewhere" : "none (V2)");
            swin_forward_cpu_fp8(lq, x, m, B, scratch, NULL, &emu);
            swin_fp8_emulation_free(&emu);
        }
        for (int i = n; i < count; i++) scale[i] = 0;
        if (CHECK(swin_fp8_emulation_create(m, B, scale, &emu, NULL) == SWIN_OK, "emulation: %s", swin_last_error())) {
            swin_forward_cpu_fp8(l8, x, m, B, scratch, NULL, &emu);
            swin_fp8_emulation_free(&emu);
        }
        double rq = rel(lq, l32, nl), r8 = rel(l8, l32, nl), d = rel(lq, l8, nl);
        printf("v%d fp8 emulation vs fp32: %.3g with the channel scales, %.3g without (apart %.3g)\n", version, rq, r8,
               d);
        CHECK(rq > 1e-4 && rq < 0.22 && r8 > 1e-4 && r8 < 0.22, "v%d: fp8 logits %.3g and %.3g from fp32 (in (1e-4, "
              "0.22))", version, rq, r8);
        if (version == 1) CHECK(d > 1e-4, "v1: E4M3 q, k, v move the logits by %.3g relative (> 1e-4)", d);
        else CHECK(d == 0, "v2: the channel scales changed the logits (%.3g): V2 keeps q, k, v", d);
        free(site), free(x), free(scratch), free(amax), free(scale), free(l32), free(lq), free(l8);
        swin_model_free(m);
    }
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    test_decode();
    test_encode();
    test_sites(src);
    test_quantize();
    test_absmax_cols();
    test_forward(src);
    test_qkv_scale();
    test_qkv_scales();
    test_qkv_e4m3();
    return tu_finish("test_fp8");
}
