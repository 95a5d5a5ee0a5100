/* test_fakecuda.c — the stand-in driver on its own: dlopens build/test/fakecuda/libcuda.so.1
 * and libcublasLt.so.13 directly (entry points through cuGetProcAddress, as the backend does)
 * and proves that misuse is caught — a bad pointer, an overrunning copy, a call without a
 * context, a destroyed stream, a wrong parameter size, launch limits, a fatbin without code
 * for the device, an unsupported cuBLASLt layout/type/epilogue — each with an error code and
 * exactly one "fakecuda: error:" line; that correct use produces none; that events order work
 * across threads; that stream capture records and graphs replay in order, and that what real
 * capture rejects (synchronising, allocating, querying, pageable copies, the legacy stream,
 * events across the capture's boundary, ending on another stream) is rejected with CUDA's code;
 * and that cublasLtMatmul matches a test-side reference in double for every
 * transpose pair, odd shapes, strided batches, alpha/beta, bias and GELU, f32 and bf16. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/cuda/cuda_api.h"
#include "kernels/registry.h"
#include "test/fixtures.h"

#define LIBCUDA TANDEM_FAKECUDA_DIR "/libcuda.so.1"
#define LIBLT TANDEM_FAKECUDA_DIR "/libcublasLt.so.13"

static struct {
    void *h, *hlt;
#define DRV_FIELD(name) tandem_pfn_##name name;
    TANDEM_CUDA_DRIVER_CALLS(DRV_FIELD)
    TANDEM_CUBLASLT_CALLS(DRV_FIELD)
#undef DRV_FIELD
    tandem_pfn_cuGetProcAddress get_proc;
    int (*error_count)(void);
    CUcontext ctx[2];
    tandem_rng rng;
} D;

/* Errors the tests provoked on purpose; anything beyond is a failure. */
static int expected_errors;

/* Run expr, require it to return want and to print exactly n error lines. */
#define EXPECT_ERR(n, want, expr)                                                         \
    do {                                                                                  \
        int before_ = D.error_count();                                                    \
        int got_ = (int)(expr);                                                           \
        assert_int_equal(got_, (int)(want));                                              \
        assert_int_equal(D.error_count() - before_, (n));                                 \
        expected_errors += (n);                                                           \
    } while (0)
#define OK(expr) EXPECT_ERR(0, 0, expr)

