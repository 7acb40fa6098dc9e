/* pipeline_nvjpeg.c - GPU JPEG decoding in the pipeline (pipeline.h: SWIN_DECODER_NVJPEG, and
 * SWIN_DECODER_GPU, the exact decoder of jpeg_gpu.h): decoding one batch's JPEG bytes on the GPU,
 * and, with one session, the GPU decoder threads that decode consecutive batches at the same time.
 *
 * Decoder threads: each has its own decoder (handles, states, buffers, stream) and claims the
 * next batch in input order (next_gpu), waits until the CPU threads have read its files, decodes
 * it into the slot's device buffer (pipe_slot.px) and sets gpu_decoded; the calling thread waits
 * for that flag before the batch's forward. A slot is handed to a later batch only after its
 * batch was reported, which is after its forward ended, so the pixels a forward reads are never
 * overwritten under it, and memory stays depth batches. Batches are claimed in order and a
 * batch waits only for earlier ones, so the threads never wait on each other in a circle.
 * Test: build/tests/test_gpu_pipeline (one decoder against three, bit for bit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pipeline_impl.h"

#define MAX_DECODERS 16
/* nvJPEG: one decoder. On an H100 machine (10,290 photos, Swin-T fp16, batch 256) the JPEG
 * engines' time summed over the decoder threads (--timing: nvjpeg-engines) was 2,446, 5,425,
 * 8,519 and 12,710 ms with 1, 2, 3 and 4 decoders (SWIN_NVJPEG_STATES): the engines are shared,
 * a second decoder's batches take twice as long, and one decoder already spends 2.45 s of the
 * 2.93 s wall (3,507 img/s) in them */
#define DEFAULT_DECODERS 1
/* Also tried on the H200 (2026-11-27, 10,240 photo copies, Swin-T fp16 batch 256, --decoder nvjpeg
 * --timing, three runs each, round robin): the nvJPEG stream at the highest priority
 * (cudaStreamCreateWithPriority), so that its kernels pass the forward's, and the one decoder on
 * a thread of its own, alone and together. gpu-decode summed 2,404 2,344 2,108 ms (as is), 2,305
 * 2,130 2,183 (own thread), 2,190 2,154 2,305 (priority), 2,138 2,199 2,415 (both); the JPEG
 * engines 1,931 to 2,213 ms in every setting: within the runs' spread, so neither was kept. The
 * same priority for the exact GPU decoder (--decoder gpu): gpu-decode 498 503 533 against 505
 * 520 535 ms.
 * Tried again on an H200 machine (2026-11-27, same files and command, three runs each, round
 * robin, wall from swin's summary line of the last run): the one decoder on a thread of its own
 * 3.20 s against 2.95 s as is (3,201 against 3,473 img/s); two decoders with a lock so that only
 * one at a time is inside nvjpegDecodeBatched (the other parsing its next batch) 3.05 s, two
 * without it 2.87 s, three with it 3.36 s; nvjpeg_ceiling on that machine 1.83 s (5,600 img/s).
 * The engines' own time grew wherever decoding ran beside the calling thread's work: 1,982 to
 * 2,297 ms as is, 2,287 to 2,602 on its own thread, 2,585 to 2,806 summed over the locked
 * decoders (each waiting 2,342 to 5,247 ms for the lock). So the calls into nvJPEG slow down
 * when another thread drives the GPU at the same time, and none of these was kept. */
/* SWIN_DECODER_GPU, measured on an H100 machine (16 cores; 10,240 photos, Swin-T fp16, batch
 * 256): all JPEGs to the GPU with 1, 2, 4 decoders: 7,670, 8,834, 7,834 img/s; 70% and 50% of
 * them with 2 decoders: 8,049 and 6,764 img/s (libjpeg alone: 5,034) */
#define DEFAULT_EXACT_DECODERS 2
#define DEFAULT_EXACT_SHARE 100

swin_status swin_pipe_gdec_create(const pipe_t *q, int dev, pipe_gdec *out) {
    memset(out, 0, sizeof *out);
    return q->decoder == SWIN_DECODER_GPU ? swin_jpeg_gpu_create(dev, &out->jg) : swin_nvjpeg_create(dev, &out->nv);
}

