/* test_layouts.c — the directory dataset layouts (runtime/data/layout*.c, issue 14) and what
 * depends on their speakers:
 *   VCTK 0.92 / 0.80:  txt/<spk>/<id>.txt + wav48_silence_trimmed/<spk>/<id>_mic1.flac (mic2 with
 *                      vctk_mic 2) or wav48/<spk>/<id>.wav; detected without metadata.csv; speaker
 *                      table = folder names; audio without text, text without audio, empty speaker
 *                      folders reported and counted, naming the files
 *   LibriTTS:          [<split>/]<spk>/<chapter>/<id>.normalized.txt + <id>.wav, the data path the
 *                      folder above the splits or a split folder
 *   hostile inputs:    a FIFO named like a transcript (never blocks), a transcript over the size
 *                      limit, non-UTF-8 text, bad ids, a second link to a walked folder, no txt/
 *   cache:             hit on the same tree; a changed transcript (same size) rebuilds
 *   end to end:        a short training run on a VCTK and a LibriTTS tree (speakers in the checkpoint)
 *   --init-from:       speaker rows mapped by NAME into a run whose speaker table differs
 *   tandem plan:       lists the speaker rows and plans them as training allocates them */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/data/layout.h"
#include "runtime/data/text_index.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/run/plan.h"
#include "runtime/text/symbols.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/testutil.h"
#include "test/tiny_corpus.h"

static char tmpdir[256];
static int setup(void **state) {
    (void)state;
    if (tandem_test_mkdtemp(tmpdir, sizeof tmpdir, "test_layouts") != 0) return -1;
    tandem_test_log_capture(TANDEM_LOG_DEBUG);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tandem_test_log_stop();
    tandem_test_rmtree(tmpdir);
    return 0;
}

/* ---- fixture trees ---- */

static void text_file(const char *root, const char *rel, const char *text) {
    char p[1024], d[1024];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = 0;
    CHECK(tandem_mkdir_p(d));
    tandem_test_write_file(p, text, strlen(text));
}

/* A short tone (0.1 .. 0.3 s) at rel under root, in the container its extension names. */
static void audio_file(const char *root, const char *rel, int seed) {
    char p[1024], d[1024];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = 0;
    CHECK(tandem_mkdir_p(d));
    tandem_rng r = {(uint64_t)seed + 7};
    const int n = (int)tandem_rng_int(&r, 2205, 6000);
    float *x = malloc(sizeof(float) * (size_t)n);
    assert_non_null(x);
    const double f = tandem_rng_uniform(&r, 150.0f, 2000.0f);
    for (int k = 0; k < n; k++) x[k] = (float)(0.3 * sin(2 * M_PI * f * k / 22050) + 0.02 * tandem_rng_uniform(&r, -1, 1));
    const int flac = strstr(rel, ".flac") != NULL;
    tandem_test_write_audio(p, x, n, 22050, 1, flac ? (SF_FORMAT_FLAC | SF_FORMAT_PCM_16) : (SF_FORMAT_WAV | SF_FORMAT_PCM_16));
    free(x);
}

static const char *const texts[] = {"a cat", "the dog ran", "red sun", "blue sea and sky", "one tree", "big hill"};

/* VCTK 0.92 under tmpdir/sub: p225 and p226 with three utterances each (both mics), plus the
 * bad cases: audio without text (p226_009, and speaker p315 with audio only), text without audio
 * (p226_008), an empty speaker folder (txt/p999). */
static void vctk_tree(const char *sub, char *dir, size_t cap) {
    snprintf(dir, cap, "%s/%s", tmpdir, sub);
    char rel[256];
    const char *spk[] = {"p225", "p226"};
    for (int s = 0; s < 2; s++)
        for (int i = 1; i <= 3; i++) {
            snprintf(rel, sizeof rel, "txt/%s/%s_%03d.txt", spk[s], spk[s], i);
            char t[64];
            snprintf(t, sizeof t, "%s\n", texts[(s * 3 + i - 1) % 6]);
            text_file(dir, rel, t);
            for (int m = 1; m <= 2; m++) {
                snprintf(rel, sizeof rel, "wav48_silence_trimmed/%s/%s_%03d_mic%d.flac", spk[s], spk[s], i, m);
                audio_file(dir, rel, s * 10 + i + 100 * m);
            }
        }
    audio_file(dir, "wav48_silence_trimmed/p226/p226_009_mic1.flac", 1);
    audio_file(dir, "wav48_silence_trimmed/p315/p315_001_mic1.flac", 2);
    text_file(dir, "txt/p226/p226_008.txt", "no audio here\n");
    text_file(dir, "txt/p226/._p226_001.txt", "a macOS resource fork: ignored\n");
    text_file(dir, "speaker-info.txt", "ID AGE GENDER\n");
    char p[600];
    snprintf(p, sizeof p, "%s/txt/p999", dir);
    CHECK(tandem_mkdir_p(p));
}

