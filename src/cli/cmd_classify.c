/* cmd_classify.c - `swin classify`: top-K labels for images, files or directories.
 *
 *   swin classify [--model PATH] [--top K] [--json] [--batch N] [--device DEV] [--out FILE]
 *                 [--pillow VERSION] IMAGE... | DIR
 *   swin classify --list FILE ...
 *   mpirun -np N swin classify --list FILE --out FILE ...
 *
 * Images go through the pipeline of src/image/pipeline.h: decoder threads, batches of N in flight
 * while the session runs the previous one, preprocessing as the model's config says (on the GPU
 * by default with --device cuda); with several GPUs (cuda:all, cuda:0,2) one session per GPU
 * takes the decoded batches as it frees up. Results are printed in the order given
 * (directories: sorted, recursive), on stdout or into --out FILE:
 *   text:  "path: label (0.953), label2 (0.021), ..."
 *   json:  {"file": "path", "top": [{"index": 3, "label": "3", "prob": 0.953}, ...]} per line,
 *          {"file": "path", "error": "..."} for an image that could not be read.
 * Bad images are reported on stderr in their place and the others go on; exit 1 if any failed, 0
 * otherwise, 2 for usage errors (bad flags, a model that cannot be loaded). Progress (images,
 * img/s, ETA) on stderr when it is a terminal, and one summary line on stderr at the end;
 * --timing adds the time per stage.
 *
 * Started by mpirun or srun (built with MPI, dist.h), the processes are ranks of one job: rank 0
 * reads the list, loads the model and sends every rank the paths; each rank classifies one
 * contiguous block of whole batches on its node-local GPU(s) (devices.c); the others record their
 * results (sink.h) and send them to rank 0, which writes every block in input order, messages
 * included, then the one summary line. Output and exit status are those of one process.
 * Tests: tests/cli_classify.sh, tests/cli_mpi.sh, tests/cli_gpu_multi.sh.
 */
#define _POSIX_C_SOURCE 200809L /* fileno, clock_gettime */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "classify.h"



static void usage(FILE *f) {
    fprintf(f,
            "usage: swin classify [options] IMAGE... | DIR...\n"
            "       swin classify [options] --list FILE\n"
            "       mpirun -np N swin classify [options] --list FILE --out FILE\n"
            "Print the top-K classes of each image. Directories are walked recursively in sorted order\n"
            "(.jpg .jpeg .png .bmp .gif .tga .ppm .pgm .pnm, any case; hidden entries skipped).\n"
            "  -m, --model PATH        model directory (config.json + model.safetensors) or a\n"
            "                          .safetensors file with --arch (default: %s)\n"
            "  -a, --arch NAME         architecture preset, needed when --model is a bare .safetensors\n"
            "  -k, --top K             classes per image (default 5, at most the number of classes)\n"
            "      --json              one JSON object per image\n"
            "  -o, --out FILE          write the results to FILE instead of stdout ('-': stdout)\n"
            "  -b, --batch N           images per forward pass (default 8)\n"
            "      --preprocess STYLE  timm or hf (default: the model's own)\n"
            "  -d, --device DEV        cpu, cuda, cuda:N, several GPUs cuda:N,M,... or every GPU\n"
            "                          cuda:all (default cpu); under MPI see the README\n"
            "  -p, --precision P       fp32, tf32, fp16, bf16 or fp8 (default fp32 on cpu, fp16 on cuda;\n"
            "                          cpu: fp32, or fp8 emulated; README \"FP8\")\n"
            "      --scales FILE       fp8: the input scales (`swin calibrate`; default: calibrated on\n"
            "                          random images, with a warning)\n"
            "  -l, --list FILE         read image paths from FILE, one per line ('-': stdin)\n"
            "  -t, --threads N         decoder threads (default: the number of cores; under MPI\n"
            "                          shared among the ranks of a node)\n"
            "      --preprocess-device D  gpu or cpu: where images are resized and normalised\n"
            "                          (default gpu with --device cuda; the same values either way)\n"
            "      --decoder D         JPEG decoding, every choice but nvjpeg exactly as Pillow:\n"
            "                          auto (default): gpu with --device cuda and GPU preprocessing,\n"
            "                          else cpu; cpu: libjpeg-turbo on the decoder threads; gpu:\n"
            "                          baseline JPEGs on the GPU (same pixels as libjpeg), the rest by\n"
            "                          libjpeg (SWIN_JPEG_GPU_SHARE=percent offered to the GPU, default\n"
            "                          100; SWIN_JPEG_GPU_DECODERS=N batches at once, default 2);\n"
            "                          nvjpeg: nvJPEG (pixels differ slightly; one GPU:\n"
            "                          SWIN_NVJPEG_STATES=N decoders at once, default 1)\n"
            "      --timing            print the time per stage on stderr at the end\n"
            CLI_PILLOW_HELP
            CLI_IMG_SIZE_HELP
            "  -h, --help              this help\n"
            "Started by mpirun or srun, the processes share the images out and rank 0 writes every\n"
            "result in input order (%s).\n"
            "Exit status: 0 all images classified, 1 some image failed, 2 usage error.\n",
            cli_default_model(),
#ifdef SWIN_HAVE_MPI
            "this swin was built with MPI"
#else
            "this swin was built without MPI: it refuses to run as one of several"
#endif
    );
}

