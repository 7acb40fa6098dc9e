/* nvjpeg_ceiling.c - nvJPEG's own decoding rate on a set of JPEG files, outside swin's pipeline:
 * the ceiling that `swin classify --decoder nvjpeg` can reach on those files.
 *
 *   build/nvjpeg_ceiling [--threads 1,2,4] [--batch 64,256] [--init once,each] [--format rgbi]
 *                        [--interp 1] [--default-images 1024] [--device 0] [--list FILE]
 *                        FILES_OR_DIRS...
 *
 * Every file is read into memory first (a folder gives its *.jpg / *.jpeg files, not recursing).
 * The files the JPEG engines take (nvjpegJpegStreamParseHeader + nvjpegDecodeBatchedSupported;
 * "refused" counts the others and those nvJPEG cannot read) are cut into batches in file order.
 * For each combination of the lists, `threads` threads, each with its own hardware-backend
 * handle, state, CUDA stream and device buffer, take the next batch, decode it with
 * nvjpegDecodeBatched and wait for their stream (the pixels are then ready, as a consumer needs
 * them). --init once: nvjpegDecodeBatchedInitialize once with the batch size (the last, short
 * batch padded with repeats of its smallest image, as swin does; padding is not counted);
 * each: before every batch with its size (what swin did whenever that size changed, and what
 * torchvision does). Each thread first decodes two batches untimed (warm-up: nvJPEG allocates its
 * buffers), then the timed pass decodes every engine image once; seconds is the wall time from
 * the threads' start to the last one's last synchronisation. --format rgbi (what swin asks for)
 * or rgb (planar); --interp 1 (what swin asks for: NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION)
 * or 0. A last row: the default backend (nvjpegDecode, one image at a time, one thread) on the
 * first --default-images files (0: no such row), for reference; "refused" there counts the
 * files it could not decode.
 * Output (stdout): a few lines about the GPU and the files, a header, one row per combination
 * (backend threads batch init format interp images refused seconds img/s), then
 * "best: ..." for the fastest hardware row.
 * Exit status: 0, 1 on an nvJPEG or CUDA error or a file that cannot be read (the message names
 * the call or the file), 2 on a usage error. Test: tests/cli_gpu_nvjpeg_ceiling.sh.
 */
#define _POSIX_C_SOURCE 200809L /* getline, clock_gettime, strdup */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include "nvjpeg_status.h"

#define MAX_LIST 16
#define ERR_LEN 512

// ---- errors: every nvJPEG and CUDA call is checked; the message names the call

