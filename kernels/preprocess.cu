/* preprocess.cu - image preprocessing op (kernels/ops.h swin_preprocess_cuda): RGB8 images of any
 * sizes -> normalised fp32 [n, 3, S, S], bit-identical to swin_preprocess_image
 * (src/image/preprocess.c) applied to each image.
 *
 * The host plans every image (src/image/resize.h swin_resize_plan: Pillow's pass order, regions
 * and 22-bit fixed-point coefficients; src/cuda/images.c flattens it into a swin_pre_image record),
 * so the GPU uses exactly the CPU's weights and the same integer arithmetic:
 *   pass 1  pre_pass1_kernel   the first resize pass of each image that has an intermediate
 *                              (horizontal over source rows [r0, r1), or vertical over source
 *                              columns [c0, c1)) into tmp, RGB8, rounded and clipped like the CPU
 *   pass 2  pre_pass2_kernel   per output pixel: the second pass over the intermediate (or over the
 *                              source when the first pass was skipped), a copy when the second pass
 *                              is skipped, or the nearest lookup; 0 outside the resized image
 *                              (CenterCrop padding); then normalise and write CHW
 * Grid: x = image (records loaded once per block into shared memory), y = a block-stride loop over
 * that image's pixels; 256 threads, one pixel (3 channels) each. Blocks of small images in a mixed
 * batch exit at once.
 * Bit-exactness: sums are int64 as in resize.c (exact, so the order of taps does not matter);
 * normalisation uses explicitly rounded IEEE operations (__fdiv_rn, __fsub_rn, __dmul_rn,
 * __double2float_rn) in the order of preprocess.c, so no contraction or approximate division can
 * creep in whatever the flags.
 * Test: tests/test_gpu_preprocess.c.
 */
#include <math.h>
#include <stdint.h>

#include "image.h"
#include "resize.h"
#include "row.cuh"

#define PRE_BLOCK 256
#define PRE_MAX_IMAGES 65536
#define PRE_MAX_Y_BLOCKS 65535u

// ---- device helpers

/* resize.c clip8: round (the sum started at half a unit) and clamp to 8 bits */
__device__ __forceinline__ uint8_t pre_clip8(long long ss) {
    if (ss < 0) return 0;
    ss >>= SWIN_RESIZE_PRECISION_BITS;
    return ss > 255 ? 255 : (uint8_t)ss;
}

/* v[c] = clip8(sum_t p[t * step + c] * k[t]) for the 3 channels: one output of a resize pass.
 * step: bytes between taps (3 along a row, the row pitch down a column). */
__device__ __forceinline__ void pre_filter3(const uint8_t *__restrict__ p, long long step,
                                            const int32_t *__restrict__ k, int count, uint8_t v[3]) {
    long long s0 = 1ll << (SWIN_RESIZE_PRECISION_BITS - 1), s1 = s0, s2 = s0;
    for (int t = 0; t < count; t++) {
        const long long kt = k[t];
        const uint8_t *q = p + t * step;
        s0 += q[0] * kt;
        s1 += q[1] * kt;
        s2 += q[2] * kt;
    }
    v[0] = pre_clip8(s0);
    v[1] = pre_clip8(s1);
    v[2] = pre_clip8(s2);
}

/* The image the second pass reads ("mid"): pixel (row R, column C) at
 * p + ((R - row0) * stride + (C - col0)) * 3. Rows and columns are those of the axis the second pass
 * does not filter in resized coordinates, and of the axis it filters in its input's coordinates. */
struct pre_mid {
    const uint8_t *p;
    long long stride;
    int row0, col0;
};

__device__ __forceinline__ pre_mid pre_mid_of(const swin_pre_image &r, const uint8_t *src, const uint8_t *tmp) {
    if (r.mode == SWIN_PRE_H_FIRST && !r.need_h) return {src + r.src, r.w, 0, 0};   /* sw == dw */
    if (r.mode == SWIN_PRE_H_FIRST) return {tmp + r.tmp, r.ix1 - r.ix0, r.r0, r.ix0};
    return {tmp + r.tmp, r.c1 - r.c0, r.iy0, r.c0};                                 /* V_FIRST */
}

struct pre_norm {
    float mean[3], std[3];
    int hf;
};