static void index_cfg(tandem_text_index_config *c, const char *dir) {
    tandem_text_index_config_default(c);
    c->data_dir = dir;
    c->use_cache = 0;
    c->num_workers = 2;
}

static const tandem_utt *find(const tandem_text_index *ix, const char *id) {
    for (uint32_t i = 0; i < ix->count; i++)
        if (!strcmp(tandem_utt_id(ix, &ix->utts[i]), id)) return &ix->utts[i];
    return NULL;
}

static void expect_log(const char *needle) {
    if (!strstr(tandem_test_log_text(), needle))
        fail_msg("log lacks \"%s\"; it holds:\n%s", needle, tandem_test_log_text());
}

static void test_vctk_092(void **state) {
    (void)state;
    char dir[400];
    vctk_tree("vctk", dir, sizeof dir);
    tandem_text_index_config c;
    index_cfg(&c, dir); /* AUTO: no metadata.csv, txt/ and wav48* → VCTK */
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    printf("%s", tandem_test_log_text());
    assert_int_equal(ix.layout, TANDEM_LAYOUT_VCTK);
    assert_int_equal(ix.count, 6);
    assert_int_equal(ix.n_speakers, 2);
    const char *names[2];
    tandem_text_index_speakers(&ix, names);
    assert_string_equal(names[0], "p225");
    assert_string_equal(names[1], "p226");
    assert_int_equal(ix.skipped[TANDEM_SKIP_NO_TEXT], 2);
    assert_int_equal(ix.skipped[TANDEM_SKIP_NO_AUDIO], 1);
    /* sorted: speakers, then ids */
    assert_string_equal(tandem_utt_id(&ix, &ix.utts[0]), "p225_001");
    assert_string_equal(tandem_utt_id(&ix, &ix.utts[5]), "p226_003");
    const tandem_utt *u = find(&ix, "p226_002");
    assert_non_null(u);
    assert_string_equal(tandem_utt_audio(&ix, u), "wav48_silence_trimmed/p226/p226_002_mic1.flac");
    assert_true(u->n_samples >= 2205);
    assert_int_equal(tandem_utt_tokens(&ix, u)[1], tandem_symbols_count() + 1); /* <spk> p226 */
    expect_log("txt/p226/p226_008.txt: missing audio: no audio for this transcript; expected "
               "wav48_silence_trimmed/p226/p226_008_mic1.flac");
    expect_log("wav48_silence_trimmed/p226/p226_009_mic1.flac: missing text: no transcript for this audio; "
               "expected txt/p226/p226_009.txt");
    expect_log("wav48_silence_trimmed/p315/p315_001_mic1.flac: missing text");
    expect_log("speaker folder txt/p999 holds no transcripts");
    expect_log("mic1; vctk_mic 2 takes mic2");
    tandem_text_index_free(&ix);

    tandem_test_log_clear();
    c.vctk_mic = 2;
    c.layout = TANDEM_LAYOUT_VCTK;
    CHECK(tandem_text_index_open(&c, &ix));
    u = find(&ix, "p226_002");
    assert_non_null(u);
    assert_string_equal(tandem_utt_audio(&ix, u), "wav48_silence_trimmed/p226/p226_002_mic2.flac");
    assert_int_equal(ix.skipped[TANDEM_SKIP_NO_TEXT], 0); /* p226_009, p315_001 have only mic1 */
    tandem_text_index_free(&ix);
}

