/* test_gpu_attention_qkv.c - swin_window_attention_qkv_cuda (kernels/attention_qkv.cuh: the qkv
 * projection and the window attention in one kernel) against the CPU: q, k, v = x W^T + b in
 * double, rounded to the dtype as the GEMM stores them, then swin_window_attention_cpu.
 *
 * Run: test_gpu_attention_qkv <source dir>   (ctest -L gpu); exits 77 without a GPU.
 * SWIN_TEST_QUICK=1 runs a subset and no timing (for compute-sanitizer).
 * Cases: the geometries the kernel takes (head_dim 32, windows of 49 to 64 tokens, C 96 to 512;
 * V1 and V2; shifted and not; a 7 x 8 window; a grid padded to the window), fp16 and bf16, and
 * windows enough that each CTA walks several (the kernel's prefetch of the next window's rows).
 * x uniform in [-1, 1], W in [-1, 1] / sqrt(C), b in [-0.5, 0.5] (and none), rounded to the dtype so
 * that the GPU and the reference see the same values. The output is poisoned (NaN) with guard
 * bytes around it, and x must be unchanged after the run. Errors are max|gpu - ref| / max|ref|,
 * tolerances the attention test's (test_gpu_attention.c): the rounding of q, k and v is the same
 * on both sides, only the fp32 sums' order differs. Also: the E4M3 copy (proj's FP8 input) equals
 * the quantising pass over the output, refusals (what the kernel is not built for, overlapping
 * buffers, NULLs) with a message, swin_window_attention_qkv_supports agreeing, and
 * swin_window_attention_qkv_one_wave on a grid that fits and one that cannot. Every case also runs
 * through swin_ln_window_attention_qkv_cuda (gather_case: the rows gathered from the image and, in
 * V1, normalised inside the kernel): bit for bit the partition kernel followed by the kernel, and
 * within tolerance of the CPU. At the end (printed,
 * not asserted) the kernel's time against the qkv GEMM (cuBLASLt) plus the attention kernel,
 * Swin-T's stages 1 to 3 at batch 1, 8, 64 and 256 (the engine's rule for C > 128 comes from these).
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "internal.h"   /* swin_clear_error */
#include "ops.h"
#include "testutil.h"
#include "testutil_cuda.h"
#include "attn_testutil.h"

#define GUARD_BYTES 256
#define GUARD_BYTE 0xA5

static const attn_case cases[] = {
    {14, 14, 7, 7, 3, 3, 1, 3, 3, 1, 1},    /* Swin-T stage 1 shape, shifted */
    {14, 14, 7, 7, 0, 0, 1, 3, 1, 1, 0},    /* unshifted */
    {16, 16, 8, 8, 4, 4, 2, 3, 3, 1, 1},    /* SwinV2-T, shifted */
    {8, 8, 8, 8, 0, 0, 2, 3, 2, 1, 0},      /* one window an image */
    {14, 14, 7, 7, 3, 3, 1, 4, 2, 1, 1},    /* Swin-B (C 128), shifted */
    {16, 16, 8, 8, 4, 4, 2, 4, 1, 0, 0},    /* C 128, V2, no qkv bias */
    {14, 16, 7, 8, 3, 4, 1, 3, 2, 1, 0},    /* a 7 x 8 window (56 tokens) */
    {17, 13, 7, 7, 3, 3, 2, 3, 2, 1, 0},    /* padded to 21 x 14 (transformers' SwinV2 at 66 x 50) */
    {56, 56, 7, 7, 3, 3, 1, 3, 8, 1, 1},    /* 512 windows: each CTA walks several */
    {64, 64, 8, 8, 4, 4, 2, 3, 4, 1, 0},    /* 256 windows of 8 x 8, V2 */
    {56, 56, 7, 7, 0, 0, 1, 4, 4, 0, 0},    /* C 128, 256 windows, no qkv bias */
    {14, 14, 7, 7, 3, 3, 1, 6, 2, 1, 1},    /* C 192 (Swin-T's second stage) */
    {16, 16, 8, 8, 4, 4, 2, 6, 1, 1, 0},    /* C 192, V2 */
    {14, 14, 7, 7, 3, 3, 1, 8, 1, 1, 0},    /* C 256 (Swin-B's second stage) */
    {14, 14, 7, 7, 0, 0, 1, 12, 1, 1, 1},   /* C 384 (Swin-T's third stage) */
    {16, 16, 8, 8, 4, 4, 2, 12, 1, 0, 0},   /* C 384, V2, no qkv bias */
    {14, 14, 7, 7, 3, 3, 1, 16, 1, 1, 0},   /* C 512 (Swin-B's third stage) */
    {28, 28, 7, 7, 3, 3, 1, 12, 4, 1, 0},   /* C 384, 64 windows x 12 heads: CTAs walk several */
};

