/* patch_embed.cu - the patch embedding as one kernel (kernels/ops.h swin_patch_embed_cuda):
 *
 *   x [B*gh*gw, C] = LN(im2col(img) @ w^T + bias)   img fp32 [B, 3, H, W], w dt [C, 48], patch 4
 *
 * what patch.cu's im2col, the linear layer and layernorm.cu's LayerNorm compute as three ops
 * (src/cuda/engine.c patch_embed), with the same roundings: the pixels rounded to the data type
 * (im2col's cols), products summed in fp32, + bias, rounded to the data type (the linear's
 * output), then the LayerNorm in fp32 (two-pass statistics), rounded once. fp16 / bf16; fp32 data
 * (tf32, fp32) keeps the three ops.
 *
 * Why: at Swin-T fp16 batch 256 the three ops took 0.271 ms of 8.67 (--breakdown, H200,
 * 2026-11-29: im2col 0.081, linear 0.107, LayerNorm 0.083), passing cols (K 48) and the linear's
 * output through memory; one kernel reads the image and writes x once, and at batch 1 is one
 * launch instead of three.
 *
 * Kernel (patch_embed_kernel): persistent CTAs (as many as fit at once), CTA k taking bands k,
 * k + gridDim.x, ... (a band: 4 image rows of one image, whose gw patches are gw consecutive
 * tokens of x), a warp 16 of its tokens (ceil(gw / 16) warps, at most 8). Once a CTA: w [C][48]
 * into shared memory by cp.async, bias / ln_w / ln_b as fp32 beside it. Per band: the band's 12
 * rows (3 channels x 4 rows x W fp32), read with 16-byte loads issued one band ahead (a thread's
 * all in flight together, while the previous band's MMAs, LayerNorm and stores run), each float4
 * (4 pixels of one patch row) rounded to the data type into im2col's column order (c 16 + ky 4 +
 * kx) of the patch's row of A [16 warps][48] in shared memory; then each warp: its 16 x C outputs
 * with m16n8k16 MMAs (3 k-steps, fp32 accumulators), + bias, rounded to T, the row's mean and
 * variance over the 4 lanes that hold it (shuffles), the normalised row times ln_w + ln_b, staged
 * in shared memory, then stored as 16-byte chunks (its 16 tokens are 16 C consecutive elements of
 * x). Rows of A past the band's gw patches are zero and their outputs are not stored.
 * SWIN_PATCH_WALK=0 launches it on a grid of one CTA a band (each fetching its own w and parameters).
 * Measured (H200, 2026-11-29, tools/bench_ab.py, best medians of two rounds, the three ops
 * (SWIN_PATCH_FUSED=0) / a CTA a band (SWIN_PATCH_WALK=0: then a kernel of its own, the same
 * steps without the loop's first barrier) / persistent (default), one run):
 * Swin-T fp16 batch 1 0.411 / 0.408 / 0.407 ms, 64 2.306 / 2.287 / 2.284, 256 8.440 / 8.360 /
 * 8.351; --breakdown at 256: 0.073 + 0.103 + 0.082 ms (im2col, linear, norm) / 0.198 / 0.185;
 * fp8 batch 256 6.827 / - / 6.736. An earlier run (a CTA a band, its parameters read by each warp
 * after its MMAs): Swin-B 384 fp16 batch 1 1.098 / 1.100 ms, 64 18.012 / 17.900.
 * Not memory-bound yet: reading the image and writing x once (308 MB at batch 256) would take
 * about 0.085 ms at the patch norm's 3.7 TB/s, and neither the loads in flight (a first version
 * read the band one float4 a thread at a time: 0.195 ms in another run) nor fetching w once a
 * CTA instead of once a band (0.198 -> 0.185) is what holds it: 0.185 ms is 6.8 us a band per
 * CTA (528 CTAs, 4 an SM, for 14,336 bands), the loads of one band ahead covering about 48 KB an
 * SM. Not profiled; next steps: more bytes in flight (the band's rows, three runs of 4 W
 * contiguous floats, by bulk copies into a ring of shared-memory stages, converted from there),
 * and fewer instructions a band (band_load and band_store divide by gw for each float4: 12
 * integer divisions a thread a band for offsets that are the same every band).
 * Shared memory: A and w rows of 56 elements (48 + 8: ldmatrix's 8 rows hit 8 different 16-byte
 * bank groups), the staging rows C + 8 elements apart.
 * Test: tests/test_gpu_patch_embed.c (against the CPU layers: im2col, linear, rounding, LayerNorm;
 * test_gpu_patch_embed_band: a CTA a band).
 */
#include "mma.cuh"
#include "row.cuh"

