/* loader.c — audio loader threads filling pinned staged batches (see loader.h). */
#include "runtime/data/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/audio/audio.h"
#include "runtime/audio/resample.h"
#include "runtime/data/buckets.h"
#include "runtime/core/dev.h"
#include "platform/os/log.h"
#include "runtime/data/plan_layout.h"

#define READ_CHUNK (256 * 1024) /* bytes per read() when pulling a file through the OS */
#define PATH_CAP 4096

enum { ST_EMPTY = 0, ST_FILLING, ST_READY, ST_TAKEN };

typedef struct worker {
    tandem_loader *l;
    tandem_thread thread;
    int started;
    tandem_audio_decoder *dec;
    char *read_buf; /* [READ_CHUNK] */
} worker;

struct tandem_loader {
    tandem_loader_config cfg;
    tandem_staged_batch bufs[TANDEM_LAYOUT_STAGING];
    void *pinned[TANDEM_LAYOUT_STAGING]; /* one pinned block per batch */
    worker *workers;
    tandem_sampler sampler;
    tandem_bucket_sampler bs; /* length bucketing (cfg.n_buckets > 0) instead of sampler */
    int bucketed;
    /* under m */
    tandem_mutex m;
    tandem_cond cv;
    int64_t fill_seq, take_seq;
    int stopped, running;
    int cancel; /* set (atomically) with stopped: read without the lock between read chunks */
    tandem_status status;
    char error[512];
    uint64_t fail_streak;
    tandem_loader_stats stats;
    uint8_t *reported; /* [ix->count] 1: this utterance's failure was logged (once per file, not per visit) */
    int cpu_rates[8], n_cpu_rates; /* rates already said to fall back to libsamplerate */
};

static void stage_add(tandem_loader *l, tandem_stage s, uint64_t t0, uint64_t t1) {
    if (l->cfg.times) tandem_stage_times_add(l->cfg.times, s, (double)(t1 - t0) / 1e6);
}

/* Under m: stop with an error (the first one wins). */
static void fail_locked(tandem_loader *l, tandem_status st, const char *msg) {
    if (!l->stopped) {
        l->stopped = 1;
        l->status = st;
        snprintf(l->error, sizeof l->error, "%.*s", (int)sizeof l->error - 1, msg);
    }
    tandem_cond_broadcast(&l->cv);
}

/* ---- create / destroy ---------------------------------------------------------------------- */