/* preprocess.c: timm v = (float)u / 255.0f; hf v = (float)((double)u * (1.0 / 255.0));
 * then (v - mean) / std, each operation rounded to nearest as on the host. */
__device__ __forceinline__ float pre_normalise(unsigned u, float mean, float std, int hf) {
    const float v = hf ? __double2float_rn(__dmul_rn((double)u, 1.0 / 255.0)) : __fdiv_rn((float)u, 255.0f);
    return __fdiv_rn(__fsub_rn(v, mean), std);
}

// ---- kernels

/* Pass 1: tmp of each image that has one (swin_pre_tmp_pixels), one RGB8 pixel per thread. */
static __global__ void pre_pass1_kernel(uint8_t *__restrict__ tmp, const uint8_t *__restrict__ src,
                                        const swin_pre_image *__restrict__ recs,
                                        const int32_t *__restrict__ coef) {
    __shared__ swin_pre_image r;
    if (threadIdx.x == 0) r = recs[blockIdx.x];
    __syncthreads();
    const long long npx = swin_pre_tmp_pixels(&r);
    const long long step = (long long)gridDim.y * blockDim.x;
    const uint8_t *img = src + r.src;
    uint8_t *t = tmp + r.tmp;
    if (r.mode == SWIN_PRE_H_FIRST) {   /* [r1 - r0, nx]: horizontal pass of source rows */
        const int nx = r.ix1 - r.ix0;
        const int32_t *first = coef + r.coef_h, *count = first + nx, *k = count + nx;
        for (long long q = (long long)blockIdx.y * blockDim.x + threadIdx.x; q < npx; q += step) {
            const int row = (int)(q / nx), i = (int)(q - (long long)row * nx);
            pre_filter3(img + ((long long)(r.r0 + row) * r.w + first[i]) * 3, 3, k + (long long)i * r.ksize_h,
                        count[i], t + q * 3);
        }
    } else {                            /* [ny, c1 - c0]: vertical pass of source columns */
        const int ny = r.iy1 - r.iy0, cols = r.c1 - r.c0;
        const int32_t *first = coef + r.coef_v, *count = first + ny, *k = count + ny;
        for (long long q = (long long)blockIdx.y * blockDim.x + threadIdx.x; q < npx; q += step) {
            const int j = (int)(q / cols), cc = (int)(q - (long long)j * cols);
            pre_filter3(img + ((long long)first[j] * r.w + r.c0 + cc) * 3, (long long)r.w * 3,
                        k + (long long)j * r.ksize_v, count[j], t + q * 3);
        }
    }
}

/* The RGB8 value of visible window pixel (i, j) (resized (ix0 + i, iy0 + j)). */
__device__ __forceinline__ void pre_pixel(const swin_pre_image &r, const pre_mid &m, const uint8_t *src,
                                          const int32_t *__restrict__ coef, int i, int j, uint8_t v[3]) {
    const int nx = r.ix1 - r.ix0, ny = r.iy1 - r.iy0;
    if (r.mode == SWIN_PRE_NEAREST) {
        const int xs = coef[r.coef_h + i], ys = coef[r.coef_v + j];
        if (xs >= 0 && ys >= 0) {
            const uint8_t *p = src + r.src + ((long long)ys * r.w + xs) * 3;
            v[0] = p[0], v[1] = p[1], v[2] = p[2];
        }
        return;
    }
    const int xx = r.ix0 + i, yy = r.iy0 + j;
    if (r.mode == SWIN_PRE_H_FIRST && r.need_v) {          /* vertical over mid rows */
        const int32_t *first = coef + r.coef_v, *count = first + ny, *k = count + ny + (long long)j * r.ksize_v;
        pre_filter3(m.p + ((long long)(first[j] - m.row0) * m.stride + (xx - m.col0)) * 3, m.stride * 3, k,
                    count[j], v);
    } else if (r.mode == SWIN_PRE_V_FIRST && r.need_h) {   /* horizontal over mid columns */
        const int32_t *first = coef + r.coef_h, *count = first + nx, *k = count + nx + (long long)i * r.ksize_h;
        pre_filter3(m.p + ((long long)(yy - m.row0) * m.stride + (first[i] - m.col0)) * 3, 3, k, count[i], v);
    } else {                                               /* the second pass is skipped */
        const uint8_t *p = m.p + ((long long)(yy - m.row0) * m.stride + (xx - m.col0)) * 3;
        v[0] = p[0], v[1] = p[1], v[2] = p[2];
    }
}

