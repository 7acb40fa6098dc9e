/* test_gpu_jpeg_huff.c - JPEG entropy decoding on the GPU (kernels/jpeg_huff.cu: the parallel
 * decoder of src/image/jpeg_par.h) against its CPU emulation (jpeg_par.c) and the sequential
 * decoder (jpeg_huff.h, itself equal to libjpeg's coefficients: test_jpeg_huff), and the whole GPU
 * decode (then swin_jpeg_exact_cuda) against libjpeg's pixels.
 *   build/tests/test_gpu_jpeg_huff <source dir> [more JPEG files...] [--time N]
 * One batch: every fixture JPEG the decoder covers (its data unstuffs: no restart markers), the
 * files given, and damaged copies (bit flips, truncations, markers in the data). Per image the
 * GPU's status must be the CPU emulation's, accepted exactly when the sequential decoder accepts,
 * and where decoded, the coefficients equal; every image decoded gives libjpeg's pixels exactly.
 * The status array is poisoned and the coefficient buffer guarded; bad records are refused.
 * --time N: also prints how long the two kernels take on the given files repeated to N images
 * (a measurement printed for information, not checked). Exits 77 without a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "jpeg.h"
#include "jpeg_par.h"
#include "ops.h"
#include "swin.h"
#include "testutil.h"
#include "gpu_testutil.h"

#define MAX_IMAGES 8192
#define GUARD 4096

typedef struct {
    char name[1400];
    uint8_t *data;       /* the file */
    size_t size;
    uint8_t *u;          /* its unstuffed entropy-coded data */
    size_t ulen;
    swin_jpeg_scan *sc;
    int cpu_status;      /* the sequential decoder's */
    int emu_status;      /* the CPU emulation of the kernel's */
    int16_t *cpu_coef;
    int given;           /* an undamaged file (a fixture or given): must decode */
} item;

static item g_it[MAX_IMAGES];
static int g_n;

/* takes data; 1 when the decoder covers it */
static int add(const char *name, uint8_t *data, size_t size, int given) {
    if (g_n == MAX_IMAGES) return free(data), 0;
    item *it = &g_it[g_n];
    it->sc = malloc(sizeof *it->sc);
    it->u = malloc(size);
    if (!it->sc || !it->u || swin_jpeg_read_scan(data, size, name, it->sc) != SWIN_OK || it->sc->img.restart ||
        swin_jp_unstuff(data + it->sc->img.data, (size_t)it->sc->img.data_len, it->u, &it->ulen) != 0) {
        free(it->sc), free(it->u), free(data);
        it->sc = NULL, it->u = NULL;
        return 0;
    }
    snprintf(it->name, sizeof it->name, "%s", name);
    it->data = data, it->size = size, it->given = given;
    it->cpu_coef = calloc(it->sc->n_coef, sizeof *it->cpu_coef);
    int16_t *emu = calloc(it->sc->n_coef, sizeof *emu);
    if (!CHECK(it->cpu_coef && emu, "out of memory")) return 0;
    it->cpu_status = swin_jh_decode(&it->sc->img, data, it->sc->tables, it->cpu_coef);
    swin_jh_image m = it->sc->img;
    m.data = 0, m.data_len = (long long)it->ulen;
    int rounds, threads;
    int32_t min_bits;
    swin_jp_config(&threads, &min_bits);   /* the kernel's (SWIN_JPEG_GPU_PIECES) */
    it->emu_status = swin_jp_decode_host(&m, it->u, it->sc->tables, emu, threads, min_bits, &rounds);
    free(emu);
    g_n++;
    return 1;
}

static void add_path(const char *path) {
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    if (CHECK(data != NULL, "cannot read %s", path)) add(path, data, size, 1);
}

/* the batch's buffers for n images: item k % n_items as image k */
typedef struct {
    swin_jh_image *rec;
    swin_jx_image *px;
    swin_jh_table *tables;
    uint8_t *bytes;
    size_t n_bytes, n_coef, n_plane, n_rgb;
    int n_tables;
} batch;