static void test_vctk_080(void **state) {
    (void)state;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/vctk080", tmpdir);
    text_file(dir, "txt/p225/p225_001.txt", "a cat\n");
    text_file(dir, "txt/p225/p225_002.txt", "red sun\n");
    audio_file(dir, "wav48/p225/p225_001.wav", 1);
    audio_file(dir, "wav48/p225/p225_002.wav", 2);
    text_file(dir, "txt/p225/p225_003.txt", "no audio\n");
    tandem_text_index_config c;
    index_cfg(&c, dir);
    c.layout = TANDEM_LAYOUT_VCTK;
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.count, 2);
    assert_int_equal(ix.n_speakers, 1);
    assert_string_equal(tandem_utt_audio(&ix, &ix.utts[1]), "wav48/p225/p225_002.wav");
    expect_log("txt/p225/p225_003.txt: missing audio: no audio for this transcript; expected wav48/p225/p225_003.wav");
    tandem_text_index_free(&ix);
}

/* LibriTTS under tmpdir/sub: train-clean-100/{84,103} and dev-clean/1272, two chapters for 84. */
static void libritts_tree(const char *sub, char *dir, size_t cap) {
    snprintf(dir, cap, "%s/%s", tmpdir, sub);
    static const char *const utt[][2] = {
        {"train-clean-100/84/121123", "84_121123_000007_000001"},
        {"train-clean-100/84/121123", "84_121123_000008_000000"},
        {"train-clean-100/84/121550", "84_121550_000001_000000"},
        {"train-clean-100/103/1240", "103_1240_000000_000001"},
        {"train-clean-100/103/1240", "103_1240_000001_000000"},
        {"dev-clean/1272/128104", "1272_128104_000001_000000"},
    };
    char rel[400];
    for (int i = 0; i < 6; i++) {
        snprintf(rel, sizeof rel, "%s/%s.normalized.txt", utt[i][0], utt[i][1]);
        text_file(dir, rel, texts[i]);
        snprintf(rel, sizeof rel, "%s/%s.original.txt", utt[i][0], utt[i][1]);
        text_file(dir, rel, "ORIGINAL, not read");
        snprintf(rel, sizeof rel, "%s/%s.wav", utt[i][0], utt[i][1]);
        audio_file(dir, rel, i);
    }
    text_file(dir, "train-clean-100/84/121123/84_121123.trans.tsv", "ignored\n");
    text_file(dir, "README_librispeech.txt", "ignored\n");
}

static void test_libritts(void **state) {
    (void)state;
    char dir[400], split[500];
    libritts_tree("libri", dir, sizeof dir);
    tandem_text_index_config c;
    index_cfg(&c, dir); /* AUTO: no metadata.csv, split folders → LibriTTS */
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.layout, TANDEM_LAYOUT_LIBRITTS);
    assert_int_equal(ix.count, 6);
    assert_int_equal(ix.n_speakers, 3);
    const char *names[3];
    tandem_text_index_speakers(&ix, names);
    assert_string_equal(names[0], "103"); /* bytewise */
    assert_string_equal(names[1], "1272");
    assert_string_equal(names[2], "84");
    const tandem_utt *u = find(&ix, "84_121550_000001_000000");
    assert_non_null(u);
    assert_string_equal(tandem_utt_audio(&ix, u), "train-clean-100/84/121550/84_121550_000001_000000.wav");
    assert_int_equal(tandem_utt_tokens(&ix, u)[1], tandem_symbols_count() + 2);
    tandem_text_index_free(&ix);

    /* the data path a split folder; speaker folders at the top */
    snprintf(split, sizeof split, "%s/train-clean-100", dir);
    index_cfg(&c, split);
    c.layout = TANDEM_LAYOUT_LIBRITTS;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.count, 5);
    assert_int_equal(ix.n_speakers, 2);
    assert_string_equal(tandem_utt_audio(&ix, find(&ix, "103_1240_000000_000001")),
                        "103/1240/103_1240_000000_000001.wav");
    tandem_text_index_free(&ix);

    /* audio without its normalized transcript, and an empty speaker folder */
    snprintf(split, sizeof split, "%s/train-clean-100/103/1240/103_1240_000000_000001.normalized.txt", dir);
    assert_int_equal(unlink(split), 0);
    snprintf(split, sizeof split, "%s/train-clean-100/200", dir);
    CHECK(tandem_mkdir_p(split));
    tandem_test_log_clear();
    index_cfg(&c, dir);
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.count, 5);
    assert_int_equal(ix.skipped[TANDEM_SKIP_NO_TEXT], 1);
    expect_log("train-clean-100/103/1240/103_1240_000000_000001.wav: missing text: no transcript for this audio; "
               "expected train-clean-100/103/1240/103_1240_000000_000001.normalized.txt");
    expect_log("train-clean-100/200: speaker folder without transcripts");
    tandem_text_index_free(&ix);
}

