/* test_gpu_attention.c - swin_window_attention_cuda (kernels/attention.cu) against the CPU
 * reference swin_window_attention_cpu, for every dtype and implementation (fused, unfused, and for
 * fp32 data tf32 and x3, 3xTF32).
 *
 * Run: test_gpu_attention <source dir>   (ctest -L gpu); exits 77 without a GPU.
 * SWIN_TEST_QUICK=1 runs a small subset and no timing (for compute-sanitizer memcheck); =2 the same
 * subset with one image and one head per case (every kernel variant, fewer CTAs: racecheck is slow),
 * but for the many-pairs cases, whose code path needs their many CTAs, and the fused kernels only.
 * Cases: a hand-written table (model-like shapes), then a sweep of head_dim x window (every
 * head_dim the kernels' padding and access widths treat differently: 16-byte, 8-, 4- and 2-byte
 * rows, each tile width and its edges) over V1/V2 and shifted/unshifted, with 2 heads so that heads
 * start at unaligned offsets; then non-square and padded geometries (geoms[]: non-square windows,
 * a shift along one dimension, grids padded to the window). Inputs are multiples of 1/128 in
 * [-1, 1], exact in every dtype, so one reference serves all three; then fp32 once more on inputs
 * that are not exact in TF32 (full fp32 mantissas, "f32*"), where x3 must keep fp32's tolerance and
 * TF32 (printed, not checked) must be far off, or the inputs would not test x3's tails; outputs and
 * workspaces are poisoned with NaN before each launch and guard bytes sit before and after the
 * output (a store past head_dim in the last head of the last row lands in the guard). Errors are
 * max|gpu - ref| / max|ref|, tolerances from the dtype's precision. A geometry whose shared memory
 * cannot fit the device is reported skipped, with why.
 * At the end it prints (does not assert) fused vs unfused timings for Swin-T stage shapes (CUDA
 * events, median of 20).
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fp8.h"        /* swin_e4m3_to_float, swin_fp8_qkv_scales */
#include "internal.h"   /* swin_clear_error */
#include "ops.h"
#include "testutil.h"
#include "testutil_cuda.h"

#define GUARD_BYTES 256
#define GUARD_BYTE 0xA5

typedef struct {
    int W, res, shift, version, heads, head_dim, B;
    int quick;   /* part of the SWIN_TEST_QUICK subset */
} att_case;

/* non-square and padded geometries as the models give them: {res_h, res_w, win_h, win_w, shift_h,
 * shift_w}; the padded grid is the grid rounded up to the window (the attention reads its rows) */
static const int geoms[][6] = {
    {6, 8, 6, 7, 0, 3},     /* timm, 192x256 Swin-T stage 3: window 6x7, shift along W, padded to 6x14 */
    {4, 8, 4, 4, 0, 2},     /* timm, shift along W only */
    {2, 4, 2, 4, 0, 0},     /* a non-square window */
    {16, 16, 7, 7, 3, 3},   /* 256 / window 7: padded to 21x21, shifted */
    {17, 13, 7, 7, 3, 3},   /* transformers Swinv2 66x50: padded to 21x14 */
    {9, 16, 4, 4, 2, 2},    /* padded to 12x16 */
    {3, 5, 3, 3, 0, 0},     /* padded to 3x6, one window row */
    {12, 20, 8, 8, 4, 4},   /* padded to 16x24 */
    {18, 18, 9, 9, 4, 4},   /* 81 tokens: 6 query tiles, pad keys in the tf32 kernel's second key block */
};

/* res == 2W: 4 windows per image, shift on/off; res == W: one window (shift impossible) */
static const att_case table[] = {
    {7, 14, 3, 1, 3, 32, 3, 1},    /* Swin-T-like, shifted */
    {7, 14, 0, 1, 3, 32, 1, 0},
    {7, 7, 0, 2, 32, 16, 1, 0},
    {7, 14, 3, 2, 1, 64, 3, 0},
    {8, 16, 4, 2, 3, 32, 3, 1},    /* Swin V2-T-like, shifted */
    {8, 8, 0, 1, 32, 32, 1, 0},
    {8, 16, 0, 1, 1, 128, 1, 0},
    {12, 24, 6, 1, 3, 32, 1, 1},   /* 8-warp resident, query tiles split over CTAs */
    {12, 12, 0, 2, 1, 128, 3, 0},
    {12, 24, 6, 2, 3, 16, 1, 0},
    {16, 32, 8, 1, 1, 64, 1, 0},
    {16, 16, 0, 2, 3, 128, 1, 1},  /* K/V streamed through smem on the tensor-core path */
    {16, 32, 8, 2, 3, 32, 3, 0},
    {24, 48, 12, 1, 1, 32, 1, 0},
    {24, 24, 0, 2, 3, 64, 1, 0},   /* streamed */
    {24, 48, 12, 2, 1, 128, 1, 1}, /* streamed, shifted */
    {24, 24, 0, 1, 3, 16, 3, 0},
};

/* the head_dim x window sweep: windows up to SWEEP_FULL_W get all four (version, shift) pairs;
 * the others (large windows, costly on the CPU reference) one pair per head_dim, rotating, so that
 * each head_dim still sees all four over the windows. Heads 2; shifted: res 2W (4 windows, shift
 * W/2), else res W (1 window). */
static const int sweep_hd[] = {4, 8, 12, 20, 24, 32, 48, 64, 96, 128, 160, 256};
static const int sweep_w[] = {7, 12, 16, 24};
#define SWEEP_FULL_W 16   /* windows up to this get every (version, shift) pair */
/* head_dims off the list above: odd (2-byte rows in f16/bf16, 4-byte in f32), 2 mod 4 (4-byte rows
 * in f16/bf16, 8-byte in f32), just past a tile width (17 -> 32, 33 -> 48, 129 -> 160, 161 -> 256);
 * {hd, W} with a rotating (version, shift) pair */
static const int extra[][2] = {{1, 7},  {2, 12},  {3, 7},    {6, 12},   {10, 7},   {17, 12}, {33, 7},
                               {50, 12}, {100, 7}, {129, 12}, {161, 7},  {200, 12}, {255, 7}, {3, 16},
                               {6, 24}, {17, 24}, {255, 16}, {161, 24}, {129, 24}, {45, 16}};