static int setup(void **state) {
    (void)state;
    D.h = dlopen(LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    if (!D.h) {
        fprintf(stderr, "dlopen %s: %s\n", LIBCUDA, dlerror());
        return -1;
    }
    D.get_proc = (tandem_pfn_cuGetProcAddress)dlsym(D.h, "cuGetProcAddress_v2");
    D.error_count = (int (*)(void))dlsym(D.h, "tandem_fakecuda_error_count");
    if (!D.get_proc || !D.error_count) return -1;
    CUdriverProcAddressQueryResult qr;
#define DRV_LOAD(name)                                                                    \
    if (D.get_proc(#name, (void **)&D.name, TANDEM_CUDA_API_VERSION, 0, &qr) != CUDA_SUCCESS) { \
        fprintf(stderr, "cuGetProcAddress(%s) failed\n", #name);                         \
        return -1;                                                                        \
    }
    TANDEM_CUDA_DRIVER_CALLS(DRV_LOAD)
#undef DRV_LOAD
    D.hlt = dlopen(LIBLT, RTLD_NOW | RTLD_LOCAL);
    if (!D.hlt) {
        fprintf(stderr, "dlopen %s: %s\n", LIBLT, dlerror());
        return -1;
    }
#define LT_LOAD(name)                                                                     \
    if (!(*(void **)&D.name = dlsym(D.hlt, #name))) return -1;
    TANDEM_CUBLASLT_CALLS(LT_LOAD)
#undef LT_LOAD
    unsetenv("TANDEM_FAKECUDA_NO_PEER");
    unsetenv("TANDEM_FAKECUDA_ARCH");
    unsetenv("TANDEM_FAKECUDA_DEVICES");
    if (D.cuInit(0) != CUDA_SUCCESS) return -1;
    for (int i = 0; i < 2; i++)
        if (D.cuDevicePrimaryCtxRetain(&D.ctx[i], i) != CUDA_SUCCESS) return -1;
    if (D.cuCtxSetCurrent(D.ctx[0]) != CUDA_SUCCESS) return -1;
    D.rng.s = tandem_test_seed("test_fakecuda");
    printf("test_fakecuda: the 'fakecuda: error:' lines below are provoked on purpose and counted "
           "per call; any other one fails test_no_unexpected_errors\n");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) D.cuDevicePrimaryCtxRelease(i);
    int unexpected = D.error_count() - expected_errors;
    if (unexpected != 0) fprintf(stderr, "%d unexpected fakecuda error line(s)\n", unexpected);
    /* No dlclose: like the backend, keep the driver loaded; unmapping it would hide the
     * emulator's still-referenced globals from LeakSanitizer and report them as leaks. */
    return unexpected != 0 ? -1 : 0;
}

/* Every test starts in device 0's context. */
static int per_test(void **state) {
    (void)state;
    return D.cuCtxSetCurrent(D.ctx[0]) == CUDA_SUCCESS ? 0 : -1;
}

/* ------------------------------------------------------------------ driver --------------- */

static void test_devices(void **state) {
    (void)state;
    int n = 0, v = 0, can = -1;
    char name[64];
    size_t mem = 0;
    OK(D.cuDeviceGetCount(&n));
    assert_int_equal(n, 2);
    OK(D.cuDeviceGetName(name, sizeof name, 1));
    assert_string_equal(name, "Tandem stand-in GPU 1");
    OK(D.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    assert_int_equal(v, 8);
    OK(D.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    assert_int_equal(v, 9);
    OK(D.cuDeviceTotalMem(&mem, 0));
    assert_true(mem >= ((size_t)1 << 30));
    OK(D.cuDeviceCanAccessPeer(&can, 0, 1));
    assert_int_equal(can, 1);
    EXPECT_ERR(1, CUDA_ERROR_INVALID_DEVICE, D.cuDeviceGetName(name, sizeof name, 2));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuDeviceGetAttribute(&v, (CUdevice_attribute)9999, 0));
    const char *s = NULL;
    OK(D.cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
    assert_string_equal(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
    OK(D.cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_non_null(s);
}

static void test_proc_address(void **state) {
    (void)state;
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult qr;
    /* Unknown names are not an error line: probing is legitimate. */
    EXPECT_ERR(0, CUDA_ERROR_NOT_FOUND, D.get_proc("cuGraphAddKernelNode", &fn, 12000, 0, &qr));
    assert_null(fn);
    assert_int_equal(qr, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT_ERR(1, CUDA_ERROR_NOT_FOUND, D.get_proc("cuMemAlloc_v2", &fn, 12000, 0, &qr));
    EXPECT_ERR(1, CUDA_ERROR_NOT_FOUND, D.get_proc("cuMemAlloc", &fn, 11000, 0, &qr));
    assert_int_equal(qr, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    OK(D.get_proc("cuMemAlloc", &fn, 12000, 0, &qr));
    assert_ptr_equal(fn, (void *)D.cuMemAlloc);
    /* The v1 base-name symbol of a versioned call is not exported (it would be the old ABI). */
    assert_null(dlsym(D.h, "cuMemAlloc"));
    assert_non_null(dlsym(D.h, "cuMemAlloc_v2"));
}

static void test_bad_pointer(void **state) {
    (void)state;
    CUdeviceptr p0, p1;
    float host[64] = {0};
    OK(D.cuMemAlloc(&p0, sizeof host));
    assert_int_equal(p0 % 256, 0);
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    OK(D.cuMemAlloc(&p1, sizeof host));
    OK(D.cuCtxSetCurrent(D.ctx[0]));
    OK(D.cuMemcpyHtoDAsync(p0, host, sizeof host, NULL));
    /* Just past the end, a host address, device 1's memory from device 0's context. */
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyHtoDAsync(p0 + sizeof host, host, 4, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE,
               D.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)host, host, 4, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyDtoHAsync(host, p1, 4, NULL));
    /* Device memory passed as the host side. */
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE,
               D.cuMemcpyHtoDAsync(p0, (void *)(uintptr_t)p0, 4, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemFree(p0 + 4));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemFree(p1)); /* wrong context */
    OK(D.cuMemFree(p0));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemFree(p0)); /* double free */
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyDtoHAsync(host, p0, 4, NULL)); /* freed */
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    OK(D.cuMemFree(p1));
}

static void test_overrun(void **state) {
    (void)state;
    CUdeviceptr a, b;
    enum { N = 1000 };
    static float host[N + 16];
    OK(D.cuMemAlloc(&a, N * sizeof(float)));
    OK(D.cuMemAlloc(&b, N * sizeof(float)));
    OK(D.cuMemcpyHtoDAsync(a, host, N * sizeof(float), NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyHtoDAsync(a, host, N * sizeof(float) + 1, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyDtoHAsync(host, a + 8, N * sizeof(float), NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyDtoDAsync(b + 4, a, N * sizeof(float), NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyDtoDAsync(a, a + 8, 64, NULL)); /* overlap */
    OK(D.cuMemcpyDtoDAsync(b, a, N * sizeof(float), NULL));
    /* Pinned memory is checked too. */
    void *pin;
    OK(D.cuMemHostAlloc(&pin, 100, 0));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemcpyDtoHAsync(pin, a, 101, NULL));
    OK(D.cuMemcpyDtoHAsync(pin, a, 100, NULL));
    OK(D.cuMemFreeHost(pin));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuMemFreeHost(pin));
    OK(D.cuMemFree(a));
    OK(D.cuMemFree(b));
}

static void test_no_context(void **state) {
    (void)state;
    CUdeviceptr p;
    OK(D.cuCtxSetCurrent(NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_CONTEXT, D.cuMemAlloc(&p, 64));
    CUstream s;
    EXPECT_ERR(1, CUDA_ERROR_INVALID_CONTEXT, D.cuStreamCreate(&s, 0));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_CONTEXT, D.cuCtxSetCurrent((CUcontext)(void *)&p));
}

static void test_destroyed_stream(void **state) {
    (void)state;
    CUstream s;
    CUdeviceptr p;
    float x[4] = {1, 2, 3, 4};
    OK(D.cuMemAlloc(&p, sizeof x));
    OK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(D.cuMemcpyHtoDAsync(p, x, sizeof x, s));
    OK(D.cuStreamSynchronize(s));
    OK(D.cuStreamDestroy(s));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuMemcpyHtoDAsync(p, x, sizeof x, s));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuStreamSynchronize(s));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuStreamDestroy(s));
    CUevent e;
    OK(D.cuEventCreate(&e, 0));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuEventRecord(e, s));
    OK(D.cuEventDestroy(e));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuEventRecord(e, NULL));
    /* A stream of device 1 used from device 0's context. */
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    OK(D.cuStreamCreate(&s, 0));
    OK(D.cuCtxSetCurrent(D.ctx[0]));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuMemcpyHtoDAsync(p, x, sizeof x, s));
    OK(D.cuStreamDestroy(s));
    OK(D.cuMemFree(p));
}

/* ---- events across threads: a producer on device 0 uploads and records, a consumer on
 * device 1 waits on the event (after being told it was recorded) and copies peer-to-peer. */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    int recorded;
    CUevent ev;
    CUdeviceptr src, dst;
    float *data;
    size_t n;
    int rc;
} xthread;

static void *producer(void *arg) {
    xthread *x = arg;
    CUstream s;
    int rc = D.cuCtxSetCurrent(D.ctx[0]) | D.cuStreamCreate(&s, 0) |
             D.cuMemcpyHtoDAsync(x->src, x->data, x->n * 4, s) | D.cuEventRecord(x->ev, s);
    pthread_mutex_lock(&x->m);
    x->recorded = 1;
    x->rc |= rc;
    pthread_cond_signal(&x->c);
    pthread_mutex_unlock(&x->m);
    D.cuStreamDestroy(s);
    return NULL;
}

static void *consumer(void *arg) {
    xthread *x = arg;
    CUstream s;
    int rc = D.cuCtxSetCurrent(D.ctx[1]) | D.cuStreamCreate(&s, 0);
    pthread_mutex_lock(&x->m);
    while (!x->recorded) pthread_cond_wait(&x->c, &x->m);
    pthread_mutex_unlock(&x->m);
    rc |= D.cuStreamWaitEvent(s, x->ev, 0);
    rc |= D.cuMemcpyPeerAsync(x->dst, D.ctx[1], x->src, D.ctx[0], x->n * 4, s);
    rc |= D.cuStreamSynchronize(s) | D.cuStreamDestroy(s);
    pthread_mutex_lock(&x->m);
    x->rc |= rc;
    pthread_mutex_unlock(&x->m);
    return NULL;
}

static void test_events_threads_peer(void **state) {
    (void)state;
    enum { N = 4097 };
    xthread x = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, 0, 0, NULL, N, 0};
    float *back = malloc(N * 4);
    x.data = malloc(N * 4);
    for (int i = 0; i < N; i++) x.data[i] = tandem_rng_uniform(&D.rng, -1, 1);
    OK(D.cuMemAlloc(&x.src, N * 4));
    OK(D.cuEventCreate(&x.ev, 0));
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    OK(D.cuMemAlloc(&x.dst, N * 4));
    /* Before peer access is enabled the peer copy is refused. */
    EXPECT_ERR(1, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
               D.cuMemcpyPeerAsync(x.dst, D.ctx[1], x.src, D.ctx[0], N * 4, NULL));
    OK(D.cuCtxEnablePeerAccess(D.ctx[0], 0));
    EXPECT_ERR(0, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, D.cuCtxEnablePeerAccess(D.ctx[0], 0));
    /* Waiting on an event nobody recorded is an ordering bug. */
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuStreamWaitEvent(NULL, x.ev, 0));
    OK(D.cuEventQuery(x.ev)); /* as in CUDA: never recorded counts as complete */
    pthread_t a, b;
    pthread_create(&b, NULL, consumer, &x);
    pthread_create(&a, NULL, producer, &x);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    assert_int_equal(x.rc, 0);
    OK(D.cuMemcpyDtoHAsync(back, x.dst, N * 4, NULL));
    assert_memory_equal(back, x.data, N * 4);
    /* Timing: two records on one stream give a non-negative elapsed time. */
    CUevent e2, nt;
    float ms = -1;
    OK(D.cuCtxSetCurrent(D.ctx[0]));
    OK(D.cuEventCreate(&e2, 0));
    OK(D.cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    OK(D.cuEventRecord(e2, NULL));
    OK(D.cuEventElapsedTime(&ms, x.ev, e2));
    assert_true(ms >= 0.0f);
    OK(D.cuEventSynchronize(e2));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuEventSynchronize(nt)); /* never recorded */
    OK(D.cuEventRecord(nt, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuEventElapsedTime(&ms, x.ev, nt));
    OK(D.cuEventDestroy(e2));
    OK(D.cuEventDestroy(nt));
    OK(D.cuEventDestroy(x.ev));
    OK(D.cuMemFree(x.src));
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    OK(D.cuMemFree(x.dst));
    free(back);
    free(x.data);
}

/* ------------------------------------------------------------------ modules, launches ---- */

/* The fatbin's bytes, or NULL when there is none (a host-only build leaves it empty). */
static void *read_fatbin(size_t *len) {
    *len = 0;
    void *p = tandem_test_read_file(TANDEM_FATBIN_FILE, len);
    if (p && *len == 0) {
        free(p);
        p = NULL;
    }
    return p;
}

/* Release both contexts (which resets a sticky fault) and start again with env settings. */
static void reinit(void) {
    for (int i = 0; i < 2; i++) OK(D.cuDevicePrimaryCtxRelease(i));
    OK(D.cuInit(0));
    for (int i = 0; i < 2; i++) OK(D.cuDevicePrimaryCtxRetain(&D.ctx[i], i));
    OK(D.cuCtxSetCurrent(D.ctx[0]));
}

static void test_module_launch(void **state) {
    (void)state;
    size_t len;
    void *fatbin = read_fatbin(&len);
    if (!fatbin) {
        printf("no fatbin at %s (host-only build): module tests skipped\n", TANDEM_FATBIN_FILE);
        skip();
    }
    CUmodule mod;
    CUfunction fill, scale;
    OK(D.cuModuleLoadData(&mod, fatbin));
    OK(D.cuModuleGetFunction(&fill, mod, "tandem_k_fill_f32"));
    OK(D.cuModuleGetFunction(&scale, mod, "tandem_k_scale_f32"));
    EXPECT_ERR(1, CUDA_ERROR_NOT_FOUND, D.cuModuleGetFunction(&fill, mod, "tandem_k_nonexistent"));
    /* Every registry kernel is in the fatbin and resolvable. */
    for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
        CUfunction f;
        OK(D.cuModuleGetFunction(&f, mod, tandem_kernel_table[k].entry));
    }

    enum { N = 1000 }; /* not a multiple of the block size */
    CUdeviceptr p;
    float *back = malloc(N * 4);
    OK(D.cuMemAlloc(&p, N * 4));
    tandem_k_fill_f32_args fa = {(float *)(uintptr_t)p, N, 2.5f};
    tandem_launch_dims d;
    tandem_kernel_table[TANDEM_KID_fill_f32].geom(&fa, &d);
    void *params[] = {&fa};
    OK(D.cuLaunchKernel(fill, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1],
                        d.block[2], d.shmem, NULL, params, NULL));
    tandem_k_scale_f32_args sa = {(float *)(uintptr_t)p, N, -2.0f};
    size_t sz = sizeof sa;
    void *extra[] = {(void *)1, &sa, (void *)2, &sz, (void *)0};
    OK(D.cuLaunchKernel(scale, d.grid[0], 1, 1, d.block[0], 1, 1, 0, NULL, NULL, extra));
    OK(D.cuMemcpyDtoHAsync(back, p, N * 4, NULL));
    for (int i = 0; i < N; i++) assert_true(back[i] == -5.0f);

    /* Wrong parameter size, no parameters, both forms, limits. */
    sz = sizeof sa + 8;
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    sz = sizeof sa - 4;
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 256, 1, 1, 0, NULL, params, extra));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 2048, 1, 1, 0, NULL, params, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 64, 32, 1, 0, NULL, params, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 70000, 1, 256, 1, 1, 0, NULL, params, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernel(scale, 4, 1, 1, 256, 1, 1, 64 * 1024, NULL, params, NULL));
    /* On a destroyed stream. */
    CUstream s;
    OK(D.cuStreamCreate(&s, 0));
    OK(D.cuStreamDestroy(s));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, s, params, NULL));
    /* In another context than the module's. */
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    OK(D.cuCtxSetCurrent(D.ctx[0]));
    /* A pointer to device 1's memory without peer access from device 0. */
    CUdeviceptr q;
    OK(D.cuCtxSetCurrent(D.ctx[1]));
    OK(D.cuMemAlloc(&q, N * 4));
    OK(D.cuCtxSetCurrent(D.ctx[0]));
    tandem_k_fill_f32_args other = {(float *)(uintptr_t)q, N, 1.0f};
    void *oparams[] = {&other};
    EXPECT_ERR(1, CUDA_ERROR_ILLEGAL_ADDRESS, D.cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, NULL, oparams, NULL));
    /* The emulator catches a kernel writing past the buffer: n larger than the allocation.
     * The fault is sticky, as on a GPU, until the contexts are released. */
    tandem_k_fill_f32_args over = {(float *)(uintptr_t)p, N + 300, 1.0f};
    void *vparams[] = {&over};
    EXPECT_ERR(1, CUDA_ERROR_ILLEGAL_ADDRESS, D.cuLaunchKernel(fill, 6, 1, 1, 256, 1, 1, 0, NULL, vparams, NULL));
    EXPECT_ERR(0, CUDA_ERROR_ILLEGAL_ADDRESS, D.cuMemcpyDtoHAsync(back, p, 4, NULL));
    reinit();
    /* The module died with its context. */
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL));

    /* No code for the device: sm_75 cannot run sm_80+ SASS or compute_90 PTX. */
    setenv("TANDEM_FAKECUDA_ARCH", "75", 1);
    reinit();
    EXPECT_ERR(1, CUDA_ERROR_NO_BINARY_FOR_GPU, D.cuModuleLoadData(&mod, fatbin));
    /* A newer GPU runs the compute_90 PTX. */
    setenv("TANDEM_FAKECUDA_ARCH", "120", 1);
    reinit();
    OK(D.cuModuleLoadData(&mod, fatbin));
    OK(D.cuModuleUnload(mod));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuModuleUnload(mod));
    unsetenv("TANDEM_FAKECUDA_ARCH");
    reinit();
    EXPECT_ERR(1, CUDA_ERROR_INVALID_IMAGE, D.cuModuleLoadData(&mod, "not a fatbin at all"));
    free(back);
    free(fatbin);
}

