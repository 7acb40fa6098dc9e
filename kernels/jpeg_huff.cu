/* jpeg_huff.cu - entropy decoding of baseline JPEGs on the GPU (kernels/ops.h
 * swin_jpeg_huff_cuda), with the decoder of src/image/jpeg_huff.h, which the CPU test runs too.
 *   jh_kernel   one CUDA block of 32 threads per image: the threads copy the image's record and
 *               Huffman tables into shared memory, then thread 0 decodes the image's scan
 *               (serial by nature: each code's length is known only once it is decoded) into
 *               its coefficients and writes its status.
 * Throughput comes from many images at once (a batch, and several batches on several streams),
 * not from parallelism within an image. The coefficients then go through swin_jpeg_exact_cuda.
 * Test: tests/test_gpu_jpeg_huff.c (against the CPU decoder and libjpeg's coefficients).
 */
#include <stdint.h>

#include "jpeg_huff.h"
#include "row.cuh"

#define JH_THREADS 32
#define JH_MAX_IMAGES 65535
#define JH_MAX_TABLES 6

static __global__ void jh_kernel(int16_t *__restrict__ coef, const uint8_t *__restrict__ bytes,
                                 const swin_jh_table *__restrict__ tables, const swin_jh_image *__restrict__ imgs,
                                 int *__restrict__ status) {
    __shared__ swin_jh_image m;
    __shared__ swin_jh_table t[JH_MAX_TABLES];
    const swin_jh_image *g = imgs + blockIdx.x;
    int nt = 0;   /* the tables this image uses: one past the largest index */
    for (int s = 0; s < g->ns; s++) nt = max(nt, max(g->dc[s], g->ac[s]) + 1);
    const uint32_t *src = (const uint32_t *)(tables + g->table);
    uint32_t *dst = (uint32_t *)t;
    for (int i = threadIdx.x; i < nt * (int)(sizeof(swin_jh_table) / 4); i += JH_THREADS) dst[i] = src[i];
    const uint32_t *ms = (const uint32_t *)g;
    for (int i = threadIdx.x; i < (int)(sizeof(swin_jh_image) / 4); i += JH_THREADS) ((uint32_t *)&m)[i] = ms[i];
    __syncthreads();
    if (threadIdx.x != 0) return;
    m.table = 0;
    status[blockIdx.x] = swin_jh_decode(&m, bytes, t, coef);
}

/* the record's data, tables and coefficients within the buffers, its layout one the decoder takes */
static swin_status jh_check(const char *op, int k, const swin_jh_image *m, size_t coef_elems, size_t n_bytes,
                            int n_tables) {
    const swin_jx_image *r = &m->rec;
    int ok = (r->nc == 1 || r->nc == 3) && m->ns == r->nc && m->mcux >= 1 && m->mcuy >= 1 && m->restart >= 0 &&
             m->data >= 0 && m->data_len >= 0 && (unsigned long long)m->data + (unsigned long long)m->data_len <= n_bytes &&
             m->table >= 0;
    int seen = 0;
    for (int s = 0; ok && s < m->ns; s++) {
        const int c = m->comp[s];
        ok = c >= 0 && c < r->nc && !(seen & (1 << c)) && m->hs[s] >= 1 && m->hs[s] <= 2 && m->vs[s] >= 1 &&
             m->vs[s] <= 2 && m->dc[s] >= 0 && m->dc[s] < JH_MAX_TABLES && m->ac[s] >= 0 && m->ac[s] < JH_MAX_TABLES &&
             m->table + m->dc[s] < n_tables && m->table + m->ac[s] < n_tables && r->bw[c] >= 1 && r->bh[c] >= 1 &&
             r->coef[c] >= 0 && (unsigned long long)r->coef[c] + 64ull * r->bw[c] * r->bh[c] <= coef_elems;
        seen |= 1 << (ok ? c : 0);
    }
    if (!ok)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: a bad record (%d components, %d in the scan, %dx%d MCUs, "
                         "data at %lld + %lld of %zu bytes, tables from %d of %d, %zu coefficients)", op, k, r->nc,
                         m->ns, m->mcux, m->mcuy, m->data, m->data_len, n_bytes, m->table, n_tables, coef_elems);
    return SWIN_OK;
}

extern "C" swin_status swin_jpeg_huff_cuda(int16_t *coef, size_t coef_elems, const uint8_t *bytes, size_t n_bytes,
                                           const swin_jh_table *tables, int n_tables, const swin_jh_image *img_host,
                                           swin_jh_image *img_dev, int *status, int n, cudaStream_t st) {
    static const char op[] = "swin_jpeg_huff_cuda";
    if (!coef || !bytes || !tables || !img_host || !img_dev || !status)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: a NULL buffer", op);
    if (n < 1 || n > JH_MAX_IMAGES) return swin_fail(SWIN_ERR_ARGUMENT, "%s: %d images (1 to %d)", op, n, JH_MAX_IMAGES);
    for (int k = 0; k < n; k++) SWIN_TRY(jh_check(op, k, &img_host[k], coef_elems, n_bytes, n_tables));
    SWIN_CUDA_TRY(cudaMemsetAsync(coef, 0, coef_elems * sizeof *coef, st));
    SWIN_CUDA_TRY(cudaMemcpyAsync(img_dev, img_host, (size_t)n * sizeof *img_host, cudaMemcpyHostToDevice, st));
    jh_kernel<<<n, JH_THREADS, 0, st>>>(coef, bytes, tables, img_dev, status);
    SWIN_LAUNCH_CHECK("jh_kernel", st);
    return SWIN_OK;
}
