/* bench_multi.c - `swin bench --device cuda:all` (or cuda:0,2): several GPUs at once.
 *
 * One engine per GPU (the chosen attention, graphs as asked), the same device-resident input on
 * each. Per batch size: the first GPU alone times its forwards (the one-GPU reference); then a
 * thread per GPU, released together, times its own forwards (warm-up, then CUDA
 * events around each, as the one-GPU bench does) while the others run theirs. Per GPU: median,
 * p10, p90 and img/s; total img/s is the sum over the GPUs, and scaling = total / alone (the goal
 * on two H200s: >= 1.9x at batch 256). The attention comparison and --breakdown are one-GPU
 * analyses (swin bench --device cuda:N). A benchmark, not a test: it never judges a time.
 */
#ifdef SWIN_HAVE_CUDA
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

typedef struct {
    swin_engine *e;
    int gpu;
    char name[256];
    float *ms;                   /* [iters] */
    bench_stats s;               /* this batch size, all GPUs at once */
    swin_status st;
    char err[512];
} gpu_run;

typedef struct {                 /* the threads start their loops together */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, abort;
} start_gate;

typedef struct {
    const bench_args *a;
    gpu_run *g;
    int B;
    start_gate *gate;
} loop_arg;

static void *timed_loop(void *arg) {
    loop_arg *l = arg;
    pthread_mutex_lock(&l->gate->mu);
    while (!l->gate->go) pthread_cond_wait(&l->gate->cv, &l->gate->mu);
    int abort = l->gate->abort;
    pthread_mutex_unlock(&l->gate->mu);
    if (abort) return NULL;
    l->g->st = swin_engine_time_forward(l->g->e, l->B, l->a->warmup, l->a->iters, l->g->ms);
    if (l->g->st != SWIN_OK) snprintf(l->g->err, sizeof l->g->err, "%s", swin_last_error());
    else l->g->s = bench_summarise(l->g->ms, l->a->iters);
    return NULL;
}

/* every GPU's timed loop of batch B at once; 0, or 1 after a message */
static int together(const bench_args *a, gpu_run *g, int n, int B) {
    pthread_t tid[CLI_MAX_GPUS];
    loop_arg la[CLI_MAX_GPUS];
    start_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int started = 0, bad = 0;
    for (; started < n; started++) {
        g[started].st = SWIN_OK;
        la[started] = (loop_arg){a, &g[started], B, &gate};
        if (pthread_create(&tid[started], NULL, timed_loop, &la[started]) != 0) break;
    }
    pthread_mutex_lock(&gate.mu);
    gate.go = 1;
    gate.abort = started < n;   /* all of them or none */
    pthread_cond_broadcast(&gate.cv);
    pthread_mutex_unlock(&gate.mu);
    for (int k = 0; k < started; k++) pthread_join(tid[k], NULL);
    if (started < n) {
        fprintf(stderr, "swin %s: cannot start a thread per GPU\n", CMD);
        return 1;
    }
    for (int k = 0; k < n; k++)
        if (g[k].st != SWIN_OK) {
            fprintf(stderr, "swin %s: cuda:%d, batch %d: %s\n", CMD, g[k].gpu, B, g[k].err);
            bad = 1;
        }
    return bad;
}

typedef struct {
    int batch;
    bench_stats alone;
    bench_stats per[CLI_MAX_GPUS];
    double total;                /* img/s, all GPUs */
} multi_result;

static double rate(int B, double ms) { return ms > 0 ? B * 1000.0 / ms : 0.0; }

