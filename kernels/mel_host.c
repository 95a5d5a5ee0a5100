/* mel_host.c — launch geometry and host implementations of the log-mel kernels (mel.cu), and
 * the per-frame host STFT and band projection they share with runtime/audio/mel.c. The host
 * implementations follow the kernels' semantics (kernels/mel.h) and their arithmetic (a double
 * FFT, the power rounded to float before sqrtf, double accumulation of the projection, float
 * logf/fmaxf), so host and device agree to rounding.
 *
 * The FFT is FFTW's double r2c (TANDEM_HAVE_FFTW) or the built-in radix-2 FFT. Its tables and
 * the FFTW plan are process-wide, made once (tandem_mel_fft_prepare) and read-only afterwards;
 * FFTW's new-array execute is thread-safe and allocation-free, and the frame buffers it runs
 * on live on the caller's stack, aligned as the planning buffers were. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if TANDEM_HAVE_FFTW
#include <fftw3.h>
#endif

#include "kernels/registry.h"

enum { MEL_THREADS = TANDEM_K_MEL_THREADS, MEL_MAX_BLOCKS = 4096 };
#define N_FFT TANDEM_MEL_N_FFT
#define N_BINS TANDEM_MEL_N_BINS
#define N_MELS TANDEM_MEL_N_MELS
/* the built-in FFT here and the STFT kernel (kernels/mel.cu: 9-bit bit reversal, one butterfly
 * per thread) are written for 1024 points */
_Static_assert(N_FFT == 1024 && TANDEM_K_MEL_STFT_THREADS * 4 == N_FFT, "the radix-2 FFTs expect n_fft 1024");
/* Frame buffers: FFTW requires the arrays it executes on to be aligned as the ones it planned
 * with (fftw_malloc's, SIMD-aligned); 64 bytes covers every SIMD width. */
#define MEL_ALIGN 64

static void mel_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, MEL_THREADS);
    if (d->grid[0] > MEL_MAX_BLOCKS) d->grid[0] = MEL_MAX_BLOCKS; /* grid-stride covers the rest */
}

/* ---- the host FFT (process-wide tables, made once) ---- */

static const double mel_two_pi = 6.283185307179586476925286766559;

static struct {
    double window[N_FFT];         /* periodic Hann */
    double tw_re[N_FFT / 4];      /* e^{-2 pi i j / 512}, j < 256 (built-in FFT) */
    double tw_im[N_FFT / 4];
    double sp_re[N_FFT / 2 + 1];  /* e^{-2 pi i k / 1024}, k <= 512 (built-in split step) */
    double sp_im[N_FFT / 2 + 1];
    uint16_t bitrev[N_FFT / 2];   /* 9-bit bit reversal */
#if TANDEM_HAVE_FFTW
    fftw_plan plan;               /* r2c 1024, double; NULL → built-in FFT */
#endif
} mel_fft;
static pthread_once_t mel_fft_once = PTHREAD_ONCE_INIT;

static void mel_fft_init(void) {
    for (int n = 0; n < N_FFT; n++) mel_fft.window[n] = 0.5 - 0.5 * cos(mel_two_pi * n / N_FFT);
    for (int j = 0; j < 256; j++) {
        mel_fft.tw_re[j] = cos(mel_two_pi * j / 512.0);
        mel_fft.tw_im[j] = -sin(mel_two_pi * j / 512.0);
    }
    for (int k = 0; k <= 512; k++) {
        mel_fft.sp_re[k] = cos(mel_two_pi * k / N_FFT);
        mel_fft.sp_im[k] = -sin(mel_two_pi * k / N_FFT);
    }
    for (int i = 0; i < 512; i++) {
        int r = 0;
        for (int bit = 0; bit < 9; bit++) r |= ((i >> bit) & 1) << (8 - bit);
        mel_fft.bitrev[i] = (uint16_t)r;
    }
#if TANDEM_HAVE_FFTW
    /* FFTW_ESTIMATE: no timing runs, so the same plan (and the same rounding) every run. */
    double *in = fftw_alloc_real(N_FFT);
    fftw_complex *out = fftw_alloc_complex(N_BINS);
    if (in && out) mel_fft.plan = fftw_plan_dft_r2c_1d(N_FFT, in, out, FFTW_ESTIMATE);
    fftw_free(in);
    fftw_free(out);
#endif
}

