/* test_gpu_jpeg_huff.c - JPEG entropy decoding on the GPU (kernels/jpeg_huff.cu: the parallel
 * decoder of src/image/jpeg_par.h) against its CPU emulation (jpeg_par.c) and the sequential
 * decoder (jpeg_huff.h, itself equal to libjpeg's coefficients: test_jpeg_huff), and the whole GPU
 * decode (then swin_jpeg_exact_cuda) against libjpeg's pixels.
 *   build/tests/test_gpu_jpeg_huff <source dir> [more JPEG files...] [--time N]
 * One batch: every fixture JPEG the decoder covers (its data stages: restart markers in sequence,
 * nothing but the end-of-image marker after it), the files given, and damaged copies of a
 * fixture without and one with restart markers (bit flips, truncations, markers in the data). Per
 * image the GPU's status must be the CPU emulation's, accepted exactly when the sequential decoder
 * accepts (or undecided, SWIN_JP_NO_SYNC, which only a damaged copy may be), and where decoded,
 * the coefficients equal; every image decoded gives libjpeg's pixels exactly.
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
#include "jpeg_gpu.h"
#include "jpeg_par.h"
#include "ops.h"
#include "swin.h"
#include "testutil.h"
#include "gpu_testutil.h"

#define MAX_IMAGES 8192
#define GUARD 4096
#define CHECK_SPLIT 1024   /* the check's parts: about 1024 bits (jpeg_gpu.c's are larger) */

typedef struct {
    char name[1400];
    uint8_t *data;       /* the file */
    size_t size;
    uint8_t *u;          /* its entropy-coded data staged (swin_jp_stage) */
    size_t ulen;         /* ... its bytes (swin_jp_staged_len) */
    swin_jh_image m;     /* its scan's record over u */
    swin_jpeg_scan *sc;
    int cpu_status;      /* the sequential decoder's */
    int emu_status;      /* the CPU emulation of the kernel's */
    int16_t *cpu_coef;
    int given;           /* an undamaged file (a fixture or given): must decode */
} item;

static item g_it[MAX_IMAGES];
static int g_n, g_parts;

