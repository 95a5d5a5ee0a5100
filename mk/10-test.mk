# Unit tests: every test/unit/test_*.c is one cmocka binary linked against libtandem.a.
# Other parts append their own test binaries (emulator, stand-in driver) to TEST_BINS.
TEST_BIN_DIR := $(BUILD)/test/bin
UNIT_SRC     := $(wildcard test/unit/test_*.c)
UNIT_BINS    := $(UNIT_SRC:test/unit/%.c=$(TEST_BIN_DIR)/%)
TEST_CFLAGS   = $(CFLAGS) -DTANDEM_TEST_BUILD_DIR='"$(abspath $(BUILD))"' \
                -DTANDEM_SOURCE_DIR='"$(abspath .)"'
TEST_LIBS     = -lcmocka $(DEP_LIBS)
TEST_BINS    += $(UNIT_BINS)
# Linked into every test binary that links $(LIB): the TANDEM_* environment becomes the runtime
# options before main, as in the CLI (the library itself reads no environment).
TEST_ENV_OBJ := $(BUILD)/obj/tools/env_options.o $(BUILD)/obj/test/env_options_ctor.o

# The shared fixtures (test/fixtures.h): one object linked into every cmocka test binary,
# here and in the other mk/*.mk that build tests.
# (TEST_FIXTURES also carries the environment → runtime options object, TEST_ENV_OBJ.)
TEST_FIXTURES_OBJ := $(BUILD)/test/obj/fixtures.o
TEST_FIXTURES := $(TEST_FIXTURES_OBJ) $(TEST_ENV_OBJ)
$(TEST_FIXTURES_OBJ): test/fixtures.c $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(TEST_BIN_DIR)/test_%: test/unit/test_%.c $(TEST_FIXTURES) $(LIB) $(wildcard test/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)

-include $(TEST_ENV_OBJ:.o=.d)

.PHONY: deps
deps:
	@bash tools/deps.sh

# Artifact checks (symbol prefix, embedded fatbin, tandem.pc) run as a test "binary".
TEST_BINS += $(BUILD)/test/bin/check_archive
$(BUILD)/test/bin/check_archive: test/check_archive.sh README.md
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nTANDEM_TEST_BUILD_DIR=%s TANDEM_TEST_HOST_BLAS=%s TANDEM_TEST_HOST_FFT=%s TANDEM_TEST_MPI=%s exec bash %s\n' \
	  '$(abspath $(BUILD))' '$(HOST_BLAS)' '$(HOST_FFT)' '$(MPI)' '$(abspath $<)' > $@
	@chmod +x $@

# The commands shown in README.md and docs/*.md, run as written (test/docs_commands.sh; its
# allow-list names the slow ones, which make demo runs instead).
TEST_BINS += $(BUILD)/test/bin/check_docs_commands
$(BUILD)/test/bin/check_docs_commands: test/docs_commands.sh $(BUILD)/tandem
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec bash %s %s %s %s\n' '$(abspath $<)' '$(abspath .)' '$(abspath $(BUILD))' '$(if $(SANITIZE),sanitized,plain)' > $@
	@chmod +x $@

# Source rules, each a script run from the repository root: the dependency rule of
# docs/ARCHITECTURE.md (check_layering.sh), no function in runtime/ over 80 lines
# (check_function_length.sh + fnlen.awk), library code neither prints nor reads the
# environment (check_sources.sh), only the device API of runtime/core calls the backend table
# (check_device_api.sh).
SOURCE_CHECKS := layering function_length sources device_api
TEST_BINS += $(SOURCE_CHECKS:%=$(BUILD)/test/bin/check_%)
$(BUILD)/test/bin/check_function_length: test/fnlen.awk
$(SOURCE_CHECKS:%=$(BUILD)/test/bin/check_%): $(BUILD)/test/bin/check_%: test/check_%.sh
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec bash %s %s\n' '$(abspath $<)' '$(abspath .)' > $@
	@chmod +x $@
