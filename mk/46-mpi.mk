# mk/46-mpi.mk — MPI, an OPTIONAL build dependency (OpenMPI: Debian openmpi-bin libopenmpi-dev,
# installed by tools/deps.sh): multi-rank launch with mpirun and, later, the host backend's
# collectives (docs/SCALING.md). Detected through mpicc or pkg-config ompi-c; override with
# `make TANDEM_HAVE_MPI=0`. Without it everything else builds and a note says what is left out.
#
# Now: test/mpi/mpi_smoke.c (MPI_Allreduce over `mpirun -np 2` on loopback) in `make test`, to
# show the toolchain and the launcher work on this machine.

MPICC ?= mpicc
TANDEM_HAVE_MPI ?= $(shell (command -v $(MPICC) >/dev/null 2>&1 || pkg-config --exists ompi-c 2>/dev/null) \
                            && command -v mpirun >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(TANDEM_HAVE_MPI),1)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null || $(MPICC) --showme:compile)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null || $(MPICC) --showme:link)

$(TEST_BIN_DIR)/mpi_smoke: test/mpi/mpi_smoke.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) $(MPI_CFLAGS) -o $@ $< $(MPI_LIBS) -lm

TEST_BINS += $(TEST_BIN_DIR)/check_mpi_2_ranks
$(TEST_BIN_DIR)/check_mpi_2_ranks: $(TEST_BIN_DIR)/mpi_smoke test/mpi/run_mpi.sh
	@printf '#!/bin/sh\nexec bash %s %s 2\n' '$(abspath test/mpi/run_mpi.sh)' '$(abspath $<)' > $@
	@chmod +x $@
else
$(info NOTE: building without MPI (TANDEM_HAVE_MPI=0: no mpicc / pkg-config ompi-c, or set so): multi-rank host runs and their tests are left out; install OpenMPI with tools/deps.sh (Debian openmpi-bin libopenmpi-dev))
endif
