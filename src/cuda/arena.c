/* arena.c - the CUDA engine's memory plan: sizes every region from the config and max_batch,
 * carves the one device allocation, uploads the weights (converted once to the session dtype)
 * and prints the plan for `swin info --device cuda`. See arena.h for the regions.
 * Test: tests/test_gpu_engine.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define GEMM_WORKSPACE_BYTES ((size_t)32 << 20)   /* cuBLASLt: 32 MiB suits Hopper */

static const char *region_name[REG_COUNT] = {
    "weights (session dtype)", "weights (fp32 norms, bias tables, scales)",
    "activations x[2] (ping-pong)", "activations tok", "activations qkv", "activations hid",
    "norm2 statistics (folded into fc1)",
    "head (pooled, logits)", "cuBLASLt workspace", "attention workspace", "input/logits (fp32)",
    "fp8 (amax; quantised GEMM input, scale vector)",
};

// ---- weights: one walk sizes, places or uploads

typedef struct {
    swin_engine *e;
    char *base;         /* NULL: sizing only */
    size_t off;
    int upload;         /* copy and convert the host tensors */
    swin_status st;     /* first failure of an upload */
    size_t n_dt, n_f32, largest;
    int site, emulated;  /* FP8 sites so far; those run in 16 bits on E4M3 values */
    int out_ch;          /* the qkv sites' output channels so far (swin_dlin.out_rel) */
    size_t n_fp8;        /* bytes of E4M3 weights and channel scales */
} walk;

/* Carve n elements of host tensor `host` (fp32 when f32, else the session dtype). */
static const void *put(walk *k, const float *host, size_t n, int f32, const char *what) {
    if (!host) return NULL;
    swin_engine *e = k->e;
    int as_f32 = f32 || e->dt == SWIN_DT_F32;
    void *dst = swin_carve(k->base, &k->off, n * (as_f32 ? 4 : swin_dtype_size(e->dt)));
    if (f32) k->n_f32 += n; else k->n_dt += n;
    if (n > k->largest) k->largest = n;
    if (!k->upload || k->st != SWIN_OK) return dst;
    cudaError_t ce;
    if (as_f32) {
        ce = cudaMemcpyAsync(dst, host, n * 4, cudaMemcpyHostToDevice, e->stream);
    } else {   /* stage fp32 in the (still unused) activation region, convert on the device */
        ce = cudaMemcpyAsync(e->x[0], host, n * 4, cudaMemcpyHostToDevice, e->stream);
        if (ce == cudaSuccess) {
            swin_status s = swin_convert_cuda(dst, e->dt, e->x[0], SWIN_DT_F32, n, e->stream);
            if (s != SWIN_OK) { k->st = swin_fail_prefix(s, "uploading %s", what); return dst; }
        }
    }
    if (ce != cudaSuccess)
        k->st = swin_fail(SWIN_ERR_CUDA, "uploading %s (%zu elements): %s", what, n, cudaGetErrorString(ce));
    return dst;
}

/* A linear layer; `site`: one of the FP8 sites (src/fp8.h), numbered in walk order, which is the
 * forward's. An fp8 engine also gets its E4M3 weights, quantised on the device from the fp32
 * staging copy that put() just left in x[0] (the bias, carved next, overwrites it after). */
static void put_lin(walk *k, swin_dlin *d, const swin_linear_w *h, int N, int K, int site, const char *what) {
    swin_engine *e = k->e;
    d->b = put(k, h->b, (size_t)N, 0, what);   /* first: w's fp32 staging copy outlives put_lin (put_fold) */
    d->w = put(k, h->w, (size_t)N * K, 0, what);
    d->site = site ? k->site++ : -1;
    d->K = K, d->N = N;
    d->q = NULL, d->ws = d->wsx = NULL, d->deq = NULL;
    d->out_rel = -1, d->q8_out = 0, d->out_hd = 0, d->oq_cs = d->oq_deq = NULL, d->oq_b = NULL;
    if (site && e->fp8) {
        size_t off0 = k->off;
        d->q = swin_carve(k->base, &k->off, (size_t)N * K);
        d->ws = swin_carve(k->base, &k->off, (size_t)N * 4);
        d->wsx = swin_carve(k->base, &k->off, (size_t)N * 4);
        k->n_fp8 += k->off - off0;
        if (!swin_dlin_fp8_gemm(d)) {
            d->deq = swin_carve(k->base, &k->off, (size_t)N * K * swin_dtype_size(e->dt));
            k->emulated++;
        }
        if (k->upload && k->st == SWIN_OK) {
            swin_status s = swin_fp8_weights_cuda(d->q, d->ws, d->deq, (const float *)e->x[0], N, K, e->dt, e->stream);
            if (s != SWIN_OK) k->st = swin_fail_prefix(s, "quantising %s to FP8", what);
        }
    }
    if (site && k->upload && e->sites) e->sites[d->site] = d;
}

