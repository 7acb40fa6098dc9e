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

/* Geometry of one block (or one stage's tokens). */
typedef struct {
    int B;          /* images */
    int res;        /* tokens per side (H == W) */
    int C;          /* channels */
    int heads, head_dim;   /* C == heads * head_dim */
    int window;     /* clamped window side; res % window == 0 */
    int shift;      /* cyclic shift, 0 <= shift < window */
    int version;    /* 1: scaled dot product; 2: cosine attention */
    float eps;      /* LayerNorm epsilon */
} swin_dims;

/* Largest window the CPU reference handles (tokens per window): W <= 32. */
#define SWIN_CPU_MAX_TOKENS 1024

/* number of windows per image and tokens per window */
static inline int swin_dims_nw(const swin_dims *d) { return (d->res / d->window) * (d->res / d->window); }
static inline int swin_dims_n(const swin_dims *d) { return d->window * d->window; }

/* Shift-mask region of a coordinate in the shifted frame (0, 1 or 2), as timm/HF build the
 * attention mask: slices [0, res-window), [res-window, res-shift), [res-shift, res). */
static inline int swin_region(int coord, int res, int window, int shift) {
    if (shift == 0) return 0;
    return coord < res - window ? 0 : (coord < res - shift ? 1 : 2);
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
/* cols [B*(H/p)*(W/p), 3*p*p] <- img [B, 3, H, W]; column order (c, ky, kx) matches the conv weight */
void swin_im2col_patch_cpu(float *cols, const float *img, int B, int H, int W, int p);
/* x [B, L, C] += pos [L, C] (absolute position embedding) */
void swin_add_pos_cpu(float *x, const float *pos, int B, int L, int C);

/* ---- attention block pieces */
/* win [B*nW, N, C] <- partition(roll(LN(x), -shift)); x [B, res, res, C]; ln NULL = no norm (V2) */
void swin_ln_shift_partition_cpu(float *win, const float *x, const swin_ln_w *ln, const swin_dims *d);
/* out [B*nW, N, C] <- window attention of qkv [B*nW, N, 3C]:
 *   s = scale[h] * (V1: q.k | V2: q/|q| . k/|k|) + bias_table[rel_index(i, j), h] + mask(i, j)
 *   mask = -100 where the shift regions of tokens i and j differ (only when shift > 0)
 *   out = softmax(s) v.  rel_index = (dy + W - 1) * (2W - 1) + (dx + W - 1), dy = yi - yj. */
void swin_window_attention_cpu(float *out, const float *qkv, const float *bias_table,
                               const float *scale, const swin_dims *d);
/* x [B, res, res, C] += LN?(roll(reverse(win), +shift)); win [B*nW, N, C]; ln NULL = no norm (V1) */
void swin_window_reverse_residual_cpu(float *x, const float *win, const swin_ln_w *ln, const swin_dims *d);
/* x += roll(reverse(win), +shift); out [B, res, res, C] = LN(x) (V1: residual, then norm2) */
void swin_window_reverse_residual_ln_cpu(float *x, float *out, const float *win, const swin_ln_w *ln,
                                         const swin_dims *d);

/* ---- patch merging and head */
/* out [B*(res/2)^2, 4C] <- 2x2 gather of x [B, res, res, C] in timm order
 * (y0 x0, y1 x0, y0 x1, y1 x1), then LN over 4C when ln != NULL (V1). */
void swin_merge_gather_cpu(float *out, const float *x, const swin_ln_w *ln, int B, int res, int C, float eps);
/* out [B, C] <- mean over L tokens of LN(x [B, L, C]) */
void swin_ln_pool_cpu(float *out, const float *x, const swin_ln_w *ln, int B, int L, int C, float eps);

/* ---- whole-model reference forward */
/* Scratch floats needed by swin_forward_cpu for a batch. */
size_t swin_forward_cpu_scratch(const swin_model *m, int B);
/* logits [B, classes] <- img [B, 3, S, S]; scratch from the caller (size above). */
void swin_forward_cpu(float *logits, const float *img, const swin_model *m, int B, float *scratch);
/* The same, and copies the output of stage s (after its blocks, [B, res_s, res_s, dim_s]) into
 * stage_out[s] where stage_out[s] != NULL (stage_out may be NULL): localises a mismatch. */
void swin_forward_cpu_stages(float *logits, const float *img, const swin_model *m, int B, float *scratch,
                             float *const *stage_out);

/* geometry of block b in stage s for batch B */
swin_dims swin_block_dims(const swin_model *m, int stage, int block, int B);

#ifdef __cplusplus
}
#endif
#endif
