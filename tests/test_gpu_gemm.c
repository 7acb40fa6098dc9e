/* test_gpu_gemm.c - swin_linear_cuda (kernels/gemm.c, cuBLASLt) against swin_linear_cpu in fp32,
 * tf32, fp16 and bf16: M in {1, 147, 6272} x the Swin-T linear shapes (qkv 96->288, fc1 96->384
 * + GELU, fc2 384->96 + residual in place, reduction 384->192 without bias), plus the patch
 * embedding, a separate residual, GELU + residual and the head.
 * fp16 / bf16 GELU layers run first on our tensor-core GEMM (kernels/gemm_mma.cu, switched on;
 * its large tiles on kernels/sm90/gemm_wgmma.cu on a compute capability 9.0 GPU, which must have it,
 * and which also runs tf32's GELU layers of large tiles there),
 * then every GELU case again without it (cuBLASLt + the GELU op, the default), and it gets
 * its own shapes: both tile sizes, partial tiles in M and N, K not a multiple of its k-tile,
 * Swin-B and stage-4 widths, no bias and no activation, and shapes it refuses; both kernels
 * (mma.sync and wgmma) are also called directly on their own shapes. On Hopper, fp16 / bf16
 * layers without GELU of enough tiles run on the persistent TMA kernel (gemm_tma.cu) when
 * SWIN_GEMM_TMA_LINEAR=1 (the _tma CTest variants), with the residual in place or separate (two
 * shapes of several tiles a team; with SWIN_GEMM_TMA_MIN_TILES=0 every such shape).
 * Tolerances relative to max|ref|: fp32 1e-5, tf32 and fp16 2e-3, bf16 1.6e-2. A probe shows that
 * fp32 is true fp32: inputs 1 + 2^-12 (lost by TF32's 10-bit mantissa) give the exact sum in fp32
 * and a different one in tf32. On Hopper an fp32 layer runs on whichever of cuBLASLt and the 3xTF32
 * kernel (sm90/gemm_x3.cu) its first call timed faster (SWIN_FP32_GEMM=sgemm: cuBLASLt only, the
 * _sgemm CTest variant); that kernel is also called directly on its own shapes (partial tiles,
 * residuals, GELU; against a double reference) and on shapes it refuses. Outputs are NaN-poisoned and guarded; argument errors checked.
 * Run: test_gpu_gemm <source dir>; SWIN_TEST_QUICK=1 drops M = 6272; SWIN_TEST_QUICK=2 runs only
 * the cases of our tensor-core GEMMs (fp16 / bf16 GELU layers fused, the layers the TMA kernel
 * takes, and its plain calls), for
 * compute-sanitizer's racecheck, which reports hazards inside cuBLAS's own kernels; exits 77
 * without a GPU.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gpu_testutil.h"
#include "internal.h"
#include "layers.h"
#include "testutil.h"

#define WS_BYTES ((size_t)32 << 20)

typedef enum { RES_NONE = 0, RES_IN_PLACE = 1, RES_SEPARATE = 2 } res_kind;

typedef struct {
    const char *what;
    int K, N;
    swin_act act;
    int bias;
    res_kind res;
} gshape;

/* the four Swin-T shapes run at every M */
static const gshape shapes[] = {
    {"qkv", 96, 288, SWIN_ACT_NONE, 1, RES_NONE},
    {"fc1+gelu", 96, 384, SWIN_ACT_GELU, 1, RES_NONE},
    {"fc2+res(in place)", 384, 96, SWIN_ACT_NONE, 1, RES_IN_PLACE},
    {"reduction(no bias)", 384, 192, SWIN_ACT_NONE, 0, RES_NONE},
};
static const int Ms[] = {1, 147, 6272};

typedef struct {
    int M;
    gshape s;
} gextra;

