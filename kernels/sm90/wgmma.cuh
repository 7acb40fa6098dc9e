/* wgmma.cuh - Hopper's warpgroup MMA (wgmma) and what feeds it, shared by the sm_90a kernels
 * (gemm_wgmma.cu, mlp_wgmma.cu):
 *
 *   swz / sw128_desc      the 128-byte swizzled K-major tile layout and its matrix descriptor
 *   cp_async16_s          16-byte cp.async to a shared-window address (zero-fill when invalid)
 *   fence_proxy_async     generic-proxy shared writes -> visible to wgmma (async proxy)
 *   wgmma_fence / commit / wait_all
 *   WG_D8, WG_REGS_N      accumulator operand lists for the inline PTX
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

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

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

#endif
