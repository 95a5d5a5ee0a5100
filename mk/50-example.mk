# The embedding examples (docs/example/*.c: embed.c — GEMM and a kernel; train_embed.c — an
# appliance that trains), built the way README's "Embedding" says: `make install` into a scratch
# prefix, then `cc $(pkg-config --cflags tandem) X.c $(pkg-config --libs tandem)` against it —
# the installed headers and the installed tandem.pc, nothing from the source tree.
# `make test` runs each through a wrapper that reports "[       OK ] example_<name>".
EXAMPLES     := embed train_embed
EXAMPLE_BINS := $(EXAMPLES:%=$(BUILD)/example/%)
EXAMPLE_RUNS := $(EXAMPLES:%=$(BUILD)/test/bin/example_%)
EXAMPLE_PREFIX := $(abspath $(BUILD)/test/prefix)
EXAMPLE_PC   := $(EXAMPLE_PREFIX)/lib/pkgconfig/tandem.pc

.PHONY: example
example: $(EXAMPLE_BINS)

# (the command line's variables, SANITIZE and BUILD included, reach the inner make)
$(EXAMPLE_PC): $(LIB) $(PCFILE) $(CLI) $(FATBIN) $(wildcard runtime/tandem*.h)
	@rm -rf $(EXAMPLE_PREFIX)
	@$(MAKE) --no-print-directory -s install PREFIX=$(EXAMPLE_PREFIX) >/dev/null

$(BUILD)/example/%: docs/example/%.c $(EXAMPLE_PC)
	@mkdir -p $(dir $@)
	PKG_CONFIG_PATH=$(EXAMPLE_PREFIX)/lib/pkgconfig; export PKG_CONFIG_PATH; \
	  $(CC) $(SAN_FLAGS) $(WARN) $$(pkg-config --cflags tandem) $< $$(pkg-config --libs tandem) -o $@

TEST_BINS += $(EXAMPLE_RUNS)
$(BUILD)/test/bin/example_%: $(BUILD)/example/%
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\n"%s" || { echo "[  FAILED  ] example_%s (exit $$?)"; exit 1; }\necho "[       OK ] example_%s"\n' '$(abspath $<)' '$*' '$*' > $@
	@chmod +x $@