namespace {

constexpr int kK = 48;         /* 3 channels x 4 x 4 */
constexpr int kLd = kK + 8;    /* A and w rows in shared memory, elements */
constexpr int kMaxW = 512;     /* image width: at most 8 warps a CTA (255 registers a thread fit) */
constexpr int kLoads = 6;      /* the band's float4s a thread: 12 gw / (32 ceil(gw / 16)) <= 6 */

template <typename T, int NT>   /* NT: C / 8 column tiles */
struct PatchSmem {
    static constexpr int C = NT * 8, kLdo = C + 8;
    static __host__ __device__ size_t a_off() { return 0; }
    static __host__ __device__ size_t w_off(int warps) { return a_off() + (size_t)warps * 16 * kLd * sizeof(T); }
    static __host__ __device__ size_t o_off(int warps) { return w_off(warps) + (size_t)C * kLd * sizeof(T); }
    static __host__ __device__ size_t p_off(int warps) { return o_off(warps) + (size_t)warps * 16 * kLdo * sizeof(T); }
    static __host__ __device__ size_t total(int warps) { return p_off(warps) + (size_t)3 * C * sizeof(float); }
};

/* band (b, py)'s float4s tid, tid + nthr, ... into f (issued, not waited for): float4 i of 12 gw
 * is pixels 4 px .. of image row (c, 4 py + ky), cq = 4 c + ky */
__device__ __forceinline__ void band_load(float4 (&f)[kLoads], const float *__restrict__ img, int band, int H,
                                          int W, int tid, int nthr) {
    const int gh = H / 4, gw = W / 4, b = band / gh, py = band - b * gh;
#pragma unroll
    for (int k = 0; k < kLoads; k++) {
        const int i = tid + k * nthr, cq = i / gw, px = i - cq * gw, c = cq >> 2, ky = cq & 3;
        if (i < 12 * gw)
            f[k] = __ldg(reinterpret_cast<const float4 *>(img + (((size_t)b * 3 + c) * H + py * 4 + ky) * W) + px);
    }
}

/* f rounded to T into im2col's columns (c 16 + ky 4 + kx) of the patches' rows of A */
template <typename T>
__device__ __forceinline__ void band_store(T *A, const float4 (&f)[kLoads], int gw, int tid, int nthr) {
#pragma unroll
    for (int k = 0; k < kLoads; k++) {
        const int i = tid + k * nthr, cq = i / gw, px = i - cq * gw;
        if (i < 12 * gw) {
            uint2 p;
            p.x = pack2<T>(f[k].x, f[k].y), p.y = pack2<T>(f[k].z, f[k].w);
            *reinterpret_cast<uint2 *>(A + px * kLd + cq * 4) = p;
        }
    }
}

/* the CTA's set-up: w into Wt (cp.async, committed, not waited for), bias / ln_w / ln_b into P
 * as fp32 [3][C], A's rows past the band's gw patches zeroed (never written by band_store) */
template <typename T, int NT>
__device__ __forceinline__ void cta_setup(T *A, T *Wt, float *P, const T *__restrict__ w, const T *__restrict__ bias,
                                          const float *__restrict__ ln_w, const float *__restrict__ ln_b, int gw,
                                          int rows, int tid, int nthr) {
    constexpr int C = NT * 8;
    for (int i = tid; i < C * 6; i += nthr)   /* 6 chunks of 16 bytes a row */
        cp_async16(Wt + (i / 6) * kLd + (i % 6) * 8, w + (size_t)(i / 6) * kK + (i % 6) * 8, true);
    cp_async_commit();
    for (int c = tid; c < C; c += nthr) {
        P[c] = bias ? load_f(bias, c) : 0.0f;
        P[C + c] = __ldg(ln_w + c);
        P[2 * C + c] = __ldg(ln_b + c);
    }
    for (int i = gw * 12 + tid; i < rows * 12; i += nthr)
        *reinterpret_cast<uint2 *>(A + (i / 12) * kLd + (i % 12) * 4) = make_uint2(0u, 0u);
}

/* a warp's 16 rows of the band in A: the MMAs, + bias rounded to T, the LayerNorm, staged in O
 * (the warp's own rows), stored to x */
template <typename T, int NT>
__device__ __forceinline__ void band_out(T *__restrict__ x, const T *A, const T *Wt, T *O, const float *P, int band,
                                         int gw, float eps, int warp, int lane) {
    typedef PatchSmem<T, NT> S;
    constexpr int C = S::C;
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < kK / 16; ks++) {
        uint32_t a[4];
        ldsm_x4(a, A + (warp * 16 + (lane & 15)) * kLd + ks * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int j = 0; j < NT; j += 2) {   /* B fragments of column tiles j and j + 1 */
            uint32_t bf[4];
            ldsm_x4(bf, Wt + (j * 8 + (lane & 7) + (lane >> 4) * 8) * kLd + ks * 16 + ((lane >> 3) & 1) * 8);
            mma16816<T>(acc[j], a, bf[0], bf[1]);
            mma16816<T>(acc[j + 1], a, bf[2], bf[3]);
        }
    }

