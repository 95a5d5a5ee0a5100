/* buckets.c — length classes and the one-class-per-batch sampler (see buckets.h). */
#include "runtime/data/buckets.h"

#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t round_up(uint32_t v, uint32_t r) { return r > 1 ? (v + r - 1) / r * r : v; }

tandem_status tandem_buckets_choose(const uint32_t *lengths, uint32_t count, uint32_t k, uint32_t max_frames,
                                    uint32_t round, uint32_t *out_frames, uint32_t *out_k) {
    if (!lengths || !out_frames || !out_k || count == 0 || k == 0 || k > TANDEM_BUCKETS_MAX)
        return tandem_fail(TANDEM_E_INVALID, "buckets: %u classes for %u utterances: expected 1..%d classes and "
                           "at least one utterance", k, count, TANDEM_BUCKETS_MAX);
    uint32_t *sorted = tandem_malloc(sizeof(uint32_t) * count);
    if (!sorted) return tandem_fail(TANDEM_E_NOMEM, "buckets: %u lengths", count);
    memcpy(sorted, lengths, sizeof(uint32_t) * count);
    qsort(sorted, count, sizeof(uint32_t), cmp_u32);
    uint32_t n = 0;
    for (uint32_t i = 1; i <= k; i++) {
        /* the i/k quantile; the last class holds the longest utterance */
        uint64_t at = (uint64_t)count * i / k;
        uint32_t f = round_up(sorted[at ? at - 1 : 0], round);
        if (f > max_frames || (i == k && k == 1)) f = max_frames; /* k = 1: today's one shape */
        if (n == 0 || f > out_frames[n - 1]) out_frames[n++] = f;
    }
    tandem_free(sorted);
    *out_k = n;
    return TANDEM_OK;
}

tandem_status tandem_buckets_for_index(const tandem_text_index *ix, int buckets, int max_frames, int reduction,
                                       uint32_t *lengths, uint32_t *frames, uint32_t *out_k, double *real) {
    *out_k = 0;
    if (real) *real = 1.0;
    const uint32_t n = ix->n_train;
    if (buckets <= 1 && !lengths && !real) return TANDEM_OK;
    uint32_t *len = lengths ? lengths : tandem_malloc(sizeof(uint32_t) * (n ? n : 1));
    if (!len) return tandem_fail(TANDEM_E_NOMEM, "buckets: %u lengths", n);
    for (uint32_t i = 0; i < n; i++) {
        /* one frame of slack: a resampled file's decoded length may differ from its header's
           by a sample, and a row too short for it would skip it for the epoch */
        const uint32_t s = ix->utts[ix->train[i]].n_samples, f = s / TANDEM_MEL_HOP + 1;
        len[i] = s == 0 || f > (uint32_t)max_frames ? (uint32_t)max_frames : f;
    }
    tandem_status st = TANDEM_OK;
    if (buckets > 1 && n > 0) {
        st = tandem_buckets_choose(len, n, (uint32_t)buckets, (uint32_t)max_frames, (uint32_t)reduction, frames, out_k);
        /* the last class holds the longest utterance (<= max_frames): planned at max_frames */
        if (st == TANDEM_OK) frames[*out_k - 1] = (uint32_t)max_frames;
        if (st == TANDEM_OK && real) *real = tandem_buckets_real_fraction(len, n, frames, *out_k);
    } else if (real && n > 0) { /* one shape: max_frames */
        const uint32_t mf = (uint32_t)max_frames;
        *real = tandem_buckets_real_fraction(len, n, &mf, 1);
    }
    if (!lengths) tandem_free(len);
    return st;
}

static uint32_t class_of(uint32_t len, const uint32_t *frames, uint32_t k) {
    uint32_t c = 0;
    while (c + 1 < k && len > frames[c]) c++;
    return c;
}

double tandem_buckets_real_fraction(const uint32_t *lengths, uint32_t count, const uint32_t *frames, uint32_t k) {
    double real = 0, planned = 0;
    for (uint32_t i = 0; i < count; i++) {
        real += lengths[i];
        planned += frames[class_of(lengths[i], frames, k)];
    }
    return planned > 0 ? real / planned : 0;
}

/* The plan of one epoch: a function of (seed, epoch) only. */
static void build_epoch(tandem_bucket_sampler *s, int64_t epoch) {
    uint32_t w = 0, nb = 0, carry_from = 0; /* order[carry_from .. w) is the carried remainder */
    for (uint32_t c = 0; c < s->k; c++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < s->count; i++)
            if (s->cls[i] == c) s->scratch[n++] = i;
        /* permute this class's members: seed mixed with the class so that classes are unrelated */
        uint32_t *perm = s->scratch + n;
        tandem_sampler_permutation(perm, n, s->seed ^ (0x9e3779b97f4a7c15ull * (c + 1)), epoch, s->shuffle);
        for (uint32_t i = 0; i < n; i++) s->order[w + i] = s->items[s->scratch[perm[i]]];
        w += n;
        while (w - carry_from >= s->batch || (c + 1 == s->k && w > carry_from)) {
            s->bstart[nb] = carry_from;
            s->bcls[nb++] = (uint8_t)c;
            carry_from += w - carry_from < s->batch ? w - carry_from : s->batch;
        }
    }
    s->nbatch = nb;
    tandem_sampler_permutation(s->bperm, nb, s->seed ^ 0x6275636b657473ull, epoch, s->shuffle);
}

