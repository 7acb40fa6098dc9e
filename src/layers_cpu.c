/* layers_cpu.c - the CPU reference layers of src/layers.h: plain loops, fp32 data.
 *
 * Readable first: each function is the definition the CUDA kernels are tested against.
 * Reductions (dot products, LayerNorm statistics, softmax sums) accumulate in double so that the
 * reference stays ~1e-6 from a float64 PyTorch run. Rows are spread over threads with OpenMP when
 * it is available; results do not depend on the thread count.
 * swin_linear_fp8_cpu is the FP8 sites' GEMM of src/fp8.h (with the qkv output's E4M3 round trip),
 * emulated: E4M3 values held in floats.
 * Test: tests/test_layers_cpu.c (small hand-checked cases), tests/cli_verify.sh (whole models),
 * tests/test_fp8.c (the FP8 GEMM).
 */
#include <math.h>
#include <string.h>

#include "fp8.h"
#include "layers.h"

// ---- generic

static inline float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* dot product of two contiguous rows, four partial sums */
static double dot(const float *a, const float *b, int n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += (double)a[k] * b[k];
        s1 += (double)a[k + 1] * b[k + 1];
        s2 += (double)a[k + 2] * b[k + 2];
        s3 += (double)a[k + 3] * b[k + 3];
    }
    for (; k < n; k++) s0 += (double)a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

void swin_linear_cpu(float *out, const float *in, const swin_linear_w *w, const float *residual,
                     int M, int K, int N, swin_act act) {
    #pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        const float *x = in + (size_t)m * K;
        for (int n = 0; n < N; n++) {
            double acc = dot(x, w->w + (size_t)n * K, K);
            if (w->b) acc += w->b[n];
            float y = (float)acc;
            if (act == SWIN_ACT_GELU) y = gelu_erf(y);
            if (residual) y += residual[(size_t)m * N + n];
            out[(size_t)m * N + n] = y;
        }
    }
}

/* fp8.h's q, k, v round trip of one output value y of channel scale so */
static inline float e4m3_round_trip(float y, float so) {
    return swin_e4m3_to_float(swin_e4m3_from_float(y * (1.0f / so))) * so;
}

void swin_linear_fp8_cpu(float *out, const float *in, const swin_fp8_linear_w *w, const float *residual,
                         int M, int K, int N, swin_act act, float *xq) {
    float inv_s = 1.0f / w->s;
    #pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        float *x = xq + (size_t)m * K;   /* row m of the input in E4M3, as floats */
        for (int k = 0; k < K; k++) x[k] = swin_e4m3_to_float(swin_e4m3_from_float(in[(size_t)m * K + k] * inv_s));
        for (int n = 0; n < N; n++) {
            float acc = (float)dot(x, w->wq + (size_t)n * K, K);
            float y = acc * w->s * w->ws[n];
            if (w->b) y += w->b[n];
            if (act == SWIN_ACT_GELU) y = gelu_erf(y);
            if (w->out_s) y = e4m3_round_trip(y, w->out_s[n]);
            if (residual) y += residual[(size_t)m * N + n];
            out[(size_t)m * N + n] = y;
        }
    }
}

float swin_absmax_cpu(const float *x, size_t n) {
    float a = 0.0f;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) return NAN;
        a = fmaxf(a, fabsf(x[i]));
    }
    return a;
}

void swin_absmax_cols_cpu(float *amax, const float *x, int M, int N) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float a = amax[n];
        for (int m = 0; m < M && !isnan(a); m++) {
            float v = fabsf(x[(size_t)m * N + n]);
            if (v > a || isnan(v)) a = v;
        }
        amax[n] = a;
    }
}

/* Statistics of one row of C values: mean and 1/sqrt(biased var + eps). */
static void ln_stats(const float *x, int C, float eps, double *mean, double *rstd) {
    double m = 0, v = 0;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    for (int c = 0; c < C; c++) v += ((double)x[c] - m) * ((double)x[c] - m);
    v /= C;
    *mean = m;
    *rstd = 1.0 / sqrt(v + (double)eps);
}

/* out[c] (+)= (x[c] - mean) * rstd * w[c] + b[c]; out may alias x when accumulate == 0 */
static void ln_row(float *out, const float *x, const swin_ln_w *ln, int C, float eps, int accumulate) {
    double mean, rstd;
    ln_stats(x, C, eps, &mean, &rstd);
    for (int c = 0; c < C; c++) {
        float y = (float)(((double)x[c] - mean) * rstd) * ln->w[c] + ln->b[c];
        out[c] = accumulate ? out[c] + y : y;
    }
}