/* many (window, head) pairs (>= 2 per SM on a 132-SM GPU): a CTA per pair, each warp walks
 * several query tiles (Q prefetched, or reloaded after the tile when Q is read from smem); and
 * more windows than attn_head_kernel (head_dim 32, 49 to 64 tokens) has CTAs for a head, so
 * that its CTAs walk several windows through both of their buffers */
static const att_case many[] = {
    {12, 24, 6, 2, 2, 136, 40, 1},   /* Q fragments re-read from smem (width 160), shifted V2; quick */
    {12, 24, 0, 1, 2, 20, 40, 0},    /* 8-byte rows in f16, Q in registers */
    {7, 56, 3, 1, 3, 32, 8, 1},      /* Swin-T stage 1 at batch 8, shifted: 512 windows; quick */
    {8, 64, 4, 2, 4, 32, 4, 0},      /* SwinV2-T-like 8x8 windows, shifted, 256 of them, 4 heads */
};
/* quick-mode members of the sweep: {hd, W, version, shift} */
static const int quick_sweep[][4] = {{12, 7, 2, 1}, {20, 12, 1, 1}, {256, 16, 1, 1}, {160, 24, 2, 0}};
static const int quick_extra[][2] = {{3, 7}, {6, 12}};

static const char *dt_name[] = {"f32", "f16", "bf16"};
static const double dt_tol[] = {1e-5, 2e-3, 1.6e-2};
static const char *impl_name[] = {"fused", "unfused", "tf32", "x3"};
/* tf32 (fp32 data on TF32 tensor cores): on the input grid Q, K and V are exact in TF32, so the
 * one rounded operand is P, to TF32's 10 mantissa bits, fp16's: fp16's tolerance */
#define TF32_TOL 2e-3
/* SWIN_TEST_QUICK=2 (racecheck): the fused kernels only; the unfused baseline's batched GEMMs are
 * cuBLAS's own sm90 kernels, in which racecheck reports hazards of their asynchronous copies */
static int g_fused_only;

static swin_dims case_dims(const att_case *c) {
    return swin_dims_square(c->B, c->res, c->heads * c->head_dim, c->heads, c->head_dim, c->W, c->shift,
                            c->version, 1e-5f);
}

/* the dims of row g of geoms[] (c gives B, heads, head_dim, version) */
static swin_dims geom_dims(const att_case *c, const int *g) {
    swin_dims d = case_dims(c);
    d.res_h = g[0], d.res_w = g[1], d.win_h = g[2], d.win_w = g[3], d.shift_h = g[4], d.shift_w = g[5];
    d.hp = (g[0] + g[2] - 1) / g[2] * g[2];
    d.wp = (g[1] + g[3] - 1) / g[3] * g[3];
    return d;
}

/* random bias table and per-head scales as a V1 / V2 model would have them */
static void fill_params(float *bias, float *scale, const swin_dims *d) {
    int nb = (2 * d->win_h - 1) * (2 * d->win_w - 1);
    tu_fill(bias, (size_t)nb * d->heads, -2.0f, 2.0f);
    for (int h = 0; h < d->heads; h++)
        scale[h] = d->version == 2 ? tu_uniform(1.0f, 40.0f) : tu_uniform(0.1f, 0.3f);
}

// ---- one case: every dtype x implementation against the reference
static int n_runs, n_skipped;

/* q, k, v: multiples of 1/128 in [-1, 1] (exact in f32, f16 and bf16) */
static void fill_grid(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = roundf(tu_uniform(-1.0f, 1.0f) * 128.0f) / 128.0f;
}

/* the TF32 kernels (and their x3 form) take this geometry: attention.cu's launch_tf32 */
static int tf32_kernel_runs(const swin_dims *d) {
    const int hd = d->head_dim;
    return swin_dims_n(d) <= 144 && (hd == 16 || hd == 32 || hd == 48 || hd == 64);
}

/* the launch failed for want of shared memory on this device: reported, not a failure */
static int smem_skip(swin_status s) {
    return s == SWIN_ERR_UNSUPPORTED && strstr(swin_last_error(), "shared memory") != NULL;
}