tandem_status tandem_loader_create(const tandem_loader_config *cfg, tandem_loader **out) {
    if (out) *out = NULL;
    if (!cfg || !out || !cfg->ix || !cfg->data_dir || !cfg->items || cfg->n_items == 0 || cfg->batch < 1 ||
        cfg->max_text < 1 || cfg->max_samples < 1 || cfg->num_workers < 1 || !cfg->data_dev || !cfg->model_dev)
        return tandem_fail(TANDEM_E_INVALID, "loader: bad configuration (batch %d, max_text %d, max_samples %lld, "
                           "workers %d, %u items; devices and index required)",
                           cfg ? cfg->batch : 0, cfg ? cfg->max_text : 0, cfg ? (long long)cfg->max_samples : 0,
                           cfg ? cfg->num_workers : 0, cfg ? cfg->n_items : 0);
    tandem_loader *l = tandem_calloc(1, sizeof *l);
    if (!l) return tandem_fail(TANDEM_E_NOMEM, "loader: out of memory");
    l->cfg = *cfg;
    tandem_mutex_init(&l->m);
    tandem_cond_init(&l->cv);
    l->bucketed = cfg->n_buckets > 0;
    tandem_status st = TANDEM_OK;
    if (!l->bucketed) st = tandem_sampler_init(&l->sampler, cfg->items, cfg->n_items, cfg->seed, cfg->shuffle);
    else if (!cfg->bucket_frames || !cfg->lengths ||
             (int64_t)cfg->bucket_frames[cfg->n_buckets - 1] * TANDEM_MEL_HOP != cfg->max_samples)
        st = tandem_fail(TANDEM_E_INVALID, "loader: %d length buckets need their frames (the last = max_samples %lld "
                         "/ %d) and the items' lengths", cfg->n_buckets, (long long)cfg->max_samples, TANDEM_MEL_HOP);
    else
        st = tandem_bucket_sampler_init(&l->bs, cfg->items, cfg->lengths, cfg->n_items, cfg->bucket_frames,
                                        (uint32_t)cfg->n_buckets, (uint32_t)cfg->batch, cfg->seed, cfg->shuffle);
    if (st == TANDEM_OK && !l->bucketed)
        st = tandem_sampler_shard(&l->sampler, cfg->shard_world, cfg->shard_rank, cfg->shard_chunk);
    l->reported = tandem_calloc(cfg->ix->count ? cfg->ix->count : 1, 1);
    if (st == TANDEM_OK && !l->reported) st = tandem_fail(TANDEM_E_NOMEM, "loader: out of memory");
    const size_t B = (size_t)cfg->batch;
    /* the staged batches as the plan declares them (runtime/data/plan_layout.h) */
    tandem_staging_plan sp;
    tandem_staging_init(&sp);
    if (st == TANDEM_OK) st = tandem_layout_stage_batches(&sp, cfg->batch, cfg->max_text, cfg->max_samples);
    for (int i = 0; st == TANDEM_OK && i < TANDEM_LAYOUT_STAGING; i++) {
        tandem_staged_batch *b = &l->bufs[i];
        st = tandem_staging_alloc(cfg->data_dev, &sp, i, &l->pinned[i]);
        if (st != TANDEM_OK) break;
        b->audio = tandem_staging_ptr(&sp, i, l->pinned[i], TANDEM_STAGED_AUDIO);
        b->lengths = tandem_staging_ptr(&sp, i, l->pinned[i], TANDEM_STAGED_LENGTHS);
        b->tokens = tandem_staging_ptr(&sp, i, l->pinned[i], TANDEM_STAGED_TOKENS);
        b->text_lengths = tandem_staging_ptr(&sp, i, l->pinned[i], TANDEM_STAGED_TEXT_LENGTHS);
        b->cls = tandem_staging_ptr(&sp, i, l->pinned[i], TANDEM_STAGED_CLASSES);
        b->utt = tandem_calloc(B, sizeof *b->utt);
        b->pos = tandem_calloc(B, sizeof *b->pos);
        b->plan_ = tandem_calloc(B, sizeof *b->plan_);
        if (!b->utt || !b->pos || !b->plan_) st = tandem_fail(TANDEM_E_NOMEM, "loader: out of memory");
        if (st == TANDEM_OK) st = tandem_event_create(cfg->data_dev, &b->audio_sent);
        if (st == TANDEM_OK) st = tandem_event_create(cfg->model_dev, &b->text_sent);
    }
    if (st == TANDEM_OK) {
        l->workers = tandem_calloc((size_t)cfg->num_workers, sizeof *l->workers);
        if (!l->workers) st = tandem_fail(TANDEM_E_NOMEM, "loader: out of memory");
    }
    for (int w = 0; st == TANDEM_OK && w < cfg->num_workers; w++) {
        l->workers[w].l = l;
        st = tandem_audio_decoder_create(&l->workers[w].dec);
        if (st == TANDEM_OK) {
            l->workers[w].read_buf = tandem_malloc(READ_CHUNK);
            if (!l->workers[w].read_buf) st = tandem_fail(TANDEM_E_NOMEM, "loader: out of memory");
        }
    }
    if (st != TANDEM_OK) {
        tandem_loader_destroy(l);
        return st;
    }
    *out = l;
    return TANDEM_OK;
}

void tandem_loader_destroy(tandem_loader *l) {
    if (!l) return;
    tandem_loader_stop(l);
    if (l->workers) {
        for (int w = 0; w < l->cfg.num_workers; w++) {
            tandem_audio_decoder_free(l->workers[w].dec);
            tandem_free(l->workers[w].read_buf);
        }
        tandem_free(l->workers);
    }
    for (int i = 0; i < TANDEM_LAYOUT_STAGING; i++) {
        tandem_staged_batch *b = &l->bufs[i];
        /* uploads from the buffer may still be queued: wait before freeing it (only on
         * events that were recorded: waiting on a never-recorded one is a driver misuse) */
        if (b->audio_sent) {
            if (b->ever_recorded_) tandem_event_sync(b->audio_sent);
            tandem_event_destroy(b->audio_sent);
        }
        if (b->text_sent) {
            if (b->ever_recorded_) tandem_event_sync(b->text_sent);
            tandem_event_destroy(b->text_sent);
        }
        tandem_staging_free(l->cfg.data_dev, l->pinned[i]);
        tandem_free(b->utt);
        tandem_free(b->pos);
        tandem_free(b->plan_);
    }
    tandem_sampler_free(&l->sampler);
    tandem_bucket_sampler_free(&l->bs);
    tandem_free(l->reported);
    tandem_cond_destroy(&l->cv);
    tandem_mutex_destroy(&l->m);
    tandem_free(l);
}

