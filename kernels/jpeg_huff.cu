/* jpeg_huff.cu - entropy decoding of baseline JPEGs on the GPU (kernels/ops.h
 * swin_jpeg_huff_cuda): the parallel decoder of src/image/jpeg_par.h, one thread block per image.
 *   jp_kernel   SWIN_JP_THREADS threads (SWIN_JPEG_GPU_PIECES=v1: the first kernel's 256, with
 *               its longer pieces: jpeg_par.h): the image's record and Huffman tables into shared
 *               memory; round 0 and the synchronisation rounds (each thread one piece of the
 *               staged data; the exits in shared memory, double-buffered, a round ending with
 *               __syncthreads_or of "some start changed"); the prefix sums of blocks and DC
 *               differences (thread 0, into the round buffer the last round left free); phase 2
 *               (the coefficients written); the image's status: the first failing piece's code,
 *               in the order of the data. Restart intervals: the interval starts (after the
 *               image's staged data, jpeg_par.h) are read from global memory by swin_jp_run; the
 *               prefix sums restart where a piece passed one (swin_jp_prefix_step) and phase 2
 *               checks each piece's end against its last round's (swin_jp_write).
 * The CPU emulation of this block (jpeg_par.c) runs the same functions in the same order.
 * Measured on the H200 (2026-11-27, the 49 photos of the end-to-end benchmark repeated to 256
 * images, build/tests/test_gpu_jpeg_huff . PHOTOS... --time 256, two runs each): entropy
 * decoding 4.15 / 4.16 ms a batch with the first configuration (SWIN_JPEG_GPU_PIECES=v1: 256
 * threads, pieces of at least 8192 bits, the per-symbol state read from local memory), 2.26 /
 * 2.27 ms with 512 threads, pieces of at least 3072 bits and that state in registers
 * (jpeg_par.h). Where the first one's time went (ncu, a batch of 250 of those photos inside
 * `swin classify --decoder gpu`): 6.42 ms, 22% of warps active, 16% of the SMs' issue
 * throughput, 10.9 of 32 threads active an instruction: a few long serial pieces an image.
 * `swin classify --decoder gpu` on 10,240 copies of the photos (Swin-T fp16, batch 256, three
 * runs each, alternating): wall 1,005.6 / 1,004.4 / 981.3 ms with v1, 1,008.0 / 913.0 / 914.6 ms
 * now (the GPU decoders' time, gpu-jpeg-gpu, 301 / 316 / 308 -> 185 / 184 / 197 ms), the output
 * identical.
 * With restart intervals (2026-11-27, H200, the same test on the 49 photos, of which dog.jpg,
 * 1546x1213 and 661 KB, has them; 256 images): 6.57 ms a batch with each image one block
 * (SWIN_JPEG_GPU_SPLIT=0), 3.40 ms with dog.jpg split at its intervals into parts of about
 * 786 kbit (the default, 292 blocks); the 48 others alone 2.50 ms (the 2.26 ms above was measured
 * before this kernel learned restarts, on another day: not a comparison in one run).
 * Test: tests/test_gpu_jpeg_huff.c (against the CPU emulation, the sequential decoder of
 * jpeg_huff.h and libjpeg's pixels).
 */
#include <stdint.h>

#include "jpeg_par.h"
#include "row.cuh"

#define JH_MAX_IMAGES 65535
#define JH_MAX_TABLES 6

/* after the rounds, a thread's first block index, DC predictors and phase-2 status, written into
 * the round buffer the last round did not fill (both hold the same exits by then) */
struct jp_prefix {
    long long g;
    uint32_t dc[3];
    int err;
};
static_assert(sizeof(jp_prefix) <= sizeof(swin_jp_state), "jp_prefix fits a swin_jp_state");