/* case c on its square geometry, or on *geom (c then labels it: W, res, shift of the H side) */
static void run_case(const att_case *c, const swin_dims *geom, int ci, cublasHandle_t cub, cudaStream_t st) {
    swin_dims d = geom ? *geom : case_dims(c);
    int N = swin_dims_n(&d), nwin = d.B * swin_dims_nw(&d);
    size_t nqkv = (size_t)nwin * N * 3 * d.C, nout = (size_t)nwin * N * d.C;
    size_t nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * c->heads;
    float *qkv = malloc(nqkv * 4), *qr = malloc(nqkv * 4), *ref = malloc(nout * 4), *got = malloc(nout * 4);
    float *bias = malloc(nbias * 4), *scale = malloc(c->heads * 4);
    unsigned char *hbuf = malloc(nqkv * 4 + 2 * GUARD_BYTES);
    tu_seed(1000 + ci);
    fill_grid(qkv, nqkv);
    fill_params(bias, scale, &d);

    float *d_bias, *d_scale;
    void *d_qkv, *d_buf;
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, c->heads * 4));
    CUDA_OK(cudaMalloc(&d_qkv, nqkv * 4));
    CUDA_OK(cudaMalloc(&d_buf, nout * 4 + 2 * GUARD_BYTES));   /* guard | out | guard */
    void *d_out = (char *)d_buf + GUARD_BYTES;                  /* 256-byte aligned like the buffer */
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, c->heads * 4, cudaMemcpyHostToDevice));

    double refmax = 0;
    int ref_of_qkv = 0;   /* ref holds the reference of the unrounded inputs */
    /* passes: f32, f16, bf16 on the grid, then f32 on full-mantissa inputs (fine; not under racecheck,
     * SWIN_TEST_QUICK=2: the same kernels on other data) */
    for (int pass = 0; pass < (g_fused_only ? 3 : 4); pass++) {
        const int dt = pass < 3 ? pass : SWIN_DT_F32, fine = pass == 3;
        size_t ds = swin_dtype_size((swin_dtype)dt);
        if (fine) {
            tu_fill(qr, nqkv, -1.0f, 1.0f);
        } else {
            memcpy(qr, qkv, nqkv * 4);
            tu_round_to(qr, nqkv, dt);
        }
        int exact = !fine && memcmp(qr, qkv, nqkv * 4) == 0;   /* always, on the grid: one reference */
        if (!(exact && ref_of_qkv)) {
            swin_window_attention_cpu(ref, qr, bias, scale, &d);
            refmax = tu_max_abs(ref, nout);
            ref_of_qkv = exact;
        }
        tu_to_dtype(hbuf, qr, nqkv, dt);
        CUDA_OK(cudaMemcpy(d_qkv, hbuf, nqkv * ds, cudaMemcpyHostToDevice));
        int impls[4], n_impl = 0;
        impls[n_impl++] = SWIN_ATTN_IMPL_FUSED;
        if (!g_fused_only) impls[n_impl++] = SWIN_ATTN_IMPL_UNFUSED;
        /* x3 and tf32 where their kernels take the geometry; elsewhere they run the fused fp32 kernel,
         * which the fine pass and racecheck (slow on that kernel) need not repeat */
        if (dt == SWIN_DT_F32 && (tf32_kernel_runs(&d) || !(fine || g_fused_only)))
            impls[n_impl++] = SWIN_ATTN_IMPL_X3, impls[n_impl++] = SWIN_ATTN_IMPL_TF32;
        double err_x3 = -1;   /* fine: x3's error, against TF32's */
        for (int ii = 0; ii < n_impl; ii++) {
            const int impl = impls[ii];
            /* TF32 on fine inputs rounds Q, K and V too: printed, and checked only to be far off x3's */
            const int checked = !(fine && impl == SWIN_ATTN_IMPL_TF32);
            const double tol = impl == SWIN_ATTN_IMPL_TF32 ? TF32_TOL : dt_tol[dt];
            size_t wsb = swin_window_attention_workspace(&d, (swin_dtype)dt, (swin_attn_impl)impl);
            void *d_ws = NULL;
            CHECK((impl == SWIN_ATTN_IMPL_UNFUSED) == (wsb != 0), "workspace %zu bytes for %s", wsb, impl_name[impl]);
            if (wsb) {
                CUDA_OK(cudaMalloc(&d_ws, wsb));
                CUDA_OK(cudaMemset(d_ws, 0xFF, wsb));   // NaN in every dtype
            }
            CUDA_OK(cudaMemset(d_buf, GUARD_BYTE, GUARD_BYTES));
            CUDA_OK(cudaMemset(d_out, 0xFF, nout * ds));
            CUDA_OK(cudaMemset((char *)d_out + nout * ds, GUARD_BYTE, GUARD_BYTES));
            swin_status s = swin_window_attention_cuda(d_out, d_qkv, d_bias, d_scale, &d, (swin_dtype)dt,
                                                       (swin_attn_impl)impl, NULL, d_ws,
                                                       impl == SWIN_ATTN_IMPL_UNFUSED ? (void *)cub : NULL, st);
            cudaError_t ce = cudaStreamSynchronize(st);
            CHECK(ce == cudaSuccess, "%s", cudaGetErrorString(ce));
            if (smem_skip(s)) {
                printf("W=%-2d res=%-2d shift=%-2d v%d heads=%-2d hd=%-3d B=%-2d %-4s %-7s skipped: %s\n", c->W, c->res,
                       c->shift, c->version, c->heads, c->head_dim, c->B, dt_name[dt], impl_name[impl],
                       swin_last_error());
                n_skipped++;
                if (d_ws) CUDA_OK(cudaFree(d_ws));
                continue;
            }
            CHECK(s == SWIN_OK, "status %d: %s", (int)s, swin_last_error());
            CUDA_OK(cudaMemcpy(hbuf, d_buf, nout * ds + 2 * GUARD_BYTES, cudaMemcpyDeviceToHost));
            tu_from_dtype(got, hbuf + GUARD_BYTES, nout, dt);
            int guard_ok = 1;
            for (int i = 0; i < GUARD_BYTES; i++)
                guard_ok &= hbuf[i] == GUARD_BYTE && hbuf[GUARD_BYTES + nout * ds + i] == GUARD_BYTE;
            double err = tu_max_abs_diff(got, ref, nout) / (refmax > 0 ? refmax : 1.0);
            if (fine && impl == SWIN_ATTN_IMPL_X3) err_x3 = err;
            /* the inputs test x3's tails: TF32 (where its kernel runs) ten times x3's error or more (a
             * NaN fails: comparisons with it are false) */
            const int tails_tested = !(fine && impl == SWIN_ATTN_IMPL_TF32 && tf32_kernel_runs(&d)) ||
                                     (err_x3 >= 0 && err > 10 * err_x3);
            int ok = (!checked || err <= tol) && tails_tested && guard_ok && s == SWIN_OK;
            printf("W=%-2d res=%-2d shift=%-2d v%d heads=%-2d hd=%-3d B=%-2d %-4s %-7s err %.2e (tol %.1e)%s %s\n",
                   c->W, c->res, c->shift, c->version, c->heads, c->head_dim, c->B, fine ? "f32*" : dt_name[dt],
                   impl_name[impl], err, checked ? tol : 0.0, guard_ok ? "" : " GUARD OVERWRITTEN",
                   ok ? (checked ? "ok" : "ok (not checked: TF32 rounds the inputs)") : "FAIL");
            CHECK(!checked || err <= tol, "W=%d hd=%d v%d shift=%d (grid %dx%d, window %dx%d) %s %s: err %.3e > %.1e",
                  c->W, c->head_dim, c->version, c->shift, d.res_h, d.res_w, d.win_h, d.win_w,
                  fine ? "f32*" : dt_name[dt], impl_name[impl], err, tol);
            CHECK(tails_tested, "W=%d hd=%d v%d (window %dx%d) f32*: TF32's error %.3e is not far above x3's %.3e: "
                  "the inputs do not test x3's tails", c->W, c->head_dim, c->version, d.win_h, d.win_w, err, err_x3);
            CHECK(guard_ok, "W=%d hd=%d %s %s: write outside the output", c->W, c->head_dim, dt_name[dt],
                  impl_name[impl]);
            n_runs++;
            if (d_ws) CUDA_OK(cudaFree(d_ws));
        }
    }
    cudaFree(d_bias);
    cudaFree(d_scale);
    cudaFree(d_qkv);
    cudaFree(d_buf);
    free(qkv), free(qr), free(ref), free(got), free(bias), free(scale), free(hbuf);
}