tandem_status tandem_loader_set_pos(tandem_loader *l, tandem_sampler_pos pos) {
    tandem_mutex_lock(&l->m);
    tandem_status st = l->running ? tandem_fail(TANDEM_E_STATE, "loader: set the position before start")
                      : l->bucketed ? tandem_bucket_sampler_set_pos(&l->bs, pos)
                                    : tandem_sampler_set_pos(&l->sampler, pos);
    tandem_mutex_unlock(&l->m);
    return st;
}

/* ---- one row ------------------------------------------------------------------------------- */

/* Pull the file's bytes through the OS (so "read" is measured apart from decoding; the decoder
 * then reads them from the page cache). No read here can block a stop (loader.h, "Stopping"):
 * the open is non-blocking and only a regular file is read — a FIFO, device or socket put in
 * place of an audio file is refused before the decoder could block on it — and the reads are
 * bounded chunks up to the size fstat reported, with the stop flag looked at between them.
 * A missing file is left for the decoder to report. */
static tandem_status read_through(worker *w, const char *path, int *out_fd) {
    *out_fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return TANDEM_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: not a regular file (a FIFO, device or socket?): not read; "
                           "expected a WAV/FLAC/OGG file", path);
    }
    for (off_t left = sb.st_size; left > 0 && !__atomic_load_n(&w->l->cancel, __ATOMIC_RELAXED);) {
        ssize_t n = read(fd, w->read_buf, left < READ_CHUNK ? (size_t)left : READ_CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        left -= n;
    }
    *out_fd = fd;
    return TANDEM_OK;
}

/* Decode the file read_through checked, through /proc/self/fd/<fd>: that opens the very inode
 * fstat found regular, so a FIFO swapped in under the same name since cannot reach the decoder
 * (a rename race). Messages name the dataset path, not the /proc one. Without /proc: the path. */
static tandem_status decode_checked(worker *w, const char *path, int fd, float *row, int64_t cap, int64_t S,
                                    int64_t *n, int *rate, tandem_audio_info *info) {
    char proc[48];
    const char *src = path;
    if (fd >= 0 && snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd) < (int)sizeof proc &&
        access(proc, R_OK) == 0)
        src = proc;
    tandem_status st = w->l->cfg.device_resample ? tandem_audio_decode_native(w->dec, src, row, cap, S, n, rate, info)
                                                 : tandem_audio_decode(w->dec, src, row, S, n, info);
    if (st == TANDEM_OK || src == path) return st;
    char msg[PATH_CAP + 1024];
    const char *e = tandem_last_error(), *at = strstr(e, proc);
    if (!at || snprintf(msg, sizeof msg, "%.*s%s%s", (int)(at - e), e, path, at + strlen(proc)) < 0) return st;
    return tandem_fail(st, "%s", msg);
}

/* Under m: the first file at a rate neither 22050 Hz nor the device's says so, once per rate. */
static void note_cpu_rate(tandem_loader *l, int rate) {
    for (int i = 0; i < l->n_cpu_rates; i++)
        if (l->cpu_rates[i] == rate) return;
    if (l->n_cpu_rates < (int)(sizeof l->cpu_rates / sizeof l->cpu_rates[0])) l->cpu_rates[l->n_cpu_rates++] = rate;
    tandem_logf(TANDEM_LOG_INFO, "loader: %d Hz is not a rate the data device resamples (48000, 44100, 32000, "
                "24000, 16000, 8000): files at it are resampled on the CPU by libsamplerate", rate);
}

/* The decode stages of one file: the total, its container's, and the CPU resampler apart. */
static void add_decode_stages(worker *w, const tandem_audio_info *info, uint64_t t1, uint64_t t2) {
    uint64_t rs = tandem_audio_decoder_resample_ns(w->dec);
    if (rs > t2 - t1) rs = t2 - t1;
    stage_add(w->l, TANDEM_STAGE_DECODE, t1, t2 - rs);
    stage_add(w->l, tandem_stage_decode_of(info->format), t1, t2 - rs);
    if (rs) stage_add(w->l, TANDEM_STAGE_RESAMPLE, 0, rs);
}

