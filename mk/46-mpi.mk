# mk/46-mpi.mk — MPI, an OPTIONAL build dependency (OpenMPI: Debian openmpi-bin libopenmpi-dev,
# installed by tools/deps.sh): multi-rank host training under mpirun (docs/SCALING.md).
#
# libtandem.a and build/tandem link MPI only when asked for: `make MPI=1` (an error when OpenMPI
# is missing). The default build needs no libmpi, so a single-process container ships none.
# When OpenMPI is present the test build also makes $(BUILD)/mpi/libtandem.a and
# $(BUILD)/mpi/tandem (the same objects, host_mpi.o compiled with MPI: what `make MPI=1
# BUILD=build/mpi` builds) and runs the multi-rank tests with them; without it those tests SKIP
# with a note. Override the detection with `make TANDEM_HAVE_MPI=0`.

MPICC ?= mpicc
TANDEM_HAVE_MPI ?= $(shell (command -v $(MPICC) >/dev/null 2>&1 || pkg-config --exists ompi-c 2>/dev/null) \
                            && command -v mpirun >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(MPI)$(TANDEM_HAVE_MPI),10)
$(error MPI=1 asks for MPI but no OpenMPI was found (mpicc / pkg-config ompi-c, mpirun): install openmpi-bin libopenmpi-dev (tools/deps.sh, as root) or build without MPI=1)
endif
ifeq ($(TANDEM_HAVE_MPI),1)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null || $(MPICC) --showme:compile)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null || $(MPICC) --showme:link)
MPI_DIR    := $(BUILD)/mpi
MPI_OBJ    := $(MPI_DIR)/obj/platform/host/host_mpi.o
# The MPI flavour of the archive and the CLI (see above).
MPI_LIB    := $(MPI_DIR)/libtandem.a
MPI_CLI    := $(MPI_DIR)/tandem
$(MPI_OBJ): platform/host/host_mpi.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(MPI_CFLAGS) -DTANDEM_HAVE_MPI=1 -MMD -MP -c $< -o $@
$(MPI_LIB): $(filter-out $(BUILD)/obj/platform/host/host_mpi.o,$(LIB_OBJ)) $(MPI_OBJ) $(BUILD)/obj/fatbin_embed.o
	@rm -f $@
	$(AR) rcs $@ $^
$(MPI_CLI): $(CLI_OBJ) $(MPI_LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(MPI_LIB) $(DEP_LIBS) $(MPI_LIBS)
-include $(MPI_OBJ:.o=.d)
# docs/SCALING.md's mpirun command runs build/mpi/tandem
$(BUILD)/test/bin/check_docs_commands: $(MPI_CLI)

ifeq ($(MPI),1)
# Asked for: the default archive and CLI are the MPI flavour, and every link of them (CLI,
# tests, tandem.pc) gets MPI's libraries.
$(BUILD)/obj/platform/host/host_mpi.o: CFLAGS += $(MPI_CFLAGS) -DTANDEM_HAVE_MPI=1
DEP_LIBS += $(MPI_LIBS)
$(PCFILE): mk/46-mpi.mk
endif

$(TEST_BIN_DIR)/mpi_smoke: test/mpi/mpi_smoke.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) $(MPI_CFLAGS) -o $@ $< $(MPI_LIBS) -lm

TEST_BINS += $(TEST_BIN_DIR)/check_mpi_2_ranks
$(TEST_BIN_DIR)/check_mpi_2_ranks: $(TEST_BIN_DIR)/mpi_smoke test/mpi/run_mpi.sh
	@printf '#!/bin/sh\nexec bash %s %s 2\n' '$(abspath test/mpi/run_mpi.sh)' '$(abspath $<)' > $@
	@chmod +x $@

# Data-parallel training over MPI on the host (runtime/run/dp.h): test/mpi/test_dp.c under
# `mpirun -np 2` (test/mpi/run_dp.sh): matching one device, resume, a killed rank.
$(TEST_BIN_DIR)/test_dp: test/mpi/test_dp.c $(TEST_FIXTURES) $(MPI_LIB) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(MPI_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(MPI_LIB) $(LDFLAGS) $(TEST_LIBS) $(MPI_LIBS)

TEST_BINS += $(TEST_BIN_DIR)/check_dp_2_ranks
$(TEST_BIN_DIR)/check_dp_2_ranks: $(TEST_BIN_DIR)/test_dp test/mpi/run_dp.sh $(FAKENCCL_LIB) $(MPI_CLI)
	@printf '#!/bin/sh\nexec bash %s %s %s\n' '$(abspath test/mpi/run_dp.sh)' '$(abspath $<)' '$(abspath $(FAKECUDA_DIR))' > $@
	@chmod +x $@
else
# The same test names, each saying why it does not run (the count stays the same).
TEST_BINS += $(TEST_BIN_DIR)/check_dp_2_ranks
$(TEST_BIN_DIR)/check_dp_2_ranks:
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\necho "SKIP: data-parallel over MPI: no OpenMPI on this machine (TANDEM_HAVE_MPI=0); install it with tools/deps.sh (as root) and rebuild"\n' > $@
	@chmod +x $@
$(info NOTE: no OpenMPI found (TANDEM_HAVE_MPI=0: no mpicc / pkg-config ompi-c, or set so): the multi-rank host tests are left out; install OpenMPI with tools/deps.sh (Debian openmpi-bin libopenmpi-dev))
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
