/* fc_module.c — stand-in driver: modules from the real fatbin bytes, and kernel launches
 * through the emulator.
 *
 * cuModuleLoadData checks the fatbin header, parses it (platform/cuda/fatbin.c) and requires code
 * the configured architecture can run (SASS of the same major and minor <= the device's, or
 * PTX <= the device's). Entry points are the fatbin's; each maps to a registry kernel that the
 * emulator runs.
 *
 * cuLaunchKernel checks what a driver can know: every registry kernel takes exactly one
 * parameter, its args struct (tandem_kernel_table[id].args_size bytes). Through kernelParams
 * a driver cannot see how many pointers the caller passed nor what they point at, so that path
 * checks kernelParams[0] only; the `extra` path (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE) carries
 * the size, and it must equal args_size exactly. Grid/block limits are those of sm_80..sm_90.
 * Per-block resources come from the cubin the device would run (the SASS image for its
 * architecture, as a real driver picks it): registers per thread, static shared memory and
 * __launch_bounds__ (platform/cuda/fatbin.c reads them). A launch is refused as a GPU refuses
 * it: more threads than the launch bounds, or registers for the block's warps (allocated per
 * warp in units of 256) beyond 64K, is CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; dynamic shared
 * memory above the function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB minus the
 * static part unless raised with cuFuncSetAttribute, at most the device's opt-in limit minus
 * the static part) is CUDA_ERROR_INVALID_VALUE. cuModuleLoadData refuses a fatbin none of whose
 * images the configured driver version can load (SASS from a newer major toolkit, PTX of an
 * ISA newer than the driver): CUDA_ERROR_UNSUPPORTED_PTX_VERSION. Pointer-sized words of the args struct that point into another device's memory
 * without peer access are reported before the launch. The launch is then queued on its stream
 * (fc_queue.c) with the ranges the kernel reads and writes (fc_access.c); a fault the emulator
 * detects when it runs makes the context's state sticky, as a GPU fault does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/emu/emu.h"
#include "test/emu/emu_internal.h"
#include "test/fakecuda/fakecuda.h"
#include "platform/cuda/fatbin.h"
#include "kernels/registry.h"

#define FC_FATBIN_MAGIC 0xBA55ED50u
#define FC_LAUNCH_PARAM_END ((void *)0)
#define FC_LAUNCH_PARAM_BUFFER_POINTER ((void *)1)
#define FC_LAUNCH_PARAM_BUFFER_SIZE ((void *)2)
struct fc_module {
    fc_obj h;
    tandem_fatbin_summary sum;
    char archs[256];
    /* per entry point: its resources in the cubin the device runs (have[i] 0: it would JIT) */
    tandem_fatbin_kernel_attrs attrs[TANDEM_FATBIN_MAX_ENTRIES];
    unsigned char have[TANDEM_FATBIN_MAX_ENTRIES];
};

/* Whether a driver of version drv can load image im (built by toolkit tk). */
static int image_loads(const tandem_fatbin_image *im, int tk, int drv) {
    if (im->kind == TANDEM_FATBIN_PTX) return tandem_fatbin_ptx_isa_cuda(im->version_major, im->version_minor) <= drv;
    return tk / 1000 <= drv / 1000; /* SASS: minor version compatibility within a major */
}

/* Drops the images the configured driver cannot load; nonzero when one was dropped. */
static int drop_too_new(tandem_fatbin_summary *s) {
    int n = 0, dropped = 0;
    for (int i = 0; i < s->image_count; i++) {
        if (image_loads(&s->images[i], s->toolkit_version, fc_cfg.driver_version))
            s->images[n++] = s->images[i];
        else
            dropped = 1;
    }
    s->image_count = n;
    return dropped;
}