/* in a function returning int, with `char *err` (ERR_LEN bytes) in scope */
#define NV(call)                                                                                     \
    do {                                                                                             \
        nvjpegStatus_t nv_s_ = (call);                                                               \
        if (nv_s_ != NVJPEG_STATUS_SUCCESS) {                                                        \
            snprintf(err, ERR_LEN, "%s failed: %s (%d)", #call, swin_nvjpeg_status_str(nv_s_), (int)nv_s_);          \
            return -1;                                                                               \
        }                                                                                            \
    } while (0)
#define CU(call)                                                                                     \
    do {                                                                                             \
        cudaError_t cu_e_ = (call);                                                                  \
        if (cu_e_ != cudaSuccess) {                                                                  \
            snprintf(err, ERR_LEN, "%s failed: %s", #call, cudaGetErrorString(cu_e_));               \
            return -1;                                                                               \
        }                                                                                            \
    } while (0)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// ---- the files

typedef struct {
    char *path;
    unsigned char *data;
    size_t len;
    int w, h;          /* 0 when nvJPEG cannot read it */
    int hw;            /* the JPEG engines take it */
} jfile;

static jfile *files;
static int nfiles, cap_files;

static int add_path(const char *p) {
    if (nfiles == cap_files) {
        int c = cap_files ? 2 * cap_files : 1024;
        jfile *f = realloc(files, (size_t)c * sizeof *f);
        if (!f) return -1;
        files = f;
        cap_files = c;
    }
    memset(&files[nfiles], 0, sizeof files[nfiles]);
    if (!(files[nfiles].path = strdup(p))) return -1;
    nfiles++;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_jpeg_name(const char *n) {
    const char *dot = strrchr(n, '.');
    return n[0] != '.' && dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* a folder's *.jpg / *.jpeg regular files, sorted; a file as it is */
static int add_arg(const char *p) {
    struct stat sb;
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) return add_path(p);
    DIR *d = opendir(p);
    if (!d) {
        fprintf(stderr, "nvjpeg_ceiling: %s: cannot open the folder\n", p);
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!is_jpeg_name(e->d_name)) continue;
        size_t len = strlen(p) + strlen(e->d_name) + 2;
        char *full = malloc(len);
        if (!full) { rc = -1; break; }
        snprintf(full, len, "%s/%s", p, e->d_name);
        if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) { free(full); continue; }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) { free(full); rc = -1; break; }
            names = nn;
        }
        names[n++] = full;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        if (rc == 0) rc = add_path(names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int add_list(const char *list) {
    FILE *f = fopen(list, "r");
    if (!f) {
        fprintf(stderr, "nvjpeg_ceiling: %s: cannot open the list\n", list);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n > 0) rc = add_path(line);
    }
    free(line);
    fclose(f);
    return rc;
}

static int read_all(void) {
    for (int i = 0; i < nfiles; i++) {
        jfile *f = &files[i];
        FILE *fp = fopen(f->path, "rb");
        long size = -1;
        if (fp && fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
        if (!fp || size < 0 || fseek(fp, 0, SEEK_SET) != 0 || !(f->data = malloc(size ? (size_t)size : 1)) ||
            fread(f->data, 1, (size_t)size, fp) != (size_t)size) {
            fprintf(stderr, "nvjpeg_ceiling: %s: cannot read the file\n", f->path);
            if (fp) fclose(fp);
            return -1;
        }
        fclose(fp);
        f->len = (size_t)size;
    }
    return 0;
}

/* sizes, and whether the JPEG engines take each file */
static int probe(nvjpegHandle_t hw, char *err) {
    nvjpegJpegStream_t js;
    NV(nvjpegJpegStreamCreate(hw, &js));
    for (int i = 0; i < nfiles; i++) {
        jfile *f = &files[i];
        int nc, w[NVJPEG_MAX_COMPONENT], h[NVJPEG_MAX_COMPONENT], unsupported = 1;
        nvjpegChromaSubsampling_t ss;
        if (nvjpegGetImageInfo(hw, f->data, f->len, &nc, &ss, w, h) != NVJPEG_STATUS_SUCCESS || w[0] < 1 || h[0] < 1)
            continue;
        f->w = w[0];
        f->h = h[0];
        f->hw = nvjpegJpegStreamParseHeader(hw, f->data, f->len, js) == NVJPEG_STATUS_SUCCESS &&
                nvjpegDecodeBatchedSupported(hw, js, &unsupported) == NVJPEG_STATUS_SUCCESS && !unsupported;
    }
    NV(nvjpegJpegStreamDestroy(js));
    return 0;
}

static size_t out_bytes(const jfile *f) { return ((size_t)f->w * f->h * 3 + 255) & ~(size_t)255; }

static void set_dest(nvjpegImage_t *d, unsigned char *p, const jfile *f, nvjpegOutputFormat_t fmt) {
    memset(d, 0, sizeof *d);
    if (fmt == NVJPEG_OUTPUT_RGBI) {
        d->channel[0] = p;
        d->pitch[0] = (size_t)f->w * 3;
        return;
    }
    for (int c = 0; c < 3; c++) {   /* planar RGB */
        d->channel[c] = p + (size_t)c * f->w * f->h;
        d->pitch[c] = (size_t)f->w;
    }
}

// ---- one hardware row: threads x batches

typedef struct {
    int threads, batch, once, interp;
    nvjpegOutputFormat_t fmt;
    const int *idx;        /* the engine images, [nidx] */
    int nidx, nbatches;
    size_t batch_bytes;    /* the largest batch, padding included */
    atomic_int next;       /* the next batch to take */
    pthread_mutex_t mu;    /* the threads wait for go, so that they start together */
    pthread_cond_t cv;
    int go;
} row;

typedef struct {
    row *r;
    int dev;
    nvjpegHandle_t h;
    nvjpegJpegState_t st;
    cudaStream_t s;
    unsigned char *px;
    const unsigned char **data;
    size_t *len;
    nvjpegImage_t *dst;
    pthread_t tid;
    int rc;
    char err[ERR_LEN];
} worker;

/* batch j: its first image, its count, and its smallest image (the padding) */
static int batch_span(const row *r, int j, int *lo, int *small) {
    *lo = j * r->batch;
    int m = r->nidx - *lo < r->batch ? r->nidx - *lo : r->batch;
    *small = r->idx[*lo];
    for (int k = 1; k < m; k++) {
        const jfile *a = &files[r->idx[*lo + k]], *b = &files[*small];
        if ((long long)a->w * a->h < (long long)b->w * b->h) *small = r->idx[*lo + k];
    }
    return m;
}

static int decode_batch(worker *w, int j) {
    char *err = w->err;
    row *r = w->r;
    int lo, small, m = batch_span(r, j, &lo, &small);
    int size = r->once ? r->batch : m;
    size_t off = 0;
    for (int k = 0; k < size; k++) {
        const jfile *f = &files[k < m ? r->idx[lo + k] : small];
        w->data[k] = f->data;
        w->len[k] = f->len;
        set_dest(&w->dst[k], w->px + off, f, r->fmt);
        off += out_bytes(f);
    }
    if (!r->once) NV(nvjpegDecodeBatchedInitialize(w->h, w->st, size, 1, r->fmt));
    NV(nvjpegDecodeBatched(w->h, w->st, w->data, w->len, w->dst, w->s));
    CU(cudaStreamSynchronize(w->s));
    return 0;
}

static int worker_setup(worker *w) {
    char *err = w->err;
    row *r = w->r;
    CU(cudaSetDevice(w->dev));
    NV(nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, r->interp ? NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION : 0,
                      &w->h));
    NV(nvjpegJpegStateCreate(w->h, &w->st));
    CU(cudaStreamCreateWithFlags(&w->s, cudaStreamNonBlocking));
    CU(cudaMalloc((void **)&w->px, r->batch_bytes));
    w->data = malloc((size_t)r->batch * sizeof *w->data);
    w->len = malloc((size_t)r->batch * sizeof *w->len);
    w->dst = malloc((size_t)r->batch * sizeof *w->dst);
    if (!w->data || !w->len || !w->dst) {
        snprintf(err, ERR_LEN, "out of memory");
        return -1;
    }
    if (r->once) NV(nvjpegDecodeBatchedInitialize(w->h, w->st, r->batch, 1, r->fmt));
    return 0;
}

static void worker_free(worker *w) {
    if (w->px) cudaFree(w->px);
    if (w->s) cudaStreamDestroy(w->s);
    if (w->st) nvjpegJpegStateDestroy(w->st);
    if (w->h) nvjpegDestroy(w->h);
    free(w->data);
    free(w->len);
    free(w->dst);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    row *r = w->r;
    cudaError_t e = cudaSetDevice(w->dev);
    pthread_mutex_lock(&r->mu);
    while (!r->go) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (e != cudaSuccess) {
        snprintf(w->err, ERR_LEN, "cudaSetDevice(%d) failed: %s", w->dev, cudaGetErrorString(e));
        w->rc = -1;
        return NULL;
    }
    while (w->rc == 0) {
        int j = atomic_fetch_add(&r->next, 1);
        if (j >= r->nbatches) break;
        w->rc = decode_batch(w, j);
    }
    return NULL;
}

/* one row; returns img/s, or -1 with the message in err */
static double run_row(row *r, int dev, char *err) {
    r->nbatches = (r->nidx + r->batch - 1) / r->batch;
    r->batch_bytes = 256;
    for (int j = 0; j < r->nbatches; j++) {
        int lo, small, m = batch_span(r, j, &lo, &small);
        size_t b = 0;
        for (int k = 0; k < m; k++) b += out_bytes(&files[r->idx[lo + k]]);
        if (r->once) b += (size_t)(r->batch - m) * out_bytes(&files[small]);
        if (b > r->batch_bytes) r->batch_bytes = b;
    }
    worker *ws = calloc((size_t)r->threads, sizeof *ws);
    if (!ws) {
        snprintf(err, ERR_LEN, "out of memory");
        return -1;
    }
    double rate = -1;
    int t = 0, started = 0;
    for (; t < r->threads; t++) {   /* set-up and warm-up (two batches each), untimed */
        ws[t].r = r;
        ws[t].dev = dev;
        if (worker_setup(&ws[t]) != 0 || decode_batch(&ws[t], (2 * t) % r->nbatches) != 0 ||
            decode_batch(&ws[t], (2 * t + 1) % r->nbatches) != 0) {
            snprintf(err, ERR_LEN, "%s", ws[t].err);
            t++;
            goto done;
        }
    }
    atomic_store(&r->next, 0);
    r->go = 0;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    for (; started < r->threads; started++)
        if (pthread_create(&ws[started].tid, NULL, worker_main, &ws[started]) != 0) break;
    if (started < r->threads) {
        snprintf(err, ERR_LEN, "cannot start thread %d of %d", started + 1, r->threads);
        atomic_store(&r->next, r->nbatches);   /* the started ones find nothing to do */
    }
    pthread_mutex_lock(&r->mu);
    r->go = 1;
    double t0 = now_s();
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    for (int k = 0; k < started; k++) pthread_join(ws[k].tid, NULL);
    double secs = now_s() - t0;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    if (started < r->threads) goto done;
    for (int k = 0; k < r->threads; k++)
        if (ws[k].rc != 0) {
            snprintf(err, ERR_LEN, "%s", ws[k].err);
            goto done;
        }
    rate = r->nidx / secs;
    printf("%-8s %7d %5d %-4s %-6s %6d %7d %7d %8.3f %10.1f\n", "hardware", r->threads, r->batch,
           r->once ? "once" : "each", r->fmt == NVJPEG_OUTPUT_RGBI ? "rgbi" : "rgb", r->interp, r->nidx,
           nfiles - r->nidx, secs, rate);
    fflush(stdout);
done:
    for (int k = 0; k < t; k++) worker_free(&ws[k]);
    free(ws);
    return rate;
}

// ---- the default backend, one image at a time, for reference

static int run_default(int count, nvjpegOutputFormat_t fmt, int interp, char *err) {
    nvjpegHandle_t h = NULL;
    nvjpegJpegState_t st = NULL;
    cudaStream_t s = NULL;
    unsigned char *px = NULL;
    size_t most = 256;
    for (int i = 0; i < count; i++)
        if (out_bytes(&files[i]) > most) most = out_bytes(&files[i]);
    int rc = -1, failed = 0;
    nvjpegImage_t d;
    nvjpegStatus_t ns = nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL,
                                       interp ? NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION : 0, &h);
    if (ns != NVJPEG_STATUS_SUCCESS) {
        snprintf(err, ERR_LEN, "nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT) failed: %s (%d)", swin_nvjpeg_status_str(ns),
                 (int)ns);
        return -1;
    }
    if ((ns = nvjpegJpegStateCreate(h, &st)) != NVJPEG_STATUS_SUCCESS) {
        snprintf(err, ERR_LEN, "nvjpegJpegStateCreate failed: %s (%d)", swin_nvjpeg_status_str(ns), (int)ns);
        goto done;
    }
    cudaError_t ce = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&px, most);
    if (ce != cudaSuccess) {
        snprintf(err, ERR_LEN, "cudaStreamCreateWithFlags / cudaMalloc failed: %s", cudaGetErrorString(ce));
        goto done;
    }
    for (int pass = 0; pass < 2; pass++) {   /* 0: warm-up on the first 8 files */
        int n = pass == 0 ? (count < 8 ? count : 8) : count;
        failed = 0;
        double t0 = now_s();
        for (int i = 0; i < n; i++) {
            const jfile *f = &files[i];
            if (f->w == 0) { failed++; continue; }
            set_dest(&d, px, f, fmt);
            if (nvjpegDecode(h, st, f->data, f->len, fmt, &d, s) != NVJPEG_STATUS_SUCCESS) failed++;
        }
        if ((ce = cudaStreamSynchronize(s)) != cudaSuccess) {
            snprintf(err, ERR_LEN, "cudaStreamSynchronize failed: %s", cudaGetErrorString(ce));
            goto done;
        }
        double secs = now_s() - t0;
        if (pass == 1)
            printf("%-8s %7d %5d %-4s %-6s %6d %7d %7d %8.3f %10.1f\n", "default", 1, 1, "-",
                   fmt == NVJPEG_OUTPUT_RGBI ? "rgbi" : "rgb", interp, n - failed, failed, secs, (n - failed) / secs);
    }
    rc = 0;
