/* cmd_bench.c - `swin bench`: latency and throughput of the CUDA engine.
 *
 *   swin bench [--model PATH | --arch NAME] [--device cuda[:N]|cuda:all|cuda:N,M] [--precision P] [--batch 1,8,64]
 *              [--attention fused|unfused] [--graphs on|off] [--iters N] [--warmup N]
 *              [--breakdown] [--img-size H[xW]] [--json]
 *
 * Per batch: warm-up, then CUDA events around each forward on device-resident input; median and
 * p10/p90, img/s and achieved TFLOP/s. In the same run the other attention implementation is
 * measured too (attention ops alone, and end to end), giving the fused/unfused ratios.
 * --breakdown times every op of un-captured forwards (per op class and per stage).
 * Several GPUs (--device cuda:all, cuda:0,2): bench_multi.c.
 * A benchmark, not a test: it never judges a time. Without a GPU it says so and exits 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "config.h"
#include "fp8_session.h"

#define DEFAULT_ARCH "swin_tiny_patch4_window7_224"

static void usage(FILE *f) {
    fprintf(f,
            "usage: swin bench [options]\n"
            "Measure latency and throughput of the CUDA engine (random weights unless --model).\n"
            "  -m, --model PATH        model directory or .safetensors (default: random weights)\n"
            "  -a, --arch NAME         architecture preset (default " DEFAULT_ARCH ")\n"
            "  -d, --device DEV        cuda, cuda:N, or several GPUs at once: cuda:N,M,... or\n"
            "                          cuda:all (per-GPU and total img/s; default cuda)\n"
            "  -p, --precision P       fp32, tf32, fp16, bf16 or fp8 (default fp16; fp8: compute\n"
            "                          capability 8.9 or newer)\n"
            "      --scales FILE       fp8: the input scales (`swin calibrate`; default: calibrated on\n"
            "                          random images, with a warning)\n"
            "  -b, --batch LIST        comma-separated batch sizes (default 1,8,64,256)\n"
            "      --attention IMPL    fused or unfused (default fused); the other is measured too\n"
            "      --mlp IMPL          fused (fc1 with GELU in one GEMM), unfused, or auto (default:\n"
            "                          fused on Hopper, else unfused);\n"
            "                          the other is measured too (end to end)\n"
            "      --graphs on|off     CUDA graphs (default on)\n"
            "  -n, --iters N           timed iterations per batch (default 50)\n"
            "      --warmup N          untimed iterations first (default 10)\n"
            "      --breakdown         time per stage and per op class (un-captured forward)\n"
            CLI_IMG_SIZE_HELP
            "      --json              one JSON object on stdout\n"
            "  -h, --help              this help\n");
}

static int parse_batches(const char *s, bench_args *a) {
    char buf[256];
    if (strlen(s) >= sizeof buf) return 1;
    strcpy(buf, s);
    a->n_batches = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (a->n_batches == MAX_BATCHES || cli_parse_int(tok, 1, 65536, &a->batches[a->n_batches])) return 1;
        a->n_batches++;
    }
    return a->n_batches == 0;
}

/* 0: run; 1: help shown (exit 0); EXIT_USAGE: bad flags (message printed) */
static int parse(int argc, char **argv, bench_args *a) {
    memset(a, 0, sizeof *a);
    cli_parse_devices(CMD, "cuda", &a->dev);
    a->device_spec = "cuda";
    a->precision = SWIN_FP16;
    a->attention = SWIN_ATTN_FUSED;
    a->mlp = SWIN_MLP_AUTO;
    a->graphs = 1;
    a->iters = 50;
    a->warmup = 10;
    int defaults[] = {1, 8, 64, 256};
    memcpy(a->batches, defaults, sizeof defaults);
    a->n_batches = 4;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
#define VALUE() if (!(v = cli_value(CMD, argc, argv, &i))) return EXIT_USAGE
        if (cli_flag(f, "-h", "--help")) { usage(stdout); return 1; }
        else if (cli_flag(f, "-m", "--model")) { VALUE(); a->model = v; }
        else if (cli_flag(f, "-a", "--arch")) { VALUE(); a->arch = v; }
        else if (cli_flag(f, "-d", "--device")) {
            VALUE();
            if (cli_parse_devices(CMD, v, &a->dev)) return EXIT_USAGE;
            if (a->dev.device != SWIN_DEVICE_CUDA)
                return cli_usage_error(CMD, "bench runs on the GPU: use --device cuda, cuda:N, cuda:N,M,... or cuda:all");
            a->device_spec = v;
        } else if (cli_flag(f, "-p", "--precision")) {
            VALUE();
            if (swin_precision_parse(v, &a->precision) != SWIN_OK) return cli_usage_error(CMD, "%s", swin_last_error());
        } else if (cli_flag(f, "-b", "--batch")) {
            VALUE();
            if (parse_batches(v, a))
                return cli_usage_error(CMD, "bad --batch '%s' (expected up to %d sizes in [1, 65536], e.g. 1,8,64)", v, MAX_BATCHES);
        } else if (!strcmp(f, "--attention")) {
            VALUE();
            if (!strcmp(v, "fused")) a->attention = SWIN_ATTN_FUSED;
            else if (!strcmp(v, "unfused")) a->attention = SWIN_ATTN_UNFUSED;
            else return cli_usage_error(CMD, "bad --attention '%s' (expected fused or unfused)", v);
        } else if (!strcmp(f, "--mlp")) {
            VALUE();
            if (cli_parse_mlp(v, &a->mlp)) return cli_usage_error(CMD, "bad --mlp '%s' (expected auto, fused or unfused)", v);
        } else if (!strcmp(f, "--graphs")) {
            VALUE();
            if (!strcmp(v, "on")) a->graphs = 1;
            else if (!strcmp(v, "off")) a->graphs = 0;
            else return cli_usage_error(CMD, "bad --graphs '%s' (expected on or off)", v);
        } else if (cli_flag(f, "-n", "--iters")) {
            VALUE();
            if (cli_parse_int(v, 1, 1000000, &a->iters)) return cli_usage_error(CMD, "bad --iters '%s'", v);
        } else if (!strcmp(f, "--warmup")) {
            VALUE();
            if (cli_parse_int(v, 0, 1000000, &a->warmup)) return cli_usage_error(CMD, "bad --warmup '%s'", v);
        } else if (!strcmp(f, "--scales")) { VALUE(); a->scales = v; }
        else if (!strcmp(f, "--breakdown")) a->breakdown = 1;
        else if (!strcmp(f, "--img-size")) {
            VALUE();
            if (cli_parse_size(v, &a->img_h, &a->img_w))
                return cli_usage_error(CMD, "bad --img-size '%s' (expected S or HxW, 1 to 16384 each)", v);
        } else if (!strcmp(f, "--json")) a->json = 1;
        else return cli_usage_error(CMD, "unknown option '%s' (try swin bench --help)", f);
#undef VALUE
    }
    if (a->scales && a->precision != SWIN_FP8)
        return cli_usage_error(CMD, "--scales is for --precision fp8 (the precision is %s)", swin_precision_str(a->precision));
    return 0;
}

