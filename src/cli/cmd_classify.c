/* cmd_classify.c - `swin classify`: top-K labels for images, files or directories.
 *
 *   swin classify [--model PATH] [--top K] [--json] [--batch N] [--device cpu|cuda[:N]]
 *                 [--pillow VERSION] IMAGE... | DIR
 *   swin classify --list FILE ...
 *
 * Images go through the pipeline of src/image/pipeline.h: decoder threads, batches of N in flight
 * while the session runs the previous one, preprocessing as the model's config says (on the GPU
 * by default with --device cuda); results are printed in the order given (directories: sorted,
 * recursive):
 *   text:  "path: label (0.953), label2 (0.021), ..."
 *   json:  {"file": "path", "top": [{"index": 3, "label": "3", "prob": 0.953}, ...]} per line,
 *          {"file": "path", "error": "..."} for an image that could not be read.
 * Bad images are reported on stderr in their place and the others go on; exit 1 if any failed, 0
 * otherwise, 2 for usage errors (bad flags, a model that cannot be loaded). Progress (images,
 * img/s, ETA) on stderr when it is a terminal, and one summary line on stderr at the end;
 * --timing adds the time per stage. Test: tests/cli_classify.sh.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, opendir, fileno, clock_gettime */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline.h"

#define CMD "classify"
#define MAX_DEPTH 64

typedef struct {
    const char *model, *arch, *list, *style;
    int top, json, batch, device_index, threads, timing;
    int img_h, img_w;   /* --img-size, 0: the config's */
    int pillow;         /* --pillow major version, 0: SWIN_PILLOW_DEFAULT */
    swin_preprocess_device pre_device;
    swin_decoder decoder;
    swin_device device;
    swin_precision precision;
} classify_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: swin classify [options] IMAGE... | DIR...\n"
            "       swin classify [options] --list FILE\n"
            "Print the top-K classes of each image. Directories are walked recursively in sorted order\n"
            "(.jpg .jpeg .png .bmp .gif .tga .ppm .pgm .pnm, any case; hidden entries skipped).\n"
            "  -m, --model PATH        model directory (config.json + model.safetensors) or a\n"
            "                          .safetensors file with --arch (default: %s)\n"
            "  -a, --arch NAME         architecture preset, needed when --model is a bare .safetensors\n"
            "  -k, --top K             classes per image (default 5, at most the number of classes)\n"
            "      --json              one JSON object per image on stdout\n"
            "  -b, --batch N           images per forward pass (default 8)\n"
            "      --preprocess STYLE  timm or hf (default: the model's own)\n"
            "  -d, --device DEV        cpu, cuda or cuda:N (default cpu)\n"
            "  -p, --precision P       fp32, tf32, fp16 or bf16 (default fp32 on cpu, fp16 on cuda)\n"
            "  -l, --list FILE         read image paths from FILE, one per line ('-': stdin)\n"
            "  -t, --threads N         decoder threads (default: the number of cores)\n"
            "      --preprocess-device D  gpu or cpu: where images are resized and normalised\n"
            "                          (default gpu with --device cuda; the same values either way)\n"
            "      --decoder D         cpu (libjpeg-turbo, exactly as Pillow decodes; default) or\n"
            "                          nvjpeg (JPEGs on the GPU: faster, pixels differ slightly)\n"
            "      --timing            print the time per stage on stderr at the end\n"
            CLI_PILLOW_HELP
            CLI_IMG_SIZE_HELP
            "  -h, --help              this help\n"
            "Exit status: 0 all images classified, 1 some image failed, 2 usage error.\n",
            cli_default_model());
}

