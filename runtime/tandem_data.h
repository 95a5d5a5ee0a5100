/* tandem_data.h — datasets: preparing one (index + text cache) and running the data side of
 * training alone (part of tandem.h; include tandem.h).
 *
 * A dataset is a directory in the LJSpeech layout: metadata.csv (id|text|normalized text) and
 * wavs/<id>.wav (or .flac, .ogg), the generic id|speaker|text metadata.csv, or a VCTK or LibriTTS
 * tree (docs/FORMATS.md, "dataset layouts"; found without metadata.csv, or named by dataset_layout). Preparing it parses and checks every row, runs the text frontend
 * on worker threads and stores the result in the persistent text cache, so a trainer opening the
 * same data later loads it in one read. The data run is `tandem pipeline`: the data device
 * featurises batches into the ring on the model device and a consumer checks and releases them.
 *
 * Threads: both calls block the calling thread and start (and join) their own workers; calls may
 * run on any threads, not sharing a report. Allocation: each call allocates what it needs and
 * frees it before returning; the reports are plain data owned by the caller.
 * Errors: TANDEM_E_INVALID for a dataset or option the caller can fix (no usable utterance, an
 * option out of range), TANDEM_E_FORMAT for a corrupt cache or audio, TANDEM_E_IO, _DEVICE,
 * _NOMEM otherwise; TANDEM_E_INTERNAL when a batch fails the data run's checks. */
/* tandem.h first, outside the guard: it includes every public header in order, this one too */
#include "tandem.h"

#ifndef TANDEM_DATA_PUBLIC_H
#define TANDEM_DATA_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- prep ----------------------------------------------------------------------------------- */

/* Reasons a metadata row is skipped, in this order (tandem_data_skip_reason_name names them):
 * column count, bad id, duplicate id, no audio, empty text, bad UTF-8, unknown symbol, too long,
 * bad speaker, no text (directory layouts: audio without a transcript), unreadable text file
 * (directory layouts: a transcript that is not a regular file, too large or unreadable). */
#define TANDEM_DATA_SKIP_REASONS 11

typedef struct tandem_data_prep_options {
    const char *data_dir;  /* required */
    int raw_text;          /* 0 (default): the normalized (3rd) column; 1: the text (2nd) column */
    int max_text;          /* tokens per utterance incl. <lang> BOS EOS, 4..65535 (default 128) */
    int max_frames;        /* mel frames per utterance, 16..16384 (default 512): longer audio is
                              left out of train / val */
    int num_workers;       /* frontend threads, 0 = CPU count (default) */
    double val_fraction;   /* share held out for validation, seeded, [0, 1) (default 0) */
    uint64_t seed;         /* of the validation split (default 0) */
    int check_audio;       /* 1 (default): require the audio files and read their durations */
    int use_cache;         /* 1 (default): read / write the text cache */
    const char *cache_dir; /* NULL (default): the index's default cache directory */
    int layout;            /* 0 (default): auto; 1 LJSpeech, 2 generic, 3 VCTK, 4 LibriTTS (the
                              config key dataset_layout; docs/FORMATS.md) */
    int vctk_mic;          /* VCTK 0.92's microphone, 1 (default) or 2 */
} tandem_data_prep_options;

void tandem_data_prep_options_init(tandem_data_prep_options *o);

typedef struct tandem_data_prep_report {
    uint32_t rows;                   /* non-empty lines of metadata.csv (directory layouts: utterances
                                        listed, usable or not) */
    int layout;                      /* the layout read: 1 LJSpeech, 2 generic, 3 VCTK, 4 LibriTTS */
    uint32_t speakers;               /* the speaker table's size; 0: one speaker */
    uint32_t utterances, n_train, n_val;
    uint32_t skipped[TANDEM_DATA_SKIP_REASONS];
    uint32_t lang_en, lang_fa;
    /* durations (read from the audio headers when the index was built, cached with it) */
    uint32_t files_scanned;          /* utterances with a known duration; 0: audio not scanned */
    double total_s, mean_s, min_s, max_s;
    /* left out of train / val by the duration filter (check_audio only) */
    uint32_t too_long, too_short, unreadable;
    double max_s_allowed;            /* max_frames in seconds */
    uint64_t tokens;                 /* over all utterances, framing included */
    uint32_t max_tokens;             /* longest utterance */
    int symbols_version, symbols;    /* the symbol table: version, number of ids */
    int cache_hit;                   /* 1: loaded from the text cache */
    char cache_path[1024];           /* "" when the cache is off or unavailable (logged why) */
    uint64_t cache_key;
    double ms;                       /* wall time of the index */
} tandem_data_prep_report;