/* Decode utterance u into row r of b. TANDEM_E_BUDGET: too long; other errors: unreadable. */
static tandem_status load_row(worker *w, tandem_staged_batch *b, int r, uint32_t u) {
    tandem_loader *l = w->l;
    const tandem_text_index *ix = l->cfg.ix;
    const tandem_utt *utt = &ix->utts[u];
    char path[PATH_CAP];
    int k = snprintf(path, sizeof path, "%s/%s", l->cfg.data_dir, tandem_utt_audio(ix, utt));
    if (k < 0 || (size_t)k >= sizeof path)
        return tandem_fail(TANDEM_E_INVALID, "loader: path of '%s' too long", tandem_utt_id(ix, utt));
    /* the row's samples at 22050 Hz: its batch's shape class (bucketing), else max_samples */
    const int64_t S = l->bucketed ? (int64_t)b->frames * TANDEM_MEL_HOP : l->cfg.max_samples;
    float *row = b->audio + (size_t)r * (size_t)b->row_stride;
    uint64_t t0 = tandem_now_ns();
    int fd = -1;
    TANDEM_TRY(read_through(w, path, &fd));
    uint64_t t1 = tandem_now_ns();
    int64_t n = 0;
    int rate = TANDEM_AUDIO_RATE;
    tandem_audio_info info;
    memset(&info, 0, sizeof info);
    info.sample_rate = TANDEM_AUDIO_RATE;
    tandem_status dst = decode_checked(w, path, fd, row, b->row_stride, S, &n, &rate, &info);
    if (fd >= 0) close(fd);
    TANDEM_TRY(dst);
    uint64_t t2 = tandem_now_ns();
    stage_add(l, TANDEM_STAGE_READ, t0, t1);
    add_decode_stages(w, &info, t1, t2);
    const int64_t n22 = tandem_audio_resampled_count(n, rate);
    if (n22 < TANDEM_INDEX_MIN_SAMPLES)
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: %lld samples at 22050 Hz, shorter than one hop (%d)", path,
                           (long long)n22, TANDEM_INDEX_MIN_SAMPLES);
    /* zero padding: what the features see past the length is fixed, and uploads are deterministic
       (the device path uploads only the row's samples and its kernel writes the padding) */
    if (!l->cfg.device_resample) memset(row + n, 0, sizeof(float) * (size_t)(S - n));
    b->lengths[r] = (int32_t)n;
    b->cls[r] = rate == TANDEM_AUDIO_RATE ? TANDEM_K_RS_COPY : tandem_resample_class(rate);
    const int T = l->cfg.max_text;
    int32_t *tok = b->tokens + (size_t)r * (size_t)T;
    const uint16_t *src = tandem_utt_tokens(ix, utt);
    int nt = utt->n_tok < T ? utt->n_tok : T; /* the index already refused longer texts */
    for (int i = 0; i < nt; i++) tok[i] = src[i];
    for (int i = nt; i < T; i++) tok[i] = 0; /* PAD */
    b->text_lengths[r] = nt;
    b->utt[r] = u;
    tandem_mutex_lock(&l->m);
    if (info.sample_rate != TANDEM_AUDIO_RATE) l->stats.resampled++;
    if (info.sample_rate != TANDEM_AUDIO_RATE && rate == TANDEM_AUDIO_RATE) {
        l->stats.resampled_cpu++;
        if (l->cfg.device_resample) note_cpu_rate(l, info.sample_rate);
    }
    l->stats.files_ok++;
    b->audio_seconds += (double)n / rate;
    b->real_frames += n22 / TANDEM_MEL_HOP; /* n22 <= S: at most the class's frames */
    tandem_mutex_unlock(&l->m);
    return TANDEM_OK;
}

/* ---- worker -------------------------------------------------------------------------------- */

/* Under m, as batch b starts filling: with bucketing, the sampler's next batch (its utterances,
 * class and positions); without, only the full shape. */
static void start_batch(tandem_loader *l, tandem_staged_batch *b) {
    b->frames = (int)(l->cfg.max_samples / TANDEM_MEL_HOP);
    b->n_real = (uint32_t)l->cfg.batch;
    if (l->bucketed) {
        uint32_t cls = 0;
        b->n_real = tandem_bucket_sampler_next(&l->bs, b->plan_, &cls, &b->bpos_);
        b->frames = (int)l->bs.frames[cls];
        b->next_pos = l->bs.pos;
    }
    const int64_t S = (int64_t)b->frames * TANDEM_MEL_HOP;
    b->row_stride = l->cfg.device_resample ? tandem_resample_in_samples(S) : S;
}

