# mk/40-fakecuda.mk — the stand-in driver (test-only): $(BUILD)/test/fakecuda/libcuda.so.1 and
# libcublasLt.so.13, built from the kernel emulator, and the tests that use them.
#
# libcuda.so.1 = test/fakecuda/fc_*.c (not fc_cublaslt.c) + the whole emulator archive + what
# it needs from libtandem.a (fatbin parser, kernel registry and host code, logging), all -fPIC
# and hidden except the driver's own entry points. libcublasLt.so.13 links against it (found
# next to it through RUNPATH $ORIGIN, or already loaded under its soname), so both share one
# state. Under SANITIZE both are sanitized: load them only into sanitized programs.

FAKECUDA_DIR   := $(BUILD)/test/fakecuda
FAKECUDA_LIB   := $(FAKECUDA_DIR)/libcuda.so.1
FAKECUBLAS_LIB := $(FAKECUDA_DIR)/libcublasLt.so.13
EMU_LIB_PATH   := $(BUILD)/test/emu/libtandem_emu.a

FAKECUDA_SRC := test/fakecuda/fc_state.c test/fakecuda/fc_device.c test/fakecuda/fc_memory.c \
                test/fakecuda/fc_stream.c test/fakecuda/fc_module.c test/fakecuda/fc_procaddr.c \
                test/fakecuda/fc_queue.c test/fakecuda/fc_hazard.c test/fakecuda/fc_access.c \
                test/fakecuda/fc_graph.c
FAKECUDA_OBJ := $(FAKECUDA_SRC:%.c=$(BUILD)/obj/%.o)
FAKECUBLAS_OBJ := $(BUILD)/obj/test/fakecuda/fc_cublaslt.o

# -Wno-comment: emu.h mentions "kernels/*.cu" inside a comment.
$(FAKECUDA_OBJ) $(FAKECUBLAS_OBJ): CFLAGS += -Wno-comment

# The emulator (mk/30-emu.mk) and the fatbin parser are written in parallel; until both exist
# the stand-in is not built, so the rest of the tree keeps building.
ifneq ($(and $(wildcard mk/30-emu.mk),$(wildcard platform/cuda/fatbin.c)),)

# --exclude-libs: nothing from the archives (e.g. the embedded fatbin symbol) is exported.
FAKECUDA_LINK := -shared -Wl,-z,defs -Wl,--as-needed -Wl,--exclude-libs,ALL $(LDFLAGS)

$(FAKECUDA_LIB): $(FAKECUDA_OBJ) $(EMU_LIB_PATH) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(FAKECUDA_LINK) -Wl,-soname,libcuda.so.1 -o $@ $(FAKECUDA_OBJ) \
	  -Wl,--whole-archive $(EMU_LIB_PATH) -Wl,--no-whole-archive $(LIB) $(DEP_LIBS)

