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
 * Where a row comes from and goes to is a Map (gather/scatter by row index). A row is looked up
 * once (Map::Row, e.g. the token a window row comes from) and its elements are addressed from that:
 *   struct Map { static constexpr bool kAccumulate;                 // dst += result, or dst = result
 *                struct Row;                                        // (or a typedef) one row's lookup
 *                __device__ Row row(int r) const;                   // any r in [0, rows)
 *                __device__ bool skip(const Row &) const;           // row neither read nor written
 *                __device__ bool zero(const Row &, int e) const;    // source pack at e reads as zeros
 *                __device__ const T *src(const Row &, int e) const; // element e of source row
 *                __device__ T *dst(const Row &, int e) const; };    // element e of destination row
 * A map with kAddThenNorm also has T *out(const Row &, int e) (dst = src + dst; out = LN(dst)).
 * A map with kQ8 also carries a swin_q8_dst q8 (ops.h) and size_t oidx(Row, e), the output
 * element's index (out's for kAddThenNorm, else dst's): the final store then also writes (or with
 * keep16 = 0 only writes) the E4M3 copy q8.q[oidx] of the value as stored.
 * src/dst are only asked for e a multiple of V, and a pack never straddles a segment of the row
 * (the launcher only vectorises when C % V == 0 and every base pointer is 16-byte aligned).
 * Tests: tests/test_gpu_kernels.c (every op built on this header, every dtype, odd C).
 */
#ifndef SWIN_ROW_CUH
#define SWIN_ROW_CUH

#include <stdint.h>
#include <stdlib.h>

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
    float r[V];
#pragma unroll
    for (int k = 0; k < V; k++) r[k] = round_as<T>(v[k]);
    swin_e4m3_store<V>(q, r, inv);
}

/* the final store of a pack of row `row` at element e: p (the 16-bit output), and the E4M3 copy
 * where the map has one */
template <typename T, int V, class Map>
__device__ __forceinline__ void row_store(const Map &map, const typename Map::Row &row, int e, T *p, const float (&v)[V]) {
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
__device__ __forceinline__ void load_src(float (&v)[V], const Map &map, const typename Map::Row &row, int e) {
    if (map.zero(row, e)) {
#pragma unroll
        for (int k = 0; k < V; k++) v[k] = 0.f;
    } else {
        pack_load<T, V>(v, map.src(row, e));
    }
}

// ---- the generic row kernel: dst (+)= LN?(src), rows gathered/scattered by Map

/* The raw 16-bit (or fp32) pack at p: a plain copy, converted to float only after every load of
 * the row has been issued. */
template <typename T, int V>
__device__ __forceinline__ void pack_raw(swin_pack<T, V> &dst, const T *p) { dst = *reinterpret_cast<const swin_pack<T, V> *>(p); }

template <typename T, int V>
__device__ __forceinline__ void pack_zero(swin_pack<T, V> &dst) {
#pragma unroll
    for (int k = 0; k < V; k++) store_f(dst.v, k, 0.f);
}

/* Loads of a row: the source packs into x, and (accumulating maps) the destination's old packs
 * into y, zeros where the row or the pack is out of range or the map says so. Two ways:
 *   Serial false (default): every address from the row's one lookup (Map::row), then one
 *     predicated 16-byte load each with no branch between them, converted to float after the
 *     last: 2 NV loads in flight a thread.
 *   Serial true (SWIN_ROW_SERIAL=1, for comparison in one run): pack after pack, a branch with the
 *     pack's loads and their conversion, as the kernel was; ptxas then keeps one pack's loads in
 *     flight at a time.
 * Before Map::Row, the maps looked their row up per element address (window.cu's token_src: 4
 * divisions and the roll, recomputed per pack) and the SASS issued each 16-byte load only after
 * the previous one's conversion. H200, Swin-T fp16 batch 256, `swin bench --breakdown`, ms for all
 * blocks, the kernel before / Serial / default: ln1+shift+partition 0.637 / 0.643 / 0.486,
 * reverse+residual+ln2 1.324 / 0.940 / 0.793 (the first column from an earlier run of the same
 * day on the same kind of GPU). Only the 16-bit Swin widths (96 * 2^k channels) have the serial
 * variant (fewer kernels to compile). */
template <typename T, int V, int NV, int LPR, bool Serial, class Map>
__device__ __forceinline__ void row_loads(float (&x)[NV][V], float (&y)[NV][V], const Map &map,
                                          const typename Map::Row &R, int row, bool valid, int lane, int C) {
    if constexpr (Serial) {
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int e = (lane + LPR * i) * V;
            const bool in = valid && e < C;
            if (in) {
                const typename Map::Row Ri = map.row(row);
                load_src<T, V>(x[i], map, Ri, e);
                if constexpr (Map::kAccumulate) pack_load<T, V>(y[i], map.dst(Ri, e));
            } else {
#pragma unroll
                for (int k = 0; k < V; k++) x[i][k] = y[i][k] = 0.f;
            }
        }
    } else {
        swin_pack<T, V> ps[NV], pd[NV];
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int e = (lane + LPR * i) * V, ee = e < C ? e : 0;   /* ee: an address inside the row */
            const bool in = valid && e < C;
            const T *sp = map.src(R, ee);
            pack_zero<T, V>(ps[i]);
            if (in && !map.zero(R, ee)) pack_raw<T, V>(ps[i], sp);
            if constexpr (Map::kAccumulate) {
                T *dp = map.dst(R, ee);
                pack_zero<T, V>(pd[i]);
                if (in) pack_raw<T, V>(pd[i], dp);
            }
        }
#pragma unroll
        for (int i = 0; i < NV; i++)
#pragma unroll
            for (int k = 0; k < V; k++) {
                x[i][k] = load_f(ps[i].v, k);
                y[i][k] = Map::kAccumulate ? load_f(pd[i].v, k) : 0.f;
            }
    }
}