// ---- shared with bench_multi.c

static int cmp_float(const void *x, const void *y) {
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

bench_stats bench_summarise(float *ms, int n) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_float);
    bench_stats s;
    s.median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    s.p10 = ms[(int)(0.1 * (n - 1) + 0.5)];
    s.p90 = ms[(int)(0.9 * (n - 1) + 0.5)];
    return s;
}

void bench_json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

/* the default FP8 calibration warns once per process, not once per engine */
static void warn_once(const char *msg, void *user) {
    static int warned;
    if (!warned++) fprintf(stderr, "warning: %s\n", msg);
}

swin_session_options bench_options(const bench_args *a) {
    swin_session_options o = swin_session_options_default();
    o.device = SWIN_DEVICE_CUDA;
    o.device_index = a->device_index;
    o.precision = a->precision;
    o.attention = a->attention;
    o.mlp = a->mlp;
    o.graphs = a->graphs;
    o.fp8_scales = a->scales;
    o.warn = warn_once;
    o.max_batch = 1;
    for (int i = 0; i < a->n_batches; i++) if (a->batches[i] > o.max_batch) o.max_batch = a->batches[i];
    return o;
}

float *bench_input(size_t n) {
    float *x = malloc(n * sizeof *x);
    uint64_t state = 0x2545F4914F6CDD1Dull;   /* xorshift64*: the same input every run */
    for (size_t i = 0; x && i < n; i++) {
        state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
        x[i] = (float)((state * 2685821657736338717ull) >> 40) / 16777216.0f * 4.0f - 2.0f;
    }
    return x;
}

