/* gemm.c - linear layers through cuBLASLt (kernels/gemm.h):
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N]) (+ residual [M, N], may alias out)
 *
 * Row-major PyTorch layouts seen column-major: D^T [N, M] = W [N, K] (A = w, transa = T) x in^T
 * (B = in, transb = N); the bias is per row of the column-major D (epilogue BIAS), the residual
 * is C with beta = 1 (C == D is allowed by cuBLASLt when both share the layout).
 * Precision: SWIN_FP32 fp32 data, CUBLAS_COMPUTE_32F (cuBLASLt uses TF32 only when asked for
 * CUBLAS_COMPUTE_32F_FAST_TF32); SWIN_TF32 the latter; SWIN_FP16 / SWIN_BF16 16-bit A/B/C/D/bias
 * with fp32 accumulation and fp32 scales. On Hopper a SWIN_FP32 handle's layers run instead on
 * kernels/sm90/gemm_x3.cu (3xTF32: fp32 accuracy on the TF32 tensor cores) where it takes the
 * shape, unless SWIN_FP32_GEMM=sgemm. cuBLAS's own FP32 emulation (CUBLAS_COMPUTE_32F_EMULATED_16BFX9
 * with the eager strategy) was tried on the H200 (2026-11-27, Swin-T fp32 batch 256: 67.88 ms
 * against 67.88 ms, bit-identical logits): it is not used on compute capability 9.0.
 * GELU: cuBLASLt's GELU epilogue is the tanh approximation, the model needs the exact erf form of
 * nn.GELU. So GELU is the BIAS epilogue followed by swin_gelu_cuda (kernels/act.cu), which also
 * adds the residual in that case (gelu(x W^T + b) + residual, as the CPU reference); with
 * swin_gemm_set_fused_gelu(g, 1) a 16-bit GELU layer without residual runs instead on our own
 * tensor-core GEMM with the bias and the erf GELU in its epilogue (kernels/gemm_mma.cu) where the
 * shape allows; on Hopper its large tiles run on the wgmma version of that kernel
 * (kernels/sm90/gemm_wgmma.cu; SWIN_GEMM_WGMMA=0 keeps the mma.sync one), which also takes a
 * TF32 handle's GELU layers of large tiles (fp32 data, TF32 math as cuBLASLt's). With
 * SWIN_GEMM_TMA_LINEAR=1 in the environment, the 16-bit layers without GELU (qkv, proj, fc2 with
 * its residual, the reductions) of enough tiles run on that file's persistent TMA kernel too
 * (kernels/sm90/gemm_tma.cu); off by default, as cuBLASLt is faster on them (its header).
 * Small batches: cuBLASLt's kernels neither wait nor trigger (no PDL edge), so at batch 1 ours
 * were tried in their place, to see whether the launch latency PDL hides outweighs their slower
 * kernels. It does not (H200, 2026-11-29, tools/bench_ab.py, two rounds, best medians, ms, fp16,
 * default / ours): every layer without GELU on the TMA kernel (SWIN_GEMM_TMA_LINEAR=1
 * SWIN_GEMM_TMA_MIN_TILES=0): Swin-T batch 1 0.410 / 0.514, 2 0.451 / 0.548, 8 0.644 / 0.694
 * (--breakdown at batch 1: fc2 + residual 0.101 / 0.174, proj 0.079 / 0.102), SwinV2-T batch 1
 * 0.422 / 0.525, Swin-B 384 batch 1 1.100 / 1.344; on gemm_mma.cu's mma.sync kernel (64 x 64
 * tiles here, a residual added in its epilogue; a patch, not kept), default, then the layers of K
 * up to 384 / 768 / all: Swin-T batch 1 0.415 / 0.433 / 0.455 / 0.546, 2 0.456 / 0.489 / 0.515 /
 * 0.604, 8 0.660 / 0.741 / 0.786 / 0.984 (the long-K fc2 of stages 3 and 4 worst: 24 or 12 CTAs),
 * SwinV2-T batch 1 0.426 / - / 0.464 / 0.530, Swin-B 384 batch 1 1.113 / - / 1.314 / 1.703. So the
 * small batches stay on cuBLASLt.
 * SWIN_GEMM_FUSED_TUNE=1 (with tuning, below; opt-in) makes that choice per shape instead: the
 * first call of a GELU layer that our fused kernel takes times it against cuBLASLt's best
 * candidate plus the GELU pass and keeps the faster (plan.fused). Why: at batch 8 with PDL the
 * fused kernels took 15 to 21 us where cuBLASLt's fc2 of the same FLOPs took 10 to 12 (ncu,
 * src/cuda/engine.c at the CUDA graphs), and Swin-T's MLP was 5% faster unfused end to end,
 * SwinV2-T's 5% slower.
 * Measured on the H200 (2026-11-28, one build, SWIN_GEMM_FUSED_TUNE=0 / 1 in one run, two runs
 * each, `swin bench --precision fp16 --batch 1,8,64,256 --iters 30`, median ms): SwinV2-T batch 8
 * 0.729 / 0.724 -> 0.706 / 0.708, batch 1, 64 and 256 within noise (0.431 / 0.438 -> 0.432 / 0.434,
 * 3.171 / 3.169 -> 3.126 / 3.154, 11.982 / 11.960 -> 12.007 / 11.951); Swin-T within noise at every
 * batch (batch 8 0.660 / 0.669 -> 0.659 / 0.667, 256 8.969 / 8.981 -> 8.982 / 8.990). So it pays
 * 3% at SwinV2-T's batch 8 only, and stays opt-in (ctest's _fusedtune variants pass).
 * Plans: matmul descriptor, layouts and an algorithm, cached per (M, K, N, act, bias, residual,
 * pointer alignments); the first call of a shape (or swin_gemm_prepare) runs the heuristic,
 * replays and graph captures only look the plan up.
 * Tuning: the heuristic's first choice is often not the fastest for Swin's skinny shapes (K or N
 * of 96..768 against M of up to 800k rows). So the first un-captured call of a shape times the
 * heuristic's top candidates (up to GEMM_CANDIDATES, or SWIN_GEMM_CANDIDATES=N in the environment,
 * 1 to GEMM_CANDIDATES_MAX, to time more of them; each GEMM_TUNE_REPS runs after one warm-up)
 * on its real inputs, writing into a temporary output (the real output and a residual that
 * aliases it are untouched), and keeps the fastest. Different algorithms may round differently in
 * the last bits; SWIN_GEMM_TUNE=0 in the environment keeps the heuristic's first choice (then
 * the choice is deterministic). When the temporary output cannot be allocated, the heuristic's
 * choice stays.
 * The cublasHandle_t of swin_gemm_cublas() follows the precision (TF32 math only for SWIN_TF32);
 * cublasSetStream resets its workspace, so its user sets the stream (and a workspace) itself.
 * FP8 (swin_linear_fp8_cuda): E4M3 A and B, fp16 C, D and bias, fp32 accumulation; A's and B's
 * scales are vectors (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F: one per output channel, one per
 * input row), their pointers set on the cached descriptor before every call, as the bias's is.
 * With the rows unscaled (in_scale NULL: the engine's sites, the input scale folded into the
 * column scales) our persistent TMA kernel (sm90/gemm_tma.cu, E4M3 PLAIN / RESID) may take the
 * layer: SWIN_GEMM_TMA_FP8=2 (default) times it against cuBLASLt's best candidate on the shape's
 * first un-captured call and keeps the faster (p->own; a plan of one candidate is tuned for this
 * too), 1 takes it wherever it can, 0 never. Why: cuBLASLt's FP8 GEMMs with vector scales were
 * slower than its fp16 ones on some of Swin's shapes (H200, Swin-T batch 256, --breakdown, all
 * blocks: stage-2 qkv 0.273 ms in fp8 against 0.234 in fp16), and these layers are bound by their
 * fp16 outputs. Measured (H200, 2026-11-29, tools/bench_ab.py, two rounds, best medians, =0 / =1 /
 * default): Swin-T fp8 batch 8 0.617 / 0.618 / 0.616 ms, 64 2.152 / 2.100 / 2.094, 256 7.410 /
 * 7.341 / 7.263; SwinV2-T batch 8 0.684 / 0.678 / 0.679, 64 2.708 / 2.656 / 2.653, 256 9.815 /
 * 9.658 / 9.655; Swin-B 384 batch 64 14.228 / 13.963 / 13.947. --breakdown, Swin-T batch 256, ms
 * per stage for all blocks, =0 / =1: qkv 0.574 0.273 0.442 0.115 / 0.522 0.210 0.344 0.098; proj
 * 0.216 0.120 0.192 0.050 / 0.211 0.105 0.164 0.047; fc2 + residual 0.329 0.197 0.386 0.112 /
 * 0.320 0.213 0.351 0.111 (the default keeps stage 2's on cuBLASLt); merge reductions 0.133 /
 * 0.113. The kernel keeps its sums in the FP8 accumulator (gemm.h); a full-size random Swin-T's
 * fp8 verify error 7.8e-2 (=0), 8.5e-2 (=1 with SWIN_GEMM_TMA_MIN_TILES=0), 8.2e-2 (default).
 * Test: tests/test_gpu_gemm.c, tests/test_gpu_fp8.c (FP8).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "check.h"
#include "gemm.h"

/* Record a failed cuBLAS(Lt) call (statement, place, status string) into st and jump to fail. */
#define LT_GO(call)                                                                                \
    do {                                                                                           \
        cublasStatus_t lt_s_ = (call);                                                             \
        if (lt_s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
            st = swin_fail(SWIN_ERR_CUDA, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,      \
                           cublasLtGetStatusString(lt_s_));                                        \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* the heuristic's candidates asked for and timed, by default. 32 measured against 8 (H200,
 * 2026-11-28, swin bench fp16 batch 1 and 8 -n 200, two rounds): Swin-T 0.415 / 0.421 against
 * 0.419 / 0.422 ms at batch 1, 0.676 / 0.665 against 0.668 / 0.659 at 8; SwinV2-T 0.434 / 0.435
 * against 0.434 / 0.438, 0.722 / 0.730 against 0.712 / 0.734: within the runs' spread */
#define GEMM_CANDIDATES 8
#define GEMM_CANDIDATES_MAX 32   /* ... at most (SWIN_GEMM_CANDIDATES) */
#define GEMM_TUNE_REPS 5

typedef struct {
    int M, K, N, act, has_bias, has_res;   /* has_res: residual fused as C (beta = 1) */
    int fp8;                               /* E4M3 A and B with outer-vector scales (fp16 C, D, bias) */
    uint32_t align[5];                     /* A (w), B (in), C, D (out), bias: bytes, <= 256 */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lcd;    /* lcd serves C and D */
    cublasLtMatmulAlgo_t algo;             /* the one used */
    cublasLtMatmulAlgo_t cand[GEMM_CANDIDATES_MAX];   /* the heuristic's, best first */
    int n_cand, tuned;
    int x3;                                /* SWIN_FP32: 1 runs sm90/gemm_x3.cu where it takes the call
                                              (swin_gemm_x3_supports), 0 cuBLASLt (plan_tune decides) */
    int fused;                             /* a GELU layer our fused kernel takes (fused_kind): 1 runs it,
                                              0 cuBLASLt + the GELU pass (plan_tune decides with
                                              fused_tune; 1 until then) */
    int own_ok;                            /* key: a call that sm90/gemm_tma.cu's kernel takes (a layer
                                              without GELU; FP8: rows unscaled) and may be timed for */
    int own;                               /* ... 1 runs it, 0 cuBLASLt (plan_tune decides; 0 until then) */
} gemm_plan;

struct swin_gemm {
    swin_precision prec;
    swin_dtype dt;
    cudaDataType_t data_type;
    cublasComputeType_t compute;
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    void *ws;
    size_t ws_bytes;
    int tune;                              /* time the candidates (SWIN_GEMM_TUNE != 0) */
    int candidates;                        /* how many the heuristic is asked for (SWIN_GEMM_CANDIDATES) */
    int fused_gelu;                        /* 16-bit GELU layers on gemm_mma.cu where it can */
    int wgmma;                             /* ... its large tiles on sm90/gemm_wgmma.cu (Hopper) */
    int sms;                               /* the GPU's multiprocessors, when wgmma */
    int tma_linear;                        /* 16-bit / TF32 layers without GELU on sm90/gemm_tma.cu where it
                                              can: 0 never, 1 always, 2 where faster (SWIN_GEMM_TMA_LINEAR) */
    int x3;                                /* SWIN_FP32 layers on sm90/gemm_x3.cu (3xTF32) where it can */
    int fused_tune;                        /* time fused_gelu's kernel against cuBLASLt + the GELU pass per
                                              shape and keep the faster (SWIN_GEMM_FUSED_TUNE=1, with tune) */
    int fp8_own;                           /* FP8 layers on sm90/gemm_tma.cu: 0 never, 1 where it can,
                                              2 where it can and was faster (SWIN_GEMM_TMA_FP8; 1 also
                                              with SWIN_GEMM_TMA_LINEAR=1) */
    const float *ones;                     /* n_ones device floats of 1: unscaled FP8 rows for cuBLASLt */
    size_t n_ones;
    gemm_plan *plans;
    int n_plans, cap_plans;
};

/* SWIN_FP32_GEMM=sgemm keeps a SWIN_FP32 handle's layers on cuBLASLt's fp32 GEMM; else (default,
 * or x3) they run on sm90/gemm_x3.cu where it can. Read once. */
static int fp32_x3_on(void) {
    static int on = -1;
    if (on < 0) on = !swin_env_is("SWIN_FP32_GEMM", "sgemm");
    return on;
}

// ---- plans

/* Largest power of two (<= 256) dividing the address; 256 for NULL (pointer not used). */
static uint32_t align_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    if (!a) return 256;
    uintptr_t low = a & (~a + 1);
    return low >= 256 ? 256u : (uint32_t)low;
}

