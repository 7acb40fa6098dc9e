/* bench.h - `swin bench`, shared by cmd_bench.c (flags, one GPU: latency, throughput, attention
 * and MLP ratios, breakdown) and bench_multi.c (several GPUs timing at once). */
#ifndef SWIN_CLI_BENCH_H
#define SWIN_CLI_BENCH_H

#include "cli.h"
#include "model.h"
#ifdef SWIN_HAVE_CUDA
#include "engine.h"
#endif

#define CMD "bench"
#define MAX_BATCHES 16

typedef struct {
    const char *model, *arch, *device_spec;
    cli_devices dev;
    int device_index;            /* one GPU: the one --device resolved to */
    swin_precision precision;
    swin_attention attention;
    swin_mlp mlp;
    int graphs, iters, warmup, breakdown, json;
    int img_h, img_w;   /* --img-size, 0: the config's */
    int batches[MAX_BATCHES], n_batches;
    const char *scales;          /* --scales: the FP8 scales file (fp8 only) */
    int pdl;                     /* one GPU: its engines launch with PDL (SWIN_PDL; for the header) */
} bench_args;

typedef struct { double median, p10, p90; } bench_stats;

/* median, p10 and p90 of ms[0..n) (sorts ms) */
bench_stats bench_summarise(float *ms, int n);
/* s as a JSON string on stdout */
void bench_json_str(const char *s);
/* the engine options of the flags: CUDA on a->device_index, max batch the largest of --batch */
swin_session_options bench_options(const bench_args *a);
#ifdef SWIN_HAVE_CUDA
/* swin_engine_create, and for fp8 the input scales as a session sets them (--scales, or the
 * default calibration); prints nothing. */
swin_status bench_engine_create(const swin_model *m, const swin_session_options *o, swin_engine **out);
#endif
/* n deterministic input values in [-2, 2) (malloc'ed; NULL when out of memory) */
float *bench_input(size_t n);

#ifdef SWIN_HAVE_CUDA
/* The GPUs gpus[0..n) (n >= 2) at once: each times its own forwards, per batch size, after the
 * first GPU alone; prints per-GPU and total img/s. Returns the exit status. */
int bench_multi(const bench_args *a, const swin_model *m, const char *source, const int *gpus, int n);
#endif

#endif