/* n random fp16 values in [lo, hi) into device memory d (f, h: host scratch of n floats and halves) */
static void upload_f16(void *d, size_t n, float lo, float hi, float *f, uint16_t *h) {
    tu_fill(f, n, lo, hi);
    upload_dt(d, f, n, SWIN_DT_F16, h);
}

/* q, k, v [rows, 3C] = x [rows, C] W^T [C, 3C] + b, in double, rounded to dt */
static void project(float *qkv, const float *x, const float *w, const float *b, size_t rows, int C, int dt) {
    for (size_t r = 0; r < rows; r++)
        for (int n = 0; n < 3 * C; n++) {
            double s = b ? b[n] : 0.0;
            for (int k = 0; k < C; k++) s += (double)x[r * C + k] * w[(size_t)n * C + k];
            qkv[r * 3 * C + n] = (float)s;
        }
    tu_round_to(qkv, rows * 3 * (size_t)C, dt);
}

/* ref [rows, C] = the CPU attention of x's windows projected (project), q/k/v into qkv; returns
 * ref's largest magnitude */
static double reference(float *ref, float *qkv, const float *x, const float *w, const float *b, const float *bias,
                        const float *scale, const swin_dims *d, int dt) {
    const size_t rows = (size_t)d->B * swin_dims_nw(d) * swin_dims_n(d);
    project(qkv, x, w, b, rows, d->C, dt);
    swin_window_attention_cpu(ref, qkv, bias, scale, d);
    return tu_max_abs(ref, rows * d->C);
}

/* a case's name in the output: "[prefix]grid HxW window ... dtype" */
static void case_name(char *name, size_t cap, const char *prefix, const attn_case *c, const swin_dims *d, int dt) {
    snprintf(name, cap, "%sgrid %dx%d window %dx%d shift %dx%d v%d C=%-3d B=%d%s %s", prefix, d->res_h, d->res_w,
             d->win_h, d->win_w, d->shift_h, d->shift_w, d->version, d->C, d->B, c->has_bias ? "" : " (no bias)",
             attn_dt_name[dt]);
}

static int n_runs;

