/* test_config_myxtts.c — MyXTTS configs and names (runtime/core/config_compat.h, docs/MIGRATING.md):
 * the nested model:/data:/training: sections read as Tandem keys (renamed, values mapped, the ring
 * clamped), the always-on and meaningless names accepted with one info line each, unknown section
 * keys accepted with a warning, errors where a name means something else; flags spelt with dashes;
 * the name kinds the CLI builds its flags from; configs/myxtts-example.yaml; and every name in
 * docs/MIGRATING.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/core/config.h"
#include "platform/os/os.h"
#include "test/fixtures.h"
#include "test/testutil.h"

static tandem_status load_text(tandem_config *cfg, const char *text) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/tandem_test_myxtts_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    tandem_status st = tandem_config_load(cfg, path);
    unlink(path);
    return st;
}

/* Random values through MyXTTS's names land in the Tandem keys; each use logs one info line. */
static void test_sections_map_to_keys(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_config_myxtts sections")};
    for (int round = 0; round < 10; round++) {
        const int batch = (int)tandem_rng_int(&r, 1, 64), accum = (int)tandem_rng_int(&r, 1, 8);
        const int ring = (int)tandem_rng_int(&r, 2, 100), text = (int)tandem_rng_int(&r, 8, 400);
        const int frames = 4 * (int)tandem_rng_int(&r, 8, 300), mixed = round % 2;
        const double lr = tandem_rng_uniform(&r, 1e-5f, 1e-2f), clip = tandem_rng_uniform(&r, 0.1f, 5.0f);
        char yaml[1024];
        snprintf(yaml, sizeof yaml,
                 "model:\n  text_encoder_dim: 512\n  languages: [en, fa]\n  max_text_length: %d\n"
                 "data:\n  batch_size: %d\n  prefetch_buffer_size: %d\n  max_mel_frames: %d\n"
                 "  mixed_precision: %s\n  pad_to_fixed_length: true\n  text_cleaners: [\"x\"]\n"
                 "training:\n  learning_rate: %.17g\n  gradient_accumulation_steps: %d\n"
                 "  gradient_clip_norm: %.17g\n  epochs: 10\n  optimizer: adamw\n  scheduler_params: {a: 1}\n",
                 text, batch, ring, frames, mixed ? "true" : "false", lr, accum, clip);
        tandem_test_log_capture(TANDEM_LOG_INFO);
        tandem_config cfg;
        if (load_text(&cfg, yaml) != TANDEM_OK) fail_msg("%s\n%s", tandem_last_error(), yaml);
        const char *log = tandem_test_log_text();
        assert_int_equal(cfg.batch_size, batch);
        assert_int_equal(cfg.epochs, 10);
        assert_int_equal(cfg.grad_accum, accum);
        assert_int_equal(cfg.prefetch_buffer_size, ring > 16 ? 16 : ring);
        assert_int_equal(cfg.max_text, text);
        assert_int_equal(cfg.max_frames, frames);
        assert_int_equal(cfg.precision, mixed ? TANDEM_PRECISION_BF16 : TANDEM_PRECISION_FP32);
        assert_true(fabs(cfg.lr - lr) <= 1e-12 * lr && fabs(cfg.grad_clip - clip) <= 1e-12 * clip);
        static const char *const want[] = {"'training.learning_rate' is Tandem's 'lr'",
            "'model.max_text_length' is Tandem's 'max_text'", "'data.pad_to_fixed_length' accepted",
            "'model.text_encoder_dim': no Tandem equivalent",
            "'model.languages': no Tandem equivalent", "'training.scheduler_params': no Tandem equivalent"};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            if (!strstr(log, want[i])) fail_msg("the log lacks \"%s\":\n%s", want[i], log);
        if (ring > 16 && !strstr(log, "set as 'prefetch_buffer_size: 16'")) fail_msg("no clamp line:\n%s", log);
        if (ring <= 16 && strstr(log, "clamped")) fail_msg("clamped %d:\n%s", ring, log);
        tandem_test_log_stop();
    }
}

