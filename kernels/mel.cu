/* mel.cu — the log-mel feature kernels (arguments and semantics: kernels/mel.h; host
 * implementations and geometry: kernels/mel_host.c). mel_stft is a block-per-frame FFT; the
 * others are element-wise with a grid-stride loop (mel_project: one thread per frame and band). */
#include "kernels/dialect.h"

#include "kernels/mel.h"

DEVICE_FN int64_t mel_k_first(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t mel_k_stride(void) { return (int64_t)gridDim.x * (int64_t)blockDim.x; }

/* 9-bit bit reversal of i < 512. */
DEVICE_FN int mel_k_bitrev9(int i) {
    int r = 0;
    for (int bit = 0; bit < 9; bit++) r |= ((i >> bit) & 1) << (8 - bit);
    return r;
}

/* One block of 256 threads per frame, frames taken grid-stride. The frame's even/odd samples
 * are packed as re/im of a 512-point complex sequence (bit-reversed into shared memory), 9
 * radix-2 stages run with one butterfly per thread and a barrier after each, and the split
 * step turns the result into the 513 bins of the real 1024-point DFT. Double up to the
 * power, whose float rounding goes through sqrtf; the tables are built once per block. Every branch around a barrier depends only on the
 * frame index, so the whole block takes it together. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_MEL_STFT_THREADS) tandem_k_mel_stft(tandem_k_mel_stft_args a) {
    __shared__ double zr[512], zi[512];        /* the complex sequence */
    __shared__ double win[TANDEM_MEL_N_FFT];   /* periodic Hann */
    __shared__ double tw_re[256], tw_im[256];  /* e^{-2 pi i j / 512} */
    __shared__ double sp_re[TANDEM_MEL_N_BINS], sp_im[TANDEM_MEL_N_BINS]; /* e^{-2 pi i k / 1024} */
    const double two_pi = 6.283185307179586476925286766559;
    const int tid = (int)threadIdx.x;
    for (int n = tid; n < TANDEM_MEL_N_FFT; n += TANDEM_K_MEL_STFT_THREADS)
        win[n] = 0.5 - 0.5 * cos(two_pi * n / TANDEM_MEL_N_FFT);
    tw_re[tid] = cos(two_pi * tid / 512.0);
    tw_im[tid] = -sin(two_pi * tid / 512.0);
    for (int k = tid; k < TANDEM_MEL_N_BINS; k += TANDEM_K_MEL_STFT_THREADS) {
        sp_re[k] = cos(two_pi * k / TANDEM_MEL_N_FFT);
        sp_im[k] = -sin(two_pi * k / TANDEM_MEL_N_FFT);
    }
    __syncthreads();

    const int64_t rows = (int64_t)a.batch * a.max_frames;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        int t = (int)(row % a.max_frames);
        int b = (int)(row / a.max_frames);
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a.lengths, b, a.max_samples, a.max_frames, &len);
        float *out = a.mag + row * TANDEM_MEL_N_BINS;
        if (t >= frames) { /* padded frame */
            for (int k = tid; k < TANDEM_MEL_N_BINS; k += TANDEM_K_MEL_STFT_THREADS) out[k] = 0.0f;
            continue;
        }
        const float *x = a.audio + (int64_t)b * a.max_samples;
        int64_t start = (int64_t)t * TANDEM_MEL_HOP - TANDEM_MEL_PAD;
        for (int i = tid; i < 512; i += TANDEM_K_MEL_STFT_THREADS) {
            int r = mel_k_bitrev9(i);
            zr[r] = win[2 * i] * (double)x[tandem_k_mel_reflect(start + 2 * i, len)];
            zi[r] = win[2 * i + 1] * (double)x[tandem_k_mel_reflect(start + 2 * i + 1, len)];
        }
        __syncthreads();
        for (int size = 2; size <= 512; size <<= 1) { /* 256 butterflies per stage */
            int half = size >> 1;
            int j = tid % half;
            int p = (tid / half) * size + j, q = p + half;
            double wr = tw_re[j * (512 / size)], wi = tw_im[j * (512 / size)];
            double xr = zr[q] * wr - zi[q] * wi, xi = zr[q] * wi + zi[q] * wr;
            double pr = zr[p], pi = zi[p];
            zr[q] = pr - xr;
            zi[q] = pi - xi;
            zr[p] = pr + xr;
            zi[p] = pi + xi;
            __syncthreads();
        }
        for (int k = tid; k < TANDEM_MEL_N_BINS; k += TANDEM_K_MEL_STFT_THREADS) {
            int ka = k % 512, kb = (512 - k) % 512;
            /* even part (Z[k] + conj Z[-k]) / 2, odd part (Z[k] - conj Z[-k]) / 2i */
            double er = 0.5 * (zr[ka] + zr[kb]), ei = 0.5 * (zi[ka] - zi[kb]);
            double orr = 0.5 * (zi[ka] + zi[kb]), oi = -0.5 * (zr[ka] - zr[kb]);
            double re = er + sp_re[k] * orr - sp_im[k] * oi;
            double im = ei + sp_re[k] * oi + sp_im[k] * orr;
            out[k] = sqrtf((float)(re * re + im * im + TANDEM_MEL_MAG_EPS)); /* as the host: kernels/mel.h */
        }
        __syncthreads(); /* zr/zi are reused by the next frame */
    }
}

