/* audio.c — libsndfile decoding, downmix and libsamplerate resampling (see audio.h). */
#include "runtime/audio/audio.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "runtime/audio/resample.h"
#include "platform/os/os.h"

#define CHUNK_FLOATS 16384 /* interleaved samples read per sf_readf_float call */
#define MAX_RATE 768000
/* libsamplerate converts by ratios in [1/256, 256]: 22050 / 256 = 86.1 Hz is the lowest rate */
#define MIN_RATE 87

/* sf_open is not thread-safe and reports open failures through a global; both opens and
 * closes run under this lock. Reads on distinct SNDFILE handles need no lock. */
static pthread_mutex_t sf_lock = PTHREAD_MUTEX_INITIALIZER;

struct tandem_audio_decoder {
    SRC_STATE *src;              /* mono sinc resampler, reset per file */
    float in[CHUNK_FLOATS];      /* [frames, channels] interleaved chunk */
    float mono[CHUNK_FLOATS];    /* [frames] downmixed chunk */
    uint64_t resample_ns;        /* time in src_process during the last decode */
};

tandem_status tandem_audio_decoder_create(tandem_audio_decoder **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_audio_decoder_create: out is NULL");
    *out = NULL;
    tandem_audio_decoder *d = (tandem_audio_decoder *)tandem_calloc(1, sizeof *d);
    if (!d) return tandem_fail(TANDEM_E_NOMEM, "audio decoder: %zu bytes", sizeof *d);
    int err = 0;
    d->src = src_new(SRC_SINC_MEDIUM_QUALITY, 1, &err);
    if (!d->src) {
        tandem_free(d);
        return tandem_fail(TANDEM_E_NOMEM, "audio decoder: libsamplerate src_new: %s", src_strerror(err));
    }
    *out = d;
    return TANDEM_OK;
}

void tandem_audio_decoder_free(tandem_audio_decoder *d) {
    if (!d) return;
    if (d->src) src_delete(d->src);
    tandem_free(d);
}

/* libsndfile's reason in our words (its own text follows in parentheses): the caller's message
 * names the file, so no bare library message reaches the user. */
static const char *sf_reason(int code) {
    switch (code) {
    case SF_ERR_UNRECOGNISED_FORMAT: return "not an audio format the decoder reads (WAV, FLAC, Ogg, AIFF, ...)";
    case SF_ERR_SYSTEM: return "the system refused to read it";
    case SF_ERR_MALFORMED_FILE: return "malformed or inconsistent header";
    case SF_ERR_UNSUPPORTED_ENCODING: return "an encoding the decoder does not support";
    default: return "corrupt or inconsistent header";
    }
}

/* Opens path under the lock: our own non-blocking open and type check first (a FIFO or device
 * would block or never end), then libsndfile on the descriptor. On failure returns NULL with
 * the status set and *fd = -1; on success the caller closes with close_locked(f, *fd). */
static SNDFILE *open_locked(const char *path, SF_INFO *info, int *fd, tandem_status *st) {
    memset(info, 0, sizeof *info);
    *st = tandem_file_open_input(path, 0, NULL, fd, NULL); /* its message names the file */
    if (*st != TANDEM_OK) return NULL;
    pthread_mutex_lock(&sf_lock);
    SNDFILE *f = sf_open_fd(*fd, SFM_READ, info, SF_FALSE /* closed here */);
    if (!f) {
        int code = sf_error(NULL);
        char why[256];
        snprintf(why, sizeof why, "%s", sf_strerror(NULL));
        pthread_mutex_unlock(&sf_lock);
        /* libsndfile (1.2.0, checked) closes the descriptor itself when sf_open_fd fails, even
         * with close_desc false: closing it again here closed whatever another loader thread had
         * just opened under the same number (its decode then failed with EBADF). */
        *fd = -1;
        /* SF_ERR_SYSTEM: the OS refused (permissions, I/O error); anything else is content */
        const tandem_status kind = code == SF_ERR_SYSTEM ? TANDEM_E_IO : TANDEM_E_FORMAT;
        /* libsndfile calls a header with a zero rate (or format) an internal error of its own */
        if (strstr(why, "SF_INFO struct incomplete"))
            *st = tandem_fail(kind, "audio %s: cannot decode: the header gives a sample rate, channel count or "
                              "format of zero", path);
        else
            *st = tandem_fail(kind, "audio %s: cannot decode: %s (libsndfile: %s)", path, sf_reason(code), why);
        return NULL;
    }
    pthread_mutex_unlock(&sf_lock);
    *st = TANDEM_OK;
    return f;
}

