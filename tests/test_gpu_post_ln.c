/* test_gpu_post_ln.c - V2's res-post-norm in the epilogue of the GEMM before it (kernels/gemm.h,
 * Hopper): swin_gemm_wgmma_post_ln_cuda, x += LN(in @ w^T + bias), against the CPU layers it
 * replaces: swin_linear_cpu, its output rounded to the data type (what the two-op path stores),
 * then swin_layernorm_residual_cpu, rounded once. Shapes: V2-T's and V2-B's first-stage fc2 (K 384
 * and 512, N 96 and 128), K 96 (a last k-tile of one half), small N (8, 24), M not a multiple of
 * the 128-row tile, and more tiles than two a CTA (the persistent CTAs take several); fp16 and
 * bf16. The FP8 form (swin_gemm_wgmma_post_ln_fp8_cuda: E4M3 operands, a scale per output column,
 * fp16 bias and x) on the same shapes (K 48 for the last k-tile's half, where 16 bits take K 96)
 * against the products of the E4M3 values summed in double, scaled, + bias, rounded to fp16, then
 * the same LayerNorm + residual. x starts as random data about 1 (never zeros): a row the kernel skipped keeps its old
 * value, which the reference moves by LN's O(1) output, so it fails; guard zones after x.
 * Tolerances relative to max|ref|: fp16 2e-3, bf16 1.6e-2 (gpu_testutil.h). Argument refusals,
 * and on a GPU without wgmma or TMA the refusal only.
 * Run: test_gpu_post_ln <source dir>; SWIN_TEST_QUICK=1 drops the large case; exits 77 without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fp8.h"
#include "gemm.h"
#include "gpu_testutil.h"
#include "layers.h"
#include "testutil.h"

typedef struct {
    int M, K, N, big;
} pcase;

static const pcase cases[] = {
    {3000, 384, 96, 0},    /* V2-T stage 1 fc2, a partial last row tile */
    {1100, 512, 128, 0},   /* V2-B stage 1 fc2 */
    {700, 96, 96, 0},      /* K 96: the last k-tile's first half only (16 bits) */
    {333, 40, 24, 0},      /* small N: one 64-column box, the rest of the tile past N */
    {129, 64, 8, 0},       /* N 8: the fewest columns a tensor map row allows */
    {70000, 384, 96, 1},   /* 547 row tiles: several a CTA */
};

static void run_case(const pcase *k, int dt) {
    const int M = k->M, K = k->K, N = k->N;
    const float eps = 1e-5f;
    char name[120];
    snprintf(name, sizeof name, "%s M%d K%d N%d", tg_dt_name[dt], M, K, N);
    size_t nx = (size_t)M * N, nin = (size_t)M * K, nw = (size_t)N * K;
    float *x = malloc(nx * 4), *in = malloc(nin * 4), *w = malloc(nw * 4), *b = malloc(N * 4);
    float *g = malloc(N * 4), *be = malloc(N * 4), *y = malloc(nx * 4), *ref = malloc(nx * 4), *got = malloc(nx * 4);
    tu_fill(x, nx, -1.0f, 3.0f), tu_fill(in, nin, -1.0f, 1.0f), tu_fill(w, nw, -0.2f, 0.2f);
    tu_fill(b, N, -0.5f, 0.5f), tu_fill(g, N, 0.5f, 1.5f), tu_fill(be, N, -0.5f, 0.5f);
    tu_round_to(x, nx, dt), tu_round_to(in, nin, dt), tu_round_to(w, nw, dt), tu_round_to(b, N, dt);

    swin_linear_w lw = {w, b};
    swin_ln_w ln = {g, be};
    swin_linear_cpu(y, in, &lw, NULL, M, K, N, SWIN_ACT_NONE);
    tu_round_to(y, nx, dt);   /* the GEMM's output as the two-op path stores it */
    memcpy(ref, x, nx * 4);
    swin_layernorm_residual_cpu(ref, y, &ln, M, N, eps);
    tu_round_to(ref, nx, dt);

    tg_buf dx = tg_alloc(nx, dt), din = tg_alloc(nin, dt), dw = tg_alloc(nw, dt), db = tg_alloc(N, dt);
    tg_buf dg = tg_alloc(N, 0), dbe = tg_alloc(N, 0);
    tg_upload(&dx, x), tg_upload(&din, in), tg_upload(&dw, w), tg_upload(&db, b), tg_upload(&dg, g);
    tg_upload(&dbe, be);
    swin_status st = swin_gemm_wgmma_post_ln_cuda(dx.p, din.p, dw.p, db.p, dg.p, dbe.p, eps, M, K, N, (swin_dtype)dt, 0);
    if (CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error()) && CHECK(tg_sync_ok(name), "%s: CUDA error", name)) {
        tg_download(&dx, got);
        tg_compare(name, got, ref, nx, tg_tol[dt]);
        CHECK(tg_guard_ok(&dx), "%s: guard zone after x overwritten", name);
    }
    tg_buf *all[] = {&dx, &din, &dw, &db, &dg, &dbe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
    free(x), free(in), free(w), free(b), free(g), free(be), free(y), free(ref), free(got);
}

