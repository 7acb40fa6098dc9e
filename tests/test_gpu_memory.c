/* test_gpu_memory.c - GPU memory: sessions give back everything, a batch that cannot fit is refused
 * before any work with the plan in the message, and failed allocations leave nothing behind.
 *
 *   (a) 1,000 sessions of the digits model (fp16, max batch 4, CUDA graphs on): create, forward
 *       batches 4 and 2 (two captured graphs), every 10th also a GPU-preprocessed forward and a
 *       page-locked buffer, free. Free device memory (cudaMemGetInfo) is read after two warm-up
 *       sessions and after every 100 sessions and must stay within SLACK of the warm-up reading.
 *       Every other session runs the unfused attention (cuBLAS batched GEMMs) instead.
 *       Why a warm-up and a slack: the first session loads the kernel modules and cuBLAS's own
 *       state, which the CUDA context keeps for the life of the process, and the driver counts
 *       memory in 2 MiB pages. SWIN_GEMM_TUNE=0 makes every session choose the same GEMM kernels
 *       (timing could pick, and load, another one later). A leak of 4 KiB per session would show
 *       as 4 MiB by the end. Host memory (VmRSS) may not grow by more than 64 MiB over the loop.
 *   (b) Swin-L at 384 (random weights), max batch 4096, fp16: SWIN_ERR_MEMORY within a second,
 *       the message naming the batch, what it needs and what is free ("needs", "free of", "at most
 *       batch N fits"), free memory unchanged. The estimate is checked: batch N is created, N + 1
 *       refused; batch 1 runs a forward.
 *   (c) failure injection (swin_cuda_fail_alloc_at, engine.h): the k-th device or page-locked
 *       allocation fails, k = 1, 2, ... until a session, a GPU-preprocessed forward and a pinned
 *       buffer all succeed; every failure must be SWIN_ERR_MEMORY with a message (or NULL from
 *       the pinned allocator), and free memory must be back at the baseline after each round.
 * Exits 77 without a usable GPU. Run: ctest -R test_gpu_memory, or build/tests/test_gpu_memory SRC_DIR
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "model.h"
#include "preprocess.h"
#include "testutil.h"

#define SLACK ((long long)4 << 20)
#define SESSIONS 1000
#define MAXB 4

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static long long free_bytes(void) {
    size_t f = 0, t = 0;
    cudaDeviceSynchronize();
    return cudaMemGetInfo(&f, &t) == cudaSuccess ? (long long)f : -1;
}

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

static swin_session_options options(int max_batch) {
    swin_session_options so = swin_session_options_default();
    so.device = SWIN_DEVICE_CUDA;
    so.precision = SWIN_FP16;
    so.max_batch = max_batch;
    return so;
}

/* MAXB small RGB pictures of different sizes, for the GPU preprocessing */
static swin_image g_img[MAXB];

/* one session's life: create, forwards, optional GPU-preprocessed forward and pinned buffer, free.
 * Returns the first failure's status (SWIN_OK when all worked); *pinned_null set when the pinned
 * allocator returned NULL. */
static swin_status session_life(const swin_model *m, int extras, int unfused, int *pinned_null) {
    const swin_config *c = swin_model_config(m);
    static float x[MAXB * 3 * 32 * 32], logits[MAXB * 16];
    swin_session_options so = options(MAXB);
    so.attention = unfused ? SWIN_ATTN_UNFUSED : SWIN_ATTN_FUSED;
    swin_session *s = NULL;
    swin_status st = swin_session_create(m, &so, &s);
    if (st == SWIN_OK) st = swin_forward(s, x, MAXB, logits);
    if (st == SWIN_OK) st = swin_forward(s, x, 2, logits);
    if (st == SWIN_OK && extras) {
        swin_preprocess_params pp = swin_preprocess_params_from_config(c);
        st = swin_forward_images(s, &pp, g_img, MAXB, SWIN_PRE_DEVICE_GPU, logits, NULL);
        void *pinned = swin_session_host_alloc(s, 1 << 20);
        if (!pinned) *pinned_null = 1;
        swin_session_host_free(s, pinned);
    }
    swin_session_free(s);
    return st;
}

// ---- (a) a thousand sessions

static void test_sessions(const swin_model *m) {
    int pinned_null = 0;
    setenv("SWIN_GEMM_TUNE", "0", 1);
    for (int unfused = 0; unfused < 2; unfused++) {   /* warm-up: modules, cuBLAS state */
        swin_status st = session_life(m, 1, unfused, &pinned_null);
        CHECK(st == SWIN_OK && !pinned_null, "warm-up session: %s (%s)", swin_status_str(st), swin_last_error());
    }
    long long base = free_bytes(), worst = 0;
    long rss0 = rss_kib();
    double t0 = now_s();
    int failed = 0;
    for (int i = 1; i <= SESSIONS; i++) {
        swin_status st = session_life(m, i % 10 == 0, i % 2, &pinned_null);
        if (st != SWIN_OK && !failed++) fprintf(stderr, "session %d: %s\n", i, swin_last_error());
        if (i % 100 == 0) {
            long long d = base - free_bytes();
            if (llabs(d) > llabs(worst)) worst = d;
            printf("  after %4d sessions: free memory %+.2f MiB from the warm-up reading, VmRSS %+ld KiB\n", i,
                   -d / 1048576.0, rss_kib() - rss0);
        }
    }
    long rss = rss_kib() - rss0;
    printf("%d sessions in %.1f s: largest drift %.2f MiB (slack %.0f MiB), VmRSS %+ld KiB\n", SESSIONS,
           now_s() - t0, worst / 1048576.0, SLACK / 1048576.0, rss);
    CHECK(failed == 0 && !pinned_null, "%d of %d sessions failed, pinned NULL %d", failed, SESSIONS, pinned_null);
    CHECK(llabs(worst) <= SLACK, "device memory drifted by %.2f MiB over %d sessions", worst / 1048576.0, SESSIONS);
    CHECK(rss <= 64 * 1024, "VmRSS grew by %ld KiB over %d sessions", rss, SESSIONS);
}

