/* launch_env.c — ranks from the launcher's environment (launch_env.h). */
#include "tools/launch_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* torchrun's MASTER_ADDR / MASTER_PORT into l->rendezvous ("HOST:PORT", an IPv6 address in
 * brackets); neither set: "" (the CUDA path then needs mpirun). Under torchrun's agent store
 * (TORCHELASTIC_USE_AGENT_STORE=True) its own TCPStore holds MASTER_PORT, so every rank takes
 * MASTER_PORT + 1 instead. */
static int read_master(cli_launch *l, char *err, size_t cap) {
    const char *addr = getenv("MASTER_ADDR");
    int port = 0;
    const int got = env_int("MASTER_PORT", 1, 65535, &port, err, cap);
    if (got < 0) return -1;
    if ((!addr || !*addr) && !got) return 0;
    if (!addr || !*addr || !got) {
        snprintf(err, cap, "%s is set but %s is not: the rendezvous of the CUDA ranks needs both (rank 0's "
                 "address and a free port on it)", got ? "MASTER_PORT" : "MASTER_ADDR", got ? "MASTER_ADDR" :
                 "MASTER_PORT");
        return -1;
    }
    const size_t n = strlen(addr);
    int bad = n > 253;
    for (size_t i = 0; i < n && !bad; i++) bad = addr[i] <= ' ' || addr[i] == 0x7f || strchr("[]/@", addr[i]);
    if (bad) {
        snprintf(err, cap, "MASTER_ADDR='%.80s': expected a host name or an IP address of rank 0's machine (no "
                 "spaces, brackets or slashes, at most 253 characters)", addr);
        return -1;
    }
    const char *agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    if (agent && !strcmp(agent, "True")) {
        if (port == 65535) {
            snprintf(err, cap, "MASTER_PORT=65535 under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True): "
                     "the rendezvous uses MASTER_PORT + 1; choose a lower --master-port");
            return -1;
        }
        port++;
    }
    snprintf(l->rendezvous, sizeof l->rendezvous, strchr(addr, ':') ? "[%s]:%d" : "%s:%d", addr, port);
    return 0;
}

int cli_launch_read(cli_launch *l, char *err, size_t cap) {
    static const struct {
        const char *size, *rank, *local, *local_size, *who;
    } rows[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
         "mpirun"},
        {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun"},
        {"SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "slurm"},
    };
    memset(l, 0, sizeof *l);
    l->world = 1, l->launcher = "none";
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int world = 1, rank = 0, local = 0, lsize = 0;
        const int got = env_int(rows[i].size, 1, 1 << 20, &world, err, cap);
        if (got < 0) return -1;
        if (got == 0) continue;
        if (env_int(rows[i].rank, 0, world - 1, &rank, err, cap) < 0) return -1;
        if (env_int(rows[i].local, 0, world - 1, &local, err, cap) < 0) return -1;
        if (env_int(rows[i].local_size, 1, world, &lsize, err, cap) < 0) return -1;
        if (lsize > 0 && local >= lsize) {
            snprintf(err, cap, "%s=%d with %s=%d: expected a local rank below the ranks on the machine (set by "
                     "the launcher)", rows[i].local, local, rows[i].local_size, lsize);
            return -1;
        }
        l->world = world, l->rank = rank, l->local_rank = local, l->local_world = lsize, l->launcher = rows[i].who;
        return i == 1 ? read_master(l, err, cap) : 0; /* the rendezvous: torchrun style only */
    }
    return 0;
}
