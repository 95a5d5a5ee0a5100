/* test_npy_wav.c — the .npy writer checked by an independent reader of the format here (magic,
 * version, header length, dict, 64-byte alignment, data), and the 16-bit WAV writer read back
 * through libsndfile (rate, channels, format, each sample = round(x * 32767) within one step,
 * clipping beyond +-1, non-finite samples refused). */
#include <math.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/formats/npy.h"
#include "test/fixtures.h"
#include "runtime/formats/wav.h"

static tandem_rng rng;
static char scratch[256];

static int setup(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_npywav");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

static void test_npy(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{37, 80, 0}, {5, 0, 0}, {2, 3, 4}, {0, 80, 0}};
    const int ndims[] = {2, 1, 3, 2};
    const char *tuples[] = {"(37, 80)", "(5,)", "(2, 3, 4)", "(0, 80)"};
    for (int c = 0; c < 4; c++) {
        size_t n = 1;
        for (int d = 0; d < ndims[c]; d++) n *= (size_t)shapes[c][d];
        float *x = malloc(sizeof(float) * (n + 1));
        for (size_t i = 0; i < n; i++) x[i] = tandem_rng_uniform(&rng, -12, 3);
        char path[400];
        snprintf(path, sizeof path, "%s/a%d.npy", scratch, c);
        uint64_t allocs = tandem_alloc_count();
        assert_int_equal(tandem_npy_write_f32(path, x, ndims[c], shapes[c]), TANDEM_OK);
        assert_int_equal(tandem_alloc_count(), allocs);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        unsigned char head[10];
        assert_int_equal(fread(head, 1, 10, f), 10);
        assert_memory_equal(head, "\x93NUMPY\x01\x00", 8);
        size_t hlen = head[8] | (size_t)head[9] << 8;
        assert_int_equal((10 + hlen) % 64, 0);
        char *dict = calloc(1, hlen + 1);
        assert_int_equal(fread(dict, 1, hlen, f), hlen);
        assert_int_equal(dict[hlen - 1], '\n');
        assert_non_null(strstr(dict, "'descr': '<f4'"));
        assert_non_null(strstr(dict, "'fortran_order': False"));
        char want[64];
        snprintf(want, sizeof want, "'shape': %s", tuples[c]);
        assert_non_null(strstr(dict, want));
        float *y = malloc(sizeof(float) * (n + 1));
        assert_int_equal(fread(y, sizeof(float), n, f), n);
        assert_int_equal(fgetc(f), EOF); /* nothing after the data */
        if (n) assert_memory_equal(x, y, n * sizeof(float));
        fclose(f);
        free(dict), free(x), free(y);
    }
    const int64_t bad[1] = {-1};
    char path[400];
    snprintf(path, sizeof path, "%s/bad.npy", scratch);
    float z = 0;
    assert_int_equal(tandem_npy_write_f32(path, &z, 1, bad), TANDEM_E_INVALID);
    assert_int_equal(tandem_npy_write_f32(path, &z, 0, bad), TANDEM_E_INVALID);
    assert_false(access(path, F_OK) == 0);
}

static void test_wav(void **state) {
    (void)state;
    enum { N = 5000 };
    float *x = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) x[i] = tandem_rng_uniform(&rng, -1.3f, 1.3f); /* some clip */
    x[0] = 1.0f, x[1] = -1.0f, x[2] = 0.0f;
    char path[400];
    snprintf(path, sizeof path, "%s/out.wav", scratch);
    assert_int_equal(tandem_wav_write_pcm16(path, x, N, 22050), TANDEM_OK);
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    assert_non_null(sf);
    assert_int_equal(info.samplerate, 22050);
    assert_int_equal(info.channels, 1);
    assert_int_equal(info.frames, N);
    assert_int_equal(info.format, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    short *s = malloc(sizeof(short) * N);
    assert_int_equal(sf_read_short(sf, s, N), N);
    sf_close(sf);
    int worst = 0;
    for (int i = 0; i < N; i++) {
        double v = x[i] > 1 ? 1 : x[i] < -1 ? -1 : x[i];
        int want = (int)lrint(v * 32767.0);
        int d = abs(s[i] - want);
        if (d > worst) worst = d;
    }
    print_message("WAV: max difference from round(x * 32767) = %d\n", worst);
    assert_true(worst <= 1);
    x[100] = NAN;
    snprintf(path, sizeof path, "%s/nan.wav", scratch);
    assert_int_equal(tandem_wav_write_pcm16(path, x, N, 22050), TANDEM_E_INVALID);
    assert_false(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/missing/dir/x.wav", scratch);
    x[100] = 0;
    assert_int_equal(tandem_wav_write_pcm16(path, x, N, 22050), TANDEM_E_IO);
    free(x), free(s);
}

int main(void) {
    rng.s = tandem_test_seed("test_npy_wav");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npy),
        cmocka_unit_test(test_wav),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
