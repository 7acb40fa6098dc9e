/* window.cu - window layout ops of the attention block (kernels/ops.h), each one pass:
 *   swin_ln_shift_partition_cuda         win = partition(roll(LN?(x), -shift))   (LN: V1 norm1)
 *   swin_window_reverse_residual_cuda    x += roll(reverse(LN?(win)), +shift)     (LN: V2 norm1)
 *   swin_window_reverse_residual_ln_cuda x += roll(reverse(win), +shift); out = LN(x)
 *                                        (V1: the attention residual, then norm2)
 * Both are the generic row kernel of row.cuh with a token gather/scatter map; the index map is
 * token_src() of src/layers_cpu.c (window (b, wy, wx) row-major, token (ty, tx) row-major; the
 * reverse roll is the same map used as a scatter).
 * Test: tests/test_gpu_kernels.c (cases "partition", "reverse").
 */
#include "row.cuh"

// ---- index map

/* Division by a divisor fixed at launch: q = umulhi(n, mul) >> shr (Granlund & Montgomery, the
 * form CUTLASS's FastDivmod uses), exact for 0 <= n < 2^31. The token map divides 4 times per row;
 * with hardware-less integer division (~25 instructions each) that made these kernels
 * instruction-bound. */
struct swin_fdiv {
    int d;
    unsigned mul, shr;
};

static swin_fdiv make_fdiv(int d) {
    swin_fdiv f = {d, 0u, 0u};
    if (d > 1) {
        int l = 0;
        while ((1ll << l) < d) l++;   /* ceil(log2 d) */
        f.mul = (unsigned)(((1ull << (31 + l)) + (unsigned)d - 1) / (unsigned)d);
        f.shr = (unsigned)(l - 1);
    }
    return f;
}

__device__ __forceinline__ int fdiv_q(int n, const swin_fdiv &f) {
    return f.d == 1 ? n : (int)(__umulhi((unsigned)n, f.mul) >> f.shr);
}

struct win_geom {
    int res, window, shift, nwx, nw, N, C;
    swin_fdiv fN, fnw, fnwx, fwin;
};

/* Token of window row r (= window * N + token) in the un-shifted image, row-major (b, y, x). */
__device__ __forceinline__ size_t token_src(const win_geom &g, int r) {
    const int w = fdiv_q(r, g.fN), t = r - w * g.N;
    const int b = fdiv_q(w, g.fnw), wi = w - b * g.nw;
    const int wy = fdiv_q(wi, g.fnwx), wx = wi - wy * g.nwx;
    const int ty = fdiv_q(t, g.fwin), tx = t - ty * g.window;
    int y = wy * g.window + ty + g.shift, x = wx * g.window + tx + g.shift;   /* roll by -shift */
    if (y >= g.res) y -= g.res;
    if (x >= g.res) x -= g.res;
    return ((size_t)b * g.res + y) * g.res + x;
}

template <typename T> struct partition_map {   /* win[r] = LN?(x[token_src(r)]) */
    static constexpr bool kAccumulate = false;
    static constexpr bool kAddThenNorm = false;
    const T *x;
    T *win;
    win_geom g;
    __device__ const T *src(int r, int e) const { return x + token_src(g, r) * g.C + e; }
    __device__ T *dst(int r, int e) const { return win + (size_t)r * g.C + e; }
};

template <typename T> struct reverse_map {   /* x[token_src(r)] += LN?(win[r]) */
    static constexpr bool kAccumulate = true;
    static constexpr bool kAddThenNorm = false;
    const T *win;
    T *x;
    win_geom g;
    __device__ const T *src(int r, int e) const { return win + (size_t)r * g.C + e; }
    __device__ T *dst(int r, int e) const { return x + token_src(g, r) * g.C + e; }
};

template <typename T> struct reverse_ln_map {   /* x[t] += win[r]; out[t] = LN(x[t]), t = token_src(r) */
    static constexpr bool kAccumulate = true;
    static constexpr bool kAddThenNorm = true;
    const T *win;
    T *x, *o;
    win_geom g;
    __device__ const T *src(int r, int e) const { return win + (size_t)r * g.C + e; }
    __device__ T *dst(int r, int e) const { return x + token_src(g, r) * g.C + e; }
    __device__ T *out(int r, int e) const { return o + token_src(g, r) * g.C + e; }
};

// ---- op entries