/* takes data; 1 when the decoder covers it */
static int add(const char *name, uint8_t *data, size_t size, int given) {
    if (g_n == MAX_IMAGES) return free(data), 0;
    item *it = &g_it[g_n];
    it->sc = malloc(sizeof *it->sc);
    if (!it->sc || swin_jpeg_read_scan(data, size, name, it->sc) != SWIN_OK ||
        !(it->u = malloc(swin_jp_stage_cap(&it->sc->img))) || (it->m = it->sc->img, swin_jp_stage(data, &it->m, it->u)) != 0) {
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
    it->ulen = swin_jp_staged_len(&it->m);
    int threads, np;
    int32_t min_bits;
    swin_jp_config(&threads, &min_bits);   /* the kernel's (SWIN_JPEG_GPU_PIECES) */
    /* split as the batch is, the first failing part's status, as the batch's check takes it */
    it->emu_status = swin_jp_decode_split_host(&it->m, it->u, it->ulen, it->sc->tables, emu, threads, min_bits,
                                               CHECK_SPLIT, &np);
    g_parts += np > 1;
    free(emu);
    g_n++;
    return 1;
}

static void add_path(const char *path) {
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    if (CHECK(data != NULL, "cannot read %s", path)) add(path, data, size, 1);
}

/* the batch's buffers for n images: item k % n_items as image k, its records (one, or its parts
 * of about split bits: swin_jp_split) first[k] .. first[k + 1] - 1 of rec */
typedef struct {
    swin_jh_image *rec;
    int *first;
    swin_jx_image *px;
    swin_jh_table *tables;
    uint8_t *bytes;
    size_t n_bytes, n_coef, n_plane, n_rgb;
    int n_tables, n_rec;
} batch;

static int make_batch(batch *b, int n, int n_items, int32_t split) {
    memset(b, 0, sizeof *b);
    for (int k = 0; k < n; k++) {
        const item *it = &g_it[k % n_items];
        b->n_bytes += (it->ulen + 3) & ~(size_t)3, b->n_tables += it->sc->n_tables, b->n_coef += it->sc->n_coef;
        b->n_plane += it->sc->scratch_bytes, b->n_rgb += (size_t)it->sc->img.rec.w * it->sc->img.rec.h * 3;
        b->n_rec += swin_jp_parts(&it->m, split);
    }
    b->rec = malloc((size_t)b->n_rec * sizeof *b->rec), b->px = malloc((size_t)n * sizeof *b->px);
    b->first = malloc((size_t)(n + 1) * sizeof *b->first);
    b->tables = malloc((size_t)b->n_tables * sizeof *b->tables), b->bytes = malloc(b->n_bytes);
    if (!b->rec || !b->px || !b->first || !b->tables || !b->bytes) return 0;
    size_t at = 0, coef = 0, plane = 0, rgb = 0;
    int t = 0, r = 0;
    for (int k = 0; k < n; k++) {
        const item *it = &g_it[k % n_items];
        const swin_jpeg_scan *sc = it->sc;
        memcpy(b->bytes + at, it->u, it->ulen);
        memcpy(b->tables + t, sc->tables, (size_t)sc->n_tables * sizeof *b->tables);
        swin_jh_image m = it->m;   /* staged: data 0, its interval starts at rst */
        m.data = (long long)at;
        m.rst = m.n_rst ? (long long)at + it->m.rst : 0;
        m.table = t;
        m.rec = b->px[k] = swin_jpeg_record_at(&sc->img.rec, (long long)coef, (long long)plane, (long long)rgb);
        b->first[k] = r;
        r += swin_jp_split(&m, b->bytes, split, b->rec + r);
        at += (it->ulen + 3) & ~(size_t)3, t += sc->n_tables, coef += sc->n_coef, plane += sc->scratch_bytes;
        rgb += (size_t)sc->img.rec.w * sc->img.rec.h * 3;
    }
    b->first[n] = b->n_rec = r;
    return 1;
}

static void free_batch(batch *b) { free(b->rec), free(b->first), free(b->px), free(b->tables), free(b->bytes); }

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
           cudaMalloc((void **)&d->rec, (size_t)b->n_rec * sizeof *d->rec) == cudaSuccess &&
           cudaMalloc((void **)&d->px, (size_t)n * sizeof *d->px) == cudaSuccess &&
           cudaMalloc((void **)&d->status, (size_t)b->n_rec * sizeof *d->status) == cudaSuccess &&
           cudaMemcpy(d->bytes, b->bytes, b->n_bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemcpy(d->tables, b->tables, (size_t)b->n_tables * sizeof *d->tables, cudaMemcpyHostToDevice) == cudaSuccess;
}

static void dev_free(dev *d) {
    cudaFree(d->bytes), cudaFree(d->coef), cudaFree(d->plane), cudaFree(d->rgb), cudaFree(d->tables);
    cudaFree(d->rec), cudaFree(d->px), cudaFree(d->status);
}

static swin_status run(dev *d, const batch *b, int n) {
    swin_status st = swin_jpeg_huff_cuda(d->coef, b->n_coef, d->bytes, b->n_bytes, d->tables, b->n_tables, b->rec,
                                         d->rec, d->status, b->n_rec, 0);
    if (st != SWIN_OK) return st;
    return swin_jpeg_exact_cuda(d->rgb, b->n_rgb, d->coef, b->n_coef, d->plane, b->n_plane, b->px, d->px, n, 0);
}

static void check_batch(void) {
    batch b;
    dev d;
    if (!CHECK(make_batch(&b, g_n, g_n, CHECK_SPLIT) && dev_alloc(&d, &b, g_n), "cannot set up the batch")) return;
    cudaMemset(d.status, 0x7F, (size_t)b.n_rec * sizeof *d.status);   /* poison */
    cudaMemset(d.coef, 0xA5, b.n_coef * 2 + GUARD);                /* the op zeroes [0, n_coef) only */
    swin_status st = run(&d, &b, g_n);
    int ok = CHECK(st == SWIN_OK, "the ops: %s", swin_last_error()) && CHECK(tg_sync_ok("the ops"), "a CUDA error");
    int16_t *coef = malloc(b.n_coef * 2 + GUARD);
    uint8_t *rgb = malloc(b.n_rgb);
    int *status = malloc((size_t)g_n * sizeof *status), *rs = malloc((size_t)b.n_rec * sizeof *rs);
    if (!ok || !CHECK(coef && rgb && status && rs, "out of memory")) goto out;
    cudaMemcpy(coef, d.coef, b.n_coef * 2 + GUARD, cudaMemcpyDeviceToHost);
    cudaMemcpy(rgb, d.rgb, b.n_rgb, cudaMemcpyDeviceToHost);
    cudaMemcpy(rs, d.status, (size_t)b.n_rec * sizeof *rs, cudaMemcpyDeviceToHost);
    for (int k = 0; k < g_n; k++) {   /* an image's status: its first failing part's */
        status[k] = SWIN_JH_OK;
        for (int r = b.first[k]; r < b.first[k + 1] && !status[k]; r++) status[k] = rs[r];
    }
    printf("ok   %d images in %d records (%d images split into parts of about %d bits)\n", g_n, b.n_rec, g_parts,
           CHECK_SPLIT);
    CHECK(g_parts >= 20 && b.n_rec >= g_n + 40, "only %d images split, %d records", g_parts, b.n_rec);
    int decoded = 0, damaged_ok = 0, damaged_left = 0;
    for (int k = 0; k < g_n; k++) {
        const item *it = &g_it[k];
        const swin_jh_image *m = &b.rec[b.first[k]];
        size_t nc = it->sc->n_coef, cdiff = 0, pdiff = 0;
        if (status[k] == SWIN_JH_OK && it->cpu_status == SWIN_JH_OK) {
            for (size_t i = 0; i < nc; i++) cdiff += coef[m->rec.coef[0] + (long long)i] != it->cpu_coef[i];
            swin_image ref;
            int custom = 0;
            if (CHECK(swin_jpeg_decode(it->data, it->size, it->name, NULL, NULL, NULL, &ref, &custom) == SWIN_OK,
                      "%s: decoded on the GPU, refused by libjpeg: %s", it->name, swin_last_error())) {
                const size_t np = (size_t)ref.width * ref.height * 3;
                for (size_t i = 0; i < np; i++) pdiff += rgb[b.px[k].rgb + (long long)i] != ref.rgb[i];
                swin_image_free(&ref);
            }
            decoded++;
        }
        const int agree = status[k] == it->emu_status &&
                          (status[k] == SWIN_JP_NO_SYNC || (status[k] == SWIN_JH_OK) == (it->cpu_status == SWIN_JH_OK));
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
    r.restart = 0, r.n_rst = 1, r.rst = 0;   /* interval starts without a restart interval */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "interval starts without restarts: %s", swin_status_str(st));
    r = b.rec[0];
    r.mcux = 2, r.mcuy = 1, r.restart = 1, r.n_rst = 1;
    r.rst = ((long long)b.n_bytes + 4) & ~3ll;   /* its interval start past the buffer */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "interval starts past the buffer: %s", swin_status_str(st));
    r.rst = 2;   /* not 4-byte aligned */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "misaligned interval starts: %s", swin_status_str(st));
    r.rst = 0, r.n_rst = 0;   /* fewer starts than the intervals need */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "missing interval starts: %s", swin_status_str(st));
    r = b.rec[0];
    r.table = b.n_tables;   /* tables past the end */
    st = swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, &r, d.rec, d.status, 1, 0);
    CHECK(st == SWIN_ERR_ARGUMENT, "tables past the array: %s", swin_status_str(st));
    printf("bad records refused: %s\n", swin_last_error());
