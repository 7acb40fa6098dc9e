/* resize_kernels.h - the CPU kernels that apply a resize plan's passes (internal to src/image).
 *
 * resize.c holds the reference: plain C loops in Pillow's arithmetic. resize_avx2.c holds the
 * same passes for x86-64 CPUs with AVX2, picked at run time (the build itself targets any x86-64).
 * Every kernel computes the same integer sums as the reference, so the bytes are identical;
 * tests/test_preprocess.c compares them on many shapes (swin_resize_plan_apply_kernel).
 *
 * The passes' arguments: images are RGB8 with rows `stride` pixels apart; `in` starts at input
 * column / row col0 / row0 of the axis's coordinates; `c` is the plan's axis.
 *   pass_h: out[y][xx] = sum_x in[y][first[xx] - col0 + x] * k[xx][x]   (y < rows, xx < c->n)
 *   pass_v: out[yy][x] = sum_y in[first[yy] - row0 + y][x] * k[yy][y]   (x < cols, yy < c->n)
 * A kernel that cannot run a call (no AVX2, out of memory, too few columns) returns 0 and writes
 * nothing; the caller then runs the reference. */
#ifndef SWIN_RESIZE_KERNELS_H
#define SWIN_RESIZE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "resize.h"

int swin_resize_avx2_available(void);
int swin_resize_pass_h_avx2(const uint8_t *in, size_t in_stride, int col0, int rows, const swin_resize_axis *c,
                            uint8_t *out, size_t out_stride);
int swin_resize_pass_v_avx2(const uint8_t *in, size_t in_stride, int row0, int cols, const swin_resize_axis *c,
                            uint8_t *out, size_t out_stride);

#endif
