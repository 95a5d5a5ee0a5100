/* test_launch_env.c — the ranks `tandem train` takes from its launcher's environment
 * (tools/launch_env.c): OpenMPI's mpirun first, then torchrun style, then Slurm; none: one rank;
 * a value out of range is refused naming the variable, its value and the range; torchrun's
 * MASTER_ADDR / MASTER_PORT become the rendezvous endpoint (validated), the launchers' local
 * sizes local_world. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/launch_env.h"

static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                   "WORLD_SIZE", "RANK", "LOCAL_RANK", "SLURM_NTASKS", "SLURM_PROCID",
                                   "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE",
                                   "SLURM_NTASKS_PER_NODE", "MASTER_ADDR", "MASTER_PORT",
                                   "TORCHELASTIC_USE_AGENT_STORE"};

static void clear(void) {
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static void expect(int world, int rank, int local, const char *who) {
    cli_launch l;
    char err[256] = "";
    assert_int_equal(cli_launch_read(&l, err, sizeof err), 0);
    assert_int_equal(l.world, world);
    assert_int_equal(l.rank, rank);
    assert_int_equal(l.local_rank, local);
    assert_string_equal(l.launcher, who);
}

/* var=value on top of what the caller set: refused, the message saying want. */
static void expect_refused(const char *var, const char *value, const char *want) {
    setenv(var, value, 1);
    cli_launch l;
    char err[256] = "";
    assert_int_equal(cli_launch_read(&l, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("%s=%s: \"%s\"; expected it to say \"%s\"", var, value, err, want);
}

static void test_launchers(void **state) {
    (void)state;
    clear();
    expect(1, 0, 0, "none");
    setenv("SLURM_NTASKS", "8", 1), setenv("SLURM_PROCID", "5", 1), setenv("SLURM_LOCALID", "1", 1);
    expect(8, 5, 1, "slurm");
    setenv("WORLD_SIZE", "4", 1), setenv("RANK", "3", 1), setenv("LOCAL_RANK", "0", 1);
    expect(4, 3, 0, "torchrun"); /* torchrun style before Slurm's */
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1), setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    expect(2, 1, 1, "mpirun"); /* mpirun's own before anything a job script exported */
    clear();
}

static void test_bad_values(void **state) {
    (void)state;
    static const char *const bad[][3] = {
        {"WORLD_SIZE", "0", "expected an integer from 1"},
        {"WORLD_SIZE", "two", "WORLD_SIZE='two'"},
        {"RANK", "4", "RANK='4': expected an integer from 0 to 3"},
        {"LOCAL_RANK", "-1", "LOCAL_RANK='-1'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear();
        setenv("WORLD_SIZE", "4", 1), setenv("RANK", "1", 1);
        expect_refused(bad[i][0], bad[i][1], bad[i][2]);
    }
    clear();
}

static void test_rendezvous_and_local_size(void **state) {
    (void)state;
    clear();
    setenv("WORLD_SIZE", "4", 1), setenv("RANK", "1", 1), setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "10.0.0.7", 1), setenv("MASTER_PORT", "29500", 1);
    cli_launch l;
    char err[256] = "";
    assert_int_equal(cli_launch_read(&l, err, sizeof err), 0);
    assert_string_equal(l.rendezvous, "10.0.0.7:29500");
    assert_int_equal(l.local_world, 2);
    setenv("MASTER_ADDR", "fe80::1", 1); /* IPv6: bracketed */
    assert_int_equal(cli_launch_read(&l, err, sizeof err), 0);
    assert_string_equal(l.rendezvous, "[fe80::1]:29500");
    setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1); /* torchrun's own store holds MASTER_PORT */
    assert_int_equal(cli_launch_read(&l, err, sizeof err), 0);
    assert_string_equal(l.rendezvous, "[fe80::1]:29501");
    setenv("MASTER_PORT", "65535", 1);
    assert_int_equal(cli_launch_read(&l, err, sizeof err), -1);
    assert_non_null(strstr(err, "MASTER_PORT + 1"));
    unsetenv("TORCHELASTIC_USE_AGENT_STORE");
    unsetenv("MASTER_ADDR"), unsetenv("MASTER_PORT");
    assert_int_equal(cli_launch_read(&l, err, sizeof err), 0);
    assert_string_equal(l.rendezvous, ""); /* none: the CUDA path then needs mpirun */
    clear();
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1), setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    setenv("MASTER_ADDR", "10.0.0.7", 1), setenv("MASTER_PORT", "29500", 1);
    assert_int_equal(cli_launch_read(&l, err, sizeof err), 0);
    assert_string_equal(l.rendezvous, ""); /* mpirun hands the id over itself */
    assert_int_equal(l.local_world, 2);
    clear();
}

static void test_bad_rendezvous(void **state) {
    (void)state;
    static const char *const bad[][3] = {
        {"MASTER_PORT", "0", "MASTER_PORT='0': expected an integer from 1 to 65535"},
        {"MASTER_PORT", "http", "MASTER_PORT='http'"},
        {"MASTER_ADDR", "", "MASTER_PORT is set but MASTER_ADDR is not"},
        {"MASTER_ADDR", "host name", "MASTER_ADDR='host name': expected a host name or an IP address"},
        {"MASTER_ADDR", "[::1]", "MASTER_ADDR='[::1]'"},
        {"LOCAL_WORLD_SIZE", "1", "LOCAL_RANK=1 with LOCAL_WORLD_SIZE=1"},
        {"LOCAL_WORLD_SIZE", "5", "LOCAL_WORLD_SIZE='5': expected an integer from 1 to 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear();
        setenv("WORLD_SIZE", "4", 1), setenv("RANK", "1", 1), setenv("LOCAL_RANK", "1", 1);
        setenv("MASTER_ADDR", "node1", 1), setenv("MASTER_PORT", "29500", 1);
        expect_refused(bad[i][0], bad[i][1], bad[i][2]);
    }
    clear();
    setenv("WORLD_SIZE", "2", 1), setenv("RANK", "1", 1);
    expect_refused("MASTER_ADDR", "node1", "MASTER_ADDR is set but MASTER_PORT is not");
    clear();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launchers),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_rendezvous_and_local_size),
        cmocka_unit_test(test_bad_rendezvous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
