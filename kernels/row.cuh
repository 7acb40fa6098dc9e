/* row.cuh - building blocks shared by the memory-bound kernels of kernels/ (layernorm.cu,
 * window.cu, patch.cu, act.cu): 16-byte packs and the generic "one row per thread group"
 * LayerNorm kernel.
 *
 * A row of C values is handled by a group of LPR lanes (8, 16 or 32) of one warp. Each lane keeps
 * NV packs of V consecutive elements in registers: pack i of lane l covers elements
 * [(l + LPR*i) * V, ... + V), so consecutive lanes touch consecutive 16-byte chunks (coalesced).
 * Statistics are fp32, two-pass over the registers (mean, then sum of squared deviations), reduced
 * with shuffles inside the group; the row is read once and written once.
 *
 * Where a row comes from and goes to is a Map (gather/scatter by row index):
 *   struct Map { static constexpr bool kAccumulate;                 // dst += result, or dst = result
 *                __device__ bool skip(int row) const;               // row neither read nor written
 *                __device__ bool zero(int row, int e) const;        // source pack at e reads as zeros
 *                __device__ const T *src(int row, int e) const;     // element e of source row
 *                __device__ T *dst(int row, int e) const; };        // element e of destination row
 * A map with kQ8 also carries a swin_q8_dst q8 (ops.h) and size_t oidx(row, e), the output
 * element's index (out's for kAddThenNorm, else dst's): the final store then also writes (or with
 * keep16 = 0 only writes) the E4M3 copy q8.q[oidx] of the value as stored.
 * src/dst are only asked for e a multiple of V, and a pack never straddles a segment of the row
 * (the launcher only vectorises when C % V == 0 and every base pointer is 16-byte aligned).
 * Tests: tests/test_gpu_kernels.c (every op built on this header, every dtype, odd C).
 */
#ifndef SWIN_ROW_CUH
#define SWIN_ROW_CUH

#include <stdint.h>

#include "common.cuh"

#define SWIN_ROW_BLOCK 128   /* threads per block of the row kernels */

// ---- 16-byte packs

template <typename T, int V> struct alignas(sizeof(T) * V) swin_pack { T v[V]; };

/* elements of T in 16 bytes */
template <typename T> struct swin_vec { static constexpr int n = 16 / (int)sizeof(T); };

template <typename T, int V>
__device__ __forceinline__ void pack_load(float (&dst)[V], const T *p) {
    swin_pack<T, V> pk = *reinterpret_cast<const swin_pack<T, V> *>(p);
#pragma unroll
    for (int k = 0; k < V; k++) dst[k] = load_f(pk.v, k);
}

template <typename T, int V>
__device__ __forceinline__ void pack_store(T *p, const float (&src)[V]) {
    swin_pack<T, V> pk;
#pragma unroll
    for (int k = 0; k < V; k++) store_f(pk.v, k, src[k]);
    *reinterpret_cast<swin_pack<T, V> *>(p) = pk;
}

/* v rounded to T and back (the value a store + load of T would give) */
template <typename T>
__device__ __forceinline__ float round_as(float v) {
    T t[1];
    store_f(t, 0, v);
    return load_f(t, 0);
}

/* E4M3 bytes of a pack as T stores it, times inv (swin_q8_dst); q aligned to V bytes */
template <typename T, int V>
__device__ __forceinline__ void q8_store(unsigned char *q, const float (&v)[V], float inv) {
    unsigned o[V];
#pragma unroll
    for (int k = 0; k < V; k++) o[k] = swin_e4m3(round_as<T>(v[k]) * inv);
    if constexpr (V == 8) {
        *reinterpret_cast<uint2 *>(q) = make_uint2(o[0] | o[1] << 8 | o[2] << 16 | o[3] << 24,
                                                   o[4] | o[5] << 8 | o[6] << 16 | o[7] << 24);
    } else if constexpr (V == 4) {
        *reinterpret_cast<unsigned *>(q) = o[0] | o[1] << 8 | o[2] << 16 | o[3] << 24;
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) q[k] = (unsigned char)o[k];
    }
}

/* the final store of a pack of row `row` at element e: p (the 16-bit output), and the E4M3 copy
 * where the map has one */
template <typename T, int V, class Map>
__device__ __forceinline__ void row_store(const Map &map, int row, int e, T *p, const float (&v)[V]) {
    if constexpr (Map::kQ8) {
        if (map.q8.q) {
            q8_store<T, V>(map.q8.q + map.oidx(row, e), v, map.q8.inv);
            if (!map.q8.keep16) return;
        }
    }
    pack_store<T, V>(p, v);
}

