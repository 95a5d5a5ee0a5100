# The embedding example (docs/example/embed.c), built the way an embedding program would be:
# -I to tandem.h only, and linked with exactly what tandem.pc says — `pkg-config --libs`
# for the archive itself (libdir pointed at the build directory instead of the install
# prefix) plus the .pc's Libs.private, the libraries the static archive needs.
# (`pkg-config --static` would also expand the Libs.private of every dependency's own .pc,
# asking for static-only libraries such as libmp3lame that a shared link does not need.)
# `make test` runs it through a wrapper that reports "[       OK ] example_embed".
EXAMPLE     := $(BUILD)/example/embed
EXAMPLE_RUN := $(BUILD)/test/bin/example_embed

.PHONY: example
example: $(EXAMPLE)

$(EXAMPLE): docs/example/embed.c runtime/tandem.h $(LIB) $(PCFILE)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) $(SAN_FLAGS) -Iruntime -o $@ $< $(LDFLAGS) \
	  $$(PKG_CONFIG_PATH=$(abspath $(BUILD)) pkg-config --define-variable=libdir=$(abspath $(BUILD)) --libs tandem) \
	  $$(sed -n 's/^Libs.private: *//p' $(PCFILE))

TEST_BINS += $(EXAMPLE_RUN)
$(EXAMPLE_RUN): $(EXAMPLE)
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\n"%s" || { echo "[  FAILED  ] example_embed (exit $$?)"; exit 1; }\necho "[       OK ] example_embed"\n' '$(abspath $(EXAMPLE))' > $@
	@chmod +x $@