/* Under m: the utterance for row r of b, on its try-th attempt (try > 0: the previous failed):
 * the plain sampler's next; with bucketing the batch's own row, then its other utterances in
 * turn (all of the batch's class, so they fit its rows). */
static uint32_t next_utt(tandem_loader *l, tandem_staged_batch *b, int r, uint32_t try, tandem_sampler_pos *pos) {
    if (!l->bucketed) return tandem_sampler_next(&l->sampler, pos);
    *pos = b->bpos_;
    return b->plan_[((uint32_t)r + try) % b->n_real];
}

/* Utterance u failed (msg): counted, said once per file; the row takes the next utterance. Returns
 * 1 when a whole epoch's worth failed in a row (the loader has failed). Under the lock. */
static int row_failed(tandem_loader *l, tandem_status st, uint32_t u, const char *msg) {
    if (st == TANDEM_E_BUDGET) l->stats.too_long++;
    else l->stats.decode_failures++;
    if (!l->reported[u]) { /* every epoch tries it again: say so once */
        l->reported[u] = 1;
        tandem_logf(TANDEM_LOG_WARN, "loader: skipping '%s' this time: %s (said once; it is tried again at each "
                    "visit, and each failure is counted)", tandem_utt_id(l->cfg.ix, &l->cfg.ix->utts[u]), msg);
    }
    if (++l->fail_streak <= (uint64_t)l->cfg.n_items + (uint64_t)l->cfg.num_workers) return 0;
    char why[800];
    snprintf(why, sizeof why, "loader: %llu audio files failed in a row (a whole epoch); last: %s",
             (unsigned long long)l->fail_streak, msg);
    fail_locked(l, TANDEM_E_FORMAT, why);
    return 1;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    tandem_loader *l = w->l;
    const int B = l->cfg.batch;
    tandem_mutex_lock(&l->m);
    while (!l->stopped) {
        tandem_staged_batch *b = &l->bufs[l->fill_seq % TANDEM_LAYOUT_STAGING];
        if (b->state_ == ST_TAKEN || b->state_ == ST_READY || (b->state_ == ST_FILLING && b->rows_claimed_ == B) ||
            b->syncing_) {
            tandem_cond_wait(&l->cv, &l->m); /* the producer has not given it back yet */
            continue;
        }
        if (b->state_ == ST_EMPTY) {
            if (b->events_pending_) {
                /* its last uploads may still read it: wait for them outside the lock */
                b->syncing_ = 1;
                tandem_mutex_unlock(&l->m);
                tandem_status st = tandem_event_sync(b->audio_sent);
                if (st == TANDEM_OK) st = tandem_event_sync(b->text_sent);
                char msg[512];
                snprintf(msg, sizeof msg, "loader: waiting for a staged batch's uploads: %s", tandem_last_error());
                tandem_mutex_lock(&l->m);
                b->syncing_ = 0;
                b->events_pending_ = 0;
                if (st != TANDEM_OK) fail_locked(l, st, msg);
                tandem_cond_broadcast(&l->cv);
                continue;
            }
            b->state_ = ST_FILLING;
            b->seq = l->fill_seq;
            b->rows_claimed_ = b->rows_done_ = 0;
            b->audio_seconds = 0;
            b->real_frames = 0;
            start_batch(l, b);
        }
        const int r = b->rows_claimed_++;
        if (b->rows_claimed_ == B) l->fill_seq++;
        tandem_sampler_pos pos;
        uint32_t u = next_utt(l, b, r, 0, &pos);
        for (uint32_t tries = 1;; tries++) {
            tandem_mutex_unlock(&l->m);
            tandem_status st = load_row(w, b, r, u);
            /* out of file descriptors: the system's limit, not this file's fault (os.h) */
            const int sys = st != TANDEM_OK && st != TANDEM_E_BUDGET && tandem_file_fds_check() != TANDEM_OK;
            char msg[640];
            if (st != TANDEM_OK)
                snprintf(msg, sizeof msg, sys ? "loader: %s (reading '%s')" : "%s", tandem_last_error(),
                         tandem_utt_id(l->cfg.ix, &l->cfg.ix->utts[u]));
            tandem_mutex_lock(&l->m);
            if (st == TANDEM_OK) {
                b->pos[r] = pos;
                l->fail_streak = 0;
                break;
            }
            if (sys || row_failed(l, st, u, msg)) {
                if (sys) fail_locked(l, TANDEM_E_IO, msg);
                break;
            }
            if (l->stopped) break;
            u = next_utt(l, b, r, tries, &pos);
        }
        if (l->stopped) break;
        if (++b->rows_done_ == B) {
            b->state_ = ST_READY;
            tandem_cond_broadcast(&l->cv);
        }
    }
    tandem_mutex_unlock(&l->m);
    return NULL;
}