static void plan_destroy(gemm_plan *p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lcd) cublasLtMatrixLayoutDestroy(p->lcd);
    memset(p, 0, sizeof *p);
}

/* Descriptors and the heuristic's best algorithm for key p (fields M..align filled). */
static swin_status plan_build(swin_gemm *g, gemm_plan *p, const void *bias) {
    swin_status st = SWIN_OK;
    cublasLtMatmulPreference_t pref = NULL;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = p->has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cudaDataType_t ab_type = p->fp8 ? CUDA_R_8F_E4M3 : g->data_type;
    uint64_t ws = g->ws_bytes;
    cublasLtMatmulHeuristicResult_t res[GEMM_CANDIDATES_MAX];
    int found = 0;
    memset(res, 0, sizeof res);

    LT_GO(cublasLtMatmulDescCreate(&p->desc, g->compute, CUDA_R_32F));
    LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (p->has_bias) {
        /* the heuristic reads the bias pointer's value (never dereferenced) for its alignment */
        LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &g->data_type,
                                             sizeof g->data_type));
        LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    if (p->fp8) {   /* per-row scales of A (the weights' output channels) and of B (the input rows) */
        const cublasLtMatmulMatrixScale_t vec = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        const void *any = (const void *)(uintptr_t)256;
        LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &vec, sizeof vec));
        LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec, sizeof vec));
        LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &any, sizeof any));
        LT_GO(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &any, sizeof any));
    }
    LT_GO(cublasLtMatrixLayoutCreate(&p->la, ab_type, (uint64_t)p->K, (uint64_t)p->N, p->K));
    LT_GO(cublasLtMatrixLayoutCreate(&p->lb, ab_type, (uint64_t)p->K, (uint64_t)p->M, p->K));
    LT_GO(cublasLtMatrixLayoutCreate(&p->lcd, g->data_type, (uint64_t)p->N, (uint64_t)p->M, p->N));

    LT_GO(cublasLtMatmulPreferenceCreate(&pref));
    LT_GO(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    static const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        LT_GO(cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &p->align[i], sizeof p->align[i]));
    LT_GO(cublasLtMatmulAlgoGetHeuristic(g->lt, p->desc, p->la, p->lb, p->lcd, p->lcd, pref, g->candidates,
                                         res, &found));
    p->n_cand = 0;
    for (int i = 0; i < found && i < g->candidates; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS) p->cand[p->n_cand++] = res[i].algo;
    if (p->n_cand < 1) {
        st = swin_fail(SWIN_ERR_UNSUPPORTED,
                       "swin_linear_cuda: cuBLASLt has no algorithm for M %d, K %d, N %d (%s, bias %d, "
                       "residual %d, alignments %u/%u/%u/%u)", p->M, p->K, p->N,
                       p->fp8 ? "fp8 e4m3" : swin_precision_str(g->prec), p->has_bias, p->has_res, p->align[0], p->align[1],
                       p->align[2], p->align[3]);
        goto fail;
    }
    p->algo = p->cand[0];
    /* without tuning: the 3xTF32 kernel where its 64 x 128 tiles fill the GPU twice (at batch 1
     * Swin's layers are too small for it and cuBLASLt's split-K shapes win) */
    p->x3 = g->x3 && (long long)((p->M + 63) / 64) * ((p->N + 127) / 128) >= 2LL * g->sms;
    p->fused = 1;
    p->tuned = p->n_cand == 1 && !g->x3 && !g->fused_tune && !p->own_ok;   /* one candidate: nothing to time */
    cublasLtMatmulPreferenceDestroy(pref);
    return SWIN_OK;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    plan_destroy(p);
    return st;
}