/* 0: run; 1: help asked for; EXIT_USAGE: bad flags (message printed). Positional args -> *inputs. */
static int parse(int argc, char **argv, classify_args *a, const char **inputs, int *n_inputs) {
    memset(a, 0, sizeof *a);
    a->decoder = SWIN_DECODER_AUTO;
    a->top = 5;
    a->batch = 8;
    cli_parse_devices(CMD, "cpu", &a->dev);
    a->device_spec = "cpu";
    a->precision = (swin_precision)-1;
    *n_inputs = 0;
    for (int i = 1, r; i < argc; i++) {
        const char *f = argv[i], *v;
#define VALUE() do { if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE; } while (0)
        if (cli_flag(f, "-h", "--help")) return 1;
        else if (!strcmp(f, "--json")) a->json = 1;
        else if (!strcmp(f, "--timing")) a->timing = 1;
        else if ((r = cli_image_flag(CMD, argc, argv, &i, &a->img))) {
            if (r != 1) return r;
        } else if (!strcmp(f, "--decoder")) {
            VALUE();
            if (swin_decoder_parse(v, &a->decoder) != SWIN_OK)
                return cli_usage_error(CMD, "bad --decoder '%s' (expected auto, cpu, gpu or nvjpeg)", v);
        } else if (!strcmp(f, "--preprocess-device")) {
            VALUE();
            if (swin_preprocess_device_parse(v, &a->pre_device) != SWIN_OK)
                return cli_usage_error(CMD, "bad --preprocess-device '%s' (expected gpu or cpu)", v);
        }
        else if (cli_flag(f, "-m", "--model")) { VALUE(); a->model = v; }
        else if (cli_flag(f, "-a", "--arch")) { VALUE(); a->arch = v; }
        else if (cli_flag(f, "-l", "--list")) { VALUE(); a->list = v; }
        else if (cli_flag(f, "-o", "--out")) { VALUE(); a->out = v; }
        else if (cli_flag(f, "-k", "--top")) {
            VALUE();
            if (cli_parse_int(v, 1, 1000000, &a->top))
                return cli_usage_error(CMD, "bad --top '%s' (expected a positive integer)", v);
        } else if (cli_flag(f, "-b", "--batch")) {
            VALUE();
            if (cli_parse_int(v, 1, 4096, &a->batch))
                return cli_usage_error(CMD, "bad --batch '%s' (expected an integer from 1 to 4096)", v);
        } else if (cli_flag(f, "-d", "--device")) {
            VALUE();
            if (cli_parse_devices(CMD, v, &a->dev)) return EXIT_USAGE;
            a->device_spec = v;
        } else if (cli_flag(f, "-p", "--precision")) {
            VALUE();
            if (swin_precision_parse(v, &a->precision) != SWIN_OK)
                return cli_usage_error(CMD, "bad --precision '%s' (expected fp32, tf32, fp16, bf16 or fp8)", v);
        } else if (!strcmp(f, "--scales")) {
            VALUE();
            a->scales = v;
        } else if (!strcmp(f, "--")) {
            while (++i < argc) inputs[(*n_inputs)++] = argv[i];
        } else if (f[0] == '-' && f[1]) {
            return cli_usage_error(CMD, "unknown option '%s' (try swin classify --help)", f);
        } else {
            inputs[(*n_inputs)++] = f;
        }
#undef VALUE
    }
    if ((int)a->precision < 0) a->precision = a->dev.device == SWIN_DEVICE_CUDA ? SWIN_FP16 : SWIN_FP32;
    if (a->scales && a->precision != SWIN_FP8)
        return cli_usage_error(CMD, "--scales is for --precision fp8 (the precision is %s)", swin_precision_str(a->precision));
    if (!a->model) a->model = cli_default_model();
    if (a->list && *n_inputs) return cli_usage_error(CMD, "give images either as arguments or with --list, not both");
    if (!a->list && !*n_inputs) return cli_usage_error(CMD, "no images given (try swin classify --help)");
    if (a->pre_device == SWIN_PRE_DEVICE_GPU && a->dev.device != SWIN_DEVICE_CUDA)
        return cli_usage_error(CMD, "--preprocess-device gpu needs --device cuda");
    if ((a->decoder == SWIN_DECODER_GPU || a->decoder == SWIN_DECODER_NVJPEG) &&
        (a->dev.device != SWIN_DEVICE_CUDA || a->pre_device == SWIN_PRE_DEVICE_CPU))
        return cli_usage_error(CMD, "--decoder %s needs --device cuda and GPU preprocessing", swin_decoder_str(a->decoder));
    return 0;
}