tandem_status tandem_bucket_sampler_init(tandem_bucket_sampler *s, const uint32_t *items, const uint32_t *lengths,
                                         uint32_t count, const uint32_t *frames, uint32_t k, uint32_t batch,
                                         uint64_t seed, int shuffle) {
    if (s) memset(s, 0, sizeof *s);
    if (!s || !items || !lengths || !frames || count == 0 || batch == 0 || k == 0 || k > TANDEM_BUCKETS_MAX)
        return tandem_fail(TANDEM_E_INVALID, "bucket sampler: expected items, lengths, 1..%d classes and batch >= 1 "
                           "(got %u items, %u classes, batch %u)", TANDEM_BUCKETS_MAX, count, k, batch);
    for (uint32_t c = 0; c < k; c++)
        if (frames[c] == 0 || (c && frames[c] <= frames[c - 1]))
            return tandem_fail(TANDEM_E_INVALID, "bucket_frames[%u] = %u: expected ascending positive frame counts",
                               c, frames[c]);
    for (uint32_t i = 0; i < count; i++)
        if (lengths[i] > frames[k - 1])
            return tandem_fail(TANDEM_E_INVALID, "utterance %u has %u frames: the largest class holds %u; raise "
                               "the last bucket_frames entry or max_frames", items[i], lengths[i], frames[k - 1]);
    uint32_t nbmax = (count + batch - 1) / batch;
    s->items = tandem_malloc(sizeof(uint32_t) * count);
    s->cls = tandem_malloc(count);
    s->order = tandem_malloc(sizeof(uint32_t) * count);
    s->scratch = tandem_malloc(sizeof(uint32_t) * count * 2);
    s->bstart = tandem_malloc(sizeof(uint32_t) * nbmax);
    s->bcls = tandem_malloc(nbmax);
    s->bperm = tandem_malloc(sizeof(uint32_t) * nbmax);
    if (!s->items || !s->cls || !s->order || !s->scratch || !s->bstart || !s->bcls || !s->bperm) {
        tandem_bucket_sampler_free(s);
        return tandem_fail(TANDEM_E_NOMEM, "bucket sampler: %u items", count);
    }
    memcpy(s->items, items, sizeof(uint32_t) * count);
    for (uint32_t i = 0; i < count; i++) s->cls[i] = (uint8_t)class_of(lengths[i], frames, k);
    memcpy(s->frames, frames, sizeof(uint32_t) * k);
    s->count = count;
    s->k = k;
    s->batch = batch;
    s->seed = seed;
    s->shuffle = shuffle != 0;
    build_epoch(s, 0);
    return TANDEM_OK;
}

void tandem_bucket_sampler_free(tandem_bucket_sampler *s) {
    if (!s) return;
    tandem_free(s->items);
    tandem_free(s->cls);
    tandem_free(s->order);
    tandem_free(s->scratch);
    tandem_free(s->bstart);
    tandem_free(s->bcls);
    tandem_free(s->bperm);
    memset(s, 0, sizeof *s);
}

uint32_t tandem_bucket_sampler_next(tandem_bucket_sampler *s, uint32_t *out, uint32_t *cls, tandem_sampler_pos *at) {
    if (at) *at = s->pos;
    uint32_t b = s->bperm[s->pos.index];
    uint32_t start = s->bstart[b];
    uint32_t end = b + 1 < s->nbatch ? s->bstart[b + 1] : s->count;
    uint32_t n = end - start;
    for (uint32_t r = 0; r < s->batch; r++) out[r] = s->order[start + r % n];
    *cls = s->bcls[b];
    if (++s->pos.index == s->nbatch) {
        s->pos.index = 0;
        s->pos.epoch++;
        build_epoch(s, s->pos.epoch);
    }
    return n;
}

tandem_status tandem_bucket_sampler_set_pos(tandem_bucket_sampler *s, tandem_sampler_pos pos) {
    if (pos.epoch < 0 || pos.index < 0 || pos.index >= (int64_t)s->nbatch)
        return tandem_fail(TANDEM_E_INVALID, "bucket sampler position (epoch %lld, batch %lld): expected epoch >= 0 "
                           "and batch in [0, %u)", (long long)pos.epoch, (long long)pos.index, s->nbatch);
    if (pos.epoch != s->pos.epoch) build_epoch(s, pos.epoch);
    s->pos = pos;
    return TANDEM_OK;
}
