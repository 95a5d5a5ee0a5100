/* test_speakers.c — multi-speaker data and models (issue 14):
 *   generic layout:  metadata.csv `id|speaker|text` (header line or dataset_layout): the speaker
 *                    table (names sorted bytewise), tokens [<lang>, <spk>, BOS, ..., EOS], bad
 *                    speakers and wrong column counts reported by line; LJSpeech unchanged
 *   cache key:       the layout is part of it (a forced layout never reuses another's cache)
 *   audio:           found by id whatever its container (FLAC, AU, OGG written by libsndfile)
 *   speaker JSON:    round trip with quotes/backslashes; malformed tables refused
 *   end to end:      train a few steps on two speakers; the checkpoint's "speakers" entry; synth
 *                    per speaker gives different mels; an unknown speaker lists the known; a
 *                    single-speaker checkpoint refuses a speaker; a resume on data with another
 *                    speaker table is refused.
 * Runs on the host and, as test_speakers@cuda, on the stand-in (TANDEM_TEST_BACKEND=cuda). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/data/text_index.h"
#include "runtime/text/symbols.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"

static char tmpdir[256];
static int setup(void **state) {
    (void)state;
    if (tandem_test_mkdtemp(tmpdir, sizeof tmpdir, "test_speakers") != 0) return -1;
    char p[512];
    snprintf(p, sizeof p, "%s/wavs", tmpdir);
    tandem_mkdir_p(p);
    tandem_test_log_capture(TANDEM_LOG_DEBUG);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tandem_test_log_stop();
    tandem_test_rmtree(tmpdir);
    return 0;
}

static void write_meta(const char *dir, const char *data) {
    char p[600];
    snprintf(p, sizeof p, "%s/metadata.csv", dir);
    tandem_test_write_file(p, data, strlen(data));
}
static void cfg_init(tandem_text_index_config *c) {
    tandem_text_index_config_default(c);
    c->data_dir = tmpdir;
    c->use_cache = 0;
    c->check_audio = 0;
    c->num_workers = 2;
}
static const tandem_utt *find(const tandem_text_index *ix, const char *id) {
    for (uint32_t i = 0; i < ix->count; i++)
        if (!strcmp(tandem_utt_id(ix, &ix->utts[i]), id)) return &ix->utts[i];
    fail_msg("id %s not in the index", id);
    return NULL;
}

static const char generic_rows[] = "a|bob|a cat\n"
                                   "b|alice|the dog ran\n"
                                   "c|bob|red sun\n"
                                   "d||empty speaker\n"
                                   "e|bob\n"
                                   "f|bob|x|y\n";

static void check_generic(const tandem_text_index *ix, uint32_t first_line) {
    assert_int_equal(ix->layout, TANDEM_LAYOUT_GENERIC);
    assert_int_equal(ix->n_speakers, 2);
    const char *names[2];
    tandem_text_index_speakers(ix, names);
    assert_string_equal(names[0], "alice");
    assert_string_equal(names[1], "bob");
    assert_int_equal(ix->count, 3);
    const int spk0 = tandem_symbols_count();
    const uint16_t *t = tandem_utt_tokens(ix, find(ix, "a"));
    assert_int_equal(t[0], TANDEM_SYM_LANG_EN);
    assert_int_equal(t[1], spk0 + 1); /* bob */
    assert_int_equal(t[2], TANDEM_SYM_BOS);
    assert_int_equal(find(ix, "a")->n_tok, 5 + 4); /* "a cat" + <lang> <spk> BOS EOS */
    t = tandem_utt_tokens(ix, find(ix, "b"));
    assert_int_equal(t[1], spk0 + 0); /* alice */
    assert_int_equal(ix->skipped[TANDEM_SKIP_BAD_SPEAKER], 1);
    assert_int_equal(ix->skipped[TANDEM_SKIP_COLUMNS], 2);
    char want[128];
    const char *log = tandem_test_log_text();
    snprintf(want, sizeof want, "metadata.csv:%u: bad speaker", first_line + 3);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "metadata.csv:%u: wrong column count: 2 fields, expected 3 (id|speaker|text)",
             first_line + 4);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "metadata.csv:%u: wrong column count: 4 fields", first_line + 5);
    assert_non_null(strstr(log, want));
}

static void test_generic_header(void **state) {
    (void)state;
    char meta[512];
    snprintf(meta, sizeof meta, "id|speaker|text\n%s", generic_rows);
    write_meta(tmpdir, meta);
    tandem_text_index_config c;
    cfg_init(&c);
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    check_generic(&ix, 2);
    tandem_text_index_free(&ix);
}