FC_EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image) {
    const char *call = "cuModuleLoadData";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!out || !image)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "module or image is NULL"));
    /* The image has no length argument: a fatbin's header says how long it is. */
    const unsigned char *b = image;
    uint32_t magic;
    uint16_t hdr_size;
    uint64_t body;
    memcpy(&magic, b, 4);
    if (magic != FC_FATBIN_MAGIC)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_IMAGE, call,
                                "image starts with 0x%08x, not the fatbin magic 0x%08x (the "
                                "stand-in loads fatbins only, not cubins or PTX text)",
                                magic, FC_FATBIN_MAGIC));
    memcpy(&hdr_size, b + 6, 2);
    memcpy(&body, b + 8, 8);
    if (hdr_size < 16 || body > ((uint64_t)1 << 32))
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_IMAGE, call,
                                "fatbin header: header size %u (expected >= 16), body %llu bytes",
                                hdr_size, (unsigned long long)body));
    fc_module *m = calloc(1, sizeof *m);
    if (!m) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    if (tandem_fatbin_parse(image, (size_t)hdr_size + (size_t)body, &m->sum) != TANDEM_OK) {
        free(m);
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_IMAGE, call, "fatbin does not parse: %s",
                                tandem_last_error()));
    }
    tandem_fatbin_arch_string(&m->sum, m->archs, sizeof m->archs);
    int floor = tandem_fatbin_driver_floor(&m->sum);
    if (drop_too_new(&m->sum) && !tandem_fatbin_runs_on(&m->sum, fc_cfg.cc_major, fc_cfg.cc_minor)) {
        r = fc_fail(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, call,
                    "the fatbin (%s, built by CUDA %d.%d) needs a CUDA %d.%d driver; this driver "
                    "is CUDA %d.%d (TANDEM_FAKECUDA_DRIVER_VERSION)",
                    m->archs, m->sum.toolkit_version / 1000, m->sum.toolkit_version % 1000 / 10,
                    floor / 1000, floor % 1000 / 10, fc_cfg.driver_version / 1000,
                    fc_cfg.driver_version % 1000 / 10);
        free(m);
        return fc_leave(r);
    }
    if (!tandem_fatbin_runs_on(&m->sum, fc_cfg.cc_major, fc_cfg.cc_minor)) {
        r = fc_fail(CUDA_ERROR_NO_BINARY_FOR_GPU, call, "device %d is sm_%d%d; the fatbin holds: %s",
                    fc_current()->device, fc_cfg.cc_major, fc_cfg.cc_minor,
                    m->archs[0] ? m->archs : "(nothing)");
        free(m);
        return fc_leave(r);
    }
    if (m->sum.entry_count == 0) {
        free(m);
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_IMAGE, call,
                                "the fatbin lists no kernel entry points (compressed SASS?)"));
    }
    const tandem_fatbin_image *im = tandem_fatbin_sass_for(&m->sum, fc_cfg.cc_major, fc_cfg.cc_minor);
    for (int i = 0; im && i < m->sum.entry_count; i++)
        m->have[i] = tandem_fatbin_kernel_attrs_of(image, (size_t)hdr_size + (size_t)body, im, m->sum.entries[i],
                                                   &m->attrs[i]) == TANDEM_OK;
    m->h = (fc_obj){FC_KIND_MODULE, 1, fc_current()};
    fc_register(&m->h);
    *out = (CUmodule)(void *)m;
    return fc_leave(CUDA_SUCCESS);
}

static CUresult get_module(const char *call, CUmodule h, fc_module **out) {
    int dead;
    fc_module *m = (fc_module *)fc_lookup(h, FC_KIND_MODULE, &dead);
    if (!m)
        return fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                       dead ? "module %p was unloaded" : "%p is not a module", (void *)h);
    *out = m;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuModuleUnload(CUmodule h) {
    const char *call = "cuModuleUnload";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_module *m = NULL;
    if ((r = get_module(call, h, &m))) return fc_leave(r);
    m->h.alive = 0;
    /* Its functions die with it: cuLaunchKernel checks the module of a function. */
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule h, const char *name) {
    const char *call = "cuModuleGetFunction";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_module *m = NULL;
    if ((r = get_module(call, h, &m))) return fc_leave(r);
    if (!out || !name)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "hfunc or name is NULL"));
    int found = 0, e = 0;
    for (; e < m->sum.entry_count && !found; e++)
        found = strcmp(m->sum.entries[e], name) == 0;
    e--; /* the entry found */
    if (!found)
        return fc_leave(fc_fail(CUDA_ERROR_NOT_FOUND, call,
                                "'%s' is not an entry point of the fatbin (%d entries, %s)", name,
                                m->sum.entry_count, m->archs));
    int id = tandem_kernel_find(name);
    if (id < 0 || strcmp(tandem_kernel_table[id].entry, name) != 0)
        return fc_leave(fc_fail(CUDA_ERROR_NOT_FOUND, call,
                                "fatbin entry '%s' has no kernel in the registry to emulate", name));
    fc_function *f = calloc(1, sizeof *f);
    if (!f) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    f->h = (fc_obj){FC_KIND_FUNCTION, 1, m->h.ctx};
    f->module = m;
    f->kernel_id = id;
    snprintf(f->name, sizeof f->name, "%s", name);
    if (m->have[e]) {
        f->have_cubin = 1;
        f->registers = m->attrs[e].registers;
        f->static_shared = m->attrs[e].static_shared;
        f->max_threads = m->attrs[e].max_threads;
    }
    f->max_dynamic_shared = FC_SHARED_PER_BLOCK - (int)f->static_shared;
    fc_register(&f->h);
    *out = (CUfunction)(void *)f;
    return fc_leave(CUDA_SUCCESS);
}

