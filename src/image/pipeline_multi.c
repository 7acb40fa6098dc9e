/* pipeline_multi.c - several sessions (one per GPU) behind one pipeline: a lane thread per
 * session takes the next decoded batch, whichever lane is free first, and runs it; the calling
 * thread reports the batches in input order as they complete (swin_pipeline_run_multi,
 * pipeline.h). The decoder threads, slots and reporting are pipeline.c's.
 *
 * Lanes claim batches in order (next_run), so batch k is always claimed before k + 1 and the
 * reporter, waiting for k, never waits on a batch nobody runs. A lane that finishes batch k sets
 * the slot's `ran`; the reporter reports it, hands the slot on and wakes the decoders.
 * Test: build/tests/test_pipeline (several CPU sessions give the one-session results).
 */
#include <stdlib.h>

#include "pipeline_impl.h"

typedef struct {
    pipe_t *q;
    pipe_lane *l;
} lane_arg;

static void *lane_main(void *arg) {
    pipe_t *q = ((lane_arg *)arg)->q;
    pipe_lane *l = ((lane_arg *)arg)->l;
    if (q->reporter) {   /* one session */
        swin_pipe_lane_pipelined(q, l);
        return NULL;
    }
    pthread_mutex_lock(&q->mu);
    while (q->next_run < q->nbatches) {
        int k = q->next_run++;
        double tw = swin_pipe_now_ms();
        swin_pipe_wait_decoded(q, k);
        pthread_mutex_unlock(&q->mu);
        l->st.wait_ms += swin_pipe_now_ms() - tw;
        swin_pipe_run_batch(q, l, k);
        swin_pipe_mark_ran(q, k);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int swin_pipe_run_lanes(pipe_t *q, swin_pipeline_result_fn on_result, void *ctx, swin_pipeline_stats *stats) {
    pthread_t *tid = calloc((size_t)q->n_lanes, sizeof *tid);
    lane_arg *args = calloc((size_t)q->n_lanes, sizeof *args);
    int started = 0;
    if (tid && args)
        for (; started < q->n_lanes; started++) {
            args[started] = (lane_arg){q, &q->lanes[started]};
            if (pthread_create(&tid[started], NULL, lane_main, &args[started]) != 0) break;
        }
    if (started == 0) {
        free(args);
        free(tid);
        return -1;
    }
    for (int k = 0; k < q->nbatches; k++) {
        pipe_slot *sl = &q->slots[k % q->depth];
        pthread_mutex_lock(&q->mu);
        while (sl->batch != k || !sl->ran) pthread_cond_wait(&q->batch_ran, &q->mu);
        pthread_mutex_unlock(&q->mu);
        swin_pipe_report_batch(q, k, on_result, ctx, stats);
    }
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(args);
    free(tid);
    return 0;
}
