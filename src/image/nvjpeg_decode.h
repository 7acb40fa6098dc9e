/* nvjpeg_decode.h - JPEG decoding on the GPU with nvJPEG (src/image/nvjpeg_decode.c). Internal.
 *
 *   swin_nvjpeg *d;
 *   swin_nvjpeg_create(0, &d);                  // cuda:0; hardware engine when the GPU has one
 *   swin_nvjpeg_decode(d, data, len, names, n, out);   // out[i]: device RGB8 or a message
 *   ... out[i].rgb valid until the next decode ...
 *   swin_nvjpeg_free(d);
 *
 * Backends: NVJPEG_BACKEND_HARDWARE (A100/H100/H200 JPEG engines: baseline, single scan) for
 * the images it supports, batched; every other image (progressive, ...) through the default
 * backend one at a time. Output is interleaved RGB (grey replicated), chroma upsampled with
 * interpolation. The pixels are NOT bit-identical to libjpeg's (a different IDCT and colour
 * conversion): docs/PERFORMANCE.md measures the difference. Built only when CMake finds nvJPEG
 * (SWIN_HAVE_NVJPEG); otherwise swin_nvjpeg_create reports SWIN_ERR_UNSUPPORTED.
 */
#ifndef SWIN_NVJPEG_H
#define SWIN_NVJPEG_H

#include <stddef.h>
#include <stdint.h>

#include "swin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swin_nvjpeg swin_nvjpeg;

typedef struct {
    int ok;
    int width, height;
    const uint8_t *rgb;     /* device [height, width, 3], owned by the decoder */
    char err[512];          /* "<name>: ..." when !ok */
} swin_nvjpeg_image;

swin_status swin_nvjpeg_create(int device_index, swin_nvjpeg **out);
void swin_nvjpeg_free(swin_nvjpeg *d);
/* "hardware" or "default" (the backend batched decoding uses) */
const char *swin_nvjpeg_backend(const swin_nvjpeg *d);
/* Decode n JPEG files held in host memory; returns an error only when the decoder itself
 * fails (then every out[i].ok is 0); a bad file fails alone. Synchronous: the pixels are ready
 * on return. */
swin_status swin_nvjpeg_decode(swin_nvjpeg *d, const uint8_t *const *data, const size_t *len,
                               const char *const *names, int n, swin_nvjpeg_image *out);

#ifdef __cplusplus
}
#endif
#endif
