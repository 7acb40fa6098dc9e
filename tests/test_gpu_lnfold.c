/* test_gpu_lnfold.c - V1's norm2 folded into the GEMMs around it (kernels/gemm.h, Hopper):
 *   swin_ln_fold_weights_cuda          fc1's weights with norm2's gamma and beta folded in
 *   swin_gemm_wgmma_proj_scatter_cuda  x[token_src(r)] += win[r] @ proj^T + bias, and the tokens'
 *                                      partial statistics
 *   swin_gemm_wgmma_ln_gelu_cuda       gelu(LN(x) @ fc1^T + bias) from those statistics
 * against the CPU layers: the scatter against swin_window_reverse_residual_cpu of the fp32
 * projection, rounded once to the data type; fc1 against swin_layernorm_cpu then
 * swin_linear_cpu with the GELU, on the x the GPU wrote (so that each op is checked alone), with
 * fc1's weights in fp32 as the engine folds them. Geometries: Swin-T's four stages (C 96 to 768:
 * one to six 128-column tiles of statistics, shifted and not), C 200 (a partial second tile),
 * more tiles than SMs, and padded grids in both libraries' orders (padding rows dropped). fp16
 * and bf16. The statistics and fc1's output are NaN-poisoned first (a token whose statistics are
 * not written yields NaNs); guard zones after every output. The folded weights: column sums and
 * biases against the CPU's. Argument refusals, and on a GPU without wgmma the refusal only.
 * Tolerances relative to max|ref|: fp16 2e-3, bf16 1.6e-2 (gpu_testutil.h).
 * Run: test_gpu_lnfold <source dir>; SWIN_TEST_QUICK=1 drops the large case; exits 77 without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gpu_testutil.h"
#include "layers.h"
#include "ops.h"
#include "testutil.h"

typedef struct {
    int B, res_h, res_w, C, win, shift, pad_first, big;
} fcase;

static const fcase cases[] = {
    {2, 56, 56, 96, 7, 3, 0, 0},  {2, 28, 28, 192, 7, 0, 0, 0}, {3, 14, 14, 384, 7, 3, 0, 0},
    {2, 7, 7, 768, 7, 0, 0, 0},   {2, 14, 14, 200, 7, 3, 0, 0}, {2, 17, 13, 24, 7, 3, 1, 0},
    {2, 17, 13, 24, 7, 3, 0, 0},  {3, 11, 15, 40, 3, 1, 0, 0},
    {16, 56, 56, 96, 7, 3, 0, 1},   /* 784 row tiles: the persistent CTAs take several */
};

static swin_dims dims_of(const fcase *k) {
    swin_dims d = swin_dims_square(k->B, k->res_h, k->C, 1, k->C, k->win, k->shift, 1, 1e-5f);
    d.res_w = k->res_w, d.win_w = k->win, d.shift_w = k->shift, d.pad_first = k->pad_first;
    d.hp = (k->res_h + k->win - 1) / k->win * k->win;
    d.wp = (k->res_w + k->win - 1) / k->win * k->win;
    return d;
}