static int plan_match(const gemm_plan *a, const gemm_plan *b) {
    return a->M == b->M && a->K == b->K && a->N == b->N && a->act == b->act && a->fp8 == b->fp8 &&
           a->own_ok == b->own_ok && a->has_bias == b->has_bias && a->has_res == b->has_res &&
           memcmp(a->align, b->align, sizeof a->align) == 0;
}

/* The cached plan for key, built on first use. */
static swin_status plan_get(swin_gemm *g, const gemm_plan *key, const void *bias, gemm_plan **out) {
    for (int i = 0; i < g->n_plans; i++)
        if (plan_match(&g->plans[i], key)) { *out = &g->plans[i]; return SWIN_OK; }
    if (g->n_plans == g->cap_plans) {
        int cap = g->cap_plans ? 2 * g->cap_plans : 32;
        gemm_plan *np = (gemm_plan *)realloc(g->plans, (size_t)cap * sizeof *np);
        if (!np) return swin_fail(SWIN_ERR_MEMORY, "swin_linear_cuda: out of memory for GEMM plans");
        g->plans = np;
        g->cap_plans = cap;
    }
    gemm_plan *p = &g->plans[g->n_plans];
    *p = *key;
    p->desc = NULL;
    p->la = p->lb = p->lcd = NULL;
    SWIN_TRY(plan_build(g, p, bias));
    g->n_plans++;
    *out = p;
    return SWIN_OK;
}

