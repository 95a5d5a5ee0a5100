# make bench: build everything, then run the data-side benchmarks (bench/run.sh). Never part
# of `make test`. The Python peers (librosa, torch/torchaudio) are installed by the script
# into bench/.venv; figures go to $(BUILD)/bench/ and are written up in docs/BENCHMARKS.md.
BENCH_BIN := $(BUILD)/bench/features_bench

$(BENCH_BIN): bench/features_bench.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(DEP_LIBS)

.PHONY: bench bench-build
bench-build: all $(BENCH_BIN)

bench:
	@$(MAKE) --no-print-directory bench-build
	@bash bench/run.sh "$(BUILD)"
