/* buckets.h — length bucketing: a small fixed set of frame-count classes and a sampler that
 * draws batches of one class each (issue 14; DESIGN.md §6).
 *
 * Classes: tandem_buckets_choose picks k ascending max_frames values from the corpus's length
 * distribution at index time (the i/k quantiles, rounded up to `round` frames; the last class
 * covers the longest utterance, capped at max_frames). k = 1 gives one class (today's shape when
 * the caller passes max_frames as the only class).
 * Sampler: epoch e visits every item exactly once. Each item belongs to the smallest class that
 * holds it; a class's items are permuted (seed, epoch, class), cut into batches of `batch`, and
 * the remainder (< batch) moves up to the next class, where it still fits; the largest class's
 * remainder is one short batch (n_real < batch; its free rows repeat the batch's own items so the
 * shape stays fixed — the caller masks them). The epoch's batch order is then permuted (seed,
 * epoch). Position = (epoch, batch index): setting it rebuilds the same remaining batches.
 * Owns: copies of the items and their classes, the epoch plan; allocated at init, so next/set
 * allocate nothing. Not thread-safe: callers serialise.
 * Wired: the loader draws its batches from it when the config's `buckets` > 1 (loader.h), the
 * model plans every class (model.h, class_frames), the trainer keeps its position.
 */
#ifndef TANDEM_RUNTIME_BUCKETS_H
#define TANDEM_RUNTIME_BUCKETS_H

#include <stdint.h>

#include "runtime/data/sampler.h"
#include "runtime/data/text_index.h"

#define TANDEM_BUCKETS_MAX 8

/* lengths: [count] frames per utterance. out_frames: [k] ascending classes, written k' <= k
 * distinct values; *out_k receives k'. Allocates a sorted copy (index time only). */
tandem_status tandem_buckets_choose(const uint32_t *lengths, uint32_t count, uint32_t k, uint32_t max_frames,
                                    uint32_t round, uint32_t *out_frames, uint32_t *out_k);

/* A run's shape classes (length bucketing): buckets <= 1: none (*out_k = 0). Otherwise the
 * classes of tandem_buckets_choose over the frame counts of ix's training utterances
 * (n_samples / hop + 1, a frame of slack for a resampled file's length; an unscanned one
 * counts as max_frames), rounded up to reduction, the largest
 * always max_frames (the shape every tensor is planned for). lengths (may be NULL): [n_train]
 * receives the frame counts; *real (may be NULL) the real-frame fraction they give (without
 * classes: that of max_frames alone). Allocates a
 * scratch copy (index time only). */
tandem_status tandem_buckets_for_index(const tandem_text_index *ix, int buckets, int max_frames, int reduction,
                                       uint32_t *lengths, uint32_t *frames, uint32_t *out_k, double *real);

/* Real frames / planned frames (0..1) when every item is padded to its class (no carry-up). */
double tandem_buckets_real_fraction(const uint32_t *lengths, uint32_t count, const uint32_t *frames, uint32_t k);

typedef struct tandem_bucket_sampler {
    uint32_t *items;      /* [count] values handed out */
    uint8_t *cls;         /* [count] class of each item */
    uint32_t *order;      /* [count] this epoch's items, batch after batch (plan order) */
    uint32_t *bstart;     /* [nbatch] offset of batch b in order */
    uint8_t *bcls;        /* [nbatch] class of batch b */
    uint32_t *bperm;      /* [nbatch] visiting order of the batches */
    uint32_t *scratch;    /* [count] per-class permutation */
    uint32_t count, nbatch, batch, k;
    uint32_t frames[TANDEM_BUCKETS_MAX];
    uint64_t seed;
    int shuffle;
    tandem_sampler_pos pos; /* index = batch index within the epoch */
} tandem_bucket_sampler;

/* lengths/items: [count]; frames: [k] ascending (k <= TANDEM_BUCKETS_MAX); every length must
 * be <= frames[k-1]. On failure *s is zeroed. */
tandem_status tandem_bucket_sampler_init(tandem_bucket_sampler *s, const uint32_t *items, const uint32_t *lengths,
                                         uint32_t count, const uint32_t *frames, uint32_t k, uint32_t batch,
                                         uint64_t seed, int shuffle);
void tandem_bucket_sampler_free(tandem_bucket_sampler *s);
/* The next batch: out [batch] items, *cls its class, returns n_real (rows 0..n_real-1 are
 * distinct items; later rows repeat them). *at (may be NULL) receives its position. */
uint32_t tandem_bucket_sampler_next(tandem_bucket_sampler *s, uint32_t *out, uint32_t *cls, tandem_sampler_pos *at);
tandem_status tandem_bucket_sampler_set_pos(tandem_bucket_sampler *s, tandem_sampler_pos pos);

#endif