static void expect_error(const char *yaml, const char *n1, const char *n2) {
    tandem_config cfg;
    assert_int_equal(load_text(&cfg, yaml), TANDEM_E_INVALID);
    const char *msg = tandem_last_error();
    if (!strstr(msg, n1) || (n2 && !strstr(msg, n2))) fail_msg("'%s' lacks '%s' / '%s'", msg, n1, n2 ? n2 : "");
}

static void test_errors(void **state) {
    (void)state;
    /* the same Tandem key twice, through two sections */
    expect_error("data:\n  batch_size: 4\ntraining:\n  batch_size: 8\n", ":4: key 'batch_size': given twice",
                 "first on line 2");
    expect_error("training:\n  optimizer: sgd\n", ":2: key 'training.optimizer'", "expected 'adamw'");
    expect_error("data:\n  mixed_precision: maybe\n", ":2: key 'data.mixed_precision': expected true or false", NULL);
    expect_error("data:\n  prefetch_buffer_size: 101\n", ":2: key 'prefetch_buffer_size'", "[2, 16]");
    expect_error("model: tiny\n", ":1: 'model': expected a mapping", NULL);
    /* a flat file is a Tandem config: MyXTTS's names there name the Tandem key */
    expect_error("learning_rate: 0.1\n", ":1: key 'learning_rate': MyXTTS's name for 'lr'", "write 'lr'");
    expect_error("prefetch_buffer_size: 50\n", ":1: key 'prefetch_buffer_size'", "[2, 16]");
    /* an unknown top-level key stays an error; inside a section it is a warning */
    expect_error("bach_size: 2\n", ":1: key 'bach_size': unknown key (did you mean 'batch_size'?)", NULL);
    tandem_test_log_capture(TANDEM_LOG_WARN);
    tandem_config cfg;
    assert_int_equal(load_text(&cfg, "data:\n  bach_size: 2\n"), TANDEM_OK);
    assert_non_null(strstr(tandem_test_log_text(), "'data.bach_size': no Tandem equivalent, ignored (did you mean "
                                                   "'batch_size'?)"));
    tandem_test_log_stop();
}

/* MyXTTS writes prefetch_buffer_size and pipeline_buffer_size both: two names of one key take the
 * larger value with an info line, in either order; one name twice is still an error. */
