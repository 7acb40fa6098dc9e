/* layers.h - one function per layer of the Swin forward pass, fp32, plain C: the CPU reference.
 *
 * Every CUDA kernel in kernels/ has its counterpart here with the same arguments (the CUDA op
 * takes device pointers in the session dtype, plus the stream last). Kernel tests compare the two.
 * Shapes are given on each pointer. Windows are numbered (b, wy, wx) row-major, tokens inside a
 * window (ty, tx) row-major; qkv channels are [q | k | v], each [heads, head_dim].
 */
#ifndef SWIN_LAYERS_H
#define SWIN_LAYERS_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SWIN_ACT_NONE = 0, SWIN_ACT_GELU = 1 } swin_act;

/* Geometry of one block (or one stage's tokens). Windows tile the token grid padded with zero
 * tokens up to (hp, wp), multiples of the window; where the grid already is a multiple, hp == res_h
 * and wp == res_w and the two libraries agree. Where it is not, they differ in the order of the
 * cyclic shift and the padding (pad_first); both build the shift mask on the padded grid.
 * Token (ty, tx) of window (wy, wx) sits at (py, px) = (wy*win_h + ty, wx*win_w + tx) of the
 * shifted, padded grid and holds image token (y, x), or a zero token (token_src in layers_cpu.c):
 *   timm (roll, pad, attend, crop, roll back): y = (py + shift_h) mod res_h, zero if py >= res_h
 *   transformers (pad, roll, attend, roll back, crop): y = (py + shift_h) mod hp, zero if y >= res_h
 * and the same along x. */
typedef struct {
    int B;                  /* images */
    int res_h, res_w;       /* token grid: rows, columns */
    int C;                  /* channels */
    int heads, head_dim;    /* C == heads * head_dim */
    int win_h, win_w;       /* window, clamped to the grid as the model's library clamps it */
    int shift_h, shift_w;   /* cyclic shift per dimension, 0 <= shift < window */
    int hp, wp;             /* padded grid: res rounded up to a multiple of the window */
    int pad_first;          /* 0: timm order (roll, then pad); 1: transformers (pad, then roll) */
    int version;            /* 1: scaled dot product; 2: cosine attention */
    float eps;              /* LayerNorm epsilon */
} swin_dims;

/* Largest window the CPU reference handles (tokens per window), e.g. 32 x 32. */
#define SWIN_CPU_MAX_TOKENS 1024

/* windows per image, tokens per window, tokens per image (unpadded) */
static inline int swin_dims_nw(const swin_dims *d) { return (d->hp / d->win_h) * (d->wp / d->win_w); }
static inline int swin_dims_n(const swin_dims *d) { return d->win_h * d->win_w; }
static inline int swin_dims_tokens(const swin_dims *d) { return d->res_h * d->res_w; }
/* 1 for the classic geometry: a square grid that is a multiple of a square window, the same shift
 * both ways. There timm and transformers agree, and the CUDA window kernels apply. */
static inline int swin_dims_plain(const swin_dims *d) {
    return d->res_h == d->res_w && d->win_h == d->win_w && d->shift_h == d->shift_w && d->hp == d->res_h &&
           d->wp == d->res_w;
}

/* The plain geometry of a res x res grid, square windows, the same shift both ways (tests). */
static inline swin_dims swin_dims_square(int B, int res, int C, int heads, int head_dim, int window, int shift,
                                         int version, float eps) {
    swin_dims d = {B, res, res, C, heads, head_dim, window, window, shift, shift, res, res, 0, version, eps};
    return d;
}

/* Shift-mask region (0, 1 or 2) of a coordinate of the shifted, padded grid along a dimension of
 * padded length n, as timm/HF build the attention mask: slices [0, n-window), [n-window, n-shift),
 * [n-shift, n). Without a shift along this dimension every coordinate is in one region. */
static inline int swin_region(int coord, int n, int window, int shift) {
    if (shift == 0) return 0;
    return coord < n - window ? 0 : (coord < n - shift ? 1 : 2);
}