static int make_batch(batch *b, int n, int n_items) {
    memset(b, 0, sizeof *b);
    for (int k = 0; k < n; k++) {
        const item *it = &g_it[k % n_items];
        b->n_bytes += it->ulen, b->n_tables += it->sc->n_tables, b->n_coef += it->sc->n_coef;
        b->n_plane += it->sc->scratch_bytes, b->n_rgb += (size_t)it->sc->img.rec.w * it->sc->img.rec.h * 3;
    }
    b->rec = malloc((size_t)n * sizeof *b->rec), b->px = malloc((size_t)n * sizeof *b->px);
    b->tables = malloc((size_t)b->n_tables * sizeof *b->tables), b->bytes = malloc(b->n_bytes);
    if (!b->rec || !b->px || !b->tables || !b->bytes) return 0;
    size_t at = 0, coef = 0, plane = 0, rgb = 0;
    int t = 0;
    for (int k = 0; k < n; k++) {
        const item *it = &g_it[k % n_items];
        const swin_jpeg_scan *sc = it->sc;
        memcpy(b->bytes + at, it->u, it->ulen);
        memcpy(b->tables + t, sc->tables, (size_t)sc->n_tables * sizeof *b->tables);
        swin_jh_image m = sc->img;
        m.data = (long long)at, m.data_len = (long long)it->ulen;
        m.table = t;
        m.rec = b->px[k] = swin_jpeg_record_at(&sc->img.rec, (long long)coef, (long long)plane, (long long)rgb);
        b->rec[k] = m;
        at += it->ulen, t += sc->n_tables, coef += sc->n_coef, plane += sc->scratch_bytes;
        rgb += (size_t)sc->img.rec.w * sc->img.rec.h * 3;
    }
    return 1;
}

static void free_batch(batch *b) { free(b->rec), free(b->px), free(b->tables), free(b->bytes); }

typedef struct {
    uint8_t *bytes, *plane, *rgb;
    int16_t *coef;
    swin_jh_table *tables;
    swin_jh_image *rec;
    swin_jx_image *px;
    int *status;
} dev;

