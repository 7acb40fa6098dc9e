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
 * output through memory; one kernel reads the image and writes x once.
 *
 * Kernel: a CTA a band of 4 image rows of one image (the band's gw patches are gw consecutive
 * tokens of x), a warp 16 of its tokens (ceil(gw / 16) warps, at most 8):
 *   w [C][48] is copied into shared memory with cp.async while the band's 12 rows (3 channels x
 *   4 rows x W fp32) are read with 16-byte loads, all of a thread's issued before the first is
 *   used, each float4 (4 pixels of one patch row) rounded to the data type into im2col's column
 *   order (c 16 + ky 4 + kx) of the patch's row of A [16 warps][48] in shared memory;
 *   each warp: its 16 x C outputs with m16n8k16 MMAs (3 k-steps, fp32 accumulators), + bias,
 *   rounded to T, the row's mean and variance over the 4 lanes that hold it (shuffles), the
 *   normalised row times ln_w + ln_b, staged in shared memory, then stored as 16-byte chunks
 *   (its 16 tokens are 16 C consecutive elements of x).
 * Rows of A past the band's gw patches are zero and their outputs are not stored.
 * Measured (H200, 2026-11-29, tools/bench_ab.py, SWIN_PATCH_FUSED=0 against the default, two
 * rounds, best medians): Swin-T fp16 batch 1 0.411 / 0.404 ms, 8 0.651 / 0.651, 64 2.309 / 2.297,
 * 256 8.668 / 8.597; fp8 batch 1 0.445 / 0.441, 256 6.963 / 6.884; Swin-B 384 fp16 batch 1 1.098 /
 * 1.100, 64 18.012 / 17.900 (one round). --breakdown, Swin-T fp16 batch 256: the three ops 0.081 +
 * 0.113 + 0.083 ms, this kernel 0.215, where reading the image and writing x once (308 MB) would
 * take about 0.085 at the patch norm's 3.7 TB/s: it is not memory-bound yet, and not for want of
 * loads in flight (a first version read the band one float4 a thread at a time and took 0.195
 * in another run). Not profiled yet; suspects: every CTA (14,336 at batch 256, 6 an SM) fetching
 * the same 9 KiB of w from L2 (persistent CTAs would fetch it once and could double-buffer the
 * bands), and each warp's bias / ln_w / ln_b loads after its MMAs.
 * Shared memory: A and w rows of 56 elements (48 + 8: ldmatrix's 8 rows hit 8 different 16-byte
 * bank groups), the staging rows C + 8 elements apart.
 * Test: tests/test_gpu_patch_embed.c (against the CPU layers: im2col, linear, rounding, LayerNorm).
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
    static __host__ __device__ size_t total(int warps) { return o_off(warps) + (size_t)warps * 16 * kLdo * sizeof(T); }
};

