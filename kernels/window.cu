/* window.cu - window layout ops of the attention block (kernels/ops.h), each one pass:
 *   swin_ln_shift_partition_cuda         win = partition(roll(LN?(x), -shift))   (LN: V1 norm1)
 *   swin_window_reverse_residual_cuda    x += roll(reverse(LN?(win)), +shift)     (LN: V2 norm1)
 *   swin_window_reverse_residual_ln_cuda x += roll(reverse(win), +shift); out = LN(x)
 *                                        (V1: the attention residual, then norm2)
 * Both are the generic row kernel of row.cuh with a token gather/scatter map; the index map is
 * token_src() of src/layers_cpu.c (window (b, wy, wx) row-major, token (ty, tx) row-major; the
 * reverse roll is the same map used as a scatter). Each can also write its output's E4M3 copy
 * for the FP8 site that reads it (swin_q8_dst, ops.h: V1's qkv and fc1 inputs, V2's qkv and fc1
 * inputs), so that the site needs no quantising pass. Any geometry of swin_dims: non-square grids and
 * windows, a shift per dimension, grids padded to multiples of the window in timm's or
 * transformers' order. Window rows that are padding tokens are skipped by the row kernel (the
 * partition zeroes them first with a memset; the reverse drops them).
 * Test: tests/test_gpu_kernels.c (cases "partition", "reverse", and the geometry cases).
 */
#include "row.cuh"
#include "win_geom.cuh"

/* A window row's lookup (row.cuh Map::Row): the row r and its token t = token_src(r), -1 for a
 * padding token, whose row the row kernels neither read nor write (row.cuh skip()) */
struct win_row {
    int r;
    long long t;
};

struct win_map_base {
    typedef win_row Row;
    win_geom g;
    __device__ Row row(int r) const { return Row{r, token_src(g, r)}; }
    __device__ bool skip(const Row &R) const { return g.padded && R.t < 0; }
    __device__ bool zero(const Row &, int) const { return false; }
    __device__ size_t win_idx(const Row &R, int e) const { return (size_t)R.r * g.C + e; }
    __device__ size_t tok_idx(const Row &R, int e) const { return (size_t)R.t * g.C + e; }
};

template <typename T> struct partition_map : win_map_base {   /* win[r] = LN?(x[t]); padding rows: zeroed before */
    static constexpr bool kAccumulate = false;
    static constexpr bool kAddThenNorm = false;
    static constexpr bool kQ8 = false;
    const T *x;
    T *win;
    __device__ const T *src(const Row &R, int e) const { return x + tok_idx(R, e); }
    __device__ size_t oidx(const Row &R, int e) const { return win_idx(R, e); }
    __device__ T *dst(const Row &R, int e) const { return win + win_idx(R, e); }
};

template <typename T> struct reverse_map : win_map_base {   /* x[t] += LN?(win[r]); padding rows dropped */
    static constexpr bool kAccumulate = true;
    static constexpr bool kAddThenNorm = false;
    static constexpr bool kQ8 = false;
    const T *win;
    T *x;
    __device__ const T *src(const Row &R, int e) const { return win + win_idx(R, e); }
    __device__ size_t oidx(const Row &R, int e) const { return tok_idx(R, e); }
    __device__ T *dst(const Row &R, int e) const { return x + tok_idx(R, e); }
};

template <typename T> struct reverse_ln_map : reverse_map<T> {   /* x[t] += win[r]; out[t] = LN(x[t]) */
    typedef win_row Row;
    static constexpr bool kAddThenNorm = true;
    T *o;
    __device__ T *out(const Row &R, int e) const { return o + this->tok_idx(R, e); }
};

// ---- op entries

swin_status swin_win_geom(const char *op, const swin_dims *d, swin_dtype dt, win_geom *g, int *rows) {
    SWIN_TRY(swin_check_dtype(op, dt));
    if (!d) return swin_fail(SWIN_ERR_ARGUMENT, "%s: dims is NULL", op);
    if (d->B <= 0 || d->res_h <= 0 || d->res_w <= 0 || d->C <= 0 || d->win_h <= 0 || d->win_w <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: B %d, grid %dx%d, C %d and window %dx%d must be positive", op,
                         d->B, d->res_h, d->res_w, d->C, d->win_h, d->win_w);
    /* the padded grid: the grid rounded up to a multiple of the window (less than a window more) */
    if (d->hp % d->win_h || d->wp % d->win_w || d->hp < d->res_h || d->wp < d->res_w ||
        d->hp - d->res_h >= d->win_h || d->wp - d->res_w >= d->win_w)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: padded grid %dx%d is not grid %dx%d rounded up to window %dx%d", op,
                         d->hp, d->wp, d->res_h, d->res_w, d->win_h, d->win_w);
    if (d->shift_h < 0 || d->shift_h >= d->win_h || d->shift_w < 0 || d->shift_w >= d->win_w)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: shift %dx%d outside [0, window %dx%d)", op, d->shift_h, d->shift_w,
                         d->win_h, d->win_w);
    if (d->pad_first != 0 && d->pad_first != 1)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: pad_first %d (expected 0 or 1)", op, d->pad_first);
    if (!d->pad_first && ((d->shift_h && d->shift_h >= d->res_h) || (d->shift_w && d->shift_w >= d->res_w)))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: shift %dx%d rolls a %dx%d grid by more than its size", op,
                         d->shift_h, d->shift_w, d->res_h, d->res_w);
    if ((long long)d->B * d->hp * d->wp > 0x7fffffffLL)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: %d images of %dx%d tokens are too many", op, d->B,
                         d->hp, d->wp);
    g->res_h = d->res_h;
    g->res_w = d->res_w;
    g->win_h = d->win_h;
    g->win_w = d->win_w;
    g->shift_h = d->shift_h;
    g->shift_w = d->shift_w;
    g->hp = d->hp;
    g->wp = d->wp;
    g->nwx = d->wp / d->win_w;
    g->nw = (d->hp / d->win_h) * g->nwx;
    g->N = d->win_h * d->win_w;
    g->C = d->C;
    g->pad_first = d->pad_first;
    g->padded = d->hp != d->res_h || d->wp != d->res_w;
    g->fN = make_fdiv(g->N);
    g->fnw = make_fdiv(g->nw);
    g->fnwx = make_fdiv(g->nwx);
    g->fwinw = make_fdiv(g->win_w);
    *rows = d->B * d->hp * d->wp;   /* window rows, padding tokens included */
    return SWIN_OK;
}