/* attn.qkv (just put): its output channels' place in the amax and scale arrays, and in an fp8
 * engine the vectors of its E4M3 output (swin_dlin.oq_*), set by swin_engine_set_fp8_scales */
static void put_qkv_out(walk *k, swin_dlin *d, int heads) {
    d->out_rel = k->out_ch;
    d->out_hd = d->N / 3 / heads;
    k->out_ch += d->N;
    if (!k->e->fp8) return;
    size_t off0 = k->off;
    d->oq_cs = swin_carve(k->base, &k->off, (size_t)d->N * 4);
    d->oq_deq = swin_carve(k->base, &k->off, (size_t)d->N * 4);
    d->oq_b = swin_carve(k->base, &k->off, (size_t)d->N * 2);
    k->n_fp8 += k->off - off0;
}

/* fc1 (just put: its fp32 staging copy is in x[0]) with norm2 folded in, when the engine folds */
static void put_fold(walk *k, swin_dfold *f, const swin_dlin *l, const swin_dln *ln, int N, int K, const char *what) {
    swin_engine *e = k->e;
    f->w = NULL, f->colsum = f->b = NULL;
    if (!e->ln_fold) return;
    f->w = swin_carve(k->base, &k->off, (size_t)N * K * swin_dtype_size(e->dt));
    f->colsum = swin_carve(k->base, &k->off, (size_t)N * 4);
    f->b = swin_carve(k->base, &k->off, (size_t)N * 4);
    k->n_dt += (size_t)N * K, k->n_f32 += 2 * (size_t)N;
    if (!k->upload || k->st != SWIN_OK) return;
    swin_status s = swin_ln_fold_weights_cuda((void *)f->w, (float *)f->colsum, (float *)f->b, (const float *)e->x[0],
                                              l->b, ln->w, ln->b, N, K, e->dt, e->stream);
    if (s != SWIN_OK) k->st = swin_fail_prefix(s, "folding norm2 into %s", what);
}

static void put_ln(walk *k, swin_dln *d, const swin_ln_w *h, int C, const char *what) {
    d->w = put(k, h->w, (size_t)C, 1, what);
    d->b = put(k, h->b, (size_t)C, 1, what);
}

static void walk_weights(walk *k) {
    const swin_model *m = k->e->m;
    const swin_config *c = &m->cfg;
    const swin_weights *w = &m->w;
    swin_dweights *d = &k->e->w;
    int C0 = c->embed_dim, p = c->patch_size, L0 = w->stages[0].res_h * w->stages[0].res_w;
    put_lin(k, &d->patch, &w->patch_embed, C0, 3 * p * p, 0, "patch_embed");
    put_ln(k, &d->patch_norm, &w->patch_norm, C0, "patch_embed.norm");
    d->abs_pos = put(k, w->abs_pos, (size_t)L0 * C0, 0, "absolute_pos_embed");
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &w->stages[s];
        swin_dstage *ds = &d->st[s];
        int C = st->dim;
        if (st->has_merge) {
            int Cp = w->stages[s - 1].dim;
            put_ln(k, &ds->norm, &st->merge.norm, c->version == 1 ? 4 * Cp : C, "downsample.norm");
            put_lin(k, &ds->red, &st->merge.reduction, C, 4 * Cp, 1, "downsample.reduction");
        }
        for (int b = 0; b < st->depth; b++) {
            const swin_block_w *bw = &st->blocks[b];
            swin_dblock *db = &ds->blocks[b];
            int W2 = (2 * st->win_h - 1) * (2 * st->win_w - 1);
            put_ln(k, &db->norm1, &bw->norm1, C, "norm1");
            put_lin(k, &db->qkv, &bw->qkv, 3 * C, C, 1, "attn.qkv");
            put_qkv_out(k, &db->qkv, bw->heads);
            put_lin(k, &db->proj, &bw->proj, C, C, 1, "attn.proj");
            put_ln(k, &db->norm2, &bw->norm2, C, "norm2");
            put_lin(k, &db->fc1, &bw->fc1, st->hidden, C, 1, "mlp.fc1");
            put_fold(k, &db->fc1_ln, &db->fc1, &db->norm2, st->hidden, C, "mlp.fc1");
            put_lin(k, &db->fc2, &bw->fc2, C, st->hidden, 1, "mlp.fc2");
            db->bias_table = put(k, bw->bias_table, (size_t)W2 * bw->heads, 1, "attention bias table");
            db->attn_scale = put(k, bw->attn_scale, (size_t)bw->heads, 1, "attention scale");
        }
    }
    int CL = w->stages[c->num_stages - 1].dim;
    put_ln(k, &d->norm, &w->norm, CL, "norm");
    put_lin(k, &d->head, &w->head, c->num_classes, CL, 0, "head");
}

