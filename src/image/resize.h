/* resize.h - resampling of RGB8 images, bit-exact with Pillow's Image.resize.
 *
 *   uint8_t out[224 * 224 * 3];
 *   swin_resize_rgb8(img.rgb, img.width, img.height, out, 224, 224, SWIN_INTERP_BICUBIC);
 *
 * Bicubic (a = -0.5) and bilinear follow Pillow's ImagingResample (libImaging/Resample.c):
 * filter support widened by the scale when downscaling (antialiasing), coefficients in
 * 22-bit fixed point, a horizontal and a vertical pass (vertical first when the height
 * shrinks more than twice as much as the width, as Pillow 13 does), each rounded and clamped
 * to 8 bits, and a pass skipped when its size does not change. Nearest follows Pillow's
 * ImagingScaleAffine (source position accumulated in double, truncated).
 * Images are [height, width, 3] row-major. Test: build/test_preprocess (compares with PIL).
 */
#ifndef SWIN_RESIZE_H
#define SWIN_RESIZE_H

#include <stdint.h>
#include "swin.h"

/* dst [dh, dw, 3] <- src [sh, sw, 3] resized. */
swin_status swin_resize_rgb8(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh,
                             swin_interp interp);

/* Only the window [wx0, wx0 + ww) x [wy0, wy0 + wh) of the [dh, dw] resized image, into
 * dst [wh, ww, 3]: the same pixels as a full resize followed by a crop, computed without the
 * full image. Window pixels outside the resized image are 0 (torchvision's CenterCrop pad). */
swin_status swin_resize_rgb8_window(const uint8_t *src, int sw, int sh, int dw, int dh,
                                    int wx0, int wy0, int ww, int wh, swin_interp interp,
                                    uint8_t *dst);

#endif
