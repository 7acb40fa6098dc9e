/* cmd_calibrate.c - `swin calibrate`: the FP8 scales file of a model (README "FP8").
 *
 *   swin calibrate --model PATH (--images PATH | --random N) --out scales.json [--device cpu|cuda[:N]]
 *                  [--precision P] [--batch B] [--margin X]
 *
 * Runs images through a calibrating session (options.calibrate: every FP8 GEMM's largest |input|
 * and every qkv output channel's largest |value| are recorded, in fp32 on the CPU) and writes
 * swin_session_save_scales' file. --images goes through
 * the pipeline `swin classify` uses (the same decoding and preprocessing; a bad file is reported
 * in its place and the others go on); --random N takes the first N of the random images the
 * default calibration of an fp8 session uses (so --random 8 on the CPU writes the scales such a
 * session would pick itself). One summary line on stdout. Exit 0 done, 1 written but some image
 * failed, 2 usage or bad input (no image, a model that cannot be loaded).
 * Test: tests/cli_fp8.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8_session.h"
#include "paths.h"
#include "pipeline.h"

#define CMD "calibrate"

typedef struct {
    const char *model, *arch, *images, *out;
    int random, batch;
    cli_image_flags img;   /* --threads, --preprocess, --pillow, --img-size */
    float margin;
    swin_session_options so;
} calibrate_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: swin calibrate --model PATH (--images PATH | --random N) --out FILE [options]\n"
            "Run images through the model recording the largest |value| entering every FP8 GEMM (the\n"
            "linear layers of the blocks and merges) and, per channel, leaving every qkv (q, k and v\n"
            "are stored in E4M3 too), and write the scales file that `--precision fp8 --scales FILE`\n"
            "reads: scale = margin * amax / 448.\n"
            "  -m, --model PATH        model directory (config.json + model.safetensors) or .safetensors\n"
            "  -a, --arch NAME         architecture preset, needed when --model is a bare .safetensors\n"
            "  -i, --images PATH       an image or a directory of images (walked as classify does)\n"
            "      --random N          N random images instead (8-bit noise, normalised as the model's)\n"
            "  -o, --out FILE          the scales file to write (JSON; replaced only when complete)\n"
            "  -d, --device DEV        cpu, cuda or cuda:N (default cpu)\n"
            "  -p, --precision P       of the calibrating forward: fp32 (default; the CPU's only), tf32,\n"
            "                          fp16 or bf16 on cuda\n"
            "  -b, --batch N           images per forward (default 8)\n"
            "      --margin X          headroom over the largest value seen (default 2: one binade)\n"
            "  -t, --threads N         decoder threads (default: the number of cores)\n"
            "      --preprocess STYLE  timm or hf (default: the model's own)\n"
            CLI_PILLOW_HELP
            CLI_IMG_SIZE_HELP
            "  -h, --help              this help\n"
            "Exit status: 0 written, 1 written but some image failed, 2 usage or bad input.\n");
}

/* 0: run; 1: help shown; EXIT_USAGE: bad flags (message printed) */
static int parse(int argc, char **argv, calibrate_args *a) {
    memset(a, 0, sizeof *a);
    a->so = swin_session_options_default();
    a->so.calibrate = 1;
    a->batch = 8;
    a->margin = 2.0f;
    for (int i = 1, r; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
#define VALUE() if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE
        if (cli_flag(f, "-h", "--help")) { usage(stdout); return 1; }
        else if (cli_flag(f, "-m", "--model")) { VALUE(); a->model = v; }
        else if (cli_flag(f, "-a", "--arch")) { VALUE(); a->arch = v; }
        else if (cli_flag(f, "-i", "--images")) { VALUE(); a->images = v; }
        else if (cli_flag(f, "-o", "--out")) { VALUE(); a->out = v; }
        else if (!strcmp(f, "--random")) {
            VALUE();
            if (cli_parse_int(v, 1, 1000000, &a->random))
                return cli_usage_error(CMD, "bad --random '%s' (expected a number of images from 1 to 1000000)", v);
        } else if (cli_flag(f, "-d", "--device")) {
            VALUE();
            if (cli_parse_device(v, &a->so.device, &a->so.device_index))
                return cli_usage_error(CMD, "bad --device '%s' (expected cpu, cuda or cuda:N)", v);
        } else if (cli_flag(f, "-p", "--precision")) {
            VALUE();
            if (swin_precision_parse(v, &a->so.precision) != SWIN_OK) return cli_usage_error(CMD, "%s", swin_last_error());
            if (a->so.precision == SWIN_FP8)
                return cli_usage_error(CMD, "--precision fp8: calibration records in higher precision (fp32, or "
                                       "tf32/fp16/bf16 on cuda); the scales it writes are for fp8");
        } else if (cli_flag(f, "-b", "--batch")) {
            VALUE();
            if (cli_parse_int(v, 1, 4096, &a->batch))
                return cli_usage_error(CMD, "bad --batch '%s' (expected an integer from 1 to 4096)", v);
        } else if (!strcmp(f, "--margin")) {
            VALUE();
            if (cli_parse_float(v, &a->margin) || !(a->margin > 0))
                return cli_usage_error(CMD, "bad --margin '%s' (expected a number > 0, e.g. 2)", v);
        } else if ((r = cli_image_flag(CMD, argc, argv, &i, &a->img))) {
            if (r != 1) return r;
        } else return cli_usage_error(CMD, "unknown option '%s' (try swin calibrate --help)", f);
#undef VALUE
    }
    if (!a->model) return cli_usage_error(CMD, "--model PATH is required (try swin calibrate --help)");
    if (!a->out) return cli_usage_error(CMD, "--out FILE is required: where the scales go (try swin calibrate --help)");
    if (!a->images == !a->random)
        return cli_usage_error(CMD, "give the calibration images: --images PATH or --random N (one of them)");
    return 0;
}

