/* test_gpu_patch_embed.c - the patch embedding as one kernel (kernels/patch_embed.cu,
 * swin_patch_embed_cuda) against the CPU layers it replaces: swin_im2col_patch_cpu with the pixels
 * rounded to the data type (im2col's cols), swin_linear_cpu with w and bias in the data type, its
 * output rounded to the data type (what the linear op stores), swin_layernorm_cpu, rounded once.
 * Shapes: Swin-T's (224 x 224, C 96: 56 patches a band, the last warp half full), SwinV2-T's (256,
 * four full warps), Swin-B 384's (C 128, six warps, over 48 KiB of shared memory), a rectangle, a
 * band of 9 patches with C 16 (two column tiles), the widest (W 512, C 256: eight warps, 32 column
 * tiles), no bias, 12 and 32 Swin-T images (more bands than the persistent kernel's CTAs: each
 * takes several); fp16 and bf16. test_gpu_patch_embed_band runs it all with a CTA a band
 * (SWIN_PATCH_WALK=0). Inputs are random, x is
 * poisoned with NaN before each launch (an element not written fails), guard zone after x.
 * Tolerances relative to max|ref|: fp16 2e-3, bf16 1.6e-2 (gpu_testutil.h). Refusals: fp32, C not a
 * multiple of 16 or above 256, H or W not a multiple of 4, W above 512, NULL and misaligned
 * pointers.
 * Run: test_gpu_patch_embed <source dir>; SWIN_TEST_QUICK=1 drops the large case; exits 77 without
 * a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpu_testutil.h"
#include "layers.h"
#include "ops.h"
#include "testutil.h"

typedef struct {
    int B, H, W, C, bias, big;
} pcase;

static const pcase cases[] = {
    {3, 224, 224, 96, 1, 0},   /* Swin-T */
    {2, 256, 256, 96, 1, 0},   /* SwinV2-T */
    {1, 384, 384, 128, 1, 0},  /* Swin-B 384 */
    {2, 32, 64, 48, 1, 0},     /* a rectangle, one warp */
    {2, 20, 36, 16, 1, 0},     /* 9 patches a band, C 16 */
    {1, 8, 512, 256, 1, 0},    /* the widest: 8 warps, 32 column tiles */
    {2, 64, 64, 32, 0, 0},     /* no bias */
    {12, 224, 224, 96, 1, 0},  /* 672 bands: past 4 CTAs an SM of 132 SMs, so walking CTAs take two */
    {32, 224, 224, 96, 1, 1},  /* a batch */
};

static void run_case(const pcase *k, int dt) {
    const int B = k->B, H = k->H, W = k->W, C = k->C, gh = H / 4, gw = W / 4, M = B * gh * gw, K = 48;
    const float eps = 1e-5f;
    char name[120];
    snprintf(name, sizeof name, "%s B%d %dx%d C%d%s", tg_dt_name[dt], B, H, W, C, k->bias ? "" : " no bias");
    size_t nimg = (size_t)B * 3 * H * W, nx = (size_t)M * C, ncols = (size_t)M * K;
    float *img = malloc(nimg * 4), *cols = malloc(ncols * 4), *w = malloc((size_t)C * K * 4), *b = malloc(C * 4);
    float *g = malloc(C * 4), *be = malloc(C * 4), *y = malloc(nx * 4), *ref = malloc(nx * 4), *got = malloc(nx * 4);
    tu_fill(img, nimg, -2.2f, 2.7f), tu_fill(w, (size_t)C * K, -0.2f, 0.2f), tu_fill(b, C, -0.5f, 0.5f);
    tu_fill(g, C, 0.5f, 1.5f), tu_fill(be, C, -0.5f, 0.5f);
    tu_round_to(w, (size_t)C * K, dt), tu_round_to(b, C, dt);

    swin_im2col_patch_cpu(cols, img, B, H, W, 4, gh, gw);
    tu_round_to(cols, ncols, dt);   /* im2col's cols in the data type */
    swin_linear_w lw = {w, k->bias ? b : NULL};
    swin_ln_w ln = {g, be};
    swin_linear_cpu(y, cols, &lw, NULL, M, K, C, SWIN_ACT_NONE);
    tu_round_to(y, nx, dt);   /* the linear's output as the three-op path stores it */
    swin_layernorm_cpu(ref, y, &ln, M, C, eps);
    tu_round_to(ref, nx, dt);

    tg_buf dx = tg_alloc(nx, dt), dimg = tg_alloc(nimg, 0), dw = tg_alloc((size_t)C * K, dt), db = tg_alloc(C, dt);
    tg_buf dg = tg_alloc(C, 0), dbe = tg_alloc(C, 0);
    tg_upload(&dimg, img), tg_upload(&dw, w), tg_upload(&db, b), tg_upload(&dg, g), tg_upload(&dbe, be);
    tg_poison(&dx);
    swin_status st = swin_patch_embed_cuda(dx.p, dimg.p, dw.p, k->bias ? db.p : NULL, dg.p, dbe.p, B, H, W, C, eps,
                                           (swin_dtype)dt, 0);
    if (CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error()) && CHECK(tg_sync_ok(name), "%s: CUDA error", name)) {
        tg_download(&dx, got);
        tg_compare(name, got, ref, nx, tg_tol[dt]);
        CHECK(tg_guard_ok(&dx), "%s: guard zone after x overwritten", name);
    }
    tg_buf *all[] = {&dx, &dimg, &dw, &db, &dg, &dbe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
    free(img), free(cols), free(w), free(b), free(g), free(be), free(y), free(ref), free(got);
}