/* ------------------------------------------------------------------ cuBLASLt -------------- */

typedef struct {
    int ta, tb;
    int64_t m, n, k;
    int batch;
    int64_t lda, ldb, ldc;       /* >= rows of the stored matrix */
    int64_t sa, sb, sc;          /* batch strides (elements) */
    uint32_t epi;
    int bf16;                    /* A, B bf16 (C, D f32) */
    float alpha, beta;
} mm_case;

static float bf16_round(float x) { return tandem_bf16_to_f32(tandem_f32_to_bf16(x)); }

/* The reference: builds op(A) and op(B) explicitly as dense m x k and k x n in double,
 * following the column-major definition, then multiplies. */
static void reference(const mm_case *c, const float *A, const float *B, const float *C,
                      const float *bias, double *out) {
    for (int b = 0; b < c->batch; b++) {
        double *opa = malloc(sizeof(double) * (size_t)(c->m * c->k));
        double *opb = malloc(sizeof(double) * (size_t)(c->k * c->n));
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t q = 0; q < c->k; q++) {
                /* stored A: m x k (N) or k x m (T); element (r, col) at r + col * lda */
                int64_t r = c->ta ? q : i, col = c->ta ? i : q;
                float v = A[b * c->sa + r + col * c->lda];
                opa[i * c->k + q] = c->bf16 ? bf16_round(v) : v;
            }
        for (int64_t q = 0; q < c->k; q++)
            for (int64_t j = 0; j < c->n; j++) {
                int64_t r = c->tb ? j : q, col = c->tb ? q : j;
                float v = B[b * c->sb + r + col * c->ldb];
                opb[q * c->n + j] = c->bf16 ? bf16_round(v) : v;
            }
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++) {
                double s = 0;
                for (int64_t q = 0; q < c->k; q++) s += opa[i * c->k + q] * opb[q * c->n + j];
                double v = c->alpha * s;
                if (c->beta != 0) v += (double)c->beta * C[b * c->sc + i + j * c->ldc];
                if (c->epi & CUBLASLT_EPILOGUE_BIAS) v += bias[i];
                if (c->epi & CUBLASLT_EPILOGUE_GELU)
                    v = 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
                out[b * c->sc + i + j * c->ldc] = v;
            }
        free(opa);
        free(opb);
    }
}

static size_t span(int64_t rows, int64_t cols, int64_t ld, int batch, int64_t stride) {
    return (size_t)((batch - 1) * stride + (cols - 1) * ld + rows);
}

static cublasLtMatrixLayout_t layout(uint32_t type, int64_t rows, int64_t cols, int64_t ld,
                                     int batch, int64_t stride) {
    cublasLtMatrixLayout_t l;
    OK(D.cublasLtMatrixLayoutCreate(&l, (cudaDataType)type, (uint64_t)rows, (uint64_t)cols, ld));
    int32_t b = batch;
    OK(D.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
    OK(D.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    return l;
}

static CUdeviceptr upload(const void *h, size_t bytes) {
    CUdeviceptr p;
    OK(D.cuMemAlloc(&p, bytes));
    OK(D.cuMemcpyHtoDAsync(p, h, bytes, NULL));
    return p;
}

/* The largest power of two up to 256 dividing the address and, batched, the batch stride. */
static uint32_t align_of(CUdeviceptr p, int64_t stride_bytes, int batch) {
    uint64_t v = p | (batch > 1 ? (uint64_t)stride_bytes : 0) | 256;
    return (uint32_t)(v & (~v + 1));
}

static void run_case(cublasLtHandle_t lt, const mm_case *c) {
    int64_t ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k;
    int64_t br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
    size_t na = span(ar, ac, c->lda, c->batch, c->sa), nb = span(br, bc, c->ldb, c->batch, c->sb);
    size_t nc = span(c->m, c->n, c->ldc, c->batch, c->sc);
    float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *bias = malloc((size_t)c->m * 4);
    float *out = malloc(nc * 4);
    double *ref = malloc(nc * sizeof(double));
    for (size_t i = 0; i < na; i++) A[i] = tandem_rng_uniform(&D.rng, -1, 1);
    for (size_t i = 0; i < nb; i++) B[i] = tandem_rng_uniform(&D.rng, -1, 1);
    for (size_t i = 0; i < nc; i++) C[i] = c->beta != 0 ? tandem_rng_uniform(&D.rng, -1, 1) : NAN;
    for (int64_t i = 0; i < c->m; i++) bias[i] = tandem_rng_uniform(&D.rng, -1, 1);
    for (size_t i = 0; i < nc; i++) ref[i] = C[i]; /* gaps between ld columns stay as they were */
    reference(c, A, B, C, bias, ref);

    CUdeviceptr dA, dB, dC = upload(C, nc * 4), dbias = upload(bias, (size_t)c->m * 4);
    if (c->bf16) {
        tandem_bf16 *a16 = malloc(na * 2), *b16 = malloc(nb * 2);
        for (size_t i = 0; i < na; i++) a16[i] = tandem_f32_to_bf16(A[i]);
        for (size_t i = 0; i < nb; i++) b16[i] = tandem_f32_to_bf16(B[i]);
        dA = upload(a16, na * 2);
        dB = upload(b16, nb * 2);
        free(a16);
        free(b16);
    } else {
        dA = upload(A, na * 4);
        dB = upload(B, nb * 4);
    }
    uint32_t tin = c->bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasLtMatmulDesc_t desc;
    OK(D.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = c->ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c->epi, sizeof c->epi));
    if (c->epi & CUBLASLT_EPILOGUE_BIAS) {
        void *bp = (void *)(uintptr_t)dbias;
        int64_t zero = 0;
        OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
        OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &zero, sizeof zero));
    }
    cublasLtMatrixLayout_t la = layout(tin, ar, ac, c->lda, c->batch, c->sa);
    cublasLtMatrixLayout_t lb = layout(tin, br, bc, c->ldb, c->batch, c->sb);
    cublasLtMatrixLayout_t lc = layout(CUDA_R_32F, c->m, c->n, c->ldc, c->batch, c->sc);
    cublasLtMatmulPreference_t pref;
    OK(D.cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = 0;
    OK(D.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    /* the strides are random: tell the heuristic the alignment the operands really have */
    uint32_t al[4] = {align_of(dA, c->sa * (c->bf16 ? 2 : 4), c->batch), align_of(dB, c->sb * (c->bf16 ? 2 : 4), c->batch),
                      align_of(dC, c->sc * 4, c->batch), align_of(dC, c->sc * 4, c->batch)};
    for (int i = 0; i < 4; i++)
        OK(D.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i, &al[i],
                                                  sizeof al[i]));
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    OK(D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    assert_int_equal(got, 1);
    OK(D.cublasLtMatmul(lt, desc, &c->alpha, (void *)(uintptr_t)dA, la, (void *)(uintptr_t)dB, lb,
                        &c->beta, (void *)(uintptr_t)dC, lc, (void *)(uintptr_t)dC, lc, &res.algo,
                        NULL, 0, NULL));
    OK(D.cuMemcpyDtoHAsync(out, dC, nc * 4, NULL));
    /* Inside the matrices: the stand-in computes in double and rounds once, so each element
     * is the reference rounded to f32. Gaps between columns (ld > m) must be untouched. */
    double err = 0, norm = 0;
    char *inside = calloc(nc, 1);
    for (int b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++) {
                size_t x = (size_t)(b * c->sc + i + j * c->ldc);
                assert_false(isnan(out[x]));
                err += (out[x] - ref[x]) * (out[x] - ref[x]);
                norm += ref[x] * ref[x];
                inside[x] = 1;
            }
    for (size_t x = 0; x < nc; x++)
        if (!inside[x] && !(isnan(C[x]) ? isnan(out[x]) : C[x] == out[x]))
            fail_msg("element %zu between the columns/batches of D was written", x);
    free(inside);
    printf("matmul %s%s m=%lld n=%lld k=%lld batch=%d ld=%lld/%lld/%lld epi=%u%s alpha=%g beta=%g: "
           "normalised error %.3g\n",
           c->ta ? "T" : "N", c->tb ? "T" : "N", (long long)c->m, (long long)c->n, (long long)c->k,
           c->batch, (long long)c->lda, (long long)c->ldb, (long long)c->ldc, c->epi,
           c->bf16 ? " bf16" : "", c->alpha, c->beta, norm > 0 ? err / norm : err);
    assert_true(err <= 1e-13 * norm + 1e-30);
    OK(D.cublasLtMatmulPreferenceDestroy(pref));
    OK(D.cublasLtMatrixLayoutDestroy(la));
    OK(D.cublasLtMatrixLayoutDestroy(lb));
    OK(D.cublasLtMatrixLayoutDestroy(lc));
    OK(D.cublasLtMatmulDescDestroy(desc));
    OK(D.cuMemFree(dA));
    OK(D.cuMemFree(dB));
    OK(D.cuMemFree(dC));
    OK(D.cuMemFree(dbias));
    free(A), free(B), free(C), free(bias), free(out), free(ref);
}

static void test_matmul(void **state) {
    (void)state;
    cublasLtHandle_t lt;
    OK(D.cublasLtCreate(&lt));
    static const uint32_t epis[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                    CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS};
    int n_case = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int v = 0; v < 4; v++) {
                mm_case c;
                memset(&c, 0, sizeof c);
                c.ta = ta, c.tb = tb;
                c.m = tandem_rng_int(&D.rng, 1, 37);
                c.n = tandem_rng_int(&D.rng, 1, 29);
                c.k = tandem_rng_int(&D.rng, 1, 41);
                c.batch = v >= 2 ? (int)tandem_rng_int(&D.rng, 2, 4) : 1;
                int64_t ar = ta ? c.k : c.m, br = tb ? c.n : c.k;
                int64_t ac = ta ? c.m : c.k, bc = tb ? c.k : c.n;
                int pad = v & 1; /* leading dimensions larger than the rows */
                c.lda = ar + pad * tandem_rng_int(&D.rng, 1, 5);
                c.ldb = br + pad * tandem_rng_int(&D.rng, 1, 5);
                c.ldc = c.m + pad * tandem_rng_int(&D.rng, 1, 5);
                c.sa = c.lda * ac + pad * 3, c.sb = c.ldb * bc + pad * 7, c.sc = c.ldc * c.n + pad * 2;
                c.epi = epis[(ta * 2 + tb + v) % 4];
                c.bf16 = (ta + tb + v) % 5 == 0;
                c.alpha = tandem_rng_uniform(&D.rng, -2, 2);
                c.beta = (v % 3 == 0) ? 0.0f : tandem_rng_uniform(&D.rng, -1, 1);
                run_case(lt, &c);
                n_case++;
            }
    /* A larger square case, transposed A, as the model's projections use. */
    mm_case big = {1, 0, 96, 80, 128, 1, 128, 128, 96, 0, 0, 0, CUBLASLT_EPILOGUE_DEFAULT, 0, 1.0f, 0.0f};
    run_case(lt, &big);
    OK(D.cublasLtDestroy(lt));
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_INITIALIZED, D.cublasLtDestroy(lt));
    assert_int_equal(n_case, 16);
}

