/* test_null_args.c — the NULL-argument contract of the public API (runtime/tandem*.h): a NULL
 * handle, output pointer or string where the call needs one is TANDEM_E_INVALID (never a
 * crash), a NULL handle to a free/close/destroy or a void call is a no-op, and a query on NULL
 * answers its documented "nothing". Each case runs in a child process, so a segfault fails only
 * its own row, named; the table lists the config, checkpoint, synthesis, trainer, features,
 * files and device entry points. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tandem.h"
#include "test/fixtures.h"

#define NOT_A_STATUS 100 /* a void call or a query: the case checks its result itself */
#define WRONG 101        /* a query on NULL answered something else than "nothing" */

static tandem_config *cfg(void) {
    tandem_config *c = NULL;
    return tandem_config_create(&c) == TANDEM_OK ? c : NULL;
}

/* Status cases: each returns the call's status. */
static int c_config_create(void) { return tandem_config_create(NULL); }
static int c_config_load_cfg(void) { return tandem_config_load(NULL, "configs/tiny.yaml"); }
static int c_config_load_path(void) { return tandem_config_load(cfg(), NULL); }
static int c_config_load_string_cfg(void) { return tandem_config_load_string(NULL, "a: 1", 4, NULL); }
static int c_config_load_string_text(void) { return tandem_config_load_string(cfg(), NULL, 4, NULL); }
static int c_config_set_cfg(void) { return tandem_config_set(NULL, "batch_size", "2"); }
static int c_config_set_key(void) { return tandem_config_set(cfg(), NULL, "2"); }
static int c_config_set_value(void) { return tandem_config_set(cfg(), "batch_size", NULL); }
static int c_config_set_from_cfg(void) { return tandem_config_set_from(NULL, "--x", "batch_size", "2"); }
static int c_config_get_cfg(void) {
    char b[64];
    return tandem_config_get(NULL, "batch_size", b, sizeof b);
}
static int c_config_get_key(void) {
    char b[64];
    return tandem_config_get(cfg(), NULL, b, sizeof b);
}
static int c_config_get_buf(void) { return tandem_config_get(cfg(), "batch_size", NULL, 64); }
static int c_config_check(void) { return tandem_config_check(NULL); }
static int c_config_key_at(void) { return tandem_config_key_at(0, NULL); }
static int c_config_alias_at(void) { return tandem_config_alias_at(0, NULL); }
static int c_ckpt_open_path(void) {
    tandem_ckpt *c;
    return tandem_ckpt_open(NULL, &c);
}
static int c_ckpt_open_out(void) { return tandem_ckpt_open("x.safetensors", NULL); }
static int c_ckpt_open_latest_dir(void) {
    tandem_ckpt *c;
    return tandem_ckpt_open_latest(NULL, &c);
}
static int c_ckpt_open_latest_out(void) { return tandem_ckpt_open_latest(".", NULL); }
static int c_ckpt_config(void) {
    tandem_config *c;
    return tandem_ckpt_config(NULL, &c);
}
static int c_ckpt_tensor_info(void) {
    tandem_ckpt_tensor t;
    return tandem_ckpt_tensor_info(NULL, 0, &t);
}
static int c_synth_open_path(void) {
    tandem_synth *s;
    return tandem_synth_open(NULL, NULL, &s);
}
static int c_synth_open_out(void) { return tandem_synth_open("x.safetensors", NULL, NULL); }
static int c_synth_get_info(void) {
    tandem_synth_info i;
    return tandem_synth_get_info(NULL, &i);
}
static int c_synth_run(void) {
    tandem_synth_result r;
    return tandem_synth_run(NULL, "hi", TANDEM_LANG_AUTO, NULL, &r);
}
static int c_trainer_resume_config_dir(void) { return tandem_trainer_resume_config(NULL, cfg()); }
static int c_trainer_resume_config_cfg(void) { return tandem_trainer_resume_config(".", NULL); }
static int c_trainer_create_cfg(void) {
    tandem_trainer *t;
    return tandem_trainer_create(NULL, NULL, &t);
}
static int c_trainer_create_out(void) { return tandem_trainer_create(cfg(), NULL, NULL); }
static int c_trainer_startup_report(void) {
    tandem_trainer_startup r;
    return tandem_trainer_startup_report(NULL, &r);
}
static int c_trainer_run(void) {
    tandem_trainer_summary s;
    return tandem_trainer_run(NULL, &s);
}
static int c_metrics_last_line(void) {
    char b[64];
    return tandem_metrics_last_line(NULL, b, sizeof b);
}
static int c_plan_report(void) {
    char b[64];
    return tandem_plan_report(NULL, NULL, b, sizeof b, NULL);
}
static int c_features_open(void) { return tandem_features_open(NULL, NULL); }
static int c_features_get_device(void) {
    tandem_device_info i;
    return tandem_features_get_device(NULL, &i);
}
static int c_files_write_atomic(void) { return tandem_files_write_atomic(NULL, "x", 1); }
static int c_files_check_output(void) { return tandem_files_check_output(NULL); }
static int c_files_mkdir_p(void) { return tandem_files_mkdir_p(NULL); }
static int c_files_sweep_temps(void) { return tandem_files_sweep_temps(NULL, NULL); }
static int c_npy_write(void) {
    const int64_t shape[1] = {1};
    return tandem_npy_write_f32(NULL, NULL, 1, shape);
}
static int c_wav_write(void) { return tandem_wav_write_pcm16(NULL, NULL, 1, 22050); }
static int c_device_count(void) { return tandem_device_count(TANDEM_BACKEND_HOST, NULL); }
static int c_device_open(void) { return tandem_device_open(TANDEM_BACKEND_HOST, 0, NULL); }
static int c_device_get_info(void) {
    tandem_device_info i;
    return tandem_device_get_info(NULL, &i);
}