    /* lane holds rows r = lane / 4 and r + 8 of the warp's 16, columns 8 j + 2 (lane % 4) + 0, 1 */
    const int q = (lane & 3) * 2;
    float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const float2 bv = *reinterpret_cast<const float2 *>(P + j * 8 + q);
        acc[j][0] = round_as<T>(acc[j][0] + bv.x), acc[j][1] = round_as<T>(acc[j][1] + bv.y);
        acc[j][2] = round_as<T>(acc[j][2] + bv.x), acc[j][3] = round_as<T>(acc[j][3] + bv.y);
        s0 += acc[j][0] + acc[j][1], s1 += acc[j][2] + acc[j][3];
    }
    const float m0 = swin_quad_sum(s0) / (float)C, m1 = swin_quad_sum(s1) / (float)C;
    float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        float d;
        d = acc[j][0] - m0, v0 += d * d;
        d = acc[j][1] - m0, v0 += d * d;
        d = acc[j][2] - m1, v1 += d * d;
        d = acc[j][3] - m1, v1 += d * d;
    }
    const float r0 = rsqrtf(swin_quad_sum(v0) / (float)C + eps), r1 = rsqrtf(swin_quad_sum(v1) / (float)C + eps);
    T *o = O + (warp * 16 + (lane >> 2)) * S::kLdo + q;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const float2 g = *reinterpret_cast<const float2 *>(P + C + j * 8 + q);
        const float2 be = *reinterpret_cast<const float2 *>(P + 2 * C + j * 8 + q);
        *reinterpret_cast<uint32_t *>(o + j * 8) =
            pack2<T>((acc[j][0] - m0) * r0 * g.x + be.x, (acc[j][1] - m0) * r0 * g.y + be.y);
        *reinterpret_cast<uint32_t *>(o + 8 * S::kLdo + j * 8) =
            pack2<T>((acc[j][2] - m1) * r1 * g.x + be.x, (acc[j][3] - m1) * r1 * g.y + be.y);
    }
    __syncwarp();

    /* the warp's tokens px0 .. px0 + n - 1: n C consecutive elements of x, C / 8 chunks a row */
    const int px0 = warp * 16, n = min(16, gw - px0);
    T *dst = x + ((size_t)band * gw + px0) * C;
    for (int i = lane; i < n * (C / 8); i += 32) {
        const int r = i / (C / 8), c8 = i - r * (C / 8);
        *reinterpret_cast<uint4 *>(dst + (size_t)r * C + c8 * 8) =
            *reinterpret_cast<const uint4 *>(O + (px0 + r) * S::kLdo + c8 * 8);
    }
}

/* CTA k takes bands k, k + gridDim.x, ...; w and the parameters are fetched once a CTA, and the
 * next band's loads are in flight while a band's MMAs, LayerNorm and stores run (a grid of one CTA
 * a band: SWIN_PATCH_WALK=0) */
template <typename T, int NT>
__global__ void __launch_bounds__(256) patch_embed_kernel(T *__restrict__ x, const float *__restrict__ img,
                                                          const T *__restrict__ w, const T *__restrict__ bias,
                                                          const float *__restrict__ ln_w,
                                                          const float *__restrict__ ln_b, int bands, int H, int W,
                                                          float eps) {
    swin_pdl_begin();
    typedef PatchSmem<T, NT> S;
    extern __shared__ __align__(16) unsigned char smem[];
    const int gw = W / 4, warps = blockDim.x / 32, tid = threadIdx.x, nthr = blockDim.x;
    T *A = reinterpret_cast<T *>(smem + S::a_off()), *Wt = reinterpret_cast<T *>(smem + S::w_off(warps));
    T *O = reinterpret_cast<T *>(smem + S::o_off(warps));
    float *P = reinterpret_cast<float *>(smem + S::p_off(warps));
    cta_setup<T, NT>(A, Wt, P, w, bias, ln_w, ln_b, gw, warps * 16, tid, nthr);
    float4 f[kLoads];
    int band = blockIdx.x;
    if (band < bands) band_load(f, img, band, H, W, tid, nthr);
    cp_async_wait_all();
    for (; band < bands; band += gridDim.x) {
        __syncthreads();   /* the previous band's MMAs have read A */
        band_store<T>(A, f, gw, tid, nthr);
        __syncthreads();
        if (band + (int)gridDim.x < bands) band_load(f, img, band + gridDim.x, H, W, tid, nthr);
        band_out<T, NT>(x, A, Wt, O, P, band, gw, eps, tid >> 5, tid & 31);
    }
}

/* SWIN_PATCH_WALK=0 in the environment (read once): a grid of one CTA a band instead of the CTAs
 * that fit at once */
