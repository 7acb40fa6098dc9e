/* engine.c - the CUDA engine behind a session (src/engine.h): device choice, the forward pass
 * on one stream, and CUDA graphs (one captured forward per batch size, replayed).
 *
 * The forward mirrors the CPU reference (src/forward_cpu.c) op for op:
 *   patch embed  im2col -> linear -> layernorm -> (+ abs pos); in 16 bits one kernel for the
 *                first three (kernels/patch_embed.cu)
 *   stage s      (s > 0) merge; then blocks (V1 pre-norm, V2 res-post-norm)
 *   head         ln_pool -> linear -> logits to fp32
 * Buffers (arena.h): x[cur] is the residual stream; tok, qkv and hid are scratch.
 * Stage outputs (swin_engine_forward_stages, for `swin verify`): an un-captured forward that copies
 * x[cur] to the host after every stage, converted to fp32 in qkv (free between stages).
 * Memory: the whole plan (arena.c) is checked against cudaMemGetInfo before anything is allocated;
 * a session that does not fit is refused with SWIN_ERR_MEMORY, the plan and the free memory.
 * Test: tests/test_gpu_engine.c (against the CPU reference), tests/cli_gpu_verify.sh,
 * tests/test_gpu_memory.c and tests/cli_gpu_memory.sh (memory).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fp8.h"

/* swin_cuda_debug_sync (kernels/ops.h) is defined in kernels/convert.cu; set here from SWIN_CUDA_SYNC. */

// ---- one op of the forward: an event mark when profiling, then the call

static void mark(swin_engine *e, swin_op_class c, const char *name) {
    swin_prof *p = e->prof;
    if (!p || p->n >= p->cap) return;
    cudaEventRecord(p->ev[p->n], e->stream);
    p->cls[p->n] = (unsigned char)c;
    p->stage[p->n] = (signed char)e->cur_stage;
    p->name[p->n] = name;
    p->n++;
}

/* OP(class, name, call): name is what `swin bench --breakdown` lists the op as */
#define OP(cls, name, call)              \
    do {                                 \
        mark(e, SWIN_OPS_##cls, name);   \
        SWIN_TRY(call);                  \
    } while (0)

/* Before the GEMM of an FP8 site (src/fp8.h): record its input's max |x| when calibrating, and
 * quantise the input into e->q8 when it runs in FP8 (ops of their own in the breakdown). */
static swin_status quant(swin_engine *e, const void *in, const swin_dlin *w, int M) {
    if (w->site >= 0 && e->recording)
        OP(OTHER, "amax", swin_amax_cuda(e->amax + w->site, in, (size_t)M * w->K, e->dt, e->stream));
    if (swin_engine_fp8_site(e, w)) OP(OTHER, "quantize", swin_engine_quantize(e, in, w, M, 0));
    return SWIN_OK;
}

/* SWIN_FP8_FUSED_QUANT=0 in the environment (read once): a quantising pass before every qkv, proj,
 * fc1 and merge reduction site instead of the ops before them writing their E4M3 inputs (q8_for:
 * the window ops for qkv and fc1, the attention for proj, the merge gather for the reduction);
 * kept to measure the difference. Swin-T has 39 such passes (12 qkv, 12 proj, 12 fc1, 3 merge;
 * fc2's input comes from the fused FP8 fc1 on Hopper); when only qkv and fc1 had their inputs
 * written (H200, batch 256): 11.94 ms with the 39 passes, 11.31 with the 15 left. With proj's and
 * the reductions' too (H200, 2026-11-27, `SWIN_FP8_FUSED_QUANT=0` / `=1 build/swin bench --precision
 * fp8 --batch 8,64,256 -n 30`, alternating, two runs each): Swin-T batch 256 27,545 / 27,653
 * against 30,519 / 30,545 img/s, batch 64 23,372 / 23,473 against 25,757 / 25,784, batch 8 0.753 /
 * 0.751 against 0.678 / 0.676 ms; SwinV2-T batch 256 21,155 / 21,190 against 23,192 / 23,209 img/s.
 * Breakdown at batch 256 (Swin-T): the 39 passes took 1.071 ms, and the attention 1.576 ms without
 * its copy against 1.672 with it (a byte an element written instead of two, but a conversion each). The inputs are byte-identical (the "q8" cases of test_gpu_kernels and
 * test_gpu_attention); test_gpu_fp8_passes runs test_gpu_fp8's models with the passes. */
static int fused_quant_on(void) {
    static int on = -1;
    if (on < 0) on = swin_env_on("SWIN_FP8_FUSED_QUANT", 1);
    return on;
}

/* FP8 MLPs whose fc1 and fc2 both run on the FP8 GEMM go through one wgmma kernel for fc1, GELU
 * and fc2's quantisation (kernels/sm90/gemm_wgmma.cu) on compute capability 9.0, unless
 * SWIN_FP8_FUSED_MLP=0 in the environment (read once; then cuBLASLt's FP8 fc1 writes fp16 and a
 * GELU + quantise pass follows, as on other GPUs). */
static int fp8_mlp_fused(const swin_engine *e, const swin_dblock *w) {
    static int on = -1;
    if (on < 0) on = swin_env_on("SWIN_FP8_FUSED_MLP", 1);
    return on && e->wgmma && swin_engine_fp8_site(e, &w->fc1) && swin_dlin_fp8_gemm(&w->fc1) &&
           swin_dlin_fp8_gemm(&w->fc2);
}

/* tf32 with --mlp fused (or auto) on Hopper: fc1 + GELU on the wgmma GEMM's TF32 variant
 * (kernels/sm90/gemm_wgmma.cu); SWIN_TF32_FUSED_MLP=0 in the environment (read once) keeps
 * cuBLASLt + the GELU pass. Elsewhere tf32 has no fused fc1 (engine setup resolves --mlp to
 * unfused there). */
static int tf32_mlp_fused(const swin_engine *e) {
    static int on = -1;
    if (on < 0) on = swin_env_on("SWIN_TF32_FUSED_MLP", 1);
    return on && e->wgmma && e->opt.precision == SWIN_TF32;
}

/* fp16 / bf16 with --mlp fused on Hopper, opt-in: the whole MLP in one kernel
 * (kernels/sm90/mlp_tma.cu, or mlp_wgmma.cu: the hidden on chip) for the widths it has (C 96, 128,
 * 192).
 * SWIN_MLP_ONE_KERNEL (read once): unset or 0 off (fc1 + GELU and fc2 as two GEMMs), 1 where its
 * 128-token tiles fill the GPU, 2 whatever the tiles. Off by default because it is not faster yet
 * than the two GEMMs (mlp_tma.cu's header has the measurements and says why). At small batches
 * (fewer kernels, but few tiles: stage 3 of Swin-T at batch 1 is 2 CTAs) =2 is slower too (H200,
 * 2026-11-29, tools/bench_ab.py, best of two rounds, Swin-T fp16, off / =2): batch 1 0.410 / 0.479
 * ms, 2 0.451 / 0.515, 8 0.644 / 0.702. */
static int mlp_one_kernel(const swin_engine *e, int T) {
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("SWIN_MLP_ONE_KERNEL");
        mode = !v || !v[0] ? 0 : !strcmp(v, "2") ? 2 : strcmp(v, "0") != 0;
    }
    return e->wgmma && (mode == 2 || (mode == 1 && (T + 127) / 128 >= e->sms));
}

/* The E4M3 input of FP8 site w, written by the op that writes the site's 16-bit input (ops.h
 * swin_q8_dst; keep16: that op still writes the 16-bit values), when the site runs on the FP8 GEMM
 * and no calibration records its input; NULL: the 16-bit input goes through quant(). */
static const swin_q8_dst *q8_for(swin_engine *e, const swin_dlin *w, swin_q8_dst *q, int keep16) {
    if (!swin_engine_fp8_site(e, w) || !swin_dlin_fp8_gemm(w) || e->recording || !fused_quant_on()) return NULL;
    q->q = (uint8_t *)e->q8;
    q->inv = 1.0f / e->scale[w->site];
    q->keep16 = keep16;
    return q;
}

