# make bench: build everything, then run the data-side benchmarks (bench/run.sh), the
# training-step benchmark against PyTorch (bench/train_bench.sh) and, with a GPU, the GPU step
# (bench/gpu_bench.sh). Never part of `make test`.
# `make bench-data` / `make bench-train` run one half. The Python peers (librosa, torch/torchaudio) are installed by the script
# into bench/.venv; figures go to $(BUILD)/bench/ and are written up in docs/BENCHMARKS.md.
BENCH_BIN := $(BUILD)/bench/features_bench

$(BENCH_BIN): bench/features_bench.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(DEP_LIBS)

# make bench-speak: train tiny on 16 and 64 demo utterances and judge free-running synthesis
# (bench/speak_bench.sh; figures in docs/BENCHMARKS-training.md). nice'd: it is CPU-heavy.
SPEAK_BENCH_BIN := $(BUILD)/bench/speak_bench

$(SPEAK_BENCH_BIN): bench/speak_bench.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(DEP_LIBS)

.PHONY: bench bench-build bench-data bench-train bench-speak bench-gpu
bench-build: all $(BENCH_BIN)

bench-data:
	@$(MAKE) --no-print-directory bench-build
	@bash bench/run.sh "$(BUILD)"

bench-train:
	@$(MAKE) --no-print-directory all
	@bash bench/train_bench.sh "$(BUILD)"

# make bench-gpu: the training step on a real GPU against its modelled time and PyTorch on the
# same GPU (bench/gpu_bench.sh; says SKIPPED where no CUDA device is found).
bench-gpu:
	@$(MAKE) --no-print-directory all
	@bash bench/gpu_bench.sh "$(BUILD)"

bench: bench-data bench-train bench-gpu

bench-speak:
	@$(MAKE) --no-print-directory all $(SPEAK_BENCH_BIN)
	@nice bash bench/speak_bench.sh "$(BUILD)"