template <typename T, int V, int NV, int LPR, bool Serial, class Map>
static __global__ void __launch_bounds__(SWIN_ROW_BLOCK)
row_ln_kernel(Map map, const float *__restrict__ w, const float *__restrict__ b, int rows, int C,
              float eps) {
    swin_pdl_begin();
    const int lane = threadIdx.x % LPR;
    const int row = blockIdx.x * (SWIN_ROW_BLOCK / LPR) + threadIdx.x / LPR;
    const typename Map::Row R = map.row(row < rows ? row : 0);   /* row 0's lookup for lanes past the end */
    const bool valid = row < rows && !map.skip(R);   /* skipped rows still join the shuffles */
    float x[NV][V], y[NV][V];   /* y: the destination's old value (accumulating maps) */
    row_loads<T, V, NV, LPR, Serial>(x, y, map, R, row, valid, lane, C);
    if constexpr (Map::kAddThenNorm) {   /* dst = src + dst; out = LN(dst) */
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int e = (lane + LPR * i) * V;
#pragma unroll
            for (int k = 0; k < V; k++) x[i][k] = round_as<T>(x[i][k] + y[i][k]);
            if (valid && e < C) pack_store<T, V>(map.dst(R, e), x[i]);
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
            row_store<T, V>(map, R, e, map.out(R, e), x[i]);
        } else {
            if constexpr (Map::kAccumulate) {
#pragma unroll
                for (int k = 0; k < V; k++) x[i][k] += y[i][k];
            }
            row_store<T, V>(map, R, e, map.dst(R, e), x[i]);
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
    if (row >= rows) return;   /* the whole warp shares the row */
    const typename Map::Row R = map.row(row);
    if (map.skip(R)) return;
    float mean = 0.f, rstd = 1.f, v[V];
    if constexpr (Map::kAddThenNorm) {   /* dst = src + dst first; LN reads dst back below */
        for (int e = lane * V; e < C; e += 32 * V) {
            float y[V];
            load_src<T, V>(v, map, R, e);
            pack_load<T, V>(y, map.dst(R, e));
            for (int k = 0; k < V; k++) v[k] += y[k];
            pack_store<T, V>(map.dst(R, e), v);
        }
    }
    /* the row LN reads: src, or dst for kAddThenNorm (this lane's own writes just above) */
    auto ln_load = [&](int e) {
        if constexpr (Map::kAddThenNorm) pack_load<T, V>(v, map.dst(R, e));
        else load_src<T, V>(v, map, R, e);
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
            row_store<T, V>(map, R, e, map.out(R, e), v);
        } else {
            T *p = map.dst(R, e);
            if constexpr (Map::kAccumulate) {
                float y[V];
                pack_load<T, V>(y, p);
                for (int k = 0; k < V; k++) v[k] += y[k];
            }
            row_store<T, V>(map, R, e, p, v);
        }
    }
}