static void test_hostile(void **state) {
    (void)state;
    char dir[400], p[600];
    snprintf(dir, sizeof dir, "%s/bad", tmpdir);
    text_file(dir, "txt/p225/p225_001.txt", "a cat\n");
    audio_file(dir, "wav48/p225/p225_001.wav", 1);
    /* a FIFO named like a transcript: refused without blocking */
    snprintf(p, sizeof p, "%s/txt/p225/p225_002.txt", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    audio_file(dir, "wav48/p225/p225_002.wav", 2);
    /* a transcript over the limit */
    char *big = malloc(TANDEM_LAYOUT_MAX_TEXT_BYTES + 2);
    assert_non_null(big);
    memset(big, 'a', TANDEM_LAYOUT_MAX_TEXT_BYTES + 1);
    big[TANDEM_LAYOUT_MAX_TEXT_BYTES + 1] = 0;
    text_file(dir, "txt/p225/p225_003.txt", big);
    free(big);
    audio_file(dir, "wav48/p225/p225_003.wav", 3);
    /* invalid UTF-8 at byte 3 */
    text_file(dir, "txt/p225/p225_004.txt", "ab\xC3\x28 cd");
    audio_file(dir, "wav48/p225/p225_004.wav", 4);
    /* an id that could not be a file name elsewhere: control character */
    text_file(dir, "txt/p225/p225_\x01.txt", "red sun");
    audio_file(dir, "wav48/p225/p225_\x01.wav", 5);
    /* a FIFO in place of audio: probed without blocking, the utterance kept without a length */
    text_file(dir, "txt/p225/p225_006.txt", "we go");
    snprintf(p, sizeof p, "%s/wav48/p225/p225_006.wav", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    /* a second link to a walked speaker folder: walked once */
    snprintf(p, sizeof p, "%s/txt/p226", dir);
    assert_int_equal(symlink("p225", p), 0);
    tandem_text_index_config c;
    index_cfg(&c, dir);
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    printf("%s", tandem_test_log_text());
    assert_int_equal(ix.count, 2);
    assert_int_equal(find(&ix, "p225_006")->n_samples, 0);
    expect_log("txt/p225/p225_006.txt: audio unreadable, not used for training");
    assert_int_equal(ix.skipped[TANDEM_SKIP_BAD_TEXT_FILE], 2);
    assert_int_equal(ix.skipped[TANDEM_SKIP_BAD_UTF8], 1);
    assert_int_equal(ix.skipped[TANDEM_SKIP_BAD_ID], 1);
    expect_log("txt/p225/p225_002.txt: unreadable text file: read ");
    expect_log("the path is a FIFO (named pipe), expected a regular file");
    expect_log("txt/p225/p225_003.txt: unreadable text file: read ");
    expect_log("more than the limit of 65536 bytes; a transcript file holds one utterance's text");
    expect_log("txt/p225/p225_004.txt: invalid UTF-8 at byte 3 of the file");
    expect_log("txt/p225/p225_?.txt: bad id: id contains a control character"); /* shown, not sent raw */
    assert_null(strchr(tandem_test_log_text(), '\x01'));
    expect_log("txt/p226: the same folder as one walked already");
    assert_null(strstr(tandem_test_log_text(), "txt/p226 holds no")); /* not reported as empty too */
    tandem_text_index_free(&ix);

    /* no txt/ folder: the layout forced, the error names what was expected */
    snprintf(p, sizeof p, "%s/none", tmpdir);
    CHECK(tandem_mkdir_p(p));
    index_cfg(&c, p);
    c.layout = TANDEM_LAYOUT_VCTK;
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "no txt/ folder; the VCTK layout is txt/<speaker>/<id>.txt"));
    c.layout = TANDEM_LAYOUT_LIBRITTS;
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "no utterances found in the LibriTTS layout"));
}