/* a linear layer; an FP8 site reads the input quant() (or q8_for's op) left in e->q8 */
static swin_status lin(swin_engine *e, void *out, const void *in, const swin_dlin *w, const void *residual,
                       int M, int K, int N, swin_act act) {
    if (swin_engine_fp8_site(e, w)) return swin_engine_lin_q(e, out, w, residual, M);
    return swin_linear_cuda(out, in, w->w, w->b, residual, M, K, N, act, e->gemm, e->stream);
}

// ---- patch embedding: im2col -> linear -> layernorm -> (+ absolute position)

/* SWIN_PATCH_FUSED=0 in the environment (read once): the patch embedding as its three ops even
 * where kernels/patch_embed.cu's one kernel takes it (16-bit data, patch 4, W <= 512, C a
 * multiple of 16), so that the two are measured in one run. */
static int patch_fused_on(void) {
    static int on = -1;
    if (on < 0) on = swin_env_on("SWIN_PATCH_FUSED", 1);
    return on;
}

static swin_status patch_embed(swin_engine *e, int B) {
    const swin_config *c = &e->m->cfg;
    const swin_stage_w *s0 = &e->m->w.stages[0];
    int p = c->patch_size, C = c->embed_dim, L = s0->res_h * s0->res_w, M = B * L;
    const swin_dweights *w = &e->w;
    e->cur_stage = 0;
    if (patch_fused_on() && swin_patch_embed_supports(p, c->img_h, c->img_w, C, e->dt)) {
        /* its sides are multiples of the patch, so the grid is img / p in either layout */
        OP(NORM, "patch embed", swin_patch_embed_cuda(e->x[0], e->input, w->patch.w, w->patch.b, w->patch_norm.w,
                                                      w->patch_norm.b, B, c->img_h, c->img_w, C, c->ln_eps, e->dt,
                                                      e->stream));
    } else {
        OP(OTHER, "patch im2col", swin_im2col_patch_cuda(e->hid, e->input, B, c->img_h, c->img_w, p, s0->res_h,
                                                         s0->res_w, e->dt, e->stream));
        OP(GEMM, "patch linear", lin(e, e->tok, e->hid, &w->patch, NULL, M, 3 * p * p, C, SWIN_ACT_NONE));
        OP(NORM, "patch norm", swin_layernorm_cuda(e->x[0], e->tok, w->patch_norm.w, w->patch_norm.b, M, C,
                                                   c->ln_eps, e->dt, e->stream));
    }
    if (w->abs_pos) OP(OTHER, "abs pos", swin_add_pos_cuda(e->x[0], w->abs_pos, B, L, C, e->dt, e->stream));
    return SWIN_OK;
}

// ---- patch merging: V1 gather+LN(4C) -> reduction; V2 gather -> reduction -> LN(2C)

static swin_status merge(swin_engine *e, int s, int B, int *cur) {
    const swin_stage_w *prev = &e->m->w.stages[s - 1], *st = &e->m->w.stages[s];
    const swin_dstage *w = &e->w.st[s];
    int H = prev->res_h, W = prev->res_w, Cp = prev->dim, C = st->dim, M = B * st->res_h * st->res_w;
    float eps = e->m->cfg.ln_eps;
    void *x = e->x[*cur], *y = e->x[!*cur];
    swin_q8_dst qr;
    const swin_q8_dst *q_red = q8_for(e, &w->red, &qr, 0);   /* the reduction's E4M3 input, by the gather */
    if (e->m->cfg.version == 1) {
        OP(NORM, "merge gather+norm", swin_merge_gather_cuda(e->tok, x, w->norm.w, w->norm.b, B, H, W, Cp, eps, q_red,
                                                             e->dt, e->stream));
        if (!q_red) SWIN_TRY(quant(e, e->tok, &w->red, M));
        OP(GEMM, "merge reduction", lin(e, y, e->tok, &w->red, NULL, M, 4 * Cp, C, SWIN_ACT_NONE));
    } else {
        OP(NORM, "merge gather", swin_merge_gather_cuda(e->tok, x, NULL, NULL, B, H, W, Cp, eps, q_red, e->dt,
                                                        e->stream));
        if (!q_red) SWIN_TRY(quant(e, e->tok, &w->red, M));
        OP(GEMM, "merge reduction", lin(e, e->hid, e->tok, &w->red, NULL, M, 4 * Cp, C, SWIN_ACT_NONE));
        OP(NORM, "merge norm", swin_layernorm_cuda(y, e->hid, w->norm.w, w->norm.b, M, C, eps, e->dt, e->stream));
    }
    *cur = !*cur;
    return SWIN_OK;
}

// ---- transformer blocks

/* fp32 with the fused attention: its 3xTF32 kernels (SWIN_ATTN_IMPL_X3: fp32 accuracy on the TF32
 * tensor cores, kernels/attention_tf32.cuh) unless SWIN_FP32_ATTN=simt in the environment (read
 * once), which keeps the true-fp32 SIMT kernel, so that one build compares the two. */
static int fp32_attn_x3(void) {
    static int on = -1;
    if (on < 0) on = !swin_env_is("SWIN_FP32_ATTN", "simt");
    return on;
}

/* tok [B*nW, N, C] <- window attention of qkv; fused in tf32: on the TF32 tensor cores, in fp32:
 * 3xTF32 (fp32_attn_x3); q8: proj's E4M3 input, written by the attention (q8_for) */
static swin_status attention(swin_engine *e, const swin_dblock *w, const swin_dims *d, const swin_q8_dst *q8) {
    int unfused = e->opt.attention == SWIN_ATTN_UNFUSED;
    swin_attn_impl impl = unfused                                            ? SWIN_ATTN_IMPL_UNFUSED
                          : e->opt.precision == SWIN_TF32                    ? SWIN_ATTN_IMPL_TF32
                          : e->opt.precision == SWIN_FP32 && fp32_attn_x3() ? SWIN_ATTN_IMPL_X3
                                                                             : SWIN_ATTN_IMPL_FUSED;
    OP(ATTENTION, "attention", swin_window_attention_cuda(e->tok, e->qkv, w->bias_table, w->attn_scale, d, e->dt, impl,
                                                          q8, e->attn_ws, unfused ? swin_gemm_cublas(e->gemm) : NULL,
                                                          e->stream));
    return SWIN_OK;
}

/* q, k, v of the window rows in e->tok, then the attention: the qkv GEMM into e->qkv and
 * attention() into e->tok, or, where e->attn_qkv and the op take the block (a 16-bit qkv, not an
 * FP8 site, no calibration recording its input), one kernel that computes q, k and v on chip
 * (kernels/attention_qkv.cuh; its output into e->qkv, as it must not overwrite its input). *att:
 * where the output is. q_qkv: the qkv GEMM's E4M3 input (q8_for), q_proj: proj's.
 * Where it pays: at C <= 128 always; wider (C 192 to 512: every (window, head) projects all C
 * input channels, and the kernel holds 2 or 1 CTAs an SM) only when the grid is one wave, each
 * (window, head) a CTA of its own. H200, Swin-T fp16, test_gpu_attention_qkv (one block, the one
 * kernel against the qkv GEMM + attention, ms): stage 2 batch 1 0.0089 / 0.0145, 8 0.0196 /
 * 0.0174, 256 0.363 / 0.227; stage 3 batch 1 0.0106 / 0.0169, 8 0.0196 / 0.0184, 256 0.371 /
 * 0.146; end to end with every width fused (SWIN_ATTN_QKV=2) against C <= 128: batch 1 0.419 ->
 * 0.410 ms, 8 0.664 -> 0.673, 256 8.618 -> 9.900. This rule against SWIN_ATTN_QKV=0 (bench_ab, best
 * of two rounds, ms): Swin-T fp16 batch 1 0.415 -> 0.407, 2 0.455 -> 0.450, 4 0.559 -> 0.562,
 * 8 0.662 -> 0.643, 64 2.338 -> 2.305 (SWIN_ATTN_QKV=2: 0.408, 0.449, 0.568, 0.668, 2.678); bf16
 * batch 1 0.419 -> 0.411, 2 0.462 -> 0.451; SwinV2-T fp16 batch 1 0.433 -> 0.433, 2 0.483 -> 0.478,
 * 8 0.718 -> 0.688. */