static void print_table(const bench_args *a, const char *arch, const char *source, const gpu_run *g, int n,
                        int drv, int rt, const multi_result *res) {
    printf("swin bench: %s (%s), %s, attention %s, mlp %s, graphs %s, %d iterations after %d warm-up, %d GPUs at "
           "once\n", arch, source, swin_precision_str(a->precision), cli_fused_str(a->attention == SWIN_ATTN_FUSED),
           cli_mlp_str(a->mlp), a->graphs ? "on" : "off", a->iters, a->warmup, n);
    for (int k = 0; k < n; k++) printf("gpu: %s (cuda:%d)\n", g[k].name, g[k].gpu);
    printf("driver %d.%d, runtime %d.%d\n\n", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    printf("%6s %-14s %10s %9s %9s %10s\n", "batch", "gpu", "median ms", "p10 ms", "p90 ms", "img/s");
    for (int i = 0; i < a->n_batches; i++) {
        const multi_result *r = &res[i];
        char who[32];
        snprintf(who, sizeof who, "cuda:%d alone", g[0].gpu);
        printf("%6d %-14s %10.3f %9.3f %9.3f %10.1f\n", r->batch, who, r->alone.median, r->alone.p10, r->alone.p90,
               rate(r->batch, r->alone.median));
        for (int k = 0; k < n; k++) {
            snprintf(who, sizeof who, "cuda:%d", g[k].gpu);
            printf("%6s %-14s %10.3f %9.3f %9.3f %10.1f\n", "", who, r->per[k].median, r->per[k].p10, r->per[k].p90,
                   rate(r->batch, r->per[k].median));
        }
        double one = rate(r->batch, r->alone.median);
        printf("%6s %-14s %41.1f  (%.2fx one GPU)\n", "", "total", r->total, one > 0 ? r->total / one : 0.0);
    }
    printf("\nalone: the first GPU by itself; then every GPU at once, each timing its own forwards; total = sum.\n");
}

static void print_json(const bench_args *a, const char *arch, const gpu_run *g, int n, int drv, int rt,
                       const multi_result *res) {
    printf("{\"tool\":\"swin\",\"arch\":");
    bench_json_str(arch);
    printf(",\"precision\":\"%s\",\"graphs\":%s,\"driver\":\"%d.%d\",\"cuda_runtime\":\"%d.%d\",\"gpus\":[",
           swin_precision_str(a->precision), a->graphs ? "true" : "false", drv / 1000, drv % 1000 / 10, rt / 1000,
           rt % 1000 / 10);
    for (int k = 0; k < n; k++) {
        printf("%s{\"device\":%d,\"name\":", k ? "," : "", g[k].gpu);
        bench_json_str(g[k].name);
        printf("}");
    }
    printf("],\"results\":[");
    for (int i = 0; i < a->n_batches; i++) {
        const multi_result *r = &res[i];
        double one = rate(r->batch, r->alone.median);
        printf("%s{\"batch\":%d,\"alone\":{\"device\":%d,\"median_ms\":%.4f,\"img_per_s\":%.1f},\"per_gpu\":[",
               i ? "," : "", r->batch, g[0].gpu, r->alone.median, one);
        for (int k = 0; k < n; k++)
            printf("%s{\"device\":%d,\"median_ms\":%.4f,\"p10_ms\":%.4f,\"p90_ms\":%.4f,\"img_per_s\":%.1f}",
                   k ? "," : "", g[k].gpu, r->per[k].median, r->per[k].p10, r->per[k].p90,
                   rate(r->batch, r->per[k].median));
        printf("],\"total_img_per_s\":%.1f,\"scaling\":%.3f}", r->total, one > 0 ? r->total / one : 0.0);
    }
    printf("]}\n");
}

int bench_multi(const bench_args *a, const swin_model *m, const char *source, const int *gpus, int n) {
    const swin_config *c = swin_model_config(m);
    swin_session_options o = bench_options(a);
    int maxb = o.max_batch;
    gpu_run *g = calloc((size_t)n, sizeof *g);
    multi_result *res = calloc((size_t)a->n_batches, sizeof *res);
    float *input = bench_input((size_t)maxb * 3 * c->img_h * c->img_w);
    int rc = !g || !res || !input;
    if (rc) fprintf(stderr, "swin %s: out of memory\n", CMD);
    int drv = 0, rt = 0;
    for (int k = 0; !rc && k < n; k++) {
        g[k].gpu = o.device_index = gpus[k];
        snprintf(g[k].name, sizeof g[k].name, "?");
        swin_cuda_device_info(gpus[k], g[k].name, sizeof g[k].name, &drv, &rt);
        swin_status st = bench_engine_create(m, &o, &g[k].e);
        if (st != SWIN_OK) {
            fprintf(stderr, "swin %s: %s\n", CMD, swin_last_error());
            rc = st == SWIN_ERR_NO_DEVICE ? EXIT_USAGE : EXIT_FAILED;
        } else if (!(g[k].ms = malloc((size_t)a->iters * sizeof *g[k].ms))) {
            fprintf(stderr, "swin %s: out of memory\n", CMD);
            rc = EXIT_FAILED;
        }
    }
    for (int i = 0; !rc && i < a->n_batches; i++) {
        int B = a->batches[i];
        multi_result *r = &res[i];
        r->batch = B;
        if (isatty(2)) fprintf(stderr, "swin %s: batch %d...\n", CMD, B);
        for (int k = 0; !rc && k < n; k++)
            if (swin_engine_set_input(g[k].e, input, B) != SWIN_OK) {
                fprintf(stderr, "swin %s: cuda:%d, batch %d: %s\n", CMD, g[k].gpu, B, swin_last_error());
                rc = EXIT_FAILED;
            }
        if (!rc && swin_engine_time_forward(g[0].e, B, a->warmup, a->iters, g[0].ms) != SWIN_OK) {
            fprintf(stderr, "swin %s: cuda:%d, batch %d: %s\n", CMD, g[0].gpu, B, swin_last_error());
            rc = EXIT_FAILED;
        }
        if (rc) break;
        r->alone = bench_summarise(g[0].ms, a->iters);
        if (together(a, g, n, B)) rc = EXIT_FAILED;
        for (int k = 0; !rc && k < n; k++) {
            r->per[k] = g[k].s;
            r->total += rate(B, g[k].s.median);
        }
    }
    if (!rc) {
        if (a->json) print_json(a, c->arch, g, n, drv, rt, res);
        else print_table(a, c->arch, source, g, n, drv, rt, res);
    }
    for (int k = 0; g && k < n; k++) {
        swin_engine_free(g[k].e);
        free(g[k].ms);
    }
    free(input);
    free(res);
    free(g);
    return rc;
}
#endif