/* Unsupported combinations and bad arguments: NOT_SUPPORTED / INVALID_VALUE, one line each. */
static void test_matmul_strict(void **state) {
    (void)state;
    cublasLtHandle_t lt;
    OK(D.cublasLtCreate(&lt));
    enum { M = 8, N = 6, K = 5 };
    float ones[M * K * 4];
    for (int i = 0; i < M * K * 4; i++) ones[i] = 1.0f;
    CUdeviceptr a = upload(ones, sizeof ones), b = upload(ones, K * N * 4), c = upload(ones, M * N * 4);
    cublasLtMatmulDesc_t desc;
    OK(D.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t la = layout(CUDA_R_32F, M, K, M, 1, 0), lb = layout(CUDA_R_32F, K, N, K, 1, 0),
                           lc = layout(CUDA_R_32F, M, N, M, 1, 0);
    cublasLtMatmulPreference_t pref;
    OK(D.cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t res;
    int got;
    float alpha = 1, beta = 0;
    void *A = (void *)(uintptr_t)a, *B = (void *)(uintptr_t)b, *C = (void *)(uintptr_t)c;
    OK(D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &res.algo, NULL, 0, NULL));

    /* The algorithm assumes the preference's alignment (default 256): A one float further on
     * is refused; with MIN_ALIGNMENT_A_BYTES = 4 the heuristic's algorithm takes it. */
    void *A4 = (char *)A + 4;
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED,
               D.cublasLtMatmul(lt, desc, &alpha, A4, la, B, lb, &beta, C, lc, C, lc, &res.algo, NULL, 0, NULL));
    uint32_t four = 4, three = 3;
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE,
               D.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &three, 4));
    OK(D.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &four, 4));
    OK(D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatmul(lt, desc, &alpha, A4, la, B, lb, &beta, C, lc, C, lc, &res.algo, NULL, 0, NULL));

    /* Row-major layout. */
    int32_t row = CUBLASLT_ORDER_ROW, col = CUBLASLT_ORDER_COL;
    OK(D.cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED, D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    assert_int_equal(got, 0);
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED, D.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, NULL, NULL, 0, NULL));
    OK(D.cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ORDER, &col, sizeof col));
    /* f16 type; mixed f32/bf16 inputs. */
    uint32_t f16 = CUDA_R_16F, bf = CUDA_R_16BF, f32 = CUDA_R_32F;
    OK(D.cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &f16, sizeof f16));
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED, D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &bf, sizeof bf));
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED, D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &f32, sizeof f32));
    /* Epilogue RELU; the BIAS epilogue without its bias pointer; compute type TF32 with bf16
     * inputs (FAST_TF32 takes CUDA_R_32F A and B only; with them it is modelled). */
    uint32_t relu = CUBLASLT_EPILOGUE_RELU, def = CUBLASLT_EPILOGUE_DEFAULT, bias_epi = CUBLASLT_EPILOGUE_BIAS;
    OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &relu, sizeof relu));
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED, D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias_epi, sizeof bias_epi));
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, NULL, NULL, 0, NULL));
    OK(D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &def, sizeof def));
    cublasLtMatmulDesc_t tf32;
    OK(D.cublasLtMatmulDescCreate(&tf32, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
    OK(D.cublasLtMatmulAlgoGetHeuristic(lt, tf32, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_TYPE, &bf, sizeof bf));
    OK(D.cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &bf, sizeof bf));
    OK(D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &got)); /* COMPUTE_32F: fine */
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED, D.cublasLtMatmulAlgoGetHeuristic(lt, tf32, la, lb, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_TYPE, &f32, sizeof f32));
    OK(D.cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &f32, sizeof f32));
    OK(D.cublasLtMatmulDescDestroy(tf32));
    /* Attribute with the wrong size; unmodelled attribute. */
    int64_t big = 0;
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &big, sizeof big));
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED,
               D.cublasLtMatmulDescSetAttribute(desc, (cublasLtMatmulDescAttributes_t)14 /* ALPHA_VECTOR_BATCH_STRIDE */,
                                                &big, sizeof big));
    /* Shapes that disagree: B with K+1 rows. */
    cublasLtMatrixLayout_t lb2 = layout(CUDA_R_32F, K + 1, N, K + 1, 1, 0);
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb2, lc, lc, pref, 1, &res, &got));
    OK(D.cublasLtMatrixLayoutDestroy(lb2));
    /* A leading dimension that makes A overrun its allocation. */
    int64_t ld = 10 * M;
    OK(D.cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld));
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, NULL, NULL, 0, NULL));
    ld = M;
    OK(D.cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld));
    /* Device pointer as alpha; D aliasing A; a destroyed layout; no context. */
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmul(lt, desc, A, A, la, B, lb, &beta, C, lc, C, lc, NULL, NULL, 0, NULL));
    cublasLtMatrixLayout_t la_as_d = layout(CUDA_R_32F, M, N, M, 1, 0);
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, A, la_as_d, A, la_as_d, NULL, NULL, 0, NULL));
    OK(D.cublasLtMatrixLayoutDestroy(la_as_d));
    EXPECT_ERR(1, CUBLAS_STATUS_INVALID_VALUE, D.cublasLtMatmul(lt, desc, &alpha, A, la_as_d, B, lb, &beta, C, lc, C, lc, NULL, NULL, 0, NULL));
    OK(D.cuCtxSetCurrent(NULL));
    EXPECT_ERR(1, CUBLAS_STATUS_EXECUTION_FAILED, D.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, NULL, NULL, 0, NULL));
    OK(D.cuCtxSetCurrent(D.ctx[0]));
    OK(D.cublasLtMatmulPreferenceDestroy(pref));
    OK(D.cublasLtMatrixLayoutDestroy(la));
    OK(D.cublasLtMatrixLayoutDestroy(lb));
    OK(D.cublasLtMatrixLayoutDestroy(lc));
    OK(D.cublasLtMatmulDescDestroy(desc));
    OK(D.cublasLtDestroy(lt));
    OK(D.cuMemFree(a));
    OK(D.cuMemFree(b));
    OK(D.cuMemFree(c));
}

/* ---- the aux and bias-gradient epilogues ------------------------------------------------------
 * One small problem, D [M, N] = A [M, K] B [K, N] (column-major, no transposes), A and B f32 or
 * bf16, D f32 or bf16 (then the bias and aux are bf16 too: D's type), through each epilogue
 * against a double reference on random inputs, D, aux and bias poisoned first. */
enum { XM = 16, XN = 6, XK = 5 };

typedef struct aux_env {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    CUdeviceptr a, b, d, aux, bias;
    float A[XM * XK], B[XK * XN], AUX[XM * XN], BIAS[XM > XN ? XM : XN];
    uint32_t td; /* D's type */
} aux_env;

static CUdeviceptr upload_typed(const float *x, int n, uint32_t t) {
    if (t == CUDA_R_32F) return upload(x, (size_t)n * 4);
    tandem_bf16 h[XM * XN + 8];
    for (int i = 0; i < n; i++) h[i] = tandem_f32_to_bf16(x[i]);
    return upload(h, (size_t)n * 2);
}
static float read_typed(CUdeviceptr p, int i, uint32_t t) {
    float f;
    tandem_bf16 h;
    if (t == CUDA_R_32F) OK(D.cuMemcpyDtoHAsync(&f, p + (CUdeviceptr)i * 4, 4, NULL));
    else OK(D.cuMemcpyDtoHAsync(&h, p + (CUdeviceptr)i * 2, 2, NULL));
    return t == CUDA_R_32F ? f : tandem_bf16_to_f32(h);
}

