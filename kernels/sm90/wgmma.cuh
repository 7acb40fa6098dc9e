/* wgmma.cuh - Hopper's warpgroup MMA (wgmma) and what feeds it, shared by the sm_90a kernels
 * (gemm_wgmma.cu, gemm_tma.cu, mlp_wgmma.cu, mlp_tma.cu):
 *
 *   swz / sw128_desc      the 128-byte swizzled K-major tile layout and its matrix descriptor
 *   cp_async16_s          16-byte cp.async to a shared-window address (zero-fill when invalid)
 *   st_shared_u32         a 4-byte store to a shared-window address
 *   prefetch_l2           a global line into L2
 *   fence_proxy_async     generic-proxy shared writes -> visible to wgmma (async proxy)
 *   stmatrix_x4           four 8 x 8 16-bit matrices from accumulator fragments into shared memory
 *   wgmma_fence / commit / wait_all
 *   wgmma_wait<N>         wait until at most N committed groups are pending
 *   wgmma_ss<T, N>        d [64 x N] (+)= A (64 x 16) @ B (N x 16)^T, 16-bit operands in shared memory
 *   WG_D8, WG_REGS_N      accumulator operand lists for the inline PTX
 *   store_rows<T, N>      a thread's part of an m64nN accumulator + bias (+ residual) to global rows
 *   mbar_*                shared-memory barriers (mbarrier): init, arrive, expect bytes, wait
 *                         for a phase's parity
 *   tma_load_2d / tma_store_2d / bulk_*   the Tensor Memory Accelerator's 2-D tile copies
 *                         (cp.async.bulk.tensor) and their store groups
 *   named_sync            a barrier of some warps
 *   setmaxnreg_dec / _inc a warpgroup's register budget (warp-specialised kernels)
 *
 * Layout: a K-major operand tile stores row r (128 bytes of K: 64 16-bit, 128 E4M3 or 32 fp32
 * values) at byte 128 r, its 16-byte chunk c at chunk c ^ (r % 8); 8-row atoms of 1024 bytes,
 * tiles 1024-byte aligned. The descriptor names that layout (start address, 1024 bytes between
 * 8-row groups, swizzle mode 128B); a 32-byte step of K inside the 128 bytes advances the start
 * address by 32 bytes (descriptor + 2: the hardware applies the swizzle to the full address).
 */
#ifndef SWIN_WGMMA_CUH
#define SWIN_WGMMA_CUH

#include <stdint.h>

#include "mma.cuh"

/* byte offset of 16-byte chunk ch of row r in a 128-byte-swizzled tile */
__device__ __forceinline__ uint32_t swz(int r, int ch) { return (uint32_t)(r * 8 + (ch ^ (r & 7))) * 16; }

/* 16-byte async copy global -> shared (a shared-window address); when !valid zero-filled, src not read */
__device__ __forceinline__ void cp_async16_s(uint32_t dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(__cvta_generic_to_global(src)),
                 "r"(valid ? 16 : 0));
}

/* shared-memory matrix descriptor of the tile at shared address a: K-major, 128-byte swizzle,
 * 8-row groups 1024 bytes apart */
__device__ __forceinline__ uint64_t sw128_desc(uint32_t a) {
    return (uint64_t)((a & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

/* the 128-byte line at p into L2 (no registers, nothing waits for it) */
__device__ __forceinline__ void prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

/* a 4-byte store to a shared-window address */
__device__ __forceinline__ void st_shared_u32(uint32_t a, uint32_t v) {
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
/* four 8 x 8 matrices of 16-bit values into shared memory: matrix j's rows at the addresses of
 * lanes 8 j .. 8 j + 7, row lane / 4, columns 2 (lane % 4) + {0, 1} of it in rj (an mma
 * accumulator fragment's layout) */
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void wgmma_wait_all() { wgmma_wait<0>(); }

/* mbarriers (8 bytes of shared memory at address a). A phase completes when its arrivals (the
 * init count) have arrived and the bytes announced by expect_tx have landed; waiters name the
 * parity of the phase they wait for (a new barrier is in phase 0; waiting for parity 1 returns at
 * once, as if the phase before had completed). */
__device__ __forceinline__ void mbar_init(uint32_t a, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(a), "r"(count) : "memory");
}
/* the inits visible to the async proxy (TMA's complete_tx) before any use */
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive(uint32_t a) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(a) : "memory");
}
/* one arrival that also announces bytes the phase waits for (TMA loads completing on a) */
__device__ __forceinline__ void mbar_expect_tx(uint32_t a, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(a), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t a, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nWAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT;\n}\n" ::"r"(a), "r"(parity) : "memory");
}

/* TMA: the box at element coordinates (c0 inner, c1 outer) of the tensor map at generic address
 * map (a __grid_constant__ kernel parameter) into shared memory at dst, completing on mbarrier
 * bar; elements outside the tensor read as zero (and count towards the bytes). */
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void *map, int c0, int c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
/* shared memory at src -> the box at (c0, c1); parts outside the tensor are not written */
__device__ __forceinline__ void tma_store_2d(const void *map, uint32_t src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/* the committed stores have read their shared memory (it may be rewritten) */
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
/* the committed stores are done */
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void tma_prefetch_map(const void *map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}
/* a barrier of the nthreads threads (a multiple of 32) that name barrier id (1 .. 15; 0 is __syncthreads) */
__device__ __forceinline__ void named_sync(int id, int nthreads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(nthreads) : "memory");
}

