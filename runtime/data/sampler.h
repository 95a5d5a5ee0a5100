/* sampler.h — the order in which training utterances are visited (DESIGN.md §6).
 *
 * A stream of positions (epoch, index): epoch e visits every usable utterance once, in a
 * permutation drawn from seed + e (Fisher–Yates driven by splitmix64), or in index order when
 * shuffling is off. Batches are consecutive runs of this stream, so a batch may span an epoch
 * boundary; the stream itself never drops or repeats an utterance within an epoch.
 * The position is what a checkpoint stores: setting it reproduces the same stream from there.
 * Owns: the item list (copied) and the current epoch's permutation, allocated at init so
 * that next/set allocate nothing. Not thread-safe: callers serialise.
 */
#ifndef TANDEM_RUNTIME_SAMPLER_H
#define TANDEM_RUNTIME_SAMPLER_H

#include <stdint.h>

#include "tandem.h"

typedef struct tandem_sampler_pos {
    int64_t epoch; /* 0-based */
    int64_t index; /* next item within the epoch's order, 0 .. count-1 */
} tandem_sampler_pos;

typedef struct tandem_sampler {
    uint32_t *items; /* [count] the values handed out (e.g. utterance indices) */
    uint32_t *perm;  /* [count] order of the current epoch: perm[i] indexes items */
    uint32_t count;
    uint64_t seed;
    int shuffle;
    tandem_sampler_pos pos;
    /* data-parallel shard (tandem_sampler_shard): of the stream from the last set_pos (or the
       start), runs of chunk items go to ranks 0, 1, .., world-1 in turn; this one hands out
       only rank's runs. world <= 1: everything. seen: items passed since that position. */
    int shard_world, shard_rank;
    int64_t shard_chunk, shard_seen;
} tandem_sampler;

/* items: [count] values to visit (count >= 1). Starts at (0, 0). On failure *s is zeroed. */
tandem_status tandem_sampler_init(tandem_sampler *s, const uint32_t *items, uint32_t count,
                                  uint64_t seed, int shuffle);
void tandem_sampler_free(tandem_sampler *s);

/* Data-parallel: hand out only runs rank, rank + world, ... of chunk items (counted from the
 * current position; set_pos restarts the count), so rank r of world W sees exactly the items
 * single-device training would put in places r*chunk .. (r+1)*chunk-1 of every W*chunk. */
tandem_status tandem_sampler_shard(tandem_sampler *s, int world, int rank, int64_t chunk);
/* The next item; *at (may be NULL) receives its position. Advances by one. */
uint32_t tandem_sampler_next(tandem_sampler *s, tandem_sampler_pos *at);
/* perm [n] := the permutation of 0..n-1 for (seed, epoch), identity when !shuffle; the
 * sampler's own order (shared with the bucket sampler). Allocates nothing. */
void tandem_sampler_permutation(uint32_t *perm, uint32_t n, uint64_t seed, int64_t epoch, int shuffle);
tandem_sampler_pos tandem_sampler_get_pos(const tandem_sampler *s);
/* Resume at pos (index in [0, count), epoch >= 0); TANDEM_E_INVALID otherwise. */
tandem_status tandem_sampler_set_pos(tandem_sampler *s, tandem_sampler_pos pos);

#endif
