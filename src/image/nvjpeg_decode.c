/* nvjpeg_decode.c - JPEG files to device RGB8 with nvJPEG (see nvjpeg_decode.h); named so that
 * it does not shadow the toolkit's <nvjpeg.h>. Test: tests/test_gpu_pipeline.c (on a GPU); the
 * benchmark (tools/bench_pipeline.sh) measures how
 * far its pixels are from libjpeg's.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "nvjpeg_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "internal.h"

#ifndef SWIN_HAVE_NVJPEG

swin_status swin_nvjpeg_create(int device_index, swin_nvjpeg **out) {
    (void)device_index;
    *out = NULL;
    return swin_fail(SWIN_ERR_UNSUPPORTED, "this swin was built without nvJPEG (CMake did not find nvjpeg.h and "
                     "libnvjpeg in the CUDA toolkit)");
}
void swin_nvjpeg_free(swin_nvjpeg *d) { (void)d; }
const char *swin_nvjpeg_backend(const swin_nvjpeg *d) { (void)d; return "none"; }
swin_status swin_nvjpeg_decode_into(swin_nvjpeg *d, swin_nvjpeg_buffer *px, const uint8_t *const *data,
                                    const size_t *len, const char *const *names, int n, swin_nvjpeg_image *out) {
    (void)d; (void)px; (void)data; (void)len; (void)names; (void)n; (void)out;
    return swin_fail(SWIN_ERR_UNSUPPORTED, "this swin was built without nvJPEG");
}
void swin_nvjpeg_get_stats(const swin_nvjpeg *d, swin_nvjpeg_stats *out) {
    (void)d;
    memset(out, 0, sizeof *out);
}

#else

#include <time.h>

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include "nvjpeg_status.h"

#include "check.h"

/* Batched states. nvJPEG's header says of nvjpegDecodeBatched: "batch size is expected to be the
 * same as parameter to this batch initialization function" (nvjpegDecodeBatchedInitialize), and
 * the data, lengths and destinations arrays are "of size batch_size": a smaller batch may not be
 * passed to a state set up for a larger one. Setting a state up again for every new count of
 * hardware images (it changes whenever a batch holds a progressive file, and for the last batch)
 * costs time, so a batch of m hardware images is padded up to the next multiple of HW_GRANULE
 * with repeats of its smallest image (decoded into scratch space, never read), and up to
 * HW_STATES states are kept, one per padded size, the least recently used one set up again when
 * a new size comes. Full batches with up to HW_GRANULE - 1 images for the default backend all
 * use one state, set up once. */
#define HW_GRANULE 16
#define HW_STATES 4

typedef struct {
    nvjpegJpegState_t state;
    int size;                           /* the batch size it is set up for, -1 when none */
    unsigned long used;                 /* last use, for the replacement */
} hw_state;

struct swin_nvjpeg {
    int dev;
    cudaStream_t stream;
    nvjpegHandle_t hw, sw;              /* hw NULL when the GPU has no JPEG engine */
    nvjpegJpegState_t sw_state;
    hw_state hws[HW_STATES];
    unsigned long tick;
    nvjpegJpegStream_t parsed;          /* for the hardware support check */
    swin_nvjpeg_stats stats;
    /* host scratch, [cap_n] */
    const unsigned char **hw_data;
    size_t *hw_len;
    nvjpegImage_t *hw_dst;
    int *hw_idx, cap_n;
};