out:
    free(coef), free(rgb), free(status), free(rs);
    dev_free(&d);
    free_batch(&b);
}

/* --time N: the given files (item 0 .. n_given) repeated to N images, both kernels timed */
static void time_batch(int n_given, int n) {
    batch b;
    dev d;
    int32_t split = 0;
    if (swin_jpeg_gpu_split_bits(&split) == SWIN_OK && make_batch(&b, n, n_given, split) && dev_alloc(&d, &b, n)) {
        cudaEvent_t e0, e1, e2;
        cudaEventCreate(&e0), cudaEventCreate(&e1), cudaEventCreate(&e2);
        float best_h = 1e30f, best_x = 1e30f;
        for (int rep = 0; rep < 5; rep++) {
            cudaEventRecord(e0, 0);
            swin_jpeg_huff_cuda(d.coef, b.n_coef, d.bytes, b.n_bytes, d.tables, b.n_tables, b.rec, d.rec, d.status, b.n_rec, 0);
            cudaEventRecord(e1, 0);
            swin_jpeg_exact_cuda(d.rgb, b.n_rgb, d.coef, b.n_coef, d.plane, b.n_plane, b.px, d.px, n, 0);
            cudaEventRecord(e2, 0);
            cudaEventSynchronize(e2);
            float h, x;
            cudaEventElapsedTime(&h, e0, e1), cudaEventElapsedTime(&x, e1, e2);
            if (h < best_h) best_h = h;
            if (x < best_x) best_x = x;
        }
        printf("time (not a check): %d images (%d files repeated; %d records, parts of about %d bits): entropy "
               "decoding %.2f ms (%.0f img/s), IDCT + upsampling + colour %.2f ms (%.0f img/s)\n", n, n_given, b.n_rec,
               (int)split, best_h, n / best_h * 1e3, best_x, n / best_x * 1e3);
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
    /* damaged copies of two fixtures, the second with restart markers */
    const char *victims[2] = {"baseline_420_160x120.jpg", "restart_blocks_420_120x80.jpg"};
    for (int v = 0; v < 2; v++) {
        snprintf(path, sizeof path, "%s/%s", dir, victims[v]);
        size_t size = 0;
        uint8_t *data = tu_read_file(path, &size);
        swin_jpeg_scan *sc = malloc(sizeof *sc);
        if (CHECK(data && sc && swin_jpeg_read_scan(data, size, path, sc) == SWIN_OK, "cannot read %s", path)) {
            const size_t d0 = (size_t)sc->img.data, dn = size - d0 - 2;
            for (int t = 0; t < 120; t++) {
                uint8_t *bad = malloc(size);
                if (!bad) break;
                memcpy(bad, data, size);
                uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 7 + 1000 * v);
                r ^= r >> 29, r *= 0xBF58476D1CE4E5B9ull;
                size_t len = size;
                if (t % 4 == 3) {   /* cut short, then the end-of-image marker */
                    len = d0 + r % dn;
                    bad[len] = 0xFF, bad[len + 1] = 0xD9;
                    len += 2;
                }
                else if (t % 4 == 2) bad[d0 + r % (dn - 1)] = 0xFF, bad[d0 + r % (dn - 1) + 1] = (uint8_t)(0xD0 + t % 16);
                else bad[d0 + r % dn] ^= (uint8_t)(1u << (r >> 61));
                snprintf(path, sizeof path, "damaged_%d_%d.jpg", v, t);
                add(path, bad, len, 0);
            }
        }
        free(sc), free(data);
    }
    check_batch();
    if (time_n > 0 && n_given > 0) time_batch(n_given, time_n);
    for (int k = 0; k < g_n; k++) free(g_it[k].data), free(g_it[k].u), free(g_it[k].sc), free(g_it[k].cpu_coef);
    for (int i = 0; i < nn; i++) free(names[i]);
    return tu_finish("test_gpu_jpeg_huff");
}
