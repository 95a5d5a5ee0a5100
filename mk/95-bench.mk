# make bench: build everything, then run the data-side benchmarks (bench/run.sh) and the
# training-step benchmark against PyTorch (bench/train_bench.sh). Never part of `make test`.
# `make bench-data` / `make bench-train` run one half. The Python peers (librosa, torch/torchaudio) are installed by the script
# into bench/.venv; figures go to $(BUILD)/bench/ and are written up in docs/BENCHMARKS.md.
BENCH_BIN := $(BUILD)/bench/features_bench

$(BENCH_BIN): bench/features_bench.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(DEP_LIBS)

.PHONY: bench bench-build bench-data bench-train
bench-build: all $(BENCH_BIN)

bench-data:
	@$(MAKE) --no-print-directory bench-build
	@bash bench/run.sh "$(BUILD)"

bench-train:
	@$(MAKE) --no-print-directory all
	@bash bench/train_bench.sh "$(BUILD)"

bench: bench-data bench-train
