/* test_gpu_multi.c - several CUDA sessions behind one pipeline (swin_pipeline_run_multi,
 * src/image/pipeline_multi.c), what `swin classify --device cuda:all` runs:
 *   - two sessions per GPU (so that one GPU is enough to run the lane threads; with two GPUs
 *     both are used; each session first runs alone once) give, for every file, the very logits
 *     of one session on cuda:0, in input order, with the bad files (truncated JPEGs, a missing
 *     file) reported in their place: with GPU preprocessing, CPU preprocessing, the exact GPU
 *     decoder and (when built) nvJPEG, each lane decoding on its GPU;
 *   - every session ran batches, and the per-session counts add up.
 * SWIN_GEMM_TUNE=0: the autotuner times candidates, so two engines could keep different GEMM
 * algorithms and differ in the last bits; the heuristic's choice is the same on identical GPUs.
 * Run: build/tests/test_gpu_multi SOURCE_DIR (exits 77 without a GPU).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "pipeline_collect.h"
#include "testutil.h"

#define SESSIONS 4

/* one mode: the single session, then the sessions together; the checks */
static void compare(swin_session *one, swin_session **many, int n_many, const swin_preprocess_params *pp, char **paths,
                    int n, int first_bad, swin_preprocess_device where, swin_decoder dec, const char *mode) {
    static pc_collect ref, got;
    int nc = swin_model_config(swin_session_get_model(one))->num_classes;
    pc_reset(&ref, nc);
    pc_reset(&got, nc);
    swin_pipeline_options po = swin_pipeline_options_default();
    po.batch = 4;
    po.where = where;
    po.decoder = dec;
    swin_pipeline_stats st, per[SESSIONS];
    if (!CHECK(swin_pipeline_run(one, pp, (const char *const *)paths, n, &po, pc_on_result, &ref, &st) == SWIN_OK,
               "%s: one session: %s", mode, swin_last_error()))
        return;
    if (!CHECK(swin_pipeline_run_multi(many, n_many, pp, (const char *const *)paths, n, &po, pc_on_result, &got, &st,
                                       per) == SWIN_OK, "%s: %d sessions: %s", mode, n_many, swin_last_error()))
        return;
    int differ = 0, misplaced = 0, used = 0, images = 0, batches = 0;
    for (int i = 0; i < n; i++) {
        int want = i < first_bad ? 1 : 2;
        if (dec == SWIN_DECODER_NVJPEG && strstr(paths[i], "cut_eoi.jpg")) continue;   /* pc_add_bad: nvJPEG decodes it */
        if (ref.got[i] != want || got.got[i] != want) {
            misplaced++;
            printf("  %s: %s: one session %d, %d sessions %d (%s)\n", mode, paths[i], ref.got[i], n_many, got.got[i],
                   got.err[i]);
        } else if (want == 1 && memcmp(ref.logits + (size_t)i * ref.nc, got.logits + (size_t)i * got.nc,
                                       (size_t)ref.nc * sizeof(float))) {
            differ++;
        } else if (want == 2 && strcmp(ref.err[i], got.err[i])) {
            misplaced++;
            printf("  %s: message '%s' vs '%s'\n", mode, ref.err[i], got.err[i]);
        }
    }
    for (int k = 0; k < n_many; k++) {
        used += per[k].batches > 0;
        images += per[k].images;
        batches += per[k].batches;
    }
    CHECK(got.calls == n && got.in_order, "%s: %d sessions: every file delivered once, in order (%d calls)", mode,
          n_many, got.calls);
    CHECK(misplaced == 0, "%s: %d files not classified / not reported as with one session", mode, misplaced);
    CHECK(differ == 0, "%s: %d of %d files with logits other than one session's", mode, differ, first_bad);
    CHECK(images == n && batches == (n + po.batch - 1) / po.batch && st.images == n,
          "%s: per-session counts add up (%d images, %d batches)", mode, images, batches);
    CHECK(used >= 2, "%s: %d of %d sessions ran batches", mode, used, n_many);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_gpu_multi: skipped, no usable GPU\n");
        return TU_SKIP;
    }
    setenv("SWIN_GEMM_TUNE", "0", 1);
    char dir[1024], tmp[512];
    swin_model *m = pc_load_digits(src);
    if (!m) return 1;
    swin_preprocess_params pp = swin_preprocess_params_from_config(swin_model_config(m));
    if (tu_tmpdir(tmp, sizeof tmp, "swin_gpu_multi")) return 1;

    /* sessions: one on cuda:0, the reference; SESSIONS more, two per GPU over the first two GPUs */
    swin_session_options so = swin_session_options_default();
    so.device = SWIN_DEVICE_CUDA;
    so.precision = SWIN_FP16;
    so.max_batch = 4;
    swin_session *one = NULL, *many[SESSIONS] = {NULL};
    if (swin_session_create(m, &so, &one) != SWIN_OK) { printf("session: %s\n", swin_last_error()); return 1; }
    for (int k = 0; k < SESSIONS; k++) {
        so.device_index = ndev > 1 ? k % 2 : 0;
        if (!CHECK(swin_session_create(m, &so, &many[k]) == SWIN_OK, "session %d on cuda:%d: %s", k, so.device_index,
                   swin_last_error())) {
            printf("test_gpu_multi: cannot create the sessions\n");
            return 1;
        }
    }
    printf("%d sessions on %s\n", SESSIONS, ndev > 1 ? "cuda:0 and cuda:1" : "cuda:0 (one GPU)");

    /* the files: digits, JPEG fixtures, then two truncated JPEGs and a missing file */
    char *paths[PC_MAX_FILES];
    int n = 0;
    snprintf(dir, sizeof dir, "%s/tests/data/digits", src);
    n = pc_list_dir(dir, paths, n, 64);
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    int first_jpeg = n;
    n = pc_list_dir(dir, paths, n, 40);
    int first_bad = n;
    if (first_bad > first_jpeg) n = pc_add_bad(paths, n, tmp, paths[first_jpeg]);   /* half of the first JPEG */
    CHECK(first_bad >= 74 && n == first_bad + 3, "%d images found, 3 bad files", first_bad);

    /* each session alone first: graphs captured and scratch grown one session at a time, so that
     * two sessions of one GPU (which `--device` never makes) do not capture side by side */
    for (int k = 0; k < SESSIONS; k++) {
        static pc_collect warm;
        pc_reset(&warm, swin_model_config(m)->num_classes);
        swin_pipeline_options po = swin_pipeline_options_default();
        po.batch = 4;
        swin_pipeline_stats st;
        CHECK(swin_pipeline_run(many[k], &pp, (const char *const *)paths, n, &po, pc_on_result, &warm, &st) == SWIN_OK &&
                  warm.calls == n, "session %d alone: %s", k, swin_last_error());
    }
    compare(one, many, SESSIONS, &pp, paths, n, first_bad, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_CPU, "GPU preprocessing");
    compare(one, many, SESSIONS, &pp, paths, n, first_bad, SWIN_PRE_DEVICE_CPU, SWIN_DECODER_CPU, "CPU preprocessing");
    compare(one, many, SESSIONS, &pp, paths, n, first_bad, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_GPU, "GPU decoding");
#ifdef SWIN_HAVE_NVJPEG
    compare(one, many, SESSIONS, &pp, paths, n, first_bad, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_NVJPEG, "nvJPEG");
#else
    printf("nvJPEG not built: its comparison not run\n");
#endif

    for (int i = 0; i < n; i++) free(paths[i]);
    for (int k = 0; k < SESSIONS; k++) swin_session_free(many[k]);
    swin_session_free(one);
    swin_model_free(m);
    tu_rmtree(tmp);
    return tu_finish("test_gpu_multi");
}
