/* patch.cu - patch embedding and patch merging ops (kernels/ops.h):
 *   swin_im2col_patch_cuda   cols [B*gh*gw, 3*p*p] (dt) <- img [B, 3, H, W] (fp32), zero past the image
 *   swin_add_pos_cuda        x [B, L, C] += pos [L, C]
 *   swin_merge_gather_cuda   out [B*ceil(H/2)*ceil(W/2), 4C] <- 2x2 gather of x [B, H, W, C] in
 *                            timm order (y0 x0, y1 x0, y0 x1, y1 x1), zeros past an odd grid, then
 *                            LN over 4C when ln_w (V1); optionally also (q8) the E4M3 copy of out
 *                            that the FP8 reduction GEMM reads (swin_q8_dst, ops.h)
 * CPU counterparts: swin_im2col_patch_cpu, swin_add_pos_cpu, swin_merge_gather_cpu.
 * The merge is the generic row kernel of row.cuh with a 4-segment gather map.
 * Test: tests/test_gpu_kernels.c (cases "im2col", "add_pos", "merge", and the "q8 merge" cases).
 */
#include "row.cuh"

// ---- im2col
// General: one thread per output element. Patch 4 (every Swin preset), W % 4 == 0 and W <= 1024:
// one block per band of 4 image rows of one image; the band (3 channels x 4 rows x W, fp32) is
// read with coalesced 16-byte loads into shared memory, then the band's wp patch rows, which are
// contiguous in cols, are written out with coalesced packs of 4 columns.

template <typename T>
static __global__ void im2col_patch_kernel(T *__restrict__ cols, const float *__restrict__ img, int B,
                                           int H, int W, int p, int hp, int wp) {
    swin_pdl_begin();
    const int K = 3 * p * p;
    const size_t n = (size_t)B * hp * wp * K;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / K;
        const int col = (int)(i - row * K);
        const int c = col / (p * p), ky = (col / p) % p, kx = col % p;
        const int px = (int)(row % wp), py = (int)((row / wp) % hp);
        const size_t b = row / ((size_t)wp * hp);
        const int y = py * p + ky, x = px * p + kx;   /* past the image: the zero padding */
        store_f(cols, i, y < H && x < W ? __ldg(img + ((b * 3 + c) * H + y) * W + x) : 0.0f);
    }
}

#define IM2COL4_MAX_W 1000   /* 12 * (W + 4) floats of shared memory, under 48 KiB */

template <typename T>
static __global__ void im2col_patch4_kernel(T *__restrict__ cols, const float *__restrict__ img, int H, int W) {
    swin_pdl_begin();
    /* [3 * 4][W + 4]: the (c, ky) rows of the band, padded by 4 floats against bank conflicts */
    extern __shared__ float4 band4[];
    const int hp = H / 4, wp = W / 4, ld4 = wp + 1, band_idx = blockIdx.x;   /* (b, py) */
    const int b = band_idx / hp, py = band_idx - b * hp;
    for (int i = threadIdx.x; i < 12 * wp; i += blockDim.x) {
        const int cq = i / wp, x4 = i - cq * wp, c = cq >> 2, ky = cq & 3;
        band4[cq * ld4 + x4] = __ldg(reinterpret_cast<const float4 *>(img + (((size_t)b * 3 + c) * H + py * 4 + ky) * W) + x4);
    }
    __syncthreads();
    T *out = cols + (size_t)band_idx * wp * 48;   /* the band's wp rows of 48 columns */
    for (int q = threadIdx.x; q < wp * 12; q += blockDim.x) {   /* q: 4 columns (c, ky, 0..3) of row px */
        const int px = q / 12, cq = q - px * 12;
        const float4 f = band4[cq * ld4 + px];
        float v[4] = {f.x, f.y, f.z, f.w};
        pack_store<T, 4>(out + (size_t)q * 4, v);
    }
}

template <typename T>
static swin_status im2col_launch(T *cols, const float *img, int B, int H, int W, int p, int gh, int gw,
                                 cudaStream_t st) {
    /* the band kernel covers the grid floor(H/4) x W/4 of a W that is a multiple of 4 */
    if (p == 4 && W % 4 == 0 && gh == H / 4 && gw == W / 4 && W <= IM2COL4_MAX_W && swin_aligned16(img) &&
        swin_aligned16(cols)) {
        const size_t smem = (size_t)12 * (W + 4) * sizeof(float);
        swin_launch(im2col_patch4_kernel<T>, (unsigned)(B * (H / 4)), 256, smem, st, cols, img, H, W);
        SWIN_LAUNCH_CHECK("im2col_patch4_kernel", st);
        return SWIN_OK;
    }
    const size_t n = (size_t)B * gh * gw * 3 * p * p;
    swin_launch(im2col_patch_kernel<T>, swin_grid_for(n), 256, 0, st, cols, img, B, H, W, p, gh, gw);
    SWIN_LAUNCH_CHECK("im2col_patch_kernel", st);
    return SWIN_OK;
}

// ---- absolute position embedding: packs of V elements, pos broadcast over the batch

template <typename T, int V>
static __global__ void add_pos_kernel(T *__restrict__ x, const T *__restrict__ pos, size_t packs,
                                      size_t pos_packs) {
    swin_pdl_begin();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += (size_t)gridDim.x * blockDim.x) {
        float a[V], b[V];
        pack_load<T, V>(a, x + i * V);
        pack_load<T, V>(b, pos + (i % pos_packs) * V);
#pragma unroll
        for (int k = 0; k < V; k++) a[k] += b[k];
        pack_store<T, V>(x + i * V, a);
    }
}