done:
    if (px) cudaFree(px);
    if (s) cudaStreamDestroy(s);
    if (st) nvjpegJpegStateDestroy(st);
    nvjpegDestroy(h);
    return rc;
}

// ---- arguments

static void usage(FILE *o) {
    fprintf(o,
            "usage: nvjpeg_ceiling [options] FILES_OR_DIRS...\n"
            "nvJPEG's own decoding rate on JPEG files (all read into memory first), outside swin:\n"
            "the JPEG engines through nvjpegDecodeBatched for every combination of the lists below.\n"
            "  --threads LIST        threads, each with its own handle, state, stream (default 1,2,4)\n"
            "  --batch LIST          images per nvjpegDecodeBatched (default 64,256)\n"
            "  --init LIST           once: nvjpegDecodeBatchedInitialize once per thread; each: before\n"
            "                        every batch (default once,each)\n"
            "  --format LIST         rgbi (interleaved, what swin uses) or rgb (planar) (default rgbi)\n"
            "  --interp LIST         1: chroma upsampling with interpolation (swin's), 0: without\n"
            "                        (default 1)\n"
            "  --default-images N    the default backend, one image at a time, on the first N files\n"
            "                        (default 1024; 0: not run)\n"
            "  --device N            the GPU (default 0)\n"
            "  --list FILE           also the paths in FILE, one per line\n"
            "  -h, --help            this help\n"
            "Output: one row per combination (backend threads batch init format interp images refused\n"
            "seconds img/s), then the best. Exit status: 0, 1 error, 2 usage error.\n");
}