/* Fill the key of a call; has_res is whether the residual is fused as C (not with GELU). */
static void plan_key(gemm_plan *k, int M, int K, int N, swin_act act, const void *out, const void *in,
                     const void *w, const void *bias, const void *residual) {
    memset(k, 0, sizeof *k);
    k->M = M, k->K = K, k->N = N, k->act = (int)act;
    k->has_bias = bias != NULL;
    k->has_res = residual != NULL && act != SWIN_ACT_GELU;
    k->align[0] = align_of(w);
    k->align[1] = align_of(in);
    k->align[2] = align_of(k->has_res ? residual : out);
    k->align[3] = align_of(out);
    k->align[4] = align_of(bias);
}

// ---- lifetime

swin_status swin_gemm_create(swin_gemm **out, swin_precision prec, void *workspace, size_t ws_bytes) {
    if (!out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_gemm_create: out is NULL");
    *out = NULL;
    if (ws_bytes && !workspace)
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_gemm_create: workspace is NULL but %zu bytes", ws_bytes);
    swin_gemm *g = (swin_gemm *)calloc(1, sizeof *g);
    if (!g) return swin_fail(SWIN_ERR_MEMORY, "swin_gemm_create: out of memory");
    g->prec = prec;
    g->ws = workspace;
    g->ws_bytes = ws_bytes;
    g->tune = swin_env_on("SWIN_GEMM_TUNE", 1);
    swin_status est = swin_env_int("SWIN_GEMM_CANDIDATES", 1, GEMM_CANDIDATES_MAX, GEMM_CANDIDATES,
                                   "cuBLASLt algorithms", &g->candidates);
    if (est == SWIN_OK)
        est = swin_env_int("SWIN_GEMM_TMA_LINEAR", 0, 2, 0, "linear layers on the TMA kernel (0, 1, 2)", &g->tma_linear);
    if (est == SWIN_OK)
        est = swin_env_int("SWIN_GEMM_TMA_FP8", 0, 2, 2, "FP8 layers on the TMA kernel (0, 1, 2)", &g->fp8_own);
    if (est != SWIN_OK) {
        free(g);
        return est;
    }
    g->wgmma = swin_env_on("SWIN_GEMM_WGMMA", 1) && swin_gemm_wgmma_available();
    /* the TMA kernel takes fp32 data as TF32: never for precision fp32 */
    if (!g->wgmma || prec == SWIN_FP32) g->tma_linear = 0;
    if (!g->wgmma || prec != SWIN_FP16) g->fp8_own = 0;   /* FP8 handles are fp16 ones */
    if (g->fp8_own && g->tma_linear == 1) g->fp8_own = 1;   /* "every layer on it", as the tests ask */
    g->x3 = prec == SWIN_FP32 && g->wgmma && fp32_x3_on();
    g->fused_tune = g->tune && swin_env_on("SWIN_GEMM_FUSED_TUNE", 0);
    int dev = 0;
    if (g->wgmma && (cudaGetDevice(&dev) != cudaSuccess ||
                     cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)) {
        free(g);
        return swin_fail(SWIN_ERR_CUDA, "swin_gemm_create: cannot query the GPU");
    }
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    switch (prec) {
    case SWIN_FP32: g->dt = SWIN_DT_F32, g->data_type = CUDA_R_32F, g->compute = CUBLAS_COMPUTE_32F; break;
    case SWIN_TF32:
        g->dt = SWIN_DT_F32, g->data_type = CUDA_R_32F, g->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        math = CUBLAS_TF32_TENSOR_OP_MATH;
        break;
    case SWIN_FP16: g->dt = SWIN_DT_F16, g->data_type = CUDA_R_16F, g->compute = CUBLAS_COMPUTE_32F; break;
    case SWIN_BF16: g->dt = SWIN_DT_BF16, g->data_type = CUDA_R_16BF, g->compute = CUBLAS_COMPUTE_32F; break;
    default:
        free(g);
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_gemm_create: unknown precision %d", (int)prec);
    }
    swin_status st = SWIN_OK;
    LT_GO(cublasLtCreate(&g->lt));
    LT_GO(cublasCreate(&g->blas));
    LT_GO(cublasSetMathMode(g->blas, math));
    *out = g;
    return SWIN_OK;
fail:
    swin_gemm_free(g);
    return st;
}

swin_status swin_gemm_set_workspace(swin_gemm *g, void *workspace, size_t ws_bytes) {
    if (!g) return swin_fail(SWIN_ERR_ARGUMENT, "swin_gemm_set_workspace: gemm is NULL");
    if (ws_bytes && !workspace)
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_gemm_set_workspace: workspace is NULL but %zu bytes", ws_bytes);
    g->ws = workspace;
    g->ws_bytes = ws_bytes;
    return SWIN_OK;
}

void swin_gemm_set_ones(swin_gemm *g, const float *ones, size_t n) {
    if (g) g->ones = ones, g->n_ones = ones ? n : 0;
}

void swin_gemm_set_fused_gelu(swin_gemm *g, int fused) {
    if (g) g->fused_gelu = fused != 0;
}

void swin_gemm_free(swin_gemm *g) {
    if (!g) return;
    for (int i = 0; i < g->n_plans; i++) plan_destroy(&g->plans[i]);
    free(g->plans);
    if (g->blas) cublasDestroy(g->blas);
    if (g->lt) cublasLtDestroy(g->lt);
    free(g);
}

void *swin_gemm_cublas(swin_gemm *g) { return g ? (void *)g->blas : NULL; }

// ---- calls

static swin_status check_shape(const char *op, swin_gemm *g, int M, int K, int N, swin_act act) {
    if (!g) return swin_fail(SWIN_ERR_ARGUMENT, "%s: gemm is NULL", op);
    if (M <= 0 || K <= 0 || N <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: M %d, K %d and N %d must be positive", op, M, K, N);
    if (act != SWIN_ACT_NONE && act != SWIN_ACT_GELU)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: unknown activation %d", op, (int)act);
    return SWIN_OK;
}

swin_status swin_gemm_prepare(swin_gemm *g, int M, int K, int N, swin_act act, int has_bias, int has_residual) {
    SWIN_TRY(check_shape("swin_gemm_prepare", g, M, K, N, act));
    const void *aligned = (const void *)(uintptr_t)256;   /* stands for any 256-byte aligned slice */
    gemm_plan key, *p;
    plan_key(&key, M, K, N, act, aligned, aligned, aligned, has_bias ? aligned : NULL,
             has_residual ? aligned : NULL);
    return plan_get(g, &key, has_bias ? aligned : NULL, &p);
}

/* time reps calls of fn(ctx) on st between two events (after one untimed call); -1 when a call or
 * the timing fails (a sticky fault is then reported by the caller's synchronise) */
static float time_calls(int (*fn)(void *), void *ctx, int reps, cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1) {
    if (!fn(ctx)) return -1.0f;
    int ok = cudaEventRecord(e0, st) == cudaSuccess;
    for (int r = 0; ok && r < reps; r++) ok = fn(ctx);
    float ms = 0.0f;
    ok = ok && cudaEventRecord(e1, st) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
         cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
    return ok ? ms : -1.0f;
}

/* the calls plan_tune times besides cuBLASLt's: the GELU pass after it, and the 3xTF32 kernel */
typedef struct {
    swin_gemm *g;
    const gemm_plan *p;
    void *d;
    const void *in, *w, *bias, *res;
    cudaStream_t st;
    int fused_kind;                        /* call_fused's kernel (fused_kind) */
    const float *col_scale;                /* call_own: an FP8 layer's column scales (NULL: 16-bit / TF32) */
} tune_call;
static int call_gelu(void *v) {
    const tune_call *t = v;
    return swin_gelu_cuda(t->d, NULL, (size_t)t->p->M * t->p->N, t->g->dt, t->st) == SWIN_OK;
}
/* plan p's layer on the TMA kernel: a 16-bit / TF32 one, or with col_scale an FP8 one */
static swin_status own_run(const swin_gemm *g, const gemm_plan *p, void *out, const void *in, const void *w,
                           const float *col_scale, const void *bias, const void *residual, cudaStream_t st) {
    if (col_scale)
        return swin_gemm_wgmma_linear_fp8_cuda(out, in, w, col_scale, bias, residual, p->M, p->K, p->N, st);
    return swin_gemm_wgmma_linear_cuda(out, in, w, bias, residual, p->M, p->K, p->N, g->dt, st);
}
static int call_own(void *v) {
    const tune_call *t = v;
    return own_run(t->g, t->p, t->d, t->in, t->w, t->col_scale, t->bias, t->res, t->st) == SWIN_OK;
}
static int call_x3(void *v) {
    const tune_call *t = v;
    return swin_gemm_x3_cuda(t->d, t->in, t->w, t->bias, t->res, t->p->M, t->p->K, t->p->N, (swin_act)t->p->act,
                             t->st) == SWIN_OK;
}

/* Which of our GEMMs with the bias and erf GELU in the epilogue takes a GELU layer without residual
 * when g->fused_gelu: 1 sm90/gemm_wgmma.cu, where 128 x 128 tiles fill the GPU (gemm_mma.cu's
 * large-tile rule; TF32 for fp32 data), 2 gemm_mma.cu (16-bit only), 0 neither (a TF32 layer of
 * small tiles: cuBLASLt + the GELU op) */
static int fused_kind(const swin_gemm *g, int M, int K, int N, const void *out, const void *in, const void *w,
                      const void *bias) {
    const int large = g->wgmma && (long long)((M + 127) / 128) * ((N + 127) / 128) >= g->sms;
    if (large && g->prec != SWIN_FP32 && swin_gemm_wgmma_supports(g->dt, M, K, N, out, in, w, bias)) return 1;
    if (swin_gemm_mma_supports(g->dt, M, K, N, out, in, w, bias)) return 2;
    return 0;
}
static swin_status fused_run(int kind, const swin_gemm *g, void *out, const void *in, const void *w,
                             const void *bias, int M, int K, int N, cudaStream_t st) {
    if (kind == 1) return swin_gemm_wgmma_cuda(out, in, w, bias, M, K, N, SWIN_ACT_GELU, g->dt, st);
    return swin_gemm_mma_cuda(out, in, w, bias, M, K, N, SWIN_ACT_GELU, g->dt, st);
}
static int call_fused(void *v) {
    const tune_call *t = v;
    return fused_run(t->fused_kind, t->g, t->d, t->in, t->w, t->bias, t->p->M, t->p->K, t->p->N, t->st) == SWIN_OK;
}

/* after timing one of our kernels: a fault is an error naming what was timed and the shape */
static swin_status tune_sync(cudaStream_t st, const char *what, const gemm_plan *p) {
    cudaError_t ce = cudaStreamSynchronize(st);
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "%s, M %d K %d N %d: %s", what, p->M, p->K, p->N, cudaGetErrorString(ce));
    return SWIN_OK;
}

/* Time p's candidates on the real inputs into a temporary D; keep the fastest in p->algo. With
 * x3_ok (a SWIN_FP32 layer that sm90/gemm_x3.cu takes) also time that kernel against the best
 * candidate (plus the GELU pass, which the kernel does in its epilogue) and keep the faster in
 * p->x3; with fused (a GELU layer that fused_kind's kernel takes, and g->fused_tune) likewise that
 * kernel, into p->fused; with p->own_ok (own_cs: an FP8 layer's column scales) the TMA kernel,
 * into p->own. Skipped (retried on a later call) while the stream is being captured. */
static swin_status plan_tune(swin_gemm *g, gemm_plan *p, const void *w, const void *in, const void *c,
                             const void *bias, int x3_ok, int fused, const float *own_cs, cudaStream_t st) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
        cudaGetLastError();
        return SWIN_OK;
    }
    p->tuned = 1;
    void *d = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (cudaMalloc(&d, (size_t)p->M * p->N * swin_dtype_size(g->dt)) != cudaSuccess) {
        cudaGetLastError();   /* no room for a scratch output: keep the heuristic's choice */
        return SWIN_OK;
    }
    swin_status st_ = SWIN_OK;
    const float alpha = 1.0f, beta = p->has_res ? 1.0f : 0.0f;
    const void *cc = p->has_res ? c : d;
    float best = -1.0f;
    int best_i = 0;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        st_ = swin_fail(SWIN_ERR_CUDA, "swin_linear_cuda: cudaEventCreate failed while tuning");
        goto done;
    }
    for (int i = 0; i < p->n_cand; i++) {
        const cublasLtMatmulAlgo_t *a = &p->cand[i];
        /* a candidate that refuses these operands is skipped, not an error */
        if (cublasLtMatmul(g->lt, p->desc, &alpha, w, p->la, in, p->lb, &beta, cc, p->lcd, d, p->lcd, a, g->ws,
                           g->ws_bytes, st) != CUBLAS_STATUS_SUCCESS)
            continue;
        int ok = cudaEventRecord(e0, st) == cudaSuccess;
        for (int r = 0; ok && r < GEMM_TUNE_REPS; r++)
            ok = cublasLtMatmul(g->lt, p->desc, &alpha, w, p->la, in, p->lb, &beta, cc, p->lcd, d, p->lcd, a,
                                g->ws, g->ws_bytes, st) == CUBLAS_STATUS_SUCCESS;
        float ms = 0.0f;
        ok = ok && cudaEventRecord(e1, st) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
             cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
        if (!ok) {
            cudaError_t ce = cudaStreamSynchronize(st);   /* a sticky fault is an error; else skip */
            if (ce != cudaSuccess) {
                st_ = swin_fail(SWIN_ERR_CUDA, "swin_linear_cuda: tuning M %d K %d N %d: %s", p->M, p->K, p->N,
                                cudaGetErrorString(ce));
                goto done;
            }
            continue;
        }
        if (best < 0 || ms < best) best = ms, best_i = i;
    }
    p->algo = p->cand[best_i];
    if (x3_ok) {
        tune_call tc = {g, p, d, in, w, bias, p->has_res ? c : NULL, st, 0, NULL};
        const float gelu = p->act == SWIN_ACT_GELU ? time_calls(call_gelu, &tc, GEMM_TUNE_REPS, st, e0, e1) : 0.0f;
        const float x3 = time_calls(call_x3, &tc, GEMM_TUNE_REPS, st, e0, e1);
        if ((st_ = tune_sync(st, "swin_linear_cuda: tuning the 3xTF32 kernel", p)) != SWIN_OK) goto done;
        if (x3 >= 0.0f && gelu >= 0.0f) p->x3 = best < 0.0f || x3 < best + gelu;
    }
    if (fused) {
        tune_call tc = {g, p, d, in, w, bias, NULL, st, fused, NULL};
        const float gelu = time_calls(call_gelu, &tc, GEMM_TUNE_REPS, st, e0, e1);
        const float fz = time_calls(call_fused, &tc, GEMM_TUNE_REPS, st, e0, e1);
        if ((st_ = tune_sync(st, "swin_linear_cuda: tuning the fused GELU kernel", p)) != SWIN_OK) goto done;
        if (fz >= 0.0f && gelu >= 0.0f) p->fused = best < 0.0f || fz <= best + gelu;
    }
    if (p->own_ok) {   /* the TMA kernel writes d, reading the residual from c as cuBLASLt does */
        tune_call tc = {g, p, d, in, w, bias, p->has_res ? c : NULL, st, 0, own_cs};
        const float ms = time_calls(call_own, &tc, GEMM_TUNE_REPS, st, e0, e1);
        if ((st_ = tune_sync(st, "swin_linear_cuda: tuning the TMA kernel", p)) != SWIN_OK) goto done;
        p->own = ms >= 0.0f && (best < 0.0f || ms < best);
    }
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaStreamSynchronize(st);
    cudaFree(d);
    return st_;
}