/* 0: run; 1: help shown; EXIT_USAGE: bad flags (message printed). Positional args -> *inputs. */
static int parse(int argc, char **argv, classify_args *a, const char **inputs, int *n_inputs) {
    memset(a, 0, sizeof *a);
    a->top = 5;
    a->batch = 8;
    a->device = SWIN_DEVICE_CPU;
    a->precision = (swin_precision)-1;
    *n_inputs = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
#define VALUE() do { if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE; } while (0)
        if (cli_flag(f, "-h", "--help")) { usage(stdout); return 1; }
        else if (!strcmp(f, "--json")) a->json = 1;
        else if (!strcmp(f, "--timing")) a->timing = 1;
        else if (!strcmp(f, "--img-size")) {
            VALUE();
            if (cli_parse_size(v, &a->img_h, &a->img_w))
                return cli_usage_error(CMD, "bad --img-size '%s' (expected S or HxW, 1 to 16384 each)", v);
        }
        else if (!strcmp(f, "--pillow")) {
            VALUE();
            if (swin_pillow_parse(v, &a->pillow) != SWIN_OK)
                return cli_usage_error(CMD, "bad --pillow '%s' (expected a Pillow version such as 12 or 12.3.0)", v);
        }
        else if (cli_flag(f, "-t", "--threads")) {
            VALUE();
            if (cli_parse_int(v, 1, 1024, &a->threads))
                return cli_usage_error(CMD, "bad --threads '%s' (expected an integer from 1 to 1024)", v);
        } else if (!strcmp(f, "--decoder")) {
            VALUE();
            if (swin_decoder_parse(v, &a->decoder) != SWIN_OK)
                return cli_usage_error(CMD, "bad --decoder '%s' (expected cpu or nvjpeg)", v);
        } else if (!strcmp(f, "--preprocess-device")) {
            VALUE();
            if (swin_preprocess_device_parse(v, &a->pre_device) != SWIN_OK)
                return cli_usage_error(CMD, "bad --preprocess-device '%s' (expected gpu or cpu)", v);
        }
        else if (cli_flag(f, "-m", "--model")) { VALUE(); a->model = v; }
        else if (cli_flag(f, "-a", "--arch")) { VALUE(); a->arch = v; }
        else if (cli_flag(f, "-l", "--list")) { VALUE(); a->list = v; }
        else if (!strcmp(f, "--preprocess")) {
            VALUE();
            swin_preprocess_style s;
            if (swin_preprocess_style_parse(v, &s) != SWIN_OK)
                return cli_usage_error(CMD, "bad --preprocess '%s' (expected timm or hf)", v);
            a->style = v;
        } else if (cli_flag(f, "-k", "--top")) {
            VALUE();
            if (cli_parse_int(v, 1, 1000000, &a->top))
                return cli_usage_error(CMD, "bad --top '%s' (expected a positive integer)", v);
        } else if (cli_flag(f, "-b", "--batch")) {
            VALUE();
            if (cli_parse_int(v, 1, 4096, &a->batch))
                return cli_usage_error(CMD, "bad --batch '%s' (expected an integer from 1 to 4096)", v);
        } else if (cli_flag(f, "-d", "--device")) {
            VALUE();
            if (cli_parse_device(v, &a->device, &a->device_index))
                return cli_usage_error(CMD, "bad --device '%s' (expected cpu, cuda or cuda:N)", v);
        } else if (cli_flag(f, "-p", "--precision")) {
            VALUE();
            if (swin_precision_parse(v, &a->precision) != SWIN_OK)
                return cli_usage_error(CMD, "bad --precision '%s' (expected fp32, tf32, fp16 or bf16)", v);
        } else if (!strcmp(f, "--")) {
            while (++i < argc) inputs[(*n_inputs)++] = argv[i];
        } else if (f[0] == '-' && f[1]) {
            return cli_usage_error(CMD, "unknown option '%s' (try swin classify --help)", f);
        } else {
            inputs[(*n_inputs)++] = f;
        }
#undef VALUE
    }
    if ((int)a->precision < 0) a->precision = a->device == SWIN_DEVICE_CUDA ? SWIN_FP16 : SWIN_FP32;
    if (!a->model) a->model = cli_default_model();
    if (a->list && *n_inputs) return cli_usage_error(CMD, "give images either as arguments or with --list, not both");
    if (!a->list && !*n_inputs) return cli_usage_error(CMD, "no images given (try swin classify --help)");
    if (a->pre_device == SWIN_PRE_DEVICE_GPU && a->device != SWIN_DEVICE_CUDA)
        return cli_usage_error(CMD, "--preprocess-device gpu needs --device cuda");
    if (a->decoder == SWIN_DECODER_NVJPEG && (a->device != SWIN_DEVICE_CUDA || a->pre_device == SWIN_PRE_DEVICE_CPU))
        return cli_usage_error(CMD, "--decoder nvjpeg needs --device cuda and GPU preprocessing");
    return 0;
}

/* ---- the list of image paths */
typedef struct {
    char **v;
    int n, cap;
} path_list;

static int paths_add(path_list *l, const char *p) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        char **nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv) return 1;
        l->v = nv;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(p))) return 1;
    l->n++;
    return 0;
}

static void paths_free(path_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Add the images under dir, sorted by name, subdirectories in place; hidden entries skipped.
 * Returns 0, or 1 after printing a message (an unreadable directory). */
static int walk(path_list *out, const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "swin %s: %s: cannot read directory (%s)\n", CMD, dir, strerror(errno)); return 1; }
    path_list names = {0};
    struct dirent *e;
    int bad = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && paths_add(&names, e->d_name)) bad = 1;
    closedir(d);
    if (names.n) qsort(names.v, (size_t)names.n, sizeof *names.v, cmp_str);
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] == '/';
    for (int i = 0; i < names.n && !bad; i++) {
        size_t len = dl + 1 + strlen(names.v[i]) + 1;
        char *p = malloc(len);
        if (!p) { bad = 1; break; }
        snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", names.v[i]);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < MAX_DEPTH) bad |= walk(out, p, depth + 1);
        } else if (swin_image_has_extension(p)) {
            bad |= paths_add(out, p);
        }
        free(p);
    }
    paths_free(&names);
    return bad;
}