static const gextra extras[] = {
    {147, {"patch embed", 48, 96, SWIN_ACT_NONE, 1, RES_NONE}},
    {147, {"proj+res(separate)", 96, 96, SWIN_ACT_NONE, 1, RES_SEPARATE}},
    {147, {"fc1+gelu+res(separate)", 96, 384, SWIN_ACT_GELU, 1, RES_SEPARATE}},
    {3, {"head", 768, 1000, SWIN_ACT_NONE, 1, RES_NONE}},
    /* GELU layers for the tensor-core GEMM: large tiles (>= 132 of 128 x 128) and small ones,
     * each with k-tiles of 64 (K % 64 == 0) and of 32, partial tiles, K % 32 != 0, N % 64 != 0,
     * Swin-B / stage-4 widths; K % 8 != 0 falls back */
    {6000, {"fc1+gelu large tiles k64", 192, 768, SWIN_ACT_GELU, 1, RES_NONE}},
    {8000, {"fc1+gelu large k64 partial N", 128, 328, SWIN_ACT_GELU, 1, RES_NONE}},
    {5000, {"fc1+gelu large tiles k32", 96, 512, SWIN_ACT_GELU, 1, RES_NONE}},
    {1000, {"fc1+gelu partial tiles", 40, 72, SWIN_ACT_GELU, 1, RES_NONE}},
    {49, {"fc1+gelu stage 4", 768, 3072, SWIN_ACT_GELU, 1, RES_NONE}},
    {300, {"fc1+gelu swin-b", 128, 512, SWIN_ACT_GELU, 1, RES_NONE}},
    {77, {"fc1+gelu no bias", 56, 224, SWIN_ACT_GELU, 0, RES_NONE}},
    {50, {"fc1+gelu K%8!=0 (fallback)", 12, 48, SWIN_ACT_GELU, 1, RES_NONE}},
    /* 16-bit layers without GELU on the persistent TMA kernel (gemm_tma.cu; with
     * SWIN_GEMM_TMA_LINEAR=1, at its default threshold; with =2 where faster than cuBLASLt, so
     * either, as test_gpu_gemm_tmatuned runs it): several tiles a team, so that each
     * warpgroup's residual loads and stores take turns over several tiles */
    {30000, {"fc2+res(in place) many tiles", 192, 256, SWIN_ACT_NONE, 1, RES_IN_PLACE}},
    {30000, {"proj+res(separate) many tiles", 128, 264, SWIN_ACT_NONE, 1, RES_SEPARATE}},
};

typedef struct {
    swin_precision prec;
    int dt;        /* data dtype: 0 f32, 1 f16, 2 bf16 */
    double tol;
} gprec;

static const gprec precs[] = {
    {SWIN_FP32, 0, 1e-5}, {SWIN_TF32, 0, 2e-3}, {SWIN_FP16, 1, 2e-3}, {SWIN_BF16, 2, 1.6e-2}};

// ---- one case

/* ours_only: skip a layer without GELU unless the TMA kernel takes it (the sanitizer's run):
 * SWIN_GEMM_TMA_LINEAR=1 (kernels/gemm.c reads it the same way) and a shape it supports */
