/* cli.h - the `swin` command: one file per subcommand (cmd_<name>.c), shared flag helpers.
 * Exit codes: 0 success, 1 the job ran but failed (verify FAIL, some image bad), 2 usage or
 * bad input (message on stderr, one line, naming the file and the problem). */
#ifndef SWIN_CLI_H
#define SWIN_CLI_H

#include <string.h>

#include "preprocess.h"
#include "swin.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2

int cmd_info(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_classify(int argc, char **argv);
int cmd_preprocess(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* 1 when arg is the short or the long spelling of a flag (short may be NULL) */
static inline int cli_flag(const char *arg, const char *short_name, const char *long_name) {
    return (short_name && !strcmp(arg, short_name)) || !strcmp(arg, long_name);
}

/* "fused" / "unfused": the name of an implementation switch's value (--attention, --mlp) */
static inline const char *cli_fused_str(int fused) { return fused ? "fused" : "unfused"; }
/* --mlp's value: "fused", "unfused" or "auto" */
static inline const char *cli_mlp_str(swin_mlp m) {
    return m == SWIN_MLP_FUSED ? "fused" : m == SWIN_MLP_UNFUSED ? "unfused" : "auto";
}

/* --mlp: "auto", "fused" or "unfused"; 0 on success */
static inline int cli_parse_mlp(const char *s, swin_mlp *m) {
    if (!strcmp(s, "fused")) *m = SWIN_MLP_FUSED;
    else if (!strcmp(s, "unfused")) *m = SWIN_MLP_UNFUSED;
    else if (!strcmp(s, "auto")) *m = SWIN_MLP_AUTO;
    else return 1;
    return 0;
}

/* "cpu", "cuda", "cuda:N" (devices.c) */
int cli_parse_device(const char *s, swin_device *dev, int *index);

/* ---- several GPUs (devices.c): --device cpu | cuda | cuda:N | cuda:N,M,... | cuda:all */
#define CLI_MAX_GPUS 64
typedef struct {
    swin_device device;
    int all;                   /* cuda:all */
    int implicit;              /* plain "cuda": cuda:0, or the node-local rank's GPU under MPI */
    int n;                     /* entries of index (1 for cpu and plain cuda: 0) */
    int index[CLI_MAX_GPUS];
} cli_devices;
/* Syntax and duplicates; on error prints "swin <cmd>: bad --device ..." and returns EXIT_USAGE. */
int cli_parse_devices(const char *cmd, const char *s, cli_devices *d);
/* The GPUs this process runs on, into out[CLI_MAX_GPUS] (cpu: one entry, 0): the list or every GPU,
 * shared out among the local_size ranks of an MPI job on this node (devices.c says how). No GPU,
 * or an index that does not exist: prints "swin <cmd>: --device SPEC: ..." and returns EXIT_USAGE. */
int cli_resolve_devices(const char *cmd, const char *spec, const cli_devices *d, int local_rank, int local_size,
                        int *out, int *n);
/* --img-size: "S" (square) or "HxW", each 1 to 16384; 0 on success */
int cli_parse_size(const char *s, int *h, int *w);
#define CLI_IMG_SIZE_HELP                                                                      \
    "      --img-size H[xW]    run the model at this input size (H x W, or H x H) instead of\n" \
    "                          its config's, as timm.create_model(img_size=...) would\n"
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)
/* --pillow: parsed with swin_pillow_parse (preprocess.h) */
#define CLI_PILLOW_HELP                                                                          \
    "      --pillow VERSION    resize as this Pillow version does (default " CLI_STR(SWIN_PILLOW_DEFAULT) "; Pillow 12\n" \
    "                          and older always resize horizontally first, which differs by a few\n" \
    "                          levels when the height shrinks much more than the width)\n"
/* ---- the image pipeline's flags, shared by classify and calibrate: -t/--threads, --preprocess,
 * --pillow, --img-size */
typedef struct {
    int threads;          /* decoder threads, 0: the number of cores */
    const char *style;    /* --preprocess timm | hf, NULL: the model's own */
    int pillow;           /* --pillow major version, 0: SWIN_PILLOW_DEFAULT */
    int img_h, img_w;     /* --img-size, 0: the config's */
} cli_image_flags;
/* argv[*i] is one of them: parsed (*i at its value), returns 1; it is not: 0; a bad value:
 * EXIT_USAGE after the message. */
int cli_image_flag(const char *cmd, int argc, char **argv, int *i, cli_image_flags *f);
/* the model's preprocessing with --preprocess and --pillow */
swin_preprocess_params cli_image_params(const cli_image_flags *f, const swin_config *c);

/* strict integer / float parsing; 0 on success */
int cli_parse_int(const char *s, int lo, int hi, int *out);
int cli_parse_float(const char *s, float *out);
/* argv[i] is a flag taking a value: returns the value, or NULL after printing
 * "swin <cmd>: <flag> needs a value" */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
/* print "swin <cmd>: <message>" and return EXIT_USAGE */
int cli_usage_error(const char *cmd, const char *fmt, ...);
/* Quiet: cli_usage_error and cli_value print nothing (an MPI rank > 0 while it parses the flags
 * every rank parses alike: rank 0 speaks for all). Returns the previous setting. */
int cli_set_quiet(int quiet);
/* Messages name this process: "swin <cmd>: rank R on HOST: ..." (MPI ranks > 0; NULL: none). */
void cli_set_origin(const char *origin);
/* the embedded default model directory: <bindir>/../share/swin/digits when installed, the source
 * tree's weights/digits when run from the build directory (default_model.c) */
const char *cli_default_model(void);

#endif