static void run_case(const attn_case *c, int ci, cudaStream_t st) {
    const swin_dims d = attn_case_dims(c);
    const int C = d.C, N = swin_dims_n(&d), nwin = d.B * swin_dims_nw(&d);
    const size_t rows = (size_t)nwin * N, nx = rows * C, nw = (size_t)3 * C * C;
    const size_t nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * d.heads;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(3 * C * 4), *qkv = malloc(nx * 3 * 4);
    float *ref = malloc(nx * 4), *got = malloc(nx * 4), *bias = malloc(nbias * 4), *scale = malloc(d.heads * 4);
    /* hbuf: the output with its guards, and the weights on their way up */
    unsigned char *hbuf = malloc((nx > nw ? nx : nw) * 2 + 2 * GUARD_BYTES);
    unsigned char *hx = malloc(nx * 2), *hx2 = malloc(nx * 2);
    void *d_x, *d_w, *d_b, *d_buf;
    float *d_bias, *d_scale;
    CUDA_OK(cudaMalloc(&d_x, nx * 2));
    CUDA_OK(cudaMalloc(&d_w, nw * 2));
    CUDA_OK(cudaMalloc(&d_b, 3 * C * 2));
    CUDA_OK(cudaMalloc(&d_buf, nx * 2 + 2 * GUARD_BYTES));   /* guard | out | guard */
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, d.heads * 4));
    void *d_out = (char *)d_buf + GUARD_BYTES;
    tu_seed(7000 + ci);
    tu_fill(bias, nbias, -2.0f, 2.0f);
    for (int h = 0; h < d.heads; h++) scale[h] = d.version == 2 ? tu_uniform(1.0f, 40.0f) : tu_uniform(0.1f, 0.3f);
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, d.heads * 4, cudaMemcpyHostToDevice));
    for (int dt = SWIN_DT_F16; dt <= SWIN_DT_BF16; dt++) {
        tu_fill(x, nx, -1.0f, 1.0f);
        tu_fill(w, nw, -1.0f / sqrtf((float)C), 1.0f / sqrtf((float)C));
        tu_fill(b, 3 * C, -0.5f, 0.5f);
        tu_round_to(x, nx, dt), tu_round_to(w, nw, dt), tu_round_to(b, 3 * C, dt);
        const double refmax = reference(ref, qkv, x, w, c->has_bias ? b : NULL, bias, scale, &d, dt);
        upload_dt(d_x, x, nx, dt, hx);
        upload_dt(d_w, w, nw, dt, hbuf);
        upload_dt(d_b, b, 3 * C, dt, hbuf);
        CUDA_OK(cudaMemset(d_buf, GUARD_BYTE, GUARD_BYTES));
        CUDA_OK(cudaMemset(d_out, 0xFF, nx * 2));   /* NaN */
        CUDA_OK(cudaMemset((char *)d_out + nx * 2, GUARD_BYTE, GUARD_BYTES));
        CHECK(swin_window_attention_qkv_supports(&d, (swin_dtype)dt), "supports() refuses a case the kernel takes");
        swin_status s = swin_window_attention_qkv_cuda(d_out, d_x, d_w, c->has_bias ? d_b : NULL, d_bias, d_scale, &d,
                                                       (swin_dtype)dt, NULL, st);
        cudaError_t ce = cudaStreamSynchronize(st);
        char name[160];
        case_name(name, sizeof name, "", c, &d, dt);
        if (!CHECK(s == SWIN_OK && ce == cudaSuccess, "%s: %s / %s", name, swin_last_error(), cudaGetErrorString(ce)))
            continue;
        CUDA_OK(cudaMemcpy(hbuf, d_buf, nx * 2 + 2 * GUARD_BYTES, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(hx2, d_x, nx * 2, cudaMemcpyDeviceToHost));
        tu_from_dtype(got, hbuf + GUARD_BYTES, nx, dt);
        int guard_ok = 1;
        for (int i = 0; i < GUARD_BYTES; i++)
            guard_ok &= hbuf[i] == GUARD_BYTE && hbuf[GUARD_BYTES + nx * 2 + i] == GUARD_BYTE;
        const double err = tu_max_abs_diff(got, ref, nx) / (refmax > 0 ? refmax : 1.0);   /* NaN: fails below */
        const int ok = err <= attn_dt_tol[dt] && guard_ok && memcmp(hx, hx2, nx * 2) == 0;
        printf("%-66s err %.2e (tol %.1e)%s %s\n", name, err, attn_dt_tol[dt], guard_ok ? "" : " GUARD OVERWRITTEN",
               ok ? "ok" : "FAIL");
        CHECK(err <= attn_dt_tol[dt], "%s: err %.3e > %.1e", name, err, attn_dt_tol[dt]);
        CHECK(guard_ok, "%s: write outside the output", name);
        CHECK(memcmp(hx, hx2, nx * 2) == 0, "%s: x changed", name);
        n_runs++;
    }
    cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_buf), cudaFree(d_bias), cudaFree(d_scale);
    free(x), free(w), free(b), free(qkv), free(ref), free(got), free(bias), free(scale), free(hbuf), free(hx), free(hx2);
}

/* swin_ln_window_attention_qkv_cuda: the windows' rows gathered from the image (and in V1
 * normalised with norm1) inside the kernel. Bit for bit swin_ln_shift_partition_cuda followed by
 * swin_window_attention_qkv_cuda (the same LayerNorm arithmetic, the same rows), and within the
 * dtype's tolerance of the CPU: swin_ln_shift_partition_cpu, rounded to the dtype as the partition
 * kernel stores it, then the projection and attention as run_case. The image is poisoned around
 * (guards) and must be unchanged. */