void swin_pipe_gdec_free(pipe_gdec *d) {
    swin_nvjpeg_free(d->nv);
    swin_jpeg_gpu_free(d->jg);
    memset(d, 0, sizeof *d);
}

void swin_pipe_gpu_decode(pipe_t *q, pipe_gdec *dec, swin_nvjpeg_buffer *px, int k, int *cpu_fallback, double *ms) {
    pipe_slot *sl = &q->slots[k % q->depth];
    int nb = swin_pipe_batch_len(q, k);
    const uint8_t *data[4096];
    size_t len[4096];
    const char *names[4096];
    swin_jpeg_gpu_input in[4096];   /* the exact decoder: its scans and staged data */
    int idx[4096], m = 0;
    for (int j = 0; j < nb && m < 4096; j++) {
        pipe_item *it = &sl->items[j];
        if (!it->ok || !it->jpeg) continue;
        data[m] = it->jpeg;
        len[m] = it->jpeg_len;
        names[m] = q->paths[(size_t)k * q->B + j];
        in[m] = (swin_jpeg_gpu_input){it->ent, it->scan, names[m]};
        idx[m++] = j;
    }
    if (!m) return;
    double t0 = swin_pipe_now_ms();
    swin_nvjpeg_image *out = calloc((size_t)m, sizeof *out);
    swin_status st = !out ? swin_fail(SWIN_ERR_MEMORY, "GPU JPEG decoding: out of memory")
                     : q->decoder == SWIN_DECODER_GPU ? swin_jpeg_gpu_decode(dec->jg, px, in, m, out)
                                                      : swin_nvjpeg_decode_into(dec->nv, px, data, len, names, m, out);
    for (int i = 0; i < m; i++) {
        pipe_item *it = &sl->items[idx[i]];
        if (st == SWIN_OK && out[i].ok) {
            it->img.width = out[i].width;
            it->img.height = out[i].height;
            it->img.rgb = (uint8_t *)out[i].rgb;
            it->on_device = 1;
            continue;
        }
        int custom;   /* libjpeg's verdict; only what preprocessing reads, as on the decoder threads */
        swin_status cs = swin_image_decode_part(it->jpeg, it->jpeg_len, names[i], q->part ? q->p : NULL,
                                                NULL, NULL, &it->img, &custom);
        (*cpu_fallback)++;
        if (cs != SWIN_OK) {
            it->ok = 0;
            snprintf(it->err, sizeof it->err, "%s", swin_last_error());
        }
    }
    free(out);
    *ms += swin_pipe_now_ms() - t0;
}

swin_status swin_pipe_nvj_count(const swin_pipeline_options *o, swin_decoder decoder, int *out) {
    int n = o->nvjpeg_decoders;
    if (n == 0) {
        if (decoder == SWIN_DECODER_GPU)
            SWIN_TRY(swin_env_int("SWIN_JPEG_GPU_DECODERS", 1, MAX_DECODERS, DEFAULT_EXACT_DECODERS, "GPU decoders", &n));
        else
            SWIN_TRY(swin_env_int("SWIN_NVJPEG_STATES", 1, MAX_DECODERS, DEFAULT_DECODERS, "nvJPEG decoders", &n));
    }
    if (n < 1 || n > MAX_DECODERS)
        return swin_fail(SWIN_ERR_ARGUMENT, "pipeline nvjpeg_decoders %d out of range [0, %d]", n, MAX_DECODERS);
    *out = n;
    return SWIN_OK;
}

swin_status swin_pipe_gpu_share(const swin_pipeline_options *o, int B, int *out) {
    int pct = o->gpu_share;
    if (pct == 0) SWIN_TRY(swin_env_int("SWIN_JPEG_GPU_SHARE", 1, 100, DEFAULT_EXACT_SHARE, "percent", &pct));
    if (pct < 1 || pct > 100) return swin_fail(SWIN_ERR_ARGUMENT, "pipeline gpu_share %d out of range [0, 100]", pct);
    *out = (int)(((long)B * pct + 50) / 100);
    if (*out < 1) *out = 1;
    return SWIN_OK;
}