/* One call of plan p: the bias pointer onto its descriptor (plans are shared by same-shape
 * layers), tuning on first use, the matmul (residual as C when fused), and with
 * SWIN_CUDA_SYNC a synchronise that names the GEMM. *ran_own: the call ran one of our kernels
 * instead, the 3xTF32 one (x3_ok), fused_kind's (fused, a GELU layer), GELU included, or the
 * TMA kernel (p->own_ok: a 16-bit or TF32 layer without GELU; own_cs: an FP8 one's column scales,
 * which then are w's scales). */
static swin_status plan_run(const char *op, swin_gemm *g, gemm_plan *p, void *out, const void *in, const void *w,
                            const void *bias, const void *residual, int x3_ok, int fused, const float *own_cs,
                            cudaStream_t st, int *ran_own) {
    if (bias)
        SWIN_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                       sizeof bias));
    const float alpha = 1.0f, beta = p->has_res ? 1.0f : 0.0f;
    const void *c = p->has_res ? residual : out;
    if (!p->tuned && g->tune) SWIN_TRY(plan_tune(g, p, w, in, c, bias, x3_ok, fused, own_cs, st));
    *ran_own = 1;
    if (fused && p->fused) return fused_run(fused, g, out, in, w, bias, p->M, p->K, p->N, st);
    if (p->own_ok && p->own) return own_run(g, p, out, in, w, own_cs, bias, residual, st);
    if (x3_ok && p->x3) return swin_gemm_x3_cuda(out, in, w, bias, residual, p->M, p->K, p->N, (swin_act)p->act, st);
    *ran_own = 0;
    SWIN_CUBLAS_TRY(cublasLtMatmul(g->lt, p->desc, &alpha, w, p->la, in, p->lb, &beta, c, p->lcd, out,
                                   p->lcd, &p->algo, g->ws, g->ws_bytes, st));
    if (swin_cuda_debug_sync) {
        cudaError_t e = cudaStreamSynchronize(st);
        if (e != cudaSuccess)
            return swin_fail(SWIN_ERR_CUDA, "%s: cublasLtMatmul M %d K %d N %d failed: %s", op, p->M, p->K, p->N,
                             cudaGetErrorString(e));
    }
    return SWIN_OK;
}