static void close_locked(SNDFILE *f, int fd) {
    pthread_mutex_lock(&sf_lock);
    sf_close(f);
    pthread_mutex_unlock(&sf_lock);
    close(fd);
}

static void format_name(const SF_INFO *info, char *buf, size_t cap) {
    SF_FORMAT_INFO major = {0}, sub = {0};
    major.format = info->format & SF_FORMAT_TYPEMASK;
    sub.format = info->format & SF_FORMAT_SUBMASK;
    int ok_major = sf_command(NULL, SFC_GET_FORMAT_INFO, &major, sizeof major) == 0;
    int ok_sub = sf_command(NULL, SFC_GET_FORMAT_INFO, &sub, sizeof sub) == 0;
    snprintf(buf, cap, "%s / %s", ok_major && major.name ? major.name : "?",
             ok_sub && sub.name ? sub.name : "?");
}

static int64_t resampled_count(int64_t frames, int rate) {
    if (frames == SF_COUNT_MAX) return -1; /* a stream: the header does not say */
    if (rate == TANDEM_AUDIO_RATE) return frames;
    return (int64_t)llround((double)frames * TANDEM_AUDIO_RATE / rate);
}

int64_t tandem_audio_resampled_count(int64_t frames, int rate) {
    if (frames < 0 || rate < MIN_RATE || rate > MAX_RATE) return -1;
    return resampled_count(frames, rate);
}

static tandem_status check_header(const char *path, const SF_INFO *info) {
    if (info->channels < 1 || info->channels > CHUNK_FLOATS)
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: %d channels (expected 1..%d)", path,
                           info->channels, CHUNK_FLOATS);
    if (info->samplerate < MIN_RATE || info->samplerate > MAX_RATE)
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: sample rate %d Hz (expected %d..%d)", path,
                           info->samplerate, MIN_RATE, MAX_RATE);
    if (info->frames <= 0)
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: no audio frames (empty or truncated file)", path);
    return TANDEM_OK;
}

static void fill_info(const SF_INFO *sfi, tandem_audio_info *out) {
    memset(out, 0, sizeof *out);
    out->frames = sfi->frames;
    out->sample_rate = sfi->samplerate;
    out->channels = sfi->channels;
    out->samples_22050 = resampled_count(sfi->frames, sfi->samplerate);
    out->seconds = (double)sfi->frames / sfi->samplerate;
    format_name(sfi, out->format, sizeof out->format);
}