/* ---- generic */
/* out [M, N] = act(in [M, K] @ w [N, K]^T + b [N]); if residual != NULL: out = residual + that
 * (residual [M, N] may alias out). */
void swin_linear_cpu(float *out, const float *in, const swin_linear_w *w, const float *residual,
                     int M, int K, int N, swin_act act);
/* out [rows, C] = LayerNorm(in [rows, C]); out may alias in. */
void swin_layernorm_cpu(float *out, const float *in, const swin_ln_w *ln, int rows, int C, float eps);
/* x [rows, C] += LayerNorm(y [rows, C])   (V2 res-post-norm after the MLP) */
void swin_layernorm_residual_cpu(float *x, const float *y, const swin_ln_w *ln, int rows, int C, float eps);

/* ---- patch embedding */
/* cols [B*gh*gw, 3*p*p] <- img [B, 3, H, W]; column order (c, ky, kx) matches the conv weight.
 * Patch (py, px) covers pixels [py*p, py*p + p) x [px*p, px*p + p); pixels outside the image
 * read as 0. timm: gh = H / p (the conv drops the remainder); transformers: gh = ceil(H / p) (it
 * pads the image with zeros); the same for gw. */
void swin_im2col_patch_cpu(float *cols, const float *img, int B, int H, int W, int p, int gh, int gw);
/* x [B, L, C] += pos [L, C] (absolute position embedding) */
void swin_add_pos_cpu(float *x, const float *pos, int B, int L, int C);

/* ---- attention block pieces */
/* win [B*nW, N, C] <- partition(shift(LN(x))) with zero tokens where the padded grid has no image
 * token (the order of roll and pad per d->pad_first, see swin_dims); x [B, res_h, res_w, C];
 * ln NULL = no norm (V2). Both libraries normalise before padding: padding tokens are 0, not LN(0). */
void swin_ln_shift_partition_cpu(float *win, const float *x, const swin_ln_w *ln, const swin_dims *d);
/* out [B*nW, N, C] <- window attention of qkv [B*nW, N, 3C], N = win_h * win_w:
 *   s = scale[h] * (V1: q.k | V2: q/|q| . k/|k|) + bias_table[rel_index(i, j), h] + mask(i, j)
 *   mask = -100 where the shift regions of tokens i and j differ (only when a shift is > 0)
 *   out = softmax(s) v.  rel_index = (dy + win_h - 1) * (2 win_w - 1) + (dx + win_w - 1),
 *   dy = yi - yj, dx = xi - xj; bias_table [(2 win_h - 1) * (2 win_w - 1), heads].
 * Padding tokens take part as keys like any other (neither library masks them). */
void swin_window_attention_cpu(float *out, const float *qkv, const float *bias_table,
                               const float *scale, const swin_dims *d);
/* x [B, res_h, res_w, C] += LN?(unshift(reverse(win))), padding tokens dropped; win [B*nW, N, C];
 * ln NULL = no norm (V1) */
void swin_window_reverse_residual_cpu(float *x, const float *win, const swin_ln_w *ln, const swin_dims *d);
/* x += unshift(reverse(win)); out [B, res_h, res_w, C] = LN(x) (V1: residual, then norm2) */
void swin_window_reverse_residual_ln_cpu(float *x, float *out, const float *win, const swin_ln_w *ln,
                                         const swin_dims *d);

/* ---- patch merging and head */
/* out [B*ceil(H/2)*ceil(W/2), 4C] <- 2x2 gather of x [B, H, W, C] in timm order
 * (y0 x0, y1 x0, y0 x1, y1 x1), then LN over 4C when ln != NULL (V1). An odd H or W reads zeros
 * past the last row / column (timm and transformers pad the grid to even sizes). */
void swin_merge_gather_cpu(float *out, const float *x, const swin_ln_w *ln, int B, int H, int W, int C,
                           float eps);
