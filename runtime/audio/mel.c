/* mel.c — the log-mel recipe's filterbank, its sparse band form and the host path (see mel.h).
 * The per-frame STFT and projection are kernels/mel_host.c's (shared with the kernels' host
 * implementations), so the host path and the device path on a host device agree bit for bit. */
#include "runtime/audio/mel.h"

#include <math.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "kernels/registry.h" /* kernels/mel.h: the per-frame STFT and projection */

/* the public header's copy of the recipe (TANDEM_FEATURE_*) is the recipe */
_Static_assert(TANDEM_FEATURE_SAMPLE_RATE == TANDEM_MEL_SAMPLE_RATE && TANDEM_FEATURE_HOP == TANDEM_MEL_HOP &&
                   TANDEM_FEATURE_N_MELS == TANDEM_MEL_N_MELS,
               "tandem.h's TANDEM_FEATURE_* must equal kernels/mel.h's TANDEM_MEL_*");

#define N_FFT TANDEM_MEL_N_FFT
#define N_BINS TANDEM_MEL_N_BINS
#define N_MELS TANDEM_MEL_N_MELS

/* ---- Slaney mel scale ---- */

#define MEL_F_SP (200.0 / 3.0)
#define MEL_MIN_LOG_HZ 1000.0
#define MEL_MIN_LOG_MEL (MEL_MIN_LOG_HZ / MEL_F_SP) /* 15 */

static double mel_logstep(void) { return log(6.4) / 27.0; }

double tandem_mel_hz_to_mel(double hz) {
    if (hz < MEL_MIN_LOG_HZ) return hz / MEL_F_SP;
    return MEL_MIN_LOG_MEL + log(hz / MEL_MIN_LOG_HZ) / mel_logstep();
}

double tandem_mel_mel_to_hz(double mel) {
    if (mel < MEL_MIN_LOG_MEL) return mel * MEL_F_SP;
    return MEL_MIN_LOG_HZ * exp(mel_logstep() * (mel - MEL_MIN_LOG_MEL));
}

/* Band edges in Hz: Slaney mel points of linspace(mel(fmin), mel(fmax), 82). */
static void mel_points(double *pts) { /* [82] */
    double lo = tandem_mel_hz_to_mel(TANDEM_MEL_FMIN), hi = tandem_mel_hz_to_mel(TANDEM_MEL_FMAX);
    double step = (hi - lo) / (N_MELS + 1);
    for (int i = 0; i < N_MELS + 2; i++) {
        /* as numpy's linspace: lo + i * step, the last point exactly hi */
        double mel = (i == N_MELS + 1) ? hi : lo + i * step;
        pts[i] = tandem_mel_mel_to_hz(mel);
    }
}

/* Row m of the bank: the triangle (pts[m], pts[m+1], pts[m+2]) on the FFT bin frequencies,
 * scaled by 2 / (pts[m+2] - pts[m]). */
static void mel_row(const double *pts, int m, double *row) { /* [513] */
    double d_lo = pts[m + 1] - pts[m], d_hi = pts[m + 2] - pts[m + 1];
    double enorm = 2.0 / (pts[m + 2] - pts[m]);
    for (int k = 0; k < N_BINS; k++) {
        double f = k * ((double)TANDEM_MEL_SAMPLE_RATE / N_FFT);
        double rise = (f - pts[m]) / d_lo;     /* librosa: -ramps[m] / fdiff[m] */
        double fall = (pts[m + 2] - f) / d_hi; /* librosa: ramps[m + 2] / fdiff[m + 1] */
        double w = rise < fall ? rise : fall;
        row[k] = (w > 0.0 ? w : 0.0) * enorm;
    }
}

void tandem_mel_filterbank_f64(double *fb) {
    double pts[N_MELS + 2];
    mel_points(pts);
    for (int m = 0; m < N_MELS; m++) mel_row(pts, m, fb + (size_t)m * N_BINS);
}

void tandem_mel_filterbank_f32(float *fb) {
    double pts[N_MELS + 2], row[N_BINS];
    mel_points(pts);
    for (int m = 0; m < N_MELS; m++) {
        mel_row(pts, m, row);
        for (int k = 0; k < N_BINS; k++) fb[(size_t)m * N_BINS + k] = (float)row[k];
    }
}