tandem_status tandem_audio_probe(const char *path, tandem_audio_info *out) {
    if (!path || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_audio_probe: NULL argument");
    SF_INFO sfi;
    tandem_status st;
    int fd = -1;
    SNDFILE *f = open_locked(path, &sfi, &fd, &st);
    if (!f) return st;
    st = check_header(path, &sfi);
    if (st == TANDEM_OK) fill_info(&sfi, out);
    close_locked(f, fd);
    return st;
}

static tandem_status decode_open(tandem_audio_decoder *d, SNDFILE *f, const SF_INFO *sfi, const char *path,
                                 float *out, int64_t max_samples, int64_t max_native, int64_t *n_out);

/* Open, decode (native: at the file's rate when the device resamples it), close. */
static tandem_status decode_path(tandem_audio_decoder *d, const char *path, float *out, int64_t max_samples,
                                 int64_t max_native, int64_t *n_samples, int *rate, tandem_audio_info *info) {
    *n_samples = 0;
    d->resample_ns = 0;
    SF_INFO sfi;
    tandem_status st;
    int fd = -1;
    SNDFILE *f = open_locked(path, &sfi, &fd, &st);
    if (!f) return st;
    if (info) fill_info(&sfi, info);
    const int native = max_native > 0 && tandem_resample_class(sfi.samplerate) >= 0;
    *rate = native ? sfi.samplerate : TANDEM_AUDIO_RATE;
    st = decode_open(d, f, &sfi, path, out, max_samples, native ? max_native : 0, n_samples);
    /* a stream's length is only known now: its 22050 Hz length must fit the row as well */
    if (st == TANDEM_OK && native && resampled_count(*n_samples, sfi.samplerate) > max_samples)
        st = tandem_fail(TANDEM_E_BUDGET, "audio %s: too long: %lld samples at 22050 Hz, limit %lld", path,
                         (long long)resampled_count(*n_samples, sfi.samplerate), (long long)max_samples);
    if (st != TANDEM_OK) *n_samples = 0;
    close_locked(f, fd);
    return st;
}

/* libsndfile shortens the data of a RIFF/AIFF file whose header claims more than the file
 * holds and only says so in its log ("data : 44100 (should be 19956)"). A declared length
 * of 0 or near 4 GiB is a streaming writer's placeholder, not a truncation. */
#define LOG_CAP 8192

static void get_log(SNDFILE *f, char *log, size_t cap) {
    log[0] = 0;
    sf_command(f, SFC_GET_LOG_INFO, log, (int)cap);
    log[cap - 1] = 0;
}

static int header_says_truncated(SNDFILE *f, int64_t *declared, int64_t *actual) {
    char log[LOG_CAP];
    get_log(f, log, sizeof log);
    static const char *const keys[] = {"\ndata : ", "\nSSND : "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *p = strstr(log, keys[i]);
        if (!p) continue;
        long long d = 0, a = 0;
        if (sscanf(p + strlen(keys[i]), "%lld (should be %lld)", &d, &a) != 2) continue;
        if (d > a && d > 0 && d < 0x7ffff000LL) {
            *declared = d;
            *actual = a;
            return 1;
        }
    }
    return 0;
}

/* Some decoders (FLAC) report corrupt data only in the log ("ERROR : FLAC__STREAM_DECODER_
 * ERROR_STATUS_LOST_SYNC") and go on with the frames they could decode. The first such line
 * goes into why. */
static int log_reports_error(SNDFILE *f, char *why, size_t cap) {
    char log[LOG_CAP];
    get_log(f, log, sizeof log);
    const char *p = strstr(log, "\nERROR : ");
    if (!p) return 0;
    p += 1;
    size_t n = strcspn(p, "\n");
    snprintf(why, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return 1;
}

/* Mean over channels of chunk [n, ch] into mono [n]. */
static void downmix(const float *in, int64_t n, int ch, float *mono) {
    if (ch == 1) {
        memcpy(mono, in, sizeof(float) * (size_t)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int c = 0; c < ch; c++) s += in[i * ch + c];
        mono[i] = (float)(s / ch);
    }
}

/* Where mono samples go, as they are decoded (or given): straight into out when they are at
 * 22050 Hz, else through the decoder's converter. known: the input's length is known, so the
 * converter's output is cut at expect = round(frames * ratio) (and padded up to it at the end). */
typedef struct sink {
    tandem_audio_decoder *d;
    const char *what; /* the file, for messages */
    float *out;
    int64_t max_samples, cap, expect, produced;
    int known, resample;
    SRC_DATA sd;
} sink;

/* max_native > 0: the samples stay at the file's rate (the data device resamples them), at most
 * max_native of them. */
static void sink_init(sink *k, tandem_audio_decoder *d, const char *what, int rate, int64_t frames,
                      float *out, int64_t max_samples, int64_t max_native) {
    memset(k, 0, sizeof *k);
    k->d = d;
    k->what = what;
    k->out = out;
    k->max_samples = max_native > 0 ? max_native : max_samples;
    k->known = frames != SF_COUNT_MAX;
    k->expect = resampled_count(frames, rate);
    k->resample = rate != TANDEM_AUDIO_RATE && max_native <= 0;
    k->cap = k->known && k->resample ? k->expect : max_samples;
    if (k->resample) {
        k->sd.src_ratio = (double)TANDEM_AUDIO_RATE / rate;
        src_reset(d->src);
        src_set_ratio(d->src, k->sd.src_ratio); /* no ramp from the previous file's ratio */
    }
}

static tandem_status sink_too_long(const sink *k) {
    return tandem_fail(TANDEM_E_BUDGET, "audio %s: too long: more than %lld samples%s",
                       k->what, (long long)k->max_samples, k->resample ? " at 22050 Hz" : "");
}

/* Pass n mono samples on; at_end: the input is complete (the converter's tail is flushed). */
static tandem_status sink_put(sink *k, const float *mono, long n, int at_end) {
    if (!k->resample) {
        if (k->produced + n > k->max_samples) return sink_too_long(k);
        memcpy(k->out + k->produced, mono, sizeof(float) * (size_t)n);
        k->produced += n;
        return TANDEM_OK;
    }
    SRC_DATA *sd = &k->sd;
    const float *src_in = mono;
    long left = n;
    while (left > 0 || at_end) {
        int64_t room = k->cap - k->produced;
        if (room <= 0) {
            if (!k->known) return sink_too_long(k);
            break; /* the rest is the filter's tail past round(frames * ratio) */
        }
        sd->data_in = src_in;
        sd->input_frames = left;
        sd->data_out = k->out + k->produced;
        sd->output_frames = room > (1L << 30) ? (1L << 30) : (long)room;
        sd->end_of_input = at_end;
        const uint64_t t0 = tandem_now_ns();
        int err = src_process(k->d->src, sd);
        k->d->resample_ns += tandem_now_ns() - t0;
        if (err)
            return tandem_fail(TANDEM_E_INTERNAL, "audio %s: libsamplerate: %s", k->what, src_strerror(err));
        src_in += sd->input_frames_used;
        left -= sd->input_frames_used;
        k->produced += sd->output_frames_gen;
        if (left == 0 && (!at_end || sd->output_frames_gen == 0)) break;
    }
    return TANDEM_OK;
}

/* After the last sink_put: the length contract and the checks every signal ends with. */
static tandem_status sink_finish(sink *k, int64_t *n_out) {
    if (k->resample && k->known && k->produced < k->expect) {
        /* the sinc filter's flush can end a sample or two short of round(frames * ratio);
         * the count probe() reported is the contract, so the tail is padded with silence */
        memset(k->out + k->produced, 0, sizeof(float) * (size_t)(k->expect - k->produced));
        k->produced = k->expect;
    }
    /* an Ogg stream cut after its headers, or fewer frames than one output sample */
    if (k->produced == 0)
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: no audio samples decoded (empty or truncated stream)",
                           k->what);
    for (int64_t i = 0; i < k->produced; i++) {
        if (!isfinite(k->out[i]))
            return tandem_fail(TANDEM_E_FORMAT, "audio %s: sample %lld is not finite", k->what, (long long)i);
        /* finite but huge samples overflow the power spectrum to +inf in the features */
        if (fabsf(k->out[i]) > TANDEM_AUDIO_MAX_ABS)
            return tandem_fail(TANDEM_E_FORMAT, "audio %s: sample %lld is %g, beyond %g x full scale (expected "
                               "samples within [-1, 1]): corrupt or unnormalised float audio",
                               k->what, (long long)i, (double)k->out[i], (double)TANDEM_AUDIO_MAX_ABS);
    }
    *n_out = k->produced;
    return TANDEM_OK;
}

/* Everything after a successful open; the caller closes f. */
static tandem_status decode_open(tandem_audio_decoder *d, SNDFILE *f, const SF_INFO *sfi, const char *path,
                                 float *out, int64_t max_samples, int64_t max_native, int64_t *n_out) {
    TANDEM_TRY(check_header(path, sfi));
    int64_t declared = 0, actual = 0;
    if (header_says_truncated(f, &declared, &actual))
        return tandem_fail(TANDEM_E_FORMAT,
                           "audio %s: truncated: header declares %lld data bytes, file holds %lld",
                           path, (long long)declared, (long long)actual);
    /* SF_COUNT_MAX: the header does not say (a stream); the buffer is the only limit then */
    const int known = sfi->frames != SF_COUNT_MAX;
    int64_t expect = resampled_count(sfi->frames, sfi->samplerate);
    if (known && expect > max_samples)
        return tandem_fail(TANDEM_E_BUDGET, "audio %s: too long: %lld samples at 22050 Hz, limit %lld",
                           path, (long long)expect, (long long)max_samples);

    sf_command(f, SFC_SET_NORM_FLOAT, NULL, SF_TRUE); /* the default, stated: ints / 2^(bits-1) */
    const int ch = sfi->channels;
    const int64_t chunk_frames = CHUNK_FLOATS / ch;
    sink k;
    sink_init(&k, d, path, sfi->samplerate, sfi->frames, out, max_samples, max_native);
    int64_t read_total = 0;
    int at_end = 0;
    while (!at_end) {
        sf_count_t got = sf_readf_float(f, d->in, chunk_frames);
        if (got < 0) got = 0;
        read_total += got;
        at_end = got == 0;
        downmix(d->in, got, ch, d->mono);
        TANDEM_TRY(sink_put(&k, d->mono, (long)got, at_end));
    }
    if (sf_error(f) != SF_ERR_NO_ERROR)
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: decoding failed after %lld frames: %s", path,
                           (long long)read_total, sf_strerror(f));
    char why[160];
    if (log_reports_error(f, why, sizeof why))
        return tandem_fail(TANDEM_E_FORMAT, "audio %s: corrupt data: %s", path, why);
    if (known && read_total < sfi->frames)
        return tandem_fail(TANDEM_E_FORMAT,
                           "audio %s: truncated or corrupt: decoded %lld of the %lld frames its header declares",
                           path, (long long)read_total, (long long)sfi->frames);
    return sink_finish(&k, n_out);
}

