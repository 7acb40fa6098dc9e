/* classify.h - `swin classify`, shared by its two files: cmd_classify.c (flags, the output of
 * each image, the run) and classify_job.c (the job: paths, model and sessions on every process,
 * the share of each MPI rank, rank 0 gathering the others' results). */
#ifndef SWIN_CLI_CLASSIFY_H
#define SWIN_CLI_CLASSIFY_H

#include <stdio.h>

#include "cli.h"
#include "dist.h"
#include "paths.h"
#include "pipeline.h"
#include "sink.h"

#define CMD "classify"

typedef struct {
    const char *model, *arch, *list, *out, *device_spec;
    int top, json, batch, timing;
    cli_image_flags img;   /* --threads, --preprocess, --pillow, --img-size */
    swin_preprocess_device pre_device;
    swin_decoder decoder;
    cli_devices dev;
    swin_precision precision;
    const char *scales;          /* --scales: the FP8 scales file (fp8 only) */
} classify_args;

typedef struct {
    cli_dist *d;
    path_list paths;             /* every input (each rank holds the whole list) */
    int inputs_failed;           /* rank 0: an unreadable or empty directory */
    int batch;                   /* the batch of the whole list: shards are whole batches */
    swin_model *model;
    swin_session *sess[CLI_MAX_GPUS];
    int gpus[CLI_MAX_GPUS], n_sess;
    FILE *out;                   /* rank 0: the results stream */
} classify_job;

/* Every rank: rank 0 collects the paths and opens the model, its sessions and --out, then sends
 * the others its status, the batch and the paths; they open the model and their sessions.
 * 0 when every rank is ready; else the status to exit with (each failing rank printed why). */
int job_start(const classify_args *a, const char *const *inputs, int n_inputs, classify_job *j);
void job_free(classify_job *j);
/* This rank's inputs [lo, hi): a contiguous block of whole batches, so that every image is in the
 * same batch as in one process (and the GPU results are the same bits). */
void job_shard(const classify_job *j, int *lo, int *hi);
/* After the run, with size > 1: rank 0 replays the other ranks' records into its sink in rank
 * order (input order), the others send theirs; then the counts and times of every rank are
 * summed on rank 0. *lost: some rank's results could not be kept or read; *broken: some rank's
 * pipeline could not run (it printed why). */
void job_gather(classify_job *j, cli_sink *sink, swin_pipeline_stats *st, int *lost, int *broken);

#endif