void swin_layernorm_cpu(float *out, const float *in, const swin_ln_w *ln, int rows, int C, float eps) {
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) ln_row(out + (size_t)r * C, in + (size_t)r * C, ln, C, eps, 0);
}

void swin_layernorm_residual_cpu(float *x, const float *y, const swin_ln_w *ln, int rows, int C, float eps) {
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) ln_row(x + (size_t)r * C, y + (size_t)r * C, ln, C, eps, 1);
}

// ---- patch embedding

void swin_im2col_patch_cpu(float *cols, const float *img, int B, int H, int W, int p, int gh, int gw) {
    int K = 3 * p * p;
    for (int b = 0; b < B; b++)
        for (int py = 0; py < gh; py++)
            for (int px = 0; px < gw; px++) {
                float *row = cols + ((size_t)(b * gh + py) * gw + px) * K;
                for (int c = 0; c < 3; c++)
                    for (int ky = 0; ky < p; ky++)
                        for (int kx = 0; kx < p; kx++) {
                            int y = py * p + ky, x = px * p + kx;   /* past the image: zero padding */
                            row[(c * p + ky) * p + kx] =
                                y < H && x < W ? img[(((size_t)b * 3 + c) * H + y) * W + x] : 0.0f;
                        }
            }
}

void swin_add_pos_cpu(float *x, const float *pos, int B, int L, int C) {
    for (int b = 0; b < B; b++)
        for (size_t i = 0; i < (size_t)L * C; i++) x[(size_t)b * L * C + i] += pos[i];
}

// ---- attention block pieces

/* Image position of one coordinate of the shifted, padded grid along a dimension: res tokens,
 * padded to n, cyclic shift `shift`; -1 for a padding token (see swin_dims). */
static int unshift(int p, int res, int n, int shift, int pad_first) {
    if (!pad_first) return p < res ? (p + shift) % res : -1;   /* timm: roll on res, then pad */
    int y = (p + shift) % n;                                    /* HF: pad to n, then roll on n */
    return y < res ? y : -1;
}

/* Row of token t of window w (b, wy, wx) in x [B, res_h, res_w, C], or -1 for a padding token.
 * The same map takes a window token back to its place (reverse roll, crop). */
static long token_src(const swin_dims *d, int win, int t) {
    int nwx = d->wp / d->win_w, nw = swin_dims_nw(d);
    int b = win / nw, wy = (win % nw) / nwx, wx = win % nwx;
    int y = unshift(wy * d->win_h + t / d->win_w, d->res_h, d->hp, d->shift_h, d->pad_first);
    int x = unshift(wx * d->win_w + t % d->win_w, d->res_w, d->wp, d->shift_w, d->pad_first);
    if (y < 0 || x < 0) return -1;
    return ((long)b * d->res_h + y) * d->res_w + x;
}

void swin_ln_shift_partition_cpu(float *win, const float *x, const swin_ln_w *ln, const swin_dims *d) {
    int nwin = d->B * swin_dims_nw(d), N = swin_dims_n(d), C = d->C;
    #pragma omp parallel for schedule(static)
    for (int w = 0; w < nwin; w++)
        for (int t = 0; t < N; t++) {
            long src = token_src(d, w, t);
            float *dst = win + ((size_t)w * N + t) * C;
            if (src < 0) memset(dst, 0, (size_t)C * sizeof(float));   /* padding: a zero token */
            else if (ln) ln_row(dst, x + (size_t)src * C, ln, C, d->eps, 0);
            else memcpy(dst, x + (size_t)src * C, (size_t)C * sizeof(float));
        }
}

void swin_window_reverse_residual_cpu(float *x, const float *win, const swin_ln_w *ln, const swin_dims *d) {
    int nwin = d->B * swin_dims_nw(d), N = swin_dims_n(d), C = d->C;
    #pragma omp parallel for schedule(static)
    for (int w = 0; w < nwin; w++)
        for (int t = 0; t < N; t++) {
            long dst_row = token_src(d, w, t);   /* roll back and crop: the same map */
            if (dst_row < 0) continue;           /* padding token: dropped */
            const float *src = win + ((size_t)w * N + t) * C;
            float *dst = x + (size_t)dst_row * C;
            if (ln) ln_row(dst, src, ln, C, d->eps, 1);
            else for (int c = 0; c < C; c++) dst[c] += src[c];
        }
}

void swin_window_reverse_residual_ln_cpu(float *x, float *out, const float *win, const swin_ln_w *ln,
                                         const swin_dims *d) {
    swin_window_reverse_residual_cpu(x, win, NULL, d);
    swin_layernorm_cpu(out, x, ln, d->B * swin_dims_tokens(d), d->C, d->eps);
}

