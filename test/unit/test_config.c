/* test_config.c — config loading: a valid file, unknown keys named with their line, wrong
 * types, out-of-range values, overrides, presets, cross-key rules, the YAML dump read back,
 * and the example configs in configs/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/core/config.h"
#include "platform/os/os.h"
#include "test/testutil.h"

/* Writes text to a fresh temp file; returns its path in buf. */
static const char *temp_yaml(char *buf, size_t cap, const char *text) {
    snprintf(buf, cap, "/tmp/tandem_test_config_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return buf;
}

/* Loads text through a real file; returns the status, leaves the message in tandem_last_error. */
static tandem_status load_text(tandem_config *cfg, const char *text, char *path, size_t cap) {
    temp_yaml(path, cap, text);
    tandem_status st = tandem_config_load(cfg, path);
    unlink(path);
    return st;
}

static void expect_error(const char *text, const char *needle1, const char *needle2) {
    tandem_config cfg;
    char path[64], want[256];
    assert_int_equal(load_text(&cfg, text, path, sizeof path), TANDEM_E_INVALID);
    const char *msg = tandem_last_error();
    snprintf(want, sizeof want, "%s%s", path, needle1);
    if (!strstr(msg, want) || (needle2 && !strstr(msg, needle2)))
        fail_msg("message '%s' lacks '%s' / '%s'", msg, want, needle2 ? needle2 : "");
}

static void test_valid_file(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_config valid")};
    for (int round = 0; round < 20; round++) {
        int batch = (int)tandem_rng_int(&r, 1, 4096), slots = (int)tandem_rng_int(&r, 2, 16);
        long long mib = (long long)tandem_rng_int(&r, 0, 1 << 24);
        double lr = (double)tandem_rng_uniform(&r, 0.0f, 1.0f);
        char text[1024], path[64];
        snprintf(text, sizeof text,
                 "# a comment\n"
                 "model_size: base\n"
                 "batch_size: %d   # trailing comment\n"
                 "prefetch_buffer_size: %d\n"
                 "model_gpu_memory: %lld\n"
                 "lr: %.17g\n"
                 "precision: bf16\n"
                 "shuffle: no\n"
                 "train_data: \"data/with space\"\n"
                 "val_data:\n",
                 batch, slots, mib, lr);
        tandem_config cfg;
        assert_int_equal(load_text(&cfg, text, path, sizeof path), TANDEM_OK);
        assert_int_equal(cfg.batch_size, batch);
        assert_int_equal(cfg.prefetch_buffer_size, slots);
        assert_int_equal(cfg.model_gpu_memory, mib);
        assert_true(cfg.lr == lr);
        assert_int_equal(cfg.precision, TANDEM_PRECISION_BF16);
        assert_int_equal(cfg.shuffle, 0);
        assert_string_equal(cfg.train_data, "data/with space");
        assert_string_equal(cfg.val_data, "");
        /* keys not given keep their defaults */
        assert_int_equal(cfg.grad_accum, 1);
        assert_int_equal(cfg.n_mels, 80);
        assert_int_equal(cfg.data_gpu_memory, 0);
    }
}

static void test_empty_file_is_defaults(void **state) {
    (void)state;
    tandem_config a, b;
    char path[64];
    tandem_config_init(&a);
    assert_int_equal(load_text(&b, "# nothing but a comment\n", path, sizeof path), TANDEM_OK);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(a.prefetch_buffer_size, 3);
    assert_int_equal(a.model_size, TANDEM_MODEL_TINY);
}

static void test_unknown_key(void **state) {
    (void)state;
    expect_error("model_size: tiny\nbatch_size: 8\n\n# c\nbach_size: 8\n", ":5: key 'bach_size'",
                 "did you mean 'batch_size'");
    expect_error("zzzzzzzzzzzzzz: 1\n", ":1: key 'zzzzzzzzzzzzzz': unknown key", "known keys:");
}

static void test_wrong_type(void **state) {
    (void)state;
    expect_error("seed: 1\nbatch_size: eight\n",
                 ":2: key 'batch_size': expected an integer in [1, 4096], got 'eight'", NULL);
    expect_error("batch_size: 8.5\n", ":1: key 'batch_size'", "got '8.5'");
    expect_error("lr: fast\n", ":1: key 'lr': expected a number in [0, 1], got 'fast'", NULL);
    expect_error("shuffle: maybe\n", ":1: key 'shuffle': expected true or false, got 'maybe'", NULL);
    expect_error("precision: fp16\n",
                 ":1: key 'precision': expected one of fp32|bf16, got 'fp16'", NULL);
    expect_error("batch_size: [1, 2]\n", ":1: key 'batch_size'", "got a list");
    expect_error("out:\n  a: 1\n", ":2: key 'out'", "got a mapping");
    expect_error("batch_size:\n", ":1: key 'batch_size'", "got ''");
    expect_error("- batch_size\n", ":1: expected a mapping", NULL);
    expect_error("seed: 1\nout: 'abc\n", ":3:", "YAML syntax error");
    expect_error("seed: 1\n\tout: x\n", ":2:", "YAML syntax error");
    expect_error("seed: 1\nseed: 2\n", ":2: key 'seed': given twice (first on line 1)", NULL);
}

static void test_out_of_range(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_config range")};
    for (int round = 0; round < 10; round++) {
        char text[128], want[128];
        int big = (int)tandem_rng_int(&r, 4097, 1 << 30);
        snprintf(text, sizeof text, "batch_size: %d\n", big);
        snprintf(want, sizeof want, ":1: key 'batch_size': expected an integer in [1, 4096], got '%d'",
                 big);
        expect_error(text, want, NULL);
    }
    expect_error("batch_size: 0\n", ":1: key 'batch_size'", "got '0'");
    expect_error("lr: 1.5\n", ":1: key 'lr'", "got '1.5'");
    expect_error("lr: .nan\n", ":1: key 'lr'", NULL);
    expect_error("prefetch_buffer_size: 1\n", ":1: key 'prefetch_buffer_size'", "[2, 16]");
    expect_error("n_mels: 40\n", ":1: key 'n_mels': expected the integer 80, got '40'",
                 "(mel bands, fixed by the feature recipe: leave the key out or set 80)");
    expect_error("seed: 99999999999999999999999\n", ":1: key 'seed'", NULL);
    expect_error("model_gpu_memory: -1\n", ":1: key 'model_gpu_memory'", "got '-1'");
}

static void test_override(void **state) {
    (void)state;
    tandem_config cfg;
    char path[64];
    assert_int_equal(load_text(&cfg, "batch_size: 8\n", path, sizeof path), TANDEM_OK);
    assert_int_equal(tandem_config_set(&cfg, "batch_size", "16"), TANDEM_OK);
    assert_int_equal(cfg.batch_size, 16);
    assert_int_equal(tandem_config_set(&cfg, "model_gpu_memory", "20000"), TANDEM_OK);
    assert_int_equal(cfg.model_gpu_memory, 20000);
    assert_int_equal(tandem_config_set(&cfg, "batch_size", "x"), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "override: key 'batch_size': expected"));
    assert_int_equal(cfg.batch_size, 16); /* a rejected value leaves the old one */
    assert_int_equal(tandem_config_set_from(&cfg, "--batch-size", "batch_size", "0"), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "--batch-size: key 'batch_size': expected an integer "
                                                "in [1, 4096], got '0'"));
    assert_int_equal(tandem_config_set(&cfg, "batchsize", "8"), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "did you mean 'batch_size'"));
    /* cross-key rules are checked after the last override */
    assert_int_equal(tandem_config_set(&cfg, "heads", "3"), TANDEM_OK);
    assert_int_equal(tandem_config_check(&cfg), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "d_model 256 is not a multiple of heads 3"));
}