template <typename T, int NT>
__global__ void __launch_bounds__(256) patch_embed_kernel(T *__restrict__ x, const float *__restrict__ img, const T *__restrict__ w,
                                   const T *__restrict__ bias, const float *__restrict__ ln_w,
                                   const float *__restrict__ ln_b, int H, int W, float eps) {
    swin_pdl_begin();
    typedef PatchSmem<T, NT> S;
    constexpr int C = S::C;
    extern __shared__ __align__(16) unsigned char smem[];
    const int gh = H / 4, gw = W / 4, warps = blockDim.x / 32, rows = warps * 16;
    const int band = blockIdx.x, b = band / gh, py = band - b * gh;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    T *A = reinterpret_cast<T *>(smem + S::a_off());
    T *Wt = reinterpret_cast<T *>(smem + S::w_off(warps));
    T *O = reinterpret_cast<T *>(smem + S::o_off(warps));

    /* w: 6 chunks of 16 bytes a row, copied asynchronously while the band's loads are in flight */
    for (int i = tid; i < C * 6; i += blockDim.x)
        cp_async16(Wt + (i / 6) * kLd + (i % 6) * 8, w + (size_t)(i / 6) * kK + (i % 6) * 8, true);
    cp_async_commit();
    /* the band: float4 i of 12 gw is pixels 4 px .. of image row (c, 4 py + ky), cq = 4 c + ky; a
     * thread's (at most kLoads: gw <= 16 x warps) are all issued before the first is used */
    float4 f[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; k++) {
        const int i = tid + k * blockDim.x, cq = i / gw, px = i - cq * gw, c = cq >> 2, ky = cq & 3;
        if (i < 12 * gw)
            f[k] = __ldg(reinterpret_cast<const float4 *>(img + (((size_t)b * 3 + c) * H + py * 4 + ky) * W) + px);
    }
#pragma unroll
    for (int k = 0; k < kLoads; k++) {
        const int i = tid + k * blockDim.x, cq = i / gw, px = i - cq * gw;
        if (i < 12 * gw) {
            uint2 p;
            p.x = pack2<T>(f[k].x, f[k].y), p.y = pack2<T>(f[k].z, f[k].w);
            *reinterpret_cast<uint2 *>(A + px * kLd + cq * 4) = p;
        }
    }
    for (int i = gw * 12 + tid; i < rows * 12; i += blockDim.x)   /* rows past the band: zeros */
        *reinterpret_cast<uint2 *>(A + (i / 12) * kLd + (i % 12) * 4) = make_uint2(0u, 0u);
    cp_async_wait_all();
    __syncthreads();

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
        const float2 bv = bias ? unpack2<T>(ldg_pair(bias + j * 8 + q)) : make_float2(0.0f, 0.0f);
        acc[j][0] = round_as<T>(acc[j][0] + bv.x), acc[j][1] = round_as<T>(acc[j][1] + bv.y);
        acc[j][2] = round_as<T>(acc[j][2] + bv.x), acc[j][3] = round_as<T>(acc[j][3] + bv.y);
        s0 += acc[j][0] + acc[j][1], s1 += acc[j][2] + acc[j][3];
    }
    s0 += __shfl_xor_sync(0xffffffffu, s0, 1), s1 += __shfl_xor_sync(0xffffffffu, s1, 1);
    s0 += __shfl_xor_sync(0xffffffffu, s0, 2), s1 += __shfl_xor_sync(0xffffffffu, s1, 2);
    const float m0 = s0 / (float)C, m1 = s1 / (float)C;
    float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        float d;
        d = acc[j][0] - m0, v0 += d * d;
        d = acc[j][1] - m0, v0 += d * d;
        d = acc[j][2] - m1, v1 += d * d;
        d = acc[j][3] - m1, v1 += d * d;
    }
    v0 += __shfl_xor_sync(0xffffffffu, v0, 1), v1 += __shfl_xor_sync(0xffffffffu, v1, 1);
    v0 += __shfl_xor_sync(0xffffffffu, v0, 2), v1 += __shfl_xor_sync(0xffffffffu, v1, 2);
    const float r0 = rsqrtf(v0 / (float)C + eps), r1 = rsqrtf(v1 / (float)C + eps);
    T *o = O + (warp * 16 + (lane >> 2)) * S::kLdo + q;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const float2 g = __ldg(reinterpret_cast<const float2 *>(ln_w + j * 8 + q));
        const float2 be = __ldg(reinterpret_cast<const float2 *>(ln_b + j * 8 + q));
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

template <typename T, int NT>
swin_status launch(T *x, const float *img, const T *w, const T *bias, const float *ln_w, const float *ln_b, int B,
                   int H, int W, float eps, cudaStream_t st) {
    const int gw = W / 4, warps = (gw + 15) / 16;
    const size_t smem = PatchSmem<T, NT>::total(warps);
    if (smem > 48 * 1024)
        SWIN_CUDA_TRY(cudaFuncSetAttribute(patch_embed_kernel<T, NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem));
    swin_launch(patch_embed_kernel<T, NT>, (unsigned)(B * (H / 4)), (unsigned)(32 * warps), smem, st, x, img, w,
                bias, ln_w, ln_b, H, W, eps);
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