static inline int swin_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

// ---- argument checks shared by the op entries

/* SWIN_ERR_ARGUMENT when p is NULL or not aligned to its element size. */
static inline swin_status swin_check_ptr(const char *op, const char *what, const void *p, size_t elem) {
    if (!p) return swin_fail(SWIN_ERR_ARGUMENT, "%s: %s is NULL", op, what);
    if ((uintptr_t)p % elem)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: %s (%p) is not aligned to its %zu-byte elements", op,
                         what, p, elem);
    return SWIN_OK;
}

static inline swin_status swin_check_dtype(const char *op, swin_dtype dt) {
    if (dt != SWIN_DT_F32 && dt != SWIN_DT_F16 && dt != SWIN_DT_BF16)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: unknown dtype %d", op, (int)dt);
    return SWIN_OK;
}

/* LayerNorm parameters: both or (when optional) neither. */
static inline swin_status swin_check_ln(const char *op, const float *w, const float *b, int optional) {
    if (!w && !b && optional) return SWIN_OK;
    if (!w || !b)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: LayerNorm %s is NULL", op, w ? "bias" : "weight");
    return SWIN_OK;
}

/* x = x * w[0..V) + b[0..V): 16-byte loads of the fp32 parameters when V % 4 == 0 (the
 * launcher then guarantees 16-byte aligned w and b), else scalar */
template <int V>
__device__ __forceinline__ void ln_affine(float (&x)[V], const float *__restrict__ w, const float *__restrict__ b) {
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int k = 0; k < V; k += 4) {
            const float4 wv = __ldg(reinterpret_cast<const float4 *>(w + k));
            const float4 bv = __ldg(reinterpret_cast<const float4 *>(b + k));
            x[k] = fmaf(x[k], wv.x, bv.x), x[k + 1] = fmaf(x[k + 1], wv.y, bv.y);
            x[k + 2] = fmaf(x[k + 2], wv.z, bv.z), x[k + 3] = fmaf(x[k + 3], wv.w, bv.w);
        }
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) x[k] = fmaf(x[k], __ldg(w + k), __ldg(b + k));
    }
}

// ---- group reductions

template <int LPR>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int off = LPR / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* Normalise the row held in x (elements >= C are ignored): x = (x - mean) * rstd. Every lane of
 * the warp must call this (shuffles use the full mask), also lanes whose row is out of range. */
template <int V, int NV, int LPR>
__device__ __forceinline__ void row_normalize(float (&x)[NV][V], int C, int lane, float eps) {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < NV; i++)
#pragma unroll
        for (int k = 0; k < V; k++)
            if ((lane + LPR * i) * V + k < C) s += x[i][k];
    const float mean = group_sum<LPR>(s) / (float)C;
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < NV; i++)
#pragma unroll
        for (int k = 0; k < V; k++)
            if ((lane + LPR * i) * V + k < C) { float d = x[i][k] - mean; q += d * d; }
    const float rstd = rsqrtf(group_sum<LPR>(q) / (float)C + eps);
#pragma unroll
    for (int i = 0; i < NV; i++)
#pragma unroll
        for (int k = 0; k < V; k++) x[i][k] = (x[i][k] - mean) * rstd;
}

/* v <- the source pack at element e of row: zeros where the map says so (padding), else src */
template <typename T, int V, class Map>
__device__ __forceinline__ void load_src(float (&v)[V], const Map &map, int row, int e) {
    if (map.zero(row, e)) {
#pragma unroll
        for (int k = 0; k < V; k++) v[k] = 0.f;
    } else {
        pack_load<T, V>(v, map.src(row, e));
    }
}

// ---- the generic row kernel: dst (+)= LN?(src), rows gathered/scattered by Map