static void aux_env_open(aux_env *e, uint32_t tab, uint32_t td, uint32_t epi) {
    memset(e, 0, sizeof *e);
    e->td = td;
    OK(D.cublasLtCreate(&e->lt));
    for (int i = 0; i < XM * XK; i++) e->A[i] = tandem_rng_uniform(&D.rng, -1, 1);
    for (int i = 0; i < XK * XN; i++) e->B[i] = tandem_rng_uniform(&D.rng, -1, 1);
    for (int i = 0; i < XM * XN; i++) e->AUX[i] = tandem_rng_uniform(&D.rng, -3, 3);
    for (int i = 0; i < XM; i++) e->BIAS[i] = tandem_rng_uniform(&D.rng, -1, 1);
    float nan[XM * XN];
    for (int i = 0; i < XM * XN; i++) nan[i] = NAN;
    e->a = upload_typed(e->A, XM * XK, tab), e->b = upload_typed(e->B, XK * XN, tab);
    e->d = upload_typed(nan, XM * XN, td);
    /* GELU_AUX*: the aux matrix is an output (poisoned); DGELU*: the forward's pre-activation */
    float aux0[XM * XN + 8]; /* 8 spare: the alignment rule's case moves the pointer on */
    for (int i = 0; i < XM * XN + 8; i++) aux0[i] = i < XM * XN && (epi & 64) ? e->AUX[i] : NAN;
    e->aux = upload_typed(aux0, XM * XN + 8, td);
    e->bias = upload_typed(epi & (16 | 256 | 512) ? nan : e->BIAS, XM, td);
    OK(D.cublasLtMatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    OK(D.cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    e->la = layout(tab, XM, XK, XM, 1, 0), e->lb = layout(tab, XK, XN, XK, 1, 0), e->lc = layout(td, XM, XN, XM, 1, 0);
    OK(D.cublasLtMatmulPreferenceCreate(&e->pref));
}

static void aux_env_close(aux_env *e) {
    OK(D.cublasLtMatmulPreferenceDestroy(e->pref));
    OK(D.cublasLtMatrixLayoutDestroy(e->la));
    OK(D.cublasLtMatrixLayoutDestroy(e->lb));
    OK(D.cublasLtMatrixLayoutDestroy(e->lc));
    OK(D.cublasLtMatmulDescDestroy(e->desc));
    OK(D.cublasLtDestroy(e->lt));
    CUdeviceptr p[5] = {e->a, e->b, e->d, e->aux, e->bias};
    for (int i = 0; i < 5; i++) OK(D.cuMemFree(p[i]));
}

static void set_ptr(aux_env *e, cublasLtMatmulDescAttributes_t attr, CUdeviceptr p) {
    void *v = (void *)(uintptr_t)p;
    OK(D.cublasLtMatmulDescSetAttribute(e->desc, attr, &v, sizeof v));
}
static void set_i64(aux_env *e, cublasLtMatmulDescAttributes_t attr, int64_t v) {
    OK(D.cublasLtMatmulDescSetAttribute(e->desc, attr, &v, sizeof v));
}

/* heuristic then matmul; the status each returns must be want_h / want_m with one error line
 * for each failure. */
static void aux_run(aux_env *e, int want_h, int want_m) {
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    float alpha = 1.0f, beta = 0.0f;
    EXPECT_ERR(want_h != 0, want_h,
               D.cublasLtMatmulAlgoGetHeuristic(e->lt, e->desc, e->la, e->lb, e->lc, e->lc, e->pref, 1, &res, &got));
    if (want_h) return;
    void *dd = (void *)(uintptr_t)e->d;
    EXPECT_ERR(want_m != 0, want_m,
               D.cublasLtMatmul(e->lt, e->desc, &alpha, (void *)(uintptr_t)e->a, e->la, (void *)(uintptr_t)e->b, e->lb,
                                &beta, dd, e->lc, dd, e->lc, &res.algo, NULL, 0, NULL));
}

static double gelu_d(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double gelu_grad_d(double x) {
    const double k0 = sqrt(2.0 / M_PI), t = tanh(k0 * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k0 * (1.0 + 3.0 * 0.044715 * x * x);
}

/* Compares D, aux and the bias gradient of epilogue epi with the double reference. */
static void aux_check(aux_env *e, uint32_t tab, uint32_t epi) {
    const double tol = e->td == CUDA_R_32F ? 1e-6 : 1e-2; /* one rounding to D's type */
    double rows[XM] = {0}, colsB[XN] = {0}, rowsA[XM] = {0};
    for (int j = 0; j < XN; j++)
        for (int i = 0; i < XM; i++) {
            double v = 0;
            for (int q = 0; q < XK; q++) {
                double x = e->A[i + q * XM], y = e->B[q + j * XK];
                if (tab == CUDA_R_16BF) x = bf16_round((float)x), y = bf16_round((float)y);
                v += x * y;
                if (j == 0) rowsA[i] += x;
                if (i == 0) colsB[j] += y;
            }
            if (epi & 4) v += e->td == CUDA_R_32F ? e->BIAS[i] : bf16_round(e->BIAS[i]);
            if ((epi & 128) && !(epi & 64)) assert_true(fabs(read_typed(e->aux, i + j * XM, e->td) - v) <= tol * (1 + fabs(v)));
            const double x = e->td == CUDA_R_32F ? e->AUX[i + j * XM] : bf16_round(e->AUX[i + j * XM]);
            if (epi & 32) v = gelu_d(v);
            if (epi & 64) v *= gelu_grad_d(x);
            rows[i] += v;
            if (!(epi & (256 | 512))) assert_true(fabs(read_typed(e->d, i + j * XM, e->td) - v) <= tol * (1 + fabs(v)));
        }
    const int len = epi == CUBLASLT_EPILOGUE_BGRADB ? XN : XM;
    for (int i = 0; i < len && (epi & (16 | 256 | 512)); i++) {
        const double want = epi == CUBLASLT_EPILOGUE_BGRADB ? colsB[i] : epi == CUBLASLT_EPILOGUE_BGRADA ? rowsA[i] : rows[i];
        assert_true(fabs(read_typed(e->bias, i, e->td) - want) <= tol * (1 + fabs(want)));
    }
}

/* Every aux / bias-gradient epilogue computes what its documentation says, f32 and bf16. */
static void test_matmul_aux(void **state) {
    (void)state;
    static const uint32_t epis[] = {CUBLASLT_EPILOGUE_GELU_AUX, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
                                    CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB};
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof epis / sizeof epis[0]; k++) {
            const uint32_t tab = t ? CUDA_R_16BF : CUDA_R_32F, td = t == 2 ? CUDA_R_16BF : CUDA_R_32F, epi = epis[k];
            aux_env e;
            aux_env_open(&e, tab, td, epi);
            if (epi & 128) {
                set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
                set_i64(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, XM);
            }
            if (epi & (4 | 16 | 256 | 512)) set_ptr(&e, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias);
            aux_run(&e, 0, 0);
            OK(D.cuCtxSynchronize());
            aux_check(&e, tab, epi);
            aux_env_close(&e);
        }
}

/* The documented rules of the aux and bias-gradient epilogues, and the bias vector's 16-byte
 * alignment, each provoked once (fc_cublaslt.c, check_aux / check_epilogue_pointers / the bias
 * type in check_problem). */
static void test_matmul_aux_rules(void **state) {
    (void)state;
    aux_env e;
    aux_env_open(&e, CUDA_R_32F, CUDA_R_32F, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
    set_ptr(&e, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias);
    set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
    aux_run(&e, CUBLAS_STATUS_INVALID_VALUE, 0); /* AUX_LD never set */
    set_i64(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, XM + 4);
    aux_run(&e, CUBLAS_STATUS_INVALID_VALUE, 0); /* not divisible by 8 */
    set_i64(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8);
    aux_run(&e, CUBLAS_STATUS_INVALID_VALUE, 0); /* fewer than D's 16 rows */
    set_i64(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, XM);
    int32_t f32 = CUDA_R_32F, unset = -1;
    OK(D.cublasLtMatmulDescSetAttribute(e.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &f32, sizeof f32));
    aux_run(&e, CUBLAS_STATUS_INVALID_VALUE, 0); /* AUX_DATA_TYPE set outside FP8 */
    OK(D.cublasLtMatmulDescSetAttribute(e.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &unset, sizeof unset));
    set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 0);
    aux_run(&e, 0, CUBLAS_STATUS_INVALID_VALUE); /* no aux pointer at the call */
    /* the heuristic saw a 256-aligned aux pointer; the call's is 4 bytes further on */
    cublasLtMatmulHeuristicResult_t res;
    int got;
    float alpha = 1, beta = 0;
    set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
    OK(D.cublasLtMatmulAlgoGetHeuristic(e.lt, e.desc, e.la, e.lb, e.lc, e.lc, e.pref, 1, &res, &got));
    set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux + 4);
    void *dd = (void *)(uintptr_t)e.d;
    EXPECT_ERR(1, CUBLAS_STATUS_NOT_SUPPORTED,
               D.cublasLtMatmul(e.lt, e.desc, &alpha, (void *)(uintptr_t)e.a, e.la, (void *)(uintptr_t)e.b, e.lb, &beta,
                                dd, e.lc, dd, e.lc, &res.algo, NULL, 0, NULL));
    set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
    aux_run(&e, 0, 0);
    /* DGELU_BGRAD writes the bias gradient: no bias pointer is INVALID_VALUE */
    uint32_t dgb = CUBLASLT_EPILOGUE_DGELU_BGRAD;
    OK(D.cublasLtMatmulDescSetAttribute(e.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &dgb, sizeof dgb));
    set_ptr(&e, CUBLASLT_MATMUL_DESC_BIAS_POINTER, 0);
    aux_run(&e, 0, CUBLAS_STATUS_INVALID_VALUE);
    set_ptr(&e, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias);
    aux_run(&e, 0, 0);
    /* a bias gradient 8 bytes off a 16-byte boundary: a GPU's epilogue faults, the stand-in refuses */
    set_ptr(&e, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias + 8);
    aux_run(&e, 0, CUBLAS_STATUS_NOT_SUPPORTED);
    set_ptr(&e, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias);
    /* an f32 bias with a bf16 D: the bias is D's type outside IMMA / FP8 */
    uint32_t bf = CUDA_R_16BF, bias_epi = CUBLASLT_EPILOGUE_BIAS;
    OK(D.cublasLtMatmulDescSetAttribute(e.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias_epi, sizeof bias_epi));
    OK(D.cublasLtMatmulDescSetAttribute(e.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &f32, sizeof f32));
    OK(D.cublasLtMatrixLayoutSetAttribute(e.la, CUBLASLT_MATRIX_LAYOUT_TYPE, &bf, sizeof bf));
    OK(D.cublasLtMatrixLayoutSetAttribute(e.lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &bf, sizeof bf));
    OK(D.cublasLtMatrixLayoutSetAttribute(e.lc, CUBLASLT_MATRIX_LAYOUT_TYPE, &bf, sizeof bf));
    aux_run(&e, CUBLAS_STATUS_NOT_SUPPORTED, 0);
    aux_env_close(&e);
    /* batched: an aux batch stride that is not a multiple of 8 */
    aux_env_open(&e, CUDA_R_32F, CUDA_R_32F, CUBLASLT_EPILOGUE_DGELU);
    set_ptr(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
    set_i64(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, XM);
    OK(D.cublasLtMatrixLayoutDestroy(e.la));
    OK(D.cublasLtMatrixLayoutDestroy(e.lb));
    OK(D.cublasLtMatrixLayoutDestroy(e.lc));
    e.la = layout(CUDA_R_32F, XM, XK, XM, 2, 0), e.lb = layout(CUDA_R_32F, XK, XN, XK, 2, 0);
    e.lc = layout(CUDA_R_32F, XM, XN, XM, 2, 0);
    set_i64(&e, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 4);
    aux_run(&e, CUBLAS_STATUS_INVALID_VALUE, 0);
    aux_env_close(&e);
}

/* What a GPU checks at launch, from the cubin the device runs: every kernel's __launch_bounds__
 * (the geometry of kernels/<group>_host.c must fit them, and the registers they budget must
 * fit a block), static + dynamic shared memory against the per-function limit and its opt-in;
 * and a driver older than the fatbin's toolkit refuses the module. */
static void test_launch_resources(void **state) {
    (void)state;
    size_t len;
    void *fatbin = read_fatbin(&len);
    if (!fatbin) skip();
    CUmodule mod;
    OK(D.cuModuleLoadData(&mod, fatbin));
    for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
        CUfunction f;
        OK(D.cuModuleGetFunction(&f, mod, tandem_kernel_table[k].entry));
        _Alignas(16) static unsigned char args[4096];
        memset(args, 0, sizeof args);
        assert_true(tandem_kernel_table[k].args_size <= sizeof args);
        tandem_launch_dims d;
        tandem_kernel_table[k].geom(args, &d);
        int max_threads = 0, regs = 0;
        OK(D.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
        OK(D.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
        unsigned threads = d.block[0] * d.block[1] * d.block[2];
        if (regs < 1 || regs > 255 || threads > (unsigned)max_threads)
            fail_msg("%s: %d registers, launch bounds / registers allow %d threads, its geometry has %u",
                     tandem_kernel_table[k].name, regs, max_threads, threads);
        /* launch bounds are declared (the limit is the bound, below what registers allow) */
        assert_true(max_threads < 1024 || threads == 1024);
    }
    CUfunction fill, ln;
    OK(D.cuModuleGetFunction(&fill, mod, "tandem_k_fill_f32"));
    OK(D.cuModuleGetFunction(&ln, mod, "tandem_k_layernorm_bwd"));
    /* a block larger than the launch bounds (256) */
    EXPECT_ERR(1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, D.cuLaunchKernel(fill, 1, 1, 1, 512, 1, 1, 0, NULL, NULL, NULL));
    /* layernorm_bwd: static red[66] floats, so at most 48 KiB - 264 dynamic without opt-in */
    int stat = 0, dyn = 0, optin = 0;
    OK(D.cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, ln));
    OK(D.cuFuncGetAttribute(&dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ln));
    OK(D.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
    assert_true(stat >= 66 * 4);
    assert_int_equal(dyn, 48 * 1024 - stat);
    assert_int_equal(optin, 99 * 1024); /* sm_89 */
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE,
               D.cuLaunchKernel(ln, 1, 1, 1, 128, 1, 1, (unsigned)dyn + 1, NULL, NULL, NULL));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE,
               D.cuFuncSetAttribute(ln, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - stat + 1));
    OK(D.cuFuncSetAttribute(ln, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - stat));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_VALUE,
               D.cuLaunchKernel(ln, 1, 1, 1, 128, 1, 1, (unsigned)(optin - stat) + 1, NULL, NULL, NULL));
    OK(D.cuModuleUnload(mod));
    /* a CUDA 12.8 driver cannot load what CUDA 13 built (SASS of a newer major, PTX ISA 9.0) */
    setenv("TANDEM_FAKECUDA_DRIVER_VERSION", "12080", 1);
    reinit();
    int v = 0;
    OK(D.cuDriverGetVersion(&v));
    assert_int_equal(v, 12080);
    EXPECT_ERR(1, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, D.cuModuleLoadData(&mod, fatbin));
    unsetenv("TANDEM_FAKECUDA_DRIVER_VERSION");
    reinit();
    OK(D.cuDriverGetVersion(&v));
    assert_int_equal(v, 13000);
    free(fatbin);
}

/* Environment settings: one device, no peer access. */
static void test_config(void **state) {
    (void)state;
    int n, can;
    setenv("TANDEM_FAKECUDA_NO_PEER", "1", 1);
    reinit();
    OK(D.cuDeviceCanAccessPeer(&can, 0, 1));
    assert_int_equal(can, 0);
    EXPECT_ERR(1, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, D.cuCtxEnablePeerAccess(D.ctx[1], 0));
    unsetenv("TANDEM_FAKECUDA_NO_PEER");
    setenv("TANDEM_FAKECUDA_DEVICES", "3", 1);
    for (int i = 0; i < 2; i++) OK(D.cuDevicePrimaryCtxRelease(i));
    OK(D.cuInit(0));
    OK(D.cuDeviceGetCount(&n));
    assert_int_equal(n, 3);
    unsetenv("TANDEM_FAKECUDA_DEVICES");
    OK(D.cuInit(0));
    for (int i = 0; i < 2; i++) OK(D.cuDevicePrimaryCtxRetain(&D.ctx[i], i));
    OK(D.cuDeviceGetCount(&n));
    assert_int_equal(n, 2);
    OK(D.cuDevicePrimaryCtxRelease(1));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_CONTEXT, D.cuDevicePrimaryCtxRelease(1));
    OK(D.cuDevicePrimaryCtxRetain(&D.ctx[1], 1));
}