tandem_status tandem_audio_decode(tandem_audio_decoder *d, const char *path, float *out,
                                  int64_t max_samples, int64_t *n_samples, tandem_audio_info *info) {
    if (!d || !path || !out || !n_samples || max_samples < 0)
        return tandem_fail(TANDEM_E_INVALID, "tandem_audio_decode: bad arguments");
    int rate = 0;
    return decode_path(d, path, out, max_samples, 0, n_samples, &rate, info);
}

tandem_status tandem_audio_decode_native(tandem_audio_decoder *d, const char *path, float *out, int64_t max_native,
                                         int64_t max_samples, int64_t *n_samples, int *rate, tandem_audio_info *info) {
    if (!d || !path || !out || !n_samples || !rate || max_samples < 0 || max_native < 1)
        return tandem_fail(TANDEM_E_INVALID, "tandem_audio_decode_native: bad arguments");
    return decode_path(d, path, out, max_samples, max_native, n_samples, rate, info);
}

uint64_t tandem_audio_decoder_resample_ns(const tandem_audio_decoder *d) { return d ? d->resample_ns : 0; }

tandem_status tandem_audio_load(const char *path, float *out, int64_t max_samples,
                                int64_t *n_samples, tandem_audio_info *info) {
    tandem_audio_decoder *d = NULL;
    TANDEM_TRY(tandem_audio_decoder_create(&d));
    tandem_status st = tandem_audio_decode(d, path, out, max_samples, n_samples, info);
    tandem_audio_decoder_free(d);
    return st;
}