/* No-op and query cases: NOT_A_STATUS when they behaved, WRONG otherwise. */
static int c_frees(void) {
    tandem_config_destroy(NULL);
    tandem_ckpt_close(NULL);
    tandem_synth_close(NULL);
    tandem_trainer_destroy(NULL);
    tandem_trainer_request_stop(NULL);
    tandem_features_close(NULL);
    tandem_device_close(NULL);
    return NOT_A_STATUS;
}
static int c_options_inits(void) {
    tandem_synth_options_init(NULL);
    tandem_trainer_options_init(NULL);
    tandem_features_options_init(NULL);
    tandem_plan_options_init(NULL);
    tandem_runtime_options_init(NULL);
    return NOT_A_STATUS;
}
static int c_config_dump(void) {
    char b[8] = "x";
    return tandem_config_dump(NULL, b, sizeof b) == 0 && b[0] == 0 ? NOT_A_STATUS : WRONG;
}
static int c_ckpt_queries(void) {
    const char *k = "x", *v = "x";
    return !strcmp(tandem_ckpt_path(NULL), "") && tandem_ckpt_step(NULL) < 0 &&
                   !strcmp(tandem_ckpt_format_version(NULL), "") && !strcmp(tandem_ckpt_config_yaml(NULL), "") &&
                   !strcmp(tandem_ckpt_symbols_json(NULL), "") &&
                   tandem_ckpt_meta_count(NULL) == 0 && !tandem_ckpt_meta_get(NULL, 0, &k, &v) &&
                   !tandem_ckpt_meta_find(NULL, "step") && tandem_ckpt_tensor_count(NULL) == 0
               ? NOT_A_STATUS
               : WRONG;
}
static int c_synth_speaker_name(void) { return tandem_synth_speaker_name(NULL, 0) ? WRONG : NOT_A_STATUS; }
static int c_config_name_kind(void) {
    return tandem_config_name_kind(NULL) == TANDEM_CONFIG_NAME_UNKNOWN ? NOT_A_STATUS : WRONG;
}

typedef struct null_case {
    const char *what;
    int (*fn)(void);
    int want; /* TANDEM_E_INVALID, or NOT_A_STATUS */
} null_case;

