# mk/45-nccl.mk — NCCL (platform/cuda/nccl.c, dlopen'ed at run time) and its test-only stand-in.
#
# * The build-time check of platform/cuda/nccl_api.h against an installed nccl.h:
#   $(BUILD)/obj/platform/cuda/check/nccl_api.o (part of `all`, never of libtandem.a), compiled
#   when NCCL_H exists (the CUDA toolkit here ships it in /usr/local/include; nccl.h includes
#   cuda_runtime.h, so $(CUDA_HOME)/include is on the path). Without nccl.h: skipped, with a note.
# * The stand-in libnccl.so.2 (test/fakecuda/fc_nccl.c) beside the stand-in driver, linked
#   against it (RUNPATH $ORIGIN) so both share one state, and the tests that load it.

NCCL_H ?= $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/local/include/nccl.h /usr/include/nccl.h))
NCCL_CHECK_OBJ := $(BUILD)/obj/platform/cuda/check/nccl_api.o
ifneq ($(NCCL_H),)
all: $(NCCL_CHECK_OBJ)
test-build: $(NCCL_CHECK_OBJ)
$(NCCL_CHECK_OBJ): platform/cuda/check/nccl_api.c platform/cuda/nccl_api.h $(NCCL_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -isystem $(dir $(NCCL_H)) -isystem $(CUDA_HOME)/include -c $< -o $@
else
$(info NOTE: no nccl.h found (NCCL_H): platform/cuda/nccl_api.h is not checked against one)
endif

FAKENCCL_LIB := $(FAKECUDA_DIR)/libnccl.so.2
FAKENCCL_OBJ := $(BUILD)/obj/test/fakecuda/fc_nccl.o
$(FAKENCCL_OBJ): CFLAGS += -Wno-comment
ifneq ($(and $(wildcard mk/30-emu.mk),$(wildcard platform/cuda/fatbin.c)),)
$(FAKENCCL_LIB): $(FAKENCCL_OBJ) $(FAKECUDA_LIB)
	$(CC) $(FAKECUDA_LINK) -Wl,-soname,libnccl.so.2 -o $@ $(FAKENCCL_OBJ) \
	  -L$(FAKECUDA_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -lrt -pthread
fakecuda: $(FAKENCCL_LIB)

$(TEST_BIN_DIR)/test_nccl: test/fakecuda/test_nccl.c $(LIB) $(FAKECUDA_LIB) $(FAKENCCL_LIB) \
                           $(TEST_FIXTURES) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(FAKECUDA_TEST_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)
TEST_BINS += $(TEST_BIN_DIR)/test_nccl
endif
-include $(FAKENCCL_OBJ:.o=.d)
