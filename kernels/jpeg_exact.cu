/* jpeg_exact.cu - the GPU half of the split JPEG decode (kernels/ops.h swin_jpeg_exact_cuda):
 * DCT coefficients (entropy-decoded by kernels/jpeg_huff.cu, or on the CPU by swin_jpeg_read_coefs) to the
 * RGB8 pixels libjpeg gives, with the integer arithmetic of src/image/jpeg_exact.h, which the
 * CPU reference (src/image/jpeg_exact.c) runs too, so both give the same bits.
 *   pass 1  jx_idct_kernel    one thread per 8x8 block (swin_jx_block): dequantise, islow
 *                             IDCT, into the component's sample plane (scratch)
 *   pass 2  jx_pixel_kernel   one thread per output pixel (swin_jx_pixel): each component
 *                             upsampled at that pixel (libjpeg's fancy filters), YCbCr -> RGB
 * The CPU reference runs the same two functions in loops over the same records.
 * Grid: y = image, x = a block-stride range over that image's blocks / pixels (the records are
 * read from global memory; small images of a mixed batch exit at once).
 * Used by the exact GPU JPEG decoder (src/image/jpeg_gpu.c) after kernels/jpeg_huff.cu.
 * Test: tests/test_gpu_jpeg_exact.c (against the CPU reference on every fixture JPEG).
 */
#include <stdint.h>

#include "jpeg_exact.h"
#include "row.cuh"

#define JX_BLOCK 128
#define JX_MAX_IMAGES 65535

static __global__ void jx_idct_kernel(uint8_t *__restrict__ planes, const int16_t *__restrict__ coef,
                                      const swin_jx_image *__restrict__ imgs) {
    swin_jx_block(imgs + blockIdx.y, coef, planes, (long long)blockIdx.x * blockDim.x + threadIdx.x);
}

static __global__ void jx_pixel_kernel(uint8_t *__restrict__ dst, const uint8_t *__restrict__ planes,
                                       const swin_jx_image *__restrict__ imgs) {
    const swin_jx_image *r = imgs + blockIdx.y;
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < (long long)r->w * r->h) swin_jx_pixel(r, planes, dst, p);
}

/* the record's buffers within the given sizes, its layout one the kernels handle */
static swin_status jx_check(const char *op, int k, const swin_jx_image *r, size_t dst_bytes, size_t coef_elems,
                            size_t plane_bytes, long long *blocks, long long *pixels) {
    if ((r->nc != 1 && r->nc != 3) || r->w < 1 || r->h < 1 || r->rgb < 0 ||
        (unsigned long long)r->rgb + 3ull * r->w * r->h > dst_bytes)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: %d components, %dx%d at byte %lld of %zu", op, k, r->nc, r->w,
                         r->h, r->rgb, dst_bytes);
    *blocks = 0;
    for (int i = 0; i < r->nc; i++) {
        const long long nb = (long long)r->bw[i] * r->bh[i];
        const int ok = (r->fx[i] == 1 || r->fx[i] == 2) && (r->fy[i] == 1 || r->fy[i] == 2) && r->dw[i] >= 1 &&
                       r->dh[i] >= 1 && r->bw[i] * 8 >= r->dw[i] && r->bh[i] * 8 >= r->dh[i] &&
                       (long long)r->dw[i] * r->fx[i] >= r->w && (long long)r->dh[i] * r->fy[i] >= r->h &&
                       r->coef[i] >= 0 && (unsigned long long)r->coef[i] + 64ull * nb <= coef_elems && r->plane[i] >= 0 &&
                       (unsigned long long)r->plane[i] + 64ull * nb <= plane_bytes;
        if (!ok)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d component %d: a bad record (factors %dx%d, %dx%d samples, "
                             "%dx%d blocks, coefficients at %lld of %zu, plane at %lld of %zu)", op, k, i, r->fx[i],
                             r->fy[i], r->dw[i], r->dh[i], r->bw[i], r->bh[i], r->coef[i], coef_elems, r->plane[i],
                             plane_bytes);
        *blocks += nb;
    }
    *pixels = (long long)r->w * r->h;
    return SWIN_OK;
}

extern "C" swin_status swin_jpeg_exact_cuda(uint8_t *dst, size_t dst_bytes, const int16_t *coef, size_t coef_elems,
                                            uint8_t *planes, size_t plane_bytes, const swin_jx_image *img_host,
                                            swin_jx_image *img_dev, int n, cudaStream_t st) {
    static const char op[] = "swin_jpeg_exact_cuda";
    if (!dst || !coef || !planes || !img_host || !img_dev)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: a NULL buffer", op);
    if (n < 1 || n > JX_MAX_IMAGES) return swin_fail(SWIN_ERR_ARGUMENT, "%s: %d images (1 to %d)", op, n, JX_MAX_IMAGES);
    long long max_blocks = 0, max_pixels = 0;
    for (int k = 0; k < n; k++) {
        long long b, p;
        SWIN_TRY(jx_check(op, k, &img_host[k], dst_bytes, coef_elems, plane_bytes, &b, &p));
        if (b > max_blocks) max_blocks = b;
        if (p > max_pixels) max_pixels = p;
    }
    SWIN_CUDA_TRY(cudaMemcpyAsync(img_dev, img_host, (size_t)n * sizeof *img_host, cudaMemcpyHostToDevice, st));
    dim3 g1((unsigned)((max_blocks + JX_BLOCK - 1) / JX_BLOCK), (unsigned)n);
    jx_idct_kernel<<<g1, JX_BLOCK, 0, st>>>(planes, coef, img_dev);
    SWIN_LAUNCH_CHECK("jx_idct_kernel", st);
    dim3 g2((unsigned)((max_pixels + JX_BLOCK - 1) / JX_BLOCK), (unsigned)n);
    jx_pixel_kernel<<<g2, JX_BLOCK, 0, st>>>(dst, planes, img_dev);
    SWIN_LAUNCH_CHECK("jx_pixel_kernel", st);
    return SWIN_OK;
}
