/* testutil.h — small helpers shared by tests: a seeded RNG, the replayable seed, whether a
 * fatbin was built. Header-only (the emulator and fuzz code use it too); the fixtures that
 * need cmocka or libraries are in test/fixtures.h. */
#ifndef TANDEM_TEST_UTIL_H
#define TANDEM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tandem_rng { uint64_t s; } tandem_rng;

static inline uint64_t tandem_rng_next(tandem_rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline float tandem_rng_uniform(tandem_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)((tandem_rng_next(r) >> 40) * (1.0 / 16777216.0));
}
static inline int64_t tandem_rng_int(tandem_rng *r, int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(tandem_rng_next(r) % (uint64_t)(hi - lo + 1));
}
/* p[0 .. n) uniform in [lo, hi), drawn in index order. */
static inline void tandem_rng_fill(tandem_rng *r, float *p, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) p[i] = tandem_rng_uniform(r, lo, hi);
}
/* n random bytes (the low byte of one draw each). */
static inline void tandem_rng_fill_bytes(tandem_rng *r, void *p, size_t n) {
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)tandem_rng_next(r);
}
/* Seed from $TANDEM_TEST_SEED or the clock; printed so a failure can be replayed. */
static inline uint64_t tandem_test_seed(const char *what) {
    const char *e = getenv("TANDEM_TEST_SEED");
    uint64_t s = e ? strtoull(e, NULL, 0) : ((uint64_t)time(NULL) ^ ((uint64_t)clock() << 32));
    printf("%s: seed %llu (replay with TANDEM_TEST_SEED=%llu)\n", what, (unsigned long long)s,
           (unsigned long long)s);
    return s;
}

/* Whether this build has a fatbin (nvcc was there): the stand-in driver runs kernels from it,
 * so a host-only build skips the CUDA parts of a test. */
/* Whether the cuda variant runs on the real driver (`make test-gpu`): what only the stand-in can
 * stage (injected stream delays, a modelled slow device, its two GPUs) is skipped there. */
static inline int tandem_test_real_gpu(void) {
    const char *v = getenv("TANDEM_TEST_REAL_GPU");
    return v && strcmp(v, "1") == 0;
}

static inline int tandem_test_have_fatbin(void) {
#ifdef TANDEM_TEST_BUILD_DIR
    FILE *f = fopen(TANDEM_TEST_BUILD_DIR "/tandem.fatbin", "rb");
    if (!f) return 0;
    int c = fgetc(f);
    fclose(f);
    return c != EOF;
#else
    return 1;
#endif
}

#endif