/* T threads, pieces of at least min_bits (swin_jp_config); 1024 / T blocks an SM (registers) */
template <int T>
static __global__ void __launch_bounds__(T, 1024 / T)
jp_kernel(int16_t *__restrict__ coef, const uint8_t *__restrict__ bytes, const swin_jh_table *__restrict__ tables,
          const swin_jh_image *__restrict__ imgs, int *__restrict__ status, int32_t min_bits) {
    __shared__ swin_jh_image m;
    __shared__ swin_jh_table tb[JH_MAX_TABLES];
    __shared__ __align__(16) swin_jp_state ex[2][T];
    __shared__ int ended_any;
    const int t = threadIdx.x;
    const swin_jh_image *gm = imgs + blockIdx.x;
    int nt = 0;   /* the tables this image uses: one past the largest index */
    for (int s = 0; s < gm->ns; s++) nt = max(nt, max(gm->dc[s], gm->ac[s]) + 1);
    const uint32_t *src = (const uint32_t *)(tables + gm->table);
    for (int i = t; i < nt * (int)(sizeof(swin_jh_table) / 4); i += T) ((uint32_t *)tb)[i] = src[i];
    for (int i = t; i < (int)(sizeof(swin_jh_image) / 4); i += T) ((uint32_t *)&m)[i] = ((const uint32_t *)gm)[i];
    if (t == 0) ended_any = 0;
    __syncthreads();
    if (t == 0) m.table = 0;
    __syncthreads();
    swin_jp_ctx c;
    swin_jp_ctx_init(&c, &m, bytes, tb);   /* the host checked the blocks per MCU */
    const int32_t S = swin_jp_piece(&c, T, min_bits);
    const int np = c.total_bits ? (int)((c.total_bits + S - 1) / S) : 1;
    const int active = t < np;
    swin_jp_state start = swin_jp_guess(t * S);
    if (active) ex[0][t] = swin_jp_run(&c, start, (t + 1) * S, 0, 0, NULL, NULL, NULL, NULL);
    __syncthreads();
    int r = 1, any = 1;
    for (; r <= SWIN_JP_MAX_ROUNDS; r++) {
        int changed = 0;
        if (active) {
            const swin_jp_state s = t ? swin_jp_start_from(ex[(r - 1) & 1][t - 1]) : start;
            if (!swin_jp_same_start(s, start)) {
                changed = 1;
                start = s;
                ex[r & 1][t] = swin_jp_run(&c, s, (t + 1) * S, 0, 0, NULL, NULL, NULL, NULL);
            } else {
                ex[r & 1][t] = ex[(r - 1) & 1][t];
            }
        }
        any = __syncthreads_or(changed);
        if (!any) break;
    }
    if (any) {   /* no fixed point: uniform over the block */
        if (t == 0) status[blockIdx.x] = SWIN_JP_NO_SYNC;
        return;
    }
    const int last = r & 1;
    jp_prefix *pre = reinterpret_cast<jp_prefix *>(ex[last ^ 1]);
    if (t == 0) {
        long long g = 0;
        uint32_t p[3] = {0, 0, 0};
        for (int i = 0; i < np; i++) {
            const swin_jp_state e = ex[last][i];
            long long g0;
            uint32_t p0[3];
            swin_jp_prefix_step(&e, &g, p, &g0, p0);
            pre[i].g = g0;
            for (int k = 0; k < 3; k++) pre[i].dc[k] = p0[k];
        }
    }
    __syncthreads();
    if (active) {
        int ended = 0;
        pre[t].err = swin_jp_write(&c, start, (t + 1) * S, pre[t].g, pre[t].dc, &ex[last][t], coef, &ended);
        if (ended) ended_any = 1;
    }
    __syncthreads();
    if (t == 0) {
        int st = SWIN_JH_OK;
        for (int i = 0; i < np && !st; i++) st = pre[i].err;
        status[blockIdx.x] = st ? st : ended_any ? SWIN_JH_OK : SWIN_JH_NO_DATA;
    }
}