/* out [B, C] <- mean over L tokens of LN(x [B, L, C]) */
void swin_ln_pool_cpu(float *out, const float *x, const swin_ln_w *ln, int B, int L, int C, float eps);

/* ---- FP8 GEMM sites (src/fp8.h), emulated in fp32 */
/* One site's weights quantised per output channel (swin_fp8_quantize_weights), decoded to float,
 * its input scale, and for a qkv site with E4M3 q, k, v its output's channel scales. */
typedef struct {
    const float *wq;      /* [N, K] the E4M3 values of w[n, k] / ws[n], as floats */
    const float *ws;      /* [N] per output channel weight scales */
    const float *b;       /* [N] the model's bias, or NULL */
    float s;              /* the input scale (scales file) */
    const float *out_s;   /* [N] per-channel output scales (QKV sites with E4M3 q, k, v), or NULL */
} swin_fp8_linear_w;
/* out [M, N] = act((sum_k xq[m, k] * wq[n, k]) * s * ws[n] + b[n]) (+ residual [M, N], may alias
 * out), xq = e4m3(in [M, K] * (1 / s)): fp8.h's arithmetic. The products of two E4M3 values are
 * exact in fp32; their sum is taken in double and rounded once to fp32 (an fp32 accumulator, as
 * the GPU's, differs by about K 2^-24 relative, far below E4M3's 2^-4). xq [M, K] is scratch.
 * With out_s, each value after act, before the residual, makes fp8.h's q, k, v round trip:
 * e4m3(y * (1 / out_s[n])) * out_s[n] (qkv itself has neither act nor residual). */
void swin_linear_fp8_cpu(float *out, const float *in, const swin_fp8_linear_w *w, const float *residual,
                         int M, int K, int N, swin_act act, float *xq);
/* max |x| over n values (NaN when one is NaN) */
float swin_absmax_cpu(const float *x, size_t n);
/* amax[n] = max(amax[n], max_m |x[m, n]|) for x [M, N]: a running max per column (a NaN is kept) */
void swin_absmax_cols_cpu(float *amax, const float *x, int M, int N);

/* What a forward does at the FP8 sites, numbered as swin_fp8_sites (NULL: plain fp32):
 * amax != NULL records the running max |input| of each site and, at each qkv site's out_off, the
 * running max |output| of each of its channels (calibration, fp32 GEMMs); sites != NULL runs each
 * site with swin_linear_fp8_cpu (the emulation), xq its scratch (swin_forward_cpu_xq_floats). */
typedef struct {
    float *amax;                      /* [swin_fp8_scale_count] or NULL */
    const swin_fp8_linear_w *sites;   /* [sites] or NULL */
    float *xq;
} swin_fp8_forward;

/* ---- whole-model reference forward */
/* Scratch floats needed by swin_forward_cpu for a batch. */
size_t swin_forward_cpu_scratch(const swin_model *m, int B);
/* logits [B, classes] <- img [B, 3, img_h, img_w]; scratch from the caller (size above). */
void swin_forward_cpu(float *logits, const float *img, const swin_model *m, int B, float *scratch);
/* The same, and copies the output of stage s (after its blocks, [B, res_h, res_w, dim]) into
 * stage_out[s] where stage_out[s] != NULL (stage_out may be NULL): localises a mismatch. */
void swin_forward_cpu_stages(float *logits, const float *img, const swin_model *m, int B, float *scratch,
                             float *const *stage_out);

/* The same with FP8 sites (fp8 NULL: swin_forward_cpu_stages). */
void swin_forward_cpu_fp8(float *logits, const float *img, const swin_model *m, int B, float *scratch,
                          float *const *stage_out, const swin_fp8_forward *fp8);
/* Floats of the emulation's xq scratch for a batch: the largest site input [M, K]. */
size_t swin_forward_cpu_xq_floats(const swin_model *m, int B);

/* geometry of block b in stage s for batch B */
swin_dims swin_block_dims(const swin_model *m, int stage, int block, int B);

#ifdef __cplusplus
}
#endif
#endif