#ifndef SWIN_HAVE_CUDA
int cmd_bench(int argc, char **argv) {
    bench_args a;
    int r = parse(argc, argv, &a);
    if (r) return r == 1 ? 0 : r;
    return cli_usage_error(CMD, "this swin was built without CUDA; bench needs a GPU");
}
#else

swin_status bench_engine_create(const swin_model *m, const swin_session_options *o, swin_engine **out) {
    swin_status st = swin_engine_create(m, o, out);
    if (st == SWIN_OK && o->precision == SWIN_FP8 && (st = swin_fp8_engine_setup(*out, m, o)) != SWIN_OK) {
        swin_engine_free(*out);
        *out = NULL;
    }
    return st;
}

#define TRY(expr)                              \
    do {                                       \
        swin_status try_st_ = (expr);          \
        if (try_st_ != SWIN_OK) return try_st_; \
    } while (0)

// ---- one batch size

typedef struct {
    int batch;
    bench_stats e2e;                   /* the chosen configuration */
    double e2e_fused, e2e_unfused, attn_fused, attn_unfused;
    double mlp_fused, mlp_unfused;     /* end to end with the chosen attention, each MLP; 0 when the
                                          --mlp does not apply (fp32, tf32, fp8) */
    int have_profile;
    swin_engine_profile prof;
} bench_result;

static swin_status measure(swin_engine *eng[3], const bench_args *a, const float *input, int B,
                           float *ms, bench_result *r) {
    /* eng[0]: the chosen attention and MLP; eng[1]: the other attention; eng[2]: the other MLP */
    double e2e[2], attn[2];
    memset(r, 0, sizeof *r);
    r->batch = B;
    for (int k = 0; k < 2; k++) {
        TRY(swin_engine_set_input(eng[k], input, B));
        TRY(swin_engine_time_forward(eng[k], B, a->warmup, a->iters, ms));
        bench_stats s = bench_summarise(ms, a->iters);
        if (k == 0) r->e2e = s;
        e2e[k] = s.median;
        TRY(swin_engine_time_attention(eng[k], B, a->warmup, a->iters, ms));
        attn[k] = bench_summarise(ms, a->iters).median;
    }
    int f = a->attention == SWIN_ATTN_FUSED ? 0 : 1;
    r->e2e_fused = e2e[f];
    r->e2e_unfused = e2e[!f];
    r->attn_fused = attn[f];
    r->attn_unfused = attn[!f];
    if (eng[2]) {
        TRY(swin_engine_set_input(eng[2], input, B));
        TRY(swin_engine_time_forward(eng[2], B, a->warmup, a->iters, ms));
        double other = bench_summarise(ms, a->iters).median;
        r->mlp_fused = a->mlp == SWIN_MLP_FUSED ? e2e[0] : other;
        r->mlp_unfused = a->mlp == SWIN_MLP_FUSED ? other : e2e[0];
    }
    if (a->breakdown) {
        TRY(swin_engine_profile_forward(eng[0], B, 5, &r->prof));
        r->have_profile = 1;
    }
    return SWIN_OK;
}

// ---- output

static const char *const class_key[SWIN_OPS_COUNT] = {"gemm", "attention", "norm", "other"};

