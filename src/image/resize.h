/* resize.h - resampling of RGB8 images, bit-exact with Pillow's Image.resize.
 *
 *   uint8_t out[224 * 224 * 3];
 *   swin_resize_rgb8(img.rgb, img.width, img.height, out, 224, 224, SWIN_INTERP_BICUBIC);
 *
 * Bicubic (a = -0.5) and bilinear follow Pillow's ImagingResample (libImaging/Resample.c):
 * filter support widened by the scale when downscaling (antialiasing), coefficients in
 * 22-bit fixed point, a horizontal and a vertical pass, each rounded and clamped to 8 bits, and
 * a pass skipped when its size does not change. The pass order is the Pillow version's, so the
 * rounding is too (`pillow` below). Nearest follows Pillow's ImagingScaleAffine (source position
 * accumulated in double, truncated); it is one pass, the same in every version.
 *
 * pillow: the major version of the Pillow to reproduce, as swin_preprocess_params.pillow.
 *   0      SWIN_PILLOW_DEFAULT (13)
 *   1..12  the horizontal pass always first
 *   >= 13  the vertical pass first when the height shrinks more than twice as much as the width
 *          ((sh - dh) > 0 && (sh - dh) > 2 * (sw - dw), Pillow 13's ImagingResampleInner)
 *   < 0    refused (SWIN_ERR_ARGUMENT)
 * Images are [height, width, 3] row-major. Test: build/tests/test_preprocess (compares with PIL).
 */
#ifndef SWIN_RESIZE_H
#define SWIN_RESIZE_H

#include <stdint.h>
#include "image.h"
#include "swin.h"

/* Fixed-point precision of the filter weights: 8 bits for the result, 2 for overflow and sign of
 * the negative lobes (Pillow's PRECISION_BITS). The GPU kernels (kernels/preprocess.cu) use it too. */
#define SWIN_RESIZE_PRECISION_BITS (32 - 8 - 2)

/* dst [dh, dw, 3] <- src [sh, sw, 3] resized, as SWIN_PILLOW_DEFAULT does. */
swin_status swin_resize_rgb8(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh,
                             swin_interp interp);

/* Only the window [wx0, wx0 + ww) x [wy0, wy0 + wh) of the [dh, dw] resized image, into
 * dst [wh, ww, 3]: the same pixels as a full resize followed by a crop, computed without the
 * full image. Window pixels outside the resized image are 0 (torchvision's CenterCrop pad). */
swin_status swin_resize_rgb8_window(const uint8_t *src, int sw, int sh, int dw, int dh,
                                    int wx0, int wy0, int ww, int wh, swin_interp interp,
                                    int pillow, uint8_t *dst);

/* ---- the plan of a windowed resize: everything swin_resize_rgb8_window works out before it
 * touches a pixel. The CPU applies it with swin_resize_plan_apply; the GPU preprocessing
 * (src/cuda/images.c, kernels/preprocess.cu) uploads the same numbers, so both make the same bytes.
 *
 * The window [wx0, wx0 + ww) x [wy0, wy0 + wh) of the [dh, dw] resized image; its visible part
 * [ix0, ix1) x [iy0, iy1) (nx = ix1 - ix0 columns, ny = iy1 - iy0 rows; both 0 when the window
 * misses the image). Window pixels outside the visible part are 0.
 * Bilinear / bicubic, two passes through an RGB8 intermediate (h_first: the order of `pillow`):
 *   h_first:  tmp [r1 - r0, nx]  = horizontal pass (axis h) of source rows [r0, r1), or a copy of
 *                                  their columns [ix0, ix1) when !need_h (then sw == dw);
 *             out [ny, nx]       = vertical pass (axis v) of tmp, or a copy when !need_v
 *                                  (then r0 = iy0, r1 = iy1).
 *   !h_first: tmp [ny, c1 - c0]  = vertical pass of source columns [c0, c1) (need_v holds);
 *             out [ny, nx]       = horizontal pass of tmp, or a copy when !need_h (c0 = ix0, c1 = ix1).
 * An axis's taps are in the coordinates of the image it reads: source rows / columns, which for
 * the second pass are the intermediate's rows [r0, r1) or columns [c0, c1).
 * Nearest, one pass: out[j][i] = src[v.first[j]][h.first[i]], 0 where either is -1. */
