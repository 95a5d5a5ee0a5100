/* stage_times.c — per-stage time accounting (see stage_times.h). */
#include "runtime/data/stage_times.h"

#include <stdio.h>
#include <string.h>

static const char *const names[TANDEM_STAGE_COUNT] = {
    "read", "decode", "resample", "H2D copy", "feature kernels", "ring copy", "device resample",
    "decode WAV", "decode FLAC", "decode Ogg", "decode MP3", "decode other",
};

tandem_stage tandem_stage_decode_of(const char *format) {
    static const struct { const char *prefix; tandem_stage s; } map[] = {
        {"WAV", TANDEM_STAGE_DECODE_WAV}, {"FLAC", TANDEM_STAGE_DECODE_FLAC}, {"OGG", TANDEM_STAGE_DECODE_OGG},
        {"MPEG", TANDEM_STAGE_DECODE_MP3},
    };
    for (size_t i = 0; format && i < sizeof map / sizeof map[0]; i++)
        if (strncmp(format, map[i].prefix, strlen(map[i].prefix)) == 0) return map[i].s;
    return TANDEM_STAGE_DECODE_OTHER;
}

const char *tandem_stage_name(tandem_stage s) { return (unsigned)s < TANDEM_STAGE_COUNT ? names[s] : "?"; }

void tandem_stage_times_init(tandem_stage_times *t) {
    memset(t->st, 0, sizeof t->st);
    tandem_mutex_init(&t->m);
}

void tandem_stage_times_destroy(tandem_stage_times *t) {
    if (t) tandem_mutex_destroy(&t->m);
}

void tandem_stage_times_add(tandem_stage_times *t, tandem_stage s, double ms) {
    if ((unsigned)s >= TANDEM_STAGE_COUNT) return;
    if (ms < 0) ms = 0; /* event clocks of a device can disagree by a tick */
    tandem_mutex_lock(&t->m);
    tandem_stage_stat *x = &t->st[s];
    if (x->count == 0 || ms < x->min_ms) x->min_ms = ms;
    if (ms > x->max_ms) x->max_ms = ms;
    x->total_ms += ms;
    x->count++;
    tandem_mutex_unlock(&t->m);
}

void tandem_stage_times_get(tandem_stage_times *t, tandem_stage_stat out[TANDEM_STAGE_COUNT]) {
    tandem_mutex_lock(&t->m);
    memcpy(out, t->st, sizeof t->st);
    tandem_mutex_unlock(&t->m);
}

size_t tandem_stage_times_format(const tandem_stage_stat st[TANDEM_STAGE_COUNT], double wall_ms, char *buf,
                                 size_t cap) {
    size_t len = 0;
#define APPEND(...)                                                                     \
    do {                                                                                \
        int n_ = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0, __VA_ARGS__); \
        if (n_ > 0) len += (size_t)n_;                                                  \
    } while (0)
    APPEND("  %-16s %8s %11s %10s %10s %10s %8s\n", "stage", "count", "total ms", "mean ms", "min ms",
           "max ms", "% wall");
    for (int s = 0; s < TANDEM_STAGE_COUNT; s++) {
        const tandem_stage_stat *x = &st[s];
        if (x->count == 0) {
            APPEND("  %-16s %8d %11s %10s %10s %10s %8s\n", names[s], 0, "-", "-", "-", "-", "-");
            continue;
        }
        APPEND("  %-16s %8llu %11.1f %10.3f %10.3f %10.3f %7.1f%%\n", names[s], (unsigned long long)x->count,
               x->total_ms, x->total_ms / (double)x->count, x->min_ms, x->max_ms,
               wall_ms > 0 ? 100.0 * x->total_ms / wall_ms : 0.0);
    }
#undef APPEND
    return len;
}