/* ------------------------------------------------------------------ async streams, hazards */

/* stderr of the calls since the last capture_begin(), for checking what a report names. */
static int saved_stderr = -1;
static FILE *capture_file;
static void capture_begin(void) {
    fflush(stderr);
    capture_file = tmpfile();
    assert_non_null(capture_file);
    saved_stderr = dup(2);
    dup2(fileno(capture_file), 2);
}
static char *capture_end(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    long n = ftell(capture_file);
    char *text = calloc(1, (size_t)n + 1);
    rewind(capture_file);
    assert_int_equal(fread(text, 1, (size_t)n, capture_file), (size_t)n);
    fclose(capture_file);
    fputs(text, stderr); /* still shown, as every provoked line is */
    return text;
}

/* Ordered work on three streams (event waits between them) gives the sequential result, however
 * the workers interleave; a read or write of a range another stream wrote or read without an
 * event (or a host synchronisation) between them is reported naming both operations. */
static void test_async_hazards(void **state) {
    (void)state;
    enum { N = 3000, ROUNDS = 40 };
    CUstream s[3];
    CUevent ev[3];
    CUdeviceptr x, y;
    float *host = malloc(N * 4), *back = malloc(N * 4), *pinned = NULL;
    for (int i = 0; i < 3; i++) {
        OK(D.cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
        OK(D.cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    }
    OK(D.cuMemAlloc(&x, N * 4));
    OK(D.cuMemAlloc(&y, N * 4));
    OK(D.cuMemHostAlloc((void **)&pinned, N * 4, 0));
    /* A chain: round r uploads on stream r % 3 and copies x -> y on the next one; each step
     * waits for the previous step's event. The pageable source may change at once. */
    for (int r = 0; r < ROUNDS; r++) {
        int a = r % 3, b = (r + 1) % 3;
        for (int i = 0; i < N; i++) host[i] = (float)(r * N + i);
        if (r > 0) OK(D.cuStreamWaitEvent(s[a], ev[(r + 2) % 3], 0));
        OK(D.cuMemcpyHtoDAsync(x, host, N * 4, s[a]));
        OK(D.cuEventRecord(ev[a], s[a]));
        OK(D.cuStreamWaitEvent(s[b], ev[a], 0));
        OK(D.cuMemcpyDtoDAsync(y, x, N * 4, s[b]));
        OK(D.cuEventRecord(ev[b], s[b]));
        memset(host, 0, N * 4);
    }
    OK(D.cuStreamWaitEvent(s[0], ev[ROUNDS % 3], 0));
    OK(D.cuMemcpyDtoHAsync(pinned, y, N * 4, s[0]));
    OK(D.cuStreamSynchronize(s[0]));
    for (int i = 0; i < N; i++) assert_true(pinned[i] == (float)((ROUNDS - 1) * N + i));

    /* Read after write: stream 1 copies x while stream 0 may still be writing it. */
    OK(D.cuMemcpyHtoDAsync(x, host, N * 4, s[0]));
    int before = D.error_count();
    capture_begin();
    CUresult r = D.cuMemcpyDtoDAsync(y, x, N * 4, s[1]);
    char *text = capture_end(); /* before any assertion: a failing one would leave stderr captured */
    assert_int_equal(r, CUDA_SUCCESS);
    assert_int_equal(D.error_count() - before, 1);
    expected_errors++;
    assert_non_null(strstr(text, "fakecuda: error: hazard: cuMemcpyHtoDAsync"));
    assert_non_null(strstr(text, "cuMemcpyDtoDAsync of 12000 bytes on stream"));
    assert_non_null(strstr(text, "reads source"));
    assert_non_null(strstr(text, "TANDEM_FAKECUDA_SEED="));
    free(text);
    OK(D.cuCtxSynchronize());
    /* After a host synchronisation the same pattern is ordered. */
    OK(D.cuMemcpyHtoDAsync(x, host, N * 4, s[0]));
    OK(D.cuStreamSynchronize(s[0]));
    OK(D.cuMemcpyDtoDAsync(y, x, N * 4, s[1]));
    /* Write after write: stream 2 overwrites the y stream 1 is writing. */
    EXPECT_ERR(1, CUDA_SUCCESS, D.cuMemcpyHtoDAsync(y, host, N * 4, s[2]));
    OK(D.cuCtxSynchronize());
    /* Write after read: stream 0 reads y into pinned memory, stream 1 overwrites y. */
    OK(D.cuMemcpyDtoHAsync(pinned, y, N * 4, s[0]));
    EXPECT_ERR(1, CUDA_SUCCESS, D.cuMemcpyHtoDAsync(y, host, N * 4, s[1]));
    OK(D.cuCtxSynchronize());
    /* Pinned host memory is tracked too: stream 2 reads the pinned buffer stream 0 fills. */
    OK(D.cuMemcpyDtoHAsync(pinned, y, N * 4, s[0]));
    EXPECT_ERR(1, CUDA_SUCCESS, D.cuMemcpyHtoDAsync(x, pinned, N * 4, s[2]));
    OK(D.cuCtxSynchronize());
    /* Disjoint halves of one allocation on two streams: no hazard. An event query that
     * succeeds is a host synchronisation too. */
    OK(D.cuMemcpyHtoDAsync(x, host, N * 2, s[0]));
    OK(D.cuMemcpyHtoDAsync(x + N * 2, host, N * 2, s[1]));
    OK(D.cuEventRecord(ev[0], s[0]));
    OK(D.cuEventSynchronize(ev[0]));
    OK(D.cuMemcpyDtoDAsync(y, x, N * 2, s[2]));
    OK(D.cuCtxSynchronize());
    for (int i = 0; i < 3; i++) {
        OK(D.cuStreamDestroy(s[i]));
        OK(D.cuEventDestroy(ev[i]));
    }
    OK(D.cuMemFree(x));
    OK(D.cuMemFree(y));
    OK(D.cuMemFreeHost(pinned));
    free(host);
    free(back);
}

/* Launches declare what their kernel reads and writes (fc_access.c): kernels on two streams
 * touching one range without an event are reported; disjoint ranges of one allocation are not,
 * and an event wait orders them. The launch's argument struct is copied when it is queued. */
static void test_async_launch(void **state) {
    (void)state;
    size_t len;
    void *fatbin = read_fatbin(&len);
    if (!fatbin) skip();
    CUmodule mod;
    CUfunction fill, axpy;
    OK(D.cuModuleLoadData(&mod, fatbin));
    OK(D.cuModuleGetFunction(&fill, mod, "tandem_k_fill_f32"));
    OK(D.cuModuleGetFunction(&axpy, mod, "tandem_k_axpy_f32"));
    enum { N = 1000 };
    CUstream s[2];
    CUevent e;
    CUdeviceptr p;
    float *back = malloc(2 * N * 4);
    OK(D.cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING));
    OK(D.cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
    OK(D.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(D.cuMemAlloc(&p, 2 * N * 4));
    float *x = (float *)(uintptr_t)p, *y = x + N;
    tandem_launch_dims d;
    {
        tandem_k_fill_f32_args fx = {x, N, 3.0f}, fy = {y, N, 1.0f};
        tandem_kernel_table[TANDEM_KID_fill_f32].geom(&fx, &d);
        void *px[] = {&fx}, *py[] = {&fy};
        OK(D.cuLaunchKernel(fill, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s[0], px, NULL));
        OK(D.cuLaunchKernel(fill, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s[1], py, NULL)); /* disjoint */
        fx.value = -1.0f; /* the queued launch keeps its own copy of the arguments */
    }
    OK(D.cuEventRecord(e, s[0]));
    OK(D.cuStreamWaitEvent(s[1], e, 0));
    tandem_k_axpy_f32_args ax = {x, y, NULL, N, 2.0f}; /* y += 2 x, after both fills */
    void *pa[] = {&ax};
    OK(D.cuLaunchKernel(axpy, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s[1], pa, NULL));
    OK(D.cuMemcpyDtoHAsync(back, p, 2 * N * 4, s[1]));
    for (int i = 0; i < N; i++) assert_true(back[i] == 3.0f && back[N + i] == 7.0f);
    /* stream 0 writes x while stream 1's next axpy may be reading it: reported (the copy into
     * pageable memory above was a host synchronisation, so only this axpy is unordered) */
    OK(D.cuLaunchKernel(axpy, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s[1], pa, NULL));
    tandem_k_fill_f32_args fx2 = {x, N, 0.0f};
    void *px2[] = {&fx2};
    int before = D.error_count();
    capture_begin();
    CUresult r = D.cuLaunchKernel(fill, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s[0], px2, NULL);
    char *text = capture_end(); /* before any assertion: a failing one would leave stderr captured */
    assert_int_equal(r, CUDA_SUCCESS);
    assert_int_equal(D.error_count() - before, 1);
    expected_errors++;
    assert_non_null(strstr(text, "hazard: cuLaunchKernel tandem_k_axpy_f32 on stream"));
    assert_non_null(strstr(text, "reads ["));
    assert_non_null(strstr(text, "cuLaunchKernel tandem_k_fill_f32 on stream"));
    assert_non_null(strstr(text, "writes out"));
    free(text);
    OK(D.cuCtxSynchronize());
    OK(D.cuStreamDestroy(s[0]));
    OK(D.cuStreamDestroy(s[1]));
    OK(D.cuEventDestroy(e));
    OK(D.cuMemFree(p));
    OK(D.cuModuleUnload(mod));
    free(back);
    free(fatbin);
}

/* Events keep the flags they were created with (the backend asks for blocking sync where a
 * thread waits: issue 11 item 5). */
static void test_event_flags(void **state) {
    (void)state;
    int (*flags_of)(CUevent) = (int (*)(CUevent))dlsym(D.h, "tandem_fakecuda_event_flags");
    assert_non_null(flags_of);
    CUevent e;
    OK(D.cuEventCreate(&e, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));
    assert_int_equal(flags_of(e), CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING);
    OK(D.cuEventDestroy(e));
    assert_int_equal(flags_of(e), -1);
}

/* ---- stream capture and graphs ---- */

/* A graph records, does not run, and replays in order: x = 1 (eager), captured "wait for
 * another stream's event (external), x *= 2, record an external event, copy x into pinned
 * memory"; nothing changes at capture; three launches give x = 8; the external record
 * completes with each launch; the counts say 3 graph launches and no eager launch of them. */
static void test_graph_replay(void **state) {
    (void)state;
    size_t len;
    void *fatbin = read_fatbin(&len);
    if (!fatbin) skip();
    void (*counts)(int, void *) = (void (*)(int, void *))dlsym(D.h, "tandem_fakecuda_get_device_counts");
    assert_non_null(counts);
    uint64_t c0[11], c1[11]; /* tandem_fakecuda_dev_counts: 11 uint64_t in declaration order */
    CUmodule mod;
    CUfunction fill, scale;
    OK(D.cuModuleLoadData(&mod, fatbin));
    OK(D.cuModuleGetFunction(&fill, mod, "tandem_k_fill_f32"));
    OK(D.cuModuleGetFunction(&scale, mod, "tandem_k_scale_f32"));
    enum { N = 1000 };
    CUstream s, other;
    CUevent in, out;
    CUdeviceptr p;
    float *pin;
    OK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(D.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    OK(D.cuEventCreate(&in, 0));
    OK(D.cuEventCreate(&out, 0));
    OK(D.cuMemAlloc(&p, N * 4));
    OK(D.cuMemHostAlloc((void **)&pin, N * 4, 0));
    tandem_k_fill_f32_args fa = {(float *)(uintptr_t)p, N, 1.0f};
    tandem_k_scale_f32_args sa = {(float *)(uintptr_t)p, N, 2.0f};
    tandem_launch_dims d;
    tandem_kernel_table[TANDEM_KID_fill_f32].geom(&fa, &d);
    void *pf[] = {&fa}, *ps[] = {&sa};
    OK(D.cuLaunchKernel(fill, d.grid[0], 1, 1, d.block[0], 1, 1, 0, other, pf, NULL));
    OK(D.cuEventRecord(in, other));
    counts(0, c0);
    CUstreamCaptureStatus cs;
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(D.cuStreamIsCapturing(s, &cs));
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(D.cuStreamWaitEvent(s, in, CU_EVENT_WAIT_EXTERNAL));
    OK(D.cuLaunchKernel(scale, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s, ps, NULL));
    OK(D.cuEventRecordWithFlags(out, s, CU_EVENT_RECORD_EXTERNAL));
    OK(D.cuMemcpyDtoHAsync(pin, p, N * 4, s));
    CUgraph g;
    CUgraphExec x;
    OK(D.cuStreamEndCapture(s, &g));
    OK(D.cuStreamIsCapturing(s, &cs));
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
    OK(D.cuGraphInstantiateWithFlags(&x, g, 0));
    OK(D.cuGraphDestroy(g)); /* the executable keeps what it needs */
    OK(D.cuStreamSynchronize(other));
    OK(D.cuStreamSynchronize(s));
    float first;
    OK(D.cuMemcpyDtoHAsync(&first, p, 4, NULL));
    assert_true(first == 1.0f); /* captured, not run */
    for (int i = 0; i < 3; i++) OK(D.cuGraphLaunch(x, s));
    OK(D.cuEventSynchronize(out));
    OK(D.cuStreamSynchronize(s));
    for (int i = 0; i < N; i++) assert_true(pin[i] == 8.0f);
    counts(0, c1);
    printf("graph: 3 launches replayed 1 captured kernel each; counts: graph launches %llu, eager "
           "kernel launches %llu, captured %llu\n", (unsigned long long)(c1[2] - c0[2]),
           (unsigned long long)(c1[0] - c0[0]), (unsigned long long)(c1[1] - c0[1]));
    assert_int_equal(c1[2] - c0[2], 3);  /* graph_launches */
    assert_int_equal(c1[0] - c0[0], 0);  /* kernel_launches outside a capture */
    assert_int_equal(c1[1] - c0[1], 1);  /* captured */
    assert_int_equal(c1[3] - c0[3], 1);  /* instantiations */
    OK(D.cuGraphExecDestroy(x));
    EXPECT_ERR(1, CUDA_ERROR_INVALID_HANDLE, D.cuGraphLaunch(x, s));
    OK(D.cuStreamDestroy(s));
    OK(D.cuStreamDestroy(other));
    OK(D.cuEventDestroy(in));
    OK(D.cuEventDestroy(out));
    OK(D.cuMemFree(p));
    OK(D.cuMemFreeHost(pin));
    OK(D.cuModuleUnload(mod));
    free(fatbin);
}

/* End a capture that an earlier rejected call invalidated: no graph, no new error line. */
static void end_invalidated(CUstream s) {
    CUgraph g = (CUgraph)(uintptr_t)1;
    CUstreamCaptureStatus cs;
    OK(D.cuStreamIsCapturing(s, &cs));
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_ERR(0, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, D.cuStreamEndCapture(s, &g));
    assert_null(g);
    OK(D.cuStreamIsCapturing(s, &cs));
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
}

/* CUDA's capture modes decide who else may make a potentially unsafe call (here an event
 * synchronise) while a capture runs: in global mode no thread of the process (a real H100 failed
 * the data thread's cuEventSynchronize during the model thread's global capture, and the
 * capture with it), in thread-local mode every thread but the capturing one, in relaxed mode
 * the capturing thread too. */
typedef struct sync_job {
    CUcontext ctx;
    CUevent e;
    CUresult r;
} sync_job;

static void *sync_on_other_thread(void *arg) {
    sync_job *j = arg;
    j->r = D.cuCtxSetCurrent(j->ctx);
    if (j->r == CUDA_SUCCESS) j->r = D.cuEventSynchronize(j->e);
    return NULL;
}

static CUresult sync_from_other_thread(CUevent e) {
    sync_job j = {D.ctx[0], e, CUDA_ERROR_UNKNOWN};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sync_on_other_thread, &j), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    return j.r;
}

static void test_capture_modes(void **state) {
    (void)state;
    CUstream s, t;
    CUevent e;
    CUgraph g;
    OK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(D.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    OK(D.cuEventCreate(&e, 0));
    OK(D.cuEventRecord(e, t)); /* outside any capture */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, sync_from_other_thread(e));
    end_invalidated(s);
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(sync_from_other_thread(e));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuEventSynchronize(e));
    end_invalidated(s);
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CUdeviceptr q = 0;
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuMemAlloc(&q, 256));
    end_invalidated(s);
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(D.cuEventSynchronize(e));
    OK(sync_from_other_thread(e));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuStreamSynchronize(s)); /* never the capturing stream */
    end_invalidated(s);
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(D.cuStreamEndCapture(s, &g));
    OK(D.cuGraphDestroy(g));
    OK(D.cuEventDestroy(e));
    OK(D.cuStreamDestroy(s));
    OK(D.cuStreamDestroy(t));
}