static int dev_alloc(dev *d, const batch *b, int n) {
    memset(d, 0, sizeof *d);
    return cudaMalloc((void **)&d->bytes, b->n_bytes) == cudaSuccess &&
           cudaMalloc((void **)&d->coef, b->n_coef * 2 + GUARD) == cudaSuccess &&
           cudaMalloc((void **)&d->plane, b->n_plane) == cudaSuccess &&
           cudaMalloc((void **)&d->rgb, b->n_rgb) == cudaSuccess &&
           cudaMalloc((void **)&d->tables, (size_t)b->n_tables * sizeof *d->tables) == cudaSuccess &&
           cudaMalloc((void **)&d->rec, (size_t)n * sizeof *d->rec) == cudaSuccess &&
           cudaMalloc((void **)&d->px, (size_t)n * sizeof *d->px) == cudaSuccess &&
           cudaMalloc((void **)&d->status, (size_t)n * sizeof *d->status) == cudaSuccess &&
           cudaMemcpy(d->bytes, b->bytes, b->n_bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemcpy(d->tables, b->tables, (size_t)b->n_tables * sizeof *d->tables, cudaMemcpyHostToDevice) == cudaSuccess;
}

static void dev_free(dev *d) {
    cudaFree(d->bytes), cudaFree(d->coef), cudaFree(d->plane), cudaFree(d->rgb), cudaFree(d->tables);
    cudaFree(d->rec), cudaFree(d->px), cudaFree(d->status);
}

static swin_status run(dev *d, const batch *b, int n) {
    swin_status st = swin_jpeg_huff_cuda(d->coef, b->n_coef, d->bytes, b->n_bytes, d->tables, b->n_tables, b->rec,
                                         d->rec, d->status, n, 0);
    if (st != SWIN_OK) return st;
    return swin_jpeg_exact_cuda(d->rgb, b->n_rgb, d->coef, b->n_coef, d->plane, b->n_plane, b->px, d->px, n, 0);
}

static void check_batch(void) {
    batch b;
    dev d;
    if (!CHECK(make_batch(&b, g_n, g_n) && dev_alloc(&d, &b, g_n), "cannot set up the batch")) return;
    cudaMemset(d.status, 0x7F, (size_t)g_n * sizeof *d.status);   /* poison */
    cudaMemset(d.coef, 0xA5, b.n_coef * 2 + GUARD);                /* the op zeroes [0, n_coef) only */
    swin_status st = run(&d, &b, g_n);
    int ok = CHECK(st == SWIN_OK, "the ops: %s", swin_last_error()) && CHECK(tg_sync_ok("the ops"), "a CUDA error");
    int16_t *coef = malloc(b.n_coef * 2 + GUARD);
    uint8_t *rgb = malloc(b.n_rgb);
    int *status = malloc((size_t)g_n * sizeof *status);
    if (!ok || !CHECK(coef && rgb && status, "out of memory")) goto out;
    cudaMemcpy(coef, d.coef, b.n_coef * 2 + GUARD, cudaMemcpyDeviceToHost);
    cudaMemcpy(rgb, d.rgb, b.n_rgb, cudaMemcpyDeviceToHost);
    cudaMemcpy(status, d.status, (size_t)g_n * sizeof *status, cudaMemcpyDeviceToHost);
    int decoded = 0, damaged_ok = 0, damaged_left = 0;
    for (int k = 0; k < g_n; k++) {
        const item *it = &g_it[k];
        const swin_jh_image *m = &b.rec[k];
        size_t nc = it->sc->n_coef, cdiff = 0, pdiff = 0;
        if (status[k] == SWIN_JH_OK && it->cpu_status == SWIN_JH_OK) {
            for (size_t i = 0; i < nc; i++) cdiff += coef[m->rec.coef[0] + (long long)i] != it->cpu_coef[i];
            swin_image ref;
            int custom = 0;
            if (CHECK(swin_jpeg_decode(it->data, it->size, it->name, NULL, NULL, &ref, &custom) == SWIN_OK,
                      "%s: decoded on the GPU, refused by libjpeg: %s", it->name, swin_last_error())) {
                const size_t np = (size_t)ref.width * ref.height * 3;
                for (size_t i = 0; i < np; i++) pdiff += rgb[b.px[k].rgb + (long long)i] != ref.rgb[i];
                swin_image_free(&ref);
            }
            decoded++;
        }
        const int agree = status[k] == it->emu_status && (status[k] == SWIN_JH_OK) == (it->cpu_status == SWIN_JH_OK);
        if (it->given)
            printf("%s %-56s status %d (CPU emulation %d, sequential %d), %zu coefficients and %zu pixel values "
                   "differ\n", agree && !cdiff && !pdiff ? "ok  " : "FAIL", it->name, status[k], it->emu_status,
                   it->cpu_status, cdiff, pdiff);
        else if (status[k] == SWIN_JH_OK) damaged_ok++;
        else damaged_left++;
        CHECK(agree, "%s: GPU status %d, CPU emulation %d, sequential %d", it->name, status[k], it->emu_status,
              it->cpu_status);
        CHECK(cdiff == 0 && pdiff == 0, "%s: %zu coefficients, %zu pixel values differ", it->name, cdiff, pdiff);
        CHECK(!it->given || status[k] == SWIN_JH_OK || strstr(it->name, "junk_before_eoi"),
              "%s: an undamaged file not decoded (%d)", it->name, status[k]);   /* junk: left to libjpeg */
    }
    size_t bad = 0;
    for (size_t i = 0; i < GUARD / 2; i++) bad += (uint16_t)coef[b.n_coef + i] != 0xA5A5;
    CHECK(bad == 0, "%zu coefficients of the guard zone were written", bad);
    printf("ok   %d images decoded on the GPU; damaged copies: %d decoded (libjpeg's pixels), %d left to libjpeg\n",
           decoded, damaged_ok, damaged_left);
    CHECK(decoded >= 12 && damaged_left > 0, "the batch should hold decodable and refused images");

    /* bad records: refused before anything runs */
    swin_jh_image r = b.rec[0];
    r.data_len = (long long)b.n_bytes - r.data + 1;   /* data past the end */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "data past the buffer: %s", swin_status_str(st));
    r = b.rec[0];
    r.rec.coef[0] = (long long)b.n_coef - 1;   /* coefficients past the end */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "coefficients past the buffer: %s", swin_status_str(st));
    r = b.rec[0];
    r.restart = 4;   /* restart markers: not the parallel decoder's */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "a restart interval: %s", swin_status_str(st));
    r = b.rec[0];
    r.table = b.n_tables;   /* tables past the end */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "tables past the array: %s", swin_status_str(st));
    printf("bad records refused: %s\n", swin_last_error());
