# test_host_threads (test/unit) runs every registered kernel's host implementation on the
# kernel test's random cases (test/kernels/cases_*.c), so it links those cases too: this
# explicit rule replaces mk/10-test.mk's pattern rule for that one binary.
HT_CASES_OBJ := $(filter-out %/test_kernels.o,$(KTEST_OBJ))

$(TEST_BIN_DIR)/test_host_threads: test/unit/test_host_threads.c $(HT_CASES_OBJ) $(TEST_FIXTURES) $(LIB) \
                                   $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(HT_CASES_OBJ) $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)
