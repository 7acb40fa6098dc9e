/* cmd_preprocess.c - `swin preprocess`: write the model input for images to a .safetensors file.
 *
 *   swin preprocess [--model PATH] [--arch NAME] --out FILE.safetensors [--preprocess timm|hf]
 *                   [--pillow VERSION] IMAGE...
 *
 * Writes one F32 tensor `input` [N, 3, H, W] with the images in the order given, preprocessed as
 * the model's config says (or as --preprocess overrides). Useful to compare with timm /
 * transformers in Python, or to feed `swin verify`. Any unreadable image fails the whole
 * command (exit 1) and no file is written (an existing one is left as it was). The tensor is
 * streamed to the file: one image in memory at a time. Test: tests/cli_classify.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "preprocess.h"
#include "safetensors.h"

#define CMD "preprocess"

static void usage(FILE *f) {
    fprintf(f,
            "usage: swin preprocess [options] --out FILE.safetensors IMAGE...\n"
            "Write the model's input for the images as tensor 'input', F32 [N, 3, H, W].\n"
            "  -m, --model PATH        model directory or .safetensors file whose config gives the\n"
            "                          size, interpolation, crop and mean/std (default: %s)\n"
            "  -a, --arch NAME         architecture preset, needed when --model is a bare .safetensors\n"
            "  -o, --out FILE          output .safetensors file (required)\n"
            "      --preprocess STYLE  timm (resize shorter side, center crop) or hf (resize to S x S);\n"
            "                          default: the model's own\n"
            CLI_PILLOW_HELP
            CLI_IMG_SIZE_HELP
            "  -h, --help              this help\n",
            cli_default_model());
}

int cmd_preprocess(int argc, char **argv) {
    const char *model_path = NULL, *arch = NULL, *out = NULL, *style = NULL;
    const char **images = calloc((size_t)argc, sizeof *images);
    int n = 0, rc = EXIT_USAGE, img_h = 0, img_w = 0, pillow = 0;
    if (!images) return cli_usage_error(CMD, "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (cli_flag(f, "-h", "--help")) { usage(stdout); free(images); return 0; }
        else if (cli_flag(f, "-m", "--model")) { if (!(model_path = cli_value(CMD, argc, argv, &i))) goto done; }
        else if (cli_flag(f, "-a", "--arch")) { if (!(arch = cli_value(CMD, argc, argv, &i))) goto done; }
        else if (cli_flag(f, "-o", "--out")) { if (!(out = cli_value(CMD, argc, argv, &i))) goto done; }
        else if (!strcmp(f, "--preprocess")) { if (!(style = cli_value(CMD, argc, argv, &i))) goto done; }
        else if (!strcmp(f, "--pillow")) {
            const char *v = cli_value(CMD, argc, argv, &i);
            if (!v) goto done;
            if (swin_pillow_parse(v, &pillow) != SWIN_OK) {
                rc = cli_usage_error(CMD, "bad --pillow '%s' (expected a Pillow version such as 12 or 12.3.0)", v);
                goto done;
            }
        }
        else if (!strcmp(f, "--img-size")) {
            const char *v = cli_value(CMD, argc, argv, &i);
            if (!v) goto done;
            if (cli_parse_size(v, &img_h, &img_w)) {
                rc = cli_usage_error(CMD, "bad --img-size '%s' (expected S or HxW, 1 to 16384 each)", v);
                goto done;
            }
        }
        else if (f[0] == '-' && f[1]) { rc = cli_usage_error(CMD, "unknown option '%s' (try swin preprocess --help)", f); goto done; }
        else images[n++] = f;
    }
    if (!out) { rc = cli_usage_error(CMD, "--out FILE.safetensors is required"); goto done; }
    if (n == 0) { rc = cli_usage_error(CMD, "no images given"); goto done; }
    swin_preprocess_style st_override = SWIN_PRE_TIMM;
    if (style && swin_preprocess_style_parse(style, &st_override) != SWIN_OK) {
        rc = cli_usage_error(CMD, "bad --preprocess '%s' (expected timm or hf)", style);
        goto done;
    }
    if (!model_path) model_path = cli_default_model();

    swin_model *model = NULL;
    swin_load_options lo = swin_load_options_default();
    lo.arch = arch;
    lo.img_h = img_h;
    lo.img_w = img_w;
    if (swin_model_load(model_path, &lo, &model) != SWIN_OK) {
        rc = cli_usage_error(CMD, "%s", swin_last_error());
        goto done;
    }
    swin_preprocess_params pp = swin_preprocess_params_from_config(swin_model_config(model));
    swin_model_free(model);
    if (style) pp.style = st_override;
    pp.pillow = pillow;

    size_t per = swin_preprocess_floats(&pp);
    int oh = swin_preprocess_height(&pp), ow = swin_preprocess_width(&pp);
    /* streamed: one image's tensor in memory at a time, whatever N is */
    float *x = malloc(per * sizeof *x);
    if (!x) { rc = cli_usage_error(CMD, "out of memory for an image of %d x %d", oh, ow); goto done; }
    swin_st_tensor t;
    memset(&t, 0, sizeof t);
    t.name = "input";
    t.dtype = SWIN_ST_F32;
    t.rank = 4;
    t.shape[0] = n;
    t.shape[1] = 3;
    t.shape[2] = oh;
    t.shape[3] = ow;
    swin_st_writer *w = NULL;
    rc = 0;
    if (swin_st_write_begin(out, &t, 1, &w) != SWIN_OK) {
        fprintf(stderr, "swin %s: %s\n", CMD, swin_last_error());
        rc = EXIT_FAILED;
    }
    /* after a bad image every image is still read, so that each bad one is reported */
    for (int i = 0; w && i < n; i++) {
        if (swin_preprocess_file(&pp, images[i], x) != SWIN_OK) {
            fprintf(stderr, "swin %s: %s\n", CMD, swin_last_error());
            rc = EXIT_FAILED;
        } else if (rc == 0 && swin_st_write_data(w, x, per * sizeof *x) != SWIN_OK) {
            fprintf(stderr, "swin %s: %s\n", CMD, swin_last_error());
            rc = EXIT_FAILED;
        }
    }
    if (rc == 0) {
        swin_status ws = swin_st_write_end(w);
        w = NULL;
        if (ws != SWIN_OK) {
            fprintf(stderr, "swin %s: %s\n", CMD, swin_last_error());
            rc = EXIT_FAILED;
        } else {
            printf("%s: input [%d, 3, %d, %d] (%s, %s, Pillow %d)\n", out, n, oh, ow,
                   swin_preprocess_style_str(pp.style),
                   pp.interp == SWIN_INTERP_BICUBIC ? "bicubic" : pp.interp == SWIN_INTERP_BILINEAR ? "bilinear" : "nearest",
                   pp.pillow ? pp.pillow : SWIN_PILLOW_DEFAULT);
        }
    }
    if (rc != 0) fprintf(stderr, "swin %s: nothing written to %s\n", CMD, out);
    swin_st_write_abort(w); /* after a failure: the old file stays, the temporary one goes */
    free(x);
done:
    free(images);
    return rc;
}