/* check_dims, plus the window buffer, the token buffer x (distinct) and the LayerNorm pair */
static swin_status check_args(const char *op, const swin_dims *d, swin_dtype dt, win_geom *g, int *rows,
                              const void *win, const void *x, const float *ln_w, const float *ln_b,
                              int ln_optional) {
    SWIN_TRY(swin_win_geom(op, d, dt, g, rows));
    SWIN_TRY(swin_check_ptr(op, "win", win, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ln(op, ln_w, ln_b, ln_optional));
    if (win == x) return swin_fail(SWIN_ERR_ARGUMENT, "%s: win and x are the same buffer", op);
    return SWIN_OK;
}

extern "C" swin_status swin_ln_shift_partition_cuda(void *win, const void *x, const float *ln_w,
                                                    const float *ln_b, const swin_dims *d,
                                                    const swin_q8_dst *q8, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_ln_shift_partition_cuda";
    win_geom g;
    int rows;
    swin_q8_dst q;
    SWIN_TRY(check_args(op, d, dt, &g, &rows, win, x, ln_w, ln_b, 1));
    SWIN_TRY(swin_check_q8(op, q8, &q));
    int vec_ok = swin_aligned16(win) && swin_aligned16(x);
    if (g.padded) {   /* padding tokens are zeros (not LN(0)); the kernel skips their rows */
        if (!q.q || q.keep16) SWIN_CUDA_TRY(cudaMemsetAsync(win, 0, (size_t)rows * d->C * swin_dtype_size(dt), st));
        if (q.q) SWIN_CUDA_TRY(cudaMemsetAsync(q.q, 0, (size_t)rows * d->C, st));   /* e4m3(0) */
    }
    SWIN_DISPATCH(dt, T, {
        partition_map<T> m;
        m.g = g, m.x = (const T *)x, m.win = (T *)win;
        return swin_row_ln_launch_q8<T>("ln_shift_partition_kernel", m, q, vec_ok, ln_w, ln_b, rows, d->C, d->eps, st);
    });
    return SWIN_OK;
}

extern "C" swin_status swin_window_reverse_residual_cuda(void *x, const void *win, const float *ln_w,
                                                         const float *ln_b, const swin_dims *d,
                                                         const swin_q8_dst *q8, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_window_reverse_residual_cuda";
    win_geom g;
    int rows;
    swin_q8_dst q;
    SWIN_TRY(check_args(op, d, dt, &g, &rows, win, x, ln_w, ln_b, 1));
    SWIN_TRY(swin_check_q8(op, q8, &q));
    q.keep16 = 1;   /* x is the residual stream */
    int vec_ok = swin_aligned16(win) && swin_aligned16(x);
    SWIN_DISPATCH(dt, T, {
        reverse_map<T> m;
        m.g = g, m.win = (const T *)win, m.x = (T *)x;
        return swin_row_ln_launch_q8<T>("window_reverse_residual_kernel", m, q, vec_ok, ln_w, ln_b, rows, d->C, d->eps, st);
    });
    return SWIN_OK;
}

extern "C" swin_status swin_window_reverse_residual_ln_cuda(void *x, void *out, const void *win,
                                                            const float *ln_w, const float *ln_b,
                                                            const swin_dims *d, const swin_q8_dst *q8,
                                                            swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_window_reverse_residual_ln_cuda";
    win_geom g;
    int rows;
    swin_q8_dst q;
    SWIN_TRY(check_args(op, d, dt, &g, &rows, win, x, ln_w, ln_b, 0));
    SWIN_TRY(swin_check_q8(op, q8, &q));
    SWIN_TRY(swin_check_ptr(op, "out", out, swin_dtype_size(dt)));
    if (out == win || out == x)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x, out and win must be three different buffers", op);
    int vec_ok = swin_aligned16(win) && swin_aligned16(x) && swin_aligned16(out);
    SWIN_DISPATCH(dt, T, {
        reverse_ln_map<T> m;
        m.g = g, m.win = (const T *)win, m.x = (T *)x, m.o = (T *)out;
        return swin_row_ln_launch_q8<T>("window_reverse_residual_ln_kernel", m, q, vec_ok, ln_w, ln_b, rows, d->C, d->eps,
                              st);
    });
    return SWIN_OK;
}
