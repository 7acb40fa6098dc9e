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
swin_status swin_nvjpeg_decode(swin_nvjpeg *d, int buffer, const uint8_t *const *data, const size_t *len,
                               const char *const *names, int n, swin_nvjpeg_image *out) {
    (void)d; (void)buffer; (void)data; (void)len; (void)names; (void)n; (void)out;
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

#include "check.h"

struct swin_nvjpeg {
    int dev;
    cudaStream_t stream;
    nvjpegHandle_t hw, sw;              /* hw NULL when the GPU has no JPEG engine */
    nvjpegJpegState_t hw_state, sw_state;
    nvjpegJpegStream_t parsed;          /* for the hardware support check */
    int hw_batch;                       /* batch size the hardware state was set up for */
    uint8_t *buf[2];                    /* device pixels of the last batch into each buffer */
    size_t cap[2];
    swin_nvjpeg_stats stats;
    /* host scratch, [cap_n] */
    const unsigned char **hw_data;
    size_t *hw_len;
    nvjpegImage_t *hw_dst;
    int *hw_idx, cap_n;
};

static const char *nv_str(nvjpegStatus_t s) {
    switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialised";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocation failed";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
    }
    return "unknown status";
}

#define NV_TRY(call)                                                                              \
    do {                                                                                          \
        nvjpegStatus_t nv_st_ = (call);                                                           \
        if (nv_st_ != NVJPEG_STATUS_SUCCESS)                                                      \
            return swin_fail(SWIN_ERR_CUDA, "nvJPEG: %s failed: %s", #call, nv_str(nv_st_));      \
    } while (0)

const char *swin_nvjpeg_backend(const swin_nvjpeg *d) { return d && d->hw ? "hardware" : "default"; }

void swin_nvjpeg_free(swin_nvjpeg *d) {
    if (!d) return;
    cudaSetDevice(d->dev);
    if (d->parsed) nvjpegJpegStreamDestroy(d->parsed);
    if (d->hw_state) nvjpegJpegStateDestroy(d->hw_state);
    if (d->sw_state) nvjpegJpegStateDestroy(d->sw_state);
    if (d->hw) nvjpegDestroy(d->hw);
    if (d->sw) nvjpegDestroy(d->sw);
    for (int b = 0; b < 2; b++)
        if (d->buf[b]) cudaFree(d->buf[b]);
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
    if (d->hw) {
        NV_TRY(nvjpegJpegStateCreate(d->hw, &d->hw_state));
        NV_TRY(nvjpegJpegStreamCreate(d->hw, &d->parsed));
    }
    NV_TRY(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, flags, &d->sw));
    NV_TRY(nvjpegJpegStateCreate(d->sw, &d->sw_state));
    d->hw_batch = -1;
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

static swin_status grow(swin_nvjpeg *d, int b, size_t bytes, int n) {
    if (bytes > d->cap[b]) {
        if (d->buf[b]) cudaFree(d->buf[b]);
        d->buf[b] = NULL;
        d->cap[b] = 0;
        SWIN_CUDA_TRY(cudaMalloc((void **)&d->buf[b], bytes));
        d->cap[b] = bytes;
    }
    if (n > d->cap_n) {
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
    }
    return SWIN_OK;
}

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

swin_status swin_nvjpeg_decode(swin_nvjpeg *d, int buffer, const uint8_t *const *data, const size_t *len,
                               const char *const *names, int n, swin_nvjpeg_image *out) {
    if (!d || !data || !len || !names || !out || n < 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_nvjpeg_decode: NULL argument");
    if (buffer != 0 && buffer != 1) return swin_fail(SWIN_ERR_ARGUMENT, "swin_nvjpeg_decode: buffer %d", buffer);
    SWIN_CUDA_TRY(cudaSetDevice(d->dev));
    double t0 = now_ms();
    /* sizes and places first: a file nvJPEG cannot parse fails alone */
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        swin_nvjpeg_image *o = &out[i];
        memset(o, 0, sizeof *o);
        int nc = 0, w[NVJPEG_MAX_COMPONENT] = {0}, h[NVJPEG_MAX_COMPONENT] = {0};
        nvjpegChromaSubsampling_t ss;
        nvjpegStatus_t s = nvjpegGetImageInfo(d->sw, data[i], len[i], &nc, &ss, w, h);
        if (s != NVJPEG_STATUS_SUCCESS) {
            snprintf(o->err, sizeof o->err, "%s: nvJPEG cannot read this JPEG (%s)", names[i], nv_str(s));
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
            o->rgb = (const uint8_t *)(uintptr_t)total; /* an offset until the buffer is placed */
            total += ((size_t)w[0] * h[0] * 3 + 255) & ~(size_t)255;
        }
    }
    SWIN_TRY(grow(d, buffer, total ? total : 256, n));
    int nhw = 0;
    for (int i = 0; i < n; i++) {
        if (!out[i].ok) continue;
        out[i].rgb = d->buf[buffer] + (uintptr_t)out[i].rgb;
        int unsupported = 1;
        if (d->hw && nvjpegJpegStreamParseHeader(d->hw, data[i], len[i], d->parsed) == NVJPEG_STATUS_SUCCESS &&
            nvjpegDecodeBatchedSupported(d->hw, d->parsed, &unsupported) == NVJPEG_STATUS_SUCCESS && !unsupported) {
            d->hw_data[nhw] = data[i];
            d->hw_len[nhw] = len[i];
            d->hw_dst[nhw] = dest(&out[i]);
            d->hw_idx[nhw++] = i;
        }
    }
    /* the JPEG engines, batched; on failure every image is retried one by one below */
    double t1 = now_ms();
    int hw_done = 0;
    if (nhw > 0) {
        nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
        if (d->hw_batch != nhw) s = nvjpegDecodeBatchedInitialize(d->hw, d->hw_state, nhw, 1, NVJPEG_OUTPUT_RGBI);
        d->hw_batch = s == NVJPEG_STATUS_SUCCESS ? nhw : -1;
        if (s == NVJPEG_STATUS_SUCCESS)
            s = nvjpegDecodeBatched(d->hw, d->hw_state, d->hw_data, d->hw_len, d->hw_dst, d->stream);
        if (s == NVJPEG_STATUS_SUCCESS) hw_done = 1;
        else d->hw_batch = -1;
    }
    double t2 = now_ms();
    int nsw = 0;
    for (int i = 0, j = 0; i < n; i++) {
        if (!out[i].ok) continue;
        if (hw_done && j < nhw && d->hw_idx[j] == i) { j++; continue; }
        nvjpegImage_t im = dest(&out[i]);
        nsw++;
        nvjpegStatus_t s = nvjpegDecode(d->sw, d->sw_state, data[i], len[i], NVJPEG_OUTPUT_RGBI, &im, d->stream);
        if (s != NVJPEG_STATUS_SUCCESS) {
            out[i].ok = 0;
            out[i].rgb = NULL;
            snprintf(out[i].err, sizeof out[i].err, "%s: nvJPEG cannot decode this JPEG (%s)", names[i], nv_str(s));
        }
    }
    double t3 = now_ms();
    cudaError_t ce = cudaStreamSynchronize(d->stream);
    double t4 = now_ms();
    d->stats.hw_images += hw_done ? nhw : 0;
    d->stats.sw_images += nsw;
    d->stats.parse_ms += t1 - t0;
    d->stats.hw_ms += t2 - t1;
    d->stats.sw_ms += t3 - t2;
    d->stats.sync_ms += t4 - t3;
    if (ce != cudaSuccess) {
        for (int i = 0; i < n; i++) out[i].ok = 0;
        return swin_fail(SWIN_ERR_CUDA, "nvJPEG: decoding a batch of %d failed: %s", n, cudaGetErrorString(ce));
    }
    return SWIN_OK;
}

#endif /* SWIN_HAVE_NVJPEG */
