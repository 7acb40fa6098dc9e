/* test_gpu_jpeg_exact.c - the GPU half of the split JPEG decode (kernels/jpeg_exact.cu) against
 * the CPU reference (src/image/jpeg_exact.c, itself bit-identical to libjpeg: test_jpeg_exact),
 * bit for bit, on every fixture JPEG the split covers, all in one batch (mixed sizes and
 * layouts), plus any JPEG files given after the source dir; the output is poisoned first and
 * guarded by a zone that must stay untouched; bad records are refused.
 *   build/tests/test_gpu_jpeg_exact <source dir> [more JPEG files...]; exits 77 without a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "jpeg.h"
#include "ops.h"
#include "swin.h"
#include "testutil.h"
#include "gpu_testutil.h"

#define MAX_FILES 256
#define GUARD 4096

typedef struct {
    char path[1400];
    swin_jpeg_coefs c;
    uint8_t *ref;   /* CPU reference pixels */
} item;

static item g_it[MAX_FILES];
static int g_n;

static void add(const char *path) {
    if (g_n == MAX_FILES) return;
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    if (!CHECK(data != NULL, "cannot read %s", path)) return;
    item *it = &g_it[g_n];
    snprintf(it->path, sizeof it->path, "%s", path);
    swin_status st = swin_jpeg_read_coefs(data, size, path, &it->c);
    free(data);
    if (st == SWIN_ERR_UNSUPPORTED || st == SWIN_ERR_IMAGE) return;   /* CMYK; files the decode refuses */
    if (!CHECK(st == SWIN_OK, "%s: %s", path, swin_last_error())) return;
    it->ref = malloc((size_t)it->c.rec.w * it->c.rec.h * 3);
    uint8_t *scratch = malloc(it->c.scratch_bytes);
    if (!CHECK(it->ref && scratch, "out of memory")) return;
    swin_jpeg_reconstruct(&it->c, it->ref, scratch);
    free(scratch);
    g_n++;
}

int main(int argc, char **argv) {
    if (!tg_have_gpu("test_gpu_jpeg_exact")) return TU_SKIP;
    const char *src = argc > 1 ? argv[1] : ".";
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    char *names[MAX_FILES];
    int nn = tu_list_files(dir, ".jpg", names, MAX_FILES);
    if (!CHECK(nn > 0, "no .jpg files in %s", dir)) return tu_finish("test_gpu_jpeg_exact");
    for (int i = 0; i < nn; i++) {
        add(names[i]);
        free(names[i]);
    }
    for (int i = 2; i < argc; i++) add(argv[i]);
    CHECK(g_n >= 15, "only %d JPEGs for the split decode (expected >= 15)", g_n);

    /* one batch: records, packed coefficients, planes and pixels one image after the other */
    swin_jx_image *rec = calloc((size_t)g_n + 1, sizeof *rec);
    size_t n_coef = 0, n_plane = 0, n_rgb = 0;
    for (int k = 0; k < g_n; k++) {
        const swin_jpeg_coefs *c = &g_it[k].c;
        rec[k] = swin_jpeg_record_at(&c->rec, (long long)n_coef, (long long)n_plane, (long long)n_rgb);
        n_coef += c->n_coef;
        n_plane += c->scratch_bytes;
        n_rgb += (size_t)c->rec.w * c->rec.h * 3;
    }
    int16_t *coef = malloc(n_coef * sizeof *coef);
    uint8_t *got = malloc(n_rgb + GUARD);
    for (int k = 0; k < g_n; k++) memcpy(coef + rec[k].coef[0], g_it[k].c.buf, g_it[k].c.n_coef * sizeof *coef);
    int16_t *d_coef = NULL;
    uint8_t *d_plane = NULL, *d_rgb = NULL;
    swin_jx_image *d_rec = NULL;
    int ok = cudaMalloc((void **)&d_coef, n_coef * sizeof *d_coef) == cudaSuccess &&
             cudaMalloc((void **)&d_plane, n_plane) == cudaSuccess && cudaMalloc((void **)&d_rgb, n_rgb + GUARD) == cudaSuccess &&
             cudaMalloc((void **)&d_rec, ((size_t)g_n + 1) * sizeof *d_rec) == cudaSuccess;
    if (!CHECK(ok && coef && got, "cannot allocate the batch")) return tu_finish("test_gpu_jpeg_exact");
    cudaMemcpy(d_coef, coef, n_coef * sizeof *coef, cudaMemcpyHostToDevice);
    cudaMemset(d_plane, 0x5A, n_plane);
    cudaMemset(d_rgb, 0xA5, n_rgb + GUARD);   /* poison, and the guard zone after the pixels */
    swin_status st = swin_jpeg_exact_cuda(d_rgb, n_rgb, d_coef, n_coef, d_plane, n_plane, rec, d_rec, g_n, 0);
    ok = CHECK(st == SWIN_OK, "swin_jpeg_exact_cuda: %s", swin_last_error()) &&
         CHECK(tg_sync_ok("swin_jpeg_exact_cuda"), "a CUDA error after the op");
    if (ok) {
        cudaMemcpy(got, d_rgb, n_rgb + GUARD, cudaMemcpyDeviceToHost);
        for (int k = 0; k < g_n; k++) {
            const item *it = &g_it[k];
            size_t n = (size_t)it->c.rec.w * it->c.rec.h * 3, diff = 0;
            const uint8_t *g = got + rec[k].rgb;
            for (size_t i = 0; i < n; i++) diff += g[i] != it->ref[i];
            printf("%s %-56s %dx%d %zu of %zu values differ from the CPU\n", diff ? "FAIL" : "ok  ", it->path, it->c.rec.w,
                   it->c.rec.h, diff, n);
            CHECK(diff == 0, "%s: the GPU differs from the CPU reference in %zu values", it->path, diff);
        }
        size_t bad = 0;
        for (size_t i = 0; i < GUARD; i++) bad += got[n_rgb + i] != 0xA5;
        CHECK(bad == 0, "%zu bytes of the guard zone after the pixels were written", bad);
    }

    /* bad records: refused before anything runs */
    swin_jx_image b = rec[0];
    b.rgb = (long long)n_rgb;   /* pixels past the end of dst */
    st = swin_jpeg_exact_cuda(d_rgb, n_rgb, d_coef, n_coef, d_plane, n_plane, &b, d_rec, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "pixels past dst: %s", swin_status_str(st));
    b = rec[0];
    b.coef[0] = (long long)n_coef;   /* coefficients past the end */
    st = swin_jpeg_exact_cuda(d_rgb, n_rgb, d_coef, n_coef, d_plane, n_plane, &b, d_rec, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "coefficients past the buffer: %s", swin_status_str(st));
    b = rec[0];
    b.fx[0] = 4;
    st = swin_jpeg_exact_cuda(d_rgb, n_rgb, d_coef, n_coef, d_plane, n_plane, &b, d_rec, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "a factor of 4: %s", swin_status_str(st));
    printf("bad records refused: %s\n", swin_last_error());

    cudaFree(d_coef), cudaFree(d_plane), cudaFree(d_rgb), cudaFree(d_rec);
    for (int k = 0; k < g_n; k++) free(g_it[k].ref), swin_jpeg_coefs_free(&g_it[k].c);
    free(rec), free(coef), free(got);
    return tu_finish("test_gpu_jpeg_exact");
}