static void run_gemm(swin_gemm *g, const gprec *p, int M, const gshape *s, int ours_only) {
    int K = s->K, N = s->N;
    char name[128];
    snprintf(name, sizeof name, "%s %s M%d K%d N%d", s->what, swin_precision_str(p->prec), M, K, N);
    size_t nin = (size_t)M * K, nw = (size_t)N * K, nout = (size_t)M * N;
    float *in = malloc(nin * sizeof(float)), *w = malloc(nw * sizeof(float)), *bias = malloc(N * sizeof(float));
    float *res = malloc(nout * sizeof(float)), *ref = malloc(nout * sizeof(float)), *got = malloc(nout * sizeof(float));
    tu_fill(in, nin, -1.0f, 1.0f);
    tu_fill(w, nw, -0.5f, 0.5f);
    tu_fill(bias, N, -1.0f, 1.0f);
    tu_fill(res, nout, -2.0f, 2.0f);
    tu_round_to(in, nin, p->dt), tu_round_to(w, nw, p->dt), tu_round_to(bias, N, p->dt), tu_round_to(res, nout, p->dt);
    swin_linear_w lw = {w, s->bias ? bias : NULL};
    swin_linear_cpu(ref, in, &lw, s->res ? res : NULL, M, K, N, s->act);

    tg_buf din = tg_alloc(nin, p->dt), dw = tg_alloc(nw, p->dt), db = tg_alloc(N, p->dt);
    tg_buf dout = tg_alloc(nout, p->dt), dres = tg_alloc(s->res == RES_SEPARATE ? nout : 1, p->dt);
    tg_upload(&din, in), tg_upload(&dw, w), tg_upload(&db, bias);
    const void *residual = NULL;
    if (s->res == RES_IN_PLACE) tg_upload(&dout, res), residual = dout.p;
    else tg_poison(&dout);
    if (s->res == RES_SEPARATE) tg_upload(&dres, res), residual = dres.p;
    if (ours_only && s->act == SWIN_ACT_NONE &&
        (!swin_env_on("SWIN_GEMM_TMA_LINEAR", 0) ||
         !swin_gemm_wgmma_linear_supports((swin_dtype)p->dt, M, K, N, dout.p, din.p, dw.p, db.p, residual)))
        goto done;
    swin_status st = swin_linear_cuda(dout.p, din.p, dw.p, s->bias ? db.p : NULL, residual, M, K, N, s->act, g, 0);
    int ok = CHECK(st == SWIN_OK, "%s: status %s: %s", name, swin_status_str(st), swin_last_error());
    ok = ok && CHECK(tg_sync_ok(name), "%s: CUDA error after the GEMM", name);
    if (ok) {
        tg_download(&dout, got);
        tg_compare(name, got, ref, nout, p->tol);
        CHECK(tg_guard_ok(&dout) && tg_guard_ok(&dres), "%s: guard zone overwritten", name);
    }
done:
    tg_free(&din), tg_free(&dw), tg_free(&db), tg_free(&dout), tg_free(&dres);
    free(in), free(w), free(bias), free(res), free(ref), free(got);
}

/* out [4, 8] = in [4, 96] (all 1 + 2^-12) @ w^T (all 1): fp32 must give exactly 96 (1 + 2^-12),
 * TF32 rounds the inputs to 1 and gives 96. Returns the first output value. */
static float tf32_probe(swin_gemm *g) {
    enum { M = 4, K = 96, N = 8 };
    float in[M * K], w[N * K], out[M * N];
    for (int i = 0; i < M * K; i++) in[i] = 1.0f + ldexpf(1.0f, -12);
    for (int i = 0; i < N * K; i++) w[i] = 1.0f;
    tg_buf din = tg_alloc(M * K, 0), dw = tg_alloc(N * K, 0), dout = tg_alloc(M * N, 0);
    tg_upload(&din, in), tg_upload(&dw, w), tg_poison(&dout);
    swin_status st = swin_gemm_prepare(g, M, K, N, SWIN_ACT_NONE, 0, 0);
    CHECK(st == SWIN_OK, "swin_gemm_prepare: %s", swin_last_error());
    st = swin_linear_cuda(dout.p, din.p, dw.p, NULL, NULL, M, K, N, SWIN_ACT_NONE, g, 0);
    CHECK(st == SWIN_OK && tg_sync_ok("tf32 probe"), "tf32 probe: %s", swin_last_error());
    tg_download(&dout, out);
    for (int i = 1; i < M * N; i++)
        CHECK(out[i] == out[0], "tf32 probe: output %d is %.9g, output 0 is %.9g", i, out[i], out[0]);
    tg_free(&din), tg_free(&dw), tg_free(&dout);
    return out[0];
}

/* our tensor-core GEMMs directly (swin_gemm_mma_cuda, or swin_gemm_wgmma_cuda when wgmma), against
 * the CPU linear layer: any tile size either picks, with or without bias and GELU */
