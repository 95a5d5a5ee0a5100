/* launch_env.h — the rank of this process from its launcher's environment, for data-parallel
 * training (`tandem train`; docs/SCALING.md): OpenMPI's mpirun (OMPI_COMM_WORLD_RANK / _SIZE /
 * _LOCAL_RANK, _LOCAL_SIZE), torchrun style (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE;
 * MASTER_ADDR / MASTER_PORT: the rendezvous that hands the CUDA ranks their NCCL id) or Slurm's
 * srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE), looked at in that
 * order. The library reads no environment: the CLI passes what it found as
 * tandem_trainer_options. Owns nothing; main thread. */
#ifndef TANDEM_TOOLS_LAUNCH_ENV_H
#define TANDEM_TOOLS_LAUNCH_ENV_H

#include <stddef.h>

typedef struct cli_launch {
    int world, rank, local_rank; /* world 1, rank 0: no launcher */
    int local_world;             /* ranks on this machine; 0: the launcher did not say */
    const char *launcher;        /* "mpirun", "torchrun", "slurm" or "none" */
    char rendezvous[300];        /* torchrun style: "MASTER_ADDR:MASTER_PORT" (IPv6 in brackets;
                                    MASTER_PORT + 1 when torchrun's agent store holds the port:
                                    TORCHELASTIC_USE_AGENT_STORE=True); "" when not set (or
                                    another launcher) */
} cli_launch;

/* 0, or -1 with err naming the variable, its value and what it accepts. */
int cli_launch_read(cli_launch *l, char *err, size_t cap);

#endif