static void test_generic_forced(void **state) {
    (void)state;
    write_meta(tmpdir, generic_rows); /* no header: the layout comes from the config */
    tandem_text_index_config c;
    cfg_init(&c);
    c.layout = TANDEM_LAYOUT_GENERIC;
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    check_generic(&ix, 1);
    tandem_text_index_free(&ix);
    /* the same rows read as LJSpeech: one speaker, "bob" is the text column */
    c.layout = TANDEM_LAYOUT_AUTO;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.layout, TANDEM_LAYOUT_LJSPEECH);
    assert_int_equal(ix.n_speakers, 0);
    const uint16_t *t = tandem_utt_tokens(&ix, find(&ix, "a"));
    assert_int_equal(t[1], TANDEM_SYM_BOS);
    tandem_text_index_free(&ix);
}

/* The layout is part of the cache key: forcing LJSpeech on a generic file never reuses the
 * generic build (and reads the header line as a row). */
static void test_cache_key_layout(void **state) {
    (void)state;
    char meta[512], cache[600];
    snprintf(meta, sizeof meta, "id|speaker|text\n%s", generic_rows);
    write_meta(tmpdir, meta);
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    tandem_text_index_config c;
    cfg_init(&c);
    c.use_cache = 1;
    c.cache_dir = cache;
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 0);
    tandem_text_index_free(&ix);
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 1);
    check_generic(&ix, 2);
    tandem_text_index_free(&ix);
    c.layout = TANDEM_LAYOUT_LJSPEECH;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 0);
    assert_int_equal(ix.n_speakers, 0);
    find(&ix, "id"); /* the header, read as a row */
    tandem_text_index_free(&ix);
}

/* wavs/<id>.<ext> in any container libsndfile reads. */
static void test_audio_extensions(void **state) {
    (void)state;
    static const struct {
        const char *id, *ext;
        int format;
    } f[] = {{"w", "wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16}, {"fl", "flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16},
             {"au", "au", SF_FORMAT_AU | SF_FORMAT_PCM_16}, {"og", "ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS}};
    float x[4410];
    for (int i = 0; i < 4410; i++) x[i] = 0.3f * (float)sin(i * 0.05);
    char meta[512] = "", p[700];
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        snprintf(p, sizeof p, "%s/wavs/%s.%s", tmpdir, f[k].id, f[k].ext);
        tandem_test_write_audio(p, x, 4410, 22050, 1, f[k].format);
        snprintf(meta + strlen(meta), sizeof meta - strlen(meta), "%s|a cat\n", f[k].id);
    }
    strcat(meta, "none|a cat\n");
    write_meta(tmpdir, meta);
    tandem_text_index_config c;
    cfg_init(&c);
    c.check_audio = 1;
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.count, 4);
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        const tandem_utt *u = find(&ix, f[k].id);
        snprintf(p, sizeof p, "wavs/%s.%s", f[k].id, f[k].ext);
        assert_string_equal(tandem_utt_audio(&ix, u), p);
        printf("%s: %u samples\n", p, u->n_samples);
        assert_true(u->n_samples > 4000 && u->n_samples < 4800);
    }
    assert_int_equal(ix.skipped[TANDEM_SKIP_NO_AUDIO], 1);
    assert_non_null(strstr(tandem_test_log_text(), "metadata.csv:5: missing audio: no wavs/none.{wav,flac"));
    tandem_text_index_free(&ix);
}

static void test_speakers_json(void **state) {
    (void)state;
    const char *names[] = {"p225", "a \"quoted\" one", "back\\slash", "دو"};
    char *json = NULL, *back = NULL;
    uint32_t n = 0;
    CHECK(tandem_speakers_to_json(names, 4, &json));
    printf("%s\n", json);
    CHECK(tandem_speakers_from_json(json, &back, &n));
    assert_int_equal(n, 4);
    const char *p = back;
    for (int k = 0; k < 4; k++, p += strlen(p) + 1) assert_string_equal(p, names[k]);
    tandem_free(json);
    tandem_free(back);
    static const char *const bad[] = {"", "[", "[\"a\"", "[\"a\",]", "[\"\"]", "[\"a\"] x", "[\"a\\n\"]",
                                      "{\"a\":1}", "[\"a\"\"b\"]x"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(tandem_speakers_from_json(bad[k], &back, &n), TANDEM_E_FORMAT);
        assert_null(back);
    }
}

/* ---- end to end ---- */

static void small_config(tandem_config *cfg, const char *train, const char *out) {
    tiny_corpus_train_config(cfg, train, out, 3);
}

/* A tiny corpus under tmpdir/sub; with speakers, its metadata rewritten in the generic layout
 * (utterance i spoken by names[i % n]). */