static void test_presets(void **state) {
    (void)state;
    tandem_config cfg;
    char path[64];
    assert_int_equal(load_text(&cfg, "model_size: base\n", path, sizeof path), TANDEM_OK);
    const int base[6] = {512, 8, 8, 2, 200, 800};
    const int got[6] = {cfg.d_model, cfg.layers, cfg.heads, cfg.reduction, cfg.max_text,
                        cfg.max_frames};
    assert_memory_equal(base, got, sizeof base);

    /* an explicit key wins over the preset, whether it comes before or after it */
    assert_int_equal(load_text(&cfg, "d_model: 384\nmodel_size: base\nlayers: 3\n", path,
                               sizeof path), TANDEM_OK);
    assert_int_equal(cfg.d_model, 384);
    assert_int_equal(cfg.layers, 3);
    assert_int_equal(cfg.heads, 8);
    assert_int_equal(cfg.max_frames, 800);

    /* an override of model_size re-applies the preset to the keys not given explicitly */
    assert_int_equal(load_text(&cfg, "model_size: tiny\nlayers: 6\n", path, sizeof path), TANDEM_OK);
    assert_int_equal(tandem_config_set(&cfg, "model_size", "base"), TANDEM_OK);
    assert_int_equal(cfg.d_model, 512);
    assert_int_equal(cfg.layers, 6);
    assert_int_equal(tandem_config_check(&cfg), TANDEM_OK);

    /* custom: nothing filled, the values given are used */
    assert_int_equal(load_text(&cfg, "model_size: custom\nd_model: 96\nheads: 3\n", path,
                               sizeof path), TANDEM_OK);
    assert_int_equal(cfg.d_model, 96);
    assert_int_equal(cfg.heads, 3);

    expect_error("model_size: tiny\nmax_frames: 510\n", "", "max_frames 510 is not a multiple of reduction 4");
}