// ---- (b) a batch that cannot fit

static void test_too_large(void) {
    swin_model *m = NULL;
    double t0 = now_s();
    if (!CHECK(swin_model_random("swin_large_patch4_window12_384", 1, &m) == SWIN_OK, "Swin-L: %s",
               swin_last_error()))
        return;
    printf("Swin-L 384 random weights in %.1f s\n", now_s() - t0);
    long long before = free_bytes();
    swin_session_options so = options(4096);
    swin_session *s = NULL;
    t0 = now_s();
    swin_status st = swin_session_create(m, &so, &s);
    double took = now_s() - t0;
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", swin_last_error());
    long long after = free_bytes();
    printf("batch 4096 (%.3f s): %s\n  %s\n", took, swin_status_str(st), msg);
    CHECK(st == SWIN_ERR_MEMORY && s == NULL, "batch 4096: %s, expected SWIN_ERR_MEMORY", swin_status_str(st));
    CHECK(strstr(msg, "batch 4096 in fp16 needs") && strstr(msg, "weights") && strstr(msg, "activations") &&
          strstr(msg, "GiB free of") && strstr(msg, "cuda:"), "the message names the plan and the free memory: %s", msg);
    CHECK(took < 1.0, "refused after %.2f s: work was done before the refusal", took);
    CHECK(llabs(before - after) <= SLACK, "free memory moved by %.2f MiB", (before - after) / 1048576.0);
    swin_session_free(s);

    const char *at = strstr(msg, "at most batch ");
    int most = at ? atoi(at + 14) : 0;
    CHECK(most > 0 && most < 4096, "the message gives the largest batch that fits (%d)", most);
    if (most > 0 && most < 65536) {
        so.max_batch = most;
        st = swin_session_create(m, &so, &s);
        printf("batch %d (the largest said to fit): %s\n", most, st == SWIN_OK ? "created" : swin_last_error());
        CHECK(st == SWIN_OK, "batch %d, said to fit, was refused: %s", most, swin_last_error());
        swin_session_free(s);
        s = NULL;
        so.max_batch = most + 1;
        st = swin_session_create(m, &so, &s);
        CHECK(st == SWIN_ERR_MEMORY, "batch %d: %s, expected SWIN_ERR_MEMORY", most + 1, swin_status_str(st));
        swin_session_free(s);
        s = NULL;
    }
    so.max_batch = 1;
    static float x[3 * 384 * 384], logits[1000];
    st = swin_session_create(m, &so, &s);
    if (st == SWIN_OK) st = swin_forward(s, x, 1, logits);
    CHECK(st == SWIN_OK, "Swin-L batch 1: %s", swin_last_error());
    swin_session_free(s);
    CHECK(llabs(before - free_bytes()) <= SLACK, "free memory after the Swin-L sessions moved by %.2f MiB",
          (before - free_bytes()) / 1048576.0);
    swin_model_free(m);
}

// ---- (c) failed allocations

static void test_injected(const swin_model *m) {
    long long base = free_bytes();
    int failures = 0, k;
    for (k = 1; k <= 32; k++) {
        int pinned_null = 0;
        swin_cuda_fail_alloc_at = k;
        swin_status st = session_life(m, 1, 0, &pinned_null);
        int fired = swin_cuda_fail_alloc_at == 0;
        swin_cuda_fail_alloc_at = 0;
        long long d = base - free_bytes();
        printf("allocation %2d fails: %s%s%s\n", k, pinned_null ? "pinned buffer NULL" : swin_status_str(st),
               st != SWIN_OK ? ": " : "", st != SWIN_OK ? swin_last_error() : "");
        CHECK(llabs(d) <= SLACK, "allocation %d failing left %.2f MiB behind", k, d / 1048576.0);
        if (!fired) {
            CHECK(st == SWIN_OK && !pinned_null, "no failure injected, yet: %s", swin_last_error());
            break;
        }
        failures++;
        CHECK(pinned_null || (st == SWIN_ERR_MEMORY && strstr(swin_last_error(), "cuda:")),
              "allocation %d failing gave %s: %s", k, swin_status_str(st), swin_last_error());
    }
    printf("%d allocations made to fail one by one, each cleanly\n", failures);
    CHECK(failures >= 3 && k <= 32, "%d failures injected (the arena, the preprocessing scratch, the pinned buffer)",
          failures);
}

int main(int argc, char **argv) {
    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce != cudaSuccess || n == 0) {
        printf("test_gpu_memory: skipped, no usable GPU (%s)\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return TU_SKIP;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/weights/digits", argc > 1 ? argv[1] : ".");
    swin_model *m = NULL;
    swin_load_options lo = swin_load_options_default();
    if (!CHECK(swin_model_load(dir, &lo, &m) == SWIN_OK, "%s: %s", dir, swin_last_error()))
        return tu_finish("test_gpu_memory");
    static uint8_t px[MAXB][64 * 48 * 3];
    for (int i = 0; i < MAXB; i++) {
        for (size_t j = 0; j < sizeof px[i]; j++) px[i][j] = (uint8_t)(j * 7 + i);
        g_img[i] = (swin_image){.width = 40 + 8 * i, .height = 30 + 6 * i, .rgb = px[i]};
    }
    test_sessions(m);
    test_injected(m);
    test_too_large();
    swin_model_free(m);
    return tu_finish("test_gpu_memory");
}
