# Unit tests of tools/ sources (not part of libtandem.a): each compiles its tools/*.c in (see the
# test's #include), so the source is a prerequisite here besides the generic rule's.
$(TEST_BIN_DIR)/test_progress: tools/progress.c tools/progress.h
# Runs the built command (tandem profile, tandem monitor, tandem train's verdict lines).
$(TEST_BIN_DIR)/test_profile_monitor: $(CLI)

# README's exit-code table and the first messages a user meets (test/check_exit_codes.sh).
TEST_BINS += $(TEST_BIN_DIR)/check_exit_codes
$(TEST_BIN_DIR)/check_exit_codes: test/check_exit_codes.sh $(CLI)
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec bash %s %s %s\n' '$(abspath $<)' '$(abspath .)' '$(abspath $(BUILD))' > $@
	@chmod +x $@