/* SWIN_ROW_SERIAL=1 in the environment (read once): row_ln_kernel's loads as before (row_loads,
 * Serial) on the 16-bit Swin widths, so that the two are measured in one run */
static inline bool swin_row_serial() {
    static const bool on = [] {
        const char *v = getenv("SWIN_ROW_SERIAL");
        return v && v[0] == '1' && !v[1];
    }();
    return on;
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
        auto kern = row_ln_kernel<T, Cfg::V, Cfg::NV, Cfg::LPR, false, Map>;
        if constexpr (sizeof(T) == 2 && Cfg::V == 8 && (Cfg::NV == 3 || Cfg::NV == 6))   /* the Swin widths */
            if (swin_row_serial()) kern = row_ln_kernel<T, Cfg::V, Cfg::NV, Cfg::LPR, true, Map>;
        swin_launch(kern, grid, SWIN_ROW_BLOCK, 0, st, map, w, b, rows, C, eps);
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

/* Map M whose output also goes to an E4M3 copy (kQ8 above; M supplies oidx); M itself stays
 * without one, so an op without a copy runs the same kernel as before the copies existed */
template <class M> struct swin_q8_map : M {
    static constexpr bool kQ8 = true;
    swin_q8_dst q8;
};

/* swin_row_ln_launch over map m, or over m with the E4M3 copy q when q.q is set */
template <typename T, class M>
static swin_status swin_row_ln_launch_q8(const char *name, const M &m, const swin_q8_dst &q, int vec_ok,
                                         const float *w, const float *b, int rows, int C, float eps,
                                         cudaStream_t st) {
    if (!q.q) return swin_row_ln_launch<T>(name, m, vec_ok, w, b, rows, C, eps, st);
    swin_q8_map<M> mq;
    static_cast<M &>(mq) = m;
    mq.q8 = q;
    return swin_row_ln_launch<T>(name, mq, vec_ok, w, b, rows, C, eps, st);
}

/* An op's E4M3 copy argument: none (q8 NULL or q8->q NULL), or an 8-byte aligned buffer and a
 * positive finite 1 / scale; *out the copy to launch with (q NULL for none) */
static inline swin_status swin_check_q8(const char *op, const swin_q8_dst *q8, swin_q8_dst *out) {
    *out = swin_q8_dst{NULL, 0.0f, 1};
    if (!q8 || !q8->q) return SWIN_OK;
    if ((uintptr_t)q8->q % 8)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: the E4M3 output (%p) is not 8-byte aligned", op, (void *)q8->q);
    if (!(q8->inv > 0.0f) || isinf(q8->inv))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: 1 / scale of the E4M3 output is %g", op, (double)q8->inv);
    *out = *q8;
    return SWIN_OK;
}

/* Blocks for a grid-stride loop over n items, 256 threads each. */
static inline unsigned swin_grid_for(size_t n) {
    size_t blocks = (n + 255) / 256;
    if (blocks > (1u << 20)) blocks = 1u << 20;
    return blocks ? (unsigned)blocks : 1u;
}

#endif