/* the record's data, interval starts, tables and coefficients within the buffers, its layout one the
 * decoder takes: a whole image, or a part of whole restart intervals (swin_jp_split), with as many
 * interval starts as its restart interval gives */
static swin_status jh_check(const char *op, int k, const swin_jh_image *m, size_t coef_elems, size_t n_bytes,
                            int n_tables) {
    const swin_jx_image *r = &m->rec;
    int ok = (r->nc == 1 || r->nc == 3) && m->ns == r->nc && m->mcux >= 1 && m->mcuy >= 1 && m->restart >= 0 &&
             m->data >= 0 && m->data_len >= 0 && m->data_len < (1ll << 28) &&
             (unsigned long long)m->data + (unsigned long long)m->data_len <= n_bytes && m->table >= 0;
    int bpm = 0;
    int seen = 0;
    for (int s = 0; ok && s < m->ns; s++) {
        const int c = m->comp[s];
        ok = c >= 0 && c < r->nc && !(seen & (1 << c)) && m->hs[s] >= 1 && m->hs[s] <= 2 && m->vs[s] >= 1 &&
             m->vs[s] <= 2 && m->dc[s] >= 0 && m->dc[s] < JH_MAX_TABLES && m->ac[s] >= 0 && m->ac[s] < JH_MAX_TABLES &&
             m->table + m->dc[s] < n_tables && m->table + m->ac[s] < n_tables && r->bw[c] >= 1 && r->bh[c] >= 1 &&
             r->coef[c] >= 0 && (unsigned long long)r->coef[c] + 64ull * r->bw[c] * r->bh[c] <= coef_elems;
        seen |= 1 << (ok ? c : 0);
        bpm += ok ? m->hs[s] * m->vs[s] : 0;
    }
    ok = ok && bpm >= 1 && bpm <= SWIN_JP_MAX_BPM;
    const long long n_mcu = (long long)m->mcux * m->mcuy, rb = (long long)m->restart * bpm;
    /* a part: whole intervals of the image's blocks */
    ok = ok && (m->n_blocks == 0 ? m->g0 == 0
                                 : m->n_blocks > 0 && m->restart > 0 && m->g0 >= 0 && m->g0 % rb == 0 &&
                                       m->n_blocks % bpm == 0 && m->g0 + m->n_blocks <= n_mcu * bpm);
    const long long mcus = ok ? (m->n_blocks ? m->n_blocks / bpm : n_mcu) : 0;
    const long long n_rst = ok && m->restart > 0 ? (mcus + m->restart - 1) / m->restart - 1 : 0;
    ok = ok && m->n_rst == n_rst &&
         (!n_rst || (m->rst >= 0 && m->rst % 4 == 0 && (unsigned long long)m->rst + 4ull * n_rst <= n_bytes));
    if (!ok)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: image %d: a bad record (%d components, %d in the scan, %dx%d MCUs, "
                         "restart interval %d with %d interval starts at %lld, blocks %lld + %lld, data at %lld + "
                         "%lld of %zu bytes, tables from %d of %d, %zu coefficients)", op, k, r->nc, m->ns, m->mcux,
                         m->mcuy, m->restart, m->n_rst, m->rst, m->g0, m->n_blocks, m->data, m->data_len, n_bytes,
                         m->table, n_tables, coef_elems);
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
    int threads;
    int32_t min_bits;
    swin_jp_config(&threads, &min_bits);
    if (threads == SWIN_JP_V1_THREADS)
        jp_kernel<SWIN_JP_V1_THREADS><<<n, SWIN_JP_V1_THREADS, 0, st>>>(coef, bytes, tables, img_dev, status, min_bits);
    else
        jp_kernel<SWIN_JP_THREADS><<<n, SWIN_JP_THREADS, 0, st>>>(coef, bytes, tables, img_dev, status, min_bits);
    SWIN_LAUNCH_CHECK("jp_kernel", st);
    return SWIN_OK;
}
