/* devices.c - the --device of classify and bench: cpu, cuda, cuda:N, a list cuda:N,M,... or
 * cuda:all, and which of the GPUs this process takes.
 *
 * Alone, a process takes what it is given: cuda = cuda:0, cuda:all every GPU it sees. As one of
 * L ranks of an MPI job on a node (local rank r), plain cuda takes GPU r mod G (one GPU per
 * rank), and cuda:all or a list is shared out: entry i of the list goes to local rank i mod L,
 * or, with fewer entries than ranks, rank r takes entry r mod (entries).
 * Tested through the command: tests/cli_classify.sh (syntax, duplicates, no GPU), cli_mpi.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DEVICE_HELP "cpu, cuda, cuda:N, a list cuda:N,M,... or cuda:all"

int cli_parse_devices(const char *cmd, const char *s, cli_devices *d) {
    memset(d, 0, sizeof *d);
    if (!strcmp(s, "cpu")) {
        d->device = SWIN_DEVICE_CPU;
        d->n = 1;
        return 0;
    }
    d->device = SWIN_DEVICE_CUDA;
    if (!strcmp(s, "cuda")) {
        d->implicit = 1;
        d->n = 1;
        return 0;
    }
    if (strncmp(s, "cuda:", 5) != 0) return cli_usage_error(cmd, "bad --device '%s' (expected " DEVICE_HELP ")", s);
    if (!strcmp(s + 5, "all")) {
        d->all = 1;
        return 0;
    }
    const char *p = s + 5;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char num[16];
        int idx;
        if (len == 0 || len >= sizeof num) return cli_usage_error(cmd, "bad --device '%s' (expected " DEVICE_HELP ")", s);
        memcpy(num, p, len);
        num[len] = '\0';
        if (num[0] < '0' || num[0] > '9' || cli_parse_int(num, 0, 1023, &idx))   /* no sign, no space */
            return cli_usage_error(cmd, "bad --device '%s' (expected " DEVICE_HELP "; N from 0 to 1023)", s);
        for (int j = 0; j < d->n; j++)
            if (d->index[j] == idx) return cli_usage_error(cmd, "bad --device '%s': cuda:%d is listed twice", s, idx);
        if (d->n == CLI_MAX_GPUS) return cli_usage_error(cmd, "bad --device '%s': more than %d GPUs", s, CLI_MAX_GPUS);
        d->index[d->n++] = idx;
        if (!comma) return 0;
        p = comma + 1;
    }
}

int cli_parse_device(const char *s, swin_device *dev, int *index) {
    cli_devices d;
    int saved = cli_set_quiet(1);   /* the caller words its own message */
    int rc = cli_parse_devices("", s, &d);
    cli_set_quiet(saved);
    if (rc || d.all || d.n != 1) return 1;
    *dev = d.device;
    *index = d.index[0];
    return 0;
}

int cli_resolve_devices(const char *cmd, const char *spec, const cli_devices *d, int local_rank, int local_size,
                        int *out, int *n) {
    *n = 0;
    if (d->device == SWIN_DEVICE_CPU) {
        out[(*n)++] = 0;
        return 0;
    }
    int count = 0;
    if (swin_cuda_device_count(&count) != SWIN_OK)
        return cli_usage_error(cmd, "--device %s: %s", spec, swin_last_error());
    int pool[CLI_MAX_GPUS], m = 0;
    if (d->all || d->implicit) {
        for (int g = 0; g < count && m < CLI_MAX_GPUS; g++) pool[m++] = g;
    } else {
        for (int j = 0; j < d->n; j++) {
            if (d->index[j] >= count)
                return cli_usage_error(cmd, "--device %s: cuda:%d does not exist (%d GPU%s: cuda:0 to cuda:%d)", spec,
                                       d->index[j], count, count == 1 ? "" : "s", count - 1);
            pool[m++] = d->index[j];
        }
    }
    if (local_size < 1) local_size = 1;
    if (d->implicit) {                       /* one GPU: cuda:0 alone, the local rank's under MPI */
        out[(*n)++] = local_size > 1 ? pool[local_rank % m] : 0;
    } else if (m >= local_size) {            /* every rank of the node gets its share of the list */
        for (int i = local_rank; i < m; i += local_size) out[(*n)++] = pool[i];
    } else {                                 /* more ranks than GPUs: they take turns */
        out[(*n)++] = pool[local_rank % m];
    }
    return 0;
}
