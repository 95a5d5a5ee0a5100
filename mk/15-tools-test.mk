# Unit tests of tools/ sources (not part of libtandem.a): each compiles its tools/*.c in (see the
# test's #include), so the source is a prerequisite here besides the generic rule's.
$(TEST_BIN_DIR)/test_progress: tools/progress.c tools/progress.h
# Runs the built command (tandem profile, tandem monitor, tandem train's verdict lines).
$(TEST_BIN_DIR)/test_profile_monitor: $(CLI)
