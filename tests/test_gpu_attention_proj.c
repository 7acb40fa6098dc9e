/* test_gpu_attention_proj.c - swin_window_attention_proj_cuda (kernels/attention_proj.cuh: the
 * block's attention half in one kernel, the window's heads a thread-block cluster) against the CPU.
 *
 * Run: test_gpu_attention_proj <source dir>   (ctest -L gpu); exits 77 without a GPU or on one
 * without thread-block clusters (compute capability below 9.0), where the engine never asks for it.
 * SWIN_TEST_QUICK=1 runs a subset and no timing (for compute-sanitizer).
 * Reference: the attention's output from swin_window_attention_qkv_cuda (V1, on the partitioned
 * rows) or swin_ln_window_attention_qkv_cuda (V2, gathering them) - the kernel's own attention
 * arithmetic, tested against the CPU by test_gpu_attention_qkv - then on the CPU, in double: proj,
 * rounded to the dtype as the GEMM stores it; V1: the reverse and residual
 * (swin_window_reverse_residual_cpu), rounded as stored, and norm2 (swin_layernorm_cpu); V2: norm1 of
 * proj's output added to x (swin_window_reverse_residual_cpu with the norm). Errors are max|gpu -
 * ref| / max|ref| of x and of V1's norm2 output, the dtype's tolerances of test_gpu_attention_qkv
 * (only the sums' order differs). ln_out is poisoned (NaN) with guard bytes around it and around x;
 * the window rows must be unchanged; a token the kernel missed keeps its old x and fails the
 * comparison (proj's output is far above the tolerance). Cases: C 96 to 512 (3 to 16 heads: the
 * clusters past 8 CTAs are non-portable), V1 and V2, shifted and not, a grid padded to the window,
 * proj with and without its bias, and windows enough that every cluster walks several. Also:
 * refusals with a message, swin_window_attention_proj_supports agreeing, and
 * swin_window_attention_proj_one_wave on a grid that fits and one that cannot. At the end (printed, not
 * asserted) the kernel against the three ops it replaces (qkv+attention kernel, proj GEMM, reverse
 * pass), Swin-T's stages 1 to 3.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "internal.h"   /* swin_clear_error */
#include "layers.h"
#include "ops.h"
#include "testutil.h"
#include "testutil_cuda.h"
#include "attn_testutil.h"

#define GUARD 256
#define GUARD_BYTE 0xA5

static const attn_case cases[] = {
    {14, 14, 7, 7, 3, 3, 1, 3, 3, 1, 1},    /* Swin-T stage 1 shape, shifted */
    {14, 14, 7, 7, 0, 0, 1, 3, 1, 0, 0},    /* unshifted, no biases */
    {16, 16, 8, 8, 4, 4, 2, 3, 3, 1, 1},    /* SwinV2-T, shifted */
    {17, 13, 7, 7, 3, 3, 2, 3, 2, 1, 0},    /* V2 padded to 21 x 14 (transformers' geometry) */
    {17, 13, 7, 7, 3, 3, 1, 3, 2, 1, 1},    /* V1 padded (timm's) */
    {56, 56, 7, 7, 3, 3, 1, 3, 8, 1, 0},    /* 512 windows: each cluster walks several */
    {64, 64, 8, 8, 4, 4, 2, 3, 4, 1, 0},    /* 256 windows of 8 x 8, V2 */
    {14, 14, 7, 7, 3, 3, 1, 4, 2, 1, 0},    /* C 128 (Swin-B's first stage) */
    {14, 14, 7, 7, 3, 3, 1, 6, 2, 1, 1},    /* C 192 */
    {16, 16, 8, 8, 4, 4, 2, 6, 1, 0, 0},    /* C 192, V2, no biases */
    {14, 14, 7, 7, 3, 3, 1, 8, 1, 1, 0},    /* C 256: 8 heads, the largest portable cluster */
    {14, 14, 7, 7, 0, 0, 1, 12, 1, 1, 1},   /* C 384: a cluster of 12 */
    {16, 16, 8, 8, 4, 4, 2, 12, 1, 1, 0},   /* C 384, V2 */
    {14, 14, 7, 7, 3, 3, 1, 16, 1, 1, 0},   /* C 512: a cluster of 16 */
    {28, 28, 7, 7, 3, 3, 1, 12, 4, 1, 0},   /* C 384, 64 windows: clusters of 12 walk several */
};