static void print_json(const bench_args *a, const char *arch, const char *gpu, int drv, int rt,
                       const bench_result *res, int n, double gflops, int stages) {
    printf("{\"tool\":\"swin\",\"arch\":");
    bench_json_str(arch);
    printf(",\"precision\":\"%s\",\"graphs\":%s,\"pdl\":%s,\"gpu\":", swin_precision_str(a->precision),
           a->graphs ? "true" : "false", a->pdl ? "true" : "false");
    bench_json_str(gpu);
    printf(",\"driver\":\"%d.%d\",\"cuda_runtime\":\"%d.%d\",\"results\":[", drv / 1000, drv % 1000 / 10,
           rt / 1000, rt % 1000 / 10);
    for (int i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        printf("%s{\"batch\":%d,\"median_ms\":%.4f,\"p10_ms\":%.4f,\"p90_ms\":%.4f,\"img_per_s\":%.1f,"
               "\"tflops\":%.3f,\"attention_fused_ms\":%.4f,\"attention_unfused_ms\":%.4f,"
               "\"attention_ratio\":%.3f,\"e2e_unfused_ms\":%.4f,\"e2e_ratio\":%.3f,",
               i ? "," : "", r->batch, r->e2e.median, r->e2e.p10, r->e2e.p90, r->batch * 1000.0 / r->e2e.median,
               gflops * r->batch / r->e2e.median, r->attn_fused, r->attn_unfused, r->attn_unfused / r->attn_fused,
               r->e2e_unfused, r->e2e_unfused / r->e2e_fused);
        if (r->mlp_fused > 0)
            printf("\"mlp_fused_ms\":%.4f,\"mlp_unfused_ms\":%.4f,\"mlp_ratio\":%.3f,", r->mlp_fused, r->mlp_unfused,
                   r->mlp_unfused / r->mlp_fused);
        else
            printf("\"mlp_fused_ms\":null,\"mlp_unfused_ms\":null,\"mlp_ratio\":null,");
        printf("\"breakdown\":");
        if (!r->have_profile) { printf("null}"); continue; }
        const double *c = r->prof.class_ms;
        printf("{\"gemm_ms\":%.4f,\"attention_ms\":%.4f,\"norm_shift_merge_ms\":%.4f,\"other_ms\":%.4f,"
               "\"per_stage_ms\":[", c[SWIN_OPS_GEMM], c[SWIN_OPS_ATTENTION], c[SWIN_OPS_NORM], c[SWIN_OPS_OTHER]);
        for (int s = 0; s < stages; s++) printf("%s%.4f", s ? "," : "", r->prof.stage_ms[s]);
        printf("],\"ops\":[");
        for (int k = 0; k < r->prof.n_ops; k++) {
            const swin_op_time *o = &r->prof.ops[k];
            printf("%s{\"name\":", k ? "," : "");
            bench_json_str(o->name);
            printf(",\"class\":\"%s\",\"calls\":%d,\"ms\":%.4f,\"per_stage_ms\":[", class_key[o->cls], o->calls, o->ms);
            for (int s = 0; s < stages; s++) printf("%s%.4f", s ? "," : "", o->stage_ms[s]);
            printf("]}");
        }
        printf("]}}");
    }
    printf("]}\n");
}

static void print_breakdown(const bench_result *r, int stages) {
    static const char *cls[SWIN_OPS_COUNT] = {"GEMMs (linear layers)", "attention",
                                              "norms/shift/merge", "other (gelu, im2col, pos, convert)"};
    double t = r->prof.total_ms > 0 ? r->prof.total_ms : 1;
    printf("\nbreakdown, batch %d (un-captured forward, an event before every op, mean of 5):\n", r->batch);
    printf("  %-32s %10s %7s\n", "kernel family", "ms", "%");
    for (int k = 0; k < SWIN_OPS_COUNT; k++)
        printf("  %-32s %10.3f %6.1f%%\n", cls[k], r->prof.class_ms[k], 100 * r->prof.class_ms[k] / t);
    for (int s = 0; s < stages; s++) {
        char name[64];
        snprintf(name, sizeof name, "stage %d%s", s, s == 0 ? " (+ patch embed)" : s == stages - 1 ? " (+ head)" : "");
        printf("  %-32s %10.3f %6.1f%%\n", name, r->prof.stage_ms[s], 100 * r->prof.stage_ms[s] / t);
    }
    printf("  %-32s %10.3f %6.1f%%\n", "total", r->prof.total_ms, 100.0);
    printf("\n  %-24s %-10s %5s %10s %6s |", "op", "family", "calls", "ms", "%");
    for (int s = 0; s < stages; s++) printf(" %8s%d", "stage ", s);
    printf("\n");
    for (int k = 0; k < r->prof.n_ops; k++) {
        const swin_op_time *o = &r->prof.ops[k];
        printf("  %-24s %-10s %5d %10.3f %5.1f%% |", o->name, class_key[o->cls], o->calls, o->ms, 100 * o->ms / t);
        for (int s = 0; s < stages; s++) printf(" %9.3f", o->stage_ms[s]);
        printf("\n");
    }
}