// ---- activations: the largest use of each buffer over the forward pass

typedef struct { size_t x, tok, qkv, hid, ln; } act_elems;

static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }

static act_elems activation_elems(const swin_model *m, int B) {
    const swin_config *c = &m->cfg;
    act_elems a = {0, 0, 0, 0, 0};
    int p = c->patch_size;
    size_t tokens0 = (size_t)B * m->w.stages[0].res_h * m->w.stages[0].res_w;
    a.hid = tokens0 * 3 * p * p;   /* im2col columns */
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        size_t tokens = (size_t)B * st->res_h * st->res_w;
        size_t rows = (size_t)B * st->hp * st->wp;   /* window rows: padding tokens included */
        a.x = max_z(a.x, tokens * st->dim);
        if (st->has_merge) a.x = max_z(a.x, tokens * 4 * m->w.stages[s - 1].dim);  /* gather (in tok) */
        a.tok = max_z(a.tok, rows * st->dim);                                       /* windows */
        a.qkv = max_z(a.qkv, rows * 3 * st->dim);
        a.hid = max_z(a.hid, max_z(tokens * st->hidden, rows * st->dim));           /* MLP; proj */
        if (st->depth > 0) a.ln = max_z(a.ln, tokens * (size_t)((st->dim + 127) / 128));   /* folded norm2 */
    }
    a.tok = max_z(a.tok, a.x);
    return a;
}

/* FP8: the most rows of any site's GEMM (the input scale vector) and its largest input */
static void fp8_elems(const swin_model *m, int B, size_t *rows_max, size_t *in_max) {
    *rows_max = *in_max = 0;
    for (int s = 0; s < m->cfg.num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        size_t tokens = (size_t)B * st->res_h * st->res_w, rows = (size_t)B * st->hp * st->wp;
        *rows_max = max_z(*rows_max, max_z(tokens, rows));
        if (st->has_merge) *in_max = max_z(*in_max, tokens * 4 * m->w.stages[s - 1].dim);
        if (st->depth > 0) *in_max = max_z(*in_max, max_z(rows * st->dim, tokens * st->hidden));
    }
}

static size_t attention_workspace(const swin_engine *e) {
    size_t ws = 0;
    swin_attn_impl impl = e->opt.attention == SWIN_ATTN_UNFUSED ? SWIN_ATTN_IMPL_UNFUSED : SWIN_ATTN_IMPL_FUSED;
    for (int s = 0; s < e->m->cfg.num_stages; s++)
        for (int b = 0; b < e->m->w.stages[s].depth; b++) {
            swin_dims d = swin_block_dims(e->m, s, b, e->opt.max_batch);
            ws = max_z(ws, swin_window_attention_workspace(&d, e->dt, impl));
        }
    return ws;
}

// ---- the plan

