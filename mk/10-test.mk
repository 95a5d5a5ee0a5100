# Unit tests: every test/unit/test_*.c is one cmocka binary linked against libtandem.a.
# Other parts append their own test binaries (emulator, stand-in driver) to TEST_BINS.
TEST_BIN_DIR := $(BUILD)/test/bin
UNIT_SRC     := $(wildcard test/unit/test_*.c)
UNIT_BINS    := $(UNIT_SRC:test/unit/%.c=$(TEST_BIN_DIR)/%)
TEST_CFLAGS   = $(CFLAGS) -DTANDEM_TEST_BUILD_DIR='"$(abspath $(BUILD))"' \
                -DTANDEM_SOURCE_DIR='"$(abspath .)"'
TEST_LIBS     = -lcmocka $(DEP_LIBS)
TEST_BINS    += $(UNIT_BINS)

# The shared fixtures (test/fixtures.h): one object linked into every cmocka test binary,
# here and in the other mk/*.mk that build tests.
TEST_FIXTURES := $(BUILD)/test/obj/fixtures.o
$(TEST_FIXTURES): test/fixtures.c $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(TEST_BIN_DIR)/test_%: test/unit/test_%.c $(TEST_FIXTURES) $(LIB) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)

.PHONY: deps
deps:
	@bash tools/deps.sh

# Artifact checks (symbol prefix, embedded fatbin, tandem.pc) run as a test "binary".
TEST_BINS += $(BUILD)/test/bin/check_archive
$(BUILD)/test/bin/check_archive: test/check_archive.sh
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nTANDEM_TEST_BUILD_DIR=%s exec bash %s\n' '$(abspath $(BUILD))' '$(abspath $<)' > $@
	@chmod +x $@

# Source rules: the dependency rule of docs/ARCHITECTURE.md (test/check_layering.sh).
TEST_BINS += $(BUILD)/test/bin/check_layering
$(BUILD)/test/bin/check_layering: test/check_layering.sh
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec bash %s %s\n' '$(abspath $<)' '$(abspath .)' > $@
	@chmod +x $@