static void print_table(const bench_args *a, const char *arch, const char *source, const char *gpu,
                        int drv, int rt, const bench_result *res, int n, double gflops, int stages) {
    printf("swin bench: %s (%s), %s, attention %s, mlp %s, graphs %s, pdl %s, %d iterations after %d warm-up\n",
           arch, source, swin_precision_str(a->precision), cli_fused_str(a->attention == SWIN_ATTN_FUSED),
           cli_fused_str(a->mlp == SWIN_MLP_FUSED), a->graphs ? "on" : "off", a->pdl ? "on" : "off", a->iters,
           a->warmup);
    printf("gpu: %s (cuda:%d), driver %d.%d, runtime %d.%d; %.3f GFLOP per image\n\n", gpu, a->device_index,
           drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10, gflops);
    printf("%6s %10s %9s %9s %10s %8s | %11s %11s %7s | %11s %7s | %11s %11s %7s\n", "batch", "median ms", "p10 ms",
           "p90 ms", "img/s", "TFLOP/s", "attn fused", "attn unfus", "ratio", "e2e unfus", "ratio", "mlp fused",
           "mlp unfus", "ratio");
    for (int i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        printf("%6d %10.3f %9.3f %9.3f %10.1f %8.2f | %11.3f %11.3f %6.2fx | %11.3f %6.2fx |", r->batch,
               r->e2e.median, r->e2e.p10, r->e2e.p90, r->batch * 1000.0 / r->e2e.median,
               gflops * r->batch / r->e2e.median, r->attn_fused, r->attn_unfused, r->attn_unfused / r->attn_fused,
               r->e2e_unfused, r->e2e_unfused / r->e2e_fused);
        if (r->mlp_fused > 0)
            printf(" %11.3f %11.3f %6.2fx\n", r->mlp_fused, r->mlp_unfused, r->mlp_unfused / r->mlp_fused);
        else
            printf(" %11s %11s %7s\n", "-", "-", "-");
    }
    printf("\nratio = unfused time / fused time: attention ops alone (all blocks), and end to end with each\n"
           "attention; MLP: end to end with each MLP (fc1 + GELU as one GEMM, or cuBLASLt + a GELU pass;\n"
           "fp16, bf16, and tf32 on Hopper: --mlp does not apply to fp32 and fp8).\n");
    for (int i = 0; i < n; i++)
        if (res[i].have_profile) print_breakdown(&res[i], stages);
}

// ---- the command