static int qkv_fused(const swin_engine *e, const swin_dblock *w, const swin_dims *d) {
    return e->attn_qkv && !e->recording && !swin_engine_fp8_site(e, &w->qkv) &&
           (e->attn_qkv == 2 || d->C <= 128 ? swin_window_attention_qkv_supports(d, e->dt)
                                            : swin_window_attention_qkv_one_wave(d, e->dt));   /* implies supports */
}

/* FP8: the qkv GEMM writes q, k and v in E4M3 and the attention reads them so (src/fp8.h: per
 * output channel scales from the calibration), where the scales give the site output scales
 * (q8_out), the block is one src/fp8.h stores so (swin_fp8_qkv_e4m3_block: 7x7 or 8x8 windows of
 * head_dim 32, as the CPU emulation; SWIN_FP8_QKV=0 keeps them fp16 on both, so that the two are
 * measured in one run), the GEMM runs on Hopper's wgmma kernels and the attention's head kernel
 * is on (kernels/ops.h swin_window_attention_e4m3_supports).
 * Why: at Swin-T's batch 256 the qkv GEMMs (1.18 ms) and the attention (1.23 ms) are bound by
 * the fp16 q, k, v they write and read (--breakdown, docs/PERFORMANCE.md).
 * Measured (H200, 2026-11-29, tools/bench_ab.py SWIN_FP8_QKV=0 "" -- --precision fp8 --batch
 * 8,64,256 -n 30 --breakdown, two rounds, best medians, =0 / default): Swin-T batch 8 0.617 /
 * 0.622 ms, 64 2.093 / 2.034, 256 7.037 / 6.908 (36,377 -> 37,059 img/s); --breakdown at 256, all
 * blocks: qkv 1.181 -> 0.979 ms, attention 1.226 -> 1.328 (the kernel's dequantisation pass;
 * attention_head.cuh head_dequant). A random full-size Swin-T against timm in fp8: 8.2e-2 either
 * way (8.21e-2 / 8.34e-2). SwinV2-T is unchanged (V1 only: src/fp8.h). Since then the attention
 * computes the scores with FP8 MMAs on the q and k bytes (attention_head.cuh, whose header has
 * the measurements: batch 256 1.036x, 64 1.044x over SWIN_FP8_QKV=0 in one run). */
static int qkv_e4m3(const swin_engine *e, const swin_dblock *w, const swin_dims *d) {
    return w->qkv.q8_out && e->wgmma && swin_engine_fp8_site(e, &w->qkv) && swin_dlin_fp8_gemm(&w->qkv) &&
           e->opt.attention != SWIN_ATTN_UNFUSED && swin_fp8_qkv_e4m3_block(d) &&
           swin_window_attention_e4m3_supports(d, e->dt);
}

static swin_status qkv_attention(swin_engine *e, const swin_dblock *w, const swin_dims *d, const swin_q8_dst *q_qkv,
                                 const swin_q8_dst *q_proj, int Tp, void **att) {
    if (qkv_fused(e, w, d)) {
        *att = e->qkv;
        OP(ATTENTION, "qkv+attention",
           swin_window_attention_qkv_cuda(e->qkv, e->tok, w->qkv.w, w->qkv.b, w->bias_table, w->attn_scale, d, e->dt,
                                          q_proj, e->stream));
        return SWIN_OK;
    }
    *att = e->tok;
    if (!q_qkv) SWIN_TRY(quant(e, e->tok, &w->qkv, Tp));
    if (qkv_e4m3(e, w, d)) {
        OP(GEMM, "qkv", swin_gemm_wgmma_fp8_out_cuda((uint8_t *)e->qkv, (const uint8_t *)e->q8, w->qkv.q, w->qkv.oq_cs,
                                                     w->qkv.oq_b, Tp, d->C, 3 * d->C, e->stream));
        OP(ATTENTION, "attention", swin_window_attention_e4m3_cuda(e->tok, (const uint8_t *)e->qkv, w->qkv.oq_deq,
                                                                   w->bias_table, w->attn_scale, d, q_proj, e->stream));
        return SWIN_OK;
    }
    OP(GEMM, "qkv", lin(e, e->qkv, e->tok, &w->qkv, NULL, Tp, d->C, 3 * d->C, SWIN_ACT_NONE));
    if (e->recording && w->qkv.out_rel >= 0)   /* the output channels' max |q|, |k|, |v| (src/fp8.h) */
        OP(OTHER, "amax", swin_col_amax_cuda(e->amax + e->n_sites + w->qkv.out_rel, e->qkv, Tp, 3 * d->C, e->dt,
                                             e->stream));
    return attention(e, w, d, q_proj);
}

/* The block's start, x the image: the window partition of LN(x) (V1's norm1; ln NULL: V2, none),
 * then qkv_attention. Where qkv_attention's one kernel takes the block and e->attn_gather is set
 * (setup: V2 by default, V1 with SWIN_ATTN_GATHER=1, never with =0), that kernel also gathers its
 * windows' rows from x and in V1 normalises them (kernels/attention_qkv.cuh, GATHER), so the
 * partition pass and its output's round trip through memory are gone. Bit for bit the two
 * kernels' output (test_gpu_attention_qkv). H200 (2026-11-28, tools/bench_ab.py, fp16, best of
 * 3 rounds, SWIN_ATTN_GATHER=0 against the default): SwinV2-T batch 1 0.428 / 0.425 ms, 8 0.686 /
 * 0.678, 64 2.963 / 2.930, 256 11.380 / 11.371 (--breakdown at 256: shift+partition 0.501 ms
 * for all blocks against 0.301 for the blocks left, the first stage's kernel 1.261); V1 is slower
 * with the norm inside (Swin-T batch 1 0.413 against 0.437 with =1, 256 8.447 against 8.717):
 * the kernel's header says why. */
static swin_status partition_qkv_attention(swin_engine *e, void *x, const swin_dblock *w, const swin_dln *ln,
                                           const swin_dims *d, const swin_q8_dst *q_qkv, const swin_q8_dst *q_proj,
                                           int Tp, void **att) {
    const float *ln_w = ln ? ln->w : NULL, *ln_b = ln ? ln->b : NULL;
    if (e->attn_gather && qkv_fused(e, w, d)) {
        *att = e->qkv;
        OP(ATTENTION, ln ? "ln1+partition+qkv+attention" : "partition+qkv+attention",
           swin_ln_window_attention_qkv_cuda(e->qkv, x, ln_w, ln_b, w->qkv.w, w->qkv.b, w->bias_table, w->attn_scale,
                                             d, e->dt, q_proj, e->stream));
        return SWIN_OK;
    }
    OP(NORM, ln ? "ln1+shift+partition" : "shift+partition",
       swin_ln_shift_partition_cuda(e->tok, x, ln_w, ln_b, d, q_qkv, e->dt, e->stream));
    return qkv_attention(e, w, d, q_qkv, q_proj, Tp, att);
}

/* Whether the block's attention half is one kernel (swin_window_attention_proj_cuda: the qkv
 * projection, the attention, proj, the window reverse, the residual and the LayerNorm beside it,
 * kernels/attention_proj.cuh): where qkv_attention's one kernel takes the block in the layout the
 * epilogue kernels are built for (V1 reading the partitioned rows, V2 gathering them), no FP8
 * sites around it (proj's input, fc1's), no ln_fold, the window's heads fit a cluster, and (unless
 * SWIN_ATTN_PROJ=2) each cluster takes one window, all at once. Opt-in (SWIN_ATTN_PROJ=1 or 2):
 * slower than the three kernels at every batch measured (attention_proj.cuh's header). */
