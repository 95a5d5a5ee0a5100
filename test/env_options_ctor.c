/* env_options_ctor.c — linked into every test binary that links libtandem.a: applies the
 * TANDEM_* environment to the runtime options before main, as the `tandem` command does before
 * it dispatches (tools/env_options.c), so tests and scripts steer the library through the same
 * variables. A test that changes a variable later calls cli_env_apply itself. */
#include <stdio.h>
#include <stdlib.h>

#include "tools/env_options.h"

__attribute__((constructor)) static void apply_environment(void) {
    char err[512];
    if (cli_env_apply(err, sizeof err) != TANDEM_OK) {
        fprintf(stderr, "test start-up: %s\n", err);
        exit(2);
    }
}