template <typename T, int V, int NV, int LPR, class Map>
static __global__ void __launch_bounds__(SWIN_ROW_BLOCK)
row_ln_kernel(Map map, const float *__restrict__ w, const float *__restrict__ b, int rows, int C,
              float eps) {
    swin_pdl_begin();
    const int lane = threadIdx.x % LPR;
    const int row = blockIdx.x * (SWIN_ROW_BLOCK / LPR) + threadIdx.x / LPR;
    const bool valid = row < rows && !map.skip(row);   /* skipped rows still join the shuffles */
    float x[NV][V], y[NV][V];   /* y: the destination's old value (accumulating maps) */
#pragma unroll
    for (int i = 0; i < NV; i++) {   /* every load is issued before any arithmetic */
        const int e = (lane + LPR * i) * V;
        const bool in = valid && e < C;
        if (in) load_src<T, V>(x[i], map, row, e);
        if constexpr (Map::kAccumulate) {
            if (in) pack_load<T, V>(y[i], map.dst(row, e));
        }
        if (!in)
#pragma unroll
            for (int k = 0; k < V; k++) x[i][k] = y[i][k] = 0.f;
    }
    if constexpr (Map::kAddThenNorm) {   /* dst = src + dst; out = LN(dst) */
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int e = (lane + LPR * i) * V;
#pragma unroll
            for (int k = 0; k < V; k++) x[i][k] = round_as<T>(x[i][k] + y[i][k]);
            if (valid && e < C) pack_store<T, V>(map.dst(row, e), x[i]);
        }
    }
    if (w) {   /* uniform branch: every lane takes it */
        row_normalize<V, NV, LPR>(x, C, lane, eps);
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int e = (lane + LPR * i) * V;
            if (e < C) ln_affine<V>(x[i], w + e, b + e);
        }
    }
    if (!valid) return;
#pragma unroll
    for (int i = 0; i < NV; i++) {
        const int e = (lane + LPR * i) * V;
        if (e >= C) continue;
        if constexpr (Map::kAddThenNorm) {
            row_store<T, V>(map, row, e, map.out(row, e), x[i]);
        } else {
            if constexpr (Map::kAccumulate) {
#pragma unroll
                for (int k = 0; k < V; k++) x[i][k] += y[i][k];
            }
            row_store<T, V>(map, row, e, map.dst(row, e), x[i]);
        }
    }
}

// ---- choosing V (pack width), NV (packs per lane) and LPR (lanes per row) from C

template <int V_, int NV_, int LPR_> struct swin_row_cfg {
    static constexpr int V = V_, NV = NV_, LPR = LPR_;
};

/* Calls f(swin_row_cfg<...>{}) with a configuration that holds a row of C values in registers,
 * at most 64 values per lane (beyond that ptxas spills). Rows of 3 * 2^k packs (every Swin width:
 * 96 * 2^k channels) use 3, 6 or 12 packs per lane so that no lane idles and each lane has several
 * loads in flight; other widths the smallest power-of-two group that holds the row.
 * vec_ok: all base pointers are 16-byte aligned (then C % V == 0 selects 16-byte packs).
 * Returns 0 when C is too long: more than 2048 values, or 1024 when packs cannot be used. */
template <typename T, class F>
static int swin_row_dispatch(int C, int vec_ok, F &&f) {
    constexpr int VV = swin_vec<T>::n, NV_MAX = 64 / VV;   /* 16 (fp32) or 8 (fp16, bf16) */
    if (vec_ok && C % VV == 0) {
        const int p = C / VV;
        if constexpr (NV_MAX >= 12) {   /* fp32 only: 48 values per lane */
            if (p == 384) { f(swin_row_cfg<VV, 12, 32>{}); return 1; }
        }
        if (p == 12) f(swin_row_cfg<VV, 3, 4>{});
        else if (p == 24) f(swin_row_cfg<VV, 3, 8>{});
        else if (p == 48) f(swin_row_cfg<VV, 3, 16>{});
        else if (p == 96) f(swin_row_cfg<VV, 3, 32>{});
        else if (p == 192) f(swin_row_cfg<VV, 6, 32>{});
        else if (p <= 8) f(swin_row_cfg<VV, 1, 8>{});
        else if (p <= 16) f(swin_row_cfg<VV, 1, 16>{});
        else if (p <= 32) f(swin_row_cfg<VV, 1, 32>{});
        else if (p <= 64) f(swin_row_cfg<VV, 2, 32>{});
        else if (p <= 128) f(swin_row_cfg<VV, 4, 32>{});
        else if (p <= 256) f(swin_row_cfg<VV, 8, 32>{});
        else if (p <= 512 && NV_MAX >= 16) f(swin_row_cfg<VV, NV_MAX, 32>{});
        else return 0;
        return 1;
    }
    if (C <= 256) f(swin_row_cfg<1, 8, 32>{});
    else if (C <= 1024) f(swin_row_cfg<1, 32, 32>{});
    else return 0;
    return 1;
}

/* Fallback for rows too long for registers: one warp per row, statistics in two passes over
 * memory (the row stays in L1/L2), then one pass that writes. */