/* dump → load gives back the same values, for random configs */
/* test_sentences: a YAML list joined by '|' (what an override gives directly); the dump loads
 * back equal; bad items are named. */
static void test_sentence_list(void **state) {
    (void)state;
    const char *yaml = "test_sentences:\n  - Hello there.\n  - \"second, one\"\nseed: 3\n";
    tandem_config a, b;
    assert_int_equal(tandem_config_load_string(&a, yaml, strlen(yaml), "list.yaml"), TANDEM_OK);
    assert_string_equal(a.test_sentences, "Hello there.|second, one");
    assert_int_equal(a.seed, 3);
    tandem_config_init(&b);
    assert_int_equal(tandem_config_set(&b, "test_sentences", "Hello there.|second, one"), TANDEM_OK);
    assert_string_equal(b.test_sentences, a.test_sentences);
    char text[8192];
    const size_t need = tandem_config_dump(&a, text, sizeof text);
    assert_true(need < sizeof text);
    assert_int_equal(tandem_config_load_string(&b, text, need, "dump"), TANDEM_OK);
    assert_string_equal(b.test_sentences, a.test_sentences);
    expect_error("test_sentences:\n  - a|b\n", ":2: key 'test_sentences'", "without '|'");
    expect_error("test_sentences:\n  - ''\n", ":2: key 'test_sentences'", "non-empty");
    expect_error("test_sentences:\n  - [a]\n", ":2: key 'test_sentences'", "nested");
}

/* model_devices / data_devices: a YAML list, "1,2" or "[1, 2]" as an override, "auto"; the
 * dump loads back equal; duplicates, negatives, words and open brackets are named. */
static void test_device_lists(void **state) {
    (void)state;
    const char *yaml = "model_devices: [1, 2]\ndata_devices:\n  - 0\n";
    tandem_config a, b;
    assert_int_equal(tandem_config_load_string(&a, yaml, strlen(yaml), "dev.yaml"), TANDEM_OK);
    int ords[TANDEM_CONFIG_MAX_DEVICES];
    assert_int_equal(tandem_config_device_list(a.model_devices, ords, TANDEM_CONFIG_MAX_DEVICES), 2);
    assert_int_equal(ords[0], 1);
    assert_int_equal(ords[1], 2);
    assert_int_equal(tandem_config_device_list(a.data_devices, ords, TANDEM_CONFIG_MAX_DEVICES), 1);
    assert_int_equal(ords[0], 0);
    char text[8192];
    const size_t need = tandem_config_dump(&a, text, sizeof text);
    assert_true(need < sizeof text);
    assert_int_equal(tandem_config_load_string(&b, text, need, "dump"), TANDEM_OK);
    assert_string_equal(b.model_devices, a.model_devices);
    tandem_config_init(&b);
    assert_string_equal(b.model_devices, "auto");
    assert_int_equal(tandem_config_device_list(b.model_devices, ords, TANDEM_CONFIG_MAX_DEVICES), 0);
    static const char *const good[] = {"1,2", "[1, 2]", " 1 , 2 ", "1|2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(tandem_config_set(&b, "model_devices", good[i]), TANDEM_OK);
        assert_int_equal(tandem_config_device_list(b.model_devices, ords, TANDEM_CONFIG_MAX_DEVICES), 2);
    }
    static const char *const bad[] = {"1,1", "-1", "gpu0", "[1, 2", "1,", "1 2", "1025", "[1],"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tandem_config_set(&b, "model_devices", bad[i]), TANDEM_E_INVALID);
        if (!strstr(tandem_last_error(), "key 'model_devices': expected auto or a list of distinct CUDA ordinals"))
            fail_msg("model_devices '%s': \"%s\"", bad[i], tandem_last_error());
    }
    expect_error("data_devices: [0, 0]\n", ":1: key 'data_devices'", "distinct");
}

