/* test_fp8.c - the FP8 arithmetic of src/fp8.h on the CPU: E4M3 conversion, the sites of a model,
 * weight quantisation, the emulated GEMM and the forward's sites.
 *
 *   - decoding: every code against anchors from the OCP FP8 spec and the structure of E4M3
 *     (strictly increasing, each value a 4-bit significand times a power of two);
 *   - encoding: every code's value round-trips; 300,000 random floats of every magnitude and
 *     every midpoint between neighbours (and one float either side) against a brute-force search
 *     for the nearest E4M3 value, ties to the even code, saturation to +-448; NaN, +-inf, +-0;
 *   - sites of the digits model (weights/digits): count, order, names, shapes, weight pointers;
 *     of a transformers fixture: timm's names whatever the checkpoint's layout;
 *   - per-channel weight quantisation on hand-made rows; swin_linear_fp8_cpu against the formula;
 *   - the forward: site 0's recorded amax against LayerNorm of the patch embedding computed apart,
 *     every site recorded; the emulated logits near fp32 but not equal, and moved by one scale.
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
    swin_fp8_linear_w f = {wq, wsc, b, 3.0f * 2 / 448};
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
}

// ---- the forward's sites

static double rel(const float *a, const float *b, size_t n) { return tu_max_abs_diff(a, b, n) / tu_max_abs(b, n); }

static void test_forward(const char *src) {
    swin_model *m = load(src, "weights/digits");
    if (!m) return;
    enum { B = 4 };
    const swin_config *c = &m->cfg;
    int n = swin_fp8_sites(m, NULL), L = m->w.stages[0].res_h * m->w.stages[0].res_w, C = c->embed_dim;
    size_t nin = (size_t)B * 3 * c->img_h * c->img_w, nl = (size_t)B * c->num_classes;
    float *x = malloc(nin * sizeof(float)), *scratch = malloc(swin_forward_cpu_scratch(m, B) * sizeof(float));
    float *amax = calloc((size_t)n, sizeof(float)), *scale = malloc((size_t)n * sizeof(float));
    float *l32 = malloc(nl * sizeof(float)), *l8 = malloc(nl * sizeof(float)), *lp = malloc(nl * sizeof(float));
    float *cols = malloc((size_t)B * L * 3 * c->patch_size * c->patch_size * sizeof(float));
    float *tok = malloc((size_t)B * L * C * sizeof(float));
    if (!CHECK(x && scratch && amax && scale && l32 && l8 && lp && cols && tok, "allocation")) goto done;
    swin_fp8_random_images(c, 0, B, x);
    swin_forward_cpu(l32, x, m, B, scratch);
    swin_fp8_forward rec = {amax, NULL, NULL};
    swin_forward_cpu_fp8(l8, x, m, B, scratch, NULL, &rec);
    CHECK(memcmp(l8, l32, nl * sizeof(float)) == 0, "recording leaves the fp32 logits as they are");
    /* site 0 (layers.0.blocks.0.attn.qkv) sees LN1(LN(patch_embed(x))) */
    swin_im2col_patch_cpu(cols, x, B, c->img_h, c->img_w, c->patch_size, m->w.stages[0].res_h, m->w.stages[0].res_w);
    swin_linear_cpu(tok, cols, &m->w.patch_embed, NULL, B * L, 3 * c->patch_size * c->patch_size, C, SWIN_ACT_NONE);
    swin_layernorm_cpu(tok, tok, &m->w.patch_norm, B * L, C, c->ln_eps);
    swin_layernorm_cpu(tok, tok, &m->w.stages[0].blocks[0].norm1, B * L, C, c->ln_eps);
    float want = swin_absmax_cpu(tok, (size_t)B * L * C);
    CHECK(amax[0] == want, "site 0 amax %g, LN1 of the patch embedding computed apart %g", (double)amax[0], (double)want);
    int all = 1;
    for (int i = 0; i < n; i++) all &= isfinite(amax[i]) && amax[i] > 0;
    CHECK(all, "every site recorded a finite amax > 0");

    swin_fp8_scales_from_amax(n, amax, 2.0f, scale);
    swin_fp8_forward emu;
    if (!CHECK(swin_fp8_emulation_create(m, B, scale, &emu, NULL) == SWIN_OK, "emulation: %s", swin_last_error()))
        goto done;
    swin_forward_cpu_fp8(l8, x, m, B, scratch, NULL, &emu);
    double r = rel(l8, l32, nl);
    CHECK(r > 1e-4 && r < 0.22, "fp8 logits %.3g from fp32 relative: emulated (> 1e-4), close (< 0.22)", r);
    swin_fp8_emulation_free(&emu);
    scale[n - 1] /= 64;   /* the last fc2's inputs saturate */
    if (CHECK(swin_fp8_emulation_create(m, B, scale, &emu, NULL) == SWIN_OK, "emulation: %s", swin_last_error())) {
        swin_forward_cpu_fp8(lp, x, m, B, scratch, NULL, &emu);
        double rp = rel(lp, l8, nl);
        CHECK(rp > 1e-2, "the last site's scale / 64 moves the logits by %.3g relative (> 1e-2)", rp);
        swin_fp8_emulation_free(&emu);
    }
done:
    free(x), free(scratch), free(amax), free(scale), free(l32), free(l8), free(lp), free(cols), free(tok);
    swin_model_free(m);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    test_decode();
    test_encode();
    test_sites(src);
    test_quantize();
    test_forward(src);
    return tu_finish("test_fp8");
}