/* ---- output */
typedef struct { int index; double prob; } scored;

/* softmax over logits, then the k best (descending; ties by index). e: room for n doubles, each
 * class's exp computed once into it; a class whose exp is below the k-th best's cannot enter
 * (p = e / sum does not decrease with e), so only the few that can are divided: the same
 * results as exp twice per class and a division each, at half the cost (14 -> 7 us an image of
 * 1000 classes on an x86 core: this runs on the pipeline's calling thread, once per image) */
static void top_k(const float *logits, int n, int k, scored *out, double *e) {
    double mx = logits[0], sum = 0;
    for (int i = 1; i < n; i++) if (logits[i] > mx) mx = logits[i];
    for (int i = 0; i < n; i++) sum += e[i] = exp((double)logits[i] - mx);
    for (int j = 0; j < k; j++) out[j] = (scored){-1, -1.0};
    double ek = -1.0;   /* the exp of out[k - 1]'s class (-1 while that place is empty) */
    for (int i = 0; i < n; i++) {
        if (e[i] < ek) continue;   /* then p <= out[k - 1].prob */
        double p = e[i] / sum;
        if (p <= out[k - 1].prob) continue;
        int j = k - 1;
        while (j > 0 && p > out[j - 1].prob) { out[j] = out[j - 1]; j--; }
        out[j] = (scored){i, p};
        ek = out[k - 1].index < 0 ? -1.0 : e[out[k - 1].index];
    }
}

/* one JSON line (o, then freed) as a result line of the sink */
static void emit_json(cli_sink *s, cJSON *o) {
    char *str = cJSON_PrintUnformatted(o);
    if (str) {
        sink_printf(s, "%s\n", str);
        sink_end_line(s);
    }
    free(str);
    cJSON_Delete(o);
}