// ---- the images

typedef struct {
    int failed;
} run_ctx;

static void on_result(void *ctx, const swin_pipeline_result *r) {
    run_ctx *c = ctx;
    if (!r->error) return;
    fprintf(stderr, "swin %s: %s\n", CMD, r->error);
    c->failed++;
}

/* --images: the files through the pipeline, bad ones reported; 0, 1 (some failed) or EXIT_USAGE */
static int run_images(const calibrate_args *a, const swin_model *m, swin_session *s, const path_list *paths) {
    swin_preprocess_params pp = cli_image_params(&a->img, swin_model_config(m));
    swin_pipeline_options po = swin_pipeline_options_default();
    po.batch = swin_session_get_options(s)->max_batch;
    po.threads = a->img.threads;
    po.warmup = 0;   /* a warm-up picture would be recorded like any image */
    run_ctx c = {0};
    swin_pipeline_stats st;
    if (swin_pipeline_run(s, &pp, (const char *const *)paths->v, paths->n, &po, on_result, &c, &st) != SWIN_OK)
        return cli_usage_error(CMD, "%s", swin_last_error());
    return c.failed ? EXIT_FAILED : 0;
}

/* --random N: the default calibration's random images, in batches */
static int run_random(const calibrate_args *a, const swin_model *m, swin_session *s) {
    const swin_config *c = swin_model_config(m);
    int B = swin_session_get_options(s)->max_batch;
    float *x = malloc(sizeof(float) * 3 * c->img_h * c->img_w * (size_t)B);
    float *logits = malloc(sizeof(float) * (size_t)c->num_classes * B);
    int rc = x && logits ? 0 : cli_usage_error(CMD, "out of memory");
    for (int i = 0; !rc && i < a->random; i += B) {
        int b = a->random - i < B ? a->random - i : B;
        swin_fp8_random_images(c, i, b, x);
        if (swin_forward(s, x, b, logits) != SWIN_OK) rc = cli_usage_error(CMD, "%s", swin_last_error());
    }
    free(x);
    free(logits);
    return rc;
}

int cmd_calibrate(int argc, char **argv) {
    calibrate_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;

    path_list paths = {0};
    int dir_failed = 0;
    if (a.images) {
        const char *in[] = {a.images};
        if ((rc = paths_collect(CMD, NULL, in, 1, &paths, &dir_failed))) return rc;
        if (paths.n == 0) {   /* paths_collect said why when a directory had none */
            if (!dir_failed) cli_usage_error(CMD, "%s: no images to calibrate on", a.images);
            paths_free(&paths);
            return EXIT_USAGE;
        }
    }
    swin_model *model = NULL;
    swin_session *sess = NULL;
    swin_load_options lo = swin_load_options_default();
    lo.arch = a.arch;
    lo.img_h = a.img.img_h;
    lo.img_w = a.img.img_w;
    int n = a.images ? paths.n : a.random;
    a.so.max_batch = a.batch < n ? a.batch : n;
    if (swin_model_load(a.model, &lo, &model) != SWIN_OK || swin_session_create(model, &a.so, &sess) != SWIN_OK) {
        rc = cli_usage_error(CMD, "%s", swin_last_error());
        goto done;
    }
    rc = a.images ? run_images(&a, model, sess, &paths) : run_random(&a, model, sess);
    if (rc == EXIT_USAGE) goto done;
    int images = swin_session_calibrated_images(sess);
    if (images == 0) {
        rc = cli_usage_error(CMD, "%s: no image could be read: nothing to calibrate on", a.images);
        goto done;
    }
    char source[1100];
    if (a.images) snprintf(source, sizeof source, "images %s", a.images);
    else snprintf(source, sizeof source, "random");
    if (swin_session_save_scales(sess, a.out, a.margin, source) != SWIN_OK) {
        rc = cli_usage_error(CMD, "%s", swin_last_error());
        goto done;
    }
    printf("calibrated %d FP8 sites on %d images (%d failed), margin %g: %s\n", swin_fp8_sites(model, NULL), images,
           n - images, (double)a.margin, a.out);
done:
    swin_session_free(sess);
    swin_model_free(model);
    paths_free(&paths);
    return rc;
}