static void test_cache(void **state) {
    (void)state;
    char dir[400], cache[400], p[600];
    vctk_tree("vctk_cache", dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    tandem_text_index_config c;
    index_cfg(&c, dir);
    c.use_cache = 1;
    c.cache_dir = cache;
    tandem_text_index ix;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 0);
    const uint16_t before = tandem_utt_tokens(&ix, find(&ix, "p225_001"))[3];
    tandem_text_index_free(&ix);
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 1);
    assert_int_equal(ix.count, 6);
    tandem_text_index_free(&ix);
    /* the same size, other text: the key covers the transcripts' bytes */
    snprintf(p, sizeof p, "%s/txt/p225/p225_001.txt", dir);
    tandem_test_write_file(p, "z cat\n", 6);
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 0);
    assert_int_not_equal(tandem_utt_tokens(&ix, find(&ix, "p225_001"))[3], before);
    tandem_text_index_free(&ix);
    /* another mic is another index */
    c.vctk_mic = 2;
    CHECK(tandem_text_index_open(&c, &ix));
    assert_int_equal(ix.cache_hit, 0);
    tandem_text_index_free(&ix);
}

/* ---- training ---- */

static void small_config(tandem_config *cfg, const char *train, const char *out) {
    tiny_corpus_train_config(cfg, train, out, 2);
}

/* steps 0: 2 as small_config; resume: continue out's run */
static tandem_status train_frozen(const char *data, const char *out, const char *init_from, const char *lr,
                                  const char *freeze, int steps, int resume) {
    tandem_config cfg;
    tiny_corpus_train_config(&cfg, data, out, steps ? steps : 2);
    if (lr) CHECK(tandem_config_set(&cfg, "lr", lr));
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.init_from = init_from;
    o.freeze = freeze;
    o.resume_dir = resume ? out : NULL;
    char cache[600];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    o.cache_dir = cache;
    tandem_trainer_summary sum;
    return tandem_test_train_run(&cfg, &o, &sum);
}

static tandem_status train(const char *data, const char *out, const char *init_from, const char *lr) {
    return train_frozen(data, out, init_from, lr, NULL, 0, 0);
}

static void expect_speakers(const char *ckpt, const char *json) {
    tandem_ckpt *ck = NULL;
    CHECK(tandem_ckpt_open(ckpt, &ck));
    assert_string_equal(tandem_ckpt_meta_find(ck, "speakers"), json);
    tandem_ckpt_close(ck);
}

static void test_train_vctk_and_libritts(void **state) {
    (void)state;
    char dir[400], out[400], ckpt[500];
    vctk_tree("vctk_train", dir, sizeof dir);
    snprintf(out, sizeof out, "%s/run_vctk", tmpdir);
    CHECK(train(dir, out, NULL, NULL));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000002.safetensors", out);
    expect_speakers(ckpt, "[\"p225\",\"p226\"]");

    libritts_tree("libri_train", dir, sizeof dir);
    snprintf(out, sizeof out, "%s/run_libri", tmpdir);
    CHECK(train(dir, out, NULL, NULL));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000002.safetensors", out);
    expect_speakers(ckpt, "[\"103\",\"1272\",\"84\"]");
}

/* Rows of sym_emb.weight [V, d] of a checkpoint into a new buffer. */
static float *emb_rows(const char *ckpt, int64_t *rows, int64_t *d) {
    tandem_st_file *f = NULL;
    CHECK(tandem_checkpoint_open(ckpt, -1, &f));
    const tandem_st_info *x = tandem_st_find(f, "sym_emb.weight");
    assert_non_null(x);
    *rows = x->shape[0];
    *d = x->shape[1];
    float *e = malloc(x->bytes);
    assert_non_null(e);
    memcpy(e, x->data, x->bytes);
    tandem_st_close(f);
    return e;
}

/* A VCTK tree whose speakers are p226 (shared with the first run) and p300 (new), in the table
 * order [p226, p300]: p226's row must move from 77 to 76. */