/* One thread per (frame, band): the band's contiguous bins against its packed weights, in
 * double. The band table is copied from the argument struct to shared memory once per block. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_MEL_THREADS) tandem_k_mel_project(tandem_k_mel_project_args a) {
    __shared__ int32_t lo[TANDEM_MEL_N_MELS], len[TANDEM_MEL_N_MELS], off[TANDEM_MEL_N_MELS];
    for (int m = (int)threadIdx.x; m < TANDEM_MEL_N_MELS; m += (int)blockDim.x) {
        lo[m] = a.bands.lo[m];
        len[m] = a.bands.len[m];
        off[m] = a.bands.off[m];
    }
    __syncthreads();
    int64_t n_total = (int64_t)a.batch * a.max_frames * TANDEM_MEL_N_MELS;
    for (int64_t i = mel_k_first(); i < n_total; i += mel_k_stride()) {
        int64_t row = i / TANDEM_MEL_N_MELS;
        int m = (int)(i % TANDEM_MEL_N_MELS);
        int t = (int)(row % a.max_frames);
        int b = (int)(row / a.max_frames);
        int64_t n_len = 0;
        int frames = tandem_k_mel_item_frames(a.lengths, b, a.max_samples, a.max_frames, &n_len);
        if (t >= frames) {
            a.mel[i] = 0.0f;
            continue;
        }
        const float *w = a.weights + off[m];
        const float *x = a.mag + row * TANDEM_MEL_N_BINS + lo[m];
        double acc = 0.0;
        for (int j = 0; j < len[m]; j++) acc += (double)w[j] * (double)x[j];
        a.mel[i] = (float)acc;
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_MEL_THREADS) tandem_k_mel_log(tandem_k_mel_log_args a) {
    int64_t n_total = (int64_t)a.batch * a.max_frames * TANDEM_MEL_N_MELS;
    for (int64_t i = mel_k_first(); i < n_total; i += mel_k_stride()) {
        int64_t row = i / TANDEM_MEL_N_MELS;
        int t = (int)(row % a.max_frames);
        int b = (int)(row / a.max_frames);
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a.lengths, b, a.max_samples, a.max_frames, &len);
        a.out[i] = t < frames ? logf(fmaxf(a.mel[i], TANDEM_MEL_LOG_FLOOR)) : a.pad;
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_MEL_THREADS) tandem_k_mel_targets(tandem_k_mel_targets_args a) {
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