/* guard | n bytes | guard: the guards set, the body poisoned (0xFF: NaN) when poison */
static void guard_set(unsigned char *buf, size_t n, int poison) {
    CUDA_OK(cudaMemset(buf, GUARD_BYTE, GUARD));
    if (poison) CUDA_OK(cudaMemset(buf + GUARD, 0xFF, n));
    CUDA_OK(cudaMemset(buf + GUARD + n, GUARD_BYTE, GUARD));
}

static int guard_ok(const unsigned char *h, size_t n) {
    for (int i = 0; i < GUARD; i++)
        if (h[i] != GUARD_BYTE || h[GUARD + n + i] != GUARD_BYTE) return 0;
    return 1;
}

static int n_runs, n_unplaced;

static void run_case(const attn_case *c, int ci, cudaStream_t st) {
    const swin_dims d = attn_case_dims(c);
    const int C = d.C, N = swin_dims_n(&d), nwin = d.B * swin_dims_nw(&d), v1 = d.version == 1;
    const int T = d.B * d.res_h * d.res_w;
    const size_t rows = (size_t)nwin * N, nx = rows * C, nimg = (size_t)T * C, nw = (size_t)3 * C * C;
    const size_t nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * d.heads;
    char name[160];
    snprintf(name, sizeof name, "grid %dx%d window %dx%d shift %dx%d v%d C=%-3d heads %-2d B=%d%s", d.res_h, d.res_w,
             d.win_h, d.win_w, d.shift_h, d.shift_w, d.version, C, d.heads, d.B, c->has_bias ? "" : " (no biases)");
    if (!swin_window_attention_proj_supports(&d, SWIN_DT_F16)) {
        /* clusters of up to 8 CTAs are portable: every GPU with clusters places them */
        CHECK(d.heads > 8, "%s: supports() refuses a portable cluster of %d", name, d.heads);
        printf("%-70s a cluster of %d CTAs cannot be placed on this GPU: not run\n", name, d.heads);
        n_unplaced++;
        return;
    }
    float *img = malloc(nimg * 4), *w = malloc(nw * 4), *b = malloc(3 * C * 4), *pw = malloc((size_t)C * C * 4);
    float *pb = malloc(C * 4), *att = malloc(nx * 4), *p = malloc(nx * 4), *xref = malloc(nimg * 4);
    float *lref = malloc(nimg * 4), *got = malloc(nimg * 4), *bias = malloc(nbias * 4), *scale = malloc(d.heads * 4);
    float *g1 = malloc(C * 4), *b1 = malloc(C * 4), *g2 = malloc(C * 4), *b2 = malloc(C * 4);
    unsigned char *hbuf = malloc((nimg > nw ? nimg : nw) * 2 + 2 * GUARD), *hw1 = malloc(nx * 2), *hw2 = malloc(nx * 2);
    unsigned char *d_xg, *d_lg;   /* guard | x | guard, guard | ln_out | guard */
    void *d_win, *d_att, *d_w, *d_b, *d_pw, *d_pb;
    float *d_bias, *d_scale, *d_g1, *d_b1, *d_g2, *d_b2;
    CUDA_OK(cudaMalloc((void **)&d_xg, nimg * 2 + 2 * GUARD));
    CUDA_OK(cudaMalloc((void **)&d_lg, nimg * 2 + 2 * GUARD));
    CUDA_OK(cudaMalloc(&d_win, nx * 2));
    CUDA_OK(cudaMalloc(&d_att, nx * 2));
    CUDA_OK(cudaMalloc(&d_w, nw * 2));
    CUDA_OK(cudaMalloc(&d_b, 3 * C * 2));
    CUDA_OK(cudaMalloc(&d_pw, (size_t)C * C * 2));
    CUDA_OK(cudaMalloc(&d_pb, C * 2));
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, d.heads * 4));
    float **lnv[4] = {&d_g1, &d_b1, &d_g2, &d_b2};
    for (int i = 0; i < 4; i++) CUDA_OK(cudaMalloc((void **)lnv[i], C * 4));
    void *d_x = d_xg + GUARD, *d_l = d_lg + GUARD;
    tu_seed(9100 + ci);
    tu_fill(bias, nbias, -2.0f, 2.0f);
    for (int h = 0; h < d.heads; h++) scale[h] = d.version == 2 ? tu_uniform(1.0f, 40.0f) : tu_uniform(0.1f, 0.3f);
    tu_fill(g1, C, 0.5f, 1.5f), tu_fill(b1, C, -0.5f, 0.5f), tu_fill(g2, C, 0.5f, 1.5f), tu_fill(b2, C, -0.5f, 0.5f);
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, d.heads * 4, cudaMemcpyHostToDevice));
    const float *lnh[4] = {g1, b1, g2, b2};
    for (int i = 0; i < 4; i++) CUDA_OK(cudaMemcpy(*lnv[i], lnh[i], C * 4, cudaMemcpyHostToDevice));
    const swin_ln_w ln1 = {g1, b1}, ln2 = {g2, b2};
    for (int dt = SWIN_DT_F16; dt <= SWIN_DT_BF16; dt++) {
        tu_fill(img, nimg, -2.0f, 3.0f);   /* a mean away from 0, so that the norms have work */
        tu_fill(w, nw, -1.0f / sqrtf((float)C), 1.0f / sqrtf((float)C));
        tu_fill(b, 3 * C, -0.5f, 0.5f);
        tu_fill(pw, (size_t)C * C, -1.0f / sqrtf((float)C), 1.0f / sqrtf((float)C));
        tu_fill(pb, C, -0.5f, 0.5f);
        tu_round_to(img, nimg, dt), tu_round_to(w, nw, dt), tu_round_to(b, 3 * C, dt);
        tu_round_to(pw, (size_t)C * C, dt), tu_round_to(pb, C, dt);
        upload_dt(d_w, w, nw, dt, hbuf);
        upload_dt(d_b, b, 3 * C, dt, hbuf);
        upload_dt(d_pw, pw, (size_t)C * C, dt, hbuf);
        upload_dt(d_pb, pb, C, dt, hbuf);
        guard_set(d_xg, nimg * 2, 0);
        upload_dt(d_x, img, nimg, dt, hbuf);
        guard_set(d_lg, nimg * 2, 1);
        const void *qb = c->has_bias ? d_b : NULL;
        /* the attention's output, the reference's input; V1's window rows (norm1 applied) */
        swin_status s0 = SWIN_OK;
        if (v1) {
            s0 = swin_ln_shift_partition_cuda(d_win, d_x, d_g1, d_b1, &d, NULL, (swin_dtype)dt, st);
            if (s0 == SWIN_OK)
                s0 = swin_window_attention_qkv_cuda(d_att, d_win, d_w, qb, d_bias, d_scale, &d, (swin_dtype)dt, NULL, st);
        } else {
            s0 = swin_ln_window_attention_qkv_cuda(d_att, d_x, NULL, NULL, d_w, qb, d_bias, d_scale, &d, (swin_dtype)dt,
                                                   NULL, st);
        }
        if (v1) CUDA_OK(cudaMemcpy(hw1, d_win, nx * 2, cudaMemcpyDeviceToHost));
        const swin_attn_epilogue ep = {d_x, v1 ? d_l : NULL, d_pw, c->has_bias ? d_pb : NULL, v1 ? d_g2 : d_g1,
                                       v1 ? d_b2 : d_b1};
        swin_status s = s0 == SWIN_OK ? swin_window_attention_proj_cuda(&ep, v1 ? d_win : NULL, d_w, qb, d_bias,
                                                                        d_scale, &d, (swin_dtype)dt, st)
                                      : s0;
        cudaError_t ce = cudaStreamSynchronize(st);
        char full[200];
        snprintf(full, sizeof full, "%s %s", name, attn_dt_name[dt]);
        if (!CHECK(s == SWIN_OK && ce == cudaSuccess, "%s: %s / %s", full, swin_last_error(), cudaGetErrorString(ce)))
            continue;
        /* the reference: proj of the attention's output in double, rounded; then the CPU ops */
        unsigned char *ha = malloc(nx * 2);
        CUDA_OK(cudaMemcpy(ha, d_att, nx * 2, cudaMemcpyDeviceToHost));
        tu_from_dtype(att, ha, nx, dt);
        free(ha);
        for (size_t r = 0; r < rows; r++)
            for (int n = 0; n < C; n++) {
                double acc = c->has_bias ? pb[n] : 0.0;
                for (int k = 0; k < C; k++) acc += (double)att[r * C + k] * pw[(size_t)n * C + k];
                p[r * C + n] = (float)acc;
            }
        tu_round_to(p, nx, dt);
        memcpy(xref, img, nimg * 4);
        swin_window_reverse_residual_cpu(xref, p, v1 ? NULL : &ln1, &d);
        tu_round_to(xref, nimg, dt);
        if (v1) {
            swin_layernorm_cpu(lref, xref, &ln2, T, C, d.eps);
            tu_round_to(lref, nimg, dt);
        }
        CUDA_OK(cudaMemcpy(hbuf, d_xg, nimg * 2 + 2 * GUARD, cudaMemcpyDeviceToHost));
        int gok = guard_ok(hbuf, nimg * 2);
        tu_from_dtype(got, hbuf + GUARD, nimg, dt);
        const double ex = tu_max_abs_diff(got, xref, nimg) / tu_max_abs(xref, nimg);
        double el = 0.0;
        CUDA_OK(cudaMemcpy(hbuf, d_lg, nimg * 2 + 2 * GUARD, cudaMemcpyDeviceToHost));
        if (v1) {
            gok &= guard_ok(hbuf, nimg * 2);
            tu_from_dtype(got, hbuf + GUARD, nimg, dt);
            el = tu_max_abs_diff(got, lref, nimg) / tu_max_abs(lref, nimg);   /* NaN (not written): fails */
        } else {
            size_t touched = 0;   /* V2 writes no ln_out: the poison and guards stay */
            for (size_t i = 0; i < nimg * 2 + 2 * GUARD; i++)
                touched += hbuf[i] != (i < GUARD || i >= GUARD + nimg * 2 ? GUARD_BYTE : 0xFF);
            gok &= touched == 0;
        }
        int win_ok = 1;
        if (v1) {
            CUDA_OK(cudaMemcpy(hw2, d_win, nx * 2, cudaMemcpyDeviceToHost));
            win_ok = memcmp(hw1, hw2, nx * 2) == 0;
        }
        const int ok = ex <= attn_dt_tol[dt] && el <= attn_dt_tol[dt] && gok && win_ok;
        if (v1) printf("%-66s x err %.2e, norm2 err %.2e (tol %.1e)%s %s\n", full, ex, el, attn_dt_tol[dt],
                       gok ? "" : " GUARD", ok ? "ok" : "FAIL");
        else printf("%-66s x err %.2e (tol %.1e)%s %s\n", full, ex, attn_dt_tol[dt], gok ? "" : " GUARD", ok ? "ok" : "FAIL");
        CHECK(ex <= attn_dt_tol[dt], "%s: x err %.3e > %.1e", full, ex, attn_dt_tol[dt]);
        CHECK(el <= attn_dt_tol[dt], "%s: norm2 err %.3e > %.1e", full, el, attn_dt_tol[dt]);
        CHECK(gok, "%s: a write outside the outputs", full);
        CHECK(win_ok, "%s: the window rows changed", full);
        n_runs++;
    }
    cudaFree(d_xg), cudaFree(d_lg), cudaFree(d_win), cudaFree(d_att), cudaFree(d_w), cudaFree(d_b), cudaFree(d_pw);
    cudaFree(d_pb), cudaFree(d_bias), cudaFree(d_scale);
    for (int i = 0; i < 4; i++) cudaFree(*lnv[i]);
    free(img), free(w), free(b), free(pw), free(pb), free(att), free(p), free(xref), free(lref), free(got), free(bias);
    free(scale), free(g1), free(b1), free(g2), free(b2), free(hbuf), free(hw1), free(hw2);
}