swin_status swin_pipe_nvj_create(pipe_t *q, int n) {
    q->nvj = calloc((size_t)n, sizeof *q->nvj);
    if (!q->nvj) return swin_fail(SWIN_ERR_MEMORY, "pipeline: out of memory");
    q->n_nvj = n;
    int dev = swin_session_get_options(q->lanes[0].s)->device_index;
    for (int i = 0; i < n; i++) {
        q->nvj[i].q = q;
        if (i == 0) q->nvj[i].dec = q->lanes[0].dec;
        else SWIN_TRY(swin_pipe_gdec_create(q, dev, &q->nvj[i].dec));
    }
    return SWIN_OK;
}

static void *nvj_main(void *arg) {
    pipe_nvj *w = arg;
    pipe_t *q = w->q;
    pthread_mutex_lock(&q->mu);
    while (q->next_gpu < q->nbatches) {
        int k = q->next_gpu++;
        pipe_slot *sl = &q->slots[k % q->depth];
        swin_pipe_wait_decoded(q, k);
        pthread_mutex_unlock(&q->mu);
        swin_pipe_gpu_decode(q, &w->dec, &sl->px, k, &w->cpu_fallback, &w->ms);
        pthread_mutex_lock(&q->mu);
        sl->gpu_decoded = 1;
        pthread_cond_broadcast(&q->batch_done);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

void swin_pipe_nvj_start(pipe_t *q) {
    q->nvj_running = 0;
    for (int i = 0; i < q->n_nvj; i++) {
        if (pthread_create(&q->nvj[i].tid, NULL, nvj_main, &q->nvj[i]) != 0) break;
        q->nvj_running++;
    }
}

void swin_pipe_nvj_finish(pipe_t *q, swin_pipeline_stats *stats) {
    for (int i = 0; i < q->nvj_running; i++) {   /* the threads that started are the first ones */
        pthread_join(q->nvj[i].tid, NULL);
        stats->cpu_fallback += q->nvj[i].cpu_fallback;
        stats->gpu_decode_ms += q->nvj[i].ms;
        if (i > 0) swin_pipe_add_gdec_stats(stats, &q->nvj[i].dec);   /* 0: lane 0's, counted with the lanes */
    }
}

void swin_pipe_add_gdec_stats(swin_pipeline_stats *stats, const pipe_gdec *dec) {
    if (dec->jg) {
        swin_jpeg_gpu_stats gs;
        swin_jpeg_gpu_get_stats(dec->jg, &gs);
        stats->nvjpeg_decoders++;
        stats->gpu_jpeg_images += gs.images;
        stats->gpu_jpeg_refused += gs.refused;
        stats->gpu_jpeg_stage_ms += gs.stage_ms;
        stats->gpu_jpeg_gpu_ms += gs.gpu_ms;
    }
    if (!dec->nv) return;
    swin_nvjpeg_stats ns;
    swin_nvjpeg_get_stats(dec->nv, &ns);
    stats->nvjpeg_decoders++;
    stats->nvjpeg_hw_images += ns.hw_images;
    stats->nvjpeg_sw_images += ns.sw_images;
    stats->nvjpeg_hw_setups += ns.hw_setups;
    stats->nvjpeg_hw_padding += ns.hw_padding;
    stats->nvjpeg_parse_ms += ns.parse_ms;
    stats->nvjpeg_hw_ms += ns.hw_ms;
    stats->nvjpeg_sw_ms += ns.sw_ms;
    stats->nvjpeg_sync_ms += ns.sync_ms;
}

void swin_pipe_nvj_free(pipe_t *q) {
    for (int i = 1; q->nvj && i < q->n_nvj; i++) swin_pipe_gdec_free(&q->nvj[i].dec);
    free(q->nvj);
    q->nvj = NULL;
    q->n_nvj = q->nvj_running = 0;
}