/* a sweep case: 2 heads, B 1; combo 0..3 = (v1, v2) x (unshifted, shifted) */
static att_case sweep_case(int hd, int W, int combo, int quick) {
    int shifted = combo >> 1;
    att_case c = {W, shifted ? 2 * W : W, shifted ? W / 2 : 0, 1 + (combo & 1), 2, hd, 1, quick};
    return c;
}

/* the whole list: table, sweep, extra head_dims, many pairs; returns the count (*out malloc'd) */
static int build_cases(att_case **out) {
    int cap = (int)(sizeof table / sizeof table[0] + 4 * (sizeof sweep_hd / sizeof sweep_hd[0]) *
                                                          (sizeof sweep_w / sizeof sweep_w[0]) +
                    sizeof extra / sizeof extra[0] + sizeof many / sizeof many[0]);
    att_case *c = malloc((size_t)cap * sizeof *c);
    int n = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) c[n++] = table[i];
    for (int wi = 0; wi < (int)(sizeof sweep_w / sizeof sweep_w[0]); wi++)
        for (int hi = 0; hi < (int)(sizeof sweep_hd / sizeof sweep_hd[0]); hi++)
            for (int combo = 0; combo < 4; combo++) {
                int W = sweep_w[wi], hd = sweep_hd[hi];
                if (W > SWEEP_FULL_W && combo != (hi + wi) % 4) continue;
                att_case k = sweep_case(hd, W, combo, 0);
                for (size_t q = 0; q < sizeof quick_sweep / sizeof quick_sweep[0]; q++)
                    k.quick |= quick_sweep[q][0] == hd && quick_sweep[q][1] == W && quick_sweep[q][2] == k.version &&
                               (quick_sweep[q][3] != 0) == (k.shift != 0);
                c[n++] = k;
            }
    for (int i = 0; i < (int)(sizeof extra / sizeof extra[0]); i++) {
        int quick = 0;
        for (size_t q = 0; q < sizeof quick_extra / sizeof quick_extra[0]; q++)
            quick |= quick_extra[q][0] == extra[i][0] && quick_extra[q][1] == extra[i][1];
        c[n++] = sweep_case(extra[i][0], extra[i][1], i % 4, quick);
    }
    for (size_t i = 0; i < sizeof many / sizeof many[0]; i++) c[n++] = many[i];
    *out = c;
    return n;
}

// ---- the E4M3 copy (swin_q8_dst: proj's FP8 input)

/* Case c in fp16 and bf16, fused and unfused: run without the copy and quantise the output with
 * swin_quantize_fp8_cuda; then run with the copy, keep16 1 and 0, from the same inputs. The copy
 * must equal those bytes; the output must be the same with keep16, and without it untouched (still
 * the poison) by the fused kernels, which write only the copy then (the unfused path writes the
 * output, then quantises it). inv 500 saturates the largest outputs (|out| <= 1) at 448. */
static void q8_case(const att_case *c, int ci, cublasHandle_t cub, cudaStream_t st) {
    swin_dims d = case_dims(c);
    const int N = swin_dims_n(&d), nwin = d.B * swin_dims_nw(&d);
    const size_t nqkv = (size_t)nwin * N * 3 * d.C, nout = (size_t)nwin * N * d.C;
    const size_t nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * c->heads;
    const float inv = 500.0f;
    float *qkv = malloc(nqkv * 4), *bias = malloc(nbias * 4), *scale = malloc(c->heads * 4);
    unsigned char *hq = malloc(nqkv * 2), *out1 = malloc(nout * 2), *out2 = malloc(nout * 2);
    unsigned char *ref = malloc(nout), *got = malloc(nout);
    tu_seed(5000 + ci);
    fill_grid(qkv, nqkv);
    fill_params(bias, scale, &d);
    void *d_qkv, *d_out, *d_ws;
    float *d_bias, *d_scale;
    unsigned char *d_q, *d_ref;
    const size_t wsb = swin_window_attention_workspace(&d, SWIN_DT_F16, SWIN_ATTN_IMPL_UNFUSED);
    CUDA_OK(cudaMalloc(&d_qkv, nqkv * 2));
    CUDA_OK(cudaMalloc(&d_out, nout * 2));
    CUDA_OK(cudaMalloc(&d_ws, wsb));
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, c->heads * 4));
    CUDA_OK(cudaMalloc((void **)&d_q, nout));
    CUDA_OK(cudaMalloc((void **)&d_ref, nout));
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, c->heads * 4, cudaMemcpyHostToDevice));
    for (int dt = SWIN_DT_F16; dt <= SWIN_DT_BF16; dt++) {
        tu_to_dtype(hq, qkv, nqkv, dt);   /* exact: the inputs are on the 1/128 grid */
        CUDA_OK(cudaMemcpy(d_qkv, hq, nqkv * 2, cudaMemcpyHostToDevice));
        for (int impl = SWIN_ATTN_IMPL_FUSED; impl <= SWIN_ATTN_IMPL_UNFUSED; impl++) {
            char name[160];
            snprintf(name, sizeof name, "q8 W=%d res=%d shift=%d v%d heads=%d hd=%d %s %s", c->W, c->res, c->shift,
                     c->version, c->heads, c->head_dim, dt_name[dt], impl_name[impl]);
            int ok = 1;
            for (int pass = 0; pass < 3 && ok; pass++) {   /* no copy, copy + 16-bit, copy only */
                swin_q8_dst q = {d_q, inv, pass == 1};
                CUDA_OK(cudaMemset(d_out, 0xFF, nout * 2));
                CUDA_OK(cudaMemset(d_q, 0xFF, nout));
                CUDA_OK(cudaMemset(d_ws, 0xFF, wsb));
                swin_status s = swin_window_attention_cuda(d_out, d_qkv, d_bias, d_scale, &d, (swin_dtype)dt,
                                                           (swin_attn_impl)impl, pass ? &q : NULL, d_ws, cub, st);
                cudaError_t ce = cudaStreamSynchronize(st);
                ok = CHECK(s == SWIN_OK && ce == cudaSuccess, "%s pass %d: %s / %s", name, pass, swin_last_error(),
                           cudaGetErrorString(ce));
                if (!ok) break;
                if (pass == 0) {
                    CUDA_OK(cudaMemcpy(out1, d_out, nout * 2, cudaMemcpyDeviceToHost));
                    s = swin_quantize_fp8_cuda(d_ref, d_out, nout, inv, (swin_dtype)dt, st);
                    ce = cudaStreamSynchronize(st);
                    ok = CHECK(s == SWIN_OK && ce == cudaSuccess, "%s: quantize: %s", name, swin_last_error());
                    CUDA_OK(cudaMemcpy(ref, d_ref, nout, cudaMemcpyDeviceToHost));
                    continue;
                }
                CUDA_OK(cudaMemcpy(got, d_q, nout, cudaMemcpyDeviceToHost));
                CUDA_OK(cudaMemcpy(out2, d_out, nout * 2, cudaMemcpyDeviceToHost));
                size_t bad = 0, first = 0, diff = 0, sat = 0;
                for (size_t i = 0; i < nout; i++) {
                    if (got[i] != ref[i] && !bad++) first = i;
                    sat += (ref[i] & 0x7F) == 0x7E;   /* +-448 */
                }
                ok &= CHECK(bad == 0, "%s keep16 %d: %zu of %zu E4M3 bytes differ from the quantising pass (first "
                            "at %zu: 0x%02x, expected 0x%02x)", name, pass == 1, bad, nout, first, got[first],
                            ref[first]);
                const int written = pass == 1 || impl == SWIN_ATTN_IMPL_UNFUSED;
                for (size_t i = 0; i < nout * 2; i++) diff += written ? out2[i] != out1[i] : out2[i] != 0xFF;
                ok &= CHECK(diff == 0, "%s keep16 %d: %zu bytes of the 16-bit output %s", name, pass == 1, diff,
                            written ? "differ from the run without the copy" : "written (expected none)");
                if (pass == 2) printf("%-60s ok (%zu of %zu saturated)\n", name, sat, nout);
            }
        }
    }
    cudaFree(d_qkv), cudaFree(d_out), cudaFree(d_ws), cudaFree(d_bias), cudaFree(d_scale), cudaFree(d_q);
    cudaFree(d_ref);
    free(qkv), free(bias), free(scale), free(hq), free(out1), free(out2), free(ref), free(got);
}

