/* mel.cu — the log-mel feature kernels (arguments and semantics: kernels/mel.h; host
 * implementations and geometry: kernels/mel_host.c). All element-wise with a grid-stride loop;
 * the two GEMMs of the recipe run between them (runtime/mel_device.c). */
#include "dialect.h"

#include "mel.h"

DEVICE_FN int64_t mel_k_first(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t mel_k_stride(void) { return (int64_t)gridDim.x * (int64_t)blockDim.x; }

/* One thread per frame sample; consecutive threads read consecutive audio samples. */
KERNEL tandem_k_mel_frames(tandem_k_mel_frames_args a) {
    int64_t n_total = (int64_t)a.batch * a.max_frames * TANDEM_K_MEL_N_FFT;
    for (int64_t i = mel_k_first(); i < n_total; i += mel_k_stride()) {
        int n = (int)(i % TANDEM_K_MEL_N_FFT);
        int64_t row = i / TANDEM_K_MEL_N_FFT;
        int t = (int)(row % a.max_frames);
        int b = (int)(row / a.max_frames);
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a.lengths, b, a.max_samples, a.max_frames, &len);
        float v = 0.0f;
        if (t < frames) {
            int64_t j = (int64_t)t * TANDEM_K_MEL_HOP + n - TANDEM_K_MEL_PAD;
            v = a.audio[(int64_t)b * a.max_samples + tandem_k_mel_reflect(j, len)] * a.window[n];
        }
        a.frames[i] = v;
    }
}

KERNEL tandem_k_mel_magnitude(tandem_k_mel_magnitude_args a) {
    int64_t n_total = a.rows * TANDEM_K_MEL_N_BINS;
    for (int64_t i = mel_k_first(); i < n_total; i += mel_k_stride()) {
        int64_t r = i / TANDEM_K_MEL_N_BINS;
        int k = (int)(i % TANDEM_K_MEL_N_BINS);
        const float *row = a.spec + r * (2 * TANDEM_K_MEL_N_BINS);
        float re = row[k], im = row[TANDEM_K_MEL_N_BINS + k];
        a.mag[i] = sqrtf(re * re + im * im + 1e-9f);
    }
}

KERNEL tandem_k_mel_log(tandem_k_mel_log_args a) {
    int64_t n_total = (int64_t)a.batch * a.max_frames * TANDEM_K_MEL_N_MELS;
    for (int64_t i = mel_k_first(); i < n_total; i += mel_k_stride()) {
        int64_t row = i / TANDEM_K_MEL_N_MELS;
        int t = (int)(row % a.max_frames);
        int b = (int)(row / a.max_frames);
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a.lengths, b, a.max_samples, a.max_frames, &len);
        a.out[i] = t < frames ? logf(fmaxf(a.mel[i], 1e-5f)) : 0.0f;
    }
}

KERNEL tandem_k_mel_targets(tandem_k_mel_targets_args a) {
    int64_t n_total = (int64_t)a.batch * a.max_frames;
    for (int64_t i = mel_k_first(); i < n_total; i += mel_k_stride()) {
        int t = (int)(i % a.max_frames);
        int b = (int)(i / a.max_frames);
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a.lengths, b, a.max_samples, a.max_frames, &len);
        a.mask[i] = t < frames ? 1.0f : 0.0f;
        a.stop[i] = t >= frames - 1 ? 1.0f : 0.0f;
        if (t == 0) a.frames[b] = frames;
    }
}