typedef struct {
    int n;            /* outputs: visible window columns (h) or rows (v); 0 when the pass is skipped */
    int ksize;        /* filters: row stride of k; 0 for nearest */
    int32_t *first;   /* [n] filters: first input tap; nearest: the source index, or -1 */
    int32_t *count;   /* [n] taps (filters only, else NULL) */
    int32_t *k;       /* [n * ksize] weights, SWIN_RESIZE_PRECISION_BITS fixed point (filters only) */
    size_t len;       /* int32 values in the one block first points to: [first | count | k], that is
                       * n * (2 + ksize) for filters, n for nearest */
} swin_resize_axis;

typedef struct {
    swin_interp interp;
    int sw, sh, dw, dh;          /* source and resized sizes */
    int wx0, wy0, ww, wh;        /* the window, in resized coordinates */
    int ix0, ix1, iy0, iy1;      /* its visible part */
    int need_h, need_v;          /* filters: the width / the height changes (else that pass is skipped) */
    int h_first;                 /* filters: horizontal pass first (always, for pillow 1..12) */
    int r0, r1, c0, c1;          /* filters: the intermediate's source rows (h_first) / columns */
    swin_resize_axis h, v;
} swin_resize_plan;

/* Work out the plan (validates the sizes, the interpolation and pillow). Free with
 * swin_resize_plan_free. */
swin_status swin_resize_plan_make(int sw, int sh, int dw, int dh, int wx0, int wy0, int ww, int wh,
                                  swin_interp interp, int pillow, swin_resize_plan *plan);
void swin_resize_plan_free(swin_resize_plan *plan);

/* The source pixels the plan reads: *r, within [0, sw) x [0, sh); empty (x0 = x1, y0 = y1) when
 * the window misses the image. */
void swin_resize_plan_source(const swin_resize_plan *plan, swin_rect *r);
/* Rewrite the plan for a source that holds only the part [x0, x0 + w) x [y0, y0 + h) of the
 * sw x sh image, stored as a w x h image (swin_image's parts): every source coordinate moves by
 * (-x0, -y0), sw and sh become w and h, and along an axis that is not resized (where resized and
 * source coordinates are one) the window moves with them; the output is the same. SWIN_ERR_ARGUMENT
 * when the part is not within the image or does not hold all that the plan reads (the plan is then
 * left as it was: the caller still frees it). */
swin_status swin_resize_plan_to_part(swin_resize_plan *plan, int x0, int y0, int w, int h);

/* The resize of preprocessing img with p (preprocess.c): Pillow's plan of the output window
 * (swin_preprocess_plan's geometry, p->pillow's pass order), in the coordinates of the pixels img
 * holds when it is a part (swin_resize_plan_to_part). The CPU path applies it, the GPU path
 * (src/cuda/images.c) uploads it. */
struct swin_preprocess_params;
swin_status swin_preprocess_resize_plan(const struct swin_preprocess_params *p, const swin_image *img,
                                        swin_resize_plan *plan);
/* dst [wh, ww, 3] <- the plan applied to src [sh, sw, 3] (swin_resize_rgb8_window's result). */
swin_status swin_resize_plan_apply(const swin_resize_plan *plan, const uint8_t *src, uint8_t *dst);

/* The CPU kernels that can apply a plan; all give the same bytes. AUTO (what
 * swin_resize_plan_apply uses) picks AVX2 where the CPU has it, else C, the plain loops that are
 * the reference. A kernel this CPU or build lacks is SWIN_ERR_UNSUPPORTED. */
typedef enum { SWIN_RESIZE_KERNEL_AUTO, SWIN_RESIZE_KERNEL_C, SWIN_RESIZE_KERNEL_AVX2 } swin_resize_kernel;
swin_status swin_resize_plan_apply_kernel(const swin_resize_plan *plan, swin_resize_kernel kernel,
                                          const uint8_t *src, uint8_t *dst);

#endif
