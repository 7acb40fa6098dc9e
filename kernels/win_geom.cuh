/* win_geom.cuh - the window partition's index map on the GPU: which token of the un-shifted
 * image a window row holds (token_src(), the map of src/layers_cpu.c's token_src()), for the
 * window ops (window.cu) and the GEMM that writes proj's output back to the image
 * (sm90/gemm_tma_fold.cuh, the scatter epilogue). swin_win_geom validates a swin_dims and fills
 * the map's constants (window.cu).
 */
#ifndef SWIN_WIN_GEOM_CUH
#define SWIN_WIN_GEOM_CUH

#include "common.cuh"
#include "layers.h"

/* Division by a divisor fixed at launch: q = umulhi(n, mul) >> shr (Granlund & Montgomery, the
 * form CUTLASS's FastDivmod uses), exact for 0 <= n < 2^31. The token map divides 4 times per row;
 * with hardware-less integer division (~25 instructions each) that made these kernels
 * instruction-bound. */
struct swin_fdiv {
    int d;
    unsigned mul, shr;
};

static inline swin_fdiv make_fdiv(int d) {
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
    int res_h, res_w, win_h, win_w, shift_h, shift_w, hp, wp, nwx, nw, N, C;
    int pad_first;   /* swin_dims.pad_first: 0 timm (roll, then pad), 1 transformers (pad, then roll) */
    int padded;      /* hp > res_h or wp > res_w: some window rows are padding tokens */
    swin_fdiv fN, fnw, fnwx, fwinw;
};

/* Image coordinate of coordinate p of the shifted, padded grid along one dimension (res tokens
 * padded to n, cyclic shift s < window <= n), or -1 for a padding token: unshift() of
 * src/layers_cpu.c. p + s < 2 n (and < 2 res in the timm order, where s < res whenever s > 0), so
 * one subtraction is the modulo. */
__device__ __forceinline__ int unshift_dim(int p, int res, int n, int s, int pad_first) {
    if (!pad_first) {   /* timm: roll on the res tokens, then pad */
        if (p >= res) return -1;
        const int y = p + s;
        return y >= res ? y - res : y;
    }
    int y = p + s;      /* transformers: pad to n, then roll on n */
    if (y >= n) y -= n;
    return y < res ? y : -1;
}

/* Token of window row r (= window * N + token) in the un-shifted image, row-major (b, y, x), or -1
 * for a padding token (token_src() of src/layers_cpu.c). */
__device__ __forceinline__ long long token_src(const win_geom &g, int r) {
    const int w = fdiv_q(r, g.fN), t = r - w * g.N;
    const int b = fdiv_q(w, g.fnw), wi = w - b * g.nw;
    const int wy = fdiv_q(wi, g.fnwx), wx = wi - wy * g.nwx;
    const int ty = fdiv_q(t, g.fwinw), tx = t - ty * g.win_w;
    const int y = unshift_dim(wy * g.win_h + ty, g.res_h, g.hp, g.shift_h, g.pad_first);
    const int x = unshift_dim(wx * g.win_w + tx, g.res_w, g.wp, g.shift_w, g.pad_first);
    if (y < 0 || x < 0) return -1;
    return ((long long)b * g.res_h + y) * g.res_w + x;
}

/* Validate the geometry of d; fill g and the number of window rows (padding tokens included). */
swin_status swin_win_geom(const char *op, const swin_dims *d, swin_dtype dt, win_geom *g, int *rows);

#endif
