/* test_gpu_kernels.c - every memory-bound CUDA op of kernels/ops.h against its CPU counterpart
 * (src/layers_cpu.c) in f32, f16 and bf16, on random data, Swin-T shapes and odd sizes.
 *
 * Inputs are rounded to the dtype first, so the reference sees the same values; results are
 * compared relative to max|ref| (f32 1e-5, f16 2e-3, bf16 1.6e-2) or bit-exactly for pure data
 * movement. Outputs are poisoned with NaN before each launch (except in-place ops) and every
 * buffer has a guard zone checked afterwards. Argument errors are checked too.
 * The GELU formulas of common.cuh each against float64 and their stated bounds ("gelu form").
 * Run: test_gpu_kernels <source dir>; SWIN_TEST_QUICK=1 runs the cases marked quick; exits 77
 * without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_testutil.h"
#include "layers.h"
#include "ops.h"
#include "testutil.h"

typedef enum {
    OP_LN, OP_LN_INPLACE, OP_LN_RES, OP_LN_POOL, OP_PARTITION, OP_REVERSE, OP_MERGE, OP_IM2COL,
    OP_ADD_POS, OP_GELU, OP_CONVERT, OP_REVERSE_LN
} op_kind;

static const char *const op_name[] = {"layernorm", "layernorm_inplace", "ln_residual", "ln_pool", "partition",
                                      "reverse", "merge", "im2col", "add_pos", "gelu", "convert", "reverse_ln"};

/* Meaning of the fields per op:
 *   LN*: rows = B*res*res, C     LN_POOL: B, L = res*res, C     PARTITION/REVERSE*: B res C W shift
 *   MERGE: B res C               IM2COL: B, H = W = res, p = window    ADD_POS: B, L = res*res, C
 *   GELU: n = B*res*C, ln = with residual        CONVERT: n = B*res*C, all dtype pairs
 * ln: LayerNorm on (partition, reverse, merge)
 * REVERSE_LN: two outputs, x (bit-exact: the same add as REVERSE without LN) and LN(x) */
typedef struct {
    op_kind op;
    int B, res, C, window, shift, ln, quick;
} kcase;

static const kcase cases[] = {
    /* op            B  res   C    W  sh ln quick */
    {OP_LN,          1, 56,   96,  0, 0, 1, 1},
    {OP_LN,          3, 28,  192,  0, 0, 1, 0},
    {OP_LN,          1, 14,  384,  0, 0, 1, 0},
    {OP_LN,          3,  7,  768,  0, 0, 1, 1},
    {OP_LN,          1, 14, 1536,  0, 0, 1, 0},   /* V1 merge width of Swin-T stage 3 */
    {OP_LN,          1, 16,   40,  0, 0, 1, 1},
    {OP_LN,          1, 12,   36,  0, 0, 1, 1},   /* 36 % 8: scalar path in f16/bf16 */
    {OP_LN,          1,  7, 3072,  0, 0, 1, 1},   /* longer than registers: loop kernel */
    {OP_LN,          2,  5, 1030,  0, 0, 1, 0},   /* scalar and too long: scalar loop kernel */
    {OP_LN_INPLACE,  1, 28,  192,  0, 0, 1, 1},
    {OP_LN_RES,      1, 56,   96,  0, 0, 1, 1},
    {OP_LN_RES,      3,  7,  768,  0, 0, 1, 0},
    {OP_LN_RES,      1, 16,   40,  0, 0, 1, 0},
    {OP_LN_RES,      1, 12,   36,  0, 0, 1, 1},
    {OP_LN_POOL,     1,  7,  768,  0, 0, 1, 1},
    {OP_LN_POOL,     3,  7,  768,  0, 0, 1, 0},
    {OP_LN_POOL,     2,  4,   40,  0, 0, 1, 1},
    {OP_LN_POOL,     3,  3,   36,  0, 0, 1, 0},
    {OP_LN_POOL,     1,  7, 1536,  0, 0, 1, 0},
    {OP_PARTITION,   1, 56,   96,  7, 0, 1, 1},
    {OP_PARTITION,   1, 56,   96,  7, 3, 1, 1},
    {OP_PARTITION,   3, 28,  192,  7, 3, 1, 0},
    {OP_PARTITION,   1, 14,  384,  7, 3, 0, 1},
    {OP_PARTITION,   3,  7,  768,  7, 0, 1, 0},
    {OP_PARTITION,   1, 16,   40,  8, 4, 1, 1},
    {OP_PARTITION,   2, 16,   40,  8, 4, 0, 0},
    {OP_PARTITION,   1, 12,   36, 12, 0, 1, 0},
    {OP_REVERSE,     1, 56,   96,  7, 0, 0, 1},
    {OP_REVERSE,     1, 56,   96,  7, 3, 0, 0},
    {OP_REVERSE,     3, 28,  192,  7, 3, 1, 1},
    {OP_REVERSE,     1, 14,  384,  7, 3, 1, 0},
    {OP_REVERSE,     3,  7,  768,  7, 0, 0, 0},
    {OP_REVERSE,     1, 16,   40,  8, 4, 1, 1},
    {OP_REVERSE,     1, 12,   36, 12, 0, 1, 0},
    {OP_REVERSE_LN,  1, 56,   96,  7, 3, 1, 1},
    {OP_REVERSE_LN,  2, 56,   96,  7, 0, 1, 0},
    {OP_REVERSE_LN,  3, 28,  192,  7, 3, 1, 1},
    {OP_REVERSE_LN,  1, 14,  384,  7, 3, 1, 0},
    {OP_REVERSE_LN,  2,  7,  768,  7, 0, 1, 1},
    {OP_REVERSE_LN,  1, 16,   40,  8, 4, 1, 1},   /* 5 packs: power-of-two group */
    {OP_REVERSE_LN,  1, 12,   36, 12, 0, 1, 1},   /* scalar path in f16/bf16 */
    {OP_REVERSE_LN,  1,  7, 3072,  7, 3, 1, 1},   /* longer than registers: loop kernel */
    {OP_REVERSE_LN,  1,  7, 1030,  7, 3, 1, 0},   /* scalar loop kernel */
    {OP_MERGE,       1, 56,   96,  0, 0, 1, 1},
    {OP_MERGE,       3, 28,  192,  0, 0, 1, 0},
    {OP_MERGE,       1, 14,  384,  0, 0, 1, 0},
    {OP_MERGE,       1, 56,   96,  0, 0, 0, 1},
    {OP_MERGE,       3, 14,  384,  0, 0, 0, 0},
    {OP_MERGE,       1, 16,   40,  0, 0, 1, 1},
    {OP_MERGE,       1, 12,   36,  0, 0, 1, 1},
    {OP_MERGE,       1, 12,   36,  0, 0, 0, 0},
    {OP_MERGE,       2,  7,   48,  0, 0, 1, 1},   /* odd grids: the last row and column read zeros */
    {OP_MERGE,       1, 13,   36,  0, 0, 0, 0},
    {OP_IM2COL,      1, 224,   0,  4, 0, 0, 1},
    {OP_IM2COL,      3, 224,   0,  4, 0, 0, 0},
    {OP_IM2COL,      2, 20,    0,  5, 0, 0, 1},   /* patch 5: the general kernel */
    {OP_IM2COL,      2, 256,   0,  4, 0, 0, 0},
    {OP_ADD_POS,     1, 56,   96,  0, 0, 0, 1},
    {OP_ADD_POS,     3, 56,   96,  0, 0, 0, 0},
    {OP_ADD_POS,     2,  3,    3,  0, 0, 0, 1},   /* L*C = 27: scalar path */
    {OP_GELU,     6272,  1,  384,  0, 0, 0, 1},
    {OP_GELU,        1, 1001,  1,  0, 0, 1, 1},   /* odd n, with residual */
    {OP_CONVERT,     1, 1000003, 1, 0, 0, 0, 1},
};