static void test_alias_pair_takes_larger(void **state) {
    (void)state;
    static const struct { const char *yaml; int want; } cases[] = {
        {"data:\n  prefetch_buffer_size: 8\n  pipeline_buffer_size: 50\n", 16},
        {"data:\n  pipeline_buffer_size: 4\n  prefetch_buffer_size: 6\n", 6},
        {"data:\n  prefetch_buffer_size: 12\n  buffer_size: 3\n", 12},
        {"data:\n  buffer_size: 5\ntraining:\n  prefetch_buffer_size: 3\n", 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tandem_test_log_capture(TANDEM_LOG_INFO);
        tandem_config cfg;
        if (load_text(&cfg, cases[i].yaml) != TANDEM_OK) fail_msg("%s\n%s", tandem_last_error(), cases[i].yaml);
        assert_int_equal(cfg.prefetch_buffer_size, cases[i].want);
        char want[96];
        snprintf(want, sizeof want, "the larger value, %d, is used", cases[i].want);
        if (!strstr(tandem_test_log_text(), want)) fail_msg("no \"%s\":\n%s", want, tandem_test_log_text());
        tandem_test_log_stop();
    }
    expect_error("data:\n  pipeline_buffer_size: 4\n  pipeline_buffer_size: 6\n", "given twice", NULL);
    /* val_split is val_fraction; with val_data too it is an error naming both */
    tandem_config cfg;
    assert_int_equal(load_text(&cfg, "data:\n  val_split: 0.1\n"), TANDEM_OK);
    assert_true(fabs(cfg.val_fraction - 0.1) < 1e-12);
    expect_error("data:\n  val_split: 0.1\n  val_data: /x\n", "val_data '/x' and val_fraction 0.1", NULL);
}

/* The Tandem name a snake_case word of a message stands for exists (a key, or a MyXTTS name). */
static int is_name(const char *w) {
    if (tandem_config_name_kind(w) != TANDEM_CONFIG_NAME_UNKNOWN) return 1;
    return 0;
}

/* Every message about a MyXTTS name is true of Tandem today: each snake_case word and each --flag it
 * names exists, a renamed key exists, and the names for what Tandem has a key for set that key. */
static void test_messages_true(void **state) {
    (void)state;
    static const char *const train_flags[] = {"new-run", "resume", "init-from", "freeze", "out", "config"};
    const int na = tandem_config_alias_count();
    for (int i = 0; i < na; i++) {
        tandem_config_alias_info a;
        assert_int_equal(tandem_config_alias_at(i, &a), TANDEM_OK);
        if (a.key && tandem_config_name_kind(a.key) != TANDEM_CONFIG_NAME_KEY)
            fail_msg("'%s' maps to '%s', which is no Tandem key", a.name, a.key);
        for (const char *p = a.why; *p;) {
            const int flag = p[0] == '-' && p[1] == '-';
            const char *s = p + (flag ? 2 : 0), *e = s;
            while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_' || (flag && *e == '-')) e++;
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)(e - s < 63 ? e - s : 63), s);
            const int word = e > s && (p == a.why || !strchr("./-_", p[-1])) && *e != '.' && *e != '/';
            if (flag && word) {
                int ok = is_name(w);
                for (size_t k = 0; k < sizeof train_flags / sizeof train_flags[0]; k++) ok |= !strcmp(w, train_flags[k]);
                if (!ok) fail_msg("'%s': its message names --%s, which is no flag of tandem train: %s", a.name, w, a.why);
            } else if (word && strchr(w, '_') && !is_name(w)) {
                fail_msg("'%s': its message names '%s', which is no Tandem key: %s", a.name, w, a.why);
            }
            p = e > p ? e : p + 1;
        }
    }
    /* names of things Tandem has a key for set it (their messages once said "no equivalent") */
    static const struct { const char *name, *key; } mapped[] = {
        {"enable_eager_debug", "cuda_graphs"}, {"enable_graph_mode", "cuda_graphs"},
        {"tensorboard_log_dir", "tensorboard_dir"}, {"val_split", "val_fraction"},
        {"pipeline_buffer_size", "prefetch_buffer_size"},
    };
    for (size_t k = 0; k < sizeof mapped / sizeof mapped[0]; k++) {
        int found = 0;
        for (int i = 0; i < na; i++) {
            tandem_config_alias_info a;
            assert_int_equal(tandem_config_alias_at(i, &a), TANDEM_OK);
            if (strcmp(a.name, mapped[k].name)) continue;
            found = 1;
            if (!a.key || strcmp(a.key, mapped[k].key)) fail_msg("'%s' sets '%s', expected '%s'", a.name,
                                                                  a.key ? a.key : "nothing", mapped[k].key);
        }
        if (!found) fail_msg("'%s' is not a MyXTTS name Tandem reads", mapped[k].name);
    }
    /* MyXTTS's value-less switches: kind SWITCH, so the CLI needs no value after them */
    assert_int_equal(tandem_config_name_kind("multi-gpu"), TANDEM_CONFIG_NAME_SWITCH);
    assert_int_equal(tandem_config_name_kind("enable-eager-debug"), TANDEM_CONFIG_NAME_SWITCH);
}

