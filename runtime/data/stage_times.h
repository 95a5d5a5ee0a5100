/* stage_times.h — per-stage time accounting of the data pipeline (DESIGN.md §8).
 *
 * Each stage accumulates a count of items and the total, minimum and maximum time; loader
 * threads and the data-device thread add to it concurrently (one mutex; additions are rare
 * compared with the work they time). Device stages are timed by events on the device's
 * stream (on host devices those carry monotonic clock stamps around the same regions).
 * Owns: nothing on the heap.
 */
#ifndef TANDEM_RUNTIME_STAGE_TIMES_H
#define TANDEM_RUNTIME_STAGE_TIMES_H

#include <stddef.h>
#include <stdint.h>

#include "platform/os/os.h"

typedef enum tandem_stage {
    TANDEM_STAGE_READ = 0,     /* file bytes through the OS (per file) */
    TANDEM_STAGE_DECODE,       /* libsndfile decode + downmix, every file (per file) */
    TANDEM_STAGE_RESAMPLE,     /* libsamplerate alone, files at rates the data device does not
                                  resample (per such file) */
    TANDEM_STAGE_H2D,          /* staged audio batch → data device (per batch) */
    TANDEM_STAGE_FEATURES,     /* log-mel kernels + GEMM on the data device (per batch) */
    TANDEM_STAGE_RING_COPY,    /* features → ring slot on the model device (per batch) */
    TANDEM_STAGE_DEVICE_RESAMPLE, /* the resampling kernel on the data device (per batch) */
    /* decode (as TANDEM_STAGE_DECODE) split by the file's container, per file of it */
    TANDEM_STAGE_DECODE_WAV,
    TANDEM_STAGE_DECODE_FLAC,
    TANDEM_STAGE_DECODE_OGG,   /* Vorbis or Opus */
    TANDEM_STAGE_DECODE_MP3,
    TANDEM_STAGE_DECODE_OTHER,
    TANDEM_STAGE_COUNT
} tandem_stage;

typedef struct tandem_stage_stat {
    uint64_t count;
    double total_ms, min_ms, max_ms;
} tandem_stage_stat;

typedef struct tandem_stage_times {
    tandem_mutex m;
    tandem_stage_stat st[TANDEM_STAGE_COUNT];
} tandem_stage_times;

const char *tandem_stage_name(tandem_stage s);
/* The per-format decode stage of a libsndfile format name ("WAV (Microsoft) / ..."). */
tandem_stage tandem_stage_decode_of(const char *format);
void tandem_stage_times_init(tandem_stage_times *t);
void tandem_stage_times_destroy(tandem_stage_times *t);
void tandem_stage_times_add(tandem_stage_times *t, tandem_stage s, double ms);
/* A consistent copy of every stage. */
void tandem_stage_times_get(tandem_stage_times *t, tandem_stage_stat out[TANDEM_STAGE_COUNT]);
/* The table: one line per stage with count, total, mean, min, max and share of wall time
 * (wall_ms > 0). snprintf contract. */
size_t tandem_stage_times_format(const tandem_stage_stat st[TANDEM_STAGE_COUNT], double wall_ms, char *buf,
                                 size_t cap);

#endif