static int attn_proj(const swin_engine *e, const swin_dblock *w, const swin_dims *d, const swin_q8_dst *q_proj,
                     const swin_q8_dst *q_fc1) {
    return e->attn_proj && !q_proj && !q_fc1 && !e->ln_fold && e->attn_gather == (d->version == 2) &&
           qkv_fused(e, w, d) &&
           (e->attn_proj == 2 ? swin_window_attention_proj_supports(d, e->dt)
                              : swin_window_attention_proj_one_wave(d, e->dt));   /* implies supports */
}

/* out [T, C] = fc2(GELU(fc1(in))) (+ residual), fc2_name: its name in the breakdown; in_q8: fc1's
 * E4M3 input is already in e->q8 (q8_for); post (V2, fc2_post_ln): out += LN(fc2(...)) with that
 * LayerNorm in fc2's epilogue (out is x, residual NULL).
 * --mlp unfused, and fp32 / tf32: fc1 into hid, then the GELU as an op of its own; fp16 / bf16
 * with --mlp fused (auto on Hopper), and tf32 there (tf32_mlp_fused):
 * fc1 with the exact GELU in its epilogue (kernels/gemm_mma.cu, kernels/sm90/gemm_wgmma.cu; a
 * tf32 fc1 of small tiles stays unfused), or for fp16 / bf16 on Hopper, opt-in, the whole MLP in
 * one kernel (mlp_one_kernel; not while calibrating, which records the hidden's amax); FP8 on
 * Hopper: fc1, GELU and fc2's quantisation in one wgmma GEMM (fp8_mlp_fused); FP8 elsewhere: fc1
 * in FP8, then GELU and fc2's quantisation in one pass. */
static swin_status mlp(swin_engine *e, void *out, const void *in, const swin_dblock *w, const void *residual, int T,
                       int C, int hidden, int in_q8, const char *fc2_name, const swin_dln *post, float eps) {
    const int fp8_fc2 = swin_engine_fp8_site(e, &w->fc2);
    if (fp8_fc2 && fp8_mlp_fused(e, w)) {
        /* fc1 reads its E4M3 input from e->q8 and writes fc2's into hid (free until fc2 reads it) */
        uint8_t *hq = (uint8_t *)e->hid;
        if (!in_q8) SWIN_TRY(quant(e, in, &w->fc1, T));
        OP(GEMM, "fc1+gelu+quantize",
           swin_gemm_wgmma_fp8_gelu_cuda(hq, (const uint8_t *)e->q8, w->fc1.q, w->fc1.wsx, w->fc1.b,
                                         1.0f / e->scale[w->fc2.site], T, C, hidden, e->stream));
        if (post)
            OP(GEMM, fc2_name, swin_gemm_wgmma_post_ln_fp8_cuda(out, hq, w->fc2.q, w->fc2.wsx, w->fc2.b, post->w, post->b,
                                                                eps, T, hidden, C, e->stream));
        else
            OP(GEMM, fc2_name, swin_linear_fp8_cuda(out, hq, NULL, w->fc2.q, w->fc2.wsx, w->fc2.b, residual, T,
                                                    hidden, C, e->gemm, e->stream));
        return SWIN_OK;
    }
    const int fused = e->opt.mlp == SWIN_MLP_FUSED && (e->dt != SWIN_DT_F32 || tf32_mlp_fused(e)) && !fp8_fc2 &&
                      !swin_engine_fp8_site(e, &w->fc1);
    if (fused && !post && !e->recording && mlp_one_kernel(e, T) &&   /* supports: fp16 / bf16 only */
        swin_mlp_wgmma_supports(e->dt, T, C, hidden, out, in, w->fc1.w, w->fc1.b, w->fc2.w, w->fc2.b, residual)) {
        OP(GEMM, residual ? "mlp+residual" : "mlp",
           swin_mlp_wgmma_cuda(out, in, w->fc1.w, w->fc1.b, w->fc2.w, w->fc2.b, residual, T, C, hidden, e->dt,
                               e->stream));
        return SWIN_OK;
    }
    if (!in_q8) SWIN_TRY(quant(e, in, &w->fc1, T));
    if (fused) {
        OP(GEMM, "fc1+gelu", lin(e, e->hid, in, &w->fc1, NULL, T, C, hidden, SWIN_ACT_GELU));
    } else {
        OP(GEMM, "fc1", lin(e, e->hid, in, &w->fc1, NULL, T, C, hidden, SWIN_ACT_NONE));
        if (fp8_fc2) OP(OTHER, "gelu+quantize", swin_engine_quantize(e, e->hid, &w->fc2, T, 1));
        else OP(OTHER, "gelu", swin_gelu_cuda(e->hid, NULL, (size_t)T * hidden, e->dt, e->stream));
    }
    if (!fp8_fc2) SWIN_TRY(quant(e, e->hid, &w->fc2, T));
    if (post) {
        OP(GEMM, fc2_name, swin_gemm_wgmma_post_ln_cuda(out, e->hid, w->fc2.w, w->fc2.b, post->w, post->b, eps, T, hidden,
                                                        C, e->dt, e->stream));
        return SWIN_OK;
    }
    OP(GEMM, fc2_name, lin(e, out, e->hid, &w->fc2, residual, T, hidden, C, SWIN_ACT_NONE));
    return SWIN_OK;
}

/* V1: x += reverse(proj(attn(qkv(partition(LN1(x)))))); x += fc2(gelu(fc1(LN2(x))))
 * Where attn_proj: everything after the partition up to LN2 in one kernel. With ln_fold
 * (SWIN_LN_FOLD=1), proj + reverse + residual and LN2 + fc1 + GELU are one GEMM each.
 * qkv, attention and proj run over the window rows (Tp: the grid padded to multiples of the
 * window, padding tokens included), the MLP over the T image tokens. */
static swin_status block_v1(swin_engine *e, void *x, const swin_dblock *w, const swin_dims *d, int hidden) {
    int T = d->B * swin_dims_tokens(d), Tp = d->B * swin_dims_nw(d) * swin_dims_n(d), C = d->C;
    swin_q8_dst qa, qb, qp;
    const swin_q8_dst *q_qkv = q8_for(e, &w->qkv, &qa, 0), *q_fc1 = q8_for(e, &w->fc1, &qb, 0);
    const swin_q8_dst *q_proj = q8_for(e, &w->proj, &qp, 0);
    void *att;   /* the attention's output, proj's input */
    if (attn_proj(e, w, d, q_proj, q_fc1)) {   /* norm2(x) into e->qkv, free as the kernel keeps q, k, v */
        const swin_attn_epilogue p = {x, e->qkv, w->proj.w, w->proj.b, w->norm2.w, w->norm2.b};
        OP(NORM, "ln1+shift+partition", swin_ln_shift_partition_cuda(e->tok, x, w->norm1.w, w->norm1.b, d, NULL, e->dt,
                                                                     e->stream));
        OP(ATTENTION, "qkv+attention+proj+residual+ln2",
           swin_window_attention_proj_cuda(&p, e->tok, w->qkv.w, w->qkv.b, w->bias_table, w->attn_scale, d, e->dt,
                                           e->stream));
        return mlp(e, x, e->qkv, w, x, T, C, hidden, 0, "fc2+residual", NULL, 0.0f);
    }
    SWIN_TRY(partition_qkv_attention(e, x, w, &w->norm1, d, q_qkv, q_proj, Tp, &att));
    if (e->ln_fold && !e->recording && !mlp_one_kernel(e, T)) {
        /* norm2 folded away (ln_fold_wanted; no FP8 sites, so no E4M3 inputs above): proj writes
         * the attention's output back to the image with the residual and each token's partial
         * statistics (e->ln_part); fc1 normalises with them in its epilogue, on weights with
         * norm2's gamma and beta folded in */
        OP(GEMM, "proj+reverse+residual", swin_gemm_wgmma_proj_scatter_cuda(x, e->ln_part, att, w->proj.w, w->proj.b,
                                                                            d, e->dt, e->stream));
        OP(GEMM, "norm2+fc1+gelu", swin_gemm_wgmma_ln_gelu_cuda(e->hid, x, e->ln_part, w->fc1_ln.w, w->fc1_ln.colsum,
                                                                w->fc1_ln.b, T, C, hidden, d->eps, e->dt, e->stream));
        OP(GEMM, "fc2+residual", lin(e, x, e->hid, &w->fc2, x, T, hidden, C, SWIN_ACT_NONE));
        return SWIN_OK;
    }
    if (!q_proj) SWIN_TRY(quant(e, att, &w->proj, Tp));
    OP(GEMM, "proj", lin(e, e->hid, att, &w->proj, NULL, Tp, C, C, SWIN_ACT_NONE));
    OP(NORM, "reverse+residual+ln2", swin_window_reverse_residual_ln_cuda(x, e->tok, e->hid, w->norm2.w, w->norm2.b,
                                                                          d, q_fc1, e->dt, e->stream));
    return mlp(e, x, e->tok, w, x, T, C, hidden, q_fc1 != NULL, "fc2+residual", NULL, 0.0f);
}