/* Read paths from FILE ('-' for stdin), one per line; trailing \r and blank lines ignored. */
static int read_list(path_list *out, const char *file) {
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    if (!f) { fprintf(stderr, "swin %s: %s: cannot open list (%s)\n", CMD, file, strerror(errno)); return 1; }
    char line[8192];
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n) bad = paths_add(out, line);
    }
    if (f != stdin) fclose(f);
    return bad;
}

/* ---- output */
typedef struct { int index; double prob; } scored;

/* softmax over logits, then the k best (descending; ties by index) */
static void top_k(const float *logits, int n, int k, scored *out) {
    double mx = logits[0], sum = 0;
    for (int i = 1; i < n; i++) if (logits[i] > mx) mx = logits[i];
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    for (int j = 0; j < k; j++) out[j] = (scored){-1, -1.0};
    for (int i = 0; i < n; i++) {
        double p = exp((double)logits[i] - mx) / sum;
        if (p <= out[k - 1].prob) continue;
        int j = k - 1;
        while (j > 0 && p > out[j - 1].prob) { out[j] = out[j - 1]; j--; }
        out[j] = (scored){i, p};
    }
}

static void print_result(const swin_model *m, const char *path, const scored *top, int k, int json) {
    if (!json) {
        printf("%s:", path);
        for (int j = 0; j < k; j++) printf("%s %s (%.3f)", j ? "," : "", swin_model_label(m, top[j].index), top[j].prob);
        printf("\n");
        return;
    }
    cJSON *o = cJSON_CreateObject(), *arr;
    cJSON_AddStringToObject(o, "file", path);
    arr = cJSON_AddArrayToObject(o, "top");
    for (int j = 0; j < k; j++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", top[j].index);
        cJSON_AddStringToObject(e, "label", swin_model_label(m, top[j].index));
        cJSON_AddNumberToObject(e, "prob", round(top[j].prob * 1e6) / 1e6);
        cJSON_AddItemToArray(arr, e);
    }
    char *s = cJSON_PrintUnformatted(o);
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}

static int g_progress; /* a progress line is on stderr */

static void clear_progress(void) {
    if (g_progress) { fprintf(stderr, "\r\033[K"); g_progress = 0; }
}

