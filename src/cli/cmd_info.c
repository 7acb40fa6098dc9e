/* cmd_info.c - `swin info`: describe a model or an architecture preset.
 *
 *   swin info [--model PATH] [--arch NAME] [--device cpu|cuda[:N]] [--batch N] [--precision P] [--json]
 *
 * Prints the variant, input geometry, per-stage resolution / dim / depth / heads / window / shift
 * (after clamping), parameters (timm's count) and GFLOPs at the model's resolution. --arch alone
 * describes a preset without loading or generating weights. With --device cuda the session memory
 * plan follows (swin_session_describe). Test: tests/cli_info.sh, tests/cli_malformed.sh.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "model.h"

#define CMD "info"

typedef struct {
    const char *model, *arch;
    swin_device device;
    int device_index, batch, json;
    int img_h, img_w;   /* --img-size, 0: the config's */
    swin_precision precision;
} info_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: swin info [options]\n"
            "Describe a model: geometry per stage, parameters, GFLOPs, and with --device cuda the\n"
            "session memory plan.\n"
            "  -m, --model PATH        model directory (config.json + model.safetensors) or a\n"
            "                          .safetensors file with --arch (default: %s)\n"
            "  -a, --arch NAME         architecture preset; alone, describes the preset\n"
            "  -d, --device DEV        cpu, cuda or cuda:N (default cpu: no session plan)\n"
            "  -b, --batch N           max batch of the session plan (default 1)\n"
            "  -p, --precision P       fp32, tf32, fp16, bf16 or fp8 for the session plan (default\n"
            "                          fp16 on cuda)\n"
            CLI_IMG_SIZE_HELP
            "      --json              one JSON object on stdout\n"
            "  -h, --help              this help\n"
            "presets:\n",
            cli_default_model());
    for (int i = 0; i < swin_preset_count(); i++) fprintf(f, "  %s\n", swin_preset_at(i)->name);
}

