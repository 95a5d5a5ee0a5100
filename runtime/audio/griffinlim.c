/* griffinlim.c — mel inversion and Griffin-Lim (see griffinlim.h). The FFT here is a complex
 * radix-2 1024-point transform in double of our own: Griffin-Lim needs phases and an inverse,
 * which the magnitude-only FFT shared by the feature path (kernels/mel.h) does not give. */
#include "runtime/audio/griffinlim.h"

#include <math.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/audio/mel.h"
#include "platform/os/os.h"

#define NFFT TANDEM_MEL_N_FFT
#define HOP TANDEM_MEL_HOP
#define PAD TANDEM_MEL_PAD
#define NBINS TANDEM_MEL_N_BINS
#define NMELS TANDEM_MEL_N_MELS

struct tandem_griffinlim {
    int max_frames;
    double fb[NMELS * NBINS]; /* [80, 513] */
    int band_lo[NMELS], band_hi[NMELS];
    double window[NFFT];
    double tw_re[NFFT / 2], tw_im[NFFT / 2]; /* e^{-2 pi i j / 1024} */
    uint16_t bitrev[NFFT];
    float *mag;          /* [max_frames, 513] target magnitude */
    float *re, *im;      /* [max_frames, 513] current spectrum / phases */
    float *pre, *pim;    /* [max_frames, 513] previous rebuilt spectrum (momentum) */
    float *audio;        /* [max_frames * 256] */
    double *ola, *wsum;  /* [max_frames * 256 + 768] */
};

static const double two_pi = 6.283185307179586476925286766559;

tandem_status tandem_griffinlim_create(int max_frames, tandem_griffinlim **out) {
    if (out) *out = NULL;
    if (!out || max_frames < 1 || max_frames > (1 << 22))
        return tandem_fail(TANDEM_E_INVALID, "griffinlim: max_frames %d, expected 1..%d", max_frames, 1 << 22);
    tandem_griffinlim *g = tandem_calloc(1, sizeof *g);
    if (!g) return tandem_fail(TANDEM_E_NOMEM, "griffinlim: out of memory");
    g->max_frames = max_frames;
    tandem_mel_filterbank_f64(g->fb);
    for (int m = 0; m < NMELS; m++) {
        int lo = NBINS, hi = 0;
        for (int k = 0; k < NBINS; k++)
            if (g->fb[m * NBINS + k] > 0.0) {
                if (k < lo) lo = k;
                hi = k + 1;
            }
        g->band_lo[m] = lo < hi ? lo : 0;
        g->band_hi[m] = hi;
    }
    for (int n = 0; n < NFFT; n++) g->window[n] = 0.5 - 0.5 * cos(two_pi * n / NFFT);
    for (int j = 0; j < NFFT / 2; j++) {
        g->tw_re[j] = cos(two_pi * j / NFFT);
        g->tw_im[j] = -sin(two_pi * j / NFFT);
    }
    for (int i = 0; i < NFFT; i++) {
        int r = 0;
        for (int b = 0; b < 10; b++) r |= ((i >> b) & 1) << (9 - b);
        g->bitrev[i] = (uint16_t)r;
    }
    size_t spec = (size_t)max_frames * NBINS, sig = (size_t)max_frames * HOP, padded = sig + 2 * PAD;
    g->mag = tandem_malloc(spec * sizeof(float));
    g->re = tandem_malloc(spec * sizeof(float));
    g->im = tandem_malloc(spec * sizeof(float));
    g->pre = tandem_malloc(spec * sizeof(float));
    g->pim = tandem_malloc(spec * sizeof(float));
    g->audio = tandem_malloc(sig * sizeof(float));
    g->ola = tandem_malloc(padded * sizeof(double));
    g->wsum = tandem_malloc(padded * sizeof(double));
    if (!g->mag || !g->re || !g->im || !g->pre || !g->pim || !g->audio || !g->ola || !g->wsum) {
        tandem_griffinlim_free(g);
        return tandem_fail(TANDEM_E_NOMEM, "griffinlim: out of memory for %d frames", max_frames);
    }
    *out = g;
    return TANDEM_OK;
}

void tandem_griffinlim_free(tandem_griffinlim *g) {
    if (!g) return;
    tandem_free(g->mag);
    tandem_free(g->re);
    tandem_free(g->im);
    tandem_free(g->pre);
    tandem_free(g->pim);
    tandem_free(g->audio);
    tandem_free(g->ola);
    tandem_free(g->wsum);
    tandem_free(g);
}

static tandem_status check_frames(const tandem_griffinlim *g, const char *what, int frames) {
    if (frames < 1 || frames > g->max_frames)
        return tandem_fail(TANDEM_E_INVALID, "griffinlim %s: %d frames, expected 1..%d (max_frames at create)",
                           what, frames, g->max_frames);
    return TANDEM_OK;
}

/* ---- FFT: in-place complex radix-2 decimation in time; sign -1 forward, +1 inverse
 * (unnormalised) ---- */