static void print_error(const char *path, const char *msg, int json) {
    clear_progress();
    fprintf(stderr, "swin %s: %s\n", CMD, msg);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", path);
        cJSON_AddStringToObject(o, "error", msg);
        char *s = cJSON_PrintUnformatted(o);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(o);
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the run: the pipeline calls back once per image, in input order */
typedef struct {
    const classify_args *a;
    const swin_model *model;
    int nc, k, n, progress;
    scored *top;
    double t0, last_progress;
} run_ctx;

static void on_result(void *ctx, const swin_pipeline_result *r) {
    run_ctx *c = ctx;
    if (r->error) {
        print_error(r->path, r->error, c->a->json);
    } else {
        top_k(r->logits, c->nc, c->k, c->top);
        clear_progress();
        print_result(c->model, r->path, c->top, c->k, c->a->json);
    }
    int done = r->index + 1;
    double t = now_s();
    if (c->progress && (t - c->last_progress > 0.25 || done == c->n)) {
        fflush(stdout);
        double rate = done / (t - c->t0 > 1e-9 ? t - c->t0 : 1e-9);
        fprintf(stderr, "\rclassify: %d/%d images, %.0f img/s, ETA %.0f s\033[K", done, c->n, rate,
                (c->n - done) / rate);
        g_progress = 1;
        c->last_progress = t;
    }
}

static void print_timing(const swin_pipeline_stats *st) {
    fprintf(stderr,
            "swin %s: time per stage (ms; decoder stages summed over %d threads, %s slots, %d JPEGs from nvJPEG "
            "to the CPU):\n"
            "  read %.1f  decode %.1f  cpu-preprocess %.1f\n"
            "  wait-for-decode %.1f  gpu-decode %.1f  upload %.1f  gpu-preprocess %.1f  forward %.1f  output %.1f  wall %.1f"
            "  warm-up %.1f\n",
            CMD, st->threads, st->pinned ? "page-locked" : "pageable", st->cpu_fallback, st->read_ms, st->decode_ms,
            st->cpu_preprocess_ms, st->wait_ms, st->gpu_decode_ms, st->upload_ms, st->gpu_preprocess_ms,
            st->forward_ms, st->output_ms, st->wall_ms, st->warmup_ms);
    if (st->nvjpeg_hw_images || st->nvjpeg_sw_images)
        fprintf(stderr, "  nvJPEG (%d images on the JPEG engines, %d on the default backend): nvjpeg-parse %.1f  "
                "nvjpeg-engines %.1f  nvjpeg-default %.1f  nvjpeg-sync %.1f\n", st->nvjpeg_hw_images, st->nvjpeg_sw_images,
                st->nvjpeg_parse_ms, st->nvjpeg_hw_ms, st->nvjpeg_sw_ms, st->nvjpeg_sync_ms);
}

static int classify(const classify_args *a, const path_list *paths, int inputs_failed) {
    swin_model *model = NULL;
    swin_load_options lo = swin_load_options_default();
    lo.arch = a->arch;
    lo.img_h = a->img_h;
    lo.img_w = a->img_w;
    if (swin_model_load(a->model, &lo, &model) != SWIN_OK)
        return cli_usage_error(CMD, "%s", swin_last_error());
    const swin_config *cfg = swin_model_config(model);
    swin_preprocess_params pp = swin_preprocess_params_from_config(cfg);
    if (a->style) swin_preprocess_style_parse(a->style, &pp.style);
    pp.pillow = a->pillow;
    if (cfg->in_chans != 3) {
        swin_model_free(model);
        return cli_usage_error(CMD, "%s: model takes %d input channels; images have 3", a->model, cfg->in_chans);
    }
    int batch = a->batch < paths->n ? a->batch : (paths->n > 0 ? paths->n : 1);
    swin_session_options so = swin_session_options_default();
    so.device = a->device;
    so.device_index = a->device_index;
    so.precision = a->precision;
    so.max_batch = batch;
    swin_session *sess = NULL;
    if (swin_session_create(model, &so, &sess) != SWIN_OK) {
        int rc = cli_usage_error(CMD, "%s", swin_last_error());
        swin_model_free(model);
        return rc;
    }
    run_ctx c = {a, model, cfg->num_classes, 0, paths->n, 0, NULL, now_s(), 0};
    c.k = a->top < c.nc ? a->top : c.nc;
    c.top = malloc((size_t)c.k * sizeof *c.top);
    c.progress = isatty(fileno(stderr)) && paths->n > batch;
    swin_pipeline_options po = swin_pipeline_options_default();
    po.batch = batch;
    po.threads = a->threads;
    po.where = a->pre_device;
    po.decoder = a->decoder;
    swin_pipeline_stats st;
    int rc = 0;
    if (!c.top) {
        rc = cli_usage_error(CMD, "out of memory");
    } else if (swin_pipeline_run(sess, &pp, (const char *const *)paths->v, paths->n, &po, on_result, &c, &st) !=
               SWIN_OK) {
        clear_progress();
        rc = cli_usage_error(CMD, "%s", swin_last_error());
    } else {
        clear_progress();
        fflush(stdout);
        double s = st.wall_ms / 1e3;
        fprintf(stderr, "swin %s: %d images, %d failed, %.2f s, %.1f img/s", CMD, st.images, st.failed, s,
                s > 0 ? st.images / s : 0.0);
        if (st.warmup_ms > 0) fprintf(stderr, " (after a %.2f s warm-up)", st.warmup_ms / 1e3);
        fputc('\n', stderr);
        if (a->timing) print_timing(&st);
        rc = st.failed || inputs_failed ? EXIT_FAILED : 0;
    }
    free(c.top);
    swin_session_free(sess);
    swin_model_free(model);
    return rc;
}

int cmd_classify(int argc, char **argv) {
    classify_args a;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    int n_inputs = 0;
    if (!inputs) return cli_usage_error(CMD, "out of memory");
    int r = parse(argc, argv, &a, inputs, &n_inputs);
    if (r) { free(inputs); return r == 1 ? 0 : r; }

    /* a path that is neither a directory nor readable is reported by the decoder, in order */
    path_list paths = {0};
    int failed = 0;
    if (a.list) {
        if (read_list(&paths, a.list)) { paths_free(&paths); free(inputs); return EXIT_USAGE; }
    }
    for (int i = 0; i < n_inputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            int before = paths.n;
            failed |= walk(&paths, inputs[i], 0);
            if (paths.n == before) {
                fprintf(stderr, "swin %s: %s: no images in this directory\n", CMD, inputs[i]);
                failed = 1;
            }
        } else if (paths_add(&paths, inputs[i])) {
            failed = 1;
        }
    }
    free(inputs);
    if (paths.n == 0) {
        if (!failed) fprintf(stderr, "swin %s: no images to classify\n", CMD);
        paths_free(&paths);
        return EXIT_FAILED;
    }
    r = classify(&a, &paths, failed);
    paths_free(&paths);
    return r;
}