/* refused with a message and SWIN_ERR_UNSUPPORTED / SWIN_ERR_ARGUMENT, supports() agreeing */
static void test_arguments(cudaStream_t st) {
    unsigned char *p;
    CUDA_OK(cudaMalloc((void **)&p, 1 << 22));
    const attn_case base = {14, 14, 7, 7, 3, 3, 1, 3, 1, 1, 0};
    struct {
        const char *what;
        swin_status want;
        int field;   /* 1 C 768, 2 fp32, 3 V1 without rows, 4 V2 with rows, 5 ln_out overlaps x, 6 rows overlap x,
                        7 NULL ln_w, 8 ln_out unaligned, 9 NULL epilogue */
    } t[] = {
        {"C 768 (24 heads)", SWIN_ERR_UNSUPPORTED, 1},  {"fp32 data", SWIN_ERR_UNSUPPORTED, 2},
        {"V1 without the rows", SWIN_ERR_UNSUPPORTED, 3}, {"V2 with the rows", SWIN_ERR_UNSUPPORTED, 4},
        {"ln_out overlaps x", SWIN_ERR_ARGUMENT, 5},     {"rows overlap x", SWIN_ERR_ARGUMENT, 6},
        {"NULL ln_w", SWIN_ERR_ARGUMENT, 7},             {"ln_out not aligned", SWIN_ERR_ARGUMENT, 8},
        {"NULL epilogue", SWIN_ERR_ARGUMENT, 9},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        swin_dims d = attn_case_dims(&base);
        swin_dtype dt = SWIN_DT_F16;
        swin_attn_epilogue ep = {p, p + (1 << 20), p, NULL, (const float *)p, (const float *)p};
        const void *xw = p + (2 << 20);
        if (t[i].field == 1) d.C = 768, d.heads = 24;
        if (t[i].field == 2) dt = SWIN_DT_F32;
        if (t[i].field == 3) xw = NULL;
        if (t[i].field == 4) d.version = 2;
        if (t[i].field == 5) ep.ln_out = p + 4096;
        if (t[i].field == 6) xw = p + 4096;
        if (t[i].field == 7) ep.ln_w = NULL;
        if (t[i].field == 8) ep.ln_out = p + (1 << 20) + 8;
        const int sup = swin_window_attention_proj_supports(&d, dt);
        swin_clear_error();
        swin_status s = swin_window_attention_proj_cuda(t[i].field == 9 ? NULL : &ep, xw, p, NULL, (const float *)p,
                                                        (const float *)p, &d, dt, st);
        const char *msg = swin_last_error();
        printf("refuse %-24s -> %d (%s)\n", t[i].what, (int)s, msg);
        CHECK(s == t[i].want && msg[0], "%s: status %d, want %d", t[i].what, (int)s, (int)t[i].want);
        if (t[i].field <= 2) CHECK(!sup, "%s: supports() says %d", t[i].what, sup);
    }
    CHECK(cudaStreamSynchronize(st) == cudaSuccess, "stream after refusals");
    cudaFree(p);
}