/* Validate the geometry; fill g and the row count. */
static swin_status check_dims(const char *op, const swin_dims *d, swin_dtype dt, win_geom *g, int *rows) {
    SWIN_TRY(swin_check_dtype(op, dt));
    if (!d) return swin_fail(SWIN_ERR_ARGUMENT, "%s: dims is NULL", op);
    if (d->B <= 0 || d->res <= 0 || d->C <= 0 || d->window <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: B %d, res %d, C %d and window %d must be positive", op,
                         d->B, d->res, d->C, d->window);
    if (d->res % d->window)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: resolution %d is not a multiple of window %d", op,
                         d->res, d->window);
    if (d->shift < 0 || d->shift >= d->window)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: shift %d outside [0, window %d)", op, d->shift, d->window);
    if ((long long)d->B * d->res * d->res > 0x7fffffffLL)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: %d images of %dx%d tokens are too many", op, d->B,
                         d->res, d->res);
    g->res = d->res;
    g->window = d->window;
    g->shift = d->shift;
    g->nwx = d->res / d->window;
    g->nw = g->nwx * g->nwx;
    g->N = d->window * d->window;
    g->C = d->C;
    g->fN = make_fdiv(g->N);
    g->fnw = make_fdiv(g->nw);
    g->fnwx = make_fdiv(g->nwx);
    g->fwin = make_fdiv(g->window);
    *rows = d->B * d->res * d->res;
    return SWIN_OK;
}

/* check_dims, plus the window buffer, the token buffer x (distinct) and the LayerNorm pair */
static swin_status check_args(const char *op, const swin_dims *d, swin_dtype dt, win_geom *g, int *rows,
                              const void *win, const void *x, const float *ln_w, const float *ln_b,
                              int ln_optional) {
    SWIN_TRY(check_dims(op, d, dt, g, rows));
    SWIN_TRY(swin_check_ptr(op, "win", win, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ln(op, ln_w, ln_b, ln_optional));
    if (win == x) return swin_fail(SWIN_ERR_ARGUMENT, "%s: win and x are the same buffer", op);
    return SWIN_OK;
}

extern "C" swin_status swin_ln_shift_partition_cuda(void *win, const void *x, const float *ln_w,
                                                    const float *ln_b, const swin_dims *d,
                                                    swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_ln_shift_partition_cuda";
    win_geom g;
    int rows;
    SWIN_TRY(check_args(op, d, dt, &g, &rows, win, x, ln_w, ln_b, 1));
    int vec_ok = swin_aligned16(win) && swin_aligned16(x);
    SWIN_DISPATCH(dt, T, {
        partition_map<T> m = {(const T *)x, (T *)win, g};
        return swin_row_ln_launch<T>("ln_shift_partition_kernel", m, vec_ok, ln_w, ln_b, rows, d->C,
                                     d->eps, st);
    });
    return SWIN_OK;
}

extern "C" swin_status swin_window_reverse_residual_cuda(void *x, const void *win, const float *ln_w,
                                                         const float *ln_b, const swin_dims *d,
                                                         swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_window_reverse_residual_cuda";
    win_geom g;
    int rows;
    SWIN_TRY(check_args(op, d, dt, &g, &rows, win, x, ln_w, ln_b, 1));
    int vec_ok = swin_aligned16(win) && swin_aligned16(x);
    SWIN_DISPATCH(dt, T, {
        reverse_map<T> m = {(const T *)win, (T *)x, g};
        return swin_row_ln_launch<T>("window_reverse_residual_kernel", m, vec_ok, ln_w, ln_b, rows,
                                     d->C, d->eps, st);
    });
    return SWIN_OK;
}

extern "C" swin_status swin_window_reverse_residual_ln_cuda(void *x, void *out, const void *win,
                                                            const float *ln_w, const float *ln_b,
                                                            const swin_dims *d, swin_dtype dt,
                                                            cudaStream_t st) {
    static const char op[] = "swin_window_reverse_residual_ln_cuda";
    win_geom g;
    int rows;
    SWIN_TRY(check_args(op, d, dt, &g, &rows, win, x, ln_w, ln_b, 0));
    SWIN_TRY(swin_check_ptr(op, "out", out, swin_dtype_size(dt)));
    if (out == win || out == x)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x, out and win must be three different buffers", op);
    int vec_ok = swin_aligned16(win) && swin_aligned16(x) && swin_aligned16(out);
    SWIN_DISPATCH(dt, T, {
        reverse_ln_map<T> m = {(const T *)win, (T *)x, (T *)out, g};
        return swin_row_ln_launch<T>("window_reverse_residual_ln_kernel", m, vec_ok, ln_w, ln_b, rows,
                                     d->C, d->eps, st);
    });
    return SWIN_OK;
}