/* E4M3 bytes of n random values in [-lo, hi] (1 / 4 of them scaled down by 64: small magnitudes
 * and subnormals too), and their values */
static void fill_e4m3(uint8_t *q, float *v, size_t n, float lo, float hi) {
    float *t = malloc(n * 4);
    tu_fill(t, n, lo, hi);
    for (size_t i = 0; i < n; i++) {
        q[i] = swin_e4m3_from_float(i % 4 == 3 ? t[i] / 64.0f : t[i]);
        v[i] = swin_e4m3_to_float(q[i]);
    }
    free(t);
}

static uint8_t *dev_bytes(const uint8_t *h, size_t n) {
    void *p = NULL;
    if (cudaMalloc(&p, n) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc of %zu bytes failed\n", n);
        exit(1);
    }
    cudaMemcpy(p, h, n, cudaMemcpyHostToDevice);
    return p;
}

static void run_case_fp8(const pcase *k) {
    const int M = k->M, K = k->K == 96 ? 48 : k->K, N = k->N;
    const float eps = 1e-5f;
    char name[120];
    snprintf(name, sizeof name, "fp8 M%d K%d N%d", M, K, N);
    size_t nx = (size_t)M * N, nin = (size_t)M * K, nw = (size_t)N * K;
    uint8_t *aq = malloc(nin), *wq = malloc(nw);
    float *a = malloc(nin * 4), *w = malloc(nw * 4), *x = malloc(nx * 4), *cs = malloc(N * 4), *b = malloc(N * 4);
    float *g = malloc(N * 4), *be = malloc(N * 4), *y = malloc(nx * 4), *ref = malloc(nx * 4), *got = malloc(nx * 4);
    fill_e4m3(aq, a, nin, -2.0f, 2.0f), fill_e4m3(wq, w, nw, -1.0f, 1.0f);
    tu_fill(x, nx, -1.0f, 3.0f), tu_fill(cs, N, 0.5f / (float)K, 2.0f / (float)K), tu_fill(b, N, -0.5f, 0.5f);
    tu_fill(g, N, 0.5f, 1.5f), tu_fill(be, N, -0.5f, 0.5f);
    tu_round_to(x, nx, 1), tu_round_to(b, N, 1);
    for (int m = 0; m < M; m++)   /* the GEMM's output as the FP8 GEMM stores it: fp16 */
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int kk = 0; kk < K; kk++) acc += (double)a[(size_t)m * K + kk] * w[(size_t)n * K + kk];
            y[(size_t)m * N + n] = (float)(acc * cs[n] + b[n]);
        }
    tu_round_to(y, nx, 1);
    swin_ln_w ln = {g, be};
    memcpy(ref, x, nx * 4);
    swin_layernorm_residual_cpu(ref, y, &ln, M, N, eps);
    tu_round_to(ref, nx, 1);

    uint8_t *da = dev_bytes(aq, nin), *dw = dev_bytes(wq, nw);
    tg_buf dx = tg_alloc(nx, 1), dcs = tg_alloc(N, 0), db = tg_alloc(N, 1), dg = tg_alloc(N, 0), dbe = tg_alloc(N, 0);
    tg_upload(&dx, x), tg_upload(&dcs, cs), tg_upload(&db, b), tg_upload(&dg, g), tg_upload(&dbe, be);
    swin_status st = swin_gemm_wgmma_post_ln_fp8_cuda(dx.p, da, dw, dcs.p, db.p, dg.p, dbe.p, eps, M, K, N, 0);
    if (CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error()) && CHECK(tg_sync_ok(name), "%s: CUDA error", name)) {
        tg_download(&dx, got);
        tg_compare(name, got, ref, nx, tg_tol[1]);
        CHECK(tg_guard_ok(&dx), "%s: guard zone after x overwritten", name);
    }
    cudaFree(da), cudaFree(dw);
    tg_buf *all[] = {&dx, &dcs, &db, &dg, &dbe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
    free(aq), free(wq), free(a), free(w), free(x), free(cs), free(b), free(g), free(be), free(y), free(ref), free(got);
}