static void print_result(cli_sink *s, const swin_model *m, const char *path, const scored *top, int k, int json) {
    if (!json) {
        sink_printf(s, "%s:", path);
        for (int j = 0; j < k; j++) sink_printf(s, "%s %s (%.3f)", j ? "," : "", swin_model_label(m, top[j].index), top[j].prob);
        sink_printf(s, "\n");
        sink_end_line(s);
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
    emit_json(s, o);
}

static int g_progress; /* a progress line is on stderr */

static void clear_progress(void) {
    if (g_progress) { fprintf(stderr, "\r\033[K"); g_progress = 0; }
}

static void print_error(cli_sink *s, const char *path, const char *msg, int json) {
    sink_error(s, msg);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", path);
        cJSON_AddStringToObject(o, "error", msg);
        emit_json(s, o);
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
    cli_sink *sink;
    int nc, k, n, progress;
    scored *top;
    double *exps;   /* [nc]: top_k's scratch */
    double t0, last_progress;
} run_ctx;

static void on_result(void *ctx, const swin_pipeline_result *r) {
    run_ctx *c = ctx;
    if (r->error) {
        print_error(c->sink, r->path, r->error, c->a->json);
    } else {
        top_k(r->logits, c->nc, c->k, c->top, c->exps);
        clear_progress();
        print_result(c->sink, c->model, r->path, c->top, c->k, c->a->json);
    }
    int done = r->index + 1;
    double t = now_s();
    if (c->progress && (t - c->last_progress > 0.25 || done == c->n)) {
        fflush(c->sink->out);
        double rate = done / (t - c->t0 > 1e-9 ? t - c->t0 : 1e-9);
        fprintf(stderr, "\rclassify: %d/%d images, %.0f img/s, ETA %.0f s\033[K", done, c->n, rate,
                (c->n - done) / rate);
        g_progress = 1;
        c->last_progress = t;
    }
}

static void print_timing(const swin_pipeline_stats *st, const swin_pipeline_stats *per, const int *gpus, int n_gpus) {
    fprintf(stderr,
            "swin %s: time per stage (ms; decoder stages summed over %d threads, %s slots, %d JPEGs from the GPU "
            "decoder to the CPU):\n"
            "  read %.1f  decode %.1f  cpu-preprocess %.1f\n"
            "  wait-for-decode %.1f  gpu-decode %.1f  upload %.1f  gpu-preprocess %.1f  forward %.1f  enqueue %.1f"
            "  forward-wait %.1f  output %.1f  wall %.1f  warm-up %.1f\n",
            CMD, st->threads, st->pinned ? "page-locked" : "pageable", st->cpu_fallback, st->read_ms, st->decode_ms,
            st->cpu_preprocess_ms, st->wait_ms, st->gpu_decode_ms, st->upload_ms, st->gpu_preprocess_ms,
            st->forward_ms, st->enqueue_ms, st->forward_wait_ms, st->output_ms, st->wall_ms, st->warmup_ms);
    if (st->nvjpeg_hw_images || st->nvjpeg_sw_images)
        fprintf(stderr, "  nvJPEG (%d decoders, summed; %d images on the JPEG engines, %d on the default backend; "
                "%d batched set-ups, %d padding images): nvjpeg-parse %.1f  nvjpeg-engines %.1f  nvjpeg-default %.1f  "
                "nvjpeg-sync %.1f\n", st->nvjpeg_decoders, st->nvjpeg_hw_images, st->nvjpeg_sw_images, st->nvjpeg_hw_setups,
                st->nvjpeg_hw_padding, st->nvjpeg_parse_ms, st->nvjpeg_hw_ms, st->nvjpeg_sw_ms, st->nvjpeg_sync_ms);
    if (st->gpu_jpeg_images || st->gpu_jpeg_refused)
        fprintf(stderr, "  GPU JPEG decoding (%d decoders, summed; %d images decoded on the GPU, %d left to libjpeg): "
                "gpu-jpeg-stage %.1f  gpu-jpeg-gpu %.1f\n", st->nvjpeg_decoders, st->gpu_jpeg_images,
                st->gpu_jpeg_refused, st->gpu_jpeg_stage_ms, st->gpu_jpeg_gpu_ms);
    for (int g = 0; per && n_gpus > 1 && g < n_gpus; g++)
        fprintf(stderr, "  cuda:%d: %d images in %d batches, wait-for-decode %.1f  gpu-decode %.1f  upload %.1f  "
                "gpu-preprocess %.1f  forward %.1f  enqueue %.1f  forward-wait %.1f\n", gpus[g], per[g].images,
                per[g].batches, per[g].wait_ms, per[g].gpu_decode_ms, per[g].upload_ms, per[g].gpu_preprocess_ms,
                per[g].forward_ms, per[g].enqueue_ms, per[g].forward_wait_ms);
}

static int run(const classify_args *a, classify_job *j) {
    cli_dist *d = j->d;
    const swin_config *cfg = swin_model_config(j->model);
    swin_preprocess_params pp = cli_image_params(&a->img, cfg);
    int lo, hi;
    job_shard(j, &lo, &hi);
    cli_sink sink = {CMD, d->rank == 0 ? j->out : NULL, clear_progress, NULL, 0, 0, NULL, 0, 0, 0};
    if (d->rank == 0 && d->size > 1) setvbuf(j->out, NULL, _IOLBF, 0);   /* whole lines, should a rank die */
    run_ctx c = {a, j->model, &sink, cfg->num_classes, 0, hi - lo, 0, NULL, NULL, now_s(), 0};
    c.k = a->top < c.nc ? a->top : c.nc;
    c.top = malloc((size_t)c.k * sizeof *c.top);
    c.exps = malloc((size_t)c.nc * sizeof *c.exps);
    c.progress = d->rank == 0 && isatty(fileno(stderr)) && hi - lo > j->batch;
    swin_pipeline_options po = swin_pipeline_options_default();
    po.batch = j->batch;
    po.threads = a->img.threads;
    if (!po.threads && d->local_size > 1) {   /* the node's cores shared among its ranks */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        po.threads = cores / d->local_size > 1 ? (int)(cores / d->local_size) : 1;
    }
    po.where = a->pre_device;
    po.decoder = a->decoder;
    swin_pipeline_stats st, per[CLI_MAX_GPUS];
    memset(&st, 0, sizeof st);
    double t0 = now_s();
    int broken = 1, lost = 0, rc = 0;
    if (!c.top || !c.exps) cli_usage_error(CMD, "out of memory");
    else if (swin_pipeline_run_multi(j->sess, j->n_sess, &pp, (const char *const *)j->paths.v + lo, hi - lo, &po,
                                     on_result, &c, &st, per) != SWIN_OK) {
        clear_progress();
        cli_usage_error(CMD, "%s", swin_last_error());
    } else {
        clear_progress();
        broken = 0;
    }
    if ((lost = sink.oom)) cli_usage_error(CMD, "out of memory: some results are missing from the output");
    if (d->size > 1) job_gather(j, &sink, &st, &lost, &broken);
    if (d->rank == 0 && broken) rc = EXIT_USAGE;
    else if (d->rank == 0) {
        fflush(j->out);
        if (j->out != stdout) {
            int bad = ferror(j->out);
            bad |= fclose(j->out) != 0;
            j->out = NULL;
            if (bad) {
                fprintf(stderr, "swin %s: %s: cannot write the results (%s)\n", CMD, a->out, strerror(errno));
                lost = 1;
            }
        }
        if (d->size > 1) st.wall_ms = (now_s() - t0) * 1e3;   /* the job's, gathering included */
        double s = st.wall_ms / 1e3;
        char where[64] = "";
        if (d->size > 1) snprintf(where, sizeof where, ", %d ranks", d->size);
        else if (j->n_sess > 1) snprintf(where, sizeof where, ", %d GPUs", j->n_sess);
        char warm[64] = "";   /* under MPI the job's wall time includes every rank's warm-up */
        if (d->size == 1 && st.warmup_ms > 0) snprintf(warm, sizeof warm, " (after a %.2f s warm-up)", st.warmup_ms / 1e3);
        fprintf(stderr, "swin %s: %d images, %d failed, %.2f s, %.1f img/s%s%s\n", CMD, st.images, st.failed, s,
                s > 0 ? st.images / s : 0.0, where, warm);
        if (a->timing) print_timing(&st, d->size > 1 ? NULL : per, j->gpus, j->n_sess);
        rc = st.failed || j->inputs_failed || lost ? EXIT_FAILED : 0;
    }
    sink_free(&sink);
    free(c.top);
    free(c.exps);
    return cli_dist_max(d, d->rank == 0 ? rc : 0);   /* every rank exits as rank 0 does */
}

static int classify(int argc, char **argv, cli_dist *d) {
    classify_args a;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    int n_inputs = 0;
    if (!inputs) return cli_usage_error(CMD, "out of memory");
    int r = parse(argc, argv, &a, inputs, &n_inputs);   /* alike on every rank: rank 0 speaks */
    if (r == 1 && d->rank == 0) usage(stdout);
    if (r) { free(inputs); return r == 1 ? 0 : r; }
    cli_set_quiet(0);
    if (d->rank > 0) cli_set_origin(d->origin);
    classify_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    r = job_start(&a, inputs, n_inputs, &j);
    free(inputs);
    if (!r) r = run(&a, &j);
    job_free(&j);
    return r;
}

int cmd_classify(int argc, char **argv) {
    cli_dist d;
    int r = cli_dist_init(CMD, &d);
    if (r) return r;
    if (d.rank > 0) cli_set_quiet(1);
    r = classify(argc, argv, &d);
    cli_dist_finish(&d);
    return r;
}