/* one_wave(): Swin-T's first stage at batch 1 (64 windows; clusters of 3 CTAs of 58 KB, 3 an SM:
 * about one cluster an SM, so asserted on GPUs of 100 SMs and more) against 16 windows an SM,
 * more than could ever be resident, and a width the kernel does not take */
static void test_one_wave(void) {
    int dev = 0, sms = 0;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const swin_dims one = swin_dims_square(1, 56, 96, 3, 32, 7, 3, 1, 1e-5f);
    const int res = 7 * 4;   /* 16 windows an image */
    const swin_dims many = swin_dims_square(sms, res, 96, 3, 32, 7, 3, 2, 1e-5f);
    const swin_dims wide = swin_dims_square(1, 14, 768, 24, 32, 7, 3, 1, 1e-5f);
    const int a = swin_window_attention_proj_one_wave(&one, SWIN_DT_F16);
    const int b = swin_window_attention_proj_one_wave(&many, SWIN_DT_BF16);
    const int c = swin_window_attention_proj_one_wave(&wide, SWIN_DT_F16);
    printf("one_wave: 64 windows %d, %d windows %d, C 768 %d (%d SMs)\n", a, 16 * sms, b, c, sms);
    CHECK((a || sms < 100) && b == 0 && c == 0, "one_wave: %d %d %d, want %d 0 0", a, b, c, sms >= 100);
    CHECK(cudaGetLastError() == cudaSuccess, "one_wave left a CUDA error");
}

