/* test_gpu_mlp.c - the MLP as one kernel (swin_mlp_wgmma_cuda: kernels/sm90/mlp_tma.cu's persistent
 * TMA kernel for H = 4 C, mlp_wgmma.cu's cp.async kernel for other H or with SWIN_MLP_TMA=0) against
 * the CPU layers: out = fc2(round(gelu(fc1(in)))) (+ residual), the hidden rounded to the data type
 * as the kernel keeps it, in fp16 and bf16; and against the two GEMMs it replaces on the GPU
 * (swin_linear_cuda: fc1 with the GELU, then fc2 with the residual). Widths C 96, 128, 192 (Swin-T
 * stages 1-2, Swin-B stage 1), hidden 4C and other multiples of 128 (one chunk; not 4C), M
 * below, at and past the 128-token tile, partial last tiles, more tiles than SMs; residual none,
 * in place (out == res) and separate; biases on and off. Outputs NaN-poisoned and guarded; argument and shape
 * refusals checked. On a GPU without wgmma (compute capability other than 9.0) only the refusal
 * is checked, and said so.
 * Tolerances relative to max|ref|: fp16 2e-3, bf16 1.6e-2 (gpu_testutil.h, as test_gpu_gemm).
 * Run: test_gpu_mlp <source dir>; SWIN_TEST_QUICK=1 drops M > 5000, =2 also the comparison with
 * the two GEMMs (for compute-sanitizer's racecheck); exits 77 without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gpu_testutil.h"
#include "layers.h"
#include "testutil.h"

#define WS_BYTES ((size_t)32 << 20)

typedef enum { RES_NONE = 0, RES_IN_PLACE = 1, RES_SEPARATE = 2 } res_kind;

typedef struct {
    int M, C, H, bias;
    res_kind res;
} mcase;

static const mcase cases[] = {
    {1, 96, 384, 1, RES_IN_PLACE},    {127, 96, 384, 1, RES_NONE},      {128, 128, 512, 1, RES_SEPARATE},
    {1000, 96, 384, 1, RES_IN_PLACE}, {777, 192, 768, 1, RES_IN_PLACE}, {300, 192, 768, 0, RES_NONE},
    {513, 128, 128, 1, RES_IN_PLACE}, {200, 96, 256, 0, RES_SEPARATE},  {6272, 96, 384, 1, RES_IN_PLACE},
    {6272, 192, 768, 1, RES_NONE},
    /* more tiles than SMs: the persistent TMA kernel's CTAs take several (ring phases wrap) */
    {40001, 96, 384, 1, RES_IN_PLACE}, {36000, 192, 768, 1, RES_SEPARATE}, {20000, 128, 512, 0, RES_NONE},
};

