# Fuzz targets for the parsers (DESIGN.md §9.4): test/fuzz/fuzz_<name>.c, each a libFuzzer
# LLVMFuzzerTestOneInput, with a seed corpus in test/fuzz/corpus/<name>/.
#
#   make test        replays every target deterministically (replay_main.c: the corpus plus 300
#                    seeded mutations per file), one test binary per target: build/test/bin/fuzz_<name>
#   make fuzz        coverage-guided fuzzing with clang's libFuzzer + ASan + UBSan, each target
#                    for FUZZ_SECONDS (default 60) or FUZZ_RUNS executions (-runs=; empty: no
#                    execution bound), whichever comes first, as one plain process per target;
#                    -j2 runs two targets at a time; FUZZ_TARGETS=<names> picks a subset,
#                    FUZZ_ARGS passes more libFuzzer flags; crashes land in
#                    BUILD/fuzz/artifacts/, logs and summaries in BUILD/fuzz/log/
#   make fuzz-corpus regenerates the binary seeds (text caches, audio, safetensors, fatbins)
FUZZ_NAMES   := $(sort $(patsubst test/fuzz/fuzz_%.c,%,$(wildcard test/fuzz/fuzz_*.c)))
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
FUZZ_ARGS    ?=
FUZZ_CC      ?= clang
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_HDRS    := test/fuzz/fuzz_common.h

# ---- replay binaries for `make test` (normal compiler and flags; sanitizers under SANITIZE=) ----
FUZZ_REPLAY_BINS := $(FUZZ_NAMES:%=$(TEST_BIN_DIR)/fuzz_%)
TEST_BINS += $(FUZZ_REPLAY_BINS)

$(TEST_BIN_DIR)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/replay_main.c $(FUZZ_HDRS) $(TEST_ENV_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -DFUZZ_NAME='"$*"' -DFUZZ_CORPUS='"$(abspath test/fuzz/corpus/$*)"' \
	  -o $@ test/fuzz/replay_main.c $< $(TEST_ENV_OBJ) $(LIB) $(LDFLAGS) $(DEP_LIBS)

# ---- libFuzzer build: the library again, instrumented, with clang ----------------------------
# No fatbin is embedded (none of the targets needs it, and it would pull in the nvcc build).
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# (from CFLAGS: the standard, include paths and the TANDEM_HAVE_* feature switches)
FUZZ_CFLAGS   = $(filter -std=% -I% -D%,$(CFLAGS)) -O1 -g $(WARN) -pthread -fvisibility=hidden
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_LIB     := $(FUZZ_DIR)/libtandem-fuzz.a
FUZZ_BINS    := $(FUZZ_NAMES:%=$(FUZZ_DIR)/bin/fuzz_%)
# Debian 12's package names; another release: the libclang-rt-<version>-dev of its clang
FUZZ_APT     := apt-get install clang libclang-rt-14-dev

# clang with libFuzzer's runtime? (Debian ships it in libclang-rt-<version>-dev.)
$(FUZZ_DIR)/probe.ok:
	@mkdir -p $(dir $@)
	@printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > $(FUZZ_DIR)/probe.c
	@if $(FUZZ_CC) -fsanitize=fuzzer,address,undefined $(FUZZ_DIR)/probe.c -o $(FUZZ_DIR)/probe >$(FUZZ_DIR)/probe.log 2>&1; then \
	  touch $@; \
	else \
	  echo "make fuzz: '$(FUZZ_CC) -fsanitize=fuzzer,address,undefined' does not link (see $(FUZZ_DIR)/probe.log)."; \
	  echo "           Install clang and libFuzzer's runtime:  sudo $(FUZZ_APT)"; \
	  echo "           (or point FUZZ_CC at a clang that has it). The replay in 'make test' needs neither."; \
	  exit 1; \
	fi

$(FUZZ_DIR)/obj/%.o: %.c | $(FUZZ_DIR)/probe.ok
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_DIR)/obj/fatbin_embed.o: platform/cuda/fatbin_embed.S
	@mkdir -p $(dir $@)
	@: > $(FUZZ_DIR)/empty.fatbin
	$(FUZZ_CC) -c -DTANDEM_FATBIN_PATH='"$(abspath $(FUZZ_DIR)/empty.fatbin)"' $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ) $(FUZZ_DIR)/obj/fatbin_embed.o
	@rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_DIR)/bin/fuzz_%: test/fuzz/fuzz_%.c $(FUZZ_HDRS) $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) $(DEP_LIBS)

.PHONY: fuzz fuzz-build fuzz-corpus
fuzz-build: $(FUZZ_DIR)/probe.ok $(FUZZ_BINS)

# One plain libFuzzer run per target (test/fuzz/run_target.sh; no -fork/-jobs): new inputs go to
# BUILD/fuzz/work/<name> (the seed corpus stays untouched), crashes/leaks/timeouts to
# BUILD/fuzz/artifacts/<name>-*, the log to BUILD/fuzz/log/<name>.log. Each run stops after
# FUZZ_SECONDS or FUZZ_RUNS executions, whichever comes first; `make -j2 fuzz` runs two targets
# at a time. Each target's summary line is kept in BUILD/fuzz/log/<name>.summary; fails if any
# target found something.
FUZZ_RUN_STAMPS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/log/%.summary)
.PHONY: $(FUZZ_RUN_STAMPS)
$(FUZZ_RUN_STAMPS): $(FUZZ_DIR)/log/%.summary: fuzz-build
	@mkdir -p $(dir $@)
	@echo "=== fuzz_$*: $(FUZZ_SECONDS) s$(if $(FUZZ_RUNS), or $(FUZZ_RUNS) executions) (log: $(FUZZ_DIR)/log/$*.log)"
	@sh test/fuzz/run_target.sh $* $(FUZZ_DIR)/bin/fuzz_$* test/fuzz/corpus/$* $(FUZZ_DIR)/work/$* \
	  $(FUZZ_DIR)/artifacts $(FUZZ_DIR)/log/$*.log $(FUZZ_SECONDS) '$(FUZZ_RUNS)' $(FUZZ_ARGS) >$@.tmp; \
	  rc=$$?; cat $@.tmp; mv $@.tmp $@; \
	  if [ $$rc -ne 0 ]; then echo "fuzz_$*: FAILED (inputs in $(FUZZ_DIR)/artifacts/; replay one with $(TEST_BIN_DIR)/fuzz_$* FILE)"; exit 1; fi

fuzz: $(FUZZ_RUN_STAMPS)
	@cat $(FUZZ_RUN_STAMPS) | grep '^fuzz_'
	@echo "fuzz: all targets ran $(FUZZ_SECONDS) s$(if $(FUZZ_RUNS), or $(FUZZ_RUNS) executions) without a failure"

$(FUZZ_DIR)/gen_corpus: test/fuzz/gen_corpus.c $(TEST_FIXTURES) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_FIXTURES) $(LIB) $(LDFLAGS) $(TEST_LIBS)

fuzz-corpus: $(FUZZ_DIR)/gen_corpus
	$(FUZZ_DIR)/gen_corpus test/fuzz/corpus
ifeq ($(HAVE_NVCC),1)
	$(NVCC) -fatbin --no-compress -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 \
	  -o test/fuzz/corpus/fatbin/sm80-compute80.fatbin test/fuzz/seed_kernels.cu
	$(NVCC) -fatbin -gencode arch=compute_86,code=sm_86 -o test/fuzz/corpus/fatbin/sm86-default.fatbin \
	  test/fuzz/seed_kernels.cu
endif

-include $(FUZZ_LIB_OBJ:.o=.d)
