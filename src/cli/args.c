/* args.c - flag parsing helpers shared by the subcommands. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_parse_int(const char *s, int lo, int hi, int *out) {
    if (!s || !*s) return 1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 1;
    *out = (int)v;
    return 0;
}

int cli_parse_float(const char *s, float *out) {
    if (!s || !*s) return 1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return 1;
    *out = (float)v;
    return 0;
}

int cli_parse_size(const char *s, int *h, int *w) {
    if (!s) return 1;
    const char *x = strchr(s, 'x');
    if (!x) {
        if (cli_parse_int(s, 1, 16384, h)) return 1;
        *w = *h;
        return 0;
    }
    char head[32];
    size_t n = (size_t)(x - s);
    if (n == 0 || n >= sizeof head) return 1;
    memcpy(head, s, n);
    head[n] = '\0';
    return cli_parse_int(head, 1, 16384, h) || cli_parse_int(x + 1, 1, 16384, w);
}

int cli_image_flag(const char *cmd, int argc, char **argv, int *i, cli_image_flags *f) {
    const char *flag = argv[*i], *v;
    if (!cli_flag(flag, "-t", "--threads") && strcmp(flag, "--preprocess") && strcmp(flag, "--pillow") &&
        strcmp(flag, "--img-size"))
        return 0;
    if (!(v = cli_value(cmd, argc, argv, i))) return EXIT_USAGE;
    swin_preprocess_style style;
    if (!strcmp(flag, "--preprocess")) {
        if (swin_preprocess_style_parse(v, &style) != SWIN_OK)
            return cli_usage_error(cmd, "bad --preprocess '%s' (expected timm or hf)", v);
        f->style = v;
    } else if (!strcmp(flag, "--pillow")) {
        if (swin_pillow_parse(v, &f->pillow) != SWIN_OK)
            return cli_usage_error(cmd, "bad --pillow '%s' (expected a Pillow version such as 12 or 12.3.0)", v);
    } else if (!strcmp(flag, "--img-size")) {
        if (cli_parse_size(v, &f->img_h, &f->img_w))
            return cli_usage_error(cmd, "bad --img-size '%s' (expected S or HxW, 1 to 16384 each)", v);
    } else if (cli_parse_int(v, 1, 1024, &f->threads)) {
        return cli_usage_error(cmd, "bad --threads '%s' (expected an integer from 1 to 1024)", v);
    }
    return 1;
}

swin_preprocess_params cli_image_params(const cli_image_flags *f, const swin_config *c) {
    swin_preprocess_params pp = swin_preprocess_params_from_config(c);
    if (f->style) swin_preprocess_style_parse(f->style, &pp.style);
    pp.pillow = f->pillow;
    return pp;
}

static int g_quiet;
static const char *g_origin;

int cli_set_quiet(int quiet) {
    int was = g_quiet;
    g_quiet = quiet;
    return was;
}

void cli_set_origin(const char *origin) { g_origin = origin; }

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    if (g_quiet) return EXIT_USAGE;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "swin %s: %s%s", cmd, g_origin ? g_origin : "", g_origin ? ": " : "");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return EXIT_USAGE;
}