#define S(name, what) {what, c_##name, TANDEM_E_INVALID}
#define V(name, what) {what, c_##name, NOT_A_STATUS}
static const null_case cases[] = {
    S(config_create, "tandem_config_create(NULL)"),
    S(config_load_cfg, "tandem_config_load(NULL, path)"),
    S(config_load_path, "tandem_config_load(cfg, NULL)"),
    S(config_load_string_cfg, "tandem_config_load_string(NULL, ...)"),
    S(config_load_string_text, "tandem_config_load_string(cfg, NULL, 4, ...)"),
    S(config_set_cfg, "tandem_config_set(NULL, key, value)"),
    S(config_set_key, "tandem_config_set(cfg, NULL, value)"),
    S(config_set_value, "tandem_config_set(cfg, key, NULL)"),
    S(config_set_from_cfg, "tandem_config_set_from(NULL, ...)"),
    S(config_get_cfg, "tandem_config_get(NULL, key, buf, cap)"),
    S(config_get_key, "tandem_config_get(cfg, NULL, buf, cap)"),
    S(config_get_buf, "tandem_config_get(cfg, key, NULL, 64)"),
    S(config_check, "tandem_config_check(NULL)"),
    S(config_key_at, "tandem_config_key_at(0, NULL)"),
    S(config_alias_at, "tandem_config_alias_at(0, NULL)"),
    S(ckpt_open_path, "tandem_ckpt_open(NULL, &c)"),
    S(ckpt_open_out, "tandem_ckpt_open(path, NULL)"),
    S(ckpt_open_latest_dir, "tandem_ckpt_open_latest(NULL, &c)"),
    S(ckpt_open_latest_out, "tandem_ckpt_open_latest(dir, NULL)"),
    S(ckpt_config, "tandem_ckpt_config(NULL, &cfg)"),
    S(ckpt_tensor_info, "tandem_ckpt_tensor_info(NULL, 0, &t)"),
    S(synth_open_path, "tandem_synth_open(NULL, NULL, &s)"),
    S(synth_open_out, "tandem_synth_open(path, NULL, NULL)"),
    S(synth_get_info, "tandem_synth_get_info(NULL, &info)"),
    S(synth_run, "tandem_synth_run(NULL, text, ...)"),
    S(trainer_resume_config_dir, "tandem_trainer_resume_config(NULL, cfg)"),
    S(trainer_resume_config_cfg, "tandem_trainer_resume_config(dir, NULL)"),
    S(trainer_create_cfg, "tandem_trainer_create(NULL, NULL, &t)"),
    S(trainer_create_out, "tandem_trainer_create(cfg, NULL, NULL)"),
    S(trainer_startup_report, "tandem_trainer_startup_report(NULL, &r)"),
    S(trainer_run, "tandem_trainer_run(NULL, &sum)"),
    S(metrics_last_line, "tandem_metrics_last_line(NULL, buf, cap)"),
    S(plan_report, "tandem_plan_report(NULL, NULL, buf, cap, NULL)"),
    S(features_open, "tandem_features_open(NULL, NULL)"),
    S(features_get_device, "tandem_features_get_device(NULL, &info)"),
    S(files_write_atomic, "tandem_files_write_atomic(NULL, data, 1)"),
    S(files_check_output, "tandem_files_check_output(NULL)"),
    S(files_mkdir_p, "tandem_files_mkdir_p(NULL)"),
    S(files_sweep_temps, "tandem_files_sweep_temps(NULL, NULL)"),
    S(npy_write, "tandem_npy_write_f32(NULL, NULL, 1, shape)"),
    S(wav_write, "tandem_wav_write_pcm16(NULL, NULL, 1, 22050)"),
    S(device_count, "tandem_device_count(HOST, NULL)"),
    S(device_open, "tandem_device_open(HOST, 0, NULL)"),
    S(device_get_info, "tandem_device_get_info(NULL, &info)"),
    V(frees, "every free/close/destroy(NULL) and tandem_trainer_request_stop(NULL)"),
    V(options_inits, "every *_options_init(NULL)"),
    V(config_dump, "tandem_config_dump(NULL, buf, cap): 0 and \"\""),
    V(ckpt_queries, "tandem_ckpt_* queries on NULL: \"\", -1, 0 or NULL"),
    V(synth_speaker_name, "tandem_synth_speaker_name(NULL, 0): NULL"),
    V(config_name_kind, "tandem_config_name_kind(NULL): unknown"),
};

/* Every row in its own child: the rows that crash or answer otherwise, all named. */
static void test_null_arguments(void **state) {
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) { /* cmocka's handlers would turn a crash into an ordinary failure exit */
            const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
            for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) signal(sigs[k], SIG_DFL);
            _exit(cases[i].fn());
        }
        int ws = 0;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        if (WIFEXITED(ws) && WEXITSTATUS(ws) == cases[i].want) continue;
        bad++;
        if (WIFSIGNALED(ws)) printf("FAIL %s: killed by signal %d\n", cases[i].what, WTERMSIG(ws));
        else if (WEXITSTATUS(ws) == WRONG) printf("FAIL %s: answered something else\n", cases[i].what);
        else
            printf("FAIL %s: %s, expected %s\n", cases[i].what, tandem_status_name((tandem_status)WEXITSTATUS(ws)),
                   cases[i].want == NOT_A_STATUS ? "no crash" : tandem_status_name(cases[i].want));
    }
    if (bad) fail_msg("%d of %zu NULL-argument cases broke the contract (listed above)", bad,
                      sizeof cases / sizeof cases[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_null_arguments)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