/* Pass 2: out [n, 3, S, S], one output pixel (3 channels) per thread. */
static __global__ void pre_pass2_kernel(float *__restrict__ out, const uint8_t *__restrict__ src,
                                        const uint8_t *__restrict__ tmp,
                                        const swin_pre_image *__restrict__ recs,
                                        const int32_t *__restrict__ coef, int S, pre_norm nm) {
    __shared__ swin_pre_image r;
    if (threadIdx.x == 0) r = recs[blockIdx.x];
    __syncthreads();
    const int plane = S * S, nx = r.ix1 - r.ix0, ny = r.iy1 - r.iy0;   /* S <= 16384: plane < 2^31 */
    const pre_mid m = pre_mid_of(r, src, tmp);
    float *o = out + (size_t)blockIdx.x * 3 * plane;
    for (int q = blockIdx.y * blockDim.x + threadIdx.x; q < plane; q += gridDim.y * blockDim.x) {
        const int y = q / S, x = q - y * S;
        const int i = r.wx0 + x - r.ix0, j = r.wy0 + y - r.iy0;
        uint8_t v[3] = {0, 0, 0};
        if (i >= 0 && i < nx && j >= 0 && j < ny) pre_pixel(r, m, src, coef, i, j, v);
#pragma unroll
        for (int c = 0; c < 3; c++) o[(size_t)c * plane + q] = pre_normalise(v[c], nm.mean[c], nm.std[c], nm.hf);
    }
}

// ---- launcher

static unsigned pre_y_blocks(long long pixels) {
    long long b = (pixels + PRE_BLOCK - 1) / PRE_BLOCK;
    return b < 1 ? 1u : b > (long long)PRE_MAX_Y_BLOCKS ? PRE_MAX_Y_BLOCKS : (unsigned)b;
}

/* max_tmp_px: the largest intermediate (0: pass 1 is skipped). recs/coef: the device copies. */
static swin_status pre_launch(float *out, const uint8_t *src, uint8_t *tmp, const swin_pre_image *recs,
                              const int32_t *coef, int n, int S, const pre_norm &nm, long long max_tmp_px,
                              cudaStream_t st) {
    if (max_tmp_px > 0) {
        pre_pass1_kernel<<<dim3((unsigned)n, pre_y_blocks(max_tmp_px)), PRE_BLOCK, 0, st>>>(tmp, src, recs, coef);
        SWIN_LAUNCH_CHECK("pre_pass1_kernel", st);
    }
    pre_pass2_kernel<<<dim3((unsigned)n, pre_y_blocks((long long)S * S)), PRE_BLOCK, 0, st>>>(out, src, tmp, recs,
                                                                                              coef, S, nm);
    SWIN_LAUNCH_CHECK("pre_pass2_kernel", st);
    return SWIN_OK;
}

// ---- op entry: everything the kernels will read is checked on the host first

/* One axis block [first | count | k] of n outputs at off: inside coef, every tap range in [lo, hi). */
static swin_status check_axis(const char *op, int img, char axis, const swin_pre_batch *b, long long off,
                              int n, int ksize, int lo, int hi) {
    if (ksize < 1) return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: axis %c has ksize %d", op, img, axis, ksize);
    long long len = (long long)n * (2 + (long long)ksize);
    if (off < 0 || (unsigned long long)off > b->n_coef || (unsigned long long)len > b->n_coef - (size_t)off)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: axis %c coefficients [%lld, %lld) outside the %zu given",
                         op, img, axis, off, off + len, b->n_coef);
    const int32_t *first = b->coef + off, *count = first + n;
    for (int t = 0; t < n; t++)
        if (count[t] < 0 || count[t] > ksize || first[t] < lo || (long long)first[t] + count[t] > hi)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: axis %c output %d taps [%d, +%d) outside [%d, %d) "
                             "(ksize %d)", op, img, axis, t, first[t], count[t], lo, hi, ksize);
    return SWIN_OK;
}

