/* test_pipeline.c - the decode pipeline (src/image/pipeline.c) on the CPU with the digits model:
 * results come back once per input and in input order, whatever the threads, batch and depth;
 * bad files (missing, empty, truncated, not an image, a directory) are reported in their place
 * with their path and the others are classified; logits are bit-identical to preprocessing and
 * running each image alone; bad options are refused; swin_image_decode_into (what the pipeline
 * decodes into its page-locked slots with) gives the same pixels in the caller's memory; the JPEG
 * fixtures give the same logits decoded in part (what preprocessing reads, the default) as whole.
 * Several sessions (swin_pipeline_run_multi, here CPU sessions standing in for GPUs): the same
 * results in the same order as one session, every session used, per-session counts that add up,
 * and sessions that do not fit together refused.
 * Run: build/tests/test_pipeline SOURCE_DIR
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pipeline_collect.h"
#include "testutil.h"

#define MAX_FILES 64
#define MAX_SESSIONS 4

static int copy_file(const char *from, const char *to, long limit) {
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    int c, rc = !f || !g;
    for (long i = 0; !rc && (limit < 0 || i < limit) && (c = fgetc(f)) != EOF; i++) fputc(c, g);
    if (f) fclose(f);
    if (g) fclose(g);
    return rc;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) { fputs(text, f); fclose(f); }
}

/* swin_image_alloc_fn over a fixed buffer: room for `left` bytes, then NULL */
typedef struct { uint8_t *buf; size_t used, cap; } bump;
static void *bump_alloc(void *ctx, size_t bytes) {
    bump *b = ctx;
    if (bytes > b->cap - b->used) return NULL;
    b->used += bytes;
    return b->buf + b->used - bytes;
}

/* decode_into: the same pixels in the caller's memory (JPEG decoded there, PNG copied), malloc
 * when the allocator has no room, and nothing kept on failure */
static void check_decode_into(const char *src) {
    static const char *const files[] = {"tests/data/jpeg/baseline_420_160x120.jpg", "tests/data/jpeg/cmyk_60x40.jpg",
                                        "tests/data/jpeg/grey_70x50.jpg", "tests/data/preprocess/grad_97x61.png"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", src, files[f]);
        uint8_t *data = NULL;
        size_t len = 0;
        swin_image ref, got;
        if (!CHECK(swin_image_read_file(path, &data, &len) == SWIN_OK && swin_image_load(path, &ref) == SWIN_OK,
                   "%s: %s", path, swin_last_error()))
            continue;
        size_t bytes = (size_t)ref.width * ref.height * 3;
        bump b = {malloc(bytes + 64), 0, bytes + 64};
        int custom = -1;
        swin_status st = swin_image_decode_into(data, len, path, bump_alloc, &b, &got, &custom);
        CHECK(st == SWIN_OK && custom == 1 && got.rgb == b.buf && !memcmp(got.rgb, ref.rgb, bytes),
              "%s: decoded into the caller's memory, same pixels", files[f]);
        b.used = b.cap - 1; /* full */
        st = swin_image_decode_into(data, len, path, bump_alloc, &b, &got, &custom);
        CHECK(st == SWIN_OK && custom == 0 && !memcmp(got.rgb, ref.rgb, bytes), "%s: malloc when full", files[f]);
        if (st == SWIN_OK && custom == 0) swin_image_free(&got);
        b.used = 0;
        st = swin_image_decode_into(data, len / 2, path, bump_alloc, &b, &got, &custom);
        CHECK(st == SWIN_ERR_IMAGE && custom == 0 && got.rgb == NULL, "%s: truncated refused, nothing kept", files[f]);
        free(b.buf);
        free(data);
        swin_image_free(&ref);
    }
}

/* The JPEG fixtures through the pipeline: libjpeg decodes only what preprocessing reads (the
 * default), which must give what decoding whole images gives, bit for bit: against each file
 * decoded whole (swin_image_load), preprocessed and run alone, and against the pipeline with
 * SWIN_DECODE_PART=0. */
