/* dist.h - the processes of one `swin classify` job: MPI ranks when mpirun or srun started this
 * process and swin was built with MPI (dist_mpi.c), else one process alone (dist.c).
 *
 * Only the command uses MPI; libswin never does. MPI is initialised only when a launcher's
 * environment says so (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS, PMIX_RANK): a
 * process started by hand never calls MPI_Init and runs exactly as a build without MPI.
 * Every wait of a rank polls with short sleeps, so a rank that finished early does not spin a
 * core that the ranks still decoding on its node need.
 * Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL): a failed call or a dead rank ends the job
 * (README: "Many machines").
 */
#ifndef SWIN_CLI_DIST_H
#define SWIN_CLI_DIST_H

#include <stddef.h>

typedef struct {
    int active;                  /* MPI initialised: finish with cli_dist_finish */
    int rank, size;              /* in the job: 0 and 1 alone */
    int local_rank, local_size;  /* on this node (MPI_COMM_TYPE_SHARED) */
    char origin[96];             /* "rank R on HOST", for messages of ranks > 0 */
} cli_dist;

/* The number of processes a launcher says this job has, 0 when no launcher started this one
 * (1 when one did without saying how many). */
int cli_dist_launched_size(void);
/* Join the job: MPI_Init when launched (and built with MPI), else rank 0 of 1. Returns 0, or
 * EXIT_USAGE after a message (launched as one of several processes by a swin built without
 * MPI: each would classify every image). */
int cli_dist_init(const char *cmd, cli_dist *d);
void cli_dist_finish(cli_dist *d);

/* Rank 0's bytes to every rank: *buf (malloc'ed on ranks > 0, which free it) and *len. 0 on success. */
int cli_dist_bcast(cli_dist *d, char **buf, size_t *len);
/* Rank 0's v[0..n) to every rank. */
void cli_dist_bcast_ints(cli_dist *d, int *v, int n);
/* The largest of v over the ranks, on every rank. */
int cli_dist_max(cli_dist *d, int v);
/* Rank r > 0 sends buf to rank 0; rank 0 receives rank `from`'s (malloc'ed, the caller frees). */
int cli_dist_send(cli_dist *d, const void *buf, size_t len);
int cli_dist_recv(cli_dist *d, int from, char **buf, size_t *len);
/* v[0..n) summed over the ranks into rank 0's v (others' v unchanged). */
void cli_dist_sum(cli_dist *d, double *v, int n);

#endif