/* q, k, v in E4M3 (swin_window_attention_e4m3_cuda, FP8's qkv GEMM writing them so; V1) against the
 * host's attention (swin_window_attention_cpu) of what the kernel is given: q and k the bytes'
 * values, v fp16(e4m3 * deq[channel]) as the kernel dequantises it (the exact product of an E4M3
 * value and an fp16 scale, rounded once), scale[h] f[h] with f[h] = deq[h hd] deq[C + h hd]
 * (src/fp8.h swin_fp8_qkv_scales, which makes deq here from random calibrated scales).
 * Tolerance: fp16's (dt_tol) plus what the FP8 MMAs' accumulator costs. On Hopper (and Ada) it
 * keeps 13 mantissa bits (truncating; public measurements, e.g. SageAttention2, DeepSeek-V3), so a
 * score S = f scale (q . k) + bias in the log2 domain is off by at most 2^-12 (|f scale| sum_c |q_c
 * k_c| + |bias|) log2(e) (two truncations, of the sum and of the bias as its start), Delta over
 * the case; scores off by at most Delta move each softmax weight by a factor within 2^(+-Delta),
 * so an output by at most (2^(2 Delta) - 1) max |v|. q and k are integers in [-15, 15] (exact in
 * E4M3; their products and sums exact in 13 bits), so that Delta stays small, and f such that the
 * scores span a few units (the softmax far from flat and from one-hot). The E4M3 copy for proj:
 * within the output's tolerance plus E4M3's half step (2^-4 of the value, 2^-10 below 2^-6) of the
 * reference times its scale. V2 and, where the environment switches the head kernel off
 * (SWIN_ATTN_HEAD=0), V1 must say they are unsupported. */