static void check_jpeg_parts(swin_session *s, const swin_preprocess_params *pp, const char *src, int nc) {
    char dir[512], *paths[PC_MAX_FILES];
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    const int n = pc_list_dir(dir, paths, 0, PC_MAX_FILES);
    float *x = malloc(swin_preprocess_floats(pp) * sizeof *x), *want = calloc((size_t)n * nc, sizeof *want);
    int *ok = calloc((size_t)n, sizeof *ok), good = 0;
    for (int i = 0; i < n && x && want && ok; i++) {
        swin_image img;
        if (swin_image_load(paths[i], &img) != SWIN_OK) continue;   /* the bad ones are checked elsewhere */
        ok[i] = swin_preprocess_image(pp, &img, x) == SWIN_OK && swin_forward(s, x, 1, want + (size_t)i * nc) == SWIN_OK;
        good += ok[i];
        swin_image_free(&img);
    }
    for (int v = 0; v < 2; v++) {
        static pc_collect col;
        pc_reset(&col, nc);
        swin_pipeline_options po = swin_pipeline_options_default();
        po.threads = 2, po.batch = 4;
        if (v) setenv("SWIN_DECODE_PART", "0", 1);
        swin_pipeline_stats st;
        swin_status rs = swin_pipeline_run(s, pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st);
        unsetenv("SWIN_DECODE_PART");
        int diff = 0;
        for (int i = 0; i < n; i++)
            if (ok[i]) diff += col.got[i] != 1 || memcmp(col.logits + (size_t)i * nc, want + (size_t)i * nc,
                                                         (size_t)nc * sizeof(float));
        printf("JPEG fixtures, %s: %d of %d good files differ from the whole decode run alone\n",
               v ? "whole images (SWIN_DECODE_PART=0)" : "parts (default)", diff, good);
        CHECK(rs == SWIN_OK && col.calls == n && diff == 0 && good >= 15, "JPEG fixtures (%s): %d of %d differ: %s",
              v ? "whole" : "parts", diff, good, rs == SWIN_OK ? "" : swin_last_error());
    }
    for (int i = 0; i < n; i++) free(paths[i]);
    free(x);
    free(want);
    free(ok);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    char dir[512], path[1024], model_dir[1024];
    snprintf(model_dir, sizeof model_dir, "%s/weights/digits", src);
    swin_model *m = NULL;
    swin_load_options lo = swin_load_options_default();
    if (swin_model_load(model_dir, &lo, &m) != SWIN_OK) {
        fprintf(stderr, "cannot load %s: %s\n", model_dir, swin_last_error());
        return 1;
    }
    const swin_config *cfg = swin_model_config(m);
    swin_preprocess_params pp = swin_preprocess_params_from_config(cfg);
    if (tu_tmpdir(dir, sizeof dir, "swin_pipeline")) return 1;
    check_decode_into(src);

    /* 24 inputs: digits, with bad ones in between; expect[i] 1 good, 2 bad */
    static const char *const digits[] = {"0021_1.png", "0024_4.png", "0028_8.png", "0034_6.png", "0035_5.png", "0037_9.png"};
    char *paths[MAX_FILES];
    int expect[MAX_FILES], n = 0;
    for (int i = 0; i < 24; i++) {
        paths[n] = malloc(1024);
        expect[n] = 1;
        if (i == 3) { snprintf(paths[n], 1024, "%s/missing.png", dir); expect[n] = 2; }
        else if (i == 7) { snprintf(paths[n], 1024, "%s/empty.png", dir); write_text(paths[n], ""); expect[n] = 2; }
        else if (i == 8) { snprintf(paths[n], 1024, "%s/text.png", dir); write_text(paths[n], "hello"); expect[n] = 2; }
        else if (i == 15) {
            snprintf(path, sizeof path, "%s/tests/data/digits/%s", src, digits[0]);
            snprintf(paths[n], 1024, "%s/cut.png", dir);
            copy_file(path, paths[n], 60);
            expect[n] = 2;
        } else if (i == 16) { snprintf(paths[n], 1024, "%s", dir); expect[n] = 2; }
        else if (i == 23) { snprintf(paths[n], 1024, "%s/missing-last.png", dir); expect[n] = 2; }
        else {
            snprintf(path, sizeof path, "%s/tests/data/digits/%s", src, digits[i % 6]);
            snprintf(paths[n], 1024, "%s/d%02d.png", dir, i);
            copy_file(path, paths[n], -1);
        }
        n++;
    }
    int nc = cfg->num_classes;

    /* the truth: each good image preprocessed and run alone */
    swin_session_options so = swin_session_options_default();
    so.max_batch = 8;
    swin_session *s = NULL;
    CHECK(swin_session_create(m, &so, &s) == SWIN_OK, "session: %s", swin_last_error());
    float *want = calloc((size_t)n * nc, sizeof *want), *x = malloc(swin_preprocess_floats(&pp) * sizeof *x);
    for (int i = 0; i < n && s; i++)
        if (expect[i] == 1) {
            CHECK(swin_preprocess_file(&pp, paths[i], x) == SWIN_OK, "%s: %s", paths[i], swin_last_error());
            CHECK(swin_forward(s, x, 1, want + (size_t)i * nc) == SWIN_OK, "forward %d", i);
        }

    if (s) check_jpeg_parts(s, &pp, src, nc);

    /* threads x batch x depth x sessions (1: swin_pipeline_run; more: swin_pipeline_run_multi) */
    swin_session *multi[MAX_SESSIONS] = {s};
    for (int k = 1; k < MAX_SESSIONS && s; k++)
        CHECK(swin_session_create(m, &so, &multi[k]) == SWIN_OK, "session %d: %s", k, swin_last_error());
    static const int cases[][4] = {{1, 1, 2, 1}, {1, 8, 2, 1}, {2, 3, 3, 1}, {4, 8, 3, 1}, {8, 5, 2, 1},
                                   {3, 7, 16, 1}, {0, 8, 3, 1}, {2, 3, 3, 2}, {4, 1, 2, 3}, {1, 5, 2, 3},
                                   {3, 8, 3, 4}, {8, 2, 16, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0] && s; c++) {
        static pc_collect col;
        pc_reset(&col, nc);
        swin_pipeline_options po = swin_pipeline_options_default();
        po.threads = cases[c][0];
        po.batch = cases[c][1];
        po.depth = cases[c][2];
        int ns = cases[c][3];
        swin_pipeline_stats st, per[MAX_SESSIONS];
        swin_status rs = ns == 1 ? swin_pipeline_run(s, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st)
                                 : swin_pipeline_run_multi(multi, ns, &pp, (const char *const *)paths, n, &po,
                                                           pc_on_result, &col, &st, per);
        CHECK(rs == SWIN_OK, "threads %d batch %d depth %d sessions %d: %s", po.threads, po.batch, po.depth, ns,
              swin_last_error());
        if (ns > 1) {
            int images = 0, failed = 0, batches = 0, idle = 0;
            for (int k = 0; k < ns; k++) {
                images += per[k].images;
                failed += per[k].failed;
                batches += per[k].batches;
                idle += per[k].batches == 0;
            }
            CHECK(images == st.images && failed == st.failed && batches == st.batches,
                  "sessions %d: per-session images %d failed %d batches %d add up to %d %d %d", ns, images, failed,
                  batches, st.images, st.failed, st.batches);
            /* with plenty of batches more than one session took some (timing decides how many) */
            if (st.batches >= 4 * ns)
                CHECK(ns - idle >= 2, "sessions %d batch %d: only %d session ran batches", ns, po.batch, ns - idle);
        }
        CHECK(col.calls == n && col.in_order, "threads %d batch %d: %d calls for %d inputs, in order %d", po.threads,
              po.batch, col.calls, n, col.in_order);
        int bad_failed = 0, mism = 0, nfail = 0;
        for (int i = 0; i < n; i++) {
            if (expect[i] == 2) {
                nfail++;
                if (col.got[i] != 2 || !strstr(col.err[i], paths[i])) {
                    bad_failed++;
                    printf("  input %d (%s): %s\n", i, paths[i], col.got[i] == 2 ? col.err[i] : "no error");
                }
            } else if (col.got[i] != 1 || memcmp(col.logits + (size_t)i * nc, want + (size_t)i * nc,
                                                   (size_t)nc * sizeof(float))) {
                mism++;
            }
        }
        CHECK(bad_failed == 0, "threads %d batch %d: %d bad files not reported with their path", po.threads,
              po.batch, bad_failed);
        CHECK(mism == 0, "threads %d batch %d depth %d: %d good images differ from running alone", po.threads,
              po.batch, po.depth, mism);
        CHECK(st.images == n && st.failed == nfail && st.batches == (n + po.batch - 1) / po.batch,
              "stats: images %d failed %d (want %d) batches %d", st.images, st.failed, nfail, st.batches);
        /* a CPU session runs the whole forward in the call that starts it: enqueue holds it (summed
         * over the sessions' threads, each within the wall time) */
        CHECK(st.enqueue_ms > 0 && st.forward_wait_ms >= 0 && st.enqueue_ms + st.forward_wait_ms <= ns * st.wall_ms,
              "stats: enqueue %.3f ms, forward-wait %.3f ms, wall %.3f ms, %d sessions", st.enqueue_ms,
              st.forward_wait_ms, st.wall_ms, ns);
    }
    /* the messages themselves */
    {
        static pc_collect col;
        pc_reset(&col, nc);
        swin_pipeline_options po = swin_pipeline_options_default();
        swin_pipeline_stats st;
        swin_pipeline_run(s, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st);
        CHECK(strstr(col.err[3], "cannot open") != NULL, "missing: '%s'", col.err[3]);
        CHECK(strstr(col.err[7], "empty file") != NULL, "empty: '%s'", col.err[7]);
        CHECK(strstr(col.err[8], "not an image") != NULL, "text: '%s'", col.err[8]);
        CHECK(strstr(col.err[15], "truncated") || strstr(col.err[15], "corrupt"), "cut: '%s'", col.err[15]);
        CHECK(strstr(col.err[16], "is a directory") != NULL, "dir: '%s'", col.err[16]);
    }
    /* bad options: refused, nothing delivered */
    {
        static pc_collect col;
        pc_reset(&col, nc);
        swin_pipeline_options po = swin_pipeline_options_default();
        swin_pipeline_stats st;
        po.batch = 9; /* > max batch 8 */
        CHECK(swin_pipeline_run(s, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st) == SWIN_ERR_ARGUMENT,
              "batch over the session's max refused");
        po = swin_pipeline_options_default();
        po.depth = 1;
        CHECK(swin_pipeline_run(s, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st) == SWIN_ERR_ARGUMENT,
              "depth 1 refused");
        po = swin_pipeline_options_default();
        po.where = SWIN_PRE_DEVICE_GPU;
        CHECK(swin_pipeline_run(s, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st) == SWIN_ERR_ARGUMENT,
              "GPU preprocessing on a CPU session refused: %s", swin_last_error());
        swin_preprocess_params bad = pp;
        bad.size = pp.size + 1;
        po = swin_pipeline_options_default();
        CHECK(swin_pipeline_run(s, &bad, (const char *const *)paths, n, &po, pc_on_result, &col, &st) == SWIN_ERR_ARGUMENT,
              "a preprocessing size other than the model's refused");
        CHECK(col.calls == 0, "nothing delivered by refused runs (%d calls)", col.calls);
        CHECK(swin_pipeline_run(s, &pp, NULL, 0, &po, pc_on_result, &col, &st) == SWIN_OK && col.calls == 0,
              "an empty list runs and delivers nothing");
    }
    /* sessions that cannot run together: refused, nothing delivered */
    if (s && multi[1]) {
        static pc_collect col;
        pc_reset(&col, nc);
        swin_pipeline_options po = swin_pipeline_options_default();
        swin_pipeline_stats st;
        swin_session *same[2] = {s, s}, *with_null[2] = {s, NULL}, *small[2] = {s, NULL}, *other[2] = {s, NULL};
        CHECK(swin_pipeline_run_multi(same, 2, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st, NULL) ==
                  SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "also session"), "one session twice refused: %s",
              swin_last_error());
        CHECK(swin_pipeline_run_multi(with_null, 2, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st,
                                      NULL) == SWIN_ERR_ARGUMENT, "a NULL session refused");
        CHECK(swin_pipeline_run_multi(multi, 0, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st, NULL) ==
                  SWIN_ERR_ARGUMENT, "no sessions refused");
        swin_session_options o4 = so;
        o4.max_batch = 4;
        CHECK(swin_session_create(m, &o4, &small[1]) == SWIN_OK, "small session: %s", swin_last_error());
        CHECK(swin_pipeline_run_multi(small, 2, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st, NULL) ==
                  SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "max batch"), "batch 8 over one session's max 4 refused: %s",
              swin_last_error());
        swin_model *m2 = NULL;
        if (swin_model_load(model_dir, &lo, &m2) == SWIN_OK && swin_session_create(m2, &so, &other[1]) == SWIN_OK)
            CHECK(swin_pipeline_run_multi(other, 2, &pp, (const char *const *)paths, n, &po, pc_on_result, &col, &st,
                                          NULL) == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "another model"),
                  "sessions of two models refused: %s", swin_last_error());
        CHECK(col.calls == 0, "nothing delivered by refused runs (%d calls)", col.calls);
        swin_session_free(other[1]);
        swin_model_free(m2);
        swin_session_free(small[1]);
    }
    free(want);
    free(x);
    for (int i = 0; i < n; i++) free(paths[i]);
    for (int k = 1; k < MAX_SESSIONS; k++) swin_session_free(multi[k]);
    swin_session_free(s);
    swin_model_free(m);
    tu_rmtree(dir);
    return tu_finish("test_pipeline");
}