// ---- timings (printed, not asserted)

/* what the timed calls need; which 0: the one kernel, 1: the three ops it replaces (V1) */
typedef struct {
    int which;
    const swin_attn_epilogue *ep;
    void *win, *att, *pout;
    const void *w;
    const float *bt, *sc;
    const swin_dims *d;
    swin_gemm *g;
} timed;

static int enqueue(void *ctx, cudaStream_t st) {
    const timed *c = ctx;
    const swin_dims *d = c->d;
    if (c->which == 0) return swin_window_attention_proj_cuda(c->ep, c->win, c->w, NULL, c->bt, c->sc, d, SWIN_DT_F16, st);
    const int M = d->B * swin_dims_nw(d) * swin_dims_n(d);
    swin_status s = swin_window_attention_qkv_cuda(c->att, c->win, c->w, NULL, c->bt, c->sc, d, SWIN_DT_F16, NULL, st);
    if (s == SWIN_OK) s = swin_linear_cuda(c->pout, c->att, c->ep->w, NULL, NULL, M, d->C, d->C, SWIN_ACT_NONE, c->g, st);
    if (s == SWIN_OK)
        s = swin_window_reverse_residual_ln_cuda(c->ep->x, c->ep->ln_out, c->pout, c->ep->ln_w, c->ep->ln_b, d, NULL,
                                                 SWIN_DT_F16, st);
    return s;
}