static void e4m3_case(const att_case *c, const swin_dims *geom, int ci, cudaStream_t st) {
    swin_dims d = geom ? *geom : case_dims(c);
    const int N = swin_dims_n(&d), nwin = d.B * swin_dims_nw(&d), C3 = 3 * d.C, hd = c->head_dim;
    const size_t nqkv = (size_t)nwin * N * C3, nout = (size_t)nwin * N * d.C;
    const size_t nbias = (size_t)(2 * d.win_h - 1) * (2 * d.win_w - 1) * c->heads;
    char name[160];
    snprintf(name, sizeof name, "e4m3 q,k,v W=%dx%d res=%dx%d shift=%d v%d heads=%d hd=%d B=%d", d.win_h, d.win_w,
             d.res_h, d.res_w, d.shift_h, c->version, c->heads, c->head_dim, d.B);
    const char *hm = getenv("SWIN_ATTN_HEAD");
    const int want = c->version == 1 && !(hm && !strcmp(hm, "0"));
    if (!CHECK(swin_window_attention_e4m3_supports(&d, SWIN_DT_F16) == want, "%s: supports says %d, expected %d",
               name, !want, want) || !want) {
        if (!want) printf("%-60s not run: %s\n", name, c->version == 2 ? "V2 is refused" : "the head kernel is off");
        return;
    }
    uint8_t *q8 = malloc(nqkv), *ob = malloc(nout * 2), *cb = malloc(nout);
    float *so = malloc(C3 * sizeof(float)), *deq = malloc(C3 * sizeof(float)), *x = malloc(nqkv * sizeof(float));
    float *ref = malloc(nout * sizeof(float)), *bias = malloc(nbias * 4), *scale = malloc(c->heads * 4);
    float *scale_f = malloc(c->heads * 4);
    tu_seed(7000 + ci);
    for (int i = 0; i < C3; i++) so[i] = i < d.C ? tu_uniform(0.05f, 0.5f) : tu_uniform(0.002f, 0.02f);
    swin_fp8_qkv_scales(so, d.C, hd, deq);
    for (size_t i = 0; i < nqkv; i++) {
        const int ch = (int)(i % C3);
        uint8_t b;
        if (ch < 2 * d.C) {
            b = swin_e4m3_from_float(floorf(tu_uniform(-15.0f, 16.0f)));
        } else {
            do b = (uint8_t)(tu_uniform(0.0f, 256.0f)); while ((b & 0x7F) == 0x7F || fabsf(swin_e4m3_to_float(b)) > 64.0f);
        }
        q8[i] = b;
        x[i] = ch < 2 * d.C ? swin_e4m3_to_float(b) : tu_f16_to_f32(tu_f32_to_f16(swin_e4m3_to_float(b) * deq[ch]));
    }
    fill_params(bias, scale, &d);
    double fs_max = 0, bias_max = tu_max_abs(bias, nbias), abs_dot = 0;
    for (int k = 0; k < c->heads; k++) {
        scale_f[k] = scale[k] * (deq[k * hd] * deq[d.C + k * hd]);
        if (scale_f[k] > fs_max) fs_max = scale_f[k];
    }
    for (size_t r = 0; r < (size_t)nwin * N; r++)   /* the largest sum_c |q_c| |k_c| of any row and key of a window */
        for (int k = 0; k < c->heads; k++)
            for (int t = 0; t < N; t++) {
                const float *qr = x + r * C3 + k * hd, *kr = x + ((r / N) * N + t) * C3 + d.C + k * hd;
                double s = 0;
                for (int e = 0; e < hd; e++) s += fabs((double)qr[e] * kr[e]);
                if (s > abs_dot) abs_dot = s;
            }
    const double delta = ldexp(1.0, -12) * (fs_max * abs_dot + bias_max) * 1.4426950408889634;
    swin_window_attention_cpu(ref, x, bias, scale_f, &d);
    double vmax = 0, refmax = tu_max_abs(ref, nout);
    for (size_t i = 0; i < nqkv; i++)
        if ((int)(i % C3) >= 2 * d.C && fabs(x[i]) > vmax) vmax = fabs(x[i]);
    const double tol = dt_tol[SWIN_DT_F16] + (exp2(2.0 * delta) - 1.0) * vmax / refmax;
    uint8_t *d_q8, *d_ob, *d_cb;
    float *d_deq, *d_bias, *d_scale;
    CUDA_OK(cudaMalloc((void **)&d_q8, nqkv));
    CUDA_OK(cudaMalloc((void **)&d_ob, nout * 2));
    CUDA_OK(cudaMalloc((void **)&d_cb, nout));
    CUDA_OK(cudaMalloc((void **)&d_deq, C3 * 4));
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, c->heads * 4));
    CUDA_OK(cudaMemcpy(d_q8, q8, nqkv, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_deq, deq, C3 * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, c->heads * 4, cudaMemcpyHostToDevice));
    int ok = 1;
    double err = 0;
    for (int pass = 0; pass < 2 && ok; pass++) {   /* without, then with the E4M3 copy of the output */
        const float qs = 37.0f;
        swin_q8_dst qb = {d_cb, qs, 1};
        CUDA_OK(cudaMemset(d_ob, 0xEE, nout * 2));
        CUDA_OK(cudaMemset(d_cb, 0x7F, nout));
        swin_status sb = swin_window_attention_e4m3_cuda(d_ob, d_q8, d_deq, d_bias, d_scale, &d, pass ? &qb : NULL, st);
        cudaError_t ce = cudaStreamSynchronize(st);
        ok = CHECK(sb == SWIN_OK && ce == cudaSuccess, "%s: %s / %s", name, swin_last_error(), cudaGetErrorString(ce));
        if (!ok) break;
        CUDA_OK(cudaMemcpy(ob, d_ob, nout * 2, cudaMemcpyDeviceToHost));
        size_t nan = 0;
        double e = 0;
        for (size_t i = 0; i < nout; i++) {
            const float g = tu_f16_to_f32((uint16_t)(ob[2 * i] | ob[2 * i + 1] << 8));
            nan += isnan(g);
            if (fabs((double)g - ref[i]) > e) e = fabs((double)g - ref[i]);
        }
        e /= refmax;
        if (e > err) err = e;
        ok &= CHECK(e <= tol && nan == 0, "%s pass %d: err %.3e > tol %.3e (Delta %.2e), %zu NaN", name, pass, e, tol,
                    delta, nan);
        if (pass) {
            CUDA_OK(cudaMemcpy(cb, d_cb, nout, cudaMemcpyDeviceToHost));
            size_t cfar = 0;
            for (size_t i = 0; i < nout; i++) {
                const double want = ref[i] * qs, got = swin_e4m3_to_float(cb[i]);
                cfar += !(fabs(got - want) <= tol * refmax * qs + fmax(fabs(want) / 16.0, ldexp(1.0, -10)));
            }
            ok &= CHECK(cfar == 0, "%s: %zu of %zu bytes of the E4M3 copy off the reference", name, cfar, nout);
        }
    }
    if (ok) printf("%-60s ok err %.2e (tol %.2e: fp16's + FP8 accumulation, Delta %.1e)\n", name, err, tol, delta);
    cudaFree(d_q8), cudaFree(d_ob), cudaFree(d_cb), cudaFree(d_deq), cudaFree(d_bias), cudaFree(d_scale);
    free(q8), free(ob), free(cb), free(so), free(deq), free(x), free(ref), free(bias), free(scale), free(scale_f);
}

