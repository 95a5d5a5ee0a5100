/* mpi_smoke.c — MPI works here: run as `mpirun -np 2` (test/mpi/run_mpi.sh), every rank
 * contributes rank + 1 and random floats to MPI_Allreduce (sum) and checks the result against
 * the sum it computes itself from every rank's seed; rank 0 prints one line in the test
 * runner's format. A foundation check for the MPI host backend (docs/SCALING.md): the build
 * detected mpicc, mpirun starts ranks on loopback, and collectives return the sum. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static float value(int rank, int i) {
    unsigned x = (unsigned)(rank * 7919 + i * 104729 + 1) * 2654435761u;
    return (float)(x >> 8) / (float)(1u << 24) - 0.5f;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 1000 };
    float in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i] = value(rank, i);
        out[i] = NAN; /* poisoned: an element nobody wrote shows */
    }
    int mine = rank + 1, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(in, out, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    int bad = total != size * (size + 1) / 2;
    for (int i = 0; i < N; i++) {
        double ref = 0;
        for (int r = 0; r < size; r++) ref += value(r, i);
        if (!(fabs(out[i] - ref) <= 1e-6 * size)) bad++;
    }
    int bad_all = 0;
    MPI_Reduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (bad_all == 0) printf("[       OK ] mpi_allreduce_%d_ranks\n", size);
        else printf("[  FAILED  ] mpi_allreduce_%d_ranks (%d wrong values)\n", size, bad_all);
    }
    MPI_Finalize();
    return bad_all != 0;
}