static void fft(const tandem_griffinlim *g, double *zr, double *zi, int sign) {
    for (int i = 0; i < NFFT; i++) {
        int j = g->bitrev[i];
        if (j > i) {
            double t = zr[i];
            zr[i] = zr[j];
            zr[j] = t;
            t = zi[i];
            zi[i] = zi[j];
            zi[j] = t;
        }
    }
    for (int size = 2; size <= NFFT; size <<= 1) {
        int half = size >> 1, step = NFFT / size;
        for (int base = 0; base < NFFT; base += size)
            for (int j = 0; j < half; j++) {
                int p = base + j, q = p + half;
                double wr = g->tw_re[j * step], wi = sign < 0 ? g->tw_im[j * step] : -g->tw_im[j * step];
                double xr = zr[q] * wr - zi[q] * wi, xi = zr[q] * wi + zi[q] * wr;
                zr[q] = zr[p] - xr;
                zi[q] = zi[p] - xi;
                zr[p] += xr;
                zi[p] += xi;
            }
    }
}

/* ---- STFT pair ---- */

static void stft(const tandem_griffinlim *g, const float *x, int frames, float *re, float *im) {
    int64_t len = (int64_t)frames * HOP;
    double zr[NFFT], zi[NFFT];
    for (int t = 0; t < frames; t++) {
        int64_t start = (int64_t)t * HOP - PAD;
        for (int n = 0; n < NFFT; n++) {
            zr[n] = g->window[n] * x[tandem_mel_reflect(start + n, len)];
            zi[n] = 0.0;
        }
        fft(g, zr, zi, -1);
        for (int k = 0; k < NBINS; k++) {
            re[(size_t)t * NBINS + k] = (float)zr[k];
            im[(size_t)t * NBINS + k] = (float)zi[k];
        }
    }
}

static void istft(tandem_griffinlim *g, const float *re, const float *im, int frames, float *x) {
    size_t padded = (size_t)frames * HOP + 2 * PAD;
    memset(g->ola, 0, padded * sizeof(double));
    memset(g->wsum, 0, padded * sizeof(double));
    double zr[NFFT], zi[NFFT];
    for (int t = 0; t < frames; t++) {
        const float *fr = re + (size_t)t * NBINS, *fi = im + (size_t)t * NBINS;
        for (int k = 0; k < NBINS; k++) {
            zr[k] = fr[k];
            zi[k] = fi[k];
        }
        zi[0] = zi[NBINS - 1] = 0.0; /* a real signal's DC and Nyquist bins are real */
        for (int k = NBINS; k < NFFT; k++) { /* Hermitian half */
            zr[k] = zr[NFFT - k];
            zi[k] = -zi[NFFT - k];
        }
        fft(g, zr, zi, +1);
        double *o = g->ola + (size_t)t * HOP, *w2 = g->wsum + (size_t)t * HOP;
        for (int n = 0; n < NFFT; n++) {
            o[n] += g->window[n] * zr[n] / NFFT;
            w2[n] += g->window[n] * g->window[n];
        }
    }
    for (size_t i = 0; i < (size_t)frames * HOP; i++) {
        double w = g->wsum[i + PAD];
        x[i] = w > 1e-10 ? (float)(g->ola[i + PAD] / w) : 0.0f;
    }
}

tandem_status tandem_griffinlim_stft(tandem_griffinlim *g, const float *x, int frames, float *re, float *im) {
    TANDEM_TRY(check_frames(g, "stft", frames));
    stft(g, x, frames, re, im);
    return TANDEM_OK;
}

tandem_status tandem_griffinlim_istft(tandem_griffinlim *g, const float *re, const float *im, int frames,
                                      float *x) {
    TANDEM_TRY(check_frames(g, "istft", frames));
    istft(g, re, im, frames, x);
    return TANDEM_OK;
}

/* ---- mel inversion ---- */