// ---- argument validation: refused with a message, nothing launched
static void test_arguments(cublasHandle_t cub, cudaStream_t st) {
    void *p;
    CUDA_OK(cudaMalloc(&p, 1 << 16));
    att_case base = {7, 14, 3, 1, 3, 32, 1, 0};
    struct {
        const char *what;
        swin_status want;
        int field, value;   /* field: 0 none, 1 C, 2 res, 3 shift, 4 head_dim, 5 NULL out, 6 no cublas,
                               7 E4M3 copy unaligned, 8 E4M3 copy with 1 / scale 0, 9 impl value (the
                               data fp16) */
    } t[] = {
        {"NULL out", SWIN_ERR_ARGUMENT, 5, 0},        {"C != heads*head_dim", SWIN_ERR_ARGUMENT, 1, 100},
        {"res % window", SWIN_ERR_ARGUMENT, 2, 15},   {"shift >= window", SWIN_ERR_ARGUMENT, 3, 7},
        {"head_dim 257", SWIN_ERR_UNSUPPORTED, 4, 257}, {"unfused without cuBLAS", SWIN_ERR_ARGUMENT, 6, 0},
        {"head_dim 0", SWIN_ERR_ARGUMENT, 4, 0},
        {"E4M3 copy unaligned", SWIN_ERR_ARGUMENT, 7, 0}, {"E4M3 copy 1/scale 0", SWIN_ERR_ARGUMENT, 8, 0},
        {"x3 with fp16 data", SWIN_ERR_ARGUMENT, 9, SWIN_ATTN_IMPL_X3},
        {"tf32 with fp16 data", SWIN_ERR_ARGUMENT, 9, SWIN_ATTN_IMPL_TF32},
        {"unknown implementation", SWIN_ERR_ARGUMENT, 9, 4},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        swin_dims d = case_dims(&base);
        void *out = p, *cub_arg = NULL;
        swin_attn_impl impl = SWIN_ATTN_IMPL_FUSED;
        swin_q8_dst q = {(uint8_t *)p + (t[i].field == 7), t[i].field == 8 ? 0.0f : 1.0f, 1};
        if (t[i].field == 1) d.C = t[i].value;
        if (t[i].field == 2) d.res_h = d.res_w = d.hp = d.wp = t[i].value;
        if (t[i].field == 3) d.shift_h = d.shift_w = t[i].value;
        if (t[i].field == 4) { d.head_dim = t[i].value; d.C = d.heads * d.head_dim; }
        if (t[i].field == 5) out = NULL;
        if (t[i].field == 6) impl = SWIN_ATTN_IMPL_UNFUSED;
        if (t[i].field == 9) impl = (swin_attn_impl)t[i].value;
        swin_clear_error();   /* the message below must come from this call */
        swin_status s = swin_window_attention_cuda(out, p, (const float *)p, (const float *)p, &d, SWIN_DT_F16,
                                                   impl, t[i].field >= 7 ? &q : NULL, p, cub_arg, st);
        const char *msg = swin_last_error();
        printf("refuse %-24s -> %d (%s)\n", t[i].what, (int)s, msg);
        CHECK(s == t[i].want && msg[0], "%s: status %d, want %d", t[i].what, (int)s, (int)t[i].want);
    }
    (void)cub;
    CHECK(cudaStreamSynchronize(st) == cudaSuccess, "stream after refusals");
    cudaFree(p);
}