swin_status swin_arena_plan(swin_engine *e, char *base, size_t *total) {
    const swin_model *m = e->m;
    int B = e->opt.max_batch, classes = m->cfg.num_classes, H = m->cfg.img_h, W = m->cfg.img_w;
    size_t esz = swin_dtype_size(e->dt), start;
    walk k = {e, base, 0, 0, SWIN_OK, 0, 0, 0, 0, 0, 0, 0};

    /* weights: dtype tensors and fp32 tensors share one walk; split the count afterwards */
    walk_weights(&k);
    e->n_dt = k.n_dt;
    e->n_f32 = k.n_f32;
    e->staging_elems = k.largest;
    e->n_sites = k.site;
    e->n_out_ch = k.out_ch;
    e->fp8_emulated = k.emulated;
    e->n_fp8_bytes = k.n_fp8;
    e->region[REG_WEIGHTS_DT] = k.off;   /* re-split below for the description */
    e->region[REG_WEIGHTS_F32] = 0;
    size_t off = k.off;

    act_elems a = activation_elems(m, B);
    start = off;
    for (int i = 0; i < 2; i++) e->x[i] = swin_carve(base, &off, a.x * esz);
    e->region[REG_X] = off - start;
    start = off;
    e->tok = swin_carve(base, &off, a.tok * esz);
    e->region[REG_TOK] = off - start;
    start = off;
    e->qkv = swin_carve(base, &off, a.qkv * esz);
    e->region[REG_QKV] = off - start;
    start = off;
    e->hid = swin_carve(base, &off, a.hid * esz);
    e->region[REG_HID] = off - start;
    /* the activations double as the fp32 staging of the weight upload */
    size_t act = e->region[REG_X] + e->region[REG_TOK] + e->region[REG_QKV] + e->region[REG_HID];
    if (act < e->staging_elems * 4) {
        e->region[REG_HID] += e->staging_elems * 4 - act;
        off += e->staging_elems * 4 - act;
    }
    start = off;
    e->ln_part = e->ln_fold ? swin_carve(base, &off, a.ln * 2 * sizeof(float)) : NULL;
    e->region[REG_LN] = off - start;

    start = off;
    e->pooled = swin_carve(base, &off, (size_t)B * m->w.stages[m->cfg.num_stages - 1].dim * esz);
    e->logits_dt = swin_carve(base, &off, (size_t)B * classes * esz);
    e->region[REG_HEAD] = off - start;
    start = off;
    e->gemm_ws_bytes = GEMM_WORKSPACE_BYTES;
    e->gemm_ws = swin_carve(base, &off, e->gemm_ws_bytes);
    e->region[REG_GEMM_WS] = off - start;
    start = off;
    e->attn_ws_bytes = attention_workspace(e);
    e->attn_ws = e->attn_ws_bytes ? swin_carve(base, &off, e->attn_ws_bytes) : NULL;
    e->region[REG_ATTN_WS] = off - start;
    start = off;
    e->input = swin_carve(base, &off, (size_t)B * 3 * H * W * sizeof(float));
    e->logits = swin_carve(base, &off, (size_t)B * classes * sizeof(float));
    e->region[REG_IO] = off - start;
    start = off;
    e->amax = swin_carve(base, &off, (size_t)(e->n_sites + e->n_out_ch + 1) * sizeof(float));
    e->ones = NULL, e->q8 = NULL, e->n_ones = 0;
    if (e->fp8) {
        size_t rows = 0, in = 0;
        fp8_elems(m, B, &rows, &in);
        e->n_ones = rows;
        e->ones = swin_carve(base, &off, rows * sizeof(float));
        e->q8 = swin_carve(base, &off, in * (e->fp8_emulated ? esz : 1));
    }
    e->region[REG_FP8] = off - start;
    *total = off;
    return SWIN_OK;
}

swin_status swin_arena_upload(swin_engine *e) {
    walk k = {e, e->arena, 0, 1, SWIN_OK, 0, 0, 0, 0, 0, 0, 0};
    free(e->sites);
    if (!(e->sites = calloc((size_t)e->n_sites + 1, sizeof *e->sites)))
        return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    walk_weights(&k);
    if (k.st == SWIN_OK && e->n_sites)
        k.st = swin_scale_vec_cuda(e->amax, NULL, 0.0f, e->n_sites + e->n_out_ch, e->stream);
    if (k.st == SWIN_OK && e->ones) k.st = swin_scale_vec_cuda(e->ones, NULL, 1.0f, (int)e->n_ones, e->stream);
    cudaError_t ce = cudaStreamSynchronize(e->stream);
    if (k.st != SWIN_OK) return k.st;
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "uploading the weights: %s", cudaGetErrorString(ce));
    return SWIN_OK;
}

// ---- the plan in one line, and the largest batch that fits

static const char *human(size_t bytes, char *buf, size_t size) {
    if (bytes >= ((size_t)1 << 30)) snprintf(buf, size, "%.1f GiB", bytes / 1073741824.0);
    else snprintf(buf, size, "%.1f MiB", bytes / 1048576.0);
    return buf;
}