swin_status swin_linear_cuda(void *out, const void *in, const void *w, const void *bias,
                             const void *residual, int M, int K, int N, swin_act act,
                             swin_gemm *g, cudaStream_t st) {
    static const char op[] = "swin_linear_cuda";
    SWIN_TRY(check_shape(op, g, M, K, N, act));
    const size_t es = swin_dtype_size(g->dt);
    const void *ptrs[5] = {out, in, w, bias, residual};
    static const char *const names[5] = {"out", "in", "w", "bias", "residual"};
    for (int i = 0; i < 5; i++) {
        if (!ptrs[i] && i < 3) return swin_fail(SWIN_ERR_ARGUMENT, "%s: %s is NULL", op, names[i]);
        if (ptrs[i] && (uintptr_t)ptrs[i] % es)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: %s (%p) is not aligned to %zu bytes", op, names[i],
                             ptrs[i], es);
    }
    if (in == out) return swin_fail(SWIN_ERR_ARGUMENT, "%s: in and out are the same buffer", op);
    if (act == SWIN_ACT_GELU && residual == out)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: GELU with a residual that aliases out (M %d, N %d)", op, M, N);

    /* our kernel with the GELU in its epilogue, where it takes the layer: always, or with
     * fused_tune where it was faster than cuBLASLt + the GELU pass (plan_run) */
    const int fused = act == SWIN_ACT_GELU && !residual && g->fused_gelu ? fused_kind(g, M, K, N, out, in, w, bias) : 0;
    if (fused && !g->fused_tune) return fused_run(fused, g, out, in, w, bias, M, K, N, st);
    /* a layer without GELU on the TMA kernel where it takes it: always (SWIN_GEMM_TMA_LINEAR=1),
     * or (2) where it was faster than cuBLASLt's best on the shape's first un-captured call; by
     * default (0) never. Why not 2: H200 (2026-11-29, tools/bench_ab.py, two rounds, best medians,
     * Swin-T fp16, =0 / 2): batch 64 2.285 / 2.263 ms, batch 256 8.443 / 8.508, although at 256
     * --breakdown (un-captured) has qkv 0.881 -> 0.827 ms (stage 2 0.229 -> 0.203, stage 3 0.502 ->
     * 0.472) and proj 0.582 -> 0.561 for all blocks: timed alone the TMA kernel wins those shapes,
     * inside the captured graph the forward is slower. FP8 layers are timed by default
     * (SWIN_GEMM_TMA_FP8), where the graph gains too. */
    const int own_ok = act == SWIN_ACT_NONE && g->tma_linear &&
                       swin_gemm_wgmma_linear_supports(g->dt, M, K, N, out, in, w, bias, residual);
    if (own_ok && g->tma_linear == 1) return swin_gemm_wgmma_linear_cuda(out, in, w, bias, residual, M, K, N, g->dt, st);
    gemm_plan key, *p;
    plan_key(&key, M, K, N, act, out, in, w, bias, residual);
    key.own_ok = own_ok && g->tune;
    const swin_status got = plan_get(g, &key, bias, &p);
    if (got != SWIN_OK && fused) return fused_run(fused, g, out, in, w, bias, M, K, N, st);   /* nothing to time it against */
    SWIN_TRY(got);
    const int x3_ok = g->x3 && swin_gemm_x3_supports(M, K, N, out, in, w, bias, residual, act);
    int ran_own = 0;
    SWIN_TRY(plan_run(op, g, p, out, in, w, bias, residual, x3_ok, fused, NULL, st, &ran_own));
    if (act == SWIN_ACT_GELU && !ran_own)
        SWIN_TRY(swin_gelu_cuda(out, residual, (size_t)M * N, g->dt, st));
    return SWIN_OK;
}

