# make demo: install what is missing, build, make the demo corpus, train the tiny model on
# whatever devices exist, write checkpoint, metrics, figures and a synthesized WAV, and print
# where they are with a summary (tools/demo.sh; DEMO_STEPS, DEMO_COUNT override its sizes).
DEMO_DIR ?= $(BUILD)/demo
.PHONY: demo
demo: deps
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory all && \
	bash tools/demo.sh "$(BUILD)" "$(DEMO_DIR)" && \
	echo "make demo: $$(( $$(date +%s) - start )) s in all (build included)"

# make test-gpu: the same suite against the real driver on a machine with a GPU.
.PHONY: test-gpu
test-gpu: deps
	@$(MAKE) --no-print-directory test-build
	@$(BUILD)/tandem diagnose
	@TANDEM_TEST_REAL_GPU=1 bash test/run.sh $(TEST_BINS)