/* the registers a thread of this warpgroup may use from here on (every thread of the warpgroup
 * executes it): dec gives registers back, inc waits until it can take them */
template <int R> __device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R> __device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

/* "+f" operands of accumulators d[i .. i + 7] */
#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                 "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D32 WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
#define WG_D48 WG_D32, WG_D8(32), WG_D8(40)
#define WG_D64 WG_D48, WG_D8(48), WG_D8(56)
#define WG_D96 WG_D64, WG_D8(64), WG_D8(72), WG_D8(80), WG_D8(88)
/* the PTX register lists of 32, 48, 64 and 96 accumulators (%0 ...) */
#define WG_R10X(a) "%" #a "0, %" #a "1, %" #a "2, %" #a "3, %" #a "4, %" #a "5, %" #a "6, %" #a "7, %" #a "8, %" #a "9"
#define WG_R10 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9"
#define WG_REGS32 "{" WG_R10 ", " WG_R10X(1) ", " WG_R10X(2) ", %30, %31}"
#define WG_REGS48 "{" WG_R10 ", " WG_R10X(1) ", " WG_R10X(2) ", " WG_R10X(3) ", %40, %41, %42, %43, %44, %45, %46, %47}"
#define WG_REGS64 "{" WG_R10 ", " WG_R10X(1) ", " WG_R10X(2) ", " WG_R10X(3) ", " WG_R10X(4) ", " WG_R10X(5) ", %60, %61, %62, %63}"
#define WG_REGS96 "{" WG_R10 ", " WG_R10X(1) ", " WG_R10X(2) ", " WG_R10X(3) ", " WG_R10X(4) ", " WG_R10X(5) ", " WG_R10X(6) \
                  ", " WG_R10X(7) ", " WG_R10X(8) ", %90, %91, %92, %93, %94, %95}"

/* d [N / 2 a thread] (=, or += when acc is not 0) A (64 x 16, descriptor da) @ B (N x 16, db)^T,
 * both operands in shared memory, K-major; T __half or __nv_bfloat16, N 64, 96, 128 or 192 */
template <typename T, int N> __device__ __forceinline__ void wgmma_ss(float *d, uint64_t da, uint64_t db, int acc);
#define WG_SS(T, TS, N, REGS, DOPS, IA, IB, IP)                                                                  \
    template <> __device__ __forceinline__ void wgmma_ss<T, N>(float *d, uint64_t da, uint64_t db, int acc) {    \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\n"                                            \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TS "." TS " " REGS ", %" IA ", %" IB      \
                     ", p, 1, 1, 0, 0;\n}\n"                                                                     \
                     : DOPS                                                                                      \
                     : "l"(da), "l"(db), "r"(acc));                                                              \
    }
WG_SS(__half, "f16", 64, WG_REGS32, WG_D32, "32", "33", "34")
WG_SS(__half, "f16", 96, WG_REGS48, WG_D48, "48", "49", "50")
WG_SS(__half, "f16", 128, WG_REGS64, WG_D64, "64", "65", "66")
WG_SS(__half, "f16", 192, WG_REGS96, WG_D96, "96", "97", "98")
WG_SS(__nv_bfloat16, "bf16", 64, WG_REGS32, WG_D32, "32", "33", "34")
WG_SS(__nv_bfloat16, "bf16", 96, WG_REGS48, WG_D48, "48", "49", "50")
WG_SS(__nv_bfloat16, "bf16", 128, WG_REGS64, WG_D64, "64", "65", "66")
WG_SS(__nv_bfloat16, "bf16", 192, WG_REGS96, WG_D96, "96", "97", "98")
#undef WG_SS

/* A thread's part of a [64 x N] accumulator d of wgmma m64nN (rows r0 and r0 + 8, columns
 * 8 j + 2 (lane % 4) + {0, 1}) stored to rows of the row-major [M, N] matrix out: d + bias (+ res),
 * in fp32, rounded once; rows from M on are not written. bias may be NULL; res may be NULL or out
 * itself (each element read, then written, by this thread). Every load is issued before the first
 * store: res may be out, so a load after a store could not be moved above it, and each pair's
 * load waited for its own round trip (ncu: long-scoreboard stalls were half of mlp_tma.cu's). */
template <typename T, int N>
__device__ __forceinline__ void store_rows(T *out, const float *d, const T *bias, const T *res, int r0, int M,
                                           int lane) {
    uint32_t bq[N / 8], rq[N / 8][2];
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        const int c = 8 * j + 2 * (lane & 3);
        bq[j] = bias ? ldg_pair(bias + c) : 0u;
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int row = r0 + 8 * hh;
            rq[j][hh] = res && row < M ? *reinterpret_cast<const unsigned *>(res + (size_t)row * N + c) : 0u;
        }
    }
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        const float2 b = unpack2<T>(bq[j]);
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int row = r0 + 8 * hh;
            if (row >= M) continue;
            const float2 q = unpack2<T>(rq[j][hh]);   /* zeros without a residual */
            *reinterpret_cast<unsigned *>(out + (size_t)row * N + 8 * j + 2 * (lane & 3)) =
                pack2<T>(d[4 * j + 2 * hh] + b.x + q.x, d[4 * j + 2 * hh + 1] + b.y + q.y);
        }
    }
}

#endif