/* V2's fc2 with norm2 and the residual in its epilogue (swin_gemm_wgmma_post_ln_cuda: one kernel for
 * fc2 and ln2+residual) where a row fits its tile (C <= 128: the first stage of the tiny to base
 * models), in fp16 / bf16 on Hopper without the one-kernel MLP, or in fp8 where the block's MLP is
 * FP8 on Hopper (fp8_mlp_fused; swin_gemm_wgmma_post_ln_fp8_cuda, fc2's E4M3 GEMM). e->post_ln
 * (setup, SWIN_FC2_POST_LN): 0 never (the two ops, for comparison in one run), 1 at every size,
 * 2 (default) where gemm_tma.cu's kernel takes a GEMM of that size (swin_gemm_tma_wanted: 2 x SMs
 * tiles).
 * Why: SwinV2-T's first-stage fc2 (K 384, N 96) is bound by memory, not by its MMAs: at batch 256
 * cuBLASLt's reads 805 MB of hidden and writes 201 MB a block in 0.25 ms (4 TB/s), and the
 * ln2+residual pass then moves 603 MB more (0.15 ms); fused, 1.2 GB a block.
 * Measured (H200, 2026-11-29, tools/bench_ab.py, two rounds, best medians, SWIN_FC2_POST_LN=0 /
 * default / =1, ms): SwinV2-T fp16 batch 1 0.419 / 0.422 / 0.422 (the default does not fuse there),
 * 8 0.686 / 0.682 / 0.678, 64 2.996 / 2.883 / 2.876, 256 11.275 / 11.177 / 11.169; bf16 batch 256
 * 11.035 / 10.905; fp8 batch 8 0.707 / 0.706, 64 2.928 / 2.868, 256 10.408 / 10.239.
 * --breakdown, fp16 batch 256 (all blocks): the first stage's fc2 0.503 + ln2+residual 0.297
 * against fc2+ln2+residual 0.605 ms (0.30 a block: 4.0 TB/s, cuBLASLt's fc2 rate). */
static int fc2_post_ln(const swin_engine *e, const swin_dblock *w, int T, int C, int hidden) {
    if (!e->post_ln) return 0;
    const int ok = swin_engine_fp8_site(e, &w->fc2)
                       ? fp8_mlp_fused(e, w) && swin_gemm_post_ln_fp8_supports(T, hidden, C)
                       : !swin_engine_fp8_site(e, &w->fc1) && swin_gemm_post_ln_supports(e->dt, T, hidden, C) &&
                             !(e->opt.mlp == SWIN_MLP_FUSED && !e->recording && mlp_one_kernel(e, T));
    return ok && (e->post_ln == 1 || swin_gemm_tma_wanted(T, C));
}

/* V2: x += LN1(reverse(proj(attn(qkv(partition(x)))))); x += LN2(fc2(gelu(fc1(x)))) (rows as V1);
 * where attn_proj, the attention half in one kernel; where fc2_post_ln, LN2 and the residual in
 * fc2's epilogue */
static swin_status block_v2(swin_engine *e, void *x, const swin_dblock *w, const swin_dims *d, int hidden) {
    int T = d->B * swin_dims_tokens(d), Tp = d->B * swin_dims_nw(d) * swin_dims_n(d), C = d->C;
    swin_q8_dst qa, qb, qp;
    const swin_q8_dst *q_qkv = q8_for(e, &w->qkv, &qa, 0), *q_fc1 = q8_for(e, &w->fc1, &qb, 1);
    const swin_q8_dst *q_proj = q8_for(e, &w->proj, &qp, 0);
    void *att;
    if (attn_proj(e, w, d, q_proj, q_fc1)) {
        const swin_attn_epilogue p = {x, NULL, w->proj.w, w->proj.b, w->norm1.w, w->norm1.b};
        OP(ATTENTION, "partition+qkv+attention+proj+ln1+residual",
           swin_window_attention_proj_cuda(&p, NULL, w->qkv.w, w->qkv.b, w->bias_table, w->attn_scale, d, e->dt,
                                           e->stream));
    } else {
        SWIN_TRY(partition_qkv_attention(e, x, w, NULL, d, q_qkv, q_proj, Tp, &att));
        if (!q_proj) SWIN_TRY(quant(e, att, &w->proj, Tp));
        OP(GEMM, "proj", lin(e, e->hid, att, &w->proj, NULL, Tp, C, C, SWIN_ACT_NONE));
        OP(NORM, "reverse+ln1+residual", swin_window_reverse_residual_cuda(x, e->hid, w->norm1.w, w->norm1.b, d, q_fc1,
                                                                            e->dt, e->stream));
    }
    if (fc2_post_ln(e, w, T, C, hidden))
        return mlp(e, x, x, w, NULL, T, C, hidden, q_fc1 != NULL, "fc2+ln2+residual", &w->norm2, d->eps);
    SWIN_TRY(mlp(e, e->tok, x, w, NULL, T, C, hidden, q_fc1 != NULL, "fc2", NULL, 0.0f));
    OP(NORM, "ln2+residual", swin_layernorm_residual_cuda(x, e->tok, w->norm2.w, w->norm2.b, T, C, d->eps, e->dt, e->stream));
    return SWIN_OK;
}

// ---- head: mean of LN(x) over tokens -> linear -> fp32 logits

static swin_status head(swin_engine *e, void *x, int B) {
    const swin_model *m = e->m;
    const swin_stage_w *last = &m->w.stages[m->cfg.num_stages - 1];
    int C = last->dim, classes = m->cfg.num_classes;
    void *out = e->dt == SWIN_DT_F32 ? (void *)e->logits : e->logits_dt;
    OP(NORM, "head norm+pool", swin_ln_pool_cuda(e->pooled, x, e->w.norm.w, e->w.norm.b, B, last->res_h * last->res_w, C,
                               m->cfg.ln_eps, e->dt, e->stream));
    OP(GEMM, "head linear", lin(e, out, e->pooled, &e->w.head, NULL, B, C, classes, SWIN_ACT_NONE));
    if (e->dt != SWIN_DT_F32)
        OP(OTHER, "logits to fp32", swin_convert_cuda(e->logits, SWIN_DT_F32, e->logits_dt, e->dt, (size_t)B * classes, e->stream));
    return SWIN_OK;
}

// ---- stage outputs (swin_forward_stages): x [B, H, W, C] to host fp32 after a stage