static void run_direct(const gprec *p, int M, int K, int N, int bias_on, swin_act act, int wgmma) {
    char name[128];
    snprintf(name, sizeof name, "%s %s%s %s M%d K%d N%d", wgmma ? "wgmma" : "mma", act == SWIN_ACT_GELU ? "gelu" : "plain",
             bias_on ? "+bias" : "", swin_precision_str(p->prec), M, K, N);
    size_t nin = (size_t)M * K, nw = (size_t)N * K, nout = (size_t)M * N;
    float *in = malloc(nin * sizeof(float)), *w = malloc(nw * sizeof(float)), *bias = malloc(N * sizeof(float));
    float *ref = malloc(nout * sizeof(float)), *got = malloc(nout * sizeof(float));
    tu_fill(in, nin, -1.0f, 1.0f), tu_fill(w, nw, -0.5f, 0.5f), tu_fill(bias, N, -1.0f, 1.0f);
    tu_round_to(in, nin, p->dt), tu_round_to(w, nw, p->dt), tu_round_to(bias, N, p->dt);
    swin_linear_w lw = {w, bias_on ? bias : NULL};
    swin_linear_cpu(ref, in, &lw, NULL, M, K, N, act);
    tg_buf din = tg_alloc(nin, p->dt), dw = tg_alloc(nw, p->dt), db = tg_alloc(N, p->dt), dout = tg_alloc(nout, p->dt);
    tg_upload(&din, in), tg_upload(&dw, w), tg_upload(&db, bias), tg_poison(&dout);
    swin_status st = (wgmma ? swin_gemm_wgmma_cuda : swin_gemm_mma_cuda)(dout.p, din.p, dw.p, bias_on ? db.p : NULL, M,
                                                                        K, N, act, (swin_dtype)p->dt, 0);
    if (CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error()) && CHECK(tg_sync_ok(name), "%s: CUDA error", name)) {
        tg_download(&dout, got);
        tg_compare(name, got, ref, nout, p->tol);
        CHECK(tg_guard_ok(&dout), "%s: guard zone overwritten", name);
    }
    tg_free(&din), tg_free(&dw), tg_free(&db), tg_free(&dout);
    free(in), free(w), free(bias), free(ref), free(got);
}

/* the wgmma kernels' own cases (one 128 x 128 tile shape, k-tiles of 64): partial tiles in M and
 * N, K below, between and at multiples of 64, Swin-T's fc1 widths, stage 4, no bias */