template <typename T, int V, class Map>
static __global__ void __launch_bounds__(SWIN_ROW_BLOCK)
row_ln_loop_kernel(Map map, const float *__restrict__ w, const float *__restrict__ b, int rows, int C,
                   float eps) {
    swin_pdl_begin();
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (SWIN_ROW_BLOCK / 32) + threadIdx.x / 32;
    if (row >= rows || map.skip(row)) return;   /* the whole warp shares the row */
    float mean = 0.f, rstd = 1.f, v[V];
    if constexpr (Map::kAddThenNorm) {   /* dst = src + dst first; LN reads dst back below */
        for (int e = lane * V; e < C; e += 32 * V) {
            float y[V];
            load_src<T, V>(v, map, row, e);
            pack_load<T, V>(y, map.dst(row, e));
            for (int k = 0; k < V; k++) v[k] += y[k];
            pack_store<T, V>(map.dst(row, e), v);
        }
    }
    /* the row LN reads: src, or dst for kAddThenNorm (this lane's own writes just above) */
    auto ln_load = [&](int e) {
        if constexpr (Map::kAddThenNorm) pack_load<T, V>(v, map.dst(row, e));
        else load_src<T, V>(v, map, row, e);
    };
    if (w) {
        float s = 0.f, q = 0.f;
        for (int e = lane * V; e < C; e += 32 * V) {
            ln_load(e);
            for (int k = 0; k < V; k++) s += v[k];
        }
        mean = group_sum<32>(s) / (float)C;
        for (int e = lane * V; e < C; e += 32 * V) {
            ln_load(e);
            for (int k = 0; k < V; k++) q += (v[k] - mean) * (v[k] - mean);
        }
        rstd = rsqrtf(group_sum<32>(q) / (float)C + eps);
    }
    for (int e = lane * V; e < C; e += 32 * V) {
        ln_load(e);
        if (w)
            for (int k = 0; k < V; k++) v[k] = (v[k] - mean) * rstd * __ldg(w + e + k) + __ldg(b + e + k);
        if constexpr (Map::kAddThenNorm) {
            row_store<T, V>(map, row, e, map.out(row, e), v);
        } else {
            T *p = map.dst(row, e);
            if constexpr (Map::kAccumulate) {
                float y[V];
                pack_load<T, V>(y, p);
                for (int k = 0; k < V; k++) v[k] += y[k];
            }
            row_store<T, V>(map, row, e, p, v);
        }
    }
}

/* Launch the row kernel over rows: one LPR-lane group per row (registers), or one warp per row
 * (row_ln_loop_kernel) when the row is too long. w == NULL: no norm (copy or add). */
template <typename T, class Map>
static swin_status swin_row_ln_launch(const char *name, const Map &map, int vec_ok, const float *w,
                                      const float *b, int rows, int C, float eps, cudaStream_t st) {
    vec_ok = vec_ok && (!w || (swin_aligned16(w) && swin_aligned16(b)));   /* ln_affine's float4 loads */
    int in_regs = swin_row_dispatch<T>(C, vec_ok, [&](auto cfg) {
        typedef decltype(cfg) Cfg;
        const int per_block = SWIN_ROW_BLOCK / Cfg::LPR;
        const unsigned grid = (unsigned)((rows + per_block - 1) / per_block);
        swin_launch(row_ln_kernel<T, Cfg::V, Cfg::NV, Cfg::LPR, Map>, grid, SWIN_ROW_BLOCK, 0, st, map, w, b, rows, C,
                    eps);
    });
    if (!in_regs) {
        const unsigned grid = (unsigned)((rows + 3) / 4);
        if (vec_ok && C % swin_vec<T>::n == 0)
            swin_launch(row_ln_loop_kernel<T, swin_vec<T>::n, Map>, grid, SWIN_ROW_BLOCK, 0, st, map, w, b, rows, C,
                        eps);
        else
            swin_launch(row_ln_loop_kernel<T, 1, Map>, grid, SWIN_ROW_BLOCK, 0, st, map, w, b, rows, C, eps);
    }
    SWIN_LAUNCH_CHECK(name, st);
    return SWIN_OK;
}

/* Blocks for a grid-stride loop over n items, 256 threads each. */
static inline unsigned swin_grid_for(size_t n) {
    size_t blocks = (n + 255) / 256;
    if (blocks > (1u << 20)) blocks = 1u << 20;
    return blocks ? (unsigned)blocks : 1u;
}

#endif