template <typename T>
static swin_status add_pos_launch(T *x, const T *pos, int B, int L, int C, cudaStream_t st) {
    constexpr int VV = swin_vec<T>::n;
    const size_t lc = (size_t)L * C, n = lc * B;
    if (swin_aligned16(x) && swin_aligned16(pos) && lc % VV == 0)
        swin_launch(add_pos_kernel<T, VV>, swin_grid_for(n / VV), 256, 0, st, x, pos, n / VV, lc / VV);
    else
        swin_launch(add_pos_kernel<T, 1>, swin_grid_for(n), 256, 0, st, x, pos, n, lc);
    SWIN_LAUNCH_CHECK("add_pos_kernel", st);
    return SWIN_OK;
}

// ---- patch merging: row r = (b, i, j) of the half-resolution grid, 4C values

template <typename T> struct merge_map {
    static constexpr bool kAccumulate = false;
    static constexpr bool kAddThenNorm = false;
    static constexpr bool kQ8 = false;
    const T *x;
    T *out;
    int H, W, C;   /* output grid ceil(H/2) x ceil(W/2): an odd grid's last row / column pads with zeros */
    struct Row {
        int r, b, y0, x0;   /* output row r: image b, top-left input token (y0, x0) of its 2x2 */
    };
    __device__ Row row(int r) const {
        const int h2 = (H + 1) / 2, w2 = (W + 1) / 2, i = (r / w2) % h2, j = r % w2;
        return Row{r, r / (h2 * w2), 2 * i, 2 * j};
    }
    __device__ bool skip(const Row &) const { return false; }
    /* neighbour (y, xx) of the row and the channel off that element e of the row is */
    __device__ void at(const Row &R, int e, int *y, int *xx, int *off) const {
        const int q = e / C, dy = q & 1, dx = q >> 1;   /* q: (0,0) (1,0) (0,1) (1,1) */
        *y = R.y0 + dy, *xx = R.x0 + dx, *off = e - q * C;
    }
    __device__ bool zero(const Row &R, int e) const {
        if (!((H | W) & 1)) return false;   /* even grid: every neighbour exists */
        int y, xx, off;
        at(R, e, &y, &xx, &off);
        return y >= H || xx >= W;
    }
    __device__ const T *src(const Row &R, int e) const {
        int y, xx, off;
        at(R, e, &y, &xx, &off);
        return x + (((size_t)R.b * H + y) * W + xx) * C + off;
    }
    __device__ T *dst(const Row &R, int e) const { return out + (size_t)R.r * 4 * C + e; }
    __device__ size_t oidx(const Row &R, int e) const { return (size_t)R.r * 4 * C + e; }   /* the E4M3 copy's */
};

// ---- op entries

extern "C" swin_status swin_im2col_patch_cuda(void *cols, const float *img, int B, int H, int W, int p, int gh,
                                              int gw, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_im2col_patch_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (B <= 0 || H <= 0 || W <= 0 || p <= 0 || gh <= 0 || gw <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: B %d, H %d, W %d, patch %d and grid %dx%d must be positive", op,
                         B, H, W, p, gh, gw);
    if (gh > (H + p - 1) / p || gw > (W + p - 1) / p)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: a %dx%d grid of %d-pixel patches does not fit a %dx%d image", op,
                         gh, gw, p, H, W);
    SWIN_TRY(swin_check_ptr(op, "cols", cols, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, "img", img, sizeof(float)));
    SWIN_DISPATCH(dt, T, return im2col_launch<T>((T *)cols, img, B, H, W, p, gh, gw, st));
    return SWIN_OK;
}

extern "C" swin_status swin_add_pos_cuda(void *x, const void *pos, int B, int L, int C, swin_dtype dt,
                                         cudaStream_t st) {
    static const char op[] = "swin_add_pos_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (B <= 0 || L <= 0 || C <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: B %d, L %d and C %d must be positive", op, B, L, C);
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, "pos", pos, swin_dtype_size(dt)));
    SWIN_DISPATCH(dt, T, return add_pos_launch<T>((T *)x, (const T *)pos, B, L, C, st));
    return SWIN_OK;
}

extern "C" swin_status swin_merge_gather_cuda(void *out, const void *x, const float *ln_w,
                                              const float *ln_b, int B, int H, int W, int C, float eps,
                                              const swin_q8_dst *q8, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_merge_gather_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (B <= 0 || H <= 0 || W <= 0 || C <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: B %d, H %d, W %d and C %d must be positive", op, B, H, W, C);
    if ((long long)B * H * W > 0x7fffffffLL || C > 0x1fffffff)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: %d images of %dx%dx%d are too large", op, B, H, W, C);
    SWIN_TRY(swin_check_ptr(op, "out", out, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ln(op, ln_w, ln_b, 1));
    if (out == x) return swin_fail(SWIN_ERR_ARGUMENT, "%s: out and x are the same buffer", op);
    swin_q8_dst q;
    SWIN_TRY(swin_check_q8(op, q8, &q));
    const int rows = B * ((H + 1) / 2) * ((W + 1) / 2);
    SWIN_DISPATCH(dt, T, {
        /* packs must not straddle the four C-long segments */
        int vec_ok = swin_aligned16(out) && swin_aligned16(x) && C % swin_vec<T>::n == 0;
        merge_map<T> m = {(const T *)x, (T *)out, H, W, C};
        return swin_row_ln_launch_q8<T>("merge_gather_kernel", m, q, vec_ok, ln_w, ln_b, rows, 4 * C, eps, st);
    });
    return SWIN_OK;
}