#define NV_TRY(call)                                                                              \
    do {                                                                                          \
        nvjpegStatus_t nv_st_ = (call);                                                           \
        if (nv_st_ != NVJPEG_STATUS_SUCCESS)                                                      \
            return swin_fail(SWIN_ERR_CUDA, "nvJPEG: %s failed: %s", #call, swin_nvjpeg_status_str(nv_st_));      \
    } while (0)

const char *swin_nvjpeg_backend(const swin_nvjpeg *d) { return d && d->hw ? "hardware" : "default"; }

void swin_nvjpeg_free(swin_nvjpeg *d) {
    if (!d) return;
    cudaSetDevice(d->dev);
    if (d->parsed) nvjpegJpegStreamDestroy(d->parsed);
    for (int i = 0; i < HW_STATES; i++)
        if (d->hws[i].state) nvjpegJpegStateDestroy(d->hws[i].state);
    if (d->sw_state) nvjpegJpegStateDestroy(d->sw_state);
    if (d->hw) nvjpegDestroy(d->hw);
    if (d->sw) nvjpegDestroy(d->sw);
    if (d->stream) cudaStreamDestroy(d->stream);
    free(d->hw_data);
    free(d->hw_len);
    free(d->hw_dst);
    free(d->hw_idx);
    free(d);
}

static swin_status create(swin_nvjpeg *d) {
    SWIN_CUDA_TRY(cudaSetDevice(d->dev));
    SWIN_CUDA_TRY(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    const unsigned flags = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION;
    /* the hardware engine where there is one; a GPU without it refuses this backend */
    if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, flags, &d->hw) != NVJPEG_STATUS_SUCCESS &&
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &d->hw) != NVJPEG_STATUS_SUCCESS)
        d->hw = NULL;
    if (d->hw) NV_TRY(nvjpegJpegStreamCreate(d->hw, &d->parsed));
    NV_TRY(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, flags, &d->sw));
    NV_TRY(nvjpegJpegStateCreate(d->sw, &d->sw_state));
    for (int i = 0; i < HW_STATES; i++) d->hws[i].size = -1;   /* states are made when needed */
    return SWIN_OK;
}

swin_status swin_nvjpeg_create(int device_index, swin_nvjpeg **out) {
    *out = NULL;
    swin_nvjpeg *d = calloc(1, sizeof *d);
    if (!d) return swin_fail(SWIN_ERR_MEMORY, "nvJPEG: out of memory");
    d->dev = device_index;
    swin_status st = create(d);
    if (st != SWIN_OK) { swin_nvjpeg_free(d); return st; }
    *out = d;
    return SWIN_OK;
}

/* 1 when the end-of-image marker follows the first scan: nvJPEG decodes a truncated file without
 * a word (filling in grey), libjpeg and Pillow refuse it. Markers are walked up to the first
 * SOS; inside entropy-coded data FF is always followed by 00 or a restart marker, so an FF D9
 * after it is the real end of the image (an EXIF thumbnail's FF D9 lies before the SOS). */
static int jpeg_complete(const uint8_t *p, size_t n) {
    size_t i = 2;
    while (i + 4 <= n) {
        if (p[i] != 0xFF) return 0;
        uint8_t m = p[i + 1];
        if (m == 0xFF) { i++; continue; }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) { i += 2; continue; }
        if (m == 0xD9) return 0;
        size_t seg = (size_t)p[i + 2] << 8 | p[i + 3];
        if (m == 0xDA) { /* any EOI after the scan header: searched from the end, where it is */
            for (size_t j = n - 1, start = i + 2 + seg; j > start; j--)
                if (p[j - 1] == 0xFF && p[j] == 0xD9) return 1;
            return 0;
        }
        i += 2 + seg;
    }
    return 0;
}

/* 1 when a 3-component JPEG is coded as YCbCr, as nvJPEG assumes; 0 for RGB-coded files, which
 * libjpeg recognises by an Adobe marker with transform 0 or by component ids 'R', 'G', 'B'
 * (nvJPEG would convert them as YCbCr: wrong colours, so they go to the CPU decoder). */
static int jpeg_is_ycc(const uint8_t *p, size_t n) {
    size_t i = 2;
    while (i + 4 <= n) {
        if (p[i] != 0xFF) return 1;
        uint8_t m = p[i + 1];
        if (m == 0xFF) { i++; continue; }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) { i += 2; continue; }
        size_t seg = (size_t)p[i + 2] << 8 | p[i + 3];
        if (m == 0xDA || m == 0xD9 || i + 2 + seg > n) return 1;
        const uint8_t *d = p + i + 4;
        if (m == 0xEE && seg >= 14 && !memcmp(d, "Adobe", 5) && d[11] == 0) return 0;
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && seg >= 17 && d[5] == 3 &&
            d[6] == 'R' && d[9] == 'G' && d[12] == 'B')
            return 0;
        i += 2 + seg;
    }
    return 1;
}