static void gather_case(const attn_case *c, int ci, cudaStream_t st) {
    const swin_dims d = attn_case_dims(c);
    const int C = d.C, N = swin_dims_n(&d), nwin = d.B * swin_dims_nw(&d);
    const size_t rows = (size_t)nwin * N, nx = rows * C, nimg = (size_t)d.B * d.res_h * d.res_w * C;
    const size_t nw = (size_t)3 * C * C, nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * d.heads;
    const int v1 = d.version == 1;
    float *img = malloc(nimg * 4), *win = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(3 * C * 4);
    float *qkv = malloc(nx * 3 * 4), *ref = malloc(nx * 4), *got = malloc(nx * 4), *bias = malloc(nbias * 4);
    float *scale = malloc(d.heads * 4), *g = malloc(C * 4), *be = malloc(C * 4);
    unsigned char *hbuf = malloc((nx > nw ? nx : nw) * 2), *hout = malloc(nx * 2), *hpair = malloc(nx * 2);
    unsigned char *himg = malloc(nimg * 2), *himg2 = malloc(nimg * 2);
    void *d_img, *d_win, *d_w, *d_b, *d_out, *d_pair;
    float *d_bias, *d_scale, *d_g, *d_be;
    CUDA_OK(cudaMalloc(&d_img, nimg * 2));
    CUDA_OK(cudaMalloc(&d_win, nx * 2));
    CUDA_OK(cudaMalloc(&d_w, nw * 2));
    CUDA_OK(cudaMalloc(&d_b, 3 * C * 2));
    CUDA_OK(cudaMalloc(&d_out, nx * 2));
    CUDA_OK(cudaMalloc(&d_pair, nx * 2));
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, d.heads * 4));
    CUDA_OK(cudaMalloc((void **)&d_g, C * 4));
    CUDA_OK(cudaMalloc((void **)&d_be, C * 4));
    tu_seed(8000 + ci);
    tu_fill(bias, nbias, -2.0f, 2.0f);
    for (int h = 0; h < d.heads; h++) scale[h] = d.version == 2 ? tu_uniform(1.0f, 40.0f) : tu_uniform(0.1f, 0.3f);
    tu_fill(g, C, 0.5f, 1.5f);
    tu_fill(be, C, -0.5f, 0.5f);
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, d.heads * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_g, g, C * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_be, be, C * 4, cudaMemcpyHostToDevice));
    const swin_ln_w ln = {g, be};
    for (int dt = SWIN_DT_F16; dt <= SWIN_DT_BF16; dt++) {
        tu_fill(img, nimg, -2.0f, 3.0f);   /* a mean away from 0, so that the norm has work */
        tu_fill(w, nw, -1.0f / sqrtf((float)C), 1.0f / sqrtf((float)C));
        tu_fill(b, 3 * C, -0.5f, 0.5f);
        tu_round_to(img, nimg, dt), tu_round_to(w, nw, dt), tu_round_to(b, 3 * C, dt);
        swin_ln_shift_partition_cpu(win, img, v1 ? &ln : NULL, &d);
        tu_round_to(win, nx, dt);
        const double refmax = reference(ref, qkv, win, w, c->has_bias ? b : NULL, bias, scale, &d, dt);
        upload_dt(d_img, img, nimg, dt, himg);
        upload_dt(d_w, w, nw, dt, hbuf);
        upload_dt(d_b, b, 3 * C, dt, hbuf);
        CUDA_OK(cudaMemset(d_out, 0xFF, nx * 2));   /* NaN */
        CUDA_OK(cudaMemset(d_pair, 0xFF, nx * 2));
        CUDA_OK(cudaMemset(d_win, 0xFF, nx * 2));
        const float *lw = v1 ? d_g : NULL, *lb = v1 ? d_be : NULL;
        const void *bb = c->has_bias ? d_b : NULL;
        swin_status s1 = swin_ln_window_attention_qkv_cuda(d_out, d_img, lw, lb, d_w, bb, d_bias, d_scale, &d,
                                                           (swin_dtype)dt, NULL, st);
        swin_status s2 = swin_ln_shift_partition_cuda(d_win, d_img, lw, lb, &d, NULL, (swin_dtype)dt, st);
        swin_status s3 = s2 == SWIN_OK ? swin_window_attention_qkv_cuda(d_pair, d_win, d_w, bb, d_bias, d_scale, &d,
                                                                        (swin_dtype)dt, NULL, st)
                                       : s2;
        cudaError_t ce = cudaStreamSynchronize(st);
        char name[160];
        case_name(name, sizeof name, "gather: ", c, &d, dt);
        if (!CHECK(s1 == SWIN_OK && s3 == SWIN_OK && ce == cudaSuccess, "%s: %s / %s", name, swin_last_error(),
                   cudaGetErrorString(ce)))
            continue;
        CUDA_OK(cudaMemcpy(hout, d_out, nx * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(hpair, d_pair, nx * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(himg2, d_img, nimg * 2, cudaMemcpyDeviceToHost));
        tu_from_dtype(got, hout, nx, dt);
        size_t differ = 0;
        for (size_t i = 0; i < nx; i++) differ += memcmp(hout + 2 * i, hpair + 2 * i, 2) != 0;
        const double err = tu_max_abs_diff(got, ref, nx) / (refmax > 0 ? refmax : 1.0);   /* NaN: fails below */
        const int ok = err <= attn_dt_tol[dt] && differ == 0 && memcmp(himg, himg2, nimg * 2) == 0;
        printf("%-74s err %.2e (tol %.1e), %zu of %zu differ from the two kernels %s\n", name, err, attn_dt_tol[dt], differ,
               nx, ok ? "ok" : "FAIL");
        CHECK(err <= attn_dt_tol[dt], "%s: err %.3e > %.1e", name, err, attn_dt_tol[dt]);
        CHECK(differ == 0, "%s: %zu of %zu values differ from swin_ln_shift_partition_cuda + the kernel", name, differ,
              nx);
        CHECK(memcmp(himg, himg2, nimg * 2) == 0, "%s: the image changed", name);
        n_runs++;
    }
    cudaFree(d_img), cudaFree(d_win), cudaFree(d_w), cudaFree(d_b), cudaFree(d_out), cudaFree(d_pair);
    cudaFree(d_bias), cudaFree(d_scale), cudaFree(d_g), cudaFree(d_be);
    free(img), free(win), free(w), free(b), free(qkv), free(ref), free(got), free(bias), free(scale), free(g), free(be);
    free(hbuf), free(hout), free(hpair), free(himg), free(himg2);
}

/* the E4M3 copy: run without it and quantise the output with swin_quantize_fp8_cuda; then with the
 * copy, keep16 1 and 0: the copy equals those bytes, the 16-bit output is the same with keep16 and
 * untouched (the poison) without */
static void q8_case(cudaStream_t st) {
    const attn_case c = {56, 56, 7, 7, 3, 3, 1, 3, 2, 1, 1};
    const swin_dims d = attn_case_dims(&c);
    const size_t nx = (size_t)d.B * swin_dims_nw(&d) * swin_dims_n(&d) * d.C, nw = (size_t)3 * d.C * d.C;
    const size_t nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * d.heads;
    const float inv = 500.0f;   /* 1 / scale; the saturated (+-448) bytes are counted and printed */
    float *f = malloc((nx > nw ? nx : nw) * 4), scale[4];
    uint16_t *h = malloc(nx * 2);
    unsigned char *out1 = malloc(nx * 2), *out2 = malloc(nx * 2), *ref = malloc(nx), *got = malloc(nx);
    void *d_x, *d_w, *d_out;
    float *d_bias, *d_scale;
    unsigned char *d_q, *d_ref;
    float *table = malloc(nbias * 4);
    tu_seed(9001);
    CUDA_OK(cudaMalloc(&d_x, nx * 2));
    CUDA_OK(cudaMalloc(&d_w, nw * 2));
    CUDA_OK(cudaMalloc(&d_out, nx * 2));
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, sizeof scale));
    CUDA_OK(cudaMalloc((void **)&d_q, nx));
    CUDA_OK(cudaMalloc((void **)&d_ref, nx));
    tu_fill(table, nbias, -2.0f, 2.0f);
    for (int i = 0; i < d.heads; i++) scale[i] = tu_uniform(0.1f, 0.3f);
    CUDA_OK(cudaMemcpy(d_bias, table, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, sizeof scale, cudaMemcpyHostToDevice));
    upload_f16(d_x, nx, -1.0f, 1.0f, f, h);
    upload_f16(d_w, nw, -0.1f, 0.1f, f, h);
    int ok = 1;
    for (int pass = 0; pass < 3 && ok; pass++) {   /* no copy, copy + 16-bit, copy only */
        swin_q8_dst q = {d_q, inv, pass == 1};
        CUDA_OK(cudaMemset(d_out, 0xFF, nx * 2));
        CUDA_OK(cudaMemset(d_q, 0xFF, nx));
        swin_status s = swin_window_attention_qkv_cuda(d_out, d_x, d_w, NULL, d_bias, d_scale, &d, SWIN_DT_F16,
                                                       pass ? &q : NULL, st);
        cudaError_t ce = cudaStreamSynchronize(st);
        ok = CHECK(s == SWIN_OK && ce == cudaSuccess, "q8 pass %d: %s / %s", pass, swin_last_error(),
                   cudaGetErrorString(ce));
        if (!ok) break;
        if (pass == 0) {
            CUDA_OK(cudaMemcpy(out1, d_out, nx * 2, cudaMemcpyDeviceToHost));
            s = swin_quantize_fp8_cuda(d_ref, d_out, nx, inv, SWIN_DT_F16, st);
            ce = cudaStreamSynchronize(st);
            ok = CHECK(s == SWIN_OK && ce == cudaSuccess, "q8: quantize: %s", swin_last_error());
            CUDA_OK(cudaMemcpy(ref, d_ref, nx, cudaMemcpyDeviceToHost));
            continue;
        }
        CUDA_OK(cudaMemcpy(got, d_q, nx, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(out2, d_out, nx * 2, cudaMemcpyDeviceToHost));
        size_t bad = 0, diff = 0, sat = 0;
        for (size_t i = 0; i < nx; i++) bad += got[i] != ref[i], sat += (ref[i] & 0x7F) == 0x7E;
        for (size_t i = 0; i < nx * 2; i++) diff += pass == 1 ? out2[i] != out1[i] : out2[i] != 0xFF;
        ok &= CHECK(bad == 0, "q8 keep16 %d: %zu of %zu E4M3 bytes differ from the quantising pass", pass == 1, bad, nx);
        ok &= CHECK(diff == 0, "q8 keep16 %d: %zu bytes of the 16-bit output %s", pass == 1, diff,
                    pass == 1 ? "differ from the run without the copy" : "written (expected none)");
        if (pass == 2) printf("q8 copy (keep16 1 and 0) ok (%zu of %zu saturated)\n", sat, nx);
    }
    cudaFree(d_x), cudaFree(d_w), cudaFree(d_out), cudaFree(d_bias), cudaFree(d_scale), cudaFree(d_q), cudaFree(d_ref);
    free(f), free(h), free(out1), free(out2), free(ref), free(got), free(table);
}