void swin_arena_summary(const swin_engine *e, size_t total, char *buf, size_t size) {
    const size_t *r = e->region;
    size_t act = r[REG_X] + r[REG_TOK] + r[REG_QKV] + r[REG_HID] + r[REG_LN] + r[REG_HEAD] + r[REG_FP8];
    char t[32], w[32], a[32], ws[32], io[32], h[32];
    snprintf(buf, size, "batch %d in %s needs %s (weights %s, activations %s, workspaces %s, input/output %s, "
             "headroom %s for cuBLAS and CUDA graphs)", e->opt.max_batch, swin_precision_str(e->opt.precision),
             human(total + SWIN_GPU_HEADROOM_BYTES, t, sizeof t), human(r[REG_WEIGHTS_DT], w, sizeof w),
             human(act, a, sizeof a), human(r[REG_GEMM_WS] + r[REG_ATTN_WS], ws, sizeof ws),
             human(r[REG_IO], io, sizeof io), human(SWIN_GPU_HEADROOM_BYTES, h, sizeof h));
}

/* plans are host arithmetic on a copy; the copy's block arrays are the engine's, which hold
 * nothing yet (only pointers into an arena that does not exist) */
static int batch_fits(const swin_engine *e, int b, size_t bytes) {
    swin_engine tmp = *e;
    size_t total = 0;
    tmp.opt.max_batch = b;
    return swin_arena_plan(&tmp, NULL, &total) == SWIN_OK && total <= bytes &&
           SWIN_GPU_HEADROOM_BYTES <= bytes - total;
}

int swin_arena_max_batch(const swin_engine *e, size_t bytes) {
    int lo = 0, hi = 65536;   /* batch_fits(lo) or lo == 0; hi + 1 > 65536 */
    if (!batch_fits(e, 1, bytes)) return 0;
    lo = 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (batch_fits(e, mid, bytes)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

void swin_arena_describe(const swin_engine *e, char *buf, size_t size) {
    static const char *impl[] = {"fused", "unfused", "auto", "?"};   /* SWIN_ATTN_* and SWIN_MLP_* */
    char name[256] = "?";
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, e->dev) == cudaSuccess) snprintf(name, sizeof name, "%s", prop.name);
    size_t n = 0;
    n += (size_t)snprintf(buf + n, size - n,
                          "device cuda:%d (%s), %s, attention %s, mlp %s%s, graphs %s, max batch %d\n",
                          e->dev, name, swin_precision_str(e->opt.precision), impl[e->opt.attention & 1],
                          impl[e->opt.mlp & 3], e->ln_fold ? " (norm2 folded into proj and fc1)" : "",
                          e->opt.graphs ? "on" : "off", e->opt.max_batch);
    size_t esz = swin_dtype_size(e->dt), wdt = e->region[REG_WEIGHTS_DT];
    if (n < size)
        n += (size_t)snprintf(buf + n, size - n, "  %-44s %14zu bytes  (%zu elements x %zu)\n",
                              "weights (session dtype)", e->n_dt * esz, e->n_dt, esz);
    if (n < size)
        n += (size_t)snprintf(buf + n, size - n, "  %-44s %14zu bytes  (%zu elements x 4)\n",
                              "weights (fp32 norms, bias tables, scales)", e->n_f32 * 4, e->n_f32);
    if (n < size && e->fp8)
        n += (size_t)snprintf(buf + n, size - n, "  %-44s %14zu bytes  (%d sites, %d on FP8 tensor cores)\n",
                              "weights fp8 (E4M3, channel scales)", e->n_fp8_bytes, e->n_sites,
                              e->n_sites - e->fp8_emulated);
    if (n < size)
        n += (size_t)snprintf(buf + n, size - n, "  %-44s %14zu bytes\n", "weights total (aligned)", wdt);
    for (int r = REG_X; r < REG_COUNT && n < size; r++)
        n += (size_t)snprintf(buf + n, size - n, "  %-44s %14zu bytes\n", region_name[r], e->region[r]);
    if (n < size)
        n += (size_t)snprintf(buf + n, size - n, "  %-44s %14zu bytes  (%.1f MiB, one allocation)\n",
                              "total", e->arena_bytes, e->arena_bytes / 1048576.0);
    if (n < size)
        snprintf(buf + n, size - n, "  weight upload stages fp32 through the activations (%zu bytes)\n",
                 e->staging_elems * 4);
}
