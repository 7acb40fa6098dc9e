/* attention_simt.cuh - fused window attention in true fp32 on the CUDA cores (precisions fp32 and
 * tf32), included by attention.cu.
 *
 * One CTA = one (window, head) and up to 64 query rows (8 warps x 8 rows). K and V of the window
 * pass through shared memory in chunks of 32 keys; for each chunk a lane scores its key against
 * the warp's 8 query rows (float4 reads; K rows padded so that they are conflict-free), the online
 * softmax (expf, fp32) updates the running max and sums, and then each lane accumulates P V for
 * head_dim/32 output channels. Bias is looked up in the head's column of the compact table staged
 * in smem; the shift mask comes from the token regions; neither is built densely.
 * Any head_dim: HD is the padded tile width (attention_mma.cuh says how); rows are read with the
 * true head_dim (a.g.hd) in float4 when it is a multiple of 4 (a.vb == 16), else in 8- or 4-byte
 * pieces, columns hd..HD-1 are zero in smem, and only hd output channels are stored.
 * Test: tests/test_gpu_attention.c.
 */
#ifndef SWIN_ATTENTION_SIMT_CUH
#define SWIN_ATTENTION_SIMT_CUH

#include "attention_common.cuh"

namespace swin_attn {

struct F32Args : AttnIO<float> {
    int groups;                // CTAs per (window, head): ceil(N / 64)
};

/* 4 floats of a head's row at p, the first n (>= 1) of them read, the rest 0; p aligned to vb.
 * With vb == 16 (hd % 4 == 0) n >= 4 here: one float4 load. */
__device__ __forceinline__ float4 ldg_f4(const float *p, int n, int vb) {
    if (vb == 16) return __ldg(reinterpret_cast<const float4 *>(p));
    const uint4 u = ldg_part(p, min(n, 4) * 4, vb);
    return make_float4(__uint_as_float(u.x), __uint_as_float(u.y), __uint_as_float(u.z), __uint_as_float(u.w));
}

/* shared-memory layout (bytes), host and device; hd: the padded tile width */
struct F32Smem {
    int k, v, q, p, kinfo, bias, total;
    __host__ __device__ F32Smem(int hd, int N, int nb) {   /* nb: Geom::nb */
        constexpr int KC = Tiles::kF32Keys, RW = Tiles::kF32RowsPerWarp, NW = Tiles::kF32Warps;
        k = 0;
        v = k + KC * (hd + Tiles::kF32Pad) * 4;
        q = v + KC * hd * 4;
        p = q + NW * RW * hd * 4;
        kinfo = p + NW * RW * KC * 4;
        bias = kinfo + N * 4;
        total = bias + nb * 4;
    }
};

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* EXACT: head_dim == HD (a multiple of 4, so a.vb == 16) known at compile time: the fast path, as
 * lean as a kernel for that one head_dim (the general loads would cost it registers); picked by
 * launch_f32 for exact_width(HD), EXACT false handles any hd <= HD. */
template <int HD, bool EXACT>
__global__ void __launch_bounds__(Tiles::kF32Warps * 32)
attn_f32_kernel(F32Args a) {
    swin_pdl_begin();
    constexpr int KC = Tiles::kF32Keys, RW = Tiles::kF32RowsPerWarp, LDK = HD + Tiles::kF32Pad;
    constexpr int CPL = (HD + 31) / 32;   // output channels per lane
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x, nthr = blockDim.x;
    int cta = blockIdx.x;
    const int grp = cta % a.groups;
    cta /= a.groups;
    const int w = g.div_heads.div(cta), h = g.div_heads.mod(cta, w);
    int wy, wx;
    window_pos(g, w, &wy, &wx);

    const F32Smem L(HD, g.N, g.nb);
    float *ks = reinterpret_cast<float *>(smem + L.k), *vs = reinterpret_cast<float *>(smem + L.v);
    float *qs = reinterpret_cast<float *>(smem + L.q) + warp * RW * HD;
    float *ps = reinterpret_cast<float *>(smem + L.p) + warp * RW * KC;
    int *kinfo = reinterpret_cast<int *>(smem + L.kinfo);
    float *bias = reinterpret_cast<float *>(smem + L.bias);

    const size_t ldg = (size_t)3 * g.C;
    const int hd = EXACT ? HD : g.hd, vb = EXACT ? 16 : a.vb;
    const float *q = a.qkv + (size_t)w * g.N * ldg + (size_t)h * hd, *k = q + g.C, *v = q + 2 * g.C;
    const int row0 = (grp * Tiles::kF32Warps + warp) * RW;   // this warp's first query row

    // the warp's query rows (rows >= N and columns >= hd read as zeros)
    for (int i = lane; i < RW * HD / 4; i += 32) {
        int r = i / (HD / 4), c = (i % (HD / 4)) * 4, row = row0 + r;
        float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
        if (row < g.N && c < hd) val = ldg_f4(q + (size_t)row * ldg + c, hd - c, vb);
        *reinterpret_cast<float4 *>(qs + r * HD + c) = val;
    }
    stage_tables(kinfo, g.N, bias, a.bias_table, h, 1.0f, g, wy, wx, tid, nthr);
    __syncthreads();

    const float scale_h = __ldg(a.scale + h);
    float sc[RW], m[RW], l[RW], acc[RW][CPL];
#pragma unroll
    for (int r = 0; r < RW; r++) {
        float rq = 1.f;
        if (a.v2) {
            float ss = 0.f;
            for (int c = lane; c < HD; c += 32) ss = fmaf(qs[r * HD + c], qs[r * HD + c], ss);
            rq = 1.0f / fmaxf(sqrtf(warp_sum(ss)), 1e-12f);
        }
        sc[r] = scale_h * rq;
        m[r] = -INFINITY;
        l[r] = 0.f;
#pragma unroll
        for (int u = 0; u < CPL; u++) acc[r][u] = 0.f;
    }

    for (int c0 = 0; c0 < g.N; c0 += KC) {
        const int n = min(KC, g.N - c0);
        __syncthreads();   // the previous chunk is consumed
        for (int i = tid; i < KC * HD / 4; i += nthr) {
            int r = i / (HD / 4), c = (i % (HD / 4)) * 4;
            float4 kv = make_float4(0.f, 0.f, 0.f, 0.f), vv = kv;
            if (r < n && c < hd) {
                kv = ldg_f4(k + (size_t)(c0 + r) * ldg + c, hd - c, vb);
                vv = ldg_f4(v + (size_t)(c0 + r) * ldg + c, hd - c, vb);
            }
            *reinterpret_cast<float4 *>(ks + r * LDK + c) = kv;
            *reinterpret_cast<float4 *>(vs + r * HD + c) = vv;
        }
        __syncthreads();

        // scores of key j = c0 + lane against the warp's rows
        float s[RW], kk = 0.f;
#pragma unroll
        for (int r = 0; r < RW; r++) s[r] = 0.f;
#pragma unroll 4
        for (int c = 0; c < HD; c += 4) {
            const float4 kv = *reinterpret_cast<const float4 *>(ks + lane * LDK + c);
            kk = fmaf(kv.x, kv.x, fmaf(kv.y, kv.y, fmaf(kv.z, kv.z, fmaf(kv.w, kv.w, kk))));
#pragma unroll
            for (int r = 0; r < RW; r++) {
                const float4 qv = *reinterpret_cast<const float4 *>(qs + r * HD + c);
                s[r] = fmaf(qv.x, kv.x, fmaf(qv.y, kv.y, fmaf(qv.z, kv.z, fmaf(qv.w, kv.w, s[r]))));
            }
        }
        const int j = c0 + lane;
        const bool pad = lane >= n;
        const int info = pad ? 0 : kinfo[j];
        const float rk = a.v2 ? 1.0f / fmaxf(sqrtf(kk), 1e-12f) : 1.0f;
#pragma unroll
        for (int r = 0; r < RW; r++) {
            const int qi = kinfo[min(row0 + r, g.N - 1)];   // broadcast read; rows >= N are never written
            float val = s[r] * sc[r] * rk + bias[info_qbase(g, qi) - info_koff(info)];
            if (info_region(info) != info_region(qi)) val += kMask;
            val = pad ? -INFINITY : val;
            const float mnew = fmaxf(m[r], warp_max(val));   // finite: lane 0 always holds a key
            const float alpha = expf(m[r] - mnew);
            const float p = expf(val - mnew);
            m[r] = mnew;
            l[r] = l[r] * alpha + p;
#pragma unroll
            for (int u = 0; u < CPL; u++) acc[r][u] *= alpha;
            ps[r * KC + lane] = p;
        }
        __syncwarp();
        // O += P V: lane owns channels lane + 32u; keys 4 at a time (p of pad keys is 0, their V rows 0)
        for (int jj = 0; jj < n; jj += 4) {
            float vv[4][CPL];
#pragma unroll
            for (int e = 0; e < 4; e++)
#pragma unroll
                for (int u = 0; u < CPL; u++)
                    vv[e][u] = (lane + 32 * u < HD) ? vs[(jj + e) * HD + lane + 32 * u] : 0.f;
#pragma unroll
            for (int r = 0; r < RW; r++) {
                const float4 p = *reinterpret_cast<const float4 *>(ps + r * KC + jj);
#pragma unroll
                for (int u = 0; u < CPL; u++)
                    acc[r][u] = fmaf(p.w, vv[3][u], fmaf(p.z, vv[2][u], fmaf(p.y, vv[1][u], fmaf(p.x, vv[0][u], acc[r][u]))));
            }
        }
        __syncwarp();
    }

    float *out = a.out + (size_t)w * g.N * g.C + (size_t)h * hd;
#pragma unroll
    for (int r = 0; r < RW; r++) {
        const float inv = 1.0f / warp_sum(l[r]);
        const int row = row0 + r;
        if (row < g.N)
#pragma unroll
            for (int u = 0; u < CPL; u++)
                if (lane + 32 * u < hd) out[(size_t)row * g.C + lane + 32 * u] = acc[r][u] * inv;
    }
}

} // namespace swin_attn

#endif
