/* sampler.c — seeded per-epoch permutations (see sampler.h). */
#include "runtime/data/sampler.h"

#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Unbiased integer in [0, n) by rejection (n <= 2^32). */
static uint32_t below(uint64_t *state, uint32_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = splitmix64(state);
    while (r >= limit);
    return (uint32_t)(r % n);
}

void tandem_sampler_permutation(uint32_t *perm, uint32_t n, uint64_t seed, int64_t epoch, int shuffle) {
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    if (!shuffle || n < 2) return;
    /* mix the epoch in through one splitmix step so that neighbouring epochs are unrelated */
    uint64_t st = seed ^ 0x73616d706c6572ull;
    uint64_t e = (uint64_t)epoch;
    st = splitmix64(&e) ^ splitmix64(&st);
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = below(&st, i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* perm for one epoch: a function of (seed, epoch) only, so any position can be rebuilt. */
static void build_perm(const tandem_sampler *s, int64_t epoch, uint32_t *perm) {
    tandem_sampler_permutation(perm, s->count, s->seed, epoch, s->shuffle);
}

tandem_status tandem_sampler_init(tandem_sampler *s, const uint32_t *items, uint32_t count, uint64_t seed,
                                  int shuffle) {
    if (s) memset(s, 0, sizeof *s);
    if (!s || !items || count == 0)
        return tandem_fail(TANDEM_E_INVALID, "sampler: %s", !s || !items ? "NULL argument" : "no items to sample");
    s->items = tandem_malloc(sizeof(uint32_t) * count);
    s->perm = tandem_malloc(sizeof(uint32_t) * count);
    if (!s->items || !s->perm) {
        tandem_sampler_free(s);
        return tandem_fail(TANDEM_E_NOMEM, "sampler: %u items", count);
    }
    memcpy(s->items, items, sizeof(uint32_t) * count);
    s->count = count;
    s->seed = seed;
    s->shuffle = shuffle != 0;
    build_perm(s, 0, s->perm);
    return TANDEM_OK;
}

void tandem_sampler_free(tandem_sampler *s) {
    if (!s) return;
    tandem_free(s->items);
    tandem_free(s->perm);
    memset(s, 0, sizeof *s);
}

static uint32_t next_one(tandem_sampler *s, tandem_sampler_pos *at) {
    if (at) *at = s->pos;
    uint32_t v = s->items[s->perm[s->pos.index]];
    if (++s->pos.index == s->count) {
        s->pos.index = 0;
        s->pos.epoch++;
        build_perm(s, s->pos.epoch, s->perm);
    }
    return v;
}

uint32_t tandem_sampler_next(tandem_sampler *s, tandem_sampler_pos *at) {
    for (;;) {
        const int mine = s->shard_world <= 1 || (s->shard_seen / s->shard_chunk) % s->shard_world == s->shard_rank;
        s->shard_seen++;
        uint32_t v = next_one(s, at);
        if (mine) return v;
    }
}

tandem_status tandem_sampler_shard(tandem_sampler *s, int world, int rank, int64_t chunk) {
    if (world > 1 && (rank < 0 || rank >= world || chunk < 1))
        return tandem_fail(TANDEM_E_INVALID, "sampler shard: rank %d of %d, chunk %lld; expected 0 <= rank < "
                           "world and chunk >= 1", rank, world, (long long)chunk);
    s->shard_world = world, s->shard_rank = rank, s->shard_chunk = chunk, s->shard_seen = 0;
    return TANDEM_OK;
}

tandem_sampler_pos tandem_sampler_get_pos(const tandem_sampler *s) { return s->pos; }

tandem_status tandem_sampler_set_pos(tandem_sampler *s, tandem_sampler_pos pos) {
    if (pos.epoch < 0 || pos.index < 0 || pos.index >= (int64_t)s->count)
        return tandem_fail(TANDEM_E_INVALID, "sampler position (epoch %lld, index %lld): expected epoch >= 0 "
                           "and index in [0, %u)", (long long)pos.epoch, (long long)pos.index, s->count);
    if (pos.epoch != s->pos.epoch) build_perm(s, pos.epoch, s->perm);
    s->pos = pos;
    s->shard_seen = 0;
    return TANDEM_OK;
}