/* refused with a message and SWIN_ERR_UNSUPPORTED / SWIN_ERR_ARGUMENT, supports() agreeing */
static void test_arguments(cudaStream_t st) {
    void *p;
    CUDA_OK(cudaMalloc(&p, 1 << 20));
    const attn_case base = {14, 14, 7, 7, 3, 3, 1, 3, 1, 1, 0};
    struct {
        const char *what;
        swin_status want;
        int field;   /* 1 C 768, 2 head_dim 16, 3 fp32, 4 window 6x7, 5 out == x, 6 NULL w, 7 window 9x9,
                        8 w unaligned */
    } t[] = {
        {"C 768", SWIN_ERR_UNSUPPORTED, 1},     {"head_dim 16", SWIN_ERR_UNSUPPORTED, 2},
        {"fp32 data", SWIN_ERR_UNSUPPORTED, 3}, {"window 6x7 (42 tokens)", SWIN_ERR_UNSUPPORTED, 4},
        {"window 9x9 (81 tokens)", SWIN_ERR_UNSUPPORTED, 7},
        {"out overlaps x", SWIN_ERR_ARGUMENT, 5}, {"NULL w", SWIN_ERR_ARGUMENT, 6},
        {"w not 16-byte aligned", SWIN_ERR_ARGUMENT, 8},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        swin_dims d = attn_case_dims(&base);
        swin_dtype dt = SWIN_DT_F16;
        void *out = (char *)p + (1 << 19), *x = p, *w = p;
        if (t[i].field == 1) d.C = 768, d.heads = 24;
        if (t[i].field == 2) d.head_dim = 16, d.heads = 6;
        if (t[i].field == 3) dt = SWIN_DT_F32;
        if (t[i].field == 4) d.win_h = 6, d.shift_h = 0, d.shift_w = 0, d.res_h = d.hp = 12;
        if (t[i].field == 7) d.win_h = d.win_w = 9, d.res_h = d.res_w = d.hp = d.wp = 18, d.shift_h = d.shift_w = 4;
        if (t[i].field == 5) out = (char *)p + 64;
        if (t[i].field == 6) w = NULL;
        if (t[i].field == 8) w = (char *)p + 8;
        const int sup = swin_window_attention_qkv_supports(&d, dt);
        swin_clear_error();
        swin_status s = swin_window_attention_qkv_cuda(out, x, w, NULL, (const float *)p, (const float *)p, &d, dt,
                                                       NULL, st);
        const char *msg = swin_last_error();
        printf("refuse %-24s -> %d (%s)\n", t[i].what, (int)s, msg);
        CHECK(s == t[i].want && msg[0], "%s: status %d, want %d", t[i].what, (int)s, (int)t[i].want);
        CHECK(sup == (t[i].want != SWIN_ERR_UNSUPPORTED), "%s: supports() says %d", t[i].what, sup);
    }
    CHECK(cudaStreamSynchronize(st) == cudaSuccess, "stream after refusals");
    cudaFree(p);
}