static void test_init_from_speakers_by_name(void **state) {
    (void)state;
    char a[400], b[400], out_a[400], out_b[400], ck_a[500], ck_b[500];
    vctk_tree("vctk_a", a, sizeof a);
    snprintf(out_a, sizeof out_a, "%s/run_a", tmpdir);
    CHECK(train(a, out_a, NULL, NULL));
    snprintf(b, sizeof b, "%s/vctk_b", tmpdir);
    text_file(b, "txt/p226/p226_001.txt", "a cat\n");
    text_file(b, "txt/p300/p300_001.txt", "red sun\n");
    text_file(b, "txt/p300/p300_002.txt", "we go\n");
    audio_file(b, "wav48/p226/p226_001.wav", 1);
    audio_file(b, "wav48/p300/p300_001.wav", 2);
    audio_file(b, "wav48/p300/p300_002.wav", 3);
    snprintf(ck_a, sizeof ck_a, "%s/ckpt-00000002.safetensors", out_a);
    snprintf(out_b, sizeof out_b, "%s/run_b", tmpdir);
    tandem_test_log_clear();
    CHECK(train(b, out_b, ck_a, "0")); /* lr 0: the parameters stay as --init-from set them */
    char want[200];
    snprintf(want, sizeof want, "%d rows copied by symbol name, 0 new symbols initialised; speakers: 1 rows copied "
             "by name (of 2 there), 1 new speaker initialised: \"p300\"", tandem_symbols_count());
    expect_log(want);
    snprintf(ck_b, sizeof ck_b, "%s/ckpt-00000002.safetensors", out_b);
    expect_speakers(ck_b, "[\"p226\",\"p300\"]");
    int64_t ra, rb, d, d2;
    float *ea = emb_rows(ck_a, &ra, &d), *eb = emb_rows(ck_b, &rb, &d2);
    const int64_t ns = tandem_symbols_count();
    assert_int_equal(ra, ns + 2);
    assert_int_equal(rb, ns + 2);
    assert_int_equal(d, d2);
    assert_memory_equal(eb, ea, (size_t)(ns * d) * sizeof(float));                      /* symbols */
    assert_memory_equal(eb + ns * d, ea + (ns + 1) * d, (size_t)d * sizeof(float));      /* p226 by name */
    assert_memory_not_equal(eb + (ns + 1) * d, ea + ns * d, (size_t)d * sizeof(float));  /* p300 is new */
    free(ea);
    free(eb);
}

/* Row r (d floats) of tensor name in a checkpoint into dst. */
static void tensor_row(const char *ckpt, const char *name, int64_t r, int64_t d, float *dst) {
    tandem_st_file *f = NULL;
    CHECK(tandem_checkpoint_open(ckpt, -1, &f));
    const tandem_st_info *x = tandem_st_find(f, name);
    assert_non_null(x);
    memcpy(dst, (const float *)x->data + r * d, (size_t)d * sizeof(float));
    tandem_st_close(f);
}

/* --freeze embeddings on a fine-tune that adds speaker p300: the rows copied by name stay as the
 * checkpoint had them, p300's new row trains (it moves from its initialisation, its moments too). */
