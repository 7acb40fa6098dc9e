/* dist.c - which launcher started this process, and the job of one process (dist.h) when swin
 * was built without MPI; dist_mpi.c is the MPI job. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dist.h"

int cli_dist_launched_size(void) {
    /* Open MPI's mpirun, MPICH's hydra and PMI-2 launchers, Slurm's srun (SLURM_STEP_*: a job
     * step; a batch script alone has none) */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        int n;
        if (v && !cli_parse_int(v, 1, 1 << 24, &n)) return n;
    }
    return getenv("PMIX_RANK") ? 1 : 0;   /* a PMIx launcher: the size comes with MPI_Init */
}

#ifndef SWIN_HAVE_MPI
int cli_dist_init(const char *cmd, cli_dist *d) {
    memset(d, 0, sizeof *d);
    d->size = d->local_size = 1;
    int n = cli_dist_launched_size();
    if (n > 1)
        return cli_usage_error(cmd, "started by an MPI launcher as one of %d processes, but this swin was built "
                               "without MPI (install libopenmpi-dev and rebuild; README: \"Many machines\")", n);
    return 0;
}

void cli_dist_finish(cli_dist *d) { (void)d; }
int cli_dist_bcast(cli_dist *d, char **buf, size_t *len) { (void)d; (void)buf; (void)len; return 0; }
void cli_dist_bcast_ints(cli_dist *d, int *v, int n) { (void)d; (void)v; (void)n; }
int cli_dist_max(cli_dist *d, int v) { (void)d; return v; }
int cli_dist_send(cli_dist *d, const void *buf, size_t len) { (void)d; (void)buf; (void)len; return 1; }
int cli_dist_recv(cli_dist *d, int from, char **buf, size_t *len) {
    (void)d; (void)from; *buf = NULL; *len = 0;
    return 1;
}
void cli_dist_sum(cli_dist *d, double *v, int n) { (void)d; (void)v; (void)n; }
#endif