static void expect(const char *what, swin_status got, swin_status want) {
    CHECK(got == want, "%s: status %d, expected %d (%s)", what, (int)got, (int)want, swin_last_error());
    printf("%s refusal: %s\n", got == want ? "ok  " : "FAIL", what);
}

static void refusals(int avail) {
    const int M = 256, K = 384, N = 96;
    tg_buf x = tg_alloc((size_t)M * N, 1), in = tg_alloc((size_t)M * K, 1), w = tg_alloc((size_t)N * K, 1);
    tg_buf v = tg_alloc(256, 0);
    const swin_status unsup = SWIN_ERR_UNSUPPORTED, arg = avail ? SWIN_ERR_ARGUMENT : SWIN_ERR_UNSUPPORTED;
    const float e = 1e-5f;
    expect("fp32", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, e, M, K, N, SWIN_DT_F32, 0), unsup);
    expect("N 192", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, e, M, K, 192, SWIN_DT_F16, 0), unsup);
    expect("N 100", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, e, M, K, 100, SWIN_DT_F16, 0), unsup);
    expect("K 90", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, e, M, 90, N, SWIN_DT_F16, 0), unsup);
    expect("M 0", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, e, 0, K, N, SWIN_DT_F16, 0), unsup);
    expect("NULL gamma", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, NULL, v.p, e, M, K, N, SWIN_DT_F16, 0),
           SWIN_ERR_ARGUMENT);
    expect("x == in", swin_gemm_wgmma_post_ln_cuda(in.p, in.p, w.p, NULL, v.p, v.p, e, M, K, N, SWIN_DT_F16, 0), arg);
    expect("x misaligned",
           swin_gemm_wgmma_post_ln_cuda((char *)x.p + 2, in.p, w.p, NULL, v.p, v.p, e, M, K, N, SWIN_DT_F16, 0), arg);
    expect("gamma misaligned", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, (const float *)v.p + 1, v.p, e, M, K,
                                                            N, SWIN_DT_F16, 0),
           arg);
    expect("eps 0", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, 0.0f, M, K, N, SWIN_DT_F16, 0), arg);
    expect("eps NaN", swin_gemm_wgmma_post_ln_cuda(x.p, in.p, w.p, NULL, v.p, v.p, NAN, M, K, N, SWIN_DT_F16, 0), arg);
    const uint8_t *q = (const uint8_t *)in.p, *qw = (const uint8_t *)w.p;
    expect("fp8 K 40", swin_gemm_wgmma_post_ln_fp8_cuda(x.p, q, qw, v.p, NULL, v.p, v.p, e, M, 40, N, 0), unsup);
    expect("fp8 N 136", swin_gemm_wgmma_post_ln_fp8_cuda(x.p, q, qw, v.p, NULL, v.p, v.p, e, M, K, 136, 0), unsup);
    expect("fp8 NULL col_scale", swin_gemm_wgmma_post_ln_fp8_cuda(x.p, q, qw, NULL, NULL, v.p, v.p, e, M, K, N, 0),
           SWIN_ERR_ARGUMENT);
    expect("fp8 x == in_q", swin_gemm_wgmma_post_ln_fp8_cuda(in.p, q, qw, v.p, NULL, v.p, v.p, e, M, K, N, 0), arg);
    expect("fp8 in_q misaligned", swin_gemm_wgmma_post_ln_fp8_cuda(x.p, q + 8, qw, v.p, NULL, v.p, v.p, e, M, K, N, 0),
           arg);
    tg_buf *all[] = {&x, &in, &w, &v};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    if (!tg_have_gpu("test_gpu_post_ln")) return TU_SKIP;
    tu_seed(3311);
    const int avail = swin_gemm_post_ln_supports(SWIN_DT_F16, 256, 384, 96);
    printf("post-norm epilogue: %s\n", avail ? "available" : "not available (no wgmma or TMA): refusals only");
    refusals(avail);
    if (avail)
        for (int dt = 1; dt <= 2; dt++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                if (!(tg_quick() && cases[i].big)) run_case(&cases[i], dt);
    if (avail)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (cases[i].K % 16 == 0 && !(tg_quick() && cases[i].big)) run_case_fp8(&cases[i]);
    return tu_finish("test_gpu_post_ln");
}