/* one_wave(): (window, head) pairs against the CTAs resident at once. At C 192 the kernel takes
 * 80,256 bytes of shared memory, so an SM holds one or two CTAs (every GPU with 80 KB or more a
 * block; below that the width is refused and one_wave says 0): 6 pairs fit on a GPU of 6 SMs or
 * more, 384 pairs an SM never do. */
static void test_one_wave(void) {
    int dev = 0, sms = 0, optin = 0;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_OK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const swin_dims one = swin_dims_square(1, 7, 192, 6, 32, 7, 0, 1, 1e-5f);         /* 1 x 6 pairs */
    const swin_dims many = swin_dims_square(16 * sms, 14, 192, 6, 32, 7, 3, 1, 1e-5f); /* 384 an SM */
    const swin_dims wide = swin_dims_square(1, 14, 768, 24, 32, 7, 3, 1, 1e-5f);       /* unsupported */
    const int a = swin_window_attention_qkv_one_wave(&one, SWIN_DT_F16);
    const int b = swin_window_attention_qkv_one_wave(&many, SWIN_DT_BF16);
    const int c = swin_window_attention_qkv_one_wave(&wide, SWIN_DT_F16);
    const int f = swin_window_attention_qkv_one_wave(&one, SWIN_DT_F32);
    const int want_a = optin >= 80256;
    printf("one_wave: 6 pairs %d, %d pairs %d, C 768 %d, fp32 %d (%d SMs, %d bytes of shared memory a block)\n", a,
           384 * sms, b, c, f, sms, optin);
    CHECK(a == want_a && b == 0 && c == 0 && f == 0, "one_wave: %d %d %d %d, want %d 0 0 0", a, b, c, f, want_a);
    CHECK(cudaGetLastError() == cudaSuccess, "one_wave left a CUDA error");
}