static void wgmma_cases(const gprec *p, int quick) {
    static const struct { int M, K, N, bias; swin_act act; } c[] = {
        {147, 96, 288, 1, SWIN_ACT_NONE}, {1000, 40, 72, 1, SWIN_ACT_GELU},   {300, 96, 384, 1, SWIN_ACT_GELU},
        {8000, 128, 328, 1, SWIN_ACT_GELU}, {5000, 384, 192, 0, SWIN_ACT_NONE}, {49, 768, 3072, 1, SWIN_ACT_GELU},
        {77, 56, 224, 0, SWIN_ACT_GELU},    {6272, 192, 768, 1, SWIN_ACT_GELU}, {6272, 96, 384, 1, SWIN_ACT_GELU},
        /* the persistent TMA kernel (gemm_tma.cu): several tiles a CTA and more k-tiles than its
         * ring has slots (Swin-B 384's stage-3 fc1 shape), a long K without bias, many short tiles */
        {4100, 512, 2048, 1, SWIN_ACT_GELU}, {2000, 1024, 512, 0, SWIN_ACT_NONE}, {20000, 96, 384, 1, SWIN_ACT_GELU},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (!(quick && c[i].M > 5000)) run_direct(p, c[i].M, c[i].K, c[i].N, c[i].bias, c[i].act, 1);
}

/* the fp32 3xTF32 kernel (sm90/gemm_x3.cu) directly: out = act(in @ w^T + bias) (+ res) against
 * a reference summed in double, fp32's tolerance; returns the largest error relative to max|ref| */
static double run_x3(int M, int K, int N, int bias_on, swin_act act, res_kind rk) {
    char name[128];
    snprintf(name, sizeof name, "x3 %s%s%s M%d K%d N%d", act == SWIN_ACT_GELU ? "gelu" : "plain", bias_on ? "+bias" : "",
             rk == RES_IN_PLACE ? "+res(in place)" : rk == RES_SEPARATE ? "+res" : "", M, K, N);
    size_t nin = (size_t)M * K, nw = (size_t)N * K, nout = (size_t)M * N;
    float *in = malloc(nin * sizeof(float)), *w = malloc(nw * sizeof(float)), *bias = malloc(N * sizeof(float));
    float *res = malloc(nout * sizeof(float)), *ref = malloc(nout * sizeof(float)), *got = malloc(nout * sizeof(float));
    tu_fill(in, nin, -1.0f, 1.0f), tu_fill(w, nw, -0.5f, 0.5f), tu_fill(bias, N, -1.0f, 1.0f), tu_fill(res, nout, -2.0f, 2.0f);
    for (int m = 0; m < M; m++)   /* the reference in double: the CPU layer's fp32 sums err by 1e-6 */
        for (int n = 0; n < N; n++) {
            double acc = bias_on ? bias[n] : 0.0;
            for (int k = 0; k < K; k++) acc += (double)in[(size_t)m * K + k] * w[(size_t)n * K + k];
            if (act == SWIN_ACT_GELU) acc = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
            ref[(size_t)m * N + n] = (float)(acc + (rk ? res[(size_t)m * N + n] : 0.0));
        }
    tg_buf din = tg_alloc(nin, 0), dw = tg_alloc(nw, 0), db = tg_alloc(N, 0), dout = tg_alloc(nout, 0);
    tg_buf dres = tg_alloc(rk == RES_SEPARATE ? nout : 1, 0);
    tg_upload(&din, in), tg_upload(&dw, w), tg_upload(&db, bias);
    const float *r = NULL;
    if (rk == RES_IN_PLACE) tg_upload(&dout, res), r = dout.p;
    else tg_poison(&dout);
    if (rk == RES_SEPARATE) tg_upload(&dres, res), r = dres.p;
    double err = -1;
    swin_status st = swin_gemm_x3_cuda(dout.p, din.p, dw.p, bias_on ? db.p : NULL, r, M, K, N, act, 0);
    if (CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error()) && CHECK(tg_sync_ok(name), "%s: CUDA error", name)) {
        tg_download(&dout, got);
        tg_compare(name, got, ref, nout, 1e-5);
        CHECK(tg_guard_ok(&dout) && tg_guard_ok(&dres), "%s: guard zone overwritten", name);
        double mx = 0;
        err = 0;
        for (size_t i = 0; i < nout; i++) {
            mx = fmax(mx, fabs(ref[i]));
            err = fmax(err, fabs((double)got[i] - ref[i]));
        }
        err = mx > 0 ? err / mx : err;
    }
    tg_free(&din), tg_free(&dw), tg_free(&db), tg_free(&dout), tg_free(&dres);
    free(in), free(w), free(bias), free(res), free(ref), free(got);
    return err;
}

/* its shapes: partial tiles in M and N, K below, between and at multiples of its 32-value k-tile,
 * Swin-T's widths, GELU, the residual in place and separate, no bias; the shapes it refuses. A
 * TF32 GEMM misses fp32's tolerance by far (the probe in main); this kernel must meet it. */