/* A nearest table of n source indices at off: inside coef, each in [-1, size). */
static swin_status check_nearest(const char *op, int img, char axis, const swin_pre_batch *b, long long off,
                                 int n, int size) {
    if (off < 0 || (unsigned long long)off > b->n_coef || (size_t)n > b->n_coef - (size_t)off)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: nearest table %c [%lld, %lld) outside the %zu "
                         "coefficients", op, img, axis, off, off + n, b->n_coef);
    for (int t = 0; t < n; t++)
        if (b->coef[off + t] < -1 || b->coef[off + t] >= size)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: nearest %c[%d] = %d outside [-1, %d)", op, img,
                             axis, t, b->coef[off + t], size);
    return SWIN_OK;
}

static swin_status check_image(const char *op, const swin_pre_batch *b, int i, size_t src_bytes,
                               const uint8_t *tmp, size_t tmp_bytes) {
    const swin_pre_image *r = &b->img[i];
    const long long S = b->size;
    if (r->w < 1 || r->h < 1) return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d is empty (%dx%d)", op, i, r->w, r->h);
    long long px_bytes = (long long)r->w * r->h * 3;
    if (r->src < 0 || (unsigned long long)r->src > src_bytes || (unsigned long long)px_bytes > src_bytes - (size_t)r->src)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d (%dx%d): pixels [%lld, %lld) outside src (%zu bytes)", op,
                         i, r->w, r->h, r->src, r->src + px_bytes, src_bytes);
    if (r->mode < SWIN_PRE_NEAREST || r->mode > SWIN_PRE_V_FIRST || (r->need_h & ~1) || (r->need_v & ~1))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: bad mode %d / need_h %d / need_v %d", op, i, r->mode,
                         r->need_h, r->need_v);
    long long nx = (long long)r->ix1 - r->ix0, ny = (long long)r->iy1 - r->iy0;
    if (nx < 0 || ny < 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: visible part [%d, %d) x [%d, %d) is reversed", op, i,
                         r->ix0, r->ix1, r->iy0, r->iy1);
    if (nx == 0 || ny == 0) return SWIN_OK;   /* the window misses the image: nothing is read */
    if (r->ix0 < r->wx0 || r->ix1 > r->wx0 + S || r->iy0 < r->wy0 || r->iy1 > r->wy0 + S)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: visible part [%d, %d) x [%d, %d) outside the window "
                         "at (%d, %d) of %lld", op, i, r->ix0, r->ix1, r->iy0, r->iy1, r->wx0, r->wy0, S);
    if (r->mode == SWIN_PRE_NEAREST) {
        SWIN_TRY(check_nearest(op, i, 'h', b, r->coef_h, (int)nx, r->w));
        return check_nearest(op, i, 'v', b, r->coef_v, (int)ny, r->h);
    }
    if (r->mode == SWIN_PRE_H_FIRST) {
        if (r->r0 < 0 || r->r0 > r->r1 || r->r1 > r->h)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: rows [%d, %d) outside [0, %d)", op, i, r->r0, r->r1, r->h);
        if (r->need_h) SWIN_TRY(check_axis(op, i, 'h', b, r->coef_h, (int)nx, r->ksize_h, 0, r->w));
        else if (r->ix0 < 0 || r->ix1 > r->w)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: copied columns [%d, %d) outside [0, %d)", op, i,
                             r->ix0, r->ix1, r->w);
        if (r->need_v) SWIN_TRY(check_axis(op, i, 'v', b, r->coef_v, (int)ny, r->ksize_v, r->r0, r->r1));
        else if (r->iy0 < r->r0 || r->iy1 > r->r1)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: copied rows [%d, %d) outside [%d, %d)", op, i, r->iy0,
                             r->iy1, r->r0, r->r1);
    } else {
        if (!r->need_v)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: vertical-first without a vertical pass", op, i);
        if (r->c0 < 0 || r->c0 > r->c1 || r->c1 > r->w)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: columns [%d, %d) outside [0, %d)", op, i, r->c0,
                             r->c1, r->w);
        SWIN_TRY(check_axis(op, i, 'v', b, r->coef_v, (int)ny, r->ksize_v, 0, r->h));
        if (r->need_h) SWIN_TRY(check_axis(op, i, 'h', b, r->coef_h, (int)nx, r->ksize_h, r->c0, r->c1));
        else if (r->ix0 < r->c0 || r->ix1 > r->c1)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: copied columns [%d, %d) outside [%d, %d)", op, i,
                             r->ix0, r->ix1, r->c0, r->c1);
    }
    long long tp = swin_pre_tmp_pixels(r);
    if (tp > 0 && (!tmp || r->tmp < 0 || (unsigned long long)r->tmp > tmp_bytes ||
                   (unsigned long long)(tp * 3) > tmp_bytes - (size_t)r->tmp))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: intermediate [%lld, %lld) outside tmp (%zu bytes)", op, i,
                         r->tmp, r->tmp + tp * 3, tmp_bytes);
    return SWIN_OK;
}