// ---- timings (printed, not asserted)
/* what the timed calls need; which 0: the fused kernel, 1: the qkv GEMM and the attention kernel */
typedef struct {
    int which;
    void *out, *qkv;
    const void *x, *w, *b;
    const float *bt, *sc;
    const swin_dims *d;
    swin_gemm *g;
} timed;

static int enqueue(void *ctx, cudaStream_t st) {
    const timed *c = ctx;
    const swin_dims *d = c->d;
    if (c->which == 0) return swin_window_attention_qkv_cuda(c->out, c->x, c->w, c->b, c->bt, c->sc, d, SWIN_DT_F16, NULL, st);
    const int M = d->B * swin_dims_nw(d) * swin_dims_n(d);
    swin_status s = swin_linear_cuda(c->qkv, c->x, c->w, c->b, NULL, M, d->C, 3 * d->C, SWIN_ACT_NONE, c->g, st);
    if (s == SWIN_OK)
        s = swin_window_attention_cuda(c->out, c->qkv, c->bt, c->sc, d, SWIN_DT_F16, SWIN_ATTN_IMPL_FUSED, NULL, NULL,
                                       NULL, st);
    return s;
}

/* Swin-T's (V2: SwinV2-T's) stage `stage` (1 to 3: C 96, 192, 384) at batch B */
static void bench(int B, int version, int stage) {
    const int W = version == 2 ? 8 : 7, C = 96 << (stage - 1), heads = C / 32;
    const int res = (version == 2 ? 64 : 56) >> (stage - 1);
    swin_dims d = swin_dims_square(B, res, C, heads, 32, W, res > W ? W / 2 : 0, version, 1e-5f);
    const size_t nx = (size_t)B * res * res * C, nw = (size_t)3 * C * C;
    float *f = malloc((nx > nw ? nx : nw) * 4);
    uint16_t *h = malloc((nx > nw ? nx : nw) * 2);
    void *d_x, *d_w, *d_b, *d_out, *d_qkv, *ws;
    float *d_bias, *d_scale;
    CUDA_OK(cudaMalloc(&d_x, nx * 2));
    CUDA_OK(cudaMalloc(&d_w, nw * 2));
    CUDA_OK(cudaMalloc(&d_b, 3 * C * 2));
    CUDA_OK(cudaMalloc(&d_out, nx * 2));
    CUDA_OK(cudaMalloc(&d_qkv, nx * 3 * 2));
    const size_t wsb = 32u << 20;
    CUDA_OK(cudaMalloc(&ws, wsb));
    upload_f16(d_x, nx, -1.0f, 1.0f, f, h);
    upload_f16(d_w, nw, -0.1f, 0.1f, f, h);
    upload_f16(d_b, 3 * C, -0.5f, 0.5f, f, h);
    attn_bench_tables(W, heads, f, &d_bias, &d_scale);
    swin_gemm *g = NULL;
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));
    if (CHECK(swin_gemm_create(&g, SWIN_FP16, ws, wsb) == SWIN_OK, "swin_gemm_create: %s", swin_last_error())) {
        timed c = {0, d_out, d_qkv, d_x, d_w, d_b, d_bias, d_scale, &d, g};
        float t[2];   /* the one kernel, the qkv GEMM + attention */
        attn_time_pair(enqueue, &c, &c.which, st, t);
        printf("bench qkv+attention v%d stage %d B=%-3d fp16: one kernel %.4f ms, qkv GEMM + attention %.4f ms (%.2fx)\n",
               version, stage, B, t[0], t[1], t[1] / t[0]);
        swin_gemm_free(g);
    }
    cudaStreamDestroy(st);
    cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_out), cudaFree(d_qkv), cudaFree(d_bias);
    cudaFree(d_scale), cudaFree(ws);
    free(f), free(h);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_gpu_attention_qkv: no CUDA device, skipped\n");
        return TU_SKIP;
    }
    const char *q = getenv("SWIN_TEST_QUICK");
    const int quick = q && atoi(q) > 0;
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));
    test_arguments(st);
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        if (!quick || cases[i].quick) run_case(&cases[i], i, st), gather_case(&cases[i], i, st);
    q8_case(st);
    test_one_wave();
    printf("%d launches checked\n", n_runs);
    if (!quick) {
        static const int runs[][3] = {{64, 1, 1}, {256, 1, 1}, {256, 2, 1}, {1, 1, 1}, {1, 1, 2}, {1, 1, 3},
                                      {8, 1, 1}, {8, 1, 2}, {8, 1, 3}, {64, 1, 2}, {256, 1, 2}, {256, 1, 3}};
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) bench(runs[i][0], runs[i][1], runs[i][2]);
    }
    cudaStreamDestroy(st);
    return tu_finish("test_gpu_attention_qkv");
}
