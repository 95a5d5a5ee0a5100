# The kernel emulator (test-only, never in libtandem.a): kernels/*.cu compiled as C with
# -DTANDEM_EMU plus the emulator runtime (test/emu/emu_*.c), in one archive built with -fPIC
# (from CFLAGS) so the stand-in driver can link it into a shared object.
# Tests: test_emu_self (the emulator against its own planted kernels) and test_kernels
# (every registered kernel, emulated vs its host implementation, and the fatbin's entry set).
EMU_DIR     := $(BUILD)/test/emu
EMU_LIB     := $(EMU_DIR)/libtandem_emu.a
EMU_CFLAGS   = $(CFLAGS) -DTANDEM_EMU
EMU_RT_OBJ  := $(patsubst test/emu/%.c,$(EMU_DIR)/rt/%.o,$(wildcard test/emu/emu_*.c))
EMU_K_OBJ   := $(patsubst kernels/%.cu,$(EMU_DIR)/kernels/%.o,$(CU_SRC))
EMU_SYSLIBS := -lm -lpthread

$(EMU_DIR)/rt/%.o: test/emu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -MMD -MP -c $< -o $@

# The very same kernel sources nvcc compiles, as C: the dialect's TANDEM_EMU half.
$(EMU_DIR)/kernels/%.o: kernels/%.cu
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -MMD -MP -c -x c $< -o $@

$(EMU_LIB): $(EMU_RT_OBJ) $(EMU_K_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# ---- emulator self-test: planted kernels (not in the registry, not in the fatbin) ----------
$(EMU_DIR)/planted.o: test/emu/planted.cu
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -MMD -MP -c -x c $< -o $@

$(EMU_DIR)/test_emu_self.o: test/emu/test_emu_self.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(TEST_BIN_DIR)/test_emu_self: $(EMU_DIR)/test_emu_self.o $(EMU_DIR)/planted.o $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(EMU_DIR)/test_emu_self.o $(EMU_DIR)/planted.o $(EMU_LIB) \
	  -lcmocka $(EMU_SYSLIBS)

# ---- registry-enumerating kernel test: test_kernels.c + every cases_<group>.c --------------
KTEST_OBJ := $(patsubst test/kernels/%.c,$(BUILD)/test/kernels/%.o,\
               test/kernels/test_kernels.c $(wildcard test/kernels/cases_*.c))

$(BUILD)/test/kernels/%.o: test/kernels/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(TEST_BIN_DIR)/test_kernels: $(KTEST_OBJ) $(TEST_FIXTURES) $(EMU_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(KTEST_OBJ) $(TEST_FIXTURES) $(EMU_LIB) $(LIB) $(TEST_LIBS)

TEST_BINS += $(TEST_BIN_DIR)/test_emu_self $(TEST_BIN_DIR)/test_kernels

-include $(EMU_RT_OBJ:.o=.d) $(EMU_K_OBJ:.o=.d) $(EMU_DIR)/planted.d $(EMU_DIR)/test_emu_self.d \
         $(KTEST_OBJ:.o=.d)