/* Nonzero range of each float row, packed. */
int tandem_mel_bands(tandem_k_mel_bands *bands, float *weights) {
    double pts[N_MELS + 2], row[N_BINS];
    mel_points(pts);
    int total = 0;
    for (int m = 0; m < N_MELS; m++) {
        mel_row(pts, m, row);
        int lo = 0, hi = N_BINS;
        while (lo < N_BINS && (float)row[lo] == 0.0f) lo++;
        while (hi > lo && (float)row[hi - 1] == 0.0f) hi--;
        if (bands) {
            bands->lo[m] = lo;
            bands->len[m] = hi - lo;
            bands->off[m] = total;
        }
        if (weights)
            for (int k = lo; k < hi; k++) weights[total + k - lo] = (float)row[k];
        total += hi - lo;
    }
    return total;
}

/* ---- host path ---- */

struct tandem_mel_host {
    tandem_k_mel_bands bands;
    float weights[]; /* packed band weights (tandem_mel_bands) */
};

tandem_status tandem_mel_host_create(tandem_mel_host **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_mel_host_create: NULL out");
    *out = NULL;
    const int n = tandem_mel_bands(NULL, NULL);
    const size_t bytes = sizeof(tandem_mel_host) + sizeof(float) * (size_t)n;
    tandem_mel_host *m = (tandem_mel_host *)tandem_calloc(1, bytes);
    if (!m) return tandem_fail(TANDEM_E_NOMEM, "mel host tables: %zu bytes", bytes);
    tandem_mel_bands(&m->bands, m->weights);
    if (tandem_mel_fft_prepare() != 0)
        tandem_logf(TANDEM_LOG_WARN, "log-mel: FFTW could not plan a 1024-point r2c transform; using the built-in FFT");
    *out = m;
    return TANDEM_OK;
}

void tandem_mel_host_free(tandem_mel_host *m) { tandem_free(m); }

tandem_status tandem_mel_host_compute(const tandem_mel_host *m, const float *audio, int64_t len,
                                      float *out, int max_frames, int *frames) {
    if (!m || !out || !frames || max_frames < 0 || len < 0 || (len > 0 && !audio))
        return tandem_fail(TANDEM_E_INVALID, "tandem_mel_host_compute: bad arguments");
    int64_t t_count = tandem_mel_frame_count(len);
    if (t_count > max_frames)
        return tandem_fail(TANDEM_E_BUDGET,
                           "log-mel: %lld samples give %lld frames, more than max_frames %d",
                           (long long)len, (long long)t_count, max_frames);
    float mag[N_BINS], mel[N_MELS];
    for (int64_t t = 0; t < t_count; t++) {
        tandem_mel_frame_magnitude(audio, len, t * TANDEM_MEL_HOP - TANDEM_MEL_PAD, mag);
        tandem_mel_project_frame(&m->bands, m->weights, mag, mel);
        float *row = out + t * N_MELS;
        for (int b = 0; b < N_MELS; b++) row[b] = tandem_mel_log_floor(mel[b]); /* as mel_log */
    }
    const float silence = tandem_mel_silence(); /* padded frames, as mel_log */
    for (int64_t i = t_count * N_MELS; i < (int64_t)max_frames * N_MELS; i++) out[i] = silence;
    *frames = (int)t_count;
    return TANDEM_OK;
}
tandem_status tandem_mel_host_batch(const tandem_mel_host *m, const float *audio,
                                    const int32_t *lengths, int batch, int64_t max_samples,
                                    float *out, int max_frames, int32_t *frames) {
    if (!lengths || !frames || batch < 0 || max_samples < 0)
        return tandem_fail(TANDEM_E_INVALID, "tandem_mel_host_batch: bad arguments");
    for (int b = 0; b < batch; b++) {
        if (lengths[b] < 0 || lengths[b] > max_samples)
            return tandem_fail(TANDEM_E_INVALID, "log-mel batch item %d: length %d outside [0, %lld]",
                               b, (int)lengths[b], (long long)max_samples);
        int t = 0;
        TANDEM_TRY(tandem_mel_host_compute(m, audio + (size_t)b * max_samples, lengths[b],
                                           out + (size_t)b * max_frames * N_MELS, max_frames, &t));
        frames[b] = t;
    }
    return TANDEM_OK;
}