static void run_case(const mcase *k, int dt, swin_gemm *g, int ours_only) {
    const int M = k->M, C = k->C, H = k->H;
    const swin_precision prec = dt == 1 ? SWIN_FP16 : SWIN_BF16;
    char name[128];
    snprintf(name, sizeof name, "mlp %s M%d C%d H%d%s%s", swin_precision_str(prec), M, C, H, k->bias ? " bias" : "",
             k->res == RES_IN_PLACE ? " res-in-place" : k->res == RES_SEPARATE ? " res" : "");
    size_t nx = (size_t)M * C, nh = (size_t)M * H, nw = (size_t)H * C;
    float *in = malloc(nx * sizeof(float)), *w1 = malloc(nw * sizeof(float)), *w2 = malloc(nw * sizeof(float));
    float *b1 = malloc(H * sizeof(float)), *b2 = malloc(C * sizeof(float)), *res = malloc(nx * sizeof(float));
    float *hid = malloc(nh * sizeof(float)), *ref = malloc(nx * sizeof(float)), *got = malloc(nx * sizeof(float));
    float *two = malloc(nx * sizeof(float));
    /* weights of about Swin's scale: pre-activations of order 1, where the GELU is curved */
    tu_fill(in, nx, -1.0f, 1.0f), tu_fill(w1, nw, -0.25f, 0.25f), tu_fill(w2, nw, -0.15f, 0.15f);
    tu_fill(b1, H, -0.5f, 0.5f), tu_fill(b2, C, -0.5f, 0.5f), tu_fill(res, nx, -2.0f, 2.0f);
    tu_round_to(in, nx, dt), tu_round_to(w1, nw, dt), tu_round_to(w2, nw, dt);
    tu_round_to(b1, H, dt), tu_round_to(b2, C, dt), tu_round_to(res, nx, dt);
    swin_linear_w l1 = {w1, k->bias ? b1 : NULL}, l2 = {w2, k->bias ? b2 : NULL};
    swin_linear_cpu(hid, in, &l1, NULL, M, C, H, SWIN_ACT_GELU);
    tu_round_to(hid, nh, dt);
    swin_linear_cpu(ref, hid, &l2, k->res ? res : NULL, M, H, C, SWIN_ACT_NONE);

    tg_buf din = tg_alloc(nx, dt), dw1 = tg_alloc(nw, dt), dw2 = tg_alloc(nw, dt), db1 = tg_alloc(H, dt);
    tg_buf db2 = tg_alloc(C, dt), dout = tg_alloc(nx, dt), dres = tg_alloc(nx, dt), dhid = tg_alloc(nh, dt);
    tg_upload(&din, in), tg_upload(&dw1, w1), tg_upload(&dw2, w2), tg_upload(&db1, b1), tg_upload(&db2, b2);
    const void *residual = NULL;
    if (k->res == RES_IN_PLACE) tg_upload(&dout, res), residual = dout.p;
    else tg_poison(&dout);
    if (k->res == RES_SEPARATE) tg_upload(&dres, res), residual = dres.p;
    const void *pb1 = k->bias ? db1.p : NULL, *pb2 = k->bias ? db2.p : NULL;
    swin_status st = swin_mlp_wgmma_cuda(dout.p, din.p, dw1.p, pb1, dw2.p, pb2, residual, M, C, H, (swin_dtype)dt, 0);
    int ok = CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error()) && CHECK(tg_sync_ok(name), "%s: CUDA error", name);
    if (ok) {
        tg_download(&dout, got);
        tg_compare(name, got, ref, nx, tg_tol[dt]);
        CHECK(tg_guard_ok(&dout) && tg_guard_ok(&dres), "%s: guard zone overwritten", name);
    }
    /* the two GEMMs it replaces (fc1 + GELU on our GEMM, fc2 + residual on cuBLASLt), same inputs;
     * not under SWIN_TEST_QUICK=2 (racecheck reports hazards inside cuBLAS's own kernels) */
    if (ok && !ours_only) {
        if (k->res == RES_IN_PLACE) tg_upload(&dout, res);
        else tg_poison(&dout);
        tg_poison(&dhid);
        st = swin_linear_cuda(dhid.p, din.p, dw1.p, pb1, NULL, M, C, H, SWIN_ACT_GELU, g, 0);
        if (st == SWIN_OK) st = swin_linear_cuda(dout.p, dhid.p, dw2.p, pb2, residual, M, H, C, SWIN_ACT_NONE, g, 0);
        if (CHECK(st == SWIN_OK && tg_sync_ok(name), "%s two GEMMs: %s", name, swin_last_error())) {
            char n2[160];
            snprintf(n2, sizeof n2, "%s vs two GEMMs", name);
            tg_download(&dout, two);
            tg_compare(n2, got, two, nx, tg_tol[dt]);
        }
    }
    tg_free(&din), tg_free(&dw1), tg_free(&dw2), tg_free(&db1), tg_free(&db2), tg_free(&dout), tg_free(&dres);
    tg_free(&dhid);
    free(in), free(w1), free(w2), free(b1), free(b2), free(res), free(hid), free(ref), free(got), free(two);
}