/* Room for n images in the host scratch. */
static swin_status grow_scratch(swin_nvjpeg *d, int n) {
    if (n <= d->cap_n) return SWIN_OK;
    free(d->hw_data);
    free(d->hw_len);
    free(d->hw_dst);
    free(d->hw_idx);
    d->hw_data = malloc((size_t)n * sizeof *d->hw_data);
    d->hw_len = malloc((size_t)n * sizeof *d->hw_len);
    d->hw_dst = malloc((size_t)n * sizeof *d->hw_dst);
    d->hw_idx = malloc((size_t)n * sizeof *d->hw_idx);
    d->cap_n = 0;
    if (!d->hw_data || !d->hw_len || !d->hw_dst || !d->hw_idx) return swin_fail(SWIN_ERR_MEMORY, "nvJPEG: out of memory");
    d->cap_n = n;
    return SWIN_OK;
}

/* The batched state set up for `size` images: a kept one, else the least recently used one
 * (or a new one) set up for it. NULL, with *st set, when nvJPEG refuses. */
static hw_state *state_for(swin_nvjpeg *d, int size, nvjpegStatus_t *st) {
    hw_state *h = &d->hws[0];
    *st = NVJPEG_STATUS_SUCCESS;
    for (int i = 0; i < HW_STATES; i++) {
        if (d->hws[i].size == size) { h = &d->hws[i]; goto found; }
        if (d->hws[i].used < h->used) h = &d->hws[i];
    }
    h->size = -1;
    if (!h->state && (*st = nvjpegJpegStateCreate(d->hw, &h->state)) != NVJPEG_STATUS_SUCCESS) {
        h->state = NULL;
        return NULL;
    }
    if ((*st = nvjpegDecodeBatchedInitialize(d->hw, h->state, size, 1, NVJPEG_OUTPUT_RGBI)) != NVJPEG_STATUS_SUCCESS)
        return NULL;
    h->size = size;
    d->stats.hw_setups++;
found:
    h->used = ++d->tick;
    return h;
}

/* An image's region of the buffer: its pixels, rounded to 256 bytes. nvJPEG writes nothing past an
 * image's last row, whole MCUs or not (test_gpu_pipeline poisons the buffer: on the H200 the writes
 * of every fixture, 4:2:0 and 4:2:2 files of odd sizes among them, end at the pixels' last byte). */
static size_t rgb_bytes(int w, int h) { return ((size_t)w * h * 3 + 255) & ~(size_t)255; }

static nvjpegImage_t dest(swin_nvjpeg_image *o) {
    nvjpegImage_t im;
    memset(&im, 0, sizeof im);
    im.channel[0] = (unsigned char *)o->rgb;
    im.pitch[0] = (size_t)o->width * 3;
    return im;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void swin_nvjpeg_get_stats(const swin_nvjpeg *d, swin_nvjpeg_stats *out) {
    if (d) *out = d->stats;
    else memset(out, 0, sizeof *out);
}

/* Sizes and checks: out[i].ok, width, height and (as an offset until the buffer is placed) rgb;
 * a file nvJPEG cannot parse fails alone. Returns the bytes the batch needs. */
static size_t check_images(swin_nvjpeg *d, const uint8_t *const *data, const size_t *len, const char *const *names,
                           int n, swin_nvjpeg_image *out) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        swin_nvjpeg_image *o = &out[i];
        memset(o, 0, sizeof *o);
        int nc = 0, w[NVJPEG_MAX_COMPONENT] = {0}, h[NVJPEG_MAX_COMPONENT] = {0};
        nvjpegChromaSubsampling_t ss;
        nvjpegStatus_t s = nvjpegGetImageInfo(d->sw, data[i], len[i], &nc, &ss, w, h);
        if (s != NVJPEG_STATUS_SUCCESS) {
            snprintf(o->err, sizeof o->err, "%s: nvJPEG cannot read this JPEG (%s)", names[i], swin_nvjpeg_status_str(s));
        } else if (w[0] < 1 || h[0] < 1 || w[0] > SWIN_IMAGE_MAX_SIDE || h[0] > SWIN_IMAGE_MAX_SIDE ||
                   (long long)w[0] * h[0] > SWIN_IMAGE_MAX_PIXELS) {
            snprintf(o->err, sizeof o->err, "%s: JPEG of %dx%d pixels is too large or empty", names[i], w[0], h[0]);
        } else if (nc == 3 && !jpeg_is_ycc(data[i], len[i])) {
            snprintf(o->err, sizeof o->err, "%s: RGB-coded JPEG (no YCbCr), which nvJPEG would convert as YCbCr", names[i]);
        } else if (!jpeg_complete(data[i], len[i])) {
            snprintf(o->err, sizeof o->err, "%s: truncated JPEG (no end-of-image marker after the scan)", names[i]);
        } else {
            o->ok = 1;
            o->width = w[0];
            o->height = h[0];
            o->rgb = (const uint8_t *)(uintptr_t)total;
            total += rgb_bytes(w[0], h[0]);
        }
    }
    return total;
}