/* out [M, N] = (in_q [M, K] @ w_q [N, K]^T) * w_scale[n] * in_scale[m] + bias [N] (+ residual):
 * E4M3 operands, fp16 bias/residual/out, fp32 accumulation (gemm.h). in_scale NULL: rows
 * unscaled, which cuBLASLt reads from the handle's ones (swin_gemm_set_ones), and then our TMA
 * kernel may take the layer instead (fp8_own_ok). */
swin_status swin_linear_fp8_cuda(void *out, const uint8_t *in_q, const float *in_scale, const uint8_t *w_q,
                                 const float *w_scale, const void *bias, const void *residual, int M, int K, int N,
                                 swin_gemm *g, cudaStream_t st) {
    static const char op[] = "swin_linear_fp8_cuda";
    SWIN_TRY(check_shape(op, g, M, K, N, SWIN_ACT_NONE));
    if (g->dt != SWIN_DT_F16)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: the GEMM handle is %s, FP8 GEMMs write fp16", op,
                         swin_precision_str(g->prec));
    if (K % 16 || N % 16)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: K %d and N %d must be multiples of 16 for FP8 tensor cores", op, K, N);
    const void *ptrs[7] = {out, in_q, w_q, w_scale, in_scale, bias, residual};   /* the last three may be NULL */
    static const char *const names[7] = {"out", "in_q", "w_q", "w_scale", "in_scale", "bias", "residual"};
    for (int i = 0; i < 7; i++) {
        if (!ptrs[i] && i < 4) return swin_fail(SWIN_ERR_ARGUMENT, "%s: %s is NULL", op, names[i]);
        if (ptrs[i] && (uintptr_t)ptrs[i] % 16)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: %s (%p) is not aligned to 16 bytes", op, names[i], ptrs[i]);
    }
    const float *rows = in_scale ? in_scale : g->ones;
    if (!in_scale && (!g->ones || g->n_ones < (size_t)M))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: in_scale is NULL (rows unscaled) but the handle has %zu ones for "
                         "%d rows (swin_gemm_set_ones)", op, g->n_ones, M);
    /* our kernel: where it takes the call with rows unscaled, always (fp8_own 1) or where it was
     * faster than cuBLASLt's best (2) */
    const int own_ok = !in_scale && g->fp8_own &&
                       swin_gemm_wgmma_linear_fp8_supports(M, K, N, out, in_q, w_q, w_scale, bias, residual);
    if (own_ok && g->fp8_own == 1)
        return swin_gemm_wgmma_linear_fp8_cuda(out, in_q, w_q, w_scale, bias, residual, M, K, N, st);
    gemm_plan key, *p;
    plan_key(&key, M, K, N, SWIN_ACT_NONE, out, in_q, w_q, bias, residual);
    key.fp8 = 1;
    key.own_ok = own_ok && g->tune;
    SWIN_TRY(plan_get(g, &key, bias, &p));
    SWIN_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                                   sizeof w_scale));
    SWIN_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &rows,
                                                   sizeof rows));
    int ran_own = 0;
    return plan_run(op, g, p, out, in_q, w_q, bias, residual, 0, 0, w_scale, st, &ran_own);
}