/* Parse `extra`: exactly a buffer pointer and its size. */
static CUresult parse_extra(const char *call, const char *kname, void **extra, void **buf,
                            size_t *size) {
    void *p = NULL;
    const size_t *sz = NULL;
    for (int i = 0; extra[i] != FC_LAUNCH_PARAM_END; i += 2) {
        if (i > 16) return fc_fail(CUDA_ERROR_INVALID_VALUE, call, "extra[] has no CU_LAUNCH_PARAM_END");
        if (extra[i] == FC_LAUNCH_PARAM_BUFFER_POINTER) {
            p = extra[i + 1];
        } else if (extra[i] == FC_LAUNCH_PARAM_BUFFER_SIZE) {
            sz = (const size_t *)extra[i + 1];
        } else {
            return fc_fail(CUDA_ERROR_INVALID_VALUE, call, "%s: unknown key %p in extra[%d]",
                           kname, extra[i], i);
        }
    }
    if (!p || !sz)
        return fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                       "%s: extra[] needs both CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE", kname);
    *buf = p;
    *size = *sz;
    return CUDA_SUCCESS;
}

/* TANDEM_FAKECUDA_CHECK_ACCESS: the allocations the argument struct points into, copied before
 * the launch and compared after it; a changed byte outside every declared write range means the
 * kernel's descriptor in fc_access.c is too small (hazards there would go unreported). */
typedef struct fc_snap {
    uintptr_t base;
    size_t size;
    unsigned char *copy;
} fc_snap;

static int snap_take(const void *args, size_t size, fc_snap *s, int cap) {
    int n = 0;
    for (size_t off = 0; off + 8 <= size && n < cap; off += 8) {
        uint64_t w;
        memcpy(&w, (const char *)args + off, 8);
        uintptr_t base;
        size_t bytes;
        if (fc_alloc_range((uintptr_t)w, &base, &bytes) != 0) continue;
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= s[i].base == base;
        if (seen) continue;
        s[n].base = base;
        s[n].size = bytes;
        s[n].copy = malloc(bytes);
        if (!s[n].copy) abort(); /* test-only */
        memcpy(s[n].copy, (const void *)base, bytes);
        n++;
    }
    return n;
}

static void snap_check(const char *kn, int kernel_id, const void *args, fc_snap *s, int n) {
    fc_acc_list L;
    fc_kernel_accesses(kernel_id, args, &L);
    int reported = 0;
    for (int i = 0; i < n; i++) {
        const unsigned char *now = (const unsigned char *)s[i].base;
        for (size_t j = 0; j < s[i].size && !reported; j++) {
            if (now[j] == s[i].copy[j]) continue;
            uintptr_t a = s[i].base + j;
            int declared = 0;
            for (int k = 0; k < L.n && !declared; k++)
                declared = L.a[k].write && a >= L.a[k].p && a - L.a[k].p < L.a[k].n;
            if (declared) continue;
            tandem_fakecuda_report("cuLaunchKernel",
                                   "%s changed byte 0x%llx (allocation [0x%llx, +%zu)) outside the "
                                   "ranges test/fakecuda/fc_access.c declares it writes",
                                   kn, (unsigned long long)a, (unsigned long long)s[i].base,
                                   s[i].size);
            reported = 1;
        }
        free(s[i].copy);
    }
}

/* A launch, when its stream reaches it. A fault makes the context's state sticky: reported
 * here, returned by the next synchronising call (and by this one on the default stream). */