/* the decoder itself failed: no image is decoded */
static swin_status fail_all(swin_nvjpeg_image *out, int n, swin_status st) {
    for (int i = 0; i < n; i++) out[i].ok = 0;
    return st;
}

/* waiting for the batch's GPU work failed (ce): no image is decoded */
static swin_status batch_failed(swin_nvjpeg_image *out, int n, cudaError_t ce) {
    return fail_all(out, n, swin_fail(SWIN_ERR_CUDA, "nvJPEG: decoding a batch of %d failed: %s", n,
                                      cudaGetErrorString(ce)));
}

swin_status swin_nvjpeg_decode_into(swin_nvjpeg *d, swin_nvjpeg_buffer *px, const uint8_t *const *data,
                                    const size_t *len, const char *const *names, int n, swin_nvjpeg_image *out) {
    if (!d || !px || !data || !len || !names || !out || n < 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_nvjpeg_decode: NULL argument");
    cudaError_t ce = cudaSetDevice(d->dev);
    if (ce != cudaSuccess)
        return fail_all(out, n, swin_fail(SWIN_ERR_CUDA, "nvJPEG: cudaSetDevice(%d) failed: %s", d->dev,
                                          cudaGetErrorString(ce)));
    double t0 = now_ms();
    size_t total = check_images(d, data, len, names, n, out);
    /* the images the JPEG engines take; the batch padded with its smallest one (see HW_GRANULE) */
    swin_status st = grow_scratch(d, (n + HW_GRANULE - 1) / HW_GRANULE * HW_GRANULE);
    if (st != SWIN_OK) return fail_all(out, n, st);
    int nhw = 0, small = -1;
    for (int i = 0; i < n; i++) {
        int unsupported = 1;
        if (out[i].ok && d->hw &&
            nvjpegJpegStreamParseHeader(d->hw, data[i], len[i], d->parsed) == NVJPEG_STATUS_SUCCESS &&
            nvjpegDecodeBatchedSupported(d->hw, d->parsed, &unsupported) == NVJPEG_STATUS_SUCCESS && !unsupported) {
            d->hw_idx[nhw++] = i;
            if (small < 0 || (long long)out[i].width * out[i].height < (long long)out[small].width * out[small].height)
                small = i;
        }
    }
    int size = (nhw + HW_GRANULE - 1) / HW_GRANULE * HW_GRANULE, npad = size - nhw;
    size_t pad_at = total;
    if (npad > 0) total += (size_t)npad * rgb_bytes(out[small].width, out[small].height);
    d->stats.last_bytes = total;
    if ((st = swin_nvjpeg_buffer_reserve(px, d->dev, total ? total : 256)) != SWIN_OK) return fail_all(out, n, st);
    for (int i = 0; i < n; i++)
        if (out[i].ok) out[i].rgb = px->dev + (uintptr_t)out[i].rgb;
    for (int j = 0; j < size; j++) {
        int i = j < nhw ? d->hw_idx[j] : small;
        d->hw_data[j] = data[i];
        d->hw_len[j] = len[i];
        memset(&d->hw_dst[j], 0, sizeof d->hw_dst[j]);
        d->hw_dst[j].channel[0] = j < nhw ? (unsigned char *)out[i].rgb
                                          : px->dev + pad_at + (size_t)(j - nhw) * rgb_bytes(out[i].width, out[i].height);
        d->hw_dst[j].pitch[0] = (size_t)out[i].width * 3;
    }
    /* the JPEG engines, batched; on failure every image is retried one by one below */
    double t1 = now_ms();
    int hw_done = 0;
    if (nhw > 0) {
        nvjpegStatus_t s;
        hw_state *h = state_for(d, size, &s);
        if (h) s = nvjpegDecodeBatched(d->hw, h->state, d->hw_data, d->hw_len, d->hw_dst, d->stream);
        if (s == NVJPEG_STATUS_SUCCESS) hw_done = 1;
        else if (h) h->size = -1;   /* set it up afresh next time */
    }
    double t2 = now_ms();
    int nsw = 0;
    for (int i = 0, j = 0; i < n; i++) {
        if (!out[i].ok) continue;
        if (hw_done && j < nhw && d->hw_idx[j] == i) { j++; continue; }
        nvjpegImage_t im = dest(&out[i]);
        /* The previous image's decode done first. nvjpegDecode decodes the entropy-coded data on
         * the host into the state's pinned buffer and queues its copy to the GPU on the stream,
         * behind the JPEG engines' batch; the next call refills that buffer. Once, with three
         * decoder threads sharing the engines (test_gpu_pipeline, 1 of its 8 runs on the H200 on
         * 2026-11-28), the first of two progressive files in a batch decoded to other pixels than
         * with one thread, the second file not: what a copy made after the buffer was refilled
         * would give (not proven: no other run showed it). */
        if (nsw > 0 && (ce = cudaStreamSynchronize(d->stream)) != cudaSuccess) return batch_failed(out, n, ce);
        nsw++;
        nvjpegStatus_t s = nvjpegDecode(d->sw, d->sw_state, data[i], len[i], NVJPEG_OUTPUT_RGBI, &im, d->stream);
        if (s != NVJPEG_STATUS_SUCCESS) {
            out[i].ok = 0;
            out[i].rgb = NULL;
            snprintf(out[i].err, sizeof out[i].err, "%s: nvJPEG cannot decode this JPEG (%s)", names[i],
                     swin_nvjpeg_status_str(s));
        }
    }
    double t3 = now_ms();
    ce = cudaStreamSynchronize(d->stream);
    double t4 = now_ms();
    d->stats.hw_images += hw_done ? nhw : 0;
    d->stats.hw_padding += hw_done ? npad : 0;
    d->stats.sw_images += nsw;
    d->stats.parse_ms += t1 - t0;
    d->stats.hw_ms += t2 - t1;
    d->stats.sw_ms += t3 - t2;
    d->stats.sync_ms += t4 - t3;
    if (ce != cudaSuccess)
        return batch_failed(out, n, ce);
    return SWIN_OK;
}

#endif /* SWIN_HAVE_NVJPEG */

/* the device pixels are also those of the exact GPU decode (jpeg_gpu.c), built without nvJPEG */
#ifdef SWIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "check.h"

void swin_nvjpeg_buffer_free(swin_nvjpeg_buffer *px) {
    if (!px) return;
    if (px->dev) {
        cudaSetDevice(px->device);
        cudaFree(px->dev);
    }
    memset(px, 0, sizeof *px);
}

swin_status swin_nvjpeg_buffer_reserve(swin_nvjpeg_buffer *px, int device, size_t bytes) {
    if (px->dev && px->device != device) swin_nvjpeg_buffer_free(px);   /* made on another GPU */
    if (bytes <= px->cap) return SWIN_OK;
    swin_nvjpeg_buffer_free(px);
    SWIN_CUDA_TRY(cudaSetDevice(device));
    size_t want = bytes + bytes / 8;
    SWIN_CUDA_TRY(cudaMalloc((void **)&px->dev, want));
    px->cap = want;
    px->device = device;
    return SWIN_OK;
}
#else
void swin_nvjpeg_buffer_free(swin_nvjpeg_buffer *px) { (void)px; }
swin_status swin_nvjpeg_buffer_reserve(swin_nvjpeg_buffer *px, int device, size_t bytes) {
    (void)px; (void)device; (void)bytes;
    return swin_fail(SWIN_ERR_UNSUPPORTED, "this swin was built without CUDA");
}
#endif