static void test_dump_roundtrip(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_config dump")};
    for (int round = 0; round < 30; round++) {
        tandem_config a, b;
        tandem_config_init(&a);
        char v[64];
        snprintf(v, sizeof v, "%d", (int)tandem_rng_int(&r, 1, 4096));
        assert_int_equal(tandem_config_set(&a, "batch_size", v), TANDEM_OK);
        snprintf(v, sizeof v, "%.9g", (double)tandem_rng_uniform(&r, 0.0f, 1.0f));
        assert_int_equal(tandem_config_set(&a, "lr", v), TANDEM_OK);
        snprintf(v, sizeof v, "%lld", (long long)(tandem_rng_next(&r) >> 1));
        assert_int_equal(tandem_config_set(&a, "seed", v), TANDEM_OK);
        assert_int_equal(tandem_config_set(&a, "model_size", round % 2 ? "base" : "custom"),
                         TANDEM_OK);
        assert_int_equal(tandem_config_set(&a, "out", "runs/\"quoted\" \\ name\t1"), TANDEM_OK);
        assert_int_equal(tandem_config_set(&a, "shuffle", round % 3 ? "true" : "off"), TANDEM_OK);

        char text[8192];
        size_t need = tandem_config_dump(&a, text, sizeof text);
        assert_true(need < sizeof text);
        assert_int_equal(strlen(text), need);
        assert_int_equal(tandem_config_load_string(&b, text, need, "dump"), TANDEM_OK);
        b.explicit_keys = a.explicit_keys = 0; /* the dump names every key */
        assert_memory_equal(&a, &b, sizeof a);

        /* a short buffer is cut, NUL-terminated, and the needed length still reported */
        char small[16];
        assert_int_equal(tandem_config_dump(&a, small, sizeof small), need);
        assert_int_equal(strlen(small), sizeof small - 1);
    }
}

static void test_example_configs(void **state) {
    (void)state;
    tandem_config cfg;
    assert_int_equal(tandem_config_load(&cfg, TANDEM_SOURCE_DIR "/configs/tiny.yaml"), TANDEM_OK);
    assert_int_equal(cfg.model_size, TANDEM_MODEL_TINY);
    assert_int_equal(cfg.d_model, 256);
    assert_int_equal(cfg.batch_size, 8);
    assert_int_equal(tandem_config_load(&cfg, TANDEM_SOURCE_DIR "/configs/ljspeech.yaml"), TANDEM_OK);
    assert_int_equal(cfg.model_size, TANDEM_MODEL_BASE);
    assert_int_equal(cfg.batch_size, 32);
    assert_int_equal(cfg.precision, TANDEM_PRECISION_BF16);
    assert_int_equal(tandem_config_load(&cfg, "/nonexistent/tandem.yaml"), TANDEM_E_IO);
    assert_non_null(strstr(tandem_last_error(), "/nonexistent/tandem.yaml"));

    char help[16384]; /* the schema's text grows with its keys */
    assert_true(tandem_config_describe(help, sizeof help) < sizeof help);
    assert_non_null(strstr(help, "prefetch_buffer_size"));
}

/* Mutated and random inputs: the loader answers OK or INVALID with a message, never crashes
 * (run under ASan/UBSan by `make test SANITIZE=address,undefined`). */