static void run_launch(fc_op *op) {
    const char *call = "cuLaunchKernel";
    const char *kn = tandem_kernel_table[op->kernel_id].entry;
    tandem_launch_dims d = {{op->dims[0], op->dims[1], op->dims[2]},
                            {op->dims[3], op->dims[4], op->dims[5]}, op->dims[6]};
    fc_snap snaps[FC_MAX_ACCESS];
    int nsnap = fc_cfg.check_access ? snap_take(op->owned, op->bytes, snaps, FC_MAX_ACCESS) : 0;
    tandem_emu_set_shmem_limit((unsigned)fc_shared_optin()); /* checked at the launch, per function */
    int bad = tandem_emu_launch(op->kernel_id, &d, op->owned, op->bytes) != 0;
    if (nsnap) snap_check(kn, op->kernel_id, op->owned, snaps, nsnap);
    if (bad) {
        op->ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        fc_fail(CUDA_ERROR_ILLEGAL_ADDRESS, call, "%s: %s", kn, tandem_emu_last_error());
        return;
    }
    if (fc_check_padding(call, kn)) op->ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
}

static fc_function *get_function(const char *call, CUfunction hf, CUresult *r) {
    int dead;
    fc_function *f = (fc_function *)fc_lookup(hf, FC_KIND_FUNCTION, &dead);
    if (f && !f->module->h.alive) f = NULL, dead = 1;
    *r = CUDA_SUCCESS;
    if (!f)
        *r = fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                     dead ? "function %p: its module was unloaded or its context released" : "%p is not a function",
                     (void *)hf);
    return f;
}