int tandem_mel_fft_prepare(void) {
    pthread_once(&mel_fft_once, mel_fft_init);
#if TANDEM_HAVE_FFTW
    return mel_fft.plan ? 0 : -1;
#else
    return 0;
#endif
}

const char *tandem_mel_fft_name(void) {
    tandem_mel_fft_prepare();
#if TANDEM_HAVE_FFTW
    return mel_fft.plan ? "fftw" : "built-in";
#else
    return "built-in";
#endif
}

/* mag[k] = sqrtf((float)(re^2 + im^2 + 1e-9)) of spec [513][2] (re, im interleaved). The
 * power is formed in double (re, im can be far apart in scale); its float rounding moves the
 * magnitude by < 1e-7 relative. SSE2 does four bins per step with the same operations in the
 * same order (so the same results as the scalar tail: sqrtps and sqrtf both round correctly). */
static void mel_magnitude(const double *spec, float *mag) {
    int k = 0;
#if defined(__SSE2__)
    const __m128d eps = _mm_set1_pd(TANDEM_MEL_MAG_EPS);
    for (; k + 4 <= N_BINS; k += 4) {
        __m128d a = _mm_loadu_pd(spec + 2 * k), b = _mm_loadu_pd(spec + 2 * k + 2);
        __m128d c = _mm_loadu_pd(spec + 2 * k + 4), d = _mm_loadu_pd(spec + 2 * k + 6);
        a = _mm_mul_pd(a, a); /* (re^2, im^2) of bin k */
        b = _mm_mul_pd(b, b);
        c = _mm_mul_pd(c, c);
        d = _mm_mul_pd(d, d);
        __m128d p01 = _mm_add_pd(_mm_add_pd(_mm_unpacklo_pd(a, b), _mm_unpackhi_pd(a, b)), eps);
        __m128d p23 = _mm_add_pd(_mm_add_pd(_mm_unpacklo_pd(c, d), _mm_unpackhi_pd(c, d)), eps);
        __m128 p = _mm_movelh_ps(_mm_cvtpd_ps(p01), _mm_cvtpd_ps(p23));
        _mm_storeu_ps(mag + k, _mm_sqrt_ps(p));
    }
#endif
    for (; k < N_BINS; k++) {
        double re = spec[2 * k], im = spec[2 * k + 1];
        mag[k] = sqrtf((float)(re * re + im * im + TANDEM_MEL_MAG_EPS));
    }
}

/* The built-in FFT of the windowed frame in[1024] → spec [513][2]: even/odd samples as re/im
 * of a 512-point complex sequence, radix-2 decimation in time, then the split step
 * X[k] = E[k] + e^{-2 pi i k / 1024} O[k]. */
static void mel_fft_builtin(const double *in, double *spec) {
    double zr[512], zi[512];
    for (int i = 0; i < 512; i++) {
        zr[mel_fft.bitrev[i]] = in[2 * i];
        zi[mel_fft.bitrev[i]] = in[2 * i + 1];
    }
    for (int size = 2; size <= 512; size <<= 1) {
        int half = size >> 1, step = 512 / size;
        for (int base = 0; base < 512; base += size)
            for (int j = 0; j < half; j++) {
                int p = base + j, q = p + half;
                double wr = mel_fft.tw_re[j * step], wi = mel_fft.tw_im[j * step];
                double xr = zr[q] * wr - zi[q] * wi, xi = zr[q] * wi + zi[q] * wr;
                zr[q] = zr[p] - xr;
                zi[q] = zi[p] - xi;
                zr[p] += xr;
                zi[p] += xi;
            }
    }
    for (int k = 0; k <= 512; k++) {
        int ka = k % 512, kb = (512 - k) % 512;
        double er = 0.5 * (zr[ka] + zr[kb]), ei = 0.5 * (zi[ka] - zi[kb]);
        double orr = 0.5 * (zi[ka] + zi[kb]), oi = -0.5 * (zr[ka] - zr[kb]);
        spec[2 * k] = er + mel_fft.sp_re[k] * orr - mel_fft.sp_im[k] * oi;
        spec[2 * k + 1] = ei + mel_fft.sp_re[k] * oi + mel_fft.sp_im[k] * orr;
    }
}

