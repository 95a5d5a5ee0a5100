# make demo: install what is missing, build, make the demo corpus, run what exists of the
# pipeline on whatever devices exist, and say where the outputs are.
DEMO_DIR ?= $(BUILD)/demo
.PHONY: demo
demo: deps
	@$(MAKE) --no-print-directory all
	@bash tools/demo.sh "$(BUILD)" "$(DEMO_DIR)"

# make test-gpu: the same suite against the real driver on a machine with a GPU.
.PHONY: test-gpu
test-gpu: deps
	@$(MAKE) --no-print-directory test-build
	@$(BUILD)/tandem diagnose
	@TANDEM_TEST_REAL_GPU=1 bash test/run.sh $(TEST_BINS)