static swin_status stage_copy(swin_engine *e, int s, int B, const void *x) {
    float *dst = e->stage_out ? e->stage_out[s] : NULL;
    if (!dst) return SWIN_OK;
    const swin_stage_w *st = &e->m->w.stages[s];
    size_t n = (size_t)B * st->res_h * st->res_w * st->dim;
    const void *src = x;
    if (e->dt != SWIN_DT_F32) {   /* qkv [T, 3C] in dt is free between stages and holds T*C fp32 */
        SWIN_TRY(swin_convert_cuda(e->qkv, SWIN_DT_F32, x, e->dt, n, e->stream));
        src = e->qkv;
    }
    SWIN_CUDA_TRY(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, e->stream));
    return SWIN_OK;
}

// ---- the forward: a loop over stages and blocks

swin_status swin_engine_enqueue_direct(swin_engine *e, int B) {
    const swin_model *m = e->m;
    int cur = 0;
    if (e->fp8 && !e->calib_forward && !e->scale)
        return swin_fail(SWIN_ERR_ARGUMENT, "this fp8 session has no input scales yet (swin_engine_set_fp8_scales)");
    SWIN_TRY(patch_embed(e, B));
    for (int s = 0; s < m->cfg.num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        e->cur_stage = s;
        if (st->has_merge) SWIN_TRY(merge(e, s, B, &cur));
        for (int b = 0; b < st->depth; b++) {
            swin_dims d = swin_block_dims(m, s, b, B);
            const swin_dblock *w = &e->w.st[s].blocks[b];
            if (m->cfg.version == 1) SWIN_TRY(block_v1(e, e->x[cur], w, &d, st->hidden));
            else SWIN_TRY(block_v2(e, e->x[cur], w, &d, st->hidden));
        }
        SWIN_TRY(stage_copy(e, s, B, e->x[cur]));
    }
    return head(e, e->x[cur], B);
}

swin_status swin_engine_enqueue_attention(swin_engine *e, int B) {
    for (int s = 0; s < e->m->cfg.num_stages; s++)
        for (int b = 0; b < e->m->w.stages[s].depth; b++) {
            swin_dims d = swin_block_dims(e->m, s, b, B);
            SWIN_TRY(attention(e, &e->w.st[s].blocks[b], &d, NULL));   /* 16-bit output, as unfused */
        }
    return SWIN_OK;
}

// ---- CUDA graphs: capture once per batch size, replay after
// With PDL (the default; SWIN_PDL=0 turns it off; kernels/common.cuh) our kernels are captured
// with programmatic edges to the kernel before them (PDL relaxes kernel-to-kernel dependencies
// only: cuBLAS(Lt) GEMMs, memsets and copies keep full edges). Nothing here changes: every kernel
// of ours waits (griddepcontrol.wait) for the kernel before it to complete before it touches
// memory.
// Where a small batch's graph spends its time (H200, 2026-11-27, Swin-T fp16; ncu's
// gpu__time_duration of each kernel of an un-captured forward, at ncu's locked clock with caches
// flushed, so longer than in the graph: 0.41 ms at batch 1, 0.66 at batch 8):
//   batch 1: 96 kernels, 628 us, median 6.2 us; cuBLASLt GEMMs 41 kernels 274 us (4.9 to 10.6
//            each), row kernels (norms, shift, merge, pool) 29 / 155 us (4.3 to 13.6; ln_pool's
//            one CTA 13.6), fc1 + GELU (gemm_mma.cu) 12 / 108 us (7.8 to 11.6; stage 4's 48 CTAs
//            of K 768 11.6), attention 12 / 85 us (6.8 to 7.5 whatever the stage).
//   batch 8: 96 kernels, 915 us; cuBLASLt 394, fc1 + GELU 207 (14.9 to 21.5: the TMA kernel 21 us
//            at stage 1 against 12 for fc2's cuBLASLt GEMM of the same FLOPs, the wgmma kernel 15
//            against 10 at stage 3, gemm_mma.cu 20 against 12 at stage 4), rows 184, attention 123.
// So at batch 1 every kernel is a few microseconds of small grids, none dominant: the 0.25 ms
// goal needs fewer kernels (fusions across ops), not faster ones. At batch 8 the fused fc1 + GELU
// is slower than cuBLASLt's fc1 plus the GELU pass (docs/PERFORMANCE.md: MLP fused/unfused 0.95x
// for Swin-T fp16 and bf16 at batch 8 with PDL, 1.05x for SwinV2-T): SWIN_GEMM_FUSED_TUNE=1 makes
// that choice per shape, timed like the GEMM's algorithms (kernels/gemm.c: 3% at SwinV2-T's batch
// 8, noise elsewhere, so opt-in).

static swin_status capture(swin_engine *e, int B) {
    cudaGraph_t g = NULL;
    SWIN_CUDA_TRY(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
    swin_status st = swin_engine_enqueue_direct(e, B);
    cudaError_t ce = cudaStreamEndCapture(e->stream, &g);
    if (st != SWIN_OK || ce != cudaSuccess) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
    }
    if (st != SWIN_OK) return swin_fail_prefix(st, "capturing the CUDA graph of batch %d", B);
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "capturing the CUDA graph of batch %d: %s (try --graphs off)", B,
                         cudaGetErrorString(ce));
    ce = cudaGraphInstantiate(&e->graphs[B], g, 0);
    cudaGraphDestroy(g);
    if (ce != cudaSuccess) {
        e->graphs[B] = NULL;
        return swin_fail(SWIN_ERR_CUDA, "instantiating the CUDA graph of batch %d: %s", B, cudaGetErrorString(ce));
    }
    return SWIN_OK;
}

/* Enqueue one forward of batch B (input and logits stay on the device). With graphs on, the first
 * call for a batch runs un-captured (the GEMM settles its plans), then captures for later calls. */
swin_status swin_engine_enqueue(swin_engine *e, int B) {
    if (!e->opt.graphs || swin_cuda_debug_sync) return swin_engine_enqueue_direct(e, B);
    if (!e->graphs[B]) {
        SWIN_TRY(swin_engine_enqueue_direct(e, B));
        return capture(e, B);
    }
    SWIN_CUDA_TRY(cudaGraphLaunch(e->graphs[B], e->stream));
    return SWIN_OK;
}

// ---- device choice

swin_status swin_engine_device_count(int *count) {
    int driver = 0, runtime = 0, n = 0;
    *count = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (driver == 0)
        return swin_fail(SWIN_ERR_NO_DEVICE, "no CUDA driver (libcuda was not found: is the NVIDIA driver installed?)");
    cudaError_t ce = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (ce == cudaErrorInsufficientDriver)
        return swin_fail(SWIN_ERR_NO_DEVICE, "no usable GPU: the CUDA driver (%d.%d) is older than the runtime (%d.%d)",
                         driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    if (ce == cudaErrorNoDevice || (ce == cudaSuccess && n == 0))
        return swin_fail(SWIN_ERR_NO_DEVICE, "no GPU found (CUDA driver %d.%d sees no device)",
                         driver / 1000, driver % 1000 / 10);
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_NO_DEVICE, "no usable GPU: cudaGetDeviceCount: %s", cudaGetErrorString(ce));
    *count = n;
    return SWIN_OK;
}

static swin_status pick_device(int index) {
    int n = 0;
    SWIN_TRY(swin_engine_device_count(&n));
    if (index < 0 || index >= n)
        return swin_fail(SWIN_ERR_NO_DEVICE, "cuda:%d does not exist (%d GPU%s)", index, n, n == 1 ? "" : "s");
    return SWIN_OK;
}

// ---- what the kernels run: any grid, window, shift and padding of either library (window.cu,
// attention.cu, patch.cu: odd merges, images padded to the patch), windows up to 32 a side