static int walk_on() {
    static int on = -1;
    if (on < 0) on = swin_env_on("SWIN_PATCH_WALK", 1);
    return on;
}

template <typename T, int NT>
swin_status launch(T *x, const float *img, const T *w, const T *bias, const float *ln_w, const float *ln_b, int B,
                   int H, int W, float eps, cudaStream_t st) {
    const int gw = W / 4, warps = (gw + 15) / 16, bands = B * (H / 4);
    const size_t smem = PatchSmem<T, NT>::total(warps);
    if (smem > 48 * 1024)
        SWIN_CUDA_TRY(cudaFuncSetAttribute(patch_embed_kernel<T, NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem));
    int grid = bands;
    if (walk_on()) {   /* as many CTAs as fit at once (asked once per width in warps, as attention.cu does) */
        static int per_sm[kMaxW / 64 + 1];
        int sms = 0;
        SWIN_TRY(swin_device_sms(&sms));
        if (!per_sm[warps])
            SWIN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm[warps], patch_embed_kernel<T, NT>,
                                                                        32 * warps, smem));
        grid = min(bands, max(1, per_sm[warps]) * sms);
    }
    swin_launch(patch_embed_kernel<T, NT>, (unsigned)grid, (unsigned)(32 * warps), smem, st, x, img, w, bias, ln_w,
                ln_b, bands, H, W, eps);
    SWIN_LAUNCH_CHECK("patch_embed_kernel", st);
    return SWIN_OK;
}

/* C / 8 column tiles: 2, 4, ..., 32 */
template <typename T>
swin_status dispatch(int C, T *x, const float *img, const T *w, const T *bias, const float *ln_w, const float *ln_b,
                     int B, int H, int W, float eps, cudaStream_t st) {
#define SWIN_PE_CASE(c) \
    case c: return launch<T, c / 8>(x, img, w, bias, ln_w, ln_b, B, H, W, eps, st);
    switch (C) {
        SWIN_PE_CASE(16) SWIN_PE_CASE(32) SWIN_PE_CASE(48) SWIN_PE_CASE(64) SWIN_PE_CASE(80) SWIN_PE_CASE(96)
        SWIN_PE_CASE(112) SWIN_PE_CASE(128) SWIN_PE_CASE(144) SWIN_PE_CASE(160) SWIN_PE_CASE(176)
        SWIN_PE_CASE(192) SWIN_PE_CASE(208) SWIN_PE_CASE(224) SWIN_PE_CASE(240) SWIN_PE_CASE(256)
    }
#undef SWIN_PE_CASE
    return swin_fail(SWIN_ERR_UNSUPPORTED, "swin_patch_embed_cuda: C %d", C);
}

}   // namespace

// ---- op entries

extern "C" int swin_patch_embed_supports(int p, int H, int W, int C, swin_dtype dt) {
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16) && p == 4 && H > 0 && W > 0 && H % 4 == 0 && W % 4 == 0 &&
           W <= kMaxW && C > 0 && C % 16 == 0 && C <= 256;
}

extern "C" swin_status swin_patch_embed_cuda(void *x, const float *img, const void *w, const void *bias,
                                             const float *ln_w, const float *ln_b, int B, int H, int W, int C,
                                             float eps, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_patch_embed_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (B <= 0 || (long long)B * (H / 4) > 0x7fffffffLL)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: batch %d of %dx%d images", op, B, H, W);
    if (!swin_patch_embed_supports(4, H, W, C, dt))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs fp16 or bf16, H and W multiples of 4 (W <= %d) and C a "
                         "multiple of 16 up to 256 (dtype %d, %dx%d, C %d)", op, kMaxW, (int)dt, H, W, C);
    SWIN_TRY(swin_check_ln(op, ln_w, ln_b, 0));
    if (!x || !img || !w)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL pointer (x %p, img %p, w %p)", op, x, (const void *)img, w);
    if (!swin_aligned16(x) || !swin_aligned16(img) || !swin_aligned16(w) || ((uintptr_t)bias & 3u) ||
        ((uintptr_t)ln_w | (uintptr_t)ln_b) & 7u)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x %p, img %p and w %p must be 16-byte aligned, bias %p 4, ln_w %p and "
                         "ln_b %p 8", op, x, (const void *)img, w, bias, (const void *)ln_w, (const void *)ln_b);
    if (dt == SWIN_DT_F16)
        return dispatch<__half>(C, (__half *)x, img, (const __half *)w, (const __half *)bias, ln_w, ln_b, B, H, W,
                                eps, st);
    return dispatch<__nv_bfloat16>(C, (__nv_bfloat16 *)x, img, (const __nv_bfloat16 *)w,
                                   (const __nv_bfloat16 *)bias, ln_w, ln_b, B, H, W, eps, st);
}