extern "C" swin_status swin_preprocess_cuda(float *out, const uint8_t *src, size_t src_bytes, uint8_t *tmp,
                                            size_t tmp_bytes, void *meta, size_t meta_bytes,
                                            const swin_pre_batch *b, cudaStream_t st) {
    static const char op[] = "swin_preprocess_cuda";
    if (!b) return swin_fail(SWIN_ERR_ARGUMENT, "%s: batch is NULL", op);
    if (b->n < 1 || b->n > PRE_MAX_IMAGES)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: %d images, expected 1 to %d", op, b->n, PRE_MAX_IMAGES);
    if (b->size < 1 || b->size > SWIN_IMAGE_MAX_SIDE)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: output size %d outside [1, %d]", op, b->size, SWIN_IMAGE_MAX_SIDE);
    if (b->style != SWIN_PRE_TIMM && b->style != SWIN_PRE_HF)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: unknown style %d", op, (int)b->style);
    for (int c = 0; c < 3; c++)
        if (!(b->std[c] != 0.0f) || !isfinite(b->std[c]) || !isfinite(b->mean[c]))
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: bad mean/std for channel %d (%g, %g)", op, c, b->mean[c],
                             b->std[c]);
    if (!b->img || (b->n_coef && !b->coef))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL records or coefficients", op);
    SWIN_TRY(swin_check_ptr(op, "out", out, sizeof(float)));
    SWIN_TRY(swin_check_ptr(op, "src", src, 1));
    SWIN_TRY(swin_check_ptr(op, "meta", meta, 16));
    const size_t coef_off = swin_pre_meta_coef_offset(b->n), need = swin_pre_meta_bytes(b->n, b->n_coef);
    if (meta_bytes < need)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: meta has %zu bytes, %d images and %zu coefficients need %zu", op,
                         meta_bytes, b->n, b->n_coef, need);
    long long max_tmp = 0;
    for (int i = 0; i < b->n; i++) {
        SWIN_TRY(check_image(op, b, i, src_bytes, tmp, tmp_bytes));
        long long tp = swin_pre_tmp_pixels(&b->img[i]);
        if (tp > max_tmp) max_tmp = tp;
    }

    /* the plan to the device: one transfer when the host copy already has the meta layout */
    char *m = (char *)meta;
    const char *h = (const char *)b->img;
    if (b->n_coef == 0 || (const char *)b->coef == h + coef_off) {
        SWIN_CUDA_TRY(cudaMemcpyAsync(m, h, b->n_coef ? need : (size_t)b->n * sizeof(swin_pre_image),
                                      cudaMemcpyHostToDevice, st));
    } else {
        SWIN_CUDA_TRY(cudaMemcpyAsync(m, h, (size_t)b->n * sizeof(swin_pre_image), cudaMemcpyHostToDevice, st));
        SWIN_CUDA_TRY(cudaMemcpyAsync(m + coef_off, b->coef, b->n_coef * sizeof(int32_t), cudaMemcpyHostToDevice, st));
    }
    pre_norm nm;
    for (int c = 0; c < 3; c++) nm.mean[c] = b->mean[c], nm.std[c] = b->std[c];
    nm.hf = b->style == SWIN_PRE_HF;
    return pre_launch(out, src, tmp, (const swin_pre_image *)m, (const int32_t *)(m + coef_off), b->n, b->size,
                      nm, max_tmp, st);
}