static int gpu_geometry(const swin_model *m, char *why, size_t size) {
    for (int s = 0; s < m->cfg.num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        if (st->win_h > 32 || st->win_w > 32) {
            snprintf(why, size, "stage %d has %dx%d windows (at most 32 a side)", s, st->win_h, st->win_w);
            return 0;
        }
    }
    return 1;
}

// ---- memory: the whole plan against the free memory before anything is allocated

int swin_cuda_fail_alloc_at;

cudaError_t swin_cuda_alloc(void **p, size_t bytes, int host) {
    *p = NULL;
    if (swin_cuda_fail_alloc_at > 0 && --swin_cuda_fail_alloc_at == 0) return cudaErrorMemoryAllocation;
    return host ? cudaHostAlloc(p, bytes, cudaHostAllocDefault) : cudaMalloc(p, bytes);
}

/* "cuda:0: batch 4096 in fp16 needs 512.3 GiB (weights .., ..); 139.2 GiB free of 139.8 GiB: at
 * most batch 1100 fits" (why: the failed call, when the plan passed the check but the allocation
 * failed anyway, e.g. another process took the memory in between) */
static swin_status refuse(const swin_engine *e, size_t total, const char *why) {
    size_t free_b = 0, all_b = 0;
    cudaGetLastError();
    cudaMemGetInfo(&free_b, &all_b);
    char plan[512], fits[64];
    swin_arena_summary(e, total, plan, sizeof plan);
    int most = swin_arena_max_batch(e, free_b);
    if (most > 0) snprintf(fits, sizeof fits, "at most batch %d fits", most);
    else snprintf(fits, sizeof fits, "not even batch 1 fits");
    return swin_fail(SWIN_ERR_MEMORY, "cuda:%d: %s; %.1f GiB free of %.1f GiB: %s%s%s", e->dev, plan,
                     free_b / 1073741824.0, all_b / 1073741824.0, fits, why ? "; " : "", why ? why : "");
}

// ---- create / free

/* SWIN_LN_FOLD=1 in the environment (read at session creation; opt-in): V1 blocks with --mlp fused
 * on Hopper in fp16 / bf16 fold norm2 into the GEMMs around it (block_v1): proj writes its output
 * back to the image with the residual and each token's partial statistics, fc1 normalises in its
 * epilogue (kernels/sm90/gemm_tma_fold.cuh, SCATTER and LN_GELU), and the reverse + residual +
 * norm2 pass between them is gone. Not for fp8 engines (fc1's E4M3 input is the norm's output) nor
 * while calibrating (which records that input's amax). Correct (test_gpu_lnfold,
 * test_gpu_engine_fold; a random full-size Swin-T against timm: fp16 7.3e-4 against 8.0e-4
 * without, bf16 7.4e-3 against 7.7e-3) but slower, hence off by default. H200 (2026-11-27,
 * `SWIN_LN_FOLD=1` / `=0 build/swin bench --precision fp16 --batch 1,256 --iters 30`, alternating,
 * two runs each): Swin-T batch 256 9.824 / 9.887 against 9.210 / 9.199 ms, batch 1 0.520 / 0.527
 * against 0.460 / 0.465 ms. --breakdown at batch 256: proj + reverse + residual 1.447 ms against
 * proj 0.577 + the pass 0.796, and norm2 + fc1 + GELU 3.143 against fc1 + GELU 2.354 (stages 1.034
 * / 0.629 / 1.178 / 0.302 against 0.752 / 0.445 / 0.913 / 0.244); gemm_tma_fold.cuh says why. */
static int ln_fold_wanted(const swin_engine *e) {
    const swin_model *m = e->m;
    if (!e->wgmma || e->fp8 || e->recording || m->cfg.version != 1 || e->opt.mlp != SWIN_MLP_FUSED ||
        (e->dt != SWIN_DT_F16 && e->dt != SWIN_DT_BF16) || !swin_env_on("SWIN_LN_FOLD", 0))
        return 0;
    for (int s = 0; s < m->cfg.num_stages; s++)
        if (m->w.stages[s].depth > 0 && !swin_gemm_ln_fold_supports(e->dt, m->w.stages[s].dim, m->w.stages[s].hidden))
            return 0;
    return 1;
}

static swin_status setup(swin_engine *e) {
    size_t total = 0, free_b = 0, all_b = 0;
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    /* auto: fused where its large tiles run on wgmma (swin.h) */
    e->wgmma = swin_gemm_wgmma_available();
    SWIN_CUDA_TRY(cudaDeviceGetAttribute(&e->sms, cudaDevAttrMultiProcessorCount, e->dev));
    e->pdl = swin_pdl_enabled();
    if (e->opt.mlp == SWIN_MLP_AUTO) e->opt.mlp = e->wgmma ? SWIN_MLP_FUSED : SWIN_MLP_UNFUSED;
    /* fp32, and tf32 without wgmma, have no fused fc1: say what runs (bench, info); fp8 keeps --mlp
     * for its 16-bit MLPs */
    if (e->opt.precision != SWIN_FP8 && !swin_engine_mlp_selectable(e)) e->opt.mlp = SWIN_MLP_UNFUSED;
    e->ln_fold = ln_fold_wanted(e);
    /* fp16 / bf16 with --attention fused: the qkv GEMM inside the attention kernel where it takes
     * the block and pays (qkv_attention); SWIN_ATTN_QKV=0 in the environment keeps the two kernels
     * everywhere, =2 fuses every block the kernel takes (to measure the rule) */
    e->attn_qkv = e->opt.attention == SWIN_ATTN_FUSED && (e->dt == SWIN_DT_F16 || e->dt == SWIN_DT_BF16)
                      ? (swin_env_is("SWIN_ATTN_QKV", "2") ? 2 : swin_env_on("SWIN_ATTN_QKV", 1))
                      : 0;
    /* the window partition inside that kernel too (partition_qkv_attention): V2 by default, V1 with
     * SWIN_ATTN_GATHER=1 (its norm1 in every head's CTA: slower), never with =0 */
    e->attn_gather = e->attn_qkv && swin_env_on("SWIN_ATTN_GATHER", e->m->cfg.version == 2);
    /* and the rest of the attention half in its epilogue (attn_proj), opt-in as it is slower:
     * SWIN_ATTN_PROJ=1 where each cluster takes one window, =2 wherever the kernel takes the block */
    e->attn_proj = !e->attn_qkv ? 0 : swin_env_is("SWIN_ATTN_PROJ", "2") ? 2 : swin_env_on("SWIN_ATTN_PROJ", 0);
    /* V2's norm2 in fc2's epilogue (fc2_post_ln; fp8 sessions compute in fp16): SWIN_FC2_POST_LN=0
     * never, =1 at every size, by default where the TMA GEMM takes the layer */
    e->post_ln = 0;
    if (e->wgmma && e->m->cfg.version == 2 && (e->dt == SWIN_DT_F16 || e->dt == SWIN_DT_BF16))
        e->post_ln = swin_env_is("SWIN_FC2_POST_LN", "1") ? 1 : swin_env_on("SWIN_FC2_POST_LN", 1) ? 2 : 0;
    SWIN_TRY(swin_arena_plan(e, NULL, &total));   /* host arithmetic: nothing on the device yet */
    /* the cuBLAS handles first: their device memory is gone from the free memory measured next
     * (else a batch said to fit could leave too little for them); the workspace comes later */
    SWIN_TRY(swin_gemm_create(&e->gemm, e->fp8 ? SWIN_FP16 : e->opt.precision, NULL, 0));
    swin_gemm_set_fused_gelu(e->gemm, e->opt.mlp == SWIN_MLP_FUSED);
    SWIN_CUDA_TRY(cudaMemGetInfo(&free_b, &all_b));
    if (total > free_b || SWIN_GPU_HEADROOM_BYTES > free_b - total) return refuse(e, total, NULL);
    SWIN_CUDA_TRY(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking));
    e->owns_stream = 1;
    cudaError_t ce = swin_cuda_alloc((void **)&e->arena, total, 0);
    if (ce != cudaSuccess) {
        char why[160];
        snprintf(why, sizeof why, "cudaMalloc of the arena: %s", cudaGetErrorString(ce));
        return refuse(e, total, why);
    }
    e->arena_bytes = total;
    SWIN_TRY(swin_arena_plan(e, e->arena, &total));
    SWIN_TRY(swin_gemm_set_workspace(e->gemm, e->gemm_ws, e->gemm_ws_bytes));
    swin_gemm_set_ones(e->gemm, e->ones, e->n_ones);   /* FP8 sites' unscaled rows (arena: filled by the upload) */
    return swin_arena_upload(e);
}

