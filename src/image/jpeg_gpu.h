/* jpeg_gpu.h - Pillow-exact JPEG decoding on the GPU for a batch (src/image/jpeg_gpu.c). Internal.
 *
 *   swin_jpeg_scan sc[n];                        // per file: swin_jpeg_read_scan, then its data
 *                                                // staged with swin_jp_stage (a CPU thread)
 *   swin_jpeg_gpu *g;
 *   swin_jpeg_gpu_create(0, &g);                  // cuda:0
 *   swin_nvjpeg_buffer px = {0};                  // device pixels the caller owns
 *   swin_jpeg_gpu_decode(g, &px, in, n, out);     // out[i]: device RGB8, or left to libjpeg
 *   ... out[i].rgb valid until the next decode into px ...
 *   swin_nvjpeg_buffer_free(&px);
 *   swin_jpeg_gpu_free(g);
 *
 * The whole decode after the header: entropy decoding (kernels/jpeg_huff.cu: a thread block per
 * image, its data cut into pieces decoded in parallel, jpeg_par.h), then IDCT, chroma upsampling
 * and colour conversion (kernels/jpeg_exact.cu), with the
 * arithmetic libjpeg-turbo uses with Pillow's settings, so the pixels are libjpeg's (and Pillow's)
 * bit for bit. An image the entropy decoder refuses (anything libjpeg would warn about: see
 * jpeg_huff.h) comes back with ok = 0, for the caller to decode with libjpeg, which gives its own
 * verdict. Several decoders, each on its own thread, can decode different batches concurrently.
 * Threads: one swin_jpeg_gpu is used by one thread at a time.
 * Test: tests/test_gpu_jpeg_huff.c (the kernels), tests/test_gpu_pipeline.c (the pipeline's
 * `gpu` decoder against libjpeg's).
 */
#ifndef SWIN_JPEG_GPU_H
#define SWIN_JPEG_GPU_H

#include "jpeg.h"
#include "jpeg_par.h"
#include "nvjpeg_decode.h"   /* swin_nvjpeg_buffer and swin_nvjpeg_image: device pixels */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swin_jpeg_gpu swin_jpeg_gpu;

typedef struct {
    const uint8_t *data;          /* host: its entropy-coded data as swin_jp_stage leaves it
                                     (scan->img.data 0: swin_jp_staged_len(&scan->img) bytes) */
    const swin_jpeg_scan *scan;   /* its scan (swin_jpeg_read_scan, then swin_jp_stage) */
    const char *name;
} swin_jpeg_gpu_input;

/* SWIN_ERR_UNSUPPORTED when built without CUDA */
swin_status swin_jpeg_gpu_create(int device_index, swin_jpeg_gpu **out);
void swin_jpeg_gpu_free(swin_jpeg_gpu *g);
/* Decode n images into px (grown as needed on g's GPU); returns an error only when the decoder
 * itself fails (then every out[i].ok is 0). Synchronous: the pixels are ready on return. */
swin_status swin_jpeg_gpu_decode(swin_jpeg_gpu *g, swin_nvjpeg_buffer *px, const swin_jpeg_gpu_input *in, int n,
                                 swin_nvjpeg_image *out);

/* Images with restart intervals are decoded in parts of about *bits bits of data, a thread block
 * a part (jpeg_par.h swin_jp_split): the kernel configuration's swin_jp_split_bits, or
 * SWIN_JPEG_GPU_SPLIT=BITS from the environment (0: never split: an image a block, as before, to
 * compare the two; a bad value is SWIN_ERR_ARGUMENT). swin_jpeg_gpu_create reads it once. */
swin_status swin_jpeg_gpu_split_bits(int32_t *bits);

/* Counts and time (milliseconds of the calling thread), summed over the decoder's calls. */
typedef struct {
    int images, refused;          /* decoded; left to libjpeg */
    double stage_ms;              /* gathering the batch into page-locked memory */
    double gpu_ms;                /* launching, then waiting for the GPU */
} swin_jpeg_gpu_stats;
void swin_jpeg_gpu_get_stats(const swin_jpeg_gpu *g, swin_jpeg_gpu_stats *out);

#ifdef __cplusplus
}
#endif
#endif