/* Per-block resources of a launch of `threads` threads against the cubin's figures. */
static CUresult check_resources(const char *call, const fc_function *f, unsigned threads, unsigned shmem) {
    const char *kn = f->name;
    if (f->max_threads && threads > f->max_threads)
        return fc_fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, call,
                       "%s: block of %u threads, its __launch_bounds__ allow %u", kn, threads, f->max_threads);
    unsigned warps = (threads + 31) / 32, per_warp = ((unsigned)f->registers * 32 + 255) / 256 * 256;
    if ((uint64_t)warps * per_warp > FC_REGS_PER_BLOCK)
        return fc_fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, call,
                       "%s: %d registers per thread x %u threads (%u warps x %u) exceed the %d registers "
                       "of a block on sm_%d%d",
                       kn, f->registers, threads, warps, per_warp, FC_REGS_PER_BLOCK, fc_cfg.cc_major,
                       fc_cfg.cc_minor);
    if ((int64_t)shmem > f->max_dynamic_shared)
        return fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                       "%s: %u bytes of dynamic shared memory (+ %u static); the function allows %d "
                       "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; %d per block without opt-in, %d "
                       "with it on sm_%d%d)",
                       kn, shmem, f->static_shared, f->max_dynamic_shared, FC_SHARED_PER_BLOCK,
                       fc_shared_optin(), fc_cfg.cc_major, fc_cfg.cc_minor);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hf) {
    const char *call = "cuFuncGetAttribute";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_function *f = get_function(call, hf, &r);
    if (!f) return fc_leave(r);
    if (!pi) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "pi is NULL"));
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: {
        int by_regs = f->registers ? FC_REGS_PER_BLOCK / ((f->registers * 32 + 255) / 256 * 256) * 32 : 1024;
        int v = by_regs < 1024 ? by_regs : 1024;
        *pi = f->max_threads && (int)f->max_threads < v ? (int)f->max_threads : v;
        break;
    }
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)f->static_shared; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = f->registers; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_shared; break;
    default:
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "attribute %d is not modelled by the stand-in",
                                (int)attrib));
    }
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuFuncSetAttribute(CUfunction hf, CUfunction_attribute attrib, int value) {
    const char *call = "cuFuncSetAttribute";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_function *f = get_function(call, hf, &r);
    if (!f) return fc_leave(r);
    if (attrib != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "%s: attribute %d is not settable in the stand-in",
                                f->name, (int)attrib));
    int limit = fc_shared_optin() - (int)f->static_shared;
    if (value < 0 || value > limit)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "%s: MAX_DYNAMIC_SHARED_SIZE_BYTES %d; expected 0..%d (opt-in limit %d of sm_%d%d "
                                "minus %u static)",
                                f->name, value, limit, fc_shared_optin(), fc_cfg.cc_major, fc_cfg.cc_minor,
                                f->static_shared));
    f->max_dynamic_shared = value;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuLaunchKernel(CUfunction hf, unsigned gx, unsigned gy, unsigned gz,
                                  unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                  CUstream stream, void **params, void **extra) {
    const char *call = "cuLaunchKernel";
    CUresult r = fc_enter(call, 1);
    if (r || (r = fc_check_stream(call, stream))) return fc_leave(r);
    fc_ctx *cur = fc_current();
    int dead;
    fc_function *f = (fc_function *)fc_lookup(hf, FC_KIND_FUNCTION, &dead);
    if (f && !f->module->h.alive) f = NULL, dead = 1;
    if (!f)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                dead ? "function %p: its module was unloaded or its context released"
                                     : "%p is not a function",
                                (void *)hf));
    const char *kn = f->name;
    if (f->h.ctx != cur)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "%s was loaded in device %d's context, launched in device %d's",
                                kn, f->h.ctx->device, cur->device));
    if (!gx || !gy || !gz || !bx || !by || !bz)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "%s: zero in grid %ux%ux%u or block %ux%ux%u",
                                kn, gx, gy, gz, bx, by, bz));
    if (bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "%s: block %ux%ux%u exceeds the limits (x, y <= 1024, z <= 64, "
                                "x*y*z <= 1024)",
                                kn, bx, by, bz));
    if (gx > 2147483647u || gy > 65535 || gz > 65535)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "%s: grid %ux%ux%u exceeds the limits (x < 2^31, y, z <= 65535)", kn,
                                gx, gy, gz));
    if ((r = check_resources(call, f, bx * by * bz, shmem))) return fc_leave(r);
    const tandem_kernel_info *ki = &tandem_kernel_table[f->kernel_id];
    void *args = NULL;
    size_t args_size = ki->args_size;
    if (params && extra)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "%s: both kernelParams and extra given", kn));
    if (extra) {
        if ((r = parse_extra(call, kn, extra, &args, &args_size))) return fc_leave(r);
        if (args_size != ki->args_size)
            return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                    "%s: parameter buffer of %zu bytes, the kernel takes one "
                                    "%zu-byte argument struct",
                                    kn, args_size, ki->args_size));
    } else if (params) {
        args = params[0];
    } else {
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "%s takes one parameter (a %zu-byte struct); none given", kn,
                                ki->args_size));
    }
    if (!args)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "%s: parameter 0 is NULL", kn));
    if (fc_check_kernel_pointers(call, kn, args, args_size, cur)) return fc_leave(CUDA_ERROR_ILLEGAL_ADDRESS);
    if (fc_stream_of(stream)->capture) FC_COUNT(fc_stream_of(stream)->h.ctx->device, captured_launches);
    else FC_COUNT(fc_stream_of(stream)->h.ctx->device, kernel_launches);
    fc_op *op = fc_op_new("cuLaunchKernel %s", kn);
    op->run = run_launch;
    op->kernel_id = f->kernel_id;
    op->bytes = args_size;
    op->owned = malloc(args_size); /* the caller's struct may be gone when the launch runs */
    if (!op->owned) abort();        /* test-only */
    memcpy(op->owned, args, args_size);
    unsigned dims[7] = {gx, gy, gz, bx, by, bz, shmem};
    memcpy(op->dims, dims, sizeof dims);
    fc_acc_list L;
    fc_kernel_accesses(f->kernel_id, args, &L);
    fc_stream *s = fc_stream_of(stream);
    fc_counts.launches++;
    fc_counts.kernel[f->kernel_id]++;
    fc_submit(s, op, &L);
    /* On the default stream the launch has run: its fault is this call's result. */
    return fc_leave(stream ? CUDA_SUCCESS : cur->sticky);
}

_Static_assert(TANDEM_KERNEL_COUNT <= TANDEM_FAKECUDA_MAX_KERNELS, "raise TANDEM_FAKECUDA_MAX_KERNELS");
tandem_fakecuda_counts fc_counts;

FC_EXPORT void tandem_fakecuda_get_counts(tandem_fakecuda_counts *out) {
    tandem_fakecuda_lock();
    *out = fc_counts;
    tandem_fakecuda_unlock();
}