tandem_status tandem_audio_resample(tandem_audio_decoder *d, const float *in, int64_t n, int rate,
                                    float *out, int64_t max_samples, int64_t *n_samples) {
    if (!d || (!in && n > 0) || !out || !n_samples || max_samples < 0)
        return tandem_fail(TANDEM_E_INVALID, "tandem_audio_resample: bad arguments");
    *n_samples = 0;
    d->resample_ns = 0;
    if (n < 1 || rate < MIN_RATE || rate > MAX_RATE)
        return tandem_fail(TANDEM_E_INVALID, "audio samples: %lld samples at %d Hz (expected >= 1 "
                           "sample at %d..%d Hz)", (long long)n, rate, MIN_RATE, MAX_RATE);
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(in[i]))
            return tandem_fail(TANDEM_E_INVALID, "audio samples: sample %lld is not finite", (long long)i);
        if (fabsf(in[i]) > TANDEM_AUDIO_MAX_ABS)
            return tandem_fail(TANDEM_E_INVALID, "audio samples: sample %lld is %g, beyond %g x full scale "
                               "(expected samples within [-1, 1])", (long long)i, (double)in[i],
                               (double)TANDEM_AUDIO_MAX_ABS);
    }
    const int64_t expect = resampled_count(n, rate);
    if (expect > max_samples)
        return tandem_fail(TANDEM_E_BUDGET, "audio samples: too long: %lld samples at 22050 Hz, limit %lld",
                           (long long)expect, (long long)max_samples);
    sink k;
    sink_init(&k, d, "samples", rate, n, out, max_samples, 0);
    /* the chunks a mono file's decode feeds, so both give the same samples */
    for (int64_t at = 0; at < n; at += CHUNK_FLOATS) {
        const int64_t got = n - at < CHUNK_FLOATS ? n - at : CHUNK_FLOATS;
        TANDEM_TRY(sink_put(&k, in + at, (long)got, 0));
    }
    TANDEM_TRY(sink_put(&k, in, 0, 1));
    return sink_finish(&k, n_samples);
}