// ---- one case

static int dims_of(const kcase *c, swin_dims *d) {
    *d = swin_dims_square(c->B, c->res, c->C, 1, c->C, c->window, c->shift, 1, 1e-5f);
    return 0;
}

/* sizes of input (na), second input (nb) and output (no) in elements */
static void sizes(const kcase *c, size_t *na, size_t *nb, size_t *no) {
    size_t tok = (size_t)c->B * c->res * c->res, r2 = (size_t)((c->res + 1) / 2) * ((c->res + 1) / 2);
    *nb = 0;
    switch (c->op) {
    case OP_LN: case OP_LN_INPLACE: case OP_PARTITION: *na = *no = tok * c->C; break;
    case OP_LN_RES: case OP_REVERSE: case OP_REVERSE_LN: *na = *no = tok * c->C; *nb = tok * c->C; break;
    case OP_LN_POOL: *na = tok * c->C; *no = (size_t)c->B * c->C; break;
    case OP_MERGE: *na = tok * c->C; *no = c->B * r2 * 4 * c->C; break;
    case OP_IM2COL: *na = (size_t)c->B * 3 * c->res * c->res; *no = *na; break;
    case OP_ADD_POS: *na = *no = tok * c->C; *nb = (size_t)c->res * c->res * c->C; break;
    case OP_GELU: case OP_CONVERT: *na = *no = (size_t)c->B * c->res * c->C; *nb = c->ln ? *na : 0; break;
    }
}