/* 0: run; 1: help shown; EXIT_USAGE: bad flags (message printed) */
static int parse(int argc, char **argv, info_args *a) {
    memset(a, 0, sizeof *a);
    a->device = SWIN_DEVICE_CPU;
    a->batch = 1;
    a->precision = (swin_precision)-1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (cli_flag(f, "-h", "--help")) { usage(stdout); return 1; }
        else if (!strcmp(f, "--json")) a->json = 1;
        else if (cli_flag(f, "-m", "--model")) {
            if (!(a->model = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE;
        } else if (cli_flag(f, "-a", "--arch")) {
            if (!(a->arch = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE;
        } else if (cli_flag(f, "-d", "--device")) {
            if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE;
            if (cli_parse_device(v, &a->device, &a->device_index))
                return cli_usage_error(CMD, "bad --device '%s' (expected cpu, cuda or cuda:N)", v);
        } else if (cli_flag(f, "-b", "--batch")) {
            if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE;
            if (cli_parse_int(v, 1, 65536, &a->batch))
                return cli_usage_error(CMD, "bad --batch '%s' (expected an integer from 1 to 65536)", v);
        } else if (cli_flag(f, "-p", "--precision")) {
            if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE;
            if (swin_precision_parse(v, &a->precision) != SWIN_OK)
                return cli_usage_error(CMD, "%s", swin_last_error());
        } else if (!strcmp(f, "--img-size")) {
            if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE;
            if (cli_parse_size(v, &a->img_h, &a->img_w))
                return cli_usage_error(CMD, "bad --img-size '%s' (expected S or HxW, 1 to 16384 each)", v);
        } else {
            return cli_usage_error(CMD, "unknown option '%s' (try swin info --help)", f);
        }
    }
    if ((int)a->precision < 0) a->precision = a->device == SWIN_DEVICE_CUDA ? SWIN_FP16 : SWIN_FP32;
    if (!a->model && !a->arch) a->model = cli_default_model();
    return 0;
}

static const char *interp_str(swin_interp i) {
    return i == SWIN_INTERP_NEAREST ? "nearest" : i == SWIN_INTERP_BILINEAR ? "bilinear" : "bicubic";
}

/* per-stage geometry: stage fields and block 1's shift (the shifted block), via swin_model_plan */
typedef struct {
    int res_h, res_w, dim, depth, heads, head_dim, win_h, win_w, shift_h, shift_w, hp, wp, hidden;
} stage_info;

static int plan_stages(const swin_config *c, stage_info *out) {
    swin_weights w;
    memset(&w, 0, sizeof w);
    swin_block_w blocks[SWIN_MAX_STAGES][2];
    memset(blocks, 0, sizeof blocks);
    swin_config two = *c;   /* geometry of blocks 0 and 1 is that of every even / odd block */
    for (int s = 0; s < c->num_stages; s++) {
        two.depths[s] = c->depths[s] < 2 ? c->depths[s] : 2;
        w.stages[s].blocks = blocks[s];
    }
    if (swin_model_plan(&two, &w) != SWIN_OK) return 1;
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &w.stages[s];
        int odd = c->depths[s] > 1;
        out[s] = (stage_info){st->res_h, st->res_w, st->dim, c->depths[s], st->heads, st->head_dim, st->win_h,
                              st->win_w, odd ? blocks[s][1].shift_h : 0, odd ? blocks[s][1].shift_w : 0, st->hp,
                              st->wp, st->hidden};
    }
    return 0;
}

/* "7" for a square pair, "6x8" otherwise */
static const char *pair(char *buf, size_t size, int h, int w) {
    if (h == w) snprintf(buf, size, "%d", h);
    else snprintf(buf, size, "%dx%d", h, w);
    return buf;
}

static void print_text(const swin_config *c, const stage_info *si, int64_t params, double gflops, const char *source,
                       const char *plan) {
    int hf = c->family == SWIN_FAMILY_HF;
    char a[32], b[32], d[32];
    printf("model       %s (%s)\n", c->arch, source);
    printf("variant     Swin V%d, %s layout, %d stages\n", c->version, hf ? "Hugging Face" : "timm", c->num_stages);
    printf("input       %d x %d x %d, patch %d, embed dim %d, mlp ratio %g, qkv bias %s, abs pos %s\n", c->in_chans,
           c->img_h, c->img_w, c->patch_size, c->embed_dim, (double)c->mlp_ratio, c->qkv_bias ? "yes" : "no",
           c->ape ? "yes" : "no");
    printf("classes     %d\n", c->num_classes);
    printf("stage   res   dim  depth  heads  head_dim  window  shift  mlp_hidden%s\n",
           c->version == 2 ? "  pretrained_window" : "");
    for (int s = 0; s < c->num_stages; s++) {
        printf("%5d %5s %5d %6d %6d %9d %7s %6s %11d", s, pair(a, sizeof a, si[s].res_h, si[s].res_w), si[s].dim,
               si[s].depth, si[s].heads, si[s].head_dim, pair(b, sizeof b, si[s].win_h, si[s].win_w),
               pair(d, sizeof d, si[s].shift_h, si[s].shift_w), si[s].hidden);
        if (c->version == 2) printf(" %18d", c->pretrained_window_sizes[s]);
        printf("\n");
    }
    for (int s = 0; s < c->num_stages; s++)
        if (si[s].hp != si[s].res_h || si[s].wp != si[s].res_w)
            printf("padding     stage %d: %dx%d tokens padded to %dx%d (%s)\n", s, si[s].res_h, si[s].res_w, si[s].hp,
                   si[s].wp, hf ? "transformers: pad, roll, attend, roll back, crop"
                                : "timm: roll, pad, attend, crop, roll back");
    printf("params      %.2fM (%lld)\n", (double)params / 1e6, (long long)params);
    printf("compute     %.2f GFLOPs (%.2f GMAC) per %dx%d image\n", gflops, gflops / 2, c->img_h, c->img_w);
    printf("preprocess  %s, %s, crop_pct %.3f, mean [%.3f, %.3f, %.3f], std [%.3f, %.3f, %.3f]\n",
           c->pre_style == SWIN_PRE_HF ? "hf (resize to size)" : "timm (resize shorter side, center crop)",
           interp_str(c->interp), (double)c->crop_pct, (double)c->mean[0], (double)c->mean[1], (double)c->mean[2],
           (double)c->std[0], (double)c->std[1], (double)c->std[2]);
    if (plan) printf("session plan\n%s%s", plan, plan[0] && plan[strlen(plan) - 1] == '\n' ? "" : "\n");
}

/* a number for a square pair, [h, w] otherwise */
static void add_pair(cJSON *o, const char *key, int h, int w) {
    if (h == w) {
        cJSON_AddNumberToObject(o, key, h);
        return;
    }
    cJSON *a = cJSON_AddArrayToObject(o, key);
    cJSON_AddItemToArray(a, cJSON_CreateNumber(h));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(w));
}

static void print_json(const swin_config *c, const stage_info *si, int64_t params, double gflops, const char *source,
                       const char *plan) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "arch", c->arch);
    cJSON_AddStringToObject(o, "source", source);
    cJSON_AddNumberToObject(o, "version", c->version);
    cJSON_AddStringToObject(o, "layout", c->family == SWIN_FAMILY_HF ? "hf" : "timm");
    add_pair(o, "img_size", c->img_h, c->img_w);
    cJSON_AddNumberToObject(o, "img_h", c->img_h);
    cJSON_AddNumberToObject(o, "img_w", c->img_w);
    cJSON_AddNumberToObject(o, "patch_size", c->patch_size);
    cJSON_AddNumberToObject(o, "embed_dim", c->embed_dim);
    cJSON_AddNumberToObject(o, "window_size", c->window_size);
    cJSON_AddNumberToObject(o, "mlp_ratio", (double)c->mlp_ratio);
    cJSON_AddBoolToObject(o, "qkv_bias", c->qkv_bias);
    cJSON_AddBoolToObject(o, "ape", c->ape);
    cJSON_AddNumberToObject(o, "num_classes", c->num_classes);
    cJSON *st = cJSON_AddArrayToObject(o, "stages");
    for (int s = 0; s < c->num_stages; s++) {
        cJSON *e = cJSON_CreateObject();
        add_pair(e, "res", si[s].res_h, si[s].res_w);
        cJSON_AddNumberToObject(e, "dim", si[s].dim);
        cJSON_AddNumberToObject(e, "depth", si[s].depth);
        cJSON_AddNumberToObject(e, "heads", si[s].heads);
        add_pair(e, "window", si[s].win_h, si[s].win_w);
        add_pair(e, "shift", si[s].shift_h, si[s].shift_w);
        add_pair(e, "padded", si[s].hp, si[s].wp);
        cJSON_AddNumberToObject(e, "mlp_hidden", si[s].hidden);
        if (c->version == 2) cJSON_AddNumberToObject(e, "pretrained_window", c->pretrained_window_sizes[s]);
        cJSON_AddItemToArray(st, e);
    }
    cJSON_AddNumberToObject(o, "params", (double)params);
    cJSON_AddNumberToObject(o, "gflops", gflops);
    cJSON *pre = cJSON_AddObjectToObject(o, "preprocess");
    cJSON_AddStringToObject(pre, "style", c->pre_style == SWIN_PRE_HF ? "hf" : "timm");
    cJSON_AddStringToObject(pre, "interpolation", interp_str(c->interp));
    cJSON_AddNumberToObject(pre, "crop_pct", c->crop_pct);
    cJSON *mean = cJSON_AddArrayToObject(pre, "mean"), *std = cJSON_AddArrayToObject(pre, "std");
    for (int i = 0; i < 3; i++) {   /* 6 significant digits, not the float's binary expansion */
        char b[32];
        snprintf(b, sizeof b, "%.6g", (double)c->mean[i]);
        cJSON_AddItemToArray(mean, cJSON_CreateNumber(strtod(b, NULL)));
        snprintf(b, sizeof b, "%.6g", (double)c->std[i]);
        cJSON_AddItemToArray(std, cJSON_CreateNumber(strtod(b, NULL)));
    }
    if (plan) cJSON_AddStringToObject(o, "session_plan", plan);
    char *txt = cJSON_Print(o);
    if (txt) printf("%s\n", txt);
    free(txt);
    cJSON_Delete(o);
}