void tandem_mel_frame_magnitude(const float *x, int64_t len, int64_t start, float *mag) {
    tandem_mel_fft_prepare();
    _Alignas(MEL_ALIGN) double in[N_FFT];
    _Alignas(MEL_ALIGN) double spec[2 * N_BINS];
    const double *w = mel_fft.window;
    if (start >= 0 && start + N_FFT <= len) { /* interior frame: contiguous samples */
        const float *xs = x + start;
        for (int n = 0; n < N_FFT; n++) in[n] = w[n] * (double)xs[n];
    } else {
        for (int n = 0; n < N_FFT; n++) in[n] = w[n] * (double)x[tandem_k_mel_reflect(start + n, len)];
    }
#if TANDEM_HAVE_FFTW
    if (mel_fft.plan)
        fftw_execute_dft_r2c(mel_fft.plan, in, (fftw_complex *)(void *)spec);
    else
        mel_fft_builtin(in, spec);
#else
    mel_fft_builtin(in, spec);
#endif
    mel_magnitude(spec, mag);
}

void tandem_mel_project_frame(const tandem_k_mel_bands *bands, const float *weights, const float *mag,
                              float *mel) {
    for (int m = 0; m < N_MELS; m++) {
        const float *w = weights + bands->off[m], *x = mag + bands->lo[m];
        const int n = bands->len[m];
        /* four partial sums, a_i over bins j = i mod 4 (independent dependency chains; the
         * sum is still double); SSE2 keeps (a0, a1) and (a2, a3) in two registers, so both
         * forms add the same products in the same order */
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
        int j = 0;
#if defined(__SSE2__)
        __m128d a01 = _mm_setzero_pd(), a23 = _mm_setzero_pd();
        for (; j + 4 <= n; j += 4) {
            __m128 wv = _mm_loadu_ps(w + j), xv = _mm_loadu_ps(x + j);
            a01 = _mm_add_pd(a01, _mm_mul_pd(_mm_cvtps_pd(wv), _mm_cvtps_pd(xv)));
            a23 = _mm_add_pd(a23, _mm_mul_pd(_mm_cvtps_pd(_mm_movehl_ps(wv, wv)), _mm_cvtps_pd(_mm_movehl_ps(xv, xv))));
        }
        double lanes[4];
        _mm_storeu_pd(lanes, a01);
        _mm_storeu_pd(lanes + 2, a23);
        a0 = lanes[0];
        a1 = lanes[1];
        a2 = lanes[2];
        a3 = lanes[3];
#else
        for (; j + 4 <= n; j += 4) {
            a0 += (double)w[j] * (double)x[j];
            a1 += (double)w[j + 1] * (double)x[j + 1];
            a2 += (double)w[j + 2] * (double)x[j + 2];
            a3 += (double)w[j + 3] * (double)x[j + 3];
        }
#endif
        for (; j < n; j++) a0 += (double)w[j] * (double)x[j];
        mel[m] = (float)((a0 + a1) + (a2 + a3));
    }
}

/* ---- mel_stft ---- */
void tandem_k_mel_stft_geom(const tandem_k_mel_stft_args *a, tandem_launch_dims *d) {
    int64_t rows = (int64_t)a->batch * a->max_frames;
    *d = tandem_dims_1d(rows, 1); /* one block per frame... */
    if (d->grid[0] > MEL_MAX_BLOCKS) d->grid[0] = MEL_MAX_BLOCKS; /* ...grid-stride past the cap */
    d->block[0] = TANDEM_K_MEL_STFT_THREADS;
}
void tandem_k_mel_stft_host(const tandem_k_mel_stft_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        const float *x = a->audio + (int64_t)b * a->max_samples;
        float *item = a->mag + (int64_t)b * a->max_frames * N_BINS;
        for (int t = 0; t < frames; t++)
            tandem_mel_frame_magnitude(x, len, (int64_t)t * TANDEM_MEL_HOP - TANDEM_MEL_PAD,
                                       item + (int64_t)t * N_BINS);
        memset(item + (int64_t)frames * N_BINS, 0, sizeof(float) * (size_t)(a->max_frames - frames) * N_BINS);
    }
}