tandem_status tandem_griffinlim_mel_to_linear(tandem_griffinlim *g, const float *logmel, int frames, float *mag) {
    TANDEM_TRY(check_frames(g, "mel_to_linear", frames));
    double m[NMELS], s[NBINS], num[NBINS], den[NBINS], est[NMELS];
    for (int t = 0; t < frames; t++) {
        for (int b = 0; b < NMELS; b++) {
            double v = logmel[(size_t)t * NMELS + b];
            if (!isfinite(v))
                return tandem_fail(TANDEM_E_INVALID, "griffinlim: log-mel frame %d band %d is not finite", t, b);
            m[b] = exp(v > 30.0 ? 30.0 : v);
        }
        /* num = fb^T m (fixed); start from it, scaled to match m in the least-squares sense */
        memset(num, 0, sizeof num);
        for (int b = 0; b < NMELS; b++)
            for (int k = g->band_lo[b]; k < g->band_hi[b]; k++) num[k] += g->fb[b * NBINS + k] * m[b];
        memcpy(s, num, sizeof s);
        for (int it = 0; it <= TANDEM_GL_NNLS_ITERS; it++) {
            for (int b = 0; b < NMELS; b++) { /* est = fb s */
                double acc = 0.0;
                for (int k = g->band_lo[b]; k < g->band_hi[b]; k++) acc += g->fb[b * NBINS + k] * s[k];
                est[b] = acc;
            }
            if (it == 0) {
                double ab = 0.0, bb = 0.0;
                for (int b = 0; b < NMELS; b++) {
                    ab += est[b] * m[b];
                    bb += est[b] * est[b];
                }
                double a = bb > 0.0 ? ab / bb : 0.0;
                for (int k = 0; k < NBINS; k++) s[k] *= a;
                continue;
            }
            memset(den, 0, sizeof den); /* den = fb^T fb s */
            for (int b = 0; b < NMELS; b++)
                for (int k = g->band_lo[b]; k < g->band_hi[b]; k++) den[k] += g->fb[b * NBINS + k] * est[b];
            /* multiplicative update: keeps s >= 0 and lowers ||fb s - m||^2 each step */
            for (int k = 0; k < NBINS; k++) s[k] = den[k] > 0.0 ? s[k] * num[k] / den[k] : 0.0;
        }
        for (int k = 0; k < NBINS; k++) mag[(size_t)t * NBINS + k] = (float)s[k];
    }
    return TANDEM_OK;
}

/* ---- Griffin-Lim ---- */

static void gl_iterate(tandem_griffinlim *g, int frames, int iters, uint64_t seed, float *audio);

static double gl_uniform(uint64_t *s) { /* splitmix64 → [0, 1) */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

tandem_status tandem_griffinlim_run(tandem_griffinlim *g, const float *mag, int frames, int iters, uint64_t seed,
                                    float *audio) {
    TANDEM_TRY(check_frames(g, "run", frames));
    if (iters < 1) return tandem_fail(TANDEM_E_INVALID, "griffinlim: %d iterations, expected >= 1", iters);
    size_t n = (size_t)frames * NBINS;
    for (size_t i = 0; i < n; i++) {
        if (!(mag[i] >= 0.0f) || !isfinite(mag[i]))
            return tandem_fail(TANDEM_E_INVALID, "griffinlim: magnitude [%zu, %zu] = %g, expected finite and >= 0",
                               i / NBINS, i % NBINS, (double)mag[i]);
        g->mag[i] = mag[i];
    }
    gl_iterate(g, frames, iters, seed, audio);
    return TANDEM_OK;
}

/* Griffin-Lim on g->mag [frames, 513]. */
static void gl_iterate(tandem_griffinlim *g, int frames, int iters, uint64_t seed, float *audio) {
    size_t n = (size_t)frames * NBINS;
    uint64_t rs = seed;
    for (size_t i = 0; i < n; i++) { /* random initial phases */
        double ph = two_pi * gl_uniform(&rs);
        g->re[i] = (float)cos(ph);
        g->im[i] = (float)sin(ph);
    }
    memset(g->pre, 0, n * sizeof(float));
    memset(g->pim, 0, n * sizeof(float));
    const double alpha = TANDEM_GL_MOMENTUM / (1.0 + TANDEM_GL_MOMENTUM);
    /* re/im hold unit phases; the spectrum to invert is mag * phase */
    for (int it = 0; it < iters; it++) {
        for (size_t i = 0; i < n; i++) {
            g->re[i] *= g->mag[i];
            g->im[i] *= g->mag[i];
        }
        istft(g, g->re, g->im, frames, g->audio);
        stft(g, g->audio, frames, g->re, g->im); /* rebuilt */
        for (size_t i = 0; i < n; i++) {
            /* fast Griffin-Lim: extrapolate from the previous rebuilt spectrum, then keep the phase */
            double ar = g->re[i] - alpha * g->pre[i], ai = g->im[i] - alpha * g->pim[i];
            g->pre[i] = g->re[i];
            g->pim[i] = g->im[i];
            double r = sqrt(ar * ar + ai * ai);
            g->re[i] = r > 1e-16 ? (float)(ar / r) : 1.0f;
            g->im[i] = r > 1e-16 ? (float)(ai / r) : 0.0f;
        }
    }
    for (size_t i = 0; i < n; i++) {
        g->re[i] *= g->mag[i];
        g->im[i] *= g->mag[i];
    }
    istft(g, g->re, g->im, frames, audio);
}

tandem_status tandem_griffinlim_synthesize(tandem_griffinlim *g, const float *logmel, int frames, int iters,
                                           uint64_t seed, float *audio) {
    TANDEM_TRY(check_frames(g, "synthesize", frames));
    if (iters < 1) return tandem_fail(TANDEM_E_INVALID, "griffinlim: %d iterations, expected >= 1", iters);
    TANDEM_TRY(tandem_griffinlim_mel_to_linear(g, logmel, frames, g->mag));
    gl_iterate(g, frames, iters, seed, audio);
    return TANDEM_OK;
}