// ---- timings (printed, not asserted)
static void bench(const char *name, int B, int res, int W, int C, int heads, int shift, int version, int dt,
                  cublasHandle_t cub, cudaStream_t st) {
    swin_dims d = swin_dims_square(B, res, C, heads, C / heads, W, shift, version, 1e-5f);
    size_t nwin = (size_t)B * (res / W) * (res / W), N = (size_t)W * W, ds = swin_dtype_size((swin_dtype)dt);
    size_t nqkv = nwin * N * 3 * C, nout = nwin * N * C, nbias = (size_t)(2 * W - 1) * (2 * W - 1) * heads;
    float *h = malloc(nqkv * 4), *bias = malloc(nbias * 4), *scale = malloc(heads * 4);
    void *hb = malloc(nqkv * ds), *d_qkv, *d_out, *d_ws = NULL;
    float *d_bias, *d_scale;
    tu_fill(h, nqkv, -1.0f, 1.0f);
    fill_params(bias, scale, &d);
    tu_to_dtype(hb, h, nqkv, dt);
    CUDA_OK(cudaMalloc(&d_qkv, nqkv * ds));
    CUDA_OK(cudaMalloc(&d_out, nout * ds));
    CUDA_OK(cudaMalloc((void **)&d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)&d_scale, heads * 4));
    CUDA_OK(cudaMemcpy(d_qkv, hb, nqkv * ds, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_bias, bias, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scale, scale, heads * 4, cudaMemcpyHostToDevice));
    size_t wsb = swin_window_attention_workspace(&d, (swin_dtype)dt, SWIN_ATTN_IMPL_UNFUSED);
    CUDA_OK(cudaMalloc(&d_ws, wsb));
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    float med[4] = {0, 0, 0, 0};
    for (int impl = 0; impl < (dt == SWIN_DT_F32 ? 4 : 2); impl++) {
        float t[20];
        swin_status s = SWIN_OK;
        for (int it = 0; it < 20 && s == SWIN_OK; it++) {
            /* three untimed launches keep the GPU busy while the timed one is enqueued, so that the
             * events measure GPU time, not host launch overhead (the engine replays CUDA graphs) */
            for (int k = 0; k < 4 && s == SWIN_OK; k++) {
                if (k == 3) CUDA_OK(cudaEventRecord(e0, st));
                s = swin_window_attention_cuda(d_out, d_qkv, d_bias, d_scale, &d, (swin_dtype)dt,
                                               (swin_attn_impl)impl, NULL, d_ws, cub, st);
            }
            CUDA_OK(cudaEventRecord(e1, st));
            CUDA_OK(cudaEventSynchronize(e1));
            CHECK(s == SWIN_OK, "bench %s %s: %s", name, impl_name[impl], swin_last_error());
            t[it] = 0;
            if (s == SWIN_OK) CUDA_OK(cudaEventElapsedTime(&t[it], e0, e1));
        }
        med[impl] = tu_median(t, 20);
    }
    double gb = (double)(nqkv + nout) * ds / 1e9;
    printf("bench %-22s B=%-3d res=%-2d W=%d C=%-3d heads=%-2d shift=%d v%d %-4s: fused %.4f ms (%.0f GB/s) "
           "unfused %.4f ms, speedup %.1fx\n", name, B, res, W, C, heads, shift, version, dt_name[dt], med[0],
           gb / (med[0] * 1e-3), med[1], med[1] / med[0]);
    if (dt == SWIN_DT_F32)
        printf("bench %-22s %-4s: tf32 %.4f ms (%.0f GB/s), %.1fx the fp32 fused kernel; x3 %.4f ms (%.0f GB/s), "
               "%.1fx\n", name, dt_name[dt], med[2], gb / (med[2] * 1e-3), med[0] / med[2], med[3],
               gb / (med[3] * 1e-3), med[0] / med[3]);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(d_qkv), cudaFree(d_out), cudaFree(d_bias), cudaFree(d_scale), cudaFree(d_ws);
    free(h), free(bias), free(scale), free(hb);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_gpu_attention: no CUDA device, skipped\n");
        return TU_SKIP;
    }
    const char *q = getenv("SWIN_TEST_QUICK");
    int quick = q ? atoi(q) : 0;   /* 0 all, 1 quick, 2 quick with one image and one head */
    g_fused_only = quick == 2;
    cublasHandle_t cub;
    if (cublasCreate(&cub) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "test_gpu_attention: cublasCreate failed\n");
        return 1;
    }
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));

    test_arguments(cub, st);
    att_case *cases;
    int ncases = build_cases(&cases), nrun = 0;
    struct timespec t0, t1;
    timespec_get(&t0, TIME_UTC);
    int n_many = (int)(sizeof many / sizeof many[0]);   /* the last cases: they need their many CTAs */
    for (int i = 0; i < ncases; i++) {
        if (quick && !cases[i].quick) continue;
        att_case k = cases[i];
        if (quick == 2 && i < ncases - n_many) k.B = 1, k.heads = 1;
        run_case(&k, NULL, i, cub, st), nrun++;
    }
    for (int g = 0; g < (int)(sizeof geoms / sizeof geoms[0]); g++)   /* V1 and V2, 2 heads of 32, batch 2 */
        for (int v = 1; v <= 2; v++) {
            att_case k = {geoms[g][2], geoms[g][0], geoms[g][4], v, quick == 2 ? 1 : 2, 32, quick == 2 ? 1 : 2,
                          g == 0 || g == 3};
            swin_dims d = geom_dims(&k, geoms[g]);
            if (!quick || k.quick) run_case(&k, &d, ncases + 2 * g + v, cub, st), nrun++;
        }
    {   /* the E4M3 copy: Swin-T-like (16-byte rows), head_dim 20 (8-byte rows: byte stores), V2, and
         * Swin-T stage 1 at batch 8 (attn_head_kernel's CTAs walking several windows) */
        static const att_case qc[] = {{7, 14, 3, 1, 3, 32, 2, 1}, {7, 14, 3, 1, 2, 20, 1, 0}, {8, 16, 4, 2, 3, 32, 1, 0},
                                      {7, 56, 3, 1, 3, 32, 8, 0}};
        for (int i = 0; i < (int)(sizeof qc / sizeof qc[0]); i++)
            if (!quick || qc[i].quick) q8_case(&qc[i], i, cub, st);
    }
    {   /* q, k, v in E4M3: Swin-T-like and 8x8 shifted windows, CTAs walking many windows, a grid
         * padded to the window; V2 refused */
        static const att_case ec[] = {{7, 14, 3, 1, 3, 32, 2, 1}, {8, 16, 4, 1, 3, 32, 2, 1}, {7, 56, 3, 1, 3, 32, 8, 0},
                                      {8, 64, 4, 1, 4, 32, 4, 0}, {8, 16, 4, 2, 3, 32, 2, 1}};
        for (int i = 0; i < (int)(sizeof ec / sizeof ec[0]); i++)
            if (!quick || ec[i].quick) e4m3_case(&ec[i], NULL, i, st);
        for (int v = 1; v <= 2; v++) {   /* geoms[3]: 16x16 grid, window 7, padded to 21x21, shifted */
            att_case k = {7, 16, 3, v, 2, 32, 2, 1};
            swin_dims d = geom_dims(&k, geoms[3]);
            e4m3_case(&k, &d, 10 + v, st);
        }
        att_case bad = {7, 14, 3, 1, 3, 16, 1, 1};   /* head_dim 16: refused, not run wrong */
        swin_dims d = case_dims(&bad);
        CHECK(!swin_window_attention_e4m3_supports(&d, SWIN_DT_F16) &&
                  swin_window_attention_e4m3_cuda((void *)16, (const uint8_t *)16, (const float *)16, (const float *)16,
                                                  (const float *)16, &d, NULL, st) == SWIN_ERR_UNSUPPORTED,
              "e4m3 q,k,v: head_dim 16 accepted");
    }
    timespec_get(&t1, TIME_UTC);
    printf("%d of %d cases (%s), %d launches checked, %d skipped (shared memory), %.1f s\n", nrun, ncases,
           quick ? "quick" : "all", n_runs, n_skipped, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    free(cases);

    if (!quick) {
        bench("swin-t stage0", 64, 56, 7, 96, 3, 3, 1, SWIN_DT_F16, cub, st);
        bench("swin-t stage2", 64, 14, 7, 384, 12, 3, 1, SWIN_DT_F16, cub, st);
        bench("swin-t stage0", 64, 56, 7, 96, 3, 3, 1, SWIN_DT_BF16, cub, st);
        bench("swin-t stage0", 64, 56, 7, 96, 3, 3, 1, SWIN_DT_F32, cub, st);
        bench("swinv2-t stage0", 64, 64, 8, 96, 3, 4, 2, SWIN_DT_F32, cub, st);
        bench("swin-b384 stage2", 16, 24, 12, 512, 16, 6, 1, SWIN_DT_F32, cub, st);
        bench("swinv2-t stage0", 64, 64, 8, 96, 3, 4, 2, SWIN_DT_F16, cub, st);
        bench("swin-t stage0 b256", 256, 56, 7, 96, 3, 3, 1, SWIN_DT_F16, cub, st);
    }
    cudaStreamDestroy(st);
    cublasDestroy(cub);
    return tu_finish("test_gpu_attention");
}