$(FAKECUBLAS_LIB): $(FAKECUBLAS_OBJ) $(FAKECUDA_LIB)
	$(CC) $(FAKECUDA_LINK) -Wl,-soname,libcublasLt.so.13 -o $@ $(FAKECUBLAS_OBJ) \
	  -L$(FAKECUDA_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -lm
	@# the same stand-in as libcublasLt.so.12, for the backend's .so.13 -> .so.12 fallback
	$(CC) $(FAKECUDA_LINK) -Wl,-soname,libcublasLt.so.12 -o $(dir $@)libcublasLt.so.12 $(FAKECUBLAS_OBJ) \
	  -L$(FAKECUDA_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -lm

.PHONY: fakecuda
fakecuda: $(FAKECUDA_LIB) $(FAKECUBLAS_LIB)

# Tests: the stand-in's own strictness and cuBLASLt tests, and the host-vs-cuda end-to-end run.
FAKECUDA_TEST_CFLAGS = $(TEST_CFLAGS) -Wno-comment -DTANDEM_FAKECUDA_DIR='"$(abspath $(FAKECUDA_DIR))"' \
                       -DTANDEM_FATBIN_FILE='"$(abspath $(FATBIN))"'

ifneq ($(wildcard test/fakecuda/test_fakecuda.c),)
$(TEST_BIN_DIR)/test_fakecuda: test/fakecuda/test_fakecuda.c test/fakecuda/fakecuda.h $(LIB) \
                               $(FAKECUDA_LIB) $(FAKECUBLAS_LIB) $(TEST_FIXTURES) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(FAKECUDA_TEST_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)
TEST_BINS += $(TEST_BIN_DIR)/test_fakecuda
endif

# The end-to-end test needs the cuda backend, the pool and the ops (written in parallel).
ifneq ($(and $(wildcard platform/cuda/cuda_device.c),$(wildcard runtime/core/pool.c),$(wildcard test/fakecuda/test_cuda_e2e.c)),)
$(TEST_BIN_DIR)/test_cuda_e2e: test/fakecuda/test_cuda_e2e.c $(LIB) $(FAKECUDA_LIB) \
                               $(FAKECUBLAS_LIB) $(TEST_FIXTURES) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(FAKECUDA_TEST_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)
TEST_BINS += $(TEST_BIN_DIR)/test_cuda_e2e
endif

# The rehearsal of tools/gpu_check.sh (the one device call) in its short mode on the stand-in
# (test/check_gpu_check.sh), so the script cannot rot between GPU sessions.
TEST_BINS += $(TEST_BIN_DIR)/check_gpu_check
$(TEST_BIN_DIR)/check_gpu_check: test/check_gpu_check.sh tools/gpu_check.sh $(CLI) $(FAKECUDA_LIB) \
                                 $(FAKECUBLAS_LIB) $(TEST_BIN_DIR)/test_ring@cuda
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec bash %s %s %s %s\n' '$(abspath $<)' '$(abspath .)' '$(abspath $(BUILD))' '$(abspath $(FAKECUDA_DIR))' > $@
	@chmod +x $@

endif
-include $(FAKECUDA_OBJ:.o=.d) $(FAKECUBLAS_OBJ:.o=.d)

# The stand-in NVML: libnvidia-ml.so.1 (test/fakecuda/fc_nvml.c), linked against the stand-in
# libcuda.so.1 like libcublasLt.so.13 (RUNPATH $ORIGIN), so it answers for the same devices.
# test_nvml loads both through TANDEM_NVML / TANDEM_CUDA_DRIVER.
FAKENVML_LIB := $(FAKECUDA_DIR)/libnvidia-ml.so.1
FAKENVML_OBJ := $(BUILD)/obj/test/fakecuda/fc_nvml.o
$(FAKENVML_OBJ): CFLAGS += -Wno-comment
ifneq ($(and $(wildcard mk/30-emu.mk),$(wildcard platform/cuda/fatbin.c)),)
$(FAKENVML_LIB): $(FAKENVML_OBJ) $(FAKECUDA_LIB)
	$(CC) $(FAKECUDA_LINK) -Wl,-soname,libnvidia-ml.so.1 -o $@ $(FAKENVML_OBJ) \
	  -L$(FAKECUDA_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'
fakecuda: $(FAKENVML_LIB)
$(TEST_BIN_DIR)/test_nvml: $(FAKENVML_LIB) $(FAKECUDA_LIB)
endif
-include $(FAKENVML_OBJ:.o=.d)

# Unit tests that honour TANDEM_TEST_BACKEND=cuda run a second time on the stand-in driver
# (and on the real driver under `make test-gpu`, where TANDEM_TEST_REAL_GPU=1 leaves the
# driver variables unset). Any "fakecuda: error" line fails the run.
FAKECUDA_VARIANT_NAMES := $(notdir $(shell grep -l 'TANDEM_TEST_BACKEND' test/unit/test_*.c 2>/dev/null))
FAKECUDA_VARIANTS := $(FAKECUDA_VARIANT_NAMES:%.c=$(TEST_BIN_DIR)/%@cuda)
ifneq ($(wildcard platform/cuda/cuda_device.c),)
TEST_BINS += $(FAKECUDA_VARIANTS)
endif
$(TEST_BIN_DIR)/%@cuda: $(TEST_BIN_DIR)/% $(FAKECUDA_LIB) $(FAKECUBLAS_LIB) $(FAKENVML_LIB) test/run_on_cuda.sh
	@printf '#!/bin/sh\nexec bash %s %s %s\n' '$(abspath test/run_on_cuda.sh)' '$(abspath $(FAKECUDA_DIR))' '$(abspath $<)' > $@
	@chmod +x $@

# test_bf16 once more with the fatbin's bf16 GEMM instead of (stand-in) cuBLASLt, and once with
# the stand-in's heuristic rejecting every epilogue (each runs split: cuBLASLt GEMM + epilogue kernel).
ifneq ($(wildcard test/unit/test_bf16.c),)
TEST_BINS += $(TEST_BIN_DIR)/test_bf16@split-epilogue
$(TEST_BIN_DIR)/test_bf16@split-epilogue: $(TEST_BIN_DIR)/test_bf16 $(FAKECUDA_LIB) $(FAKECUBLAS_LIB)
	@printf '#!/bin/sh\nTANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE=1 exec %s\n' '$(abspath $<)' > $@
	@chmod +x $@
TEST_BINS += $(TEST_BIN_DIR)/test_bf16@fatbin-gemm
$(TEST_BIN_DIR)/test_bf16@fatbin-gemm: $(TEST_BIN_DIR)/test_bf16 $(FAKECUDA_LIB) $(FAKECUBLAS_LIB)
	@printf '#!/bin/sh\nTANDEM_TEST_NO_CUBLASLT=1 exec %s\n' '$(abspath $<)' > $@
	@chmod +x $@
endif