/* a call the op refuses: its geometry, which pointer is NULL or off (0 none, 1 img NULL, 2 ln_b
 * NULL, 3 x 2 bytes off 16-byte alignment) and the status it must return */
typedef struct {
    const char *what;
    int dt, B, H, W, C, bad;
    swin_status want;
} refusal;

static const refusal refused[] = {
    {"fp32 data", SWIN_DT_F32, 1, 64, 64, 32, 0, SWIN_ERR_UNSUPPORTED},
    {"C 8", SWIN_DT_F16, 1, 64, 64, 8, 0, SWIN_ERR_UNSUPPORTED},
    {"C 272", SWIN_DT_F16, 1, 4, 4, 272, 0, SWIN_ERR_UNSUPPORTED},
    {"H 62", SWIN_DT_F16, 1, 62, 64, 32, 0, SWIN_ERR_UNSUPPORTED},
    {"W 516", SWIN_DT_F16, 1, 4, 516, 32, 0, SWIN_ERR_UNSUPPORTED},
    {"batch 0", SWIN_DT_F16, 0, 64, 64, 32, 0, SWIN_ERR_ARGUMENT},
    {"NULL img", SWIN_DT_F16, 1, 64, 64, 32, 1, SWIN_ERR_ARGUMENT},
    {"NULL ln bias", SWIN_DT_F16, 1, 64, 64, 32, 2, SWIN_ERR_ARGUMENT},
    {"x misaligned", SWIN_DT_F16, 1, 64, 64, 32, 3, SWIN_ERR_ARGUMENT},
};

static void refusals(void) {
    tg_buf x = tg_alloc(64 * 256, 1), img = tg_alloc(3 * 64 * 64, 0), w = tg_alloc(256 * 48, 1), g = tg_alloc(256, 0);
    tg_poison(&x);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const refusal *r = &refused[i];
        swin_status st = swin_patch_embed_cuda(r->bad == 3 ? (char *)x.p + 2 : x.p, r->bad == 1 ? NULL : img.p, w.p,
                                               NULL, g.p, r->bad == 2 ? NULL : g.p, r->B, r->H, r->W, r->C, 1e-5f,
                                               (swin_dtype)r->dt, 0);
        CHECK(st == r->want, "%s: status %d, expected %d (%s)", r->what, (int)st, (int)r->want, swin_last_error());
        if (st == r->want) printf("ok   refused: %-34s %s\n", r->what, swin_last_error());
    }
    CHECK(tg_sync_ok("refusals"), "refusals: CUDA error");
    unsigned char head[16];   /* x's first bytes: still the poison */
    cudaMemcpy(head, x.p, sizeof head, cudaMemcpyDeviceToHost);
    int untouched = 1;
    for (size_t i = 0; i < sizeof head; i++) untouched &= head[i] == 0xFF;
    CHECK(untouched, "a refused call wrote x");
    tg_buf *all[] = {&x, &img, &w, &g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    if (!tg_have_gpu("test_gpu_patch_embed")) return TU_SKIP;
    tu_seed(4417);
    refusals();
    for (int dt = 1; dt <= 2; dt++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (!(tg_quick() && cases[i].big)) run_case(&cases[i], dt);
    return tu_finish("test_gpu_patch_embed");
}
