/* env_options.c — TANDEM_* environment variables → tandem_runtime_options (env_options.h). */
#include "tools/env_options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ENV_STR_(x) #x
#define ENV_STR(x) ENV_STR_(x)

/* One row per variable: what `tandem --help` lists (README.md "Environment" mirrors it). */
static const struct {
    const char *name, *meaning, *dflt;
} vars[] = {
    {"TANDEM_CUDA_DRIVER", "CUDA driver library to load", "libcuda.so.1"},
    {"TANDEM_CUBLASLT", "cuBLASLt library for CUDA GEMMs; none, off or 0: the fatbin's GEMM",
     "libcublasLt.so.13, else libcublasLt.so.12"},
    {"TANDEM_NVML", "NVML library (GPU utilisation, power, clocks); none: no sampling",
     "libnvidia-ml.so.1"},
    {"TANDEM_FATBIN", "fatbin file CUDA devices load instead of the embedded one", "the embedded one"},
    {"TANDEM_HOST_DEVICES", "host (CPU) devices, 0 to " ENV_STR(TANDEM_MAX_HOST_DEVICES), "2"},
    {"TANDEM_HOST_THREADS", "worker threads per host device, 1 to " ENV_STR(TANDEM_MAX_HOST_THREADS),
     "the CPUs this process may use"},
    {"TANDEM_CACHE_DIR", "text cache directory; none at all: text normalised in memory each run",
     "$XDG_CACHE_HOME/tandem (if absolute), else $HOME/.cache/tandem"},
};

static tandem_status bad(char *err, size_t cap, const char *fmt, ...) {
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return TANDEM_E_INVALID;
}

/* A path variable: NULL when unset or empty; too long for the options → TANDEM_E_INVALID. */
static tandem_status env_path(const char *name, const char **out, char *err, size_t cap) {
    const char *v = getenv(name);
    *out = v && v[0] ? v : NULL;
    if (*out && strlen(v) >= TANDEM_RUNTIME_PATH_MAX)
        return bad(err, cap, "%s: a path of %zu bytes; expected at most %d bytes", name, strlen(v),
                   TANDEM_RUNTIME_PATH_MAX - 1);
    return TANDEM_OK;
}

/* An integer variable in [lo, hi]; unset or empty leaves *out as it is. */
static tandem_status env_int(const char *name, int lo, int hi, int *out, char *err, size_t cap) {
    const char *v = getenv(name);
    if (!v || !v[0]) return TANDEM_OK;
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < lo || n > hi)
        return bad(err, cap, "%s='%s': expected an integer from %d to %d", name, v, lo, hi);
    *out = (int)n;
    return TANDEM_OK;
}

/* The cache directory rule: $TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem (the XDG spec
 * ignores relative values), else $HOME/.cache/tandem; NULL when none applies or fits. */
static tandem_status cache_dir(const char **out, char *buf, char *err, size_t cap) {
    if (env_path("TANDEM_CACHE_DIR", out, err, cap) != TANDEM_OK) return TANDEM_E_INVALID;
    if (*out) return TANDEM_OK;
    const char *e;
    int k = -1;
    if ((e = getenv("XDG_CACHE_HOME")) && e[0] == '/')
        k = snprintf(buf, TANDEM_RUNTIME_PATH_MAX, "%s/tandem", e);
    else if ((e = getenv("HOME")) && e[0])
        k = snprintf(buf, TANDEM_RUNTIME_PATH_MAX, "%s/.cache/tandem", e);
    *out = k > 0 && k < TANDEM_RUNTIME_PATH_MAX ? buf : NULL;
    return TANDEM_OK;
}

tandem_status cli_env_read(tandem_runtime_options *o, char cache_buf[TANDEM_RUNTIME_PATH_MAX],
                           char *err, size_t cap) {
    tandem_runtime_options_init(o);
    if (err && cap) err[0] = '\0';
    int host_devices = -1;
    if (env_path("TANDEM_CUDA_DRIVER", &o->cuda_driver, err, cap) != TANDEM_OK ||
        env_path("TANDEM_CUBLASLT", &o->cublaslt, err, cap) != TANDEM_OK ||
        env_path("TANDEM_NVML", &o->nvml, err, cap) != TANDEM_OK ||
        env_path("TANDEM_FATBIN", &o->fatbin, err, cap) != TANDEM_OK ||
        cache_dir(&o->cache_dir, cache_buf, err, cap) != TANDEM_OK ||
        env_int("TANDEM_HOST_DEVICES", 0, TANDEM_MAX_HOST_DEVICES, &host_devices, err, cap) != TANDEM_OK ||
        env_int("TANDEM_HOST_THREADS", 1, TANDEM_MAX_HOST_THREADS, &o->host_threads, err, cap) != TANDEM_OK)
        return TANDEM_E_INVALID;
    /* the variable's 0 means none; the option's 0 means the default */
    if (host_devices >= 0) o->host_devices = host_devices == 0 ? TANDEM_HOST_DEVICES_NONE : host_devices;
    return TANDEM_OK;
}

tandem_status cli_env_apply(char *err, size_t cap) {
    tandem_runtime_options o;
    char cache_buf[TANDEM_RUNTIME_PATH_MAX];
    tandem_status st = cli_env_read(&o, cache_buf, err, cap);
    if (st != TANDEM_OK) return st;
    st = tandem_runtime_set_options(&o);
    if (st != TANDEM_OK && err && cap) snprintf(err, cap, "%s", tandem_last_error());
    return st;
}

void cli_env_usage(FILE *f) {
    fprintf(f, "\nenvironment:\n");
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        fprintf(f, "  %-20s %s\n  %-20s   default: %s\n", vars[i].name, vars[i].meaning, "", vars[i].dflt);
}