/* What real capture rejects, one capture each: the code CUDA returns, one error line, and the
 * capture invalidated. */
static void test_capture_rejects(void **state) {
    (void)state;
    CUstream s, t;
    CUevent e, inside;
    CUdeviceptr p;
    float host[4];
    OK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(D.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    OK(D.cuEventCreate(&e, 0));
    OK(D.cuEventCreate(&inside, 0));
    OK(D.cuMemAlloc(&p, 256));
    OK(D.cuEventRecord(e, t));
    /* synchronising the capturing stream */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuStreamSynchronize(s));
    end_invalidated(s);
    /* synchronising its context */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuCtxSynchronize());
    end_invalidated(s);
    /* a synchronous copy (into pageable memory) */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuMemcpyDtoHAsync(host, p, sizeof host, s));
    end_invalidated(s);
    /* allocation, on any stream's behalf, during a global capture */
    CUdeviceptr q = 0;
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuMemAlloc(&q, 256));
    end_invalidated(s);
    /* querying the capturing stream */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, D.cuStreamQuery(s));
    end_invalidated(s);
    /* querying / synchronising an event recorded inside the capture */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(D.cuEventRecord(inside, s));
    EXPECT_ERR(1, CUDA_ERROR_CAPTURED_EVENT, D.cuEventQuery(inside));
    end_invalidated(s);
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(D.cuEventRecord(inside, s));
    EXPECT_ERR(1, CUDA_ERROR_CAPTURED_EVENT, D.cuEventSynchronize(inside));
    end_invalidated(s);
    EXPECT_ERR(1, CUDA_ERROR_CAPTURED_EVENT, D.cuEventQuery(inside)); /* it lives in no graph */
    OK(D.cuEventRecord(inside, s));
    /* the legacy default stream while a (global-mode) capture is under way */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, D.cuMemcpyHtoDAsync(p, host, sizeof host, NULL));
    end_invalidated(s);
    /* waiting on an event from outside the capture without CU_EVENT_WAIT_EXTERNAL */
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, D.cuStreamWaitEvent(s, e, 0));
    end_invalidated(s);
    /* ending the capture on another stream */
    CUgraph g = NULL;
    OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, D.cuStreamEndCapture(t, &g));
    end_invalidated(s);
    /* after all that the streams work */
    OK(D.cuMemcpyHtoDAsync(p, host, sizeof host, s));
    OK(D.cuStreamSynchronize(s));
    OK(D.cuStreamDestroy(s));
    OK(D.cuStreamDestroy(t));
    OK(D.cuEventDestroy(e));
    OK(D.cuEventDestroy(inside));
    OK(D.cuMemFree(p));
}