/* Shift-mask region id of token t of window (wy, wx), on the shifted, padded grid. */
static int token_region(const swin_dims *d, int wy, int wx, int t) {
    int y = wy * d->win_h + t / d->win_w, x = wx * d->win_w + t % d->win_w;
    return swin_region(y, d->hp, d->win_h, d->shift_h) * 3 + swin_region(x, d->wp, d->win_w, d->shift_w);
}

void swin_window_attention_cpu(float *out, const float *qkv, const float *bias_table,
                               const float *scale, const swin_dims *d) {
    int nw = swin_dims_nw(d), nwx = d->wp / d->win_w, nwin = d->B * nw;
    int N = swin_dims_n(d), C = d->C, hd = d->head_dim, Wh = d->win_h, Ww = d->win_w;
    int masked = d->shift_h > 0 || d->shift_w > 0;
    if (N > SWIN_CPU_MAX_TOKENS) return;   /* swin_model_plan refuses such windows */
    #pragma omp parallel for collapse(2) schedule(static)
    for (int w = 0; w < nwin; w++)
        for (int h = 0; h < d->heads; h++) {
            double s[SWIN_CPU_MAX_TOKENS], qnorm[SWIN_CPU_MAX_TOKENS], knorm[SWIN_CPU_MAX_TOKENS];
            const float *base = qkv + (size_t)w * N * 3 * C;   /* this window's [N, 3C] */
            int wy = (w % nw) / nwx, wx = w % nwx;
            for (int i = 0; i < N; i++) {   /* V2: F.normalize divides by max(|x|, 1e-12) */
                const float *q = base + (size_t)i * 3 * C + h * hd, *k = q + C;
                qnorm[i] = d->version == 2 ? fmax(sqrt(dot(q, q, hd)), 1e-12) : 1.0;
                knorm[i] = d->version == 2 ? fmax(sqrt(dot(k, k, hd)), 1e-12) : 1.0;
            }
            for (int i = 0; i < N; i++) {
                const float *q = base + (size_t)i * 3 * C + h * hd;
                int yi = i / Ww, xi = i % Ww, ri = token_region(d, wy, wx, i);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < N; j++) {
                    const float *k = base + (size_t)j * 3 * C + C + h * hd;
                    int idx = (yi - j / Ww + Wh - 1) * (2 * Ww - 1) + (xi - j % Ww + Ww - 1);
                    double v = dot(q, k, hd) / (qnorm[i] * knorm[j]) * scale[h] +
                               bias_table[(size_t)idx * d->heads + h];
                    if (masked && token_region(d, wy, wx, j) != ri) v += -100.0;
                    s[j] = v;
                    if (v > mx) mx = v;
                }
                for (int j = 0; j < N; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
                float *o = out + ((size_t)w * N + i) * C + h * hd;
                for (int c = 0; c < hd; c++) {
                    double acc = 0;
                    for (int j = 0; j < N; j++) acc += s[j] * base[(size_t)j * 3 * C + 2 * C + h * hd + c];
                    o[c] = (float)(acc / sum);
                }
            }
        }
}

// ---- patch merging and head

void swin_merge_gather_cpu(float *out, const float *x, const swin_ln_w *ln, int B, int H, int W, int C,
                           float eps) {
    int h2 = (H + 1) / 2, w2 = (W + 1) / 2;
    /* timm order of the four neighbours: (dy, dx) = (0,0), (1,0), (0,1), (1,1) */
    static const int dy[4] = {0, 1, 0, 1}, dx[4] = {0, 0, 1, 1};
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < B * h2 * w2; r++) {
        int b = r / (h2 * w2), i = (r / w2) % h2, j = r % w2;
        float *o = out + (size_t)r * 4 * C;
        for (int q = 0; q < 4; q++) {
            int y = 2 * i + dy[q], xx = 2 * j + dx[q];
            if (y < H && xx < W) memcpy(o + q * C, x + (((size_t)b * H + y) * W + xx) * C, (size_t)C * sizeof(float));
            else memset(o + q * C, 0, (size_t)C * sizeof(float));   /* odd grid: the zero padding */
        }
        if (ln) ln_row(o, o, ln, 4 * C, eps, 0);
    }
}

void swin_ln_pool_cpu(float *out, const float *x, const swin_ln_w *ln, int B, int L, int C, float eps) {
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * C;
        for (int c = 0; c < C; c++) o[c] = 0;
        for (int l = 0; l < L; l++) {
            const float *t = x + ((size_t)b * L + l) * C;
            double mean, rstd;
            ln_stats(t, C, eps, &mean, &rstd);
            for (int c = 0; c < C; c++) o[c] += (float)(((double)t[c] - mean) * rstd);
        }
        for (int c = 0; c < C; c++) o[c] = o[c] / (float)L * ln->w[c] + ln->b[c];
    }
}
