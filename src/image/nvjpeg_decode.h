/* nvjpeg_decode.h - JPEG decoding on the GPU with nvJPEG (src/image/nvjpeg_decode.c). Internal.
 *
 *   swin_nvjpeg *d;
 *   swin_nvjpeg_create(0, &d);                  // cuda:0; hardware engine when the GPU has one
 *   swin_nvjpeg_buffer px = {0};                // device memory the caller owns
 *   swin_nvjpeg_decode_into(d, &px, data, len, names, n, out);   // out[i]: device RGB8 or a message
 *   ... out[i].rgb valid until the next decode into px ...
 *   swin_nvjpeg_buffer_free(&px);
 *   swin_nvjpeg_free(d);
 *
 * Threads: one swin_nvjpeg is used by one thread at a time; several, each on its own thread,
 * decode concurrently (each has its own nvJPEG handles, states and stream, as nvJPEG asks).
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
/* Device memory for decoded pixels that the caller owns: {0} to start; grown (on the decoder's
 * GPU, with some headroom) by swin_nvjpeg_decode_into, released by swin_nvjpeg_buffer_free.
 * The pixels of a decode stay valid until the next decode into the same buffer. */
typedef struct {
    uint8_t *dev;
    size_t cap;
    int device;             /* the GPU that holds dev */
} swin_nvjpeg_buffer;
void swin_nvjpeg_buffer_free(swin_nvjpeg_buffer *px);
/* Room for `bytes` of pixels in px on GPU `device` (an eighth more when it grows, so that slowly
 * growing batches do not free and allocate, which waits for the whole GPU, every time); a buffer
 * made on another GPU is freed first. Only while nothing reads px. */
swin_status swin_nvjpeg_buffer_reserve(swin_nvjpeg_buffer *px, int device, size_t bytes);
/* Decode n JPEG files held in host memory into px; returns an error only when the decoder itself
 * fails (then every out[i].ok is 0); a bad file fails alone. Synchronous: the pixels are ready
 * on return. A batch can be decoded into one buffer while the GPU still reads another. */
swin_status swin_nvjpeg_decode_into(swin_nvjpeg *d, swin_nvjpeg_buffer *px, const uint8_t *const *data,
                                    const size_t *len, const char *const *names, int n, swin_nvjpeg_image *out);

/* Where the decoder's time went, summed over its calls (milliseconds of the calling thread). */
typedef struct {
    int hw_images;          /* decoded by the JPEG engines, batched */
    int sw_images;          /* decoded one by one by the default backend */
    int hw_setups;          /* nvjpegDecodeBatchedInitialize calls (a batch size not seen before) */
    int hw_padding;         /* images decoded only to fill a batch up to its set-up size */
    double parse_ms;        /* image info, bitstream parsing, checks, buffer growth */
    double hw_ms;           /* nvjpegDecodeBatched (its CPU part; the engines run on) */
    double sw_ms;           /* nvjpegDecode calls (and the waits between two of them) */
    double sync_ms;         /* waiting for the GPU at the end */
    size_t last_bytes;      /* the last call: bytes of the buffer its images and padding were given */
} swin_nvjpeg_stats;
void swin_nvjpeg_get_stats(const swin_nvjpeg *d, swin_nvjpeg_stats *out);

#ifdef __cplusplus
}
#endif
#endif