/* Overrides: dashes or underscores, MyXTTS's flags, switches; the kinds the CLI reads. */
static void test_names_and_overrides(void **state) {
    (void)state;
    tandem_config cfg;
    tandem_config_init(&cfg);
    assert_int_equal(tandem_config_set(&cfg, "batch-size", "12"), TANDEM_OK);
    assert_int_equal(cfg.batch_size, 12);
    assert_int_equal(tandem_config_set_from(&cfg, "--max-text-length", "max-text-length", "150"), TANDEM_OK);
    assert_int_equal(cfg.max_text, 150);
    assert_int_equal(tandem_config_set(&cfg, "buffer_size", "100"), TANDEM_OK);
    assert_int_equal(cfg.prefetch_buffer_size, 16);
    assert_int_equal(tandem_config_set(&cfg, "prefetch-buffer-size", "40"), TANDEM_OK);
    assert_int_equal(cfg.prefetch_buffer_size, 16);
    assert_int_equal(tandem_config_set(&cfg, "prefetch-buffer-size", "101"), TANDEM_E_INVALID);
    assert_int_equal(tandem_config_set(&cfg, "enable-memory-isolation", "true"), TANDEM_OK);
    assert_int_equal(tandem_config_name_kind("enable-static-shapes"), TANDEM_CONFIG_NAME_SWITCH);
    assert_int_equal(tandem_config_name_kind("gradient_accumulation_steps"), TANDEM_CONFIG_NAME_ALIAS);
    assert_int_equal(tandem_config_name_kind("data-gpu"), TANDEM_CONFIG_NAME_KEY);
    assert_int_equal(tandem_config_name_kind("no-such-key"), TANDEM_CONFIG_NAME_UNKNOWN);
    /* every schema key is a name of kind KEY, with its doc and range */
    const int n = tandem_config_key_count();
    assert_true(n > 40);
    for (int i = 0; i < n; i++) {
        tandem_config_key_info k;
        assert_int_equal(tandem_config_key_at(i, &k), TANDEM_OK);
        assert_true(k.doc[0] && k.expected[0]);
        assert_int_equal(tandem_config_name_kind(k.key), TANDEM_CONFIG_NAME_KEY);
    }
    tandem_config_key_info k;
    assert_int_equal(tandem_config_key_at(n, &k), TANDEM_E_INVALID);
}

/* epochs → max_steps: ceil(epochs * n / (batch * accum)); an explicit max_steps wins. */
static void test_epoch_steps(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_config_myxtts epochs")};
    for (int round = 0; round < 50; round++) {
        tandem_config cfg;
        tandem_config_init(&cfg);
        const int64_t e = tandem_rng_int(&r, 0, 1000), b = tandem_rng_int(&r, 1, 64), a = tandem_rng_int(&r, 1, 8);
        const uint32_t n = (uint32_t)tandem_rng_int(&r, 1, 100000);
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)e);
        CHECK(tandem_config_set(&cfg, "epochs", v));
        snprintf(v, sizeof v, "%lld", (long long)b);
        CHECK(tandem_config_set(&cfg, "batch_size", v));
        snprintf(v, sizeof v, "%lld", (long long)a);
        CHECK(tandem_config_set(&cfg, "grad_accum", v));
        int64_t want = 0; /* the smallest steps with steps * b * a >= e * n */
        if (e > 0) {
            want = e * (int64_t)n / (b * a);
            while (want * b * a < e * (int64_t)n) want++;
            if (want < 1) want = 1;
        }
        assert_int_equal(tandem_config_epoch_steps(&cfg, n), want);
        CHECK(tandem_config_set(&cfg, "max_steps", "7"));
        assert_int_equal(tandem_config_epoch_steps(&cfg, n), 0);
    }
}

/* configs/myxtts-example.yaml loads; docs/MIGRATING.md names every MyXTTS name Tandem accepts. */
static void test_example_and_docs(void **state) {
    (void)state;
    tandem_config cfg;
    tandem_log_set_level(TANDEM_LOG_ERROR);
    if (tandem_config_load(&cfg, TANDEM_SOURCE_DIR "/configs/myxtts-example.yaml") != TANDEM_OK)
        fail_msg("%s", tandem_last_error());
    tandem_log_set_level(TANDEM_LOG_INFO);
    assert_int_equal(cfg.precision, TANDEM_PRECISION_FP32); /* mixed_precision: false (host-trainable) */
    assert_int_equal(cfg.grad_accum, 1);
    assert_string_equal(cfg.out, "./checkpoints");
    size_t len = 0;
    char *doc = tandem_test_read_file_ok(TANDEM_SOURCE_DIR "/docs/MIGRATING.md", &len);
    const int na = tandem_config_alias_count();
    for (int i = 0; i < na; i++) {
        tandem_config_alias_info a;
        assert_int_equal(tandem_config_alias_at(i, &a), TANDEM_OK);
        char want[96];
        snprintf(want, sizeof want, "`%s`", a.name);
        if (!strstr(doc, want)) fail_msg("docs/MIGRATING.md does not mention %s", want);
    }
    free(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sections_map_to_keys),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_alias_pair_takes_larger),
        cmocka_unit_test(test_messages_true),
        cmocka_unit_test(test_names_and_overrides),
        cmocka_unit_test(test_epoch_steps),
        cmocka_unit_test(test_example_and_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