static int run(const bench_args *a, swin_model *m, const char *source) {
    const swin_config *c = swin_model_config(m);
    swin_session_options o = bench_options(a);
    int maxb = o.max_batch;
    swin_engine *eng[3] = {NULL, NULL, NULL};
    /* the other MLP only where --mlp changes anything (fp16, bf16; tf32 on Hopper), as engine 0 says */
    int two_mlps = 0;
    for (int k = 0; k < 2 + two_mlps; k++) {
        o.attention = k != 1 ? a->attention : (a->attention == SWIN_ATTN_FUSED ? SWIN_ATTN_UNFUSED : SWIN_ATTN_FUSED);
        /* the other MLP: against the one engine 0 resolved --mlp auto to */
        o.mlp = k != 2 ? a->mlp : (swin_engine_mlp(eng[0]) == SWIN_MLP_FUSED ? SWIN_MLP_UNFUSED : SWIN_MLP_FUSED);
        swin_status st = bench_engine_create(m, &o, &eng[k]);
        if (st != SWIN_OK) {
            fprintf(stderr, "swin bench: %s\n", swin_last_error());
            for (int j = 0; j < k; j++) swin_engine_free(eng[j]);
            /* no GPU, a plan that does not fit, an unsupported geometry: the request cannot run */
            return st == SWIN_ERR_CUDA ? EXIT_FAILED : EXIT_USAGE;
        }
        if (k == 0) two_mlps = swin_engine_mlp_selectable(eng[0]);
    }
    char gpu[256] = "?";
    int drv = 0, rt = 0;
    swin_cuda_device_info(a->device_index, gpu, sizeof gpu, &drv, &rt);

    size_t n_in = (size_t)maxb * 3 * c->img_h * c->img_w;
    float *input = bench_input(n_in), *ms = malloc((size_t)a->iters * sizeof(float));
    bench_result *res = calloc((size_t)a->n_batches, sizeof *res);
    int rc = 0;
    if (!input || !ms || !res) { fprintf(stderr, "swin bench: out of memory\n"); rc = EXIT_FAILED; }
    /* from here on --mlp auto is the MLP engine 0 runs (the header and the columns name it) */
    bench_args resolved = *a;
    resolved.mlp = swin_engine_mlp(eng[0]);
    resolved.pdl = swin_engine_pdl(eng[0]);
    a = &resolved;
    for (int i = 0; !rc && i < a->n_batches; i++) {
        if (isatty(2)) fprintf(stderr, "swin bench: batch %d...\n", a->batches[i]);
        if (measure(eng, a, input, a->batches[i], ms, &res[i]) != SWIN_OK) {
            fprintf(stderr, "swin bench: batch %d: %s\n", a->batches[i], swin_last_error());
            rc = EXIT_FAILED;
        }
    }
    if (!rc) {
        double gflops = swin_model_gflops(m);
        if (a->json) print_json(a, c->arch, gpu, drv, rt, res, a->n_batches, gflops, c->num_stages);
        else print_table(a, c->arch, source, gpu, drv, rt, res, a->n_batches, gflops, c->num_stages);
    }
    free(res);
    free(ms);
    free(input);
    for (int k = 0; k < 3; k++) swin_engine_free(eng[k]);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    bench_args a;
    int r = parse(argc, argv, &a);
    if (r) return r == 1 ? 0 : r;
    int gpus[CLI_MAX_GPUS], n_gpus = 0;
    if (cli_resolve_devices(CMD, a.device_spec, &a.dev, 0, 1, gpus, &n_gpus)) return EXIT_USAGE;
    if (n_gpus > 1 && a.breakdown)
        return cli_usage_error(CMD, "--breakdown profiles one GPU: use --device cuda:N with it");
    a.device_index = gpus[0];   /* cuda:all on a machine of one GPU: exactly cuda:0 */
    swin_model *m = NULL;
    swin_status st;
    if (a.model) {
        swin_load_options lo = swin_load_options_default();
        lo.arch = a.arch;
        lo.img_h = a.img_h;
        lo.img_w = a.img_w;
        st = swin_model_load(a.model, &lo, &m);
    } else {
        const char *arch = a.arch ? a.arch : DEFAULT_ARCH;
        const swin_preset *p = swin_preset_find(arch);
        swin_config c;
        if (p) {
            swin_config_from_preset(p, &c);
            if (a.img_h) {
                c.img_h = a.img_h;
                c.img_w = a.img_w;
            }
            st = swin_model_random_config(&c, 1, &m);
        } else {
            st = swin_model_random(arch, 1, &m);   /* reports the unknown name */
        }
    }
    if (st != SWIN_OK) {
        fprintf(stderr, "swin bench: %s\n", swin_last_error());
        return EXIT_USAGE;
    }
    const char *source = a.model ? a.model : "random weights";
    int rc = n_gpus > 1 ? bench_multi(&a, m, source, gpus, n_gpus) : run(&a, m, source);
    swin_model_free(m);
    return rc;
}
#endif
