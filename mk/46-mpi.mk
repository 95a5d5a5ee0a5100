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
# The host backend's collectives (platform/host/host_mpi.c) call MPI: that one object sees
# mpi.h, and every link of libtandem.a (CLI, tests, tandem.pc) gets MPI's libraries.
$(BUILD)/obj/platform/host/host_mpi.o: CFLAGS += $(MPI_CFLAGS) -DTANDEM_HAVE_MPI=1
DEP_LIBS += $(MPI_LIBS)
$(PCFILE): mk/46-mpi.mk

$(TEST_BIN_DIR)/mpi_smoke: test/mpi/mpi_smoke.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) $(MPI_CFLAGS) -o $@ $< $(MPI_LIBS) -lm

TEST_BINS += $(TEST_BIN_DIR)/check_mpi_2_ranks
$(TEST_BIN_DIR)/check_mpi_2_ranks: $(TEST_BIN_DIR)/mpi_smoke test/mpi/run_mpi.sh
	@printf '#!/bin/sh\nexec bash %s %s 2\n' '$(abspath test/mpi/run_mpi.sh)' '$(abspath $<)' > $@
	@chmod +x $@

# Data-parallel training over MPI on the host (runtime/run/dp.h): test/mpi/test_dp.c under
# `mpirun -np 2` (test/mpi/run_dp.sh): matching one device, resume, a killed rank.
$(TEST_BIN_DIR)/test_dp: test/mpi/test_dp.c $(TEST_FIXTURES) $(LIB) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(MPI_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)

TEST_BINS += $(TEST_BIN_DIR)/check_dp_2_ranks
$(TEST_BIN_DIR)/check_dp_2_ranks: $(TEST_BIN_DIR)/test_dp test/mpi/run_dp.sh $(FAKENCCL_LIB)
	@printf '#!/bin/sh\nexec bash %s %s %s\n' '$(abspath test/mpi/run_dp.sh)' '$(abspath $<)' '$(abspath $(FAKECUDA_DIR))' > $@
	@chmod +x $@
else
# The same test names, each saying why it does not run (the count stays the same).
TEST_BINS += $(TEST_BIN_DIR)/check_dp_2_ranks
$(TEST_BIN_DIR)/check_dp_2_ranks:
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\necho "SKIP: data-parallel over MPI: this build has no MPI (TANDEM_HAVE_MPI=0); install OpenMPI with tools/deps.sh and rebuild"\n' > $@
	@chmod +x $@
$(info NOTE: building without MPI (TANDEM_HAVE_MPI=0: no mpicc / pkg-config ompi-c, or set so): multi-rank host runs and their tests are left out; install OpenMPI with tools/deps.sh (Debian openmpi-bin libopenmpi-dev))
endif

# test_launch_env: the CLI's reading of the launcher's rank variables (tools/launch_env.c), with
# or without MPI.
$(TEST_BIN_DIR)/test_launch_env: test/unit/test_launch_env.c $(BUILD)/obj/tools/launch_env.o $(TEST_FIXTURES) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(BUILD)/obj/tools/launch_env.o $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)


# Data-parallel CUDA ranks launched torchrun style WITHOUT MPI (test/mpi/run_dp_rdzv.sh): the
# NCCL id through the rendezvous on MASTER_ADDR:MASTER_PORT, on the stand-in driver and NCCL;
# built and run with or without MPI (the torchrun path needs none).
$(TEST_BIN_DIR)/test_dp_rdzv: test/mpi/test_dp_rdzv.c $(BUILD)/obj/tools/launch_env.o $(TEST_FIXTURES) $(LIB) \
                              $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(BUILD)/obj/tools/launch_env.o $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)

TEST_BINS += $(TEST_BIN_DIR)/check_dp_rdzv
$(TEST_BIN_DIR)/check_dp_rdzv: $(TEST_BIN_DIR)/test_dp_rdzv test/mpi/run_dp_rdzv.sh $(FAKENCCL_LIB) $(BUILD)/tandem
	@printf '#!/bin/sh\nexec bash %s %s %s %s\n' '$(abspath test/mpi/run_dp_rdzv.sh)' '$(abspath $<)' '$(abspath $(FAKECUDA_DIR))' '$(abspath $(BUILD)/tandem)' > $@
	@chmod +x $@