static void x3_cases(int quick) {
    static const struct { int M, K, N, bias; swin_act act; res_kind rk; } c[] = {
        {1, 96, 288, 1, SWIN_ACT_NONE, RES_NONE},       {147, 96, 384, 1, SWIN_ACT_GELU, RES_NONE},
        {300, 44, 70, 0, SWIN_ACT_NONE, RES_SEPARATE},  {333, 384, 96, 1, SWIN_ACT_NONE, RES_IN_PLACE},
        {129, 36, 130, 1, SWIN_ACT_GELU, RES_NONE},     {49, 768, 1000, 1, SWIN_ACT_NONE, RES_NONE},
        {6272, 96, 384, 1, SWIN_ACT_GELU, RES_NONE},    {6272, 1536, 384, 1, SWIN_ACT_NONE, RES_IN_PLACE},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (!(quick && c[i].M > 5000)) worst = fmax(worst, run_x3(c[i].M, c[i].K, c[i].N, c[i].bias, c[i].act, c[i].rk));
    printf("x3 (3xTF32) kernel: largest error %.3g of max|ref| (fp32 tolerance 1e-5)\n", worst);
    tg_buf a = tg_alloc(4096, 0), b = tg_alloc(4096, 0), o = tg_alloc(4096, 0);
    static const struct { const char *what; int K, N, res, act, off; } bad[] = {
        {"K not a multiple of 4", 6, 8, 0, 0, 0}, {"N odd", 8, 7, 0, 0, 0}, {"GELU with a residual", 8, 8, 1, 1, 0},
        {"in not 16-byte aligned", 8, 8, 0, 0, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        swin_status st = swin_gemm_x3_cuda(o.p, (const float *)a.p + bad[i].off, b.p, NULL, bad[i].res ? o.p : NULL, 4,
                                           bad[i].K, bad[i].N, bad[i].act ? SWIN_ACT_GELU : SWIN_ACT_NONE, 0);
        printf("%s x3 refuses %s: %s\n", st == SWIN_ERR_UNSUPPORTED ? "ok  " : "FAIL", bad[i].what, swin_last_error());
        CHECK(st == SWIN_ERR_UNSUPPORTED, "x3 with %s: %s, expected unsupported", bad[i].what, swin_status_str(st));
    }
    tg_free(&a), tg_free(&b), tg_free(&o);
}

// ---- argument checking

static void expect_arg_error(const char *what, swin_status st) {
    int ok = st == SWIN_ERR_ARGUMENT && swin_last_error()[0];
    printf("%s argument check: %-32s -> %s\n", ok ? "ok  " : "FAIL", what, swin_last_error());
    CHECK(ok, "%s: expected an argument error, got %s", what, swin_status_str(st));
}

static void argument_checks(swin_gemm *g16) {
    tg_buf a = tg_alloc(4096, 1), b = tg_alloc(4096, 1), c = tg_alloc(4096, 1);
    expect_arg_error("gemm NULL", swin_linear_cuda(c.p, a.p, b.p, NULL, NULL, 4, 8, 8, SWIN_ACT_NONE, NULL, 0));
    expect_arg_error("M 0", swin_linear_cuda(c.p, a.p, b.p, NULL, NULL, 0, 8, 8, SWIN_ACT_NONE, g16, 0));
    expect_arg_error("w NULL", swin_linear_cuda(c.p, a.p, NULL, NULL, NULL, 4, 8, 8, SWIN_ACT_NONE, g16, 0));
    expect_arg_error("in aliases out", swin_linear_cuda(c.p, c.p, b.p, NULL, NULL, 4, 8, 8, SWIN_ACT_NONE, g16, 0));
    expect_arg_error("GELU + residual in place", swin_linear_cuda(c.p, a.p, b.p, NULL, c.p, 4, 8, 8, SWIN_ACT_GELU, g16, 0));
    expect_arg_error("misaligned bias", swin_linear_cuda(c.p, a.p, b.p, (char *)b.p + 1, NULL, 4, 8, 8, SWIN_ACT_NONE, g16, 0));
    expect_arg_error("unknown activation", swin_linear_cuda(c.p, a.p, b.p, NULL, NULL, 4, 8, 8, (swin_act)5, g16, 0));
    expect_arg_error("mma: out NULL", swin_gemm_mma_cuda(NULL, a.p, b.p, NULL, 4, 8, 8, SWIN_ACT_NONE, SWIN_DT_F16, 0));
    expect_arg_error("mma: out aliases in", swin_gemm_mma_cuda(a.p, a.p, b.p, NULL, 4, 8, 8, SWIN_ACT_NONE, SWIN_DT_F16, 0));
    swin_status st = swin_gemm_mma_cuda(c.p, a.p, b.p, NULL, 4, 12, 8, SWIN_ACT_GELU, SWIN_DT_F16, 0);
    printf("%s mma refuses K 12: %s\n", st == SWIN_ERR_UNSUPPORTED ? "ok  " : "FAIL", swin_last_error());
    CHECK(st == SWIN_ERR_UNSUPPORTED, "mma with K 12: %s, expected unsupported", swin_status_str(st));
    st = swin_gemm_mma_cuda(c.p, a.p, b.p, NULL, 4, 8, 8, SWIN_ACT_GELU, SWIN_DT_F32, 0);
    CHECK(st == SWIN_ERR_UNSUPPORTED, "mma in fp32: %s, expected unsupported", swin_status_str(st));
    st = swin_gemm_mma_cuda((char *)c.p + 4, a.p, b.p, NULL, 4, 8, 8, SWIN_ACT_GELU, SWIN_DT_F16, 0);
    CHECK(st == SWIN_ERR_UNSUPPORTED, "mma with out not 16-byte aligned: %s, expected unsupported", swin_status_str(st));
    st = swin_gemm_wgmma_linear_cuda(c.p, a.p, b.p, NULL, a.p, 4, 8, 8, SWIN_DT_F16, 0);   /* residual = in */
    CHECK(st == SWIN_ERR_UNSUPPORTED, "TMA linear with the residual = in: %s, expected unsupported", swin_status_str(st));
    st = swin_gemm_wgmma_linear_cuda(c.p, a.p, b.p, NULL, NULL, 4, 12, 8, SWIN_DT_F32, 0);
    CHECK(st == SWIN_ERR_UNSUPPORTED, "TMA linear with K 12: %s, expected unsupported", swin_status_str(st));
    swin_gemm *bad = NULL;
    expect_arg_error("create with NULL out", swin_gemm_create(NULL, SWIN_FP32, NULL, 0));
    expect_arg_error("create bad precision", swin_gemm_create(&bad, (swin_precision)9, NULL, 0));
    /* SWIN_GEMM_CANDIDATES outside 1..32 or not a number: refused at create (the caller's value
     * restored after) */
    const char *had = getenv("SWIN_GEMM_CANDIDATES");
    char *saved = had ? strdup(had) : NULL;
    static const char *bad_counts[] = {"0", "33", "8x", "many"};
    for (int i = 0; i < 4; i++) {
        setenv("SWIN_GEMM_CANDIDATES", bad_counts[i], 1);
        expect_arg_error("create with a bad SWIN_GEMM_CANDIDATES", swin_gemm_create(&bad, SWIN_FP16, NULL, 0));
        CHECK(strstr(swin_last_error(), "SWIN_GEMM_CANDIDATES") != NULL, "the error names the variable: %s",
              swin_last_error());
    }
    if (saved) setenv("SWIN_GEMM_CANDIDATES", saved, 1);
    else unsetenv("SWIN_GEMM_CANDIDATES");
    free(saved);
    tg_free(&a), tg_free(&b), tg_free(&c);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    if (!tg_have_gpu("test_gpu_gemm")) return TU_SKIP;
    const char *qv = getenv("SWIN_TEST_QUICK");
    int quick = tg_quick(), mma_only = qv && !strcmp(qv, "2");
    if (mma_only) quick = 1;
    tu_seed(777);
    void *ws = NULL;
    if (cudaMalloc(&ws, WS_BYTES) != cudaSuccess) { fprintf(stderr, "cannot allocate the workspace\n"); return 1; }
    float probe[2] = {0, 0};
    /* on a compute capability 9.0 GPU the wgmma kernel must be there: a build without it would
     * leave the large fused tiles on mma.sync and its cases unrun */
    int dev = 0, major = 0, minor = 0, wgmma = swin_gemm_wgmma_available();
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    printf("wgmma GEMM: %s (compute capability %d.%d)\n", wgmma ? "available" : "not available", major, minor);
    CHECK(wgmma == (major == 9 && minor == 0), "wgmma available %d on compute capability %d.%d", wgmma, major, minor);
    if (!wgmma) {
        tg_buf a = tg_alloc(4096, 1), b = tg_alloc(4096, 1), c = tg_alloc(4096, 1);
        swin_status st = swin_gemm_wgmma_cuda(c.p, a.p, b.p, NULL, 8, 8, 8, SWIN_ACT_NONE, SWIN_DT_F16, 0);
        CHECK(st == SWIN_ERR_UNSUPPORTED, "wgmma without the hardware: %s, expected unsupported", swin_status_str(st));
        tg_free(&a), tg_free(&b), tg_free(&c);
    }
    for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++) {
        const gprec *p = &precs[pi];
        if (mma_only && p->dt == 0) continue;
        swin_gemm *g = NULL;
        swin_status st = swin_gemm_create(&g, p->prec, ws, WS_BYTES);
        if (!CHECK(st == SWIN_OK, "swin_gemm_create(%s): %s", swin_precision_str(p->prec), swin_last_error())) continue;
        swin_gemm_set_fused_gelu(g, 1);   /* fp32: no effect; tf32: wgmma's large tiles (Hopper) */
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            if (quick && Ms[mi] > 1000) continue;
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
                run_gemm(g, p, Ms[mi], &shapes[si], mma_only);
        }
        for (size_t ei = 0; ei < sizeof extras / sizeof extras[0]; ei++) {
            const gshape *s = &extras[ei].s;
            /* mma only: the GELU layers that reach the tensor-core GEMM (no residual, K % 8 == 0),
             * and (run_gemm decides) the layers without GELU that the TMA kernel takes */
            if (!mma_only || s->act == SWIN_ACT_NONE || (s->res == RES_NONE && s->K % 8 == 0))
                run_gemm(g, p, extras[ei].M, s, mma_only);
        }
        if (mma_only) {
            run_direct(p, 147, 96, 288, 1, SWIN_ACT_NONE, 0);
            if (wgmma) wgmma_cases(p, 1);
        } else if (p->dt != 0) {   /* the GELU layers again through cuBLASLt + the GELU op; the mma GEMM alone */
            swin_gemm_set_fused_gelu(g, 0);
            printf("-- %s GELU layers unfused\n", swin_precision_str(p->prec));
            for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
                if (!(quick && Ms[mi] > 1000)) run_gemm(g, p, Ms[mi], &shapes[1], 0);
            for (size_t ei = 0; ei < sizeof extras / sizeof extras[0]; ei++)
                if (extras[ei].s.act == SWIN_ACT_GELU) run_gemm(g, p, extras[ei].M, &extras[ei].s, 0);
            run_direct(p, 147, 96, 288, 1, SWIN_ACT_NONE, 0);
            run_direct(p, 5000, 384, 192, 0, SWIN_ACT_NONE, 0);
            run_direct(p, 6000, 192, 768, 1, SWIN_ACT_GELU, 0);   /* mma.sync large tiles, also on Hopper */
            if (wgmma) wgmma_cases(p, quick);
        }
        if (p->prec == SWIN_TF32 && wgmma && !mma_only) wgmma_cases(p, quick);   /* TF32 on wgmma (dt f32) */
        if (p->prec == SWIN_FP32 || p->prec == SWIN_TF32) probe[p->prec == SWIN_TF32] = tf32_probe(g);
        if (p->prec == SWIN_FP16) argument_checks(g);
        swin_gemm_free(g);
    }
    if (wgmma) x3_cases(quick);
    else
        CHECK(swin_gemm_x3_cuda(NULL, NULL, NULL, NULL, NULL, 4, 8, 8, SWIN_ACT_NONE, 0) == SWIN_ERR_UNSUPPORTED,
              "x3 without wgmma: expected unsupported");
    if (mma_only) {
        cudaFree(ws);
        return tu_finish("test_gpu_gemm");
    }
    const float exact = 96.0f * (1.0f + ldexpf(1.0f, -12));
    printf("tf32 probe: fp32 %.9g (exact %.9g), tf32 %.9g\n", probe[0], exact, probe[1]);
    CHECK(probe[0] == exact, "fp32 GEMM is not exact fp32: %.9g, expected %.9g", probe[0], exact);
    CHECK(fabsf(probe[1] - exact) > 0.01f, "tf32 GEMM gave %.9g: TF32 rounding does not show", probe[1]);
    cudaFree(ws);
    return tu_finish("test_gpu_gemm");
}