static void run_case(const fcase *k, int dt) {
    const swin_dims d = dims_of(k);
    const int C = d.C, H = 4 * C, T = d.B * d.res_h * d.res_w, rows = d.B * d.hp * d.wp, parts = (C + 127) / 128;
    const swin_dtype sdt = (swin_dtype)dt;
    char name[160];
    snprintf(name, sizeof name, "%s B%d %dx%d C%d win%d shift%d%s", tg_dt_name[dt], d.B, d.res_h, d.res_w, C, k->win,
             k->shift, d.hp != d.res_h || d.wp != d.res_w ? (k->pad_first ? " padded (pad, roll)" : " padded (roll, pad)")
                                                          : "");
    size_t nx = (size_t)T * C, nwin = (size_t)rows * C, nh = (size_t)T * H;
    float *x = malloc(nx * 4), *win = malloc(nwin * 4), *wp = malloc((size_t)C * C * 4), *bp = malloc(C * 4);
    float *w1 = malloc((size_t)H * C * 4), *b1 = malloc(H * 4), *g = malloc(C * 4), *be = malloc(C * 4);
    float *proj = malloc(nwin * 4), *ref_x = malloc(nx * 4), *got_x = malloc(nx * 4), *y = malloc(nx * 4);
    float *ref_h = malloc(nh * 4), *got_h = malloc(nh * 4);
    /* a residual stream of mean about 1 and Swin's scale of weights: the norm's statistics matter */
    tu_fill(x, nx, -1.0f, 3.0f), tu_fill(win, nwin, -1.0f, 1.0f), tu_fill(wp, (size_t)C * C, -0.2f, 0.2f);
    tu_fill(bp, C, -0.5f, 0.5f), tu_fill(w1, (size_t)H * C, -0.25f, 0.25f), tu_fill(b1, H, -0.5f, 0.5f);
    tu_fill(g, C, 0.5f, 1.5f), tu_fill(be, C, -0.5f, 0.5f);
    tu_round_to(x, nx, dt), tu_round_to(win, nwin, dt), tu_round_to(wp, (size_t)C * C, dt);
    tu_round_to(bp, C, dt), tu_round_to(b1, H, dt);   /* w1 stays fp32: the engine folds the fp32 weights */

    /* reference of the scatter: x += reverse(win @ wp^T + bp), rounded once */
    swin_linear_w lp = {wp, bp};
    swin_linear_cpu(proj, win, &lp, NULL, rows, C, C, SWIN_ACT_NONE);
    memcpy(ref_x, x, nx * 4);
    swin_window_reverse_residual_cpu(ref_x, proj, NULL, &d);
    tu_round_to(ref_x, nx, dt);

    tg_buf dx = tg_alloc(nx, dt), dwin = tg_alloc(nwin, dt), dwp = tg_alloc((size_t)C * C, dt), dbp = tg_alloc(C, dt);
    tg_buf dw1 = tg_alloc((size_t)H * C, 0), db1 = tg_alloc(H, dt), dg = tg_alloc(C, 0), dbe = tg_alloc(C, 0);
    tg_buf dwf = tg_alloc((size_t)H * C, dt), dcs = tg_alloc(H, 0), dbf = tg_alloc(H, 0);
    tg_buf dpart = tg_alloc((size_t)parts * T * 2, 0), dh = tg_alloc(nh, dt);
    tg_upload(&dx, x), tg_upload(&dwin, win), tg_upload(&dwp, wp), tg_upload(&dbp, bp), tg_upload(&dw1, w1);
    tg_upload(&db1, b1), tg_upload(&dg, g), tg_upload(&dbe, be);
    tg_poison(&dwf), tg_poison(&dcs), tg_poison(&dbf), tg_poison(&dpart), tg_poison(&dh);

    swin_status st = swin_ln_fold_weights_cuda(dwf.p, dcs.p, dbf.p, dw1.p, db1.p, dg.p, dbe.p, H, C, sdt, 0);
    int ok = CHECK(st == SWIN_OK, "%s: fold: %s", name, swin_last_error());
    if (ok) {   /* the folded weights: column sums of the stored values, bias + w1 beta */
        float *wf = malloc((size_t)H * C * 4), *cs = malloc(H * 4), *bf = malloc(H * 4);
        float *ref_cs = malloc(H * 4), *ref_bf = malloc(H * 4), *ref_wf = malloc((size_t)H * C * 4);
        tg_download(&dwf, wf), tg_download(&dcs, cs), tg_download(&dbf, bf);
        for (int n = 0; n < H; n++) {
            double s = 0, b = b1[n];
            for (int c = 0; c < C; c++) {
                ref_wf[(size_t)n * C + c] = w1[(size_t)n * C + c] * g[c];
                s += wf[(size_t)n * C + c];
                b += (double)w1[(size_t)n * C + c] * be[c];
            }
            ref_cs[n] = (float)s, ref_bf[n] = (float)b;
        }
        tu_round_to(ref_wf, (size_t)H * C, dt);
        char sub[200];
        snprintf(sub, sizeof sub, "%s fold weights", name);
        tg_compare(sub, wf, ref_wf, (size_t)H * C, 0.0);
        snprintf(sub, sizeof sub, "%s fold column sums", name);
        tg_compare(sub, cs, ref_cs, H, 1e-5);
        snprintf(sub, sizeof sub, "%s fold biases", name);
        tg_compare(sub, bf, ref_bf, H, 1e-5);
        free(wf), free(cs), free(bf), free(ref_cs), free(ref_bf), free(ref_wf);
    }
    st = swin_gemm_wgmma_proj_scatter_cuda(dx.p, dpart.p, dwin.p, dwp.p, dbp.p, &d, sdt, 0);
    ok = ok && CHECK(st == SWIN_OK, "%s: scatter: %s", name, swin_last_error()) &&
         CHECK(tg_sync_ok(name), "%s: CUDA error", name);
    if (ok) {
        char sub[200];
        snprintf(sub, sizeof sub, "%s proj scatter (x)", name);
        tg_download(&dx, got_x);
        tg_compare(sub, got_x, ref_x, nx, tg_tol[dt]);
        st = swin_gemm_wgmma_ln_gelu_cuda(dh.p, dx.p, dpart.p, dwf.p, dcs.p, dbf.p, T, C, H, d.eps, sdt, 0);
        ok = CHECK(st == SWIN_OK, "%s: ln_gelu: %s", name, swin_last_error()) &&
             CHECK(tg_sync_ok(name), "%s: CUDA error", name);
    }
    if (ok) {   /* reference of fc1: LN of the x the GPU wrote, then gelu(fc1) in fp32 */
        swin_ln_w ln = {g, be};
        swin_linear_w l1 = {w1, b1};
        swin_layernorm_cpu(y, got_x, &ln, T, C, d.eps);
        swin_linear_cpu(ref_h, y, &l1, NULL, T, C, H, SWIN_ACT_GELU);
        char sub[200];
        snprintf(sub, sizeof sub, "%s norm2 + fc1 + gelu", name);
        tg_download(&dh, got_h);
        tg_compare(sub, got_h, ref_h, nh, tg_tol[dt]);
    }
    CHECK(tg_guard_ok(&dx) && tg_guard_ok(&dpart) && tg_guard_ok(&dh) && tg_guard_ok(&dwf) && tg_guard_ok(&dcs) &&
              tg_guard_ok(&dbf),
          "%s: guard zone overwritten", name);
    tg_buf *all[] = {&dx, &dwin, &dwp, &dbp, &dw1, &db1, &dg, &dbe, &dwf, &dcs, &dbf, &dpart, &dh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
    free(x), free(win), free(wp), free(bp), free(w1), free(b1), free(g), free(be), free(proj), free(ref_x);
    free(got_x), free(y), free(ref_h), free(got_h);
}

static void expect(const char *what, swin_status got, swin_status want) {
    CHECK(got == want, "%s: status %d, expected %d (%s)", what, (int)got, (int)want, swin_last_error());
    printf("%s refusal: %s\n", got == want ? "ok  " : "FAIL", what);
}

static void refusals(int wgmma) {
    fcase k = {1, 14, 14, 96, 7, 3, 0, 0};
    swin_dims d = dims_of(&k);
    const int T = 196, C = 96, H = 384;
    tg_buf x = tg_alloc((size_t)T * C, 1), win = tg_alloc((size_t)T * C, 1), w = tg_alloc((size_t)H * C, 1);
    tg_buf part = tg_alloc((size_t)T * 2, 0), h = tg_alloc((size_t)T * H, 1), v = tg_alloc(H, 0);
    const swin_status unsup = SWIN_ERR_UNSUPPORTED, arg = wgmma ? SWIN_ERR_ARGUMENT : SWIN_ERR_UNSUPPORTED;
    expect("scatter fp32", swin_gemm_wgmma_proj_scatter_cuda(x.p, part.p, win.p, w.p, NULL, &d, SWIN_DT_F32, 0), unsup);
    expect("ln_gelu fp32", swin_gemm_wgmma_ln_gelu_cuda(h.p, x.p, part.p, w.p, v.p, v.p, T, C, H, 1e-5f, SWIN_DT_F32, 0),
           unsup);
    expect("fold fp32", swin_ln_fold_weights_cuda(w.p, v.p, v.p, v.p, NULL, v.p, v.p, H, C, SWIN_DT_F32, 0), unsup);
    expect("scatter NULL part", swin_gemm_wgmma_proj_scatter_cuda(x.p, NULL, win.p, w.p, NULL, &d, SWIN_DT_F16, 0),
           SWIN_ERR_ARGUMENT);
    expect("scatter x == win", swin_gemm_wgmma_proj_scatter_cuda(x.p, part.p, x.p, w.p, NULL, &d, SWIN_DT_F16, 0), arg);
    expect("scatter x misaligned",
           swin_gemm_wgmma_proj_scatter_cuda((char *)x.p + 2, part.p, win.p, w.p, NULL, &d, SWIN_DT_F16, 0), arg);
    expect("ln_gelu C 100", swin_gemm_wgmma_ln_gelu_cuda(h.p, x.p, part.p, w.p, v.p, v.p, T, 100, H, 1e-5f, SWIN_DT_F16, 0),
           unsup);
    expect("ln_gelu out == x", swin_gemm_wgmma_ln_gelu_cuda(x.p, x.p, part.p, w.p, v.p, v.p, T, C, H, 1e-5f, SWIN_DT_F16, 0),
           arg);
    expect("ln_gelu eps 0", swin_gemm_wgmma_ln_gelu_cuda(h.p, x.p, part.p, w.p, v.p, v.p, T, C, H, 0.0f, SWIN_DT_F16, 0),
           arg);
    expect("ln_gelu T 0", swin_gemm_wgmma_ln_gelu_cuda(h.p, x.p, part.p, w.p, v.p, v.p, 0, C, H, 1e-5f, SWIN_DT_F16, 0),
           arg);
    tg_buf *all[] = {&x, &win, &w, &part, &h, &v};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tg_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    if (!tg_have_gpu("test_gpu_lnfold")) return TU_SKIP;
    tu_seed(2211);
    const int wgmma = swin_gemm_wgmma_available();
    printf("wgmma: %s\n", wgmma ? "available" : "not available: refusals only");
    refusals(wgmma);
    if (wgmma)
        for (int dt = 1; dt <= 2; dt++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                if (!(tg_quick() && cases[i].big)) run_case(&cases[i], dt);
    return tu_finish("test_gpu_lnfold");
}