tandem_status tandem_loader_start(tandem_loader *l) {
    tandem_mutex_lock(&l->m);
    if (l->running) {
        tandem_mutex_unlock(&l->m);
        return tandem_fail(TANDEM_E_STATE, "loader: already started");
    }
    l->running = 1;
    tandem_mutex_unlock(&l->m);
    for (int w = 0; w < l->cfg.num_workers; w++) {
        tandem_status st = tandem_thread_start(&l->workers[w].thread, worker_main, &l->workers[w], "tandem-load");
        if (st != TANDEM_OK) {
            tandem_loader_stop(l);
            return st;
        }
        l->workers[w].started = 1;
    }
    return TANDEM_OK;
}

void tandem_loader_cancel(tandem_loader *l) {
    if (!l) return;
    tandem_mutex_lock(&l->m);
    __atomic_store_n(&l->cancel, 1, __ATOMIC_RELAXED);
    if (!l->stopped) {
        l->stopped = 1; /* a clean stop: status stays OK */
        snprintf(l->error, sizeof l->error, "loader stopped");
    }
    tandem_cond_broadcast(&l->cv);
    tandem_mutex_unlock(&l->m);
}

void tandem_loader_stop(tandem_loader *l) {
    if (!l) return;
    tandem_loader_cancel(l);
    if (!l->workers) return;
    for (int w = 0; w < l->cfg.num_workers; w++) {
        if (!l->workers[w].started) continue;
        tandem_thread_join(&l->workers[w].thread);
        l->workers[w].started = 0;
    }
}

tandem_status tandem_loader_take(tandem_loader *l, int64_t timeout_ms, tandem_staged_batch **out) {
    const uint64_t deadline = timeout_ms < 0 ? 0 : tandem_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    tandem_mutex_lock(&l->m);
    for (;;) {
        if (l->stopped) {
            tandem_status st = l->status != TANDEM_OK ? tandem_fail(l->status, "%s", l->error)
                                                      : tandem_fail(TANDEM_E_STATE, "%s", l->error);
            tandem_mutex_unlock(&l->m);
            return st;
        }
        tandem_staged_batch *b = &l->bufs[l->take_seq % TANDEM_LAYOUT_STAGING];
        if (b->state_ == ST_READY && b->seq == l->take_seq) {
            b->state_ = ST_TAKEN;
            l->take_seq++;
            *out = b;
            tandem_mutex_unlock(&l->m);
            return TANDEM_OK;
        }
        if (deadline == 0) {
            tandem_cond_wait(&l->cv, &l->m);
        } else {
            uint64_t now = tandem_now_ns();
            if (now >= deadline) {
                tandem_mutex_unlock(&l->m);
                return tandem_fail(TANDEM_E_STATE, "loader: batch %lld not staged after %lld ms",
                                   (long long)l->take_seq, (long long)timeout_ms);
            }
            tandem_cond_timedwait_ns(&l->cv, &l->m, deadline - now);
        }
    }
}

void tandem_loader_give_back(tandem_loader *l, tandem_staged_batch *b, int recorded) {
    tandem_mutex_lock(&l->m);
    b->state_ = ST_EMPTY;
    b->events_pending_ = recorded != 0;
    b->ever_recorded_ |= recorded != 0;
    tandem_cond_broadcast(&l->cv);
    tandem_mutex_unlock(&l->m);
}

void tandem_loader_get_stats(tandem_loader *l, tandem_loader_stats *out) {
    tandem_mutex_lock(&l->m);
    *out = l->stats;
    out->next_pos = l->bucketed ? l->bs.pos : tandem_sampler_get_pos(&l->sampler);
    tandem_mutex_unlock(&l->m);
}
