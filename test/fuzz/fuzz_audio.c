/* fuzz_audio.c — audio decoding (runtime/audio/audio.h) of arbitrary file bytes: probe, then decode
 * into a 22050 Hz mono buffer. The bytes go to a scratch file (the API reads paths; libsndfile
 * picks the format from the content: WAV, FLAC, OGG, AIFF, ...).
 *
 * Checks beyond "no crash, no leak": failures are the documented TANDEM_E_FORMAT (not audio,
 * corrupt, truncated, empty, non-finite or beyond 1000 x full scale), TANDEM_E_BUDGET (too long) or TANDEM_E_IO, with a
 * message naming the file, and leave *n_samples = 0; a probe that succeeds reports a sane
 * header; a decode that succeeds yields 1..max_samples finite samples, as many as the probe
 * promised when the header gives a length. */
#include <math.h>
#include <string.h>

#include "runtime/audio/audio.h"
#include "test/fuzz/fuzz_common.h"

#define MAX_SAMPLES 32768 /* ~1.5 s: longer files exercise the "too long" path */
#define MAX_INPUT (256u * 1024u)

static float samples[MAX_SAMPLES + 1];

/* libsndfile 1.2.0 (Debian 12) leaks the vorbis_info it allocates when sf_open fails on a
 * malformed Vorbis header (reproduced with sf_open alone, no Tandem code involved): a
 * third-party leak, so LeakSanitizer is told to ignore allocations made by vorbis_info_init.
 * (Default visibility: a shared sanitizer runtime, as with gcc, looks the hook up dynamically.) */
const char *__lsan_default_suppressions(void) __attribute__((visibility("default")));
const char *__lsan_default_suppressions(void) {
    return "leak:vorbis_info_init\n";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_init();
    if (size > MAX_INPUT) size = MAX_INPUT;
    const char *path = fuzz_write_tmp("audio", data, size);

    tandem_audio_info probe;
    fuzz_clear_error();
    tandem_status pst = tandem_audio_probe(path, &probe);
    fuzz_check_status_in(pst, "tandem_audio_probe", TANDEM_E_FORMAT, TANDEM_E_IO, -1);
    if (pst != TANDEM_OK) {
        FUZZ_ASSERT(strstr(tandem_last_error(), path) != NULL);
    } else {
        FUZZ_ASSERT(probe.channels >= 1 && probe.sample_rate >= 1 && probe.frames >= 1);
        /* frames = INT64_MAX: the stream does not say (e.g. a streamed FLAC); samples_22050 is
         * then -1 (unknown), else a length */
        FUZZ_ASSERT(probe.frames != INT64_MAX ? probe.samples_22050 >= 0 : probe.samples_22050 == -1);
        FUZZ_ASSERT(probe.seconds > 0);
        FUZZ_ASSERT(memchr(probe.format, 0, sizeof probe.format) != NULL);
    }

    tandem_audio_decoder *dec = NULL;
    fuzz_clear_error();
    tandem_status st = tandem_audio_decoder_create(&dec);
    fuzz_check_status_in(st, "tandem_audio_decoder_create", -1);
    if (st != TANDEM_OK) return 0;
    int64_t n = -1;
    tandem_audio_info info;
    samples[MAX_SAMPLES] = 12345.0f; /* guard: nothing may be written past max_samples */
    fuzz_clear_error();
    st = tandem_audio_decode(dec, path, samples, MAX_SAMPLES, &n, &info);
    fuzz_check_status_in(st, "tandem_audio_decode", TANDEM_E_FORMAT, TANDEM_E_BUDGET, TANDEM_E_IO, -1);
    FUZZ_ASSERT(samples[MAX_SAMPLES] == 12345.0f);
    if (st != TANDEM_OK) {
        FUZZ_ASSERT(n == 0);
        FUZZ_ASSERT(strstr(tandem_last_error(), path) != NULL);
    } else {
        FUZZ_ASSERT(pst == TANDEM_OK); /* what decodes must also probe */
        FUZZ_ASSERT(n >= 1 && n <= MAX_SAMPLES);
        for (int64_t i = 0; i < n; i++)
            FUZZ_ASSERT(isfinite(samples[i]) && fabsf(samples[i]) <= TANDEM_AUDIO_MAX_ABS);
        FUZZ_ASSERT(info.channels == probe.channels && info.sample_rate == probe.sample_rate);
        if (info.frames != probe.frames) fuzz_fail("probe and decode disagree on the header");
        if (probe.frames != INT64_MAX) /* a real length, not "unknown" */
            FUZZ_ASSERT(n == probe.samples_22050);
    }
    tandem_audio_decoder_free(dec);
    return 0;
}