out:
    free(coef), free(rgb), free(status);
    dev_free(&d);
    free_batch(&b);
}

/* --time N: the given files (item 0 .. n_given) repeated to N images, both kernels timed */
static void time_batch(int n_given, int n) {
    batch b;
    dev d;
    if (make_batch(&b, n, n_given) && dev_alloc(&d, &b, n)) {
        cudaEvent_t e0, e1, e2;
        cudaEventCreate(&e0), cudaEventCreate(&e1), cudaEventCreate(&e2);
        float best_h = 1e30f, best_x = 1e30f;
        for (int rep = 0; rep < 5; rep++) {
            cudaEventRecord(e0, 0);
            swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, b.rec, d.rec, d.status, n, 0);
            cudaEventRecord(e1, 0);
            swin_jpeg_exact_cuda(d.rgb, b.n_rgb, d.coef, b.n_coef, d.plane, b.n_plane, b.px, d.px, n, 0);
            cudaEventRecord(e2, 0);
            cudaEventSynchronize(e2);
            float h, x;
            cudaEventElapsedTime(&h, e0, e1), cudaEventElapsedTime(&x, e1, e2);
            if (h < best_h) best_h = h;
            if (x < best_x) best_x = x;
        }
        printf("time (not a check): %d images (%d files repeated): entropy decoding %.2f ms (%.0f img/s), "
               "IDCT + upsampling + colour %.2f ms (%.0f img/s)\n", n, n_given, best_h, n / best_h * 1e3, best_x,
               n / best_x * 1e3);
        dev_free(&d);
    }
    free_batch(&b);
}

int main(int argc, char **argv) {
    if (!tg_have_gpu("test_gpu_jpeg_huff")) return TU_SKIP;
    const char *src = argc > 1 ? argv[1] : ".";
    int time_n = 0;
    char dir[1024], path[1400];
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    char *names[256];
    int nn = tu_list_files(dir, ".jpg", names, 256);
    if (!CHECK(nn > 0, "no .jpg files in %s", dir)) return tu_finish("test_gpu_jpeg_huff");
    for (int i = 2; i < argc; i++) {   /* the given files first: --time repeats them */
        if (!strcmp(argv[i], "--time") && i + 1 < argc) time_n = atoi(argv[++i]);
        else add_path(argv[i]);
    }
    const int n_given = g_n;
    for (int i = 0; i < nn; i++) add_path(names[i]);
    /* damaged copies of a fixture */
    snprintf(path, sizeof path, "%s/baseline_420_160x120.jpg", dir);
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    swin_jpeg_scan *sc = malloc(sizeof *sc);
    if (CHECK(data && sc && swin_jpeg_read_scan(data, size, path, sc) == SWIN_OK, "cannot read %s", path)) {
        const size_t d0 = (size_t)sc->img.data, dn = size - d0 - 2;
        for (int t = 0; t < 120; t++) {
            uint8_t *bad = malloc(size);
            if (!bad) break;
            memcpy(bad, data, size);
            uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 7);
            r ^= r >> 29, r *= 0xBF58476D1CE4E5B9ull;
            size_t len = size;
            if (t % 4 == 3) {   /* cut short, then the end-of-image marker */
                len = d0 + r % dn;
                bad[len] = 0xFF, bad[len + 1] = 0xD9;
                len += 2;
            }
            else if (t % 4 == 2) bad[d0 + r % (dn - 1)] = 0xFF, bad[d0 + r % (dn - 1) + 1] = (uint8_t)(0xD0 + t % 16);
            else bad[d0 + r % dn] ^= (uint8_t)(1u << (r >> 61));
            snprintf(path, sizeof path, "damaged_%d.jpg", t);
            add(path, bad, len, 0);
        }
    }
    free(sc), free(data);
    check_batch();
    if (time_n > 0 && n_given > 0) time_batch(n_given, time_n);
    for (int k = 0; k < g_n; k++) free(g_it[k].data), free(g_it[k].u), free(g_it[k].sc), free(g_it[k].cpu_coef);
    for (int i = 0; i < nn; i++) free(names[i]);
    return tu_finish("test_gpu_jpeg_huff");
}