static void test_init_from_freeze_trains_new_rows(void **state) {
    (void)state;
    char a[400], b[400], out_a[400], out_0[400], out_f[400], ck_a[500], ck_0[500], ck_f[500];
    vctk_tree("vctk_fa", a, sizeof a);
    snprintf(out_a, sizeof out_a, "%s/run_fa", tmpdir);
    CHECK(train(a, out_a, NULL, NULL));
    snprintf(b, sizeof b, "%s/vctk_fb", tmpdir);
    text_file(b, "txt/p226/p226_001.txt", "a cat\n");
    text_file(b, "txt/p300/p300_001.txt", "red sun\n");
    text_file(b, "txt/p300/p300_002.txt", "we go\n");
    audio_file(b, "wav48/p226/p226_001.wav", 1);
    audio_file(b, "wav48/p300/p300_001.wav", 2);
    audio_file(b, "wav48/p300/p300_002.wav", 3);
    snprintf(ck_a, sizeof ck_a, "%s/ckpt-00000002.safetensors", out_a);
    snprintf(out_0, sizeof out_0, "%s/run_f0", tmpdir);
    CHECK(train(b, out_0, ck_a, "0")); /* lr 0: p300's row as initialised */
    snprintf(out_f, sizeof out_f, "%s/run_ff", tmpdir);
    tandem_test_log_clear();
    CHECK(train_frozen(b, out_f, ck_a, "0.01", "embeddings", 0, 0));
    expect_log("are trained: frozen, they would keep their random initialisation");
    snprintf(ck_0, sizeof ck_0, "%s/ckpt-00000002.safetensors", out_0);
    snprintf(ck_f, sizeof ck_f, "%s/ckpt-00000002.safetensors", out_f);
    int64_t ra, rf, d, d2;
    float *ea = emb_rows(ck_a, &ra, &d), *ef = emb_rows(ck_f, &rf, &d2);
    const int64_t ns = tandem_symbols_count();
    assert_int_equal(rf, ns + 2);
    assert_int_equal(d, d2);
    assert_memory_equal(ef, ea, (size_t)(ns * d) * sizeof(float));                 /* symbols: frozen */
    assert_memory_equal(ef + ns * d, ea + (ns + 1) * d, (size_t)d * sizeof(float)); /* p226: frozen */
    float *init = malloc((size_t)d * sizeof(float)), *mom = calloc((size_t)d, sizeof(float));
    assert_non_null(init);
    assert_non_null(mom);
    tensor_row(ck_0, "sym_emb.weight", ns + 1, d, init);
    assert_memory_not_equal(ef + (ns + 1) * d, init, (size_t)d * sizeof(float)); /* p300: trained */
    float *zero = calloc((size_t)d, sizeof(float));
    assert_non_null(zero);
    tensor_row(ck_f, "adam_m.sym_emb.weight", ns + 1, d, mom);
    assert_memory_not_equal(mom, zero, (size_t)d * sizeof(float));
    tensor_row(ck_f, "adam_m.sym_emb.weight", ns, d, mom); /* p226's moments stay 0 */
    assert_memory_equal(mom, zero, (size_t)d * sizeof(float));
    /* the resumed run (freezing as the run did) still trains p300's row, and only it */
    tandem_test_log_clear();
    CHECK(train_frozen(b, out_f, NULL, "0.01", NULL, 4, 1));
    expect_log("are trained: frozen, they would keep their random initialisation");
    char ck_r[500];
    snprintf(ck_r, sizeof ck_r, "%s/ckpt-00000004.safetensors", out_f);
    float *er = emb_rows(ck_r, &rf, &d2);
    assert_memory_equal(er, ef, (size_t)((ns + 1) * d) * sizeof(float));
    assert_memory_not_equal(er + (ns + 1) * d, ef + (ns + 1) * d, (size_t)d * sizeof(float));
    free(ea), free(ef), free(er), free(init), free(mom), free(zero);
}

static void test_plan_speakers(void **state) {
    (void)state;
    char dir[400];
    vctk_tree("vctk_plan", dir, sizeof dir);
    tandem_config cfg;
    small_config(&cfg, dir, tmpdir);
    tandem_plan_options po;
    tandem_plan_options_init(&po);
    assert_int_equal(po.speakers, -1);
    static char text[32768];
    size_t len = 0;
    CHECK(tandem_plan_report(&cfg, &po, text, sizeof text, &len));
    char want[160];
    snprintf(want, sizeof want, "embedding sym_emb.weight [%d, 16]: %d symbols + 2 speaker rows (from train_data",
             tandem_symbols_count() + 2, tandem_symbols_count());
    if (!strstr(text, want)) fail_msg("plan lacks \"%s\":\n%s", want, text);
    po.speakers = 0;
    CHECK(tandem_plan_report(&cfg, &po, text, sizeof text, &len));
    assert_non_null(strstr(text, "+ 0 speaker rows (as given)"));
    /* the rows are planned as training allocates them: the model arena holds them */
    size_t with[2], without[2];
    CHECK(tandem_plan_arena_bytes(&cfg, TANDEM_BACKEND_HOST, with));
    cfg.train_data[0] = 0;
    CHECK(tandem_plan_arena_bytes(&cfg, TANDEM_BACKEND_HOST, without));
    printf("model arena: %zu bytes with 2 speakers, %zu without\n", with[1], without[1]);
    assert_true(with[1] > without[1]);
    assert_int_equal(with[0], without[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vctk_092, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vctk_080, setup, teardown),
        cmocka_unit_test_setup_teardown(test_libritts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_train_vctk_and_libritts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_from_speakers_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_from_freeze_trains_new_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_speakers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