/* Fork and join inside a capture (how CUDA captures several streams): t waits on an event
 * recorded in s's capture and joins it; its work is captured (not run) and replayed in order;
 * the origin must wait on t's last work before the capture may end: an unjoined fork (or one
 * joined before its last work) is CUDA_ERROR_STREAM_CAPTURE_UNJOINED, and ending on the forked
 * stream is CUDA_ERROR_STREAM_CAPTURE_UNMATCHED. */
static void test_capture_fork_join(void **state) {
    (void)state;
    size_t len;
    void *fatbin = read_fatbin(&len);
    if (!fatbin) skip();
    enum { N = 300 };
    CUmodule mod;
    CUfunction fill, scale;
    CUstream s, t;
    CUevent fork, join;
    CUdeviceptr p;
    float *pin;
    OK(D.cuModuleLoadData(&mod, fatbin));
    OK(D.cuModuleGetFunction(&fill, mod, "tandem_k_fill_f32"));
    OK(D.cuModuleGetFunction(&scale, mod, "tandem_k_scale_f32"));
    OK(D.cuMemAlloc(&p, N * 4));
    OK(D.cuMemHostAlloc((void **)&pin, N * 4, 0));
    OK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(D.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    OK(D.cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    OK(D.cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    tandem_k_fill_f32_args fa = {(float *)(uintptr_t)p, N, 1.0f};
    tandem_k_scale_f32_args sa = {(float *)(uintptr_t)p, N, 3.0f};
    void *pf[] = {&fa}, *ps[] = {&sa};
    tandem_launch_dims d;
    tandem_kernel_table[TANDEM_KID_fill_f32].geom(&fa, &d);
    CUstreamCaptureStatus cs;
    CUgraph g = NULL, ok = NULL;
    for (int c = 0; c < 4; c++) { /* 0 joined, 1 never joined, 2 joined too early, 3 ended on t */
        OK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        OK(D.cuLaunchKernel(fill, d.grid[0], 1, 1, d.block[0], 1, 1, 0, s, pf, NULL));
        OK(D.cuEventRecord(fork, s));
        OK(D.cuStreamWaitEvent(t, fork, 0)); /* t joins the capture */
        OK(D.cuStreamIsCapturing(t, &cs));
        assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(D.cuLaunchKernel(scale, d.grid[0], 1, 1, d.block[0], 1, 1, 0, t, ps, NULL));
        if (c == 0 || c == 2) {
            OK(D.cuEventRecord(join, t));
            OK(D.cuStreamWaitEvent(s, join, 0));
        }
        if (c == 2) OK(D.cuLaunchKernel(scale, d.grid[0], 1, 1, d.block[0], 1, 1, 0, t, ps, NULL));
        OK(D.cuMemcpyDtoHAsync(pin, p, N * 4, s));
        if (c == 0) OK(D.cuStreamEndCapture(s, &g));
        else if (c == 3) {
            EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, D.cuStreamEndCapture(t, &g));
            end_invalidated(s);
        } else
            EXPECT_ERR(1, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, D.cuStreamEndCapture(s, &g));
        OK(D.cuStreamIsCapturing(t, &cs)); /* the fork left the capture with it */
        assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
        OK(D.cuStreamIsCapturing(s, &cs));
        assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
        if (c == 0) assert_non_null(ok = g);
        else assert_null(g);
    }
    CUgraphExec x;
    OK(D.cuGraphInstantiateWithFlags(&x, ok, 0));
    OK(D.cuStreamSynchronize(s));
    OK(D.cuStreamSynchronize(t));
    for (int i = 0; i < N; i++) pin[i] = 0.0f;
    OK(D.cuGraphLaunch(x, s));
    OK(D.cuStreamSynchronize(s));
    for (int i = 0; i < N; i++) assert_true(pin[i] == 3.0f); /* fill on s, scale on t, copy on s */
    OK(D.cuGraphExecDestroy(x));
    OK(D.cuGraphDestroy(ok));
    OK(D.cuStreamDestroy(s));
    OK(D.cuStreamDestroy(t));
    OK(D.cuEventDestroy(fork));
    OK(D.cuEventDestroy(join));
    OK(D.cuMemFree(p));
    OK(D.cuMemFreeHost(pin));
    OK(D.cuModuleUnload(mod));
    free(fatbin);
}

static void test_no_unexpected_errors(void **state) {
    (void)state;
    assert_int_equal(D.error_count(), expected_errors);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_devices, per_test),
        cmocka_unit_test_setup(test_proc_address, per_test),
        cmocka_unit_test_setup(test_bad_pointer, per_test),
        cmocka_unit_test_setup(test_overrun, per_test),
        cmocka_unit_test_setup(test_no_context, per_test),
        cmocka_unit_test_setup(test_destroyed_stream, per_test),
        cmocka_unit_test_setup(test_events_threads_peer, per_test),
        cmocka_unit_test_setup(test_module_launch, per_test),
        cmocka_unit_test_setup(test_matmul, per_test),
        cmocka_unit_test_setup(test_matmul_strict, per_test),
        cmocka_unit_test_setup(test_matmul_aux, per_test),
        cmocka_unit_test_setup(test_matmul_aux_rules, per_test),
        cmocka_unit_test_setup(test_config, per_test),
        cmocka_unit_test_setup(test_async_hazards, per_test),
        cmocka_unit_test_setup(test_async_launch, per_test),
        cmocka_unit_test_setup(test_event_flags, per_test),
        cmocka_unit_test_setup(test_launch_resources, per_test),
        cmocka_unit_test_setup(test_graph_replay, per_test),
        cmocka_unit_test_setup(test_capture_rejects, per_test),
        cmocka_unit_test_setup(test_capture_modes, per_test),
        cmocka_unit_test_setup(test_capture_fork_join, per_test),
        cmocka_unit_test(test_no_unexpected_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