static void corpus(const char *sub, const char *const *names, int n, char *dir, size_t cap) {
    snprintf(dir, cap, "%s/%s", tmpdir, sub);
    tandem_rng r = {42};
    tiny_corpus_write(dir, 8, 32, &r);
    if (!n) return;
    char meta[2048] = "id|speaker|text\n";
    for (int i = 0; i < 8; i++)
        snprintf(meta + strlen(meta), sizeof meta - strlen(meta), "u%d|%s|%s\n", i, names[i % n],
                 tiny_corpus_texts[i]);
    write_meta(dir, meta);
}

/* resume: a forced resume (another train_data is refused before the speakers otherwise). */
static tandem_status train(const char *data, const char *out, const char *resume) {
    tandem_config cfg;
    small_config(&cfg, data, out);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.resume_dir = resume;
    o.force_resume = resume != NULL;
    char cache[600];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    o.cache_dir = cache;
    tandem_trainer_summary sum;
    return tandem_test_train_run(&cfg, &o, &sum);
}

/* The mel of "a cat" spoken by speaker (NULL: the default), 8 frames at most, into mel. */
static tandem_status speak(const char *ckpt, const char *speaker, float *mel, int *frames) {
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.backend = tandem_test_backend();
    o.gl_iters = 0;
    o.max_frames = 8;
    o.speaker = speaker;
    tandem_synth *s = NULL;
    tandem_status st = tandem_synth_open(ckpt, &o, &s);
    if (st != TANDEM_OK) return st;
    tandem_synth_info info;
    CHECK(tandem_synth_get_info(s, &info));
    if (speaker) assert_string_equal(info.speaker, speaker);
    tandem_synth_result r;
    st = tandem_synth_run(s, "a cat", TANDEM_LANG_AUTO, NULL, &r);
    if (st == TANDEM_OK) {
        *frames = r.frames;
        memcpy(mel, r.mel, (size_t)r.frames * 80 * sizeof *mel);
    }
    tandem_synth_close(s);
    return st;
}

static void test_two_speakers_end_to_end(void **state) {
    (void)state;
    static const char *const two[] = {"alice", "bob"}, *const other[] = {"carol", "bob"};
    char data[400], out[400], ckpt[500];
    corpus("two", two, 2, data, sizeof data);
    snprintf(out, sizeof out, "%s/run_two", tmpdir);
    CHECK(train(data, out, NULL));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000003.safetensors", out);
    tandem_ckpt *ck = NULL;
    CHECK(tandem_ckpt_open(ckpt, &ck));
    assert_string_equal(tandem_ckpt_meta_find(ck, "speakers"), "[\"alice\",\"bob\"]");
    tandem_ckpt_close(ck);

    float ma[8 * 80], mb[8 * 80], md[8 * 80];
    int fa = 0, fb = 0, fd = 0;
    CHECK(speak(ckpt, "alice", ma, &fa));
    CHECK(speak(ckpt, "bob", mb, &fb));
    CHECK(speak(ckpt, NULL, md, &fd)); /* the default: the first speaker */
    const int n = (fa < fb ? fa : fb) * 80;
    assert_true(n > 0);
    double diff = 0;
    for (int i = 0; i < n; i++) diff += fabs((double)ma[i] - mb[i]);
    printf("mean |alice - bob| over %d mel values: %g\n", n, diff / n);
    assert_true(diff > 0);
    assert_int_equal(fd, fa);
    assert_memory_equal(md, ma, (size_t)fa * 80 * sizeof(float));

    assert_int_equal(speak(ckpt, "zed", ma, &fa), TANDEM_E_INVALID);
    printf("unknown: %s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "speaker 'zed' is not in checkpoint"));
    assert_non_null(strstr(tandem_last_error(), "its 2 speakers: alice, bob"));

    /* a resume on data with another speaker table is refused, naming both, even when forced */
    char data2[400];
    corpus("other", other, 2, data2, sizeof data2);
    assert_int_not_equal(train(data2, out, out), TANDEM_OK);
    printf("resume: %s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "speaker table"));
}

/* A single-speaker run: no "speakers" entry, synth works without a speaker and refuses one. */
static void test_single_speaker(void **state) {
    (void)state;
    char data[400], out[400], ckpt[500];
    corpus("one", NULL, 0, data, sizeof data);
    snprintf(out, sizeof out, "%s/run_one", tmpdir);
    CHECK(train(data, out, NULL));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000003.safetensors", out);
    tandem_ckpt *ck = NULL;
    CHECK(tandem_ckpt_open(ckpt, &ck));
    assert_null(tandem_ckpt_meta_find(ck, "speakers"));
    tandem_ckpt_close(ck);
    float m[8 * 80];
    int f = 0;
    CHECK(speak(ckpt, NULL, m, &f));
    assert_int_equal(speak(ckpt, "alice", m, &f), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "was trained on one speaker"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_generic_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generic_forced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_key_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audio_extensions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_speakers_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_speakers_end_to_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_speaker, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
