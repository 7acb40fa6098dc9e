/* classify_job.c - the processes of one `swin classify` (classify.h): alone, or the ranks of an
 * MPI job. Rank 0 does what one process does before the run (paths, model, sessions, --out),
 * then sends every rank the paths in one broadcast; each rank classifies its block and rank 0
 * writes the blocks in rank order. Test: tests/cli_mpi.sh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"

/* The model and one session per device of this process; 0 or EXIT_USAGE after a message. */
static int open_sessions(const classify_args *a, classify_job *j) {
    swin_load_options lo = swin_load_options_default();
    lo.arch = a->arch;
    lo.img_h = a->img.img_h;
    lo.img_w = a->img.img_w;
    if (swin_model_load(a->model, &lo, &j->model) != SWIN_OK) return cli_usage_error(CMD, "%s", swin_last_error());
    const swin_config *cfg = swin_model_config(j->model);
    if (cfg->in_chans != 3)
        return cli_usage_error(CMD, "%s: model takes %d input channels; images have 3", a->model, cfg->in_chans);
    if (cli_resolve_devices(CMD, a->device_spec, &a->dev, j->d->local_rank, j->d->local_size, j->gpus, &j->n_sess))
        return EXIT_USAGE;
    swin_session_options so = swin_session_options_default();
    so.device = a->dev.device;
    so.precision = a->precision;
    so.fp8_scales = a->scales;
    so.max_batch = j->batch;
    for (int g = 0; g < j->n_sess; g++) {
        so.device_index = j->gpus[g];
        if (swin_session_create(j->model, &so, &j->sess[g]) != SWIN_OK)
            return cli_usage_error(CMD, "%s", swin_last_error());
    }
    return 0;
}

/* Rank 0, or the one process. */
static int start_rank0(const classify_args *a, const char *const *inputs, int n_inputs, classify_job *j) {
    int rc = paths_collect(CMD, a->list, inputs, n_inputs, &j->paths, &j->inputs_failed);
    if (rc) return rc;
    if (j->paths.n == 0) {
        if (!j->inputs_failed) fprintf(stderr, "swin %s: no images to classify\n", CMD);
        return EXIT_FAILED;
    }
    j->batch = a->batch < j->paths.n ? a->batch : j->paths.n;
    if ((rc = open_sessions(a, j))) return rc;
    j->out = stdout;
    if (a->out && strcmp(a->out, "-") && !(j->out = fopen(a->out, "w"))) {
        j->out = NULL;
        return cli_usage_error(CMD, "%s: cannot write the results (%s)", a->out, strerror(errno));
    }
    return 0;
}

int job_start(const classify_args *a, const char *const *inputs, int n_inputs, classify_job *j) {
    cli_dist *d = j->d;
    int rc = d->rank == 0 ? start_rank0(a, inputs, n_inputs, j) : 0;
    if (d->size == 1) return rc;
    int head[2] = {rc, j->batch};   /* rank 0's status (it said why) and the batch */
    cli_dist_bcast_ints(d, head, 2);
    if (head[0]) return head[0];
    j->batch = head[1];
    char *buf = NULL;
    size_t len = 0;
    if (d->rank == 0 && !(buf = paths_pack(&j->paths, &len))) rc = cli_usage_error(CMD, "out of memory");
    cli_dist_bcast_ints(d, &rc, 1);
    if (rc) return rc;
    if (cli_dist_bcast(d, &buf, &len)) rc = cli_usage_error(CMD, "out of memory");
    else if (d->rank != 0 && paths_unpack(buf, len, &j->paths)) rc = cli_usage_error(CMD, "out of memory");
    free(buf);
    if (d->rank != 0 && !rc) rc = open_sessions(a, j);
    return cli_dist_max(d, rc) ? EXIT_USAGE : 0;
}

void job_free(classify_job *j) {
    for (int g = 0; g < j->n_sess; g++) swin_session_free(j->sess[g]);
    swin_model_free(j->model);
    if (j->out && j->out != stdout) fclose(j->out);
    paths_free(&j->paths);
}

void job_shard(const classify_job *j, int *lo, int *hi) {
    int n = j->paths.n, nb = (n + j->batch - 1) / j->batch, r = j->d->rank, size = j->d->size;
    long long b0 = (long long)nb * r / size, b1 = (long long)nb * (r + 1) / size;
    *lo = (int)(b0 * j->batch < n ? b0 * j->batch : n);
    *hi = (int)(b1 * j->batch < n ? b1 * j->batch : n);
}

/* rank 0: the other ranks' records, in rank order; 1 when some were lost */
static int replay_ranks(classify_job *j, cli_sink *sink) {
    int lost = 0;
    for (int r = 1; r < j->d->size; r++) {
        char *buf = NULL;
        size_t len = 0;
        if (cli_dist_recv(j->d, r, &buf, &len) || sink_replay(sink, buf, len)) {
            fprintf(stderr, "swin %s: the results of rank %d were lost (out of memory or malformed)\n", CMD, r);
            lost = 1;
        }
        free(buf);
        fflush(j->out);   /* whole blocks on disk, should a later rank die */
    }
    return lost;
}

void job_gather(classify_job *j, cli_sink *sink, swin_pipeline_stats *st, int *lost, int *broken) {
    cli_dist *d = j->d;
    if (d->rank == 0) *lost |= replay_ranks(j, sink);
    else if (cli_dist_send(d, sink->rec, sink->rec_len)) *lost = 1;
    double v[] = {st->images, st->failed, st->batches, st->threads, st->cpu_fallback, st->read_ms, st->decode_ms,
                  st->cpu_preprocess_ms, st->wait_ms, st->gpu_decode_ms, st->upload_ms, st->gpu_preprocess_ms,
                  st->forward_ms, st->output_ms, st->pinned, *lost, *broken, st->enqueue_ms, st->forward_wait_ms};
    cli_dist_sum(d, v, (int)(sizeof v / sizeof v[0]));
    if (d->rank != 0) return;
    st->images = (int)v[0];
    st->failed = (int)v[1];
    st->batches = (int)v[2];
    st->threads = (int)v[3];
    st->cpu_fallback = (int)v[4];
    st->read_ms = v[5];
    st->decode_ms = v[6];
    st->cpu_preprocess_ms = v[7];
    st->wait_ms = v[8];
    st->gpu_decode_ms = v[9];
    st->upload_ms = v[10];
    st->gpu_preprocess_ms = v[11];
    st->forward_ms = v[12];
    st->output_ms = v[13];
    st->pinned = v[14] > 0;
    *lost = v[15] > 0;
    *broken = v[16] > 0;
    st->enqueue_ms = v[17];
    st->forward_wait_ms = v[18];
}