static void expect(const char *what, swin_status st, swin_status want) {
    int ok = st == want && swin_last_error()[0];
    printf("%s refusal: %-36s -> %s\n", ok ? "ok  " : "FAIL", what, swin_last_error());
    CHECK(ok, "%s: status %s, expected %s", what, swin_status_str(st), swin_status_str(want));
}

static void refusals(int wgmma) {
    tg_buf a = tg_alloc(1 << 16, 1), w = tg_alloc(1 << 16, 1), o = tg_alloc(1 << 16, 1);
    const swin_dtype f16 = SWIN_DT_F16;
    expect("out NULL", swin_mlp_wgmma_cuda(NULL, a.p, w.p, NULL, w.p, NULL, NULL, 8, 96, 384, f16, 0), SWIN_ERR_ARGUMENT);
    expect("out aliases in", swin_mlp_wgmma_cuda(a.p, a.p, w.p, NULL, w.p, NULL, NULL, 8, 96, 384, f16, 0),
           SWIN_ERR_ARGUMENT);
    expect("C 64", swin_mlp_wgmma_cuda(o.p, a.p, w.p, NULL, w.p, NULL, NULL, 8, 64, 256, f16, 0), SWIN_ERR_UNSUPPORTED);
    expect("H 200", swin_mlp_wgmma_cuda(o.p, a.p, w.p, NULL, w.p, NULL, NULL, 8, 96, 200, f16, 0),
           SWIN_ERR_UNSUPPORTED);
    expect("fp32", swin_mlp_wgmma_cuda(o.p, a.p, w.p, NULL, w.p, NULL, NULL, 8, 96, 384, SWIN_DT_F32, 0),
           SWIN_ERR_UNSUPPORTED);
    expect("in misaligned", swin_mlp_wgmma_cuda(o.p, (char *)a.p + 8, w.p, NULL, w.p, NULL, NULL, 8, 96, 384, f16, 0),
           SWIN_ERR_UNSUPPORTED);
    expect("bias misaligned",
           swin_mlp_wgmma_cuda(o.p, a.p, w.p, (char *)w.p + 2, w.p, NULL, NULL, 8, 96, 384, f16, 0),
           SWIN_ERR_UNSUPPORTED);
    if (!wgmma)
        expect("no wgmma", swin_mlp_wgmma_cuda(o.p, a.p, w.p, NULL, w.p, NULL, NULL, 8, 96, 384, f16, 0),
               SWIN_ERR_UNSUPPORTED);
    tg_free(&a), tg_free(&w), tg_free(&o);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    if (!tg_have_gpu("test_gpu_mlp")) return TU_SKIP;
    const char *qv = getenv("SWIN_TEST_QUICK");
    int ours_only = qv && !strcmp(qv, "2"), quick = tg_quick() || ours_only;
    tu_seed(4242);
    int dev = 0, major = 0, minor = 0, wgmma = swin_gemm_wgmma_available();
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    printf("wgmma: %s (compute capability %d.%d)\n", wgmma ? "available" : "not available: refusals only", major,
           minor);
    CHECK(wgmma == (major == 9 && minor == 0), "wgmma available %d on compute capability %d.%d", wgmma, major, minor);
    refusals(wgmma);
    if (wgmma) {
        void *ws = NULL;
        if (cudaMalloc(&ws, WS_BYTES) != cudaSuccess) { fprintf(stderr, "cannot allocate the workspace\n"); return 1; }
        for (int dt = 1; dt <= 2; dt++) {
            swin_gemm *g = NULL;
            swin_status st = swin_gemm_create(&g, dt == 1 ? SWIN_FP16 : SWIN_BF16, ws, WS_BYTES);
            if (!CHECK(st == SWIN_OK, "swin_gemm_create: %s", swin_last_error())) continue;
            swin_gemm_set_fused_gelu(g, 1);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                if (!(quick && cases[i].M > 5000)) run_case(&cases[i], dt, g, ours_only);
            swin_gemm_free(g);
        }
        cudaFree(ws);
    }
    return tu_finish("test_gpu_mlp");
}
