/* emu_atomic.c — CUDA atomics. Fibers of one block never preempt each other, but blocks may
 * run on several OS threads at once, so these are real atomic read-modify-writes. Each
 * returns the old value, like CUDA. */
#include <string.h>

#include "test/emu/emu_rt.h"

int tandem_emu_atomic_add_i32(int *p, int v) {
    /* Two's-complement wrap-around like the GPU, without signed-overflow UB. */
    return (int)__atomic_fetch_add((unsigned *)p, (unsigned)v, __ATOMIC_RELAXED);
}

unsigned tandem_emu_atomic_add_u32(unsigned *p, unsigned v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

float tandem_emu_atomic_add_f32(float *p, float v) {
    uint32_t *u = (uint32_t *)(void *)p;
    uint32_t old = __atomic_load_n(u, __ATOMIC_RELAXED), want;
    float f;
    do {
        memcpy(&f, &old, sizeof f);
        f += v;
        memcpy(&want, &f, sizeof want);
    } while (!__atomic_compare_exchange_n(u, &old, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    memcpy(&f, &old, sizeof f);
    return f;
}

int tandem_emu_atomic_max_i32(int *p, int v) {
    int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

int tandem_emu_atomic_cas_i32(int *p, int cmp, int v) {
    __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp; /* the old value whether or not it matched */
}

unsigned tandem_emu_atomic_cas_u32(unsigned *p, unsigned cmp, unsigned v) {
    __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
