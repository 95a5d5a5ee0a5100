# Tandem — top-level build. Target-specific settings live in toolchain.mk.
include toolchain.mk

BUILD   ?= build
VERSION := 0.1.0

ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
override BUILD := $(BUILD)/san
endif

INCLUDES := -I. -Iruntime
CFLAGS   += $(CSTD) $(OPT) $(WARN) $(SAN_FLAGS) $(INCLUDES) -fPIC -pthread -fvisibility=hidden
LDFLAGS  += $(SAN_FLAGS) -pthread

ifeq ($(HOST_BLAS),openblas)
CFLAGS   += -DTANDEM_HAVE_CBLAS=1 $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
endif

ifeq ($(HOST_FFT),fftw)
CFLAGS   += -DTANDEM_HAVE_FFTW=1
FFT_LIBS := -lfftw3
endif

# Libraries the archive needs; also written into tandem.pc's Libs (a static-only library: every
# program that links it needs them, so they are not Libs.private).
DEP_LIBS := $(BLAS_LIBS) $(FFT_LIBS) -lyaml -lsndfile -lsamplerate -lpng -ldl -lm -lpthread

# ---- library ---------------------------------------------------------------------------
LIB_SRC  := $(sort $(wildcard runtime/*/*.c platform/*/*.c kernels/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CU_SRC   := $(wildcard kernels/*.cu)

HAVE_NVCC := $(shell test -x "$(NVCC)" && echo 1 || (command -v $(NVCC) >/dev/null 2>&1 && echo 1))
ifeq ($(HAVE_NVCC),1)
FATBIN_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                  -gencode arch=compute_$(CUDA_PTX_ARCH),code=compute_$(CUDA_PTX_ARCH)
FATBIN := $(BUILD)/tandem.fatbin
else
FATBIN := $(BUILD)/tandem.fatbin
$(warning NOTE: nvcc not found at '$(NVCC)': building host-only (empty fatbin, CUDA backend disabled). Set CUDA_HOME or NVCC to build the fatbin.)
endif

LIB      := $(BUILD)/libtandem.a
CLI      := $(BUILD)/tandem
PCFILE   := $(BUILD)/tandem.pc

.PHONY: all
all: $(LIB) $(FATBIN) $(CLI) $(PCFILE)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# AdamW's host loop vectorises only without sqrtf's errno store; the bits are the same (sqrt is
# correctly rounded either way) and nothing in the file reads errno.
$(BUILD)/obj/kernels/train_host.o: CFLAGS += -fno-math-errno

# The fatbin: every kernels/*.cu in one translation unit so one module holds all entry points.
# Rewritten only when the set of .cu files changes, so its timestamp tracks additions/removals.
$(BUILD)/gen/kernels_all.cu: FORCE
	@mkdir -p $(dir $@)
	@printf '#include "%s"\n' $(abspath $(CU_SRC)) > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
.PHONY: FORCE
FORCE:

ifeq ($(HAVE_NVCC),1)
$(FATBIN): $(BUILD)/gen/kernels_all.cu $(CU_SRC) $(wildcard kernels/*.h)
	$(NVCC) -fatbin $(NVCC_FLAGS) -I. $(FATBIN_GENCODE) -o $@ $<
else
$(FATBIN):
	@mkdir -p $(dir $@)
	@: > $@
endif

# The kernel code table of the cost model (runtime/run/kernel_code.h): registers, shared memory and
# the innermost loops' instruction mix of every fatbin kernel, read from the fatbin with cuobjdump
# (CUDA toolkit, or the PyPI wheels nvidia-cuda-cuobjdump + nvidia-cuda-nvdisasm); without it, or
# when it fails, the committed runtime/run/kernel_code.tsv. `make kernel-code-table` refreshes that.
CUOBJDUMP ?= $(firstword $(wildcard $(CUDA_HOME)/bin/cuobjdump) $(shell command -v cuobjdump 2>/dev/null))
KCODE_TSV := $(BUILD)/gen/kernel_code.tsv
ifneq ($(and $(CUOBJDUMP),$(filter 1,$(HAVE_NVCC))),)
$(KCODE_TSV): $(FATBIN) tools/sass_table.sh tools/sass_table.awk runtime/run/kernel_code.tsv
	@mkdir -p $(dir $@)
	@if bash tools/sass_table.sh $(CUOBJDUMP) $(FATBIN) > $@.tmp; then mv $@.tmp $@; echo "kernel code table: from $(FATBIN) ($(CUOBJDUMP))"; \
	 else rm -f $@.tmp; echo "NOTE: $(CUOBJDUMP) could not read $(FATBIN): the cost model uses the committed runtime/run/kernel_code.tsv"; \
	      cp runtime/run/kernel_code.tsv $@; fi
else
$(KCODE_TSV): runtime/run/kernel_code.tsv
	@mkdir -p $(dir $@)
	cp $< $@
endif
$(BUILD)/gen/kernel_code_table.c: $(KCODE_TSV) tools/kernel_code_c.awk
	@src='runtime/run/kernel_code.tsv'; cmp -s $< runtime/run/kernel_code.tsv || src='the fatbin (cuobjdump)'; \
	 awk -v SOURCE="$$src" -f tools/kernel_code_c.awk $< > $@
$(BUILD)/obj/gen/kernel_code_table.o: $(BUILD)/gen/kernel_code_table.c runtime/run/kernel_code.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
LIB_OBJ += $(BUILD)/obj/gen/kernel_code_table.o

.PHONY: kernel-code-table
kernel-code-table: $(KCODE_TSV)
	cp $(KCODE_TSV) runtime/run/kernel_code.tsv

# The fatbin's bytes embedded in the archive (tandem_fatbin_embedded / _size).
$(BUILD)/obj/fatbin_embed.o: $(FATBIN) platform/cuda/fatbin_embed.S
	@mkdir -p $(dir $@)
	$(CC) -c -DTANDEM_FATBIN_PATH='"$(abspath $(FATBIN))"' platform/cuda/fatbin_embed.S -o $@

$(LIB): $(LIB_OBJ) $(BUILD)/obj/fatbin_embed.o
	@rm -f $@
	$(AR) rcs $@ $^

# ---- CLI -------------------------------------------------------------------------------
CLI_SRC := $(wildcard tools/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
$(CLI): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(DEP_LIBS)

$(PCFILE): Makefile toolchain.mk
	@mkdir -p $(dir $@)
	@printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\ndatadir=$${prefix}/share/tandem\n\nName: tandem\nDescription: Embeddable static runtime that trains a TTS acoustic model on two devices\nVersion: %s\nCflags: -I$${includedir}\nLibs: -L$${libdir} -ltandem %s\n' \
	  '$(PREFIX)' '$(VERSION)' '$(DEP_LIBS)' > $@

# ---- parts with their own rules (tests, emulator, stand-in driver, demo, bench) --------
include $(sort $(wildcard mk/*.mk))

# After every mk file has added its binaries to TEST_BINS (prerequisites expand immediately).
.PHONY: test test-build
test-build: all $(TEST_BINS)

# `make test` = deps, build, every test binary; ends with "N passed, M failed".
test: deps
	@$(MAKE) --no-print-directory test-build
	@bash test/run.sh $(TEST_BINS)

# The test binaries, one per line (for running a subset by hand).
.PHONY: list-tests
list-tests:
	@printf '%s\n' $(TEST_BINS)

.PHONY: install clean config-info
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	           $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/tandem
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 runtime/tandem*.h $(DESTDIR)$(PREFIX)/include/
	sed 's|^prefix=.*|prefix=$(PREFIX)|' $(PCFILE) > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tandem.pc
	install -m 644 $(FATBIN) $(DESTDIR)$(PREFIX)/share/tandem/
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(BUILD)

config-info:
	@echo "CC            = $(CC)"
	@echo "AR            = $(AR)"
	@echo "CROSS_COMPILE = $(CROSS_COMPILE)"
	@echo "CFLAGS        = $(CFLAGS)"
	@echo "LDFLAGS       = $(LDFLAGS)"
	@echo "SANITIZE      = $(SANITIZE)"
	@echo "HOST_BLAS     = $(HOST_BLAS)"
	@echo "HOST_FFT      = $(HOST_FFT)"
	@echo "DEP_LIBS      = $(DEP_LIBS)"
	@echo "CUDA_HOME     = $(CUDA_HOME)"
	@echo "NVCC          = $(NVCC) ($(if $(HAVE_NVCC),found,NOT found: host-only build))"
	@echo "CUDA_ARCHS    = $(CUDA_ARCHS) (+ compute_$(CUDA_PTX_ARCH) PTX)"
	@echo "NVCC_FLAGS    = $(NVCC_FLAGS)"
	@echo "BUILD         = $(BUILD)"
	@echo "PREFIX        = $(PREFIX)"

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
