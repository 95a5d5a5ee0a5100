# The embedding examples (docs/example/*.c: embed.c — GEMM and a kernel; train_embed.c — an
# appliance that trains), built the way an embedding program would be:
# -I to the public headers only (runtime/tandem*.h), and linked with exactly what tandem.pc says —
# `pkg-config --libs` for the archive itself (libdir pointed at the build directory instead of
# the install prefix) plus the .pc's Libs.private, the libraries the static archive needs.
# (`pkg-config --static` would also expand the Libs.private of every dependency's own .pc,
# asking for static-only libraries such as libmp3lame that a shared link does not need.)
# `make test` runs each through a wrapper that reports "[       OK ] example_<name>".
EXAMPLES     := embed train_embed
EXAMPLE_BINS := $(EXAMPLES:%=$(BUILD)/example/%)
EXAMPLE_RUNS := $(EXAMPLES:%=$(BUILD)/test/bin/example_%)

.PHONY: example
example: $(EXAMPLE_BINS)

$(BUILD)/example/%: docs/example/%.c $(wildcard runtime/tandem*.h) $(LIB) $(PCFILE)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) $(SAN_FLAGS) -Iruntime -o $@ $< $(LDFLAGS) \
	  $$(PKG_CONFIG_PATH=$(abspath $(BUILD)) pkg-config --define-variable=libdir=$(abspath $(BUILD)) --libs tandem) \
	  $$(sed -n 's/^Libs.private: *//p' $(PCFILE))

TEST_BINS += $(EXAMPLE_RUNS)
$(BUILD)/test/bin/example_%: $(BUILD)/example/%
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\n"%s" || { echo "[  FAILED  ] example_%s (exit $$?)"; exit 1; }\necho "[       OK ] example_%s"\n' '$(abspath $<)' '$*' '$*' > $@
	@chmod +x $@