swin_status swin_engine_create(const swin_model *m, const swin_session_options *o, swin_engine **out) {
    if (!m || !o || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_create: NULL argument");
    *out = NULL;
    if ((unsigned)o->precision > SWIN_FP8)
        return swin_fail(SWIN_ERR_ARGUMENT, "unknown precision %d", (int)o->precision);
    if (o->precision == SWIN_FP8 && o->calibrate)
        return swin_fail(SWIN_ERR_ARGUMENT, "calibration runs in fp32, tf32, fp16 or bf16, not in fp8");
    if (o->attention != SWIN_ATTN_FUSED && o->attention != SWIN_ATTN_UNFUSED)
        return swin_fail(SWIN_ERR_ARGUMENT, "unknown attention implementation %d", (int)o->attention);
    if (o->mlp != SWIN_MLP_FUSED && o->mlp != SWIN_MLP_UNFUSED && o->mlp != SWIN_MLP_AUTO)
        return swin_fail(SWIN_ERR_ARGUMENT, "unknown MLP implementation %d", (int)o->mlp);
    if (o->max_batch < 1) return swin_fail(SWIN_ERR_ARGUMENT, "max batch %d must be at least 1", o->max_batch);
    SWIN_TRY(pick_device(o->device_index));
    if (o->precision == SWIN_FP8) SWIN_TRY(swin_engine_fp8_device_check(o->device_index));
    char why[256];
    if (!gpu_geometry(m, why, sizeof why))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: %s is not supported on the GPU yet (use --device cpu)",
                         m->cfg.arch, why);
    if (swin_env_on("SWIN_CUDA_SYNC", 0)) swin_cuda_debug_sync = 1;

    swin_engine *e = calloc(1, sizeof *e);
    if (!e) return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    e->m = m;
    e->opt = *o;
    e->dt = swin_precision_dtype(o->precision);
    e->dev = o->device_index;
    e->fp8 = o->precision == SWIN_FP8;
    e->recording = o->calibrate != 0;
    if (o->calibrate) e->opt.graphs = 0;   /* every forward records: never captured */
    int ok = (e->graphs = calloc((size_t)o->max_batch + 1, sizeof *e->graphs)) != NULL;
    for (int s = 0; s < m->cfg.num_stages && ok; s++)
        ok = (e->w.st[s].blocks = calloc((size_t)m->w.stages[s].depth + 1, sizeof(swin_dblock))) != NULL;
    swin_status st = ok ? setup(e) : swin_fail(SWIN_ERR_MEMORY, "out of memory");
    if (st != SWIN_OK) {
        swin_engine_free(e);
        return st;
    }
    *out = e;
    return SWIN_OK;
}

swin_mlp swin_engine_mlp(const swin_engine *e) { return e->opt.mlp; }

int swin_engine_mlp_selectable(const swin_engine *e) {
    const swin_precision p = e->opt.precision;
    return p == SWIN_FP16 || p == SWIN_BF16 || (p == SWIN_TF32 && tf32_mlp_fused(e));
}

int swin_engine_pdl(const swin_engine *e) { return e->pdl; }

void swin_engine_free(swin_engine *e) {
    if (!e) return;
    cudaSetDevice(e->dev);
    if (e->stream) cudaStreamSynchronize(e->stream);
    swin_engine_images_free(e);
    swin_engine_async_free(e);
    for (int b = 0; e->graphs && b <= e->opt.max_batch; b++)
        if (e->graphs[b]) cudaGraphExecDestroy(e->graphs[b]);
    swin_gemm_free(e->gemm);
    if (e->arena) cudaFree(e->arena);
    if (e->owns_stream) cudaStreamDestroy(e->stream);
    for (int s = 0; s < SWIN_MAX_STAGES; s++) free(e->w.st[s].blocks);
    free(e->graphs);
    free(e->sites);
    free(e->scale);
    free(e);
}

// ---- forward from and to the host

/* check the batch, then copy host input [B,3,H,W] into the device input (enqueued on the stream) */
static swin_status upload_input(swin_engine *e, const float *input, int B) {
    if (B < 1 || B > e->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)",
                         B, e->opt.max_batch);
    const swin_config *c = &e->m->cfg;
    size_t in_bytes = (size_t)B * 3 * c->img_h * c->img_w * sizeof(float);
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    SWIN_CUDA_TRY(cudaMemcpyAsync(e->input, input, in_bytes, cudaMemcpyHostToDevice, e->stream));
    return SWIN_OK;
}

swin_status swin_engine_forward(swin_engine *e, const float *input, int B, float *logits) {
    if (!e || !input || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_forward: NULL argument");
    SWIN_TRY(upload_input(e, input, B));
    return swin_engine_forward_device(e, B, logits, NULL);
}

swin_status swin_engine_forward_stages(swin_engine *e, const float *input, int B, float *const *stage_out) {
    if (!e || !input) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_forward_stages: NULL argument");
    SWIN_TRY(upload_input(e, input, B));
    e->stage_out = stage_out;   /* un-captured: the copies go to this call's host buffers */
    swin_status st = swin_engine_enqueue_direct(e, B);
    e->stage_out = NULL;
    cudaError_t ce = cudaStreamSynchronize(e->stream);
    if (st != SWIN_OK) return st;
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "forward of batch %d with stage outputs on cuda:%d failed: %s "
                         "(SWIN_CUDA_SYNC=1 names the op)", B, e->dev, cudaGetErrorString(ce));
    return SWIN_OK;
}

/* FP8: an un-captured forward that records the amax of every site; an fp8 engine runs it in fp16 */
swin_status swin_engine_calibrate_forward(swin_engine *e, const float *input, int B) {
    if (!e || !input) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_calibrate_forward: NULL argument");
    SWIN_TRY(upload_input(e, input, B));
    e->recording = 1;
    e->calib_forward = e->fp8;
    swin_status st = swin_engine_enqueue_direct(e, B);
    e->recording = e->opt.calibrate != 0;
    e->calib_forward = 0;
    cudaError_t ce = cudaStreamSynchronize(e->stream);
    if (st != SWIN_OK) return st;
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "calibration forward of batch %d on cuda:%d failed: %s", B, e->dev,
                         cudaGetErrorString(ce));
    return SWIN_OK;
}

swin_status swin_engine_forward_device(swin_engine *e, int B, float *logits, cudaEvent_t done) {
    size_t out_bytes = (size_t)B * e->m->cfg.num_classes * sizeof(float);
    SWIN_TRY(swin_engine_enqueue(e, B));
    SWIN_CUDA_TRY(cudaMemcpyAsync(logits, e->logits, out_bytes, cudaMemcpyDeviceToHost, e->stream));
    if (done) SWIN_CUDA_TRY(cudaEventRecord(done, e->stream));
    cudaError_t ce = cudaStreamSynchronize(e->stream);
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "forward of batch %d on cuda:%d failed: %s (SWIN_CUDA_SYNC=1 names the op)",
                         B, e->dev, cudaGetErrorString(ce));
    return SWIN_OK;
}

swin_status swin_engine_describe(const swin_engine *e, char *buf, size_t size) {
    if (!e || !buf || !size) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_describe: NULL argument");
    swin_arena_describe(e, buf, size);
    return SWIN_OK;
}
