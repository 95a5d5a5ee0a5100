/* env_options.h — the TANDEM_* environment variables, turned into the library's runtime
 * options (tandem_runtime_options, tandem.h). The library reads no environment: the `tandem`
 * command applies these before it dispatches (tools/main.c), and every test binary at start-up
 * (test/env_options_ctor.c). Owns: nothing; called from the main thread before devices open. */
#ifndef TANDEM_TOOLS_ENV_OPTIONS_H
#define TANDEM_TOOLS_ENV_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "tandem.h"

/* Reads the variables into *o (after tandem_runtime_options_init). Strings point into the
 * environment, or into cache_buf for the default cache directory ($TANDEM_CACHE_DIR, else
 * $XDG_CACHE_HOME/tandem when that is absolute, else $HOME/.cache/tandem, else none). A bad
 * value is TANDEM_E_INVALID with err (cap bytes, may be NULL) naming the variable and what it
 * accepts: "TANDEM_HOST_THREADS='x': expected an integer from 1 to 256". */
tandem_status cli_env_read(tandem_runtime_options *o, char cache_buf[TANDEM_RUNTIME_PATH_MAX],
                           char *err, size_t cap);
/* cli_env_read, then tandem_runtime_set_options: the environment as it is now becomes the
 * process's options (a variable unset since the last call goes back to its default). */
tandem_status cli_env_apply(char *err, size_t cap);
/* The "environment:" section of `tandem --help`: every variable, its meaning and default. */
void cli_env_usage(FILE *f);

#endif
