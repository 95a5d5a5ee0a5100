/* mel.c — the log-mel recipe's filterbank and its host path (see mel.h). The FFT is the
 * project's own (kernels/mel_host.c, shared with the mel_stft kernel's host implementation):
 * a 1024-point real DFT as a 512-point complex radix-2 FFT plus the split step, in double. */
#include "mel.h"

#include <math.h>
#include <string.h>

#include "log.h"
#include "os.h"
#include "registry.h" /* kernels/mel.h: the shared FFT (tandem_mel_fft_*) */

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

/* ---- host path ---- */

struct tandem_mel_host {
    float fb[N_MELS * N_BINS];  /* [80, 513] float filterbank, as on the device */
    int band_lo[N_MELS];        /* first and one-past-last nonzero bin of each band */
    int band_hi[N_MELS];
    tandem_mel_fft_tables fft;  /* window and twiddles (kernels/mel_host.c) */
};

tandem_status tandem_mel_host_create(tandem_mel_host **out) {
    tandem_mel_host *m = (tandem_mel_host *)tandem_calloc(1, sizeof *m);
    if (!m) return tandem_fail(TANDEM_E_NOMEM, "mel host tables: %zu bytes", sizeof *m);
    tandem_mel_filterbank_f32(m->fb);
    for (int b = 0; b < N_MELS; b++) {
        const float *row = m->fb + (size_t)b * N_BINS;
        int lo = 0, hi = N_BINS;
        while (lo < N_BINS && row[lo] == 0.0f) lo++;
        while (hi > lo && row[hi - 1] == 0.0f) hi--;
        m->band_lo[b] = lo;
        m->band_hi[b] = hi;
    }
    tandem_mel_fft_tables_init(&m->fft);
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
    double frame[N_FFT], mag[N_BINS];
    for (int64_t t = 0; t < t_count; t++) {
        int64_t start = t * TANDEM_MEL_HOP - TANDEM_MEL_PAD;
        if (start >= 0 && start + N_FFT <= len) {
            for (int n = 0; n < N_FFT; n++) frame[n] = audio[start + n];
        } else {
            for (int n = 0; n < N_FFT; n++) frame[n] = audio[tandem_mel_reflect(start + n, len)];
        }
        tandem_mel_fft_magnitude(&m->fft, frame, mag); /* windowed inside */
        float *row = out + t * N_MELS;
        for (int b = 0; b < N_MELS; b++) {
            const float *w = m->fb + (size_t)b * N_BINS;
            double acc = 0.0;
            for (int k = m->band_lo[b]; k < m->band_hi[b]; k++) acc += (double)w[k] * mag[k];
            row[b] = (float)log(acc > (double)TANDEM_MEL_LOG_FLOOR ? acc : (double)TANDEM_MEL_LOG_FLOOR);
        }
    }
    memset(out + t_count * N_MELS, 0, sizeof(float) * (size_t)(max_frames - t_count) * N_MELS);
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
