/* wav.c — 16-bit PCM WAV output via libsndfile (see wav.h). libsndfile writes to the temp file
 * of an atomic replace through sf_open_fd, so a failed write never leaves a half file. */
#include "runtime/formats/wav.h"

#include <math.h>
#include <sndfile.h>

#include "runtime/formats/atomic_file.h"
#include "platform/os/log.h"

tandem_status tandem_wav_write_pcm16(const char *path, const float *samples, int64_t n, int sample_rate) {
    if (!path || n < 0 || (n > 0 && !samples) || sample_rate < 1)
        return tandem_fail(TANDEM_E_INVALID, "wav write %s: bad arguments (%lld samples at %d Hz)",
                           path ? path : "(null)", (long long)n, sample_rate);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(samples[i]))
            return tandem_fail(TANDEM_E_INVALID, "wav write %s: sample %lld is not finite", path, (long long)i);
    tandem_atomic_file f;
    TANDEM_TRY(tandem_atomic_open(&f, path));
    SF_INFO info = {0};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
    SNDFILE *sf = sf_open_fd(f.fd, SFM_WRITE, &info, 0 /* the atomic file closes the fd */);
    if (!sf) {
        tandem_status st = tandem_fail(TANDEM_E_IO, "wav write %s: libsndfile: %s", path, sf_strerror(NULL));
        tandem_atomic_abort(&f);
        return st;
    }
    /* convert here (round(x * 32767), clipped) rather than through libsndfile's float path,
     * whose scale (32767 or 32768) depends on its clipping mode */
    sf_count_t done = 0;
    short buf[4096];
    while (done < (sf_count_t)n) {
        sf_count_t k = (sf_count_t)n - done < 4096 ? (sf_count_t)n - done : 4096;
        for (sf_count_t i = 0; i < k; i++) {
            float v = samples[done + i];
            v = v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
            buf[i] = (short)lrint((double)v * 32767.0);
        }
        sf_count_t w = sf_write_short(sf, buf, k);
        done += w;
        if (w != k) break;
    }
    int close_err = sf_close(sf);
    if (done != (sf_count_t)n || close_err != 0) {
        tandem_status st = tandem_fail(TANDEM_E_IO, "wav write %s: wrote %lld of %lld samples (%s)", path,
                                       (long long)done, (long long)n, sf_error_number(close_err));
        tandem_atomic_abort(&f);
        return st;
    }
    return tandem_atomic_commit(&f);
}