/* erfc form: 1 + erf(x/sqrt 2) cancels to 0 in double for x < -8 */
static double gelu_ref(float x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

/* Runs case c in dtype dt (for CONVERT: dt -> dt2). Returns nothing; records checks. */
static void run_case(const kcase *c, int dt, int dt2) {
    char name[128];
    size_t na = 0, nb = 0, no = 0;
    sizes(c, &na, &nb, &no);
    if (c->op == OP_CONVERT)
        snprintf(name, sizeof name, "convert %s->%s n%zu", tg_dt_name[dt], tg_dt_name[dt2], na);
    else
        snprintf(name, sizeof name, "%s %s B%d res%d C%d W%d s%d%s", op_name[c->op], tg_dt_name[dt], c->B,
                 c->res, c->C, c->window, c->shift, c->ln ? "" : " noln");
    int flat = c->op == OP_GELU || c->op == OP_CONVERT;   /* res is a length there, not a side */
    int L = flat ? 0 : c->res * c->res, rows = c->B * L, Cln = c->op == OP_MERGE ? 4 * c->C : c->C;
    float *a = malloc(na * sizeof(float)), *b = malloc((nb ? nb : 1) * sizeof(float));
    float *ref = malloc(no * sizeof(float)), *got = malloc(no * sizeof(float));
    float *ref_x = malloc(no * sizeof(float));   /* REVERSE_LN: the updated x (ref holds LN(x)) */
    float *lw = malloc((Cln ? Cln : 1) * sizeof(float)), *lb = malloc((Cln ? Cln : 1) * sizeof(float));
    tu_fill(a, na, -1.0f, 3.0f);   /* non-zero mean: the statistics must subtract it */
    tu_fill(b, nb ? nb : 1, -2.0f, 2.0f);
    tu_fill(lw, Cln ? Cln : 1, 0.5f, 1.5f);
    tu_fill(lb, Cln ? Cln : 1, -0.5f, 0.5f);
    if (c->op != OP_IM2COL) tu_round_to(a, na, dt);   /* the image stays fp32 */
    tu_round_to(b, nb ? nb : 1, dt);
    swin_ln_w ln = {lw, lb};
    swin_dims d;
    dims_of(c, &d);

    /* reference, on the rounded inputs */
    int exact = 0, in_place = 0;
    switch (c->op) {
    case OP_LN: case OP_LN_INPLACE: swin_layernorm_cpu(ref, a, &ln, rows, c->C, d.eps); in_place = c->op == OP_LN_INPLACE; break;
    case OP_LN_RES: memcpy(ref, b, no * sizeof(float)); swin_layernorm_residual_cpu(ref, a, &ln, rows, c->C, d.eps); in_place = 1; break;
    case OP_LN_POOL: swin_ln_pool_cpu(ref, a, &ln, c->B, L, c->C, d.eps); break;
    case OP_PARTITION: swin_ln_shift_partition_cpu(ref, a, c->ln ? &ln : NULL, &d); exact = !c->ln; break;
    case OP_REVERSE: memcpy(ref, b, no * sizeof(float)); swin_window_reverse_residual_cpu(ref, a, c->ln ? &ln : NULL, &d); exact = !c->ln; in_place = 1; break;
    case OP_MERGE: swin_merge_gather_cpu(ref, a, c->ln ? &ln : NULL, c->B, c->res, c->res, c->C, d.eps); exact = !c->ln; break;
    case OP_IM2COL:
        swin_im2col_patch_cpu(ref, a, c->B, c->res, c->res, c->window, c->res / c->window, c->res / c->window);
        exact = 1;
        break;
    case OP_ADD_POS: memcpy(ref, a, no * sizeof(float)); swin_add_pos_cpu(ref, b, c->B, L, c->C); exact = 1; in_place = 1; break;
    case OP_GELU:
        for (size_t i = 0; i < no; i++) ref[i] = (float)gelu_ref(a[i]) + (c->ln ? b[i] : 0.0f);
        in_place = 1;
        break;
    case OP_CONVERT: memcpy(ref, a, no * sizeof(float)); exact = 1; break;
    case OP_REVERSE_LN:
        memcpy(ref_x, b, no * sizeof(float));
        swin_window_reverse_residual_cpu(ref_x, a, NULL, &d);
        tu_round_to(ref_x, no, dt);   /* the device rounds the sum before normalising it */
        swin_layernorm_cpu(ref, ref_x, &ln, rows, c->C, d.eps);
        break;
    }
    int odt = c->op == OP_CONVERT ? dt2 : dt;
    if (exact) tu_round_to(ref, no, odt);

    /* device */
    tg_buf da = tg_alloc(na, c->op == OP_IM2COL ? 0 : dt), db = tg_alloc(nb ? nb : 1, dt);
    tg_buf dout = tg_alloc(no, odt), dlw = tg_alloc(Cln ? Cln : 1, 0), dlb = tg_alloc(Cln ? Cln : 1, 0);
    tg_upload(&da, a);
    tg_upload(&db, b);
    tg_upload(&dlw, lw);
    tg_upload(&dlb, lb);
    if (!in_place) tg_poison(&dout);
    const float *w = c->ln ? (const float *)dlw.p : NULL, *bb = c->ln ? (const float *)dlb.p : NULL;
    swin_dtype sdt = (swin_dtype)dt;
    swin_status st = SWIN_OK;
    tg_buf *res_buf = &dout;
    switch (c->op) {
    case OP_LN: st = swin_layernorm_cuda(dout.p, da.p, dlw.p, dlb.p, rows, c->C, d.eps, sdt, 0); break;
    case OP_LN_INPLACE: st = swin_layernorm_cuda(da.p, da.p, dlw.p, dlb.p, rows, c->C, d.eps, sdt, 0); res_buf = &da; break;
    case OP_LN_RES: st = swin_layernorm_residual_cuda(db.p, da.p, dlw.p, dlb.p, rows, c->C, d.eps, sdt, 0); res_buf = &db; break;
    case OP_LN_POOL: st = swin_ln_pool_cuda(dout.p, da.p, dlw.p, dlb.p, c->B, L, c->C, d.eps, sdt, 0); break;
    case OP_PARTITION: st = swin_ln_shift_partition_cuda(dout.p, da.p, w, bb, &d, NULL, sdt, 0); break;
    case OP_REVERSE: st = swin_window_reverse_residual_cuda(db.p, da.p, w, bb, &d, NULL, sdt, 0); res_buf = &db; break;
    case OP_MERGE: st = swin_merge_gather_cuda(dout.p, da.p, w, bb, c->B, c->res, c->res, c->C, d.eps, NULL, sdt, 0); break;
    case OP_IM2COL:
        st = swin_im2col_patch_cuda(dout.p, da.p, c->B, c->res, c->res, c->window, c->res / c->window,
                                    c->res / c->window, sdt, 0);
        break;
    case OP_ADD_POS: st = swin_add_pos_cuda(da.p, db.p, c->B, L, c->C, sdt, 0); res_buf = &da; break;
    case OP_GELU: st = swin_gelu_cuda(da.p, c->ln ? db.p : NULL, na, sdt, 0); res_buf = &da; break;
    case OP_CONVERT: st = swin_convert_cuda(dout.p, (swin_dtype)dt2, da.p, sdt, na, 0); break;
    case OP_REVERSE_LN: st = swin_window_reverse_residual_ln_cuda(db.p, dout.p, da.p, dlw.p, dlb.p, &d, NULL, sdt, 0); break;
    }
    int ok = CHECK(st == SWIN_OK, "%s: status %s: %s", name, swin_status_str(st), swin_last_error());
    ok = ok && CHECK(tg_sync_ok(name), "%s: CUDA error after the launch", name);
    if (ok) {
        tg_download(res_buf, got);
        tg_compare(name, got, ref, no, exact ? 0.0 : tg_tol[odt]);
        if (c->op == OP_REVERSE_LN) {
            char xname[160];
            snprintf(xname, sizeof xname, "%s (x)", name);
            tg_download(&db, got);
            tg_compare(xname, got, ref_x, no, 0.0);
        }
        CHECK(tg_guard_ok(&da) && tg_guard_ok(&db) && tg_guard_ok(&dout), "%s: guard zone overwritten", name);
    }
    tg_free(&da), tg_free(&db), tg_free(&dout), tg_free(&dlw), tg_free(&dlb);
    free(a), free(b), free(ref), free(ref_x), free(got), free(lw), free(lb);
}

// ---- window layout of non-square and padded geometries, both libraries' orders

/* the dims of geometry g {res_h, res_w, win_h, win_w, shift_h, shift_w, pad_first}: batch 2, one
 * head of 24 channels */
static swin_dims geometry_dims(const int *g) {
    swin_dims d = swin_dims_square(2, g[0], 24, 1, 24, g[2], g[4], 1, 1e-5f);
    d.res_w = g[1], d.win_w = g[3], d.shift_w = g[5], d.pad_first = g[6];
    d.hp = (g[0] + g[2] - 1) / g[2] * g[2];
    d.wp = (g[1] + g[3] - 1) / g[3] * g[3];
    return d;
}

/* partition (LN or not), reverse (LN or not) and reverse + LN of one geometry in dtype dt against
 * the CPU reference: {res_h, res_w, win_h, win_w, shift_h, shift_w, pad_first}; the padded grid is
 * the grid rounded up to the window. The partition output's padding rows must be exactly zero. */
static void window_geometry_case(const int *g, int dt) {
    swin_dims d = geometry_dims(g);
    size_t nx = (size_t)d.B * d.res_h * d.res_w * d.C, nwin = (size_t)d.B * d.hp * d.wp * d.C;
    float *x = malloc(nx * 4), *win = malloc(nwin * 4), *ref = malloc((nx > nwin ? nx : nwin) * 4);
    float *ref_x = malloc(nx * 4), *got = malloc((nx > nwin ? nx : nwin) * 4);
    float *lw = malloc(d.C * 4), *lb = malloc(d.C * 4);
    tu_fill(x, nx, -1.0f, 3.0f), tu_round_to(x, nx, dt);
    tu_fill(win, nwin, -2.0f, 2.0f), tu_round_to(win, nwin, dt);
    tu_fill(lw, d.C, 0.5f, 1.5f), tu_fill(lb, d.C, -0.5f, 0.5f);
    swin_ln_w ln = {lw, lb};
    tg_buf dx = tg_alloc(nx, dt), dwin = tg_alloc(nwin, dt), dout = tg_alloc(nx > nwin ? nx : nwin, dt);
    tg_buf dlw = tg_alloc(d.C, 0), dlb = tg_alloc(d.C, 0);
    tg_upload(&dlw, lw), tg_upload(&dlb, lb);
    swin_dtype sdt = (swin_dtype)dt;
    char name[160];
    for (int op = 0; op < 5; op++) {   /* partition, partition+LN, reverse, reverse+LN(win), reverse then LN */
        int with_ln = op == 1 || op == 3, exact = !with_ln && op != 4;
        const float *w = with_ln ? (const float *)dlw.p : NULL, *b = with_ln ? (const float *)dlb.p : NULL;
        snprintf(name, sizeof name, "%s%s %s %dx%d W%dx%d s%dx%d %s",
                 op < 2 ? "partition" : op == 4 ? "reverse_ln" : "reverse", with_ln ? "+ln" : "", tg_dt_name[dt],
                 g[0], g[1], g[2], g[3], g[4], g[5], g[6] ? "hf" : "timm");
        swin_status st;
        size_t no;
        if (op < 2) {   /* win <- partition(x) */
            no = nwin;
            swin_ln_shift_partition_cpu(ref, x, with_ln ? &ln : NULL, &d);
            tg_upload(&dx, x), tg_poison(&dout);
            dout.n = nwin;
            st = swin_ln_shift_partition_cuda(dout.p, dx.p, w, b, &d, NULL, sdt, 0);
        } else if (op < 4) {   /* x += reverse(LN?(win)) */
            no = nx;
            memcpy(ref, x, nx * 4);
            swin_window_reverse_residual_cpu(ref, win, with_ln ? &ln : NULL, &d);
            tg_upload(&dx, x), tg_upload(&dwin, win);
            st = swin_window_reverse_residual_cuda(dx.p, dwin.p, w, b, &d, NULL, sdt, 0);
        } else {   /* x += reverse(win); out = LN(x) */
            no = nx;
            memcpy(ref_x, x, nx * 4);
            swin_window_reverse_residual_cpu(ref_x, win, NULL, &d);
            tu_round_to(ref_x, nx, dt);
            swin_layernorm_cpu(ref, ref_x, &ln, d.B * d.res_h * d.res_w, d.C, d.eps);
            tg_upload(&dx, x), tg_upload(&dwin, win), tg_poison(&dout);
            dout.n = nx;
            st = swin_window_reverse_residual_ln_cuda(dx.p, dout.p, dwin.p, dlw.p, dlb.p, &d, NULL, sdt, 0);
        }
        if (exact || op == 2 || op == 3) tu_round_to(ref, no, dt);
        int ok = CHECK(st == SWIN_OK, "%s: status %s: %s", name, swin_status_str(st), swin_last_error());
        ok = ok && CHECK(tg_sync_ok(name), "%s: CUDA error after the launch", name);
        if (ok) {
            tg_download(op < 2 || op == 4 ? &dout : &dx, got);
            tg_compare(name, got, ref, no, exact ? 0.0 : tg_tol[dt]);
            if (op == 4) {
                char xname[200];
                snprintf(xname, sizeof xname, "%s (x)", name);
                tg_download(&dx, got);
                tg_compare(xname, got, ref_x, nx, 0.0);
            }
        }
        dout.n = nx > nwin ? nx : nwin;
    }
    CHECK(tg_guard_ok(&dx) && tg_guard_ok(&dwin) && tg_guard_ok(&dout), "%s: guard zone overwritten", name);
    tg_free(&dx), tg_free(&dwin), tg_free(&dout), tg_free(&dlw), tg_free(&dlb);
    free(x), free(win), free(ref), free(ref_x), free(got), free(lw), free(lb);
}

static void window_geometry(int quick) {
    static const int G[][7] = {
        {6, 8, 6, 7, 0, 3, 0},   {6, 8, 6, 6, 0, 0, 1},   {4, 8, 4, 4, 0, 2, 0},   {2, 4, 2, 4, 0, 0, 0},
        {16, 16, 7, 7, 3, 3, 0}, {16, 16, 7, 7, 3, 3, 1}, {17, 13, 7, 7, 3, 3, 1}, {11, 15, 3, 3, 1, 1, 0},
        {9, 16, 4, 4, 2, 2, 1},  {3, 5, 3, 3, 0, 0, 1},   {8, 9, 7, 7, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
        for (int dt = 0; dt < 3; dt++)
            if (!quick || i == 5) window_geometry_case(G[i], dt);
}

// ---- E4M3 copies written by the window ops and the merge gather (swin_q8_dst): bit for bit the
// quantising pass

/* bytes of a device buffer */
static unsigned char *bytes_of(const void *d, size_t n) {
    unsigned char *h = malloc(n ? n : 1);
    cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
    return h;
}

/* op 0 partition+LN, 1 partition, 2 reverse+LN (q8 of x), 3 reverse then LN (q8 of out), 4 merge
 * gather+LN, 5 merge gather (q8 of out; the geometry's grid and C) on geometry g in dtype dt: run without the copy, quantise its 16-bit output with swin_quantize_fp8_cuda, then
 * run with the copy (keep16 1, then 0) from the same inputs: the copy must equal those bytes, the
 * 16-bit output must be the same with keep16 and untouched (still poisoned) without. The scale
 * makes the largest inputs saturate at 448. */
static void q8_case(const int *g, int dt) {
    swin_dims d = geometry_dims(g);
    size_t nx = (size_t)d.B * d.res_h * d.res_w * d.C, nwin = (size_t)d.B * d.hp * d.wp * d.C;
    size_t nmerge = (size_t)d.B * ((d.res_h + 1) / 2) * ((d.res_w + 1) / 2) * 4 * d.C;
    size_t nmax = nx > nwin ? nx : nwin;
    if (nmerge > nmax) nmax = nmerge;
    const int nln = 4 * d.C;   /* LayerNorm parameters: C for the window ops, 4C for the merge */
    float *x = malloc(nx * 4), *win = malloc(nwin * 4), *lw = malloc(nln * 4), *lb = malloc(nln * 4);
    float *out1 = malloc(nmax * 4), *out2 = malloc(nmax * 4);
    tu_fill(x, nx, -1.0f, 3.0f), tu_round_to(x, nx, dt);
    tu_fill(win, nwin, -2.0f, 2.0f), tu_round_to(win, nwin, dt);
    tu_fill(lw, nln, 0.5f, 1.5f), tu_fill(lb, nln, -0.5f, 0.5f);
    tg_buf dx = tg_alloc(nx, dt), dwin = tg_alloc(nwin, dt), dout = tg_alloc(nmax, dt);
    tg_buf dlw = tg_alloc(nln, 0), dlb = tg_alloc(nln, 0);
    tg_upload(&dlw, lw), tg_upload(&dlb, lb);
    unsigned char *dq = NULL, *dref = NULL;
    cudaMalloc((void **)&dq, nmax), cudaMalloc((void **)&dref, nmax);
    const float inv = 100.0f;
    swin_dtype sdt = (swin_dtype)dt;
    static const char *opn[] = {"partition+ln", "partition", "reverse+ln", "reverse_ln", "merge+ln", "merge"};
    for (int op = 0; op < 6; op++) {
        char name[160];
        snprintf(name, sizeof name, "q8 %s %s %dx%d W%dx%d s%dx%d %s", opn[op], tg_dt_name[dt], g[0], g[1], g[2],
                 g[3], g[4], g[5], g[6] ? "hf" : "timm");
        const size_t n = op < 2 ? nwin : op < 4 ? nx : nmerge;
        tg_buf *o16 = op == 2 ? &dx : &dout;   /* the output the copy is of */
        for (int pass = 0; pass < 3; pass++) {   /* no copy, copy + 16-bit, copy only */
            swin_q8_dst q = {dq, inv, pass == 1};
            const swin_q8_dst *qp = pass ? &q : NULL;
            tg_upload(&dx, x), tg_upload(&dwin, win), tg_poison(&dout);
            cudaMemset(dq, 0xFF, nmax);
            swin_status st;
            if (op < 2)
                st = swin_ln_shift_partition_cuda(dout.p, dx.p, op == 0 ? dlw.p : NULL, op == 0 ? dlb.p : NULL, &d, qp,
                                                  sdt, 0);
            else if (op == 2)
                st = swin_window_reverse_residual_cuda(dx.p, dwin.p, dlw.p, dlb.p, &d, qp, sdt, 0);
            else if (op == 3)
                st = swin_window_reverse_residual_ln_cuda(dx.p, dout.p, dwin.p, dlw.p, dlb.p, &d, qp, sdt, 0);
            else
                st = swin_merge_gather_cuda(dout.p, dx.p, op == 4 ? dlw.p : NULL, op == 4 ? dlb.p : NULL, d.B, d.res_h,
                                            d.res_w, d.C, d.eps, qp, sdt, 0);
            if (!CHECK(st == SWIN_OK && tg_sync_ok(name), "%s pass %d: %s", name, pass, swin_last_error())) break;
            size_t keep = o16->n;
            o16->n = n;
            if (pass == 0) {
                tg_download(o16, out1);
                st = swin_quantize_fp8_cuda(dref, o16->p, n, inv, sdt, 0);
                CHECK(st == SWIN_OK && tg_sync_ok(name), "%s: quantize: %s", name, swin_last_error());
            } else {
                tg_download(o16, out2);
                unsigned char *a = bytes_of(dq, n), *b = bytes_of(dref, n);
                size_t bad = 0, first = 0;
                for (size_t i = 0; i < n; i++)
                    if (a[i] != b[i] && !bad++) first = i;
                CHECK(bad == 0, "%s keep16 %d: %zu of %zu E4M3 bytes differ from the quantising pass (first at %zu: "
                      "0x%02x, expected 0x%02x)", name, pass == 1, bad, n, first, a[first], b[first]);
                size_t diff = 0;
                for (size_t i = 0; i < n; i++) {
                    int same = memcmp(&out1[i], &out2[i], 4) == 0;
                    if (pass == 1 || op == 2 ? !same : !isnan(out2[i])) diff++;
                }
                CHECK(diff == 0, "%s keep16 %d: %zu 16-bit values %s", name, pass == 1, diff,
                      pass == 1 || op == 2 ? "differ from the run without the copy" : "written (expected none)");
                free(a), free(b);
            }
            o16->n = keep;
        }
        printf("ok   %s\n", name);
    }
    CHECK(tg_guard_ok(&dx) && tg_guard_ok(&dwin) && tg_guard_ok(&dout), "q8: guard zone overwritten");
    cudaFree(dq), cudaFree(dref);
    tg_free(&dx), tg_free(&dwin), tg_free(&dout), tg_free(&dlw), tg_free(&dlb);
    free(x), free(win), free(lw), free(lb), free(out1), free(out2);
}

// ---- GELU of 16-bit data: as accurate as PyTorch's fp32-math GELU, on a dense grid

/* Relative-to-max tolerances could not tell the erf GELU from the tanh approximation (which
 * differs by up to ~1e-4 near x = -1.5), so every result is held to 1 ulp of the correctly
 * rounded GELU, or to 0.5 |x| 2^-23 absolute: the rounding of 1 + erf in fp32 math, which is
 * what PyTorch computes too (it makes GELU exactly 0 for x < -5.9, where the true value is below
 * 1e-8). */
static void gelu_ulp_check(void) {
    const size_t n = 3 * 16384 + 2 * 2000;
    float *x = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    for (size_t i = 0; i < 3 * 16384; i++) x[i] = -12.0f + (float)i / 2048.0f;   /* [-12, 12) */
    for (size_t i = 0; i < 2000; i++) {   /* tiny magnitudes, both signs */
        x[3 * 16384 + i] = powf(10.0f, -6.0f + 5.0f * (float)i / 2000.0f);
        x[3 * 16384 + 2000 + i] = -x[3 * 16384 + i];
    }
    for (int dt = 1; dt <= 2; dt++) {
        char name[64];
        snprintf(name, sizeof name, "gelu ulp %s n%zu", tg_dt_name[dt], n);
        tu_round_to(x, n, dt);
        for (size_t i = 0; i < n; i++) ref[i] = (float)gelu_ref(x[i]);
        tu_round_to(ref, n, dt);
        tg_buf d = tg_alloc(n, dt);
        tg_upload(&d, x);
        swin_status st = swin_gelu_cuda(d.p, NULL, n, (swin_dtype)dt, 0);
        if (CHECK(st == SWIN_OK && tg_sync_ok(name), "%s: %s", name, swin_last_error())) {
            tg_download(&d, got);
            double worst = 0;
            size_t at = 0;
            for (size_t i = 0; i < n; i++) {
                int e;
                frexp(fabs(ref[i]), &e);
                double ulp = ldexp(1.0, e - (dt == 1 ? 11 : 8));
                double floor_ulp = dt == 1 ? ldexp(1.0, -24) : ldexp(1.0, -133);
                if (ref[i] == 0.0f || ulp < floor_ulp) ulp = floor_ulp;
                double diff = fabs((double)got[i] - ref[i]);
                double u = diff <= 0.5 * fabs(x[i]) * ldexp(1.0, -23) ? 0.0 : diff / ulp;
                if (!(u <= worst)) worst = u, at = i;   /* NaN counts as worst */
            }
            printf("%s %s: max %.2f ulp beyond fp32 rounding (x = %g: got %g, ref %g)\n", worst <= 1.0 ? "ok  " : "FAIL", name, worst,
                   x[at], got[at], ref[at]);
            CHECK(worst <= 1.0, "%s: %.2f ulp at x = %g (got %g, ref %g)", name, worst, x[at], got[at], ref[at]);
        }
        tg_free(&d);
    }
    free(x), free(ref), free(got);
}

/* The cheaper GELU formulas of kernels/common.cuh (swin_gelu_form_cuda), fp32, against float64
 * x Phi(x) on a dense sweep of [-12, 12], magnitudes from 1e-30 to 3e38 and the special values,
 * each within the bound its comment states: |dy| <= a |x| + r |y| (a: the formula's truncation,
 * from its source; r = 2^-20: about five fp32 roundings and the two special-function
 * instructions' 2^-22 each). Printed: the largest |dy| over that bound. */
static void gelu_form_check(void) {
    static const struct { swin_gelu_kind form; const char *name; double a; } forms[] = {
        {SWIN_GELU_ERFC, "erfc (Numerical Recipes, 1.2e-7 fractional)", 3e-7},   /* 0.5 |x| 1.2e-7, doubled */
        {SWIN_GELU_AS, "erf16 (Abramowitz & Stegun, 1.5e-7 absolute)", 0.75e-7},
    };
    const double r = 0x1p-20;
    const size_t nd = (size_t)1 << 22, nt = 4000, n = nd + 2 * nt + 4;
    float *x = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    double *ref = malloc(n * sizeof(double));
    for (size_t i = 0; i < nd; i++) x[i] = -12.0f + 24.0f * (float)i / (float)nd;
    for (size_t i = 0; i < nt; i++) {   /* magnitudes 1e-30 .. 3e38, both signs */
        x[nd + 2 * i] = (float)pow(10.0, -30.0 + 68.4 * (double)i / (double)nt);
        x[nd + 2 * i + 1] = -x[nd + 2 * i];
    }
    x[n - 4] = INFINITY, x[n - 3] = -INFINITY, x[n - 2] = NAN, x[n - 1] = -0.0f;
    for (size_t i = 0; i < n; i++) ref[i] = 0.5 * x[i] * erfc(-(double)x[i] / sqrt(2.0));   /* -inf: NaN */
    tg_buf dx = tg_alloc(n, 0), dy = tg_alloc(n, 0);
    tg_upload(&dx, x);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        char name[96];
        snprintf(name, sizeof name, "gelu form %s n%zu", forms[f].name, n);
        tg_poison(&dy);
        swin_status st = swin_gelu_form_cuda((float *)dy.p, (const float *)dx.p, n, forms[f].form, 0);
        if (!CHECK(st == SWIN_OK && tg_sync_ok(name), "%s: %s", name, swin_last_error())) continue;
        tg_download(&dy, got);
        double worst = 0;
        size_t at = 0, bad = 0;
        for (size_t i = 0; i < n; i++) {
            const double y = got[i], rf = ref[i], d = fabs(y - rf);
            int ok;
            if (isnan(rf)) ok = isnan(y) || (x[i] < 0 && y == 0.0);   /* GELU(-inf): NaN, or 0 */
            else if (isinf(rf)) ok = y == rf;
            else {
                const double q = d / (forms[f].a * fabs(x[i]) + r * fabs(rf) + 1e-37);
                ok = isfinite(y) && q <= 1.0;
                if (q > worst) worst = q;
            }
            if (!ok && bad++ == 0) at = i;
        }
        printf("%s %s: max |dy| / (a|x| + r|y|) %.3f (a %.3g, r 2^-20)\n", bad ? "FAIL" : "ok  ", name, worst,
               forms[f].a);
        CHECK(!bad, "%s: %zu values beyond the bound, first x = %.9g: got %.9g, ref %.9g", name, bad, x[at], got[at],
              ref[at]);
    }
    tg_free(&dx), tg_free(&dy);
    free(x), free(got), free(ref);
}

// ---- argument checking: each call must fail with SWIN_ERR_ARGUMENT and a message

static void expect_arg_error(const char *what, swin_status st) {
    int ok = st == SWIN_ERR_ARGUMENT && swin_last_error()[0];
    printf("%s argument check: %-36s -> %s\n", ok ? "ok  " : "FAIL", what, swin_last_error());
    CHECK(ok, "%s: expected an argument error, got %s", what, swin_status_str(st));
}

static void argument_checks(void) {
    tg_buf x = tg_alloc(4096, 0), y = tg_alloc(4096, 0), lw = tg_alloc(64, 0);
    const float *w = lw.p;
    swin_dims d = swin_dims_square(1, 14, 8, 1, 8, 7, 3, 1, 1e-5f);
    swin_dims bad = d;
    expect_arg_error("layernorm rows 0", swin_layernorm_cuda(y.p, x.p, w, w, 0, 8, 1e-5f, SWIN_DT_F32, 0));
    expect_arg_error("layernorm NULL in", swin_layernorm_cuda(y.p, NULL, w, w, 4, 8, 1e-5f, SWIN_DT_F32, 0));
    expect_arg_error("layernorm no bias", swin_layernorm_cuda(y.p, x.p, w, NULL, 4, 8, 1e-5f, SWIN_DT_F32, 0));
    expect_arg_error("layernorm bad dtype", swin_layernorm_cuda(y.p, x.p, w, w, 4, 8, 1e-5f, (swin_dtype)7, 0));
    expect_arg_error("layernorm misaligned", swin_layernorm_cuda(y.p, (char *)x.p + 1, w, w, 4, 8, 1e-5f, SWIN_DT_F16, 0));
    bad.win_h = bad.win_w = 6;
    expect_arg_error("partition res % window", swin_ln_shift_partition_cuda(y.p, x.p, NULL, NULL, &bad, NULL, SWIN_DT_F32, 0));
    bad = d, bad.shift_h = bad.shift_w = 7;
    expect_arg_error("partition shift >= window", swin_ln_shift_partition_cuda(y.p, x.p, NULL, NULL, &bad, NULL, SWIN_DT_F32, 0));
    expect_arg_error("reverse NULL dims", swin_window_reverse_residual_cuda(x.p, y.p, NULL, NULL, NULL, NULL, SWIN_DT_F32, 0));
    expect_arg_error("reverse in place", swin_window_reverse_residual_cuda(x.p, x.p, NULL, NULL, &d, NULL, SWIN_DT_F32, 0));
    expect_arg_error("reverse_ln no norm", swin_window_reverse_residual_ln_cuda(x.p, y.p, lw.p, NULL, NULL, &d, NULL, SWIN_DT_F32, 0));
    expect_arg_error("reverse_ln out is x", swin_window_reverse_residual_ln_cuda(x.p, x.p, y.p, w, w, &d, NULL, SWIN_DT_F32, 0));
    expect_arg_error("merge H 0", swin_merge_gather_cuda(y.p, x.p, NULL, NULL, 1, 0, 8, 8, 1e-5f, NULL, SWIN_DT_F32, 0));
    expect_arg_error("merge weight without bias", swin_merge_gather_cuda(y.p, x.p, w, NULL, 1, 8, 8, 8, 1e-5f, NULL, SWIN_DT_F32, 0));
    {   /* E4M3 copies: an unaligned buffer, a scale of 0 */
        swin_q8_dst q1 = {(uint8_t *)y.p + 1, 1.0f, 1}, q0 = {(uint8_t *)y.p, 0.0f, 1};
        expect_arg_error("merge q8 unaligned", swin_merge_gather_cuda(y.p, x.p, NULL, NULL, 1, 8, 8, 8, 1e-5f, &q1, SWIN_DT_F16, 0));
        expect_arg_error("merge q8 inv 0", swin_merge_gather_cuda(y.p, x.p, NULL, NULL, 1, 8, 8, 8, 1e-5f, &q0, SWIN_DT_F16, 0));
    }
    expect_arg_error("im2col grid past the image", swin_im2col_patch_cuda(y.p, x.p, 1, 10, 8, 4, 4, 2, SWIN_DT_F32, 0));
    expect_arg_error("add_pos L 0", swin_add_pos_cuda(x.p, y.p, 1, 0, 8, SWIN_DT_F32, 0));
    expect_arg_error("ln_pool NULL out", swin_ln_pool_cuda(NULL, x.p, w, w, 1, 4, 8, 1e-5f, SWIN_DT_F32, 0));
    expect_arg_error("gelu in place residual", swin_gelu_cuda(x.p, x.p, 16, SWIN_DT_F32, 0));
    expect_arg_error("gelu form unknown", swin_gelu_form_cuda((float *)x.p, (const float *)x.p, 16, (swin_gelu_kind)9, 0));
    expect_arg_error("convert in place", swin_convert_cuda(x.p, SWIN_DT_F16, x.p, SWIN_DT_F32, 16, 0));
    tg_free(&x), tg_free(&y), tg_free(&lw);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    if (!tg_have_gpu("test_gpu_kernels")) return TU_SKIP;
    int quick = tg_quick();
    tu_seed(12345);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const kcase *c = &cases[i];
        if (quick && !c->quick) continue;
        for (int dt = 0; dt < 3; dt++) {
            if (c->op == OP_CONVERT)
                for (int dt2 = 0; dt2 < 3; dt2++) run_case(c, dt, dt2);
            else
                run_case(c, dt, dt);
        }
    }
    window_geometry(quick);
    gelu_ulp_check();
    gelu_form_check();
    {   /* E4M3 copies: a padded shifted timm geometry and an hf one, every dtype */
        static const int qg[][7] = {{16, 16, 7, 7, 3, 3, 0}, {17, 13, 7, 7, 3, 3, 1}};
        for (int i = 0; i < 2; i++)
            for (int dt = 0; dt < 3; dt++) q8_case(qg[i], dt);
    }
    argument_checks();
    return tu_finish("test_gpu_kernels");
}