static int usage_error(const char *fmt, const char *v) {
    fprintf(stderr, "nvjpeg_ceiling: ");
    fprintf(stderr, fmt, v);
    fprintf(stderr, " (try --help)\n");
    return 2;
}

/* "1,2,4" -> out[], each in [lo, hi]; returns the count, 0 when malformed */
static int parse_ints(const char *s, int *out, int lo, int hi) {
    int n = 0;
    while (*s && n < MAX_LIST) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < lo || v > hi || (*end && *end != ',')) return 0;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return *s ? 0 : n;
}

/* "a,b" of the words in names[] -> their indices */
static int parse_words(const char *s, int *out, const char *const *names, int nnames) {
    int n = 0;
    while (*s && n < MAX_LIST) {
        size_t len = strcspn(s, ",");
        int k = 0;
        while (k < nnames && (strlen(names[k]) != len || strncmp(s, names[k], len))) k++;
        if (k == nnames) return 0;
        out[n++] = k;
        s += len;
        if (*s == ',') s++;
    }
    return *s ? 0 : n;
}

int main(int argc, char **argv) {
    int threads[MAX_LIST] = {1, 2, 4}, nthreads = 3, batches[MAX_LIST] = {64, 256}, nbatch = 2;
    int inits[MAX_LIST] = {0, 1}, ninit = 2, fmts[MAX_LIST] = {0}, nfmt = 1, interps[MAX_LIST] = {1}, ninterp = 1;
    int default_images = 1024, dev = 0, one[MAX_LIST];
    static const char *const init_names[] = {"once", "each"}, *const fmt_names[] = {"rgbi", "rgb"};
    int nargs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (a[0] != '-' || !strcmp(a, "-")) { nargs++; continue; }
        if (!v) return usage_error("%s needs a value", a);
        i++;
        int ok = 1;
        if (!strcmp(a, "--threads")) ok = (nthreads = parse_ints(v, threads, 1, 64)) > 0;
        else if (!strcmp(a, "--batch")) ok = (nbatch = parse_ints(v, batches, 1, 4096)) > 0;
        else if (!strcmp(a, "--init")) ok = (ninit = parse_words(v, inits, init_names, 2)) > 0;
        else if (!strcmp(a, "--format")) ok = (nfmt = parse_words(v, fmts, fmt_names, 2)) > 0;
        else if (!strcmp(a, "--interp")) ok = (ninterp = parse_ints(v, interps, 0, 1)) > 0;
        else if (!strcmp(a, "--default-images")) { ok = parse_ints(v, one, 0, 1 << 30) == 1; default_images = one[0]; }
        else if (!strcmp(a, "--device")) { ok = parse_ints(v, one, 0, 1023) == 1; dev = one[0]; }
        else if (!strcmp(a, "--list")) nargs++;
        else return usage_error("unknown option '%s'", a);
        if (!ok) return usage_error("bad value '%s'", v);
    }
    if (nargs == 0) return usage_error("%s", "no files given");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) {
            if (add_list(argv[++i]) != 0) return 1;
        } else if (argv[i][0] == '-' && strcmp(argv[i], "-")) {
            i++;   /* an option and its value */
        } else if (add_arg(argv[i]) != 0) {
            return 1;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "nvjpeg_ceiling: no JPEG files found\n");
        return 1;
    }
    if (read_all() != 0) return 1;

    char err[ERR_LEN] = "";
    int major = 0, minor = 0, patch = 0, ndev = 0;
    struct cudaDeviceProp prop;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || dev >= ndev) {
        fprintf(stderr, "nvjpeg_ceiling: no CUDA device %d (%s)\n", dev,
                ce != cudaSuccess ? cudaGetErrorString(ce) : "fewer devices");
        return 1;
    }
    if ((ce = cudaSetDevice(dev)) != cudaSuccess || (ce = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
        fprintf(stderr, "nvjpeg_ceiling: cuda:%d: %s\n", dev, cudaGetErrorString(ce));
        return 1;
    }
    nvjpegGetProperty(MAJOR_VERSION, &major);
    nvjpegGetProperty(MINOR_VERSION, &minor);
    nvjpegGetProperty(PATCH_LEVEL, &patch);
    nvjpegHandle_t hw = NULL;
    nvjpegStatus_t ns = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &hw);
    unsigned engines = 0, cores = 0;
    if (ns == NVJPEG_STATUS_SUCCESS && nvjpegGetHardwareDecoderInfo(hw, &engines, &cores) != NVJPEG_STATUS_SUCCESS)
        engines = cores = 0;
    printf("nvjpeg_ceiling: %s (cuda:%d), nvJPEG %d.%d.%d, ", prop.name, dev, major, minor, patch);
    if (ns == NVJPEG_STATUS_SUCCESS) printf("%u JPEG engines x %u cores\n", engines, cores);
    else printf("no hardware backend: %s\n", swin_nvjpeg_status_str(ns));

    int *idx = malloc((size_t)nfiles * sizeof *idx), nidx = 0, unreadable = 0;
    double bytes = 0, pixels = 0;
    if (!idx) { fprintf(stderr, "nvjpeg_ceiling: out of memory\n"); return 1; }
    if (ns == NVJPEG_STATUS_SUCCESS && probe(hw, err) != 0) {
        fprintf(stderr, "nvjpeg_ceiling: %s\n", err);
        return 1;
    }
    for (int i = 0; i < nfiles; i++) {
        bytes += files[i].len;
        pixels += (double)files[i].w * files[i].h;
        unreadable += files[i].w == 0;
        if (files[i].hw) idx[nidx++] = i;
    }
    int readable = nfiles - unreadable > 0 ? nfiles - unreadable : 1;
    printf("nvjpeg_ceiling: %d files, %.1f MiB, %.0f pixels on average; %d for the JPEG engines, %d refused "
           "(%d that nvJPEG cannot read)\n", nfiles, bytes / 1048576.0, pixels / readable, nidx, nfiles - nidx, unreadable);
    printf("%-8s %7s %5s %-4s %-6s %6s %7s %7s %8s %10s\n", "backend", "threads", "batch", "init", "format", "interp",
           "images", "refused", "seconds", "img/s");
    fflush(stdout);

    int rc = 0, hw_rows = 1;   /* an error makes the exit status 1; the other rows still run */
    double best = -1;
    char best_line[256] = "";
    if (ns != NVJPEG_STATUS_SUCCESS) {
        fprintf(stderr, "nvjpeg_ceiling: nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE) failed: %s (a GPU without JPEG "
                "engines says architecture mismatch); no hardware rows\n", swin_nvjpeg_status_str(ns));
        rc = 1;
        hw_rows = 0;
    } else if (nidx == 0) {
        fprintf(stderr, "nvjpeg_ceiling: the JPEG engines take none of these files; no hardware rows\n");
        rc = 1;
        hw_rows = 0;
    }
    for (int a = 0; hw_rows && a < nthreads; a++)
        for (int b = 0; b < nbatch; b++)
            for (int c = 0; c < ninit; c++)
                for (int f = 0; f < nfmt; f++)
                    for (int p = 0; p < ninterp; p++) {
                        row r;
                        memset(&r, 0, sizeof r);
                        r.threads = threads[a];
                        r.batch = batches[b];
                        r.once = inits[c] == 0;
                        r.fmt = fmts[f] == 0 ? NVJPEG_OUTPUT_RGBI : NVJPEG_OUTPUT_RGB;
                        r.interp = interps[p];
                        r.idx = idx;
                        r.nidx = nidx;
                        double x = run_row(&r, dev, err);
                        if (x < 0) {
                            fprintf(stderr, "nvjpeg_ceiling: threads %d batch %d init %s format %s interp %d: %s\n",
                                    r.threads, r.batch, init_names[inits[c]], fmt_names[fmts[f]], r.interp, err);
                            rc = 1;
                        } else if (x > best) {
                            best = x;
                            snprintf(best_line, sizeof best_line,
                                     "best: hardware threads %d batch %d init %s format %s interp %d: %.1f img/s "
                                     "(%d images)", r.threads, r.batch, init_names[inits[c]], fmt_names[fmts[f]], r.interp,
                                     x, nidx);
                        }
                    }
    if (hw) nvjpegDestroy(hw);
    int ndefault = default_images < nfiles ? default_images : nfiles;
    if (ndefault > 0 && run_default(ndefault, fmts[0] == 0 ? NVJPEG_OUTPUT_RGBI : NVJPEG_OUTPUT_RGB, interps[0], err) != 0) {
        fprintf(stderr, "nvjpeg_ceiling: default backend: %s\n", err);
        rc = 1;
    }
    if (best_line[0]) printf("%s\n", best_line);
    for (int i = 0; i < nfiles; i++) {
        free(files[i].path);
        free(files[i].data);
    }
    free(files);
    free(idx);
    return rc;
}