/* Index data_dir (from the text cache when it is valid) and fill *r. Rows that cannot be used are
 * logged as "<path>:<line>: <reason>" when the index is built, and counted. */
tandem_status tandem_data_prep(const tandem_data_prep_options *o, tandem_data_prep_report *r);
/* "wrong column count", "bad id", ... for 0 <= reason < TANDEM_DATA_SKIP_REASONS, else "?". */
const char *tandem_data_skip_reason_name(int reason);

/* ---- the data side alone -------------------------------------------------------------------- */

typedef struct tandem_data_run_report tandem_data_run_report;
/* Called when a stage of the run has finished (r->stage says which), on the calling thread. */
typedef void (*tandem_data_stage_fn)(void *user, const tandem_data_run_report *r);

typedef struct tandem_data_run_options {
    const char *data_dir;     /* required */
    int64_t steps;            /* batches to check, >= 1 (default 1) */
    tandem_backend backend;   /* AUTO (default), HOST or CUDA: roles as in training (DESIGN.md §3) */
    int poison_on_release;    /* 1: fill released slots with NaN (catches use after release) */
    const char *cache_dir;    /* NULL (default): the index's default cache directory */
    tandem_data_stage_fn on_stage; /* NULL (default): no callback */
    void *on_stage_user;
    double model_samples_per_s; /* the model's measured consumption for the capacity report;
                                   0 (default): the step cost model's, labelled "modelled" */
} tandem_data_run_options;

void tandem_data_run_options_init(tandem_data_run_options *o);

enum {
    TANDEM_DATA_STAGE_NONE = 0,
    TANDEM_DATA_STAGE_INDEXED,  /* the index fields are set */
    TANDEM_DATA_STAGE_DEVICES,  /* devices */
    TANDEM_DATA_STAGE_PLANNED,  /* the plan fields: arenas committed */
    TANDEM_DATA_STAGE_DONE,     /* the run fields: every batch checked */
};

struct tandem_data_run_report {
    int stage;                       /* the last stage reached (TANDEM_DATA_STAGE_*) */
    /* index */
    uint32_t utterances, n_train;
    int cache_hit;
    double index_ms;
    uint32_t too_long, too_short, unreadable; /* left out by the duration filter */
    int max_frames;
    /* devices */
    char devices[512];               /* the roles in words */
    /* plan */
    int batch_size, max_text, n_mels;
    double batch_seconds;            /* max_frames in seconds of audio */
    double data_arena_mib, model_arena_mib;
    int ring_slots;
    int peer;                        /* 1: ring copies device to device, 0: staged through pinned memory */
    int loader_threads;
    /* run */
    int64_t consumed, produced;      /* batches checked and released; published by the data side */
    double wall_s, audio_seconds;
    double data_busy_pct, data_busy_ms;
    double mean_ready_slots;         /* ring occupancy */
    double data_wait_ms;             /* consumer time blocked in acquire, in total */
    uint64_t files_ok, resampled, decode_failures, files_too_long;
    int64_t next_epoch, next_index;  /* the sampler's next position */
    char stages[2048];               /* per-stage time table (read, decode, resample, H2D,
                                        features, ring copy), one line per stage */
    /* capacity against the model (docs/TRAINING.md, "Capacity"): the data side's
       utterances/s, the model's samples/s, their ratio; data_limited = headroom < 1 */
    double capacity_utt_s, model_samples_s, headroom;
    int data_limited;
    char capacity[2048];             /* the report in words, with advice when data_limited */
};

/* Index data_dir with cfg's duration filter, open the devices, plan and commit both arenas, then
 * load, featurise and hand opts->steps batches through the ring to a consumer that checks each one
 * (finite values, mask and stop targets consistent with the lengths, silence padding, PAD tokens past
 * the text) and releases it. *r is filled stage by stage (also on failure, up to the stage
 * reached). A batch that fails a check is TANDEM_E_INTERNAL naming the batch, row, frame and value. */
tandem_status tandem_data_run(const tandem_config *cfg, const tandem_data_run_options *o,
                              tandem_data_run_report *r);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_DATA_PUBLIC_H */
