/* dist_mpi.c - the ranks of an MPI job (dist.h); compiled to something only when CMake found MPI
 * (SWIN_MPI, the default). Only the main thread calls MPI (MPI_THREAD_FUNNELED); every wait is
 * a non-blocking call polled with short sleeps. Messages over 1 GiB go in pieces (MPI counts
 * are ints). Test: tests/cli_mpi.sh.
 */
#ifdef SWIN_HAVE_MPI
#define _POSIX_C_SOURCE 200809L /* nanosleep, gethostname */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dist.h"

#define PIECE ((size_t)1 << 30)
enum { TAG_LEN = 1, TAG_DATA = 2 };

/* wait for r, sleeping 0.2 ms between polls once the first millisecond has passed */
static void wait_for(MPI_Request *r) {
    int done = 0;
    for (int polls = 0;; polls++) {
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (polls > 1000) nanosleep(&(struct timespec){0, 200000}, NULL);
    }
}

int cli_dist_init(const char *cmd, cli_dist *d) {
    memset(d, 0, sizeof *d);
    d->size = d->local_size = 1;
    if (cli_dist_launched_size() == 0) return 0;   /* started by hand: no MPI at all */
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return cli_usage_error(cmd, "MPI_Init failed");
    d->active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &d->local_rank);
    MPI_Comm_size(node, &d->local_size);
    MPI_Comm_free(&node);
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(d->origin, sizeof d->origin, "rank %d on %s", d->rank, host);
    return 0;
}

void cli_dist_finish(cli_dist *d) {
    if (d->active) MPI_Finalize();
    d->active = 0;
}

/* rank 0's len bytes at buf to every rank, in pieces */
static void bcast_bytes(char *buf, size_t len) {
    for (size_t off = 0; off < len; off += PIECE) {
        size_t n = len - off < PIECE ? len - off : PIECE;
        MPI_Request r;
        MPI_Ibcast(buf + off, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        wait_for(&r);
    }
}

int cli_dist_bcast(cli_dist *d, char **buf, size_t *len) {
    if (!d->active) return 0;
    uint64_t n = *len;
    MPI_Request r;
    MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &r);
    wait_for(&r);
    if (d->rank != 0) {
        *len = (size_t)n;
        if (!(*buf = malloc(n ? (size_t)n : 1))) return 1;   /* MPI_ERRORS_ARE_FATAL ends the others */
    }
    bcast_bytes(*buf, (size_t)n);
    return 0;
}

void cli_dist_bcast_ints(cli_dist *d, int *v, int n) {
    if (!d->active) return;
    MPI_Request r;
    MPI_Ibcast(v, n, MPI_INT, 0, MPI_COMM_WORLD, &r);
    wait_for(&r);
}

int cli_dist_max(cli_dist *d, int v) {
    if (!d->active) return v;
    int out = v;
    MPI_Request r;
    MPI_Iallreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r);
    wait_for(&r);
    return out;
}

int cli_dist_send(cli_dist *d, const void *buf, size_t len) {
    if (!d->active || d->rank == 0) return 1;
    uint64_t n = len;
    MPI_Request r;
    MPI_Isend(&n, 1, MPI_UINT64_T, 0, TAG_LEN, MPI_COMM_WORLD, &r);
    wait_for(&r);
    for (size_t off = 0; off < len; off += PIECE) {
        size_t m = len - off < PIECE ? len - off : PIECE;
        MPI_Isend((const char *)buf + off, (int)m, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &r);
        wait_for(&r);
    }
    return 0;
}

int cli_dist_recv(cli_dist *d, int from, char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    if (!d->active || d->rank != 0) return 1;
    uint64_t n = 0;
    MPI_Request r;
    MPI_Irecv(&n, 1, MPI_UINT64_T, from, TAG_LEN, MPI_COMM_WORLD, &r);
    wait_for(&r);
    if (!(*buf = malloc(n ? (size_t)n : 1))) return 1;
    for (size_t off = 0; off < n; off += PIECE) {
        size_t m = n - off < PIECE ? n - off : PIECE;
        MPI_Irecv(*buf + off, (int)m, MPI_BYTE, from, TAG_DATA, MPI_COMM_WORLD, &r);
        wait_for(&r);
    }
    *len = (size_t)n;
    return 0;
}

void cli_dist_sum(cli_dist *d, double *v, int n) {
    if (!d->active) return;
    double *out = calloc((size_t)n, sizeof *out);
    if (!out) return;
    MPI_Request r;
    MPI_Ireduce(v, out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &r);
    wait_for(&r);
    if (d->rank == 0) memcpy(v, out, (size_t)n * sizeof *v);
    free(out);
}
#endif