/* Swin-T's stage `stage` (1 to 3: C 96, 192, 384) at batch B, V1, fp16 */
static void bench(int B, int stage) {
    const int W = 7, C = 96 << (stage - 1), heads = C / 32, res = 56 >> (stage - 1);
    swin_dims d = swin_dims_square(B, res, C, heads, 32, W, res > W ? W / 2 : 0, 1, 1e-5f);
    if (!swin_window_attention_proj_supports(&d, SWIN_DT_F16)) return;
    const size_t nx = (size_t)B * res * res * C, nw = (size_t)3 * C * C;
    float *f = malloc((nx > nw ? nx : nw) * 4);
    uint16_t *h = malloc((nx > nw ? nx : nw) * 2);
    void *d_x, *d_l, *d_win, *d_att, *d_p, *d_w, *d_pw, *ws;
    float *d_bias, *d_scale, *d_ln;
    void **bufs[] = {&d_x, &d_l, &d_win, &d_att, &d_p};
    for (int i = 0; i < 5; i++) CUDA_OK(cudaMalloc(bufs[i], nx * 2));
    CUDA_OK(cudaMalloc(&d_w, nw * 2));
    CUDA_OK(cudaMalloc(&d_pw, (size_t)C * C * 2));
    CUDA_OK(cudaMalloc((void **)&d_ln, 2 * C * 4));
    const size_t wsb = 32u << 20;
    CUDA_OK(cudaMalloc(&ws, wsb));
    tu_fill(f, nx, -1.0f, 1.0f);
    upload_dt(d_win, f, nx, SWIN_DT_F16, h);
    upload_dt(d_x, f, nx, SWIN_DT_F16, h);
    tu_fill(f, nw, -0.1f, 0.1f);
    upload_dt(d_w, f, nw, SWIN_DT_F16, h);
    upload_dt(d_pw, f, (size_t)C * C, SWIN_DT_F16, h);
    attn_bench_tables(W, heads, f, &d_bias, &d_scale);
    tu_fill(f, 2 * C, 0.5f, 1.5f);
    CUDA_OK(cudaMemcpy(d_ln, f, 2 * C * 4, cudaMemcpyHostToDevice));
    const swin_attn_epilogue ep = {d_x, d_l, d_pw, NULL, d_ln, d_ln + C};
    swin_gemm *g = NULL;
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));
    if (CHECK(swin_gemm_create(&g, SWIN_FP16, ws, wsb) == SWIN_OK, "swin_gemm_create: %s", swin_last_error())) {
        timed c = {0, &ep, d_win, d_att, d_p, d_w, d_bias, d_scale, &d, g};
        float t[2];   /* the one kernel, the three ops */
        attn_time_pair(enqueue, &c, &c.which, st, t);
        printf("bench v1 stage %d B=%-3d fp16: one kernel %.4f ms, qkv+attention + proj + reverse %.4f ms (%.2fx)\n",
               stage, B, t[0], t[1], t[1] / t[0]);
        swin_gemm_free(g);
    }
    cudaStreamDestroy(st);
    for (int i = 0; i < 5; i++) cudaFree(*bufs[i]);
    cudaFree(d_w), cudaFree(d_pw), cudaFree(d_bias), cudaFree(d_scale), cudaFree(d_ln), cudaFree(ws);
    free(f), free(h);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    int ndev = 0, dev = 0, clusters = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_gpu_attention_proj: no CUDA device, skipped\n");
        return TU_SKIP;
    }
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev));
    if (!clusters) {
        printf("test_gpu_attention_proj: the GPU has no thread-block clusters (the engine keeps the unfused ops), "
               "skipped\n");
        return TU_SKIP;
    }
    const char *q = getenv("SWIN_TEST_QUICK");
    const int quick = q && atoi(q) > 0;
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));
    test_arguments(st);
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        if (!quick || cases[i].quick) run_case(&cases[i], i, st);
    test_one_wave();
    printf("%d launches checked, %d cases not placeable on this GPU\n", n_runs, n_unplaced);
    CHECK(n_runs > 0, "no case ran");
    if (!quick) {
        static const int runs[][2] = {{1, 1}, {1, 2}, {1, 3}, {8, 1}, {8, 2}, {8, 3}, {64, 1}, {256, 1}};
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) bench(runs[i][0], runs[i][1]);
    }
    cudaStreamDestroy(st);
    return tu_finish("test_gpu_attention_proj");
}
