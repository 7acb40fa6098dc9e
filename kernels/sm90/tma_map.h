/* tma_map.h - 2-D tensor maps for the Tensor Memory Accelerator kernels of kernels/sm90/
 * (gemm_tma.cu, mlp_tma.cu), encoded on the host by cuTensorMapEncodeTiled, which tma_map.cu takes
 * from the driver through the runtime (no link to libcuda). C++ only: CUtensorMap is a kernel
 * parameter (__grid_constant__). */
#ifndef SWIN_TMA_MAP_H
#define SWIN_TMA_MAP_H

#include <cuda.h>

#include "ops.h"

/* 1 when the driver encodes tensor maps */
int swin_tma_available(void);

/* *map: a row-major [rows, cols] matrix of esz-byte elements (4, 2 or 1) at p, read or written in
 * boxes of box_rows rows x 128 bytes with the 128-byte swizzle (wgmma.cuh's tile layout); elements
 * outside the matrix read as zero and are not written. Fails (op and what named) when the driver
 * has no encoder or refuses the shape (p not 16-byte aligned, a row not a multiple of 16 bytes). */
swin_status swin_tma_map_2d(CUtensorMap *map, const char *op, const char *what, const void *p, int rows, int cols,
                            int esz, int box_rows);

#endif