/* session memory plan for the CUDA device into buf; returns 0 or EXIT_USAGE after printing */
static int describe_session(const swin_model *m, const info_args *a, char *buf, size_t size) {
    swin_session_options so = swin_session_options_default();
    so.device = a->device;
    so.device_index = a->device_index;
    so.precision = a->precision;
    so.max_batch = a->batch;
    swin_session *s = NULL;
    if (swin_session_create(m, &so, &s) != SWIN_OK) {
        fprintf(stderr, "swin info: %s\n", swin_last_error());
        return EXIT_USAGE;
    }
    swin_status st = swin_session_describe(s, buf, size);
    swin_session_free(s);
    if (st != SWIN_OK) {
        fprintf(stderr, "swin info: %s\n", swin_last_error());
        return EXIT_USAGE;
    }
    return 0;
}

int cmd_info(int argc, char **argv) {
    info_args a;
    int r = parse(argc, argv, &a);
    if (r == 1) return 0;
    if (r) return r;

    swin_model *m = NULL;
    swin_config cfg;
    const char *source;
    if (a.model) {
        swin_load_options lo = swin_load_options_default();
        lo.arch = a.arch;
        lo.img_h = a.img_h;
        lo.img_w = a.img_w;
        if (swin_model_load(a.model, &lo, &m) != SWIN_OK) {
            fprintf(stderr, "swin info: %s\n", swin_last_error());
            return EXIT_USAGE;
        }
        cfg = *swin_model_config(m);
        source = a.model;
    } else {
        const swin_preset *p = swin_preset_find(a.arch);
        if (!p) return cli_usage_error(CMD, "unknown architecture '%s' (swin info --help lists the presets)", a.arch);
        swin_config_from_preset(p, &cfg);
        if (a.img_h) {
            cfg.img_h = a.img_h;
            cfg.img_w = a.img_w;
        }
        source = "preset, no weights loaded";
    }
    stage_info si[SWIN_MAX_STAGES];
    if (plan_stages(&cfg, si)) {
        fprintf(stderr, "swin info: %s\n", swin_last_error());
        swin_model_free(m);
        return EXIT_USAGE;
    }
    int64_t params = m ? swin_model_param_count(m) : swin_config_param_count(&cfg);
    double gflops = m ? swin_model_gflops(m) : swin_config_gflops(&cfg);

    static char plan[16384];
    int have_plan = 0;
    if (a.device == SWIN_DEVICE_CUDA) {
        if (!m && swin_model_random_config(&cfg, 1, &m) != SWIN_OK) {   /* weights only to size the session */
            fprintf(stderr, "swin info: %s\n", swin_last_error());
            return EXIT_USAGE;
        }
        if ((r = describe_session(m, &a, plan, sizeof plan)) != 0) {
            swin_model_free(m);
            return r;
        }
        have_plan = 1;
    }
    if (a.json) print_json(&cfg, si, params, gflops, source, have_plan ? plan : NULL);
    else print_text(&cfg, si, params, gflops, source, have_plan ? plan : NULL);
    swin_model_free(m);
    return 0;
}
