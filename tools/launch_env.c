/* launch_env.c — ranks from the launcher's environment (launch_env.h). */
#include "tools/launch_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* name's integer value in [lo, hi] into *out; unset: *out untouched, 0; bad: -1 with err. */
static int env_int(const char *name, int lo, int hi, int *out, char *err, size_t cap) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        snprintf(err, cap, "%s='%s': expected an integer from %d to %d (set by the launcher)", name, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 1;
}

int cli_launch_read(cli_launch *l, char *err, size_t cap) {
    static const struct {
        const char *size, *rank, *local, *who;
    } rows[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun"},
        {"WORLD_SIZE", "RANK", "LOCAL_RANK", "torchrun"},
        {"SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "slurm"},
    };
    l->world = 1, l->rank = 0, l->local_rank = 0, l->launcher = "none";
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int world = 1, rank = 0, local = 0;
        const int got = env_int(rows[i].size, 1, 1 << 20, &world, err, cap);
        if (got < 0) return -1;
        if (got == 0) continue;
        if (env_int(rows[i].rank, 0, world - 1, &rank, err, cap) < 0) return -1;
        if (env_int(rows[i].local, 0, world - 1, &local, err, cap) < 0) return -1;
        l->world = world, l->rank = rank, l->local_rank = local, l->launcher = rows[i].who;
        return 0;
    }
    return 0;
}