/* ---- mel_project ---- */
void tandem_k_mel_project_geom(const tandem_k_mel_project_args *a, tandem_launch_dims *d) {
    mel_dims((int64_t)a->batch * a->max_frames * N_MELS, d);
}
void tandem_k_mel_project_host(const tandem_k_mel_project_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        const int64_t row0 = (int64_t)b * a->max_frames;
        for (int t = 0; t < frames; t++)
            tandem_mel_project_frame(&a->bands, a->weights, a->mag + (row0 + t) * N_BINS,
                                     a->mel + (row0 + t) * N_MELS);
        memset(a->mel + (row0 + frames) * N_MELS, 0, sizeof(float) * (size_t)(a->max_frames - frames) * N_MELS);
    }
}

/* ---- mel_log ---- */
void tandem_k_mel_log_geom(const tandem_k_mel_log_args *a, tandem_launch_dims *d) {
    mel_dims((int64_t)a->batch * a->max_frames * N_MELS, d);
}
void tandem_k_mel_log_host(const tandem_k_mel_log_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        for (int t = 0; t < a->max_frames; t++) {
            int64_t row = ((int64_t)b * a->max_frames + t) * N_MELS;
            for (int m = 0; m < N_MELS; m++)
                a->out[row + m] = t < frames ? tandem_mel_log_floor(a->mel[row + m]) : a->pad;
        }
    }
}

/* ---- mel_targets ---- */
void tandem_k_mel_targets_geom(const tandem_k_mel_targets_args *a, tandem_launch_dims *d) {
    mel_dims((int64_t)a->batch * a->max_frames, d);
}
void tandem_k_mel_targets_host(const tandem_k_mel_targets_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        a->frames[b] = frames;
        for (int t = 0; t < a->max_frames; t++) {
            a->mask[(int64_t)b * a->max_frames + t] = t < frames ? 1.0f : 0.0f;
            a->stop[(int64_t)b * a->max_frames + t] = t >= frames - 1 ? 1.0f : 0.0f;
        }
    }
}

/* ---- costs (registry.h): every frame slot of the batch counted (padding frames are cheap on
 * the device but their blocks still run) -------------------------------------------------- */

void tandem_k_mel_stft_cost(const tandem_k_mel_stft_args *a, tandem_kernel_cost *c) {
    const double frames = (double)a->batch * (double)a->max_frames;
    /* radix-2 real FFT of 1024 points: ~5 N log2 N / 2 flops, plus window and magnitude */
    const double per = 2.5 * TANDEM_MEL_N_FFT * 10.0 + TANDEM_MEL_N_FFT + 4.0 * TANDEM_MEL_N_BINS;
    tandem_kcost(c, frames * per, 4.0 * (double)a->batch * (double)a->max_samples + 4.0 * a->batch,
                 4.0 * frames * TANDEM_MEL_N_BINS);
}
void tandem_k_mel_project_cost(const tandem_k_mel_project_args *a, tandem_kernel_cost *c) {
    const double frames = (double)a->batch * (double)a->max_frames;
    double w = 0.0;
    for (int m = 0; m < TANDEM_MEL_N_MELS; m++) w += a->bands.len[m];
    tandem_kcost(c, 2.0 * frames * w, 4.0 * frames * TANDEM_MEL_N_BINS + 4.0 * w + 4.0 * a->batch,
                 4.0 * frames * TANDEM_MEL_N_MELS);
}
void tandem_k_mel_log_cost(const tandem_k_mel_log_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * (double)a->max_frames * TANDEM_MEL_N_MELS;
    tandem_kcost(c, 2.0 * n, 4.0 * n + 4.0 * a->batch, 4.0 * n);
}
void tandem_k_mel_targets_cost(const tandem_k_mel_targets_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * (double)a->max_frames;
    tandem_kcost(c, 2.0 * n, 4.0 * a->batch, 8.0 * n + 4.0 * a->batch);
}