static void test_garbage(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_config garbage")};
    static const char valid[] = "model_size: base\nbatch_size: 16\nlr: 0.001\nout: \"x\"\n"
                                "shuffle: true\nprecision: bf16\n";
    static const char alphabet[] = "abz_:-\"' \n\t#{}[],&*!|>%@`0129.~\\\xc3\xa9\xff";
    char text[256];
    for (int round = 0; round < 3000; round++) {
        size_t n;
        if (round % 2) { /* a valid file with a few bytes changed, inserted or cut */
            n = sizeof valid - 1;
            memcpy(text, valid, n);
            int edits = (int)tandem_rng_int(&r, 1, 4);
            for (int e = 0; e < edits; e++) {
                size_t at = (size_t)tandem_rng_int(&r, 0, (int64_t)n - 1);
                text[at] = alphabet[tandem_rng_int(&r, 0, (int64_t)sizeof alphabet - 2)];
            }
            n = (size_t)tandem_rng_int(&r, 0, (int64_t)n);
        } else {
            n = (size_t)tandem_rng_int(&r, 0, 120);
            for (size_t i = 0; i < n; i++)
                text[i] = alphabet[tandem_rng_int(&r, 0, (int64_t)sizeof alphabet - 2)];
        }
        tandem_config cfg;
        tandem_status st = tandem_config_load_string(&cfg, text, n, "fuzz.yaml");
        if (st != TANDEM_OK) {
            assert_int_equal(st, TANDEM_E_INVALID);
            assert_non_null(strstr(tandem_last_error(), "fuzz.yaml"));
        } else {
            assert_int_equal(tandem_config_check(&cfg), TANDEM_OK);
        }
    }
}

/* docs/TRAINING.md documents every key of the schema (a row starting "| `key` |"). */
static void test_docs_list_every_key(void **state) {
    (void)state;
    static char desc[65536];
    size_t n = tandem_config_describe(desc, sizeof desc);
    assert_true(n > 0 && n < sizeof desc);
    char *doc = NULL;
    size_t doc_len = 0;
    assert_int_equal(tandem_file_read_all(TANDEM_SOURCE_DIR "/docs/TRAINING.md", &doc, &doc_len),
                     TANDEM_OK);
    int keys = 0, missing = 0;
    /* describe() prints each key at the start of a line after two spaces. */
    for (char *line = strtok(desc, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "  ", 2) != 0 || line[2] == ' ') continue;
        char key[64], row[80];
        if (sscanf(line + 2, "%63s", key) != 1) continue;
        snprintf(row, sizeof row, "| `%s` |", key);
        keys++;
        if (!strstr(doc, row)) {
            printf("docs/TRAINING.md lacks config key '%s'\n", key);
            missing++;
        }
    }
    tandem_free(doc);
    printf("%d config keys, %d missing from docs/TRAINING.md\n", keys, missing);
    assert_true(keys >= 30);
    assert_int_equal(missing, 0);
}

/* A value nested 20000 levels deep (flow lists under an unknown MyXTTS key, which is skipped) is
 * refused at depth 64 in linear time; with the parser left to the end it took seconds
 * (quadratic: a 1 MiB config took minutes). 60 levels still load. */
static void test_deep_nesting_bounded(void **state) {
    (void)state;
    const int depths[2] = {60, 20000};
    for (int k = 0; k < 2; k++) {
        const int depth = depths[k];
        char *y = malloc((size_t)depth * 2 + 64);
        size_t n = (size_t)sprintf(y, "model:\n  foo: ");
        memset(y + n, '[', (size_t)depth), n += (size_t)depth;
        memset(y + n, ']', (size_t)depth), n += (size_t)depth;
        y[n++] = '\n';
        tandem_config cfg;
        tandem_config_init(&cfg);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        const tandem_status st = tandem_config_load_string(&cfg, y, n, "deep.yaml");
        clock_gettime(CLOCK_MONOTONIC, &b);
        const double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
        printf("depth %d: %s in %.4f s: %s\n", depth, tandem_status_name(st), s, tandem_last_error());
        free(y);
        if (k == 0) {
            assert_int_equal(st, TANDEM_OK);
            continue;
        }
        assert_int_equal(st, TANDEM_E_FORMAT);
        assert_non_null(strstr(tandem_last_error(), "deep.yaml:2: a value nested deeper than 64 levels"));
        assert_true(s < 1.0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),     cmocka_unit_test(test_empty_file_is_defaults),
        cmocka_unit_test(test_unknown_key),    cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_out_of_range),   cmocka_unit_test(test_override),
        cmocka_unit_test(test_presets),        cmocka_unit_test(test_dump_roundtrip),
        cmocka_unit_test(test_example_configs), cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_docs_list_every_key), cmocka_unit_test(test_sentence_list),
        cmocka_unit_test(test_device_lists), cmocka_unit_test(test_deep_nesting_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
