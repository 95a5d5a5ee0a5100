/* settings.c — storage and validation of the runtime options (see settings.h, tandem.h). */
#include "platform/os/settings.h"

#include <pthread.h>
#include <string.h>

#include "platform/os/log.h"

/* Names of the path options in tandem_runtime_options, for messages. */
static const char *const path_names[TANDEM_SETTING_PATH_COUNT] = {
    [TANDEM_SETTING_CUDA_DRIVER] = "cuda_driver", [TANDEM_SETTING_CUBLASLT] = "cublaslt",
    [TANDEM_SETTING_NVML] = "nvml",               [TANDEM_SETTING_FATBIN] = "fatbin",
    [TANDEM_SETTING_CACHE_DIR] = "cache_dir",
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char paths[TANDEM_SETTING_PATH_COUNT][TANDEM_RUNTIME_PATH_MAX]; /* "" = unset */
static int host_devices, host_threads;

/* The path fields of o in tandem_setting_path order. */
static void path_values(const tandem_runtime_options *o, const char *v[TANDEM_SETTING_PATH_COUNT]) {
    v[TANDEM_SETTING_CUDA_DRIVER] = o->cuda_driver;
    v[TANDEM_SETTING_CUBLASLT] = o->cublaslt;
    v[TANDEM_SETTING_NVML] = o->nvml;
    v[TANDEM_SETTING_FATBIN] = o->fatbin;
    v[TANDEM_SETTING_CACHE_DIR] = o->cache_dir;
}

void tandem_runtime_options_init(tandem_runtime_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

static tandem_status check(const tandem_runtime_options *o) {
    if (!o) return tandem_fail(TANDEM_E_INVALID, "tandem_runtime_set_options: options are NULL");
    const char *v[TANDEM_SETTING_PATH_COUNT];
    path_values(o, v);
    for (int i = 0; i < TANDEM_SETTING_PATH_COUNT; i++) {
        size_t n = v[i] ? strlen(v[i]) : 0;
        if (n >= TANDEM_RUNTIME_PATH_MAX)
            return tandem_fail(TANDEM_E_INVALID,
                               "runtime option %s: a path of %zu bytes; expected at most %d bytes",
                               path_names[i], n, TANDEM_RUNTIME_PATH_MAX - 1);
    }
    if (o->host_devices < TANDEM_HOST_DEVICES_NONE || o->host_devices > TANDEM_MAX_HOST_DEVICES)
        return tandem_fail(TANDEM_E_INVALID,
                           "runtime option host_devices = %d: expected 1 to %d, 0 for the default "
                           "(2) or TANDEM_HOST_DEVICES_NONE (%d) for none",
                           o->host_devices, TANDEM_MAX_HOST_DEVICES, TANDEM_HOST_DEVICES_NONE);
    if (o->host_threads < 0 || o->host_threads > TANDEM_MAX_HOST_THREADS)
        return tandem_fail(TANDEM_E_INVALID,
                           "runtime option host_threads = %d: expected 1 to %d, or 0 for the CPUs "
                           "this process may run on",
                           o->host_threads, TANDEM_MAX_HOST_THREADS);
    return TANDEM_OK;
}

tandem_status tandem_runtime_set_options(const tandem_runtime_options *o) {
    TANDEM_TRY(check(o));
    const char *v[TANDEM_SETTING_PATH_COUNT];
    path_values(o, v);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < TANDEM_SETTING_PATH_COUNT; i++) {
        size_t n = v[i] ? strlen(v[i]) : 0;
        memcpy(paths[i], v[i] ? v[i] : "", n);
        paths[i][n] = '\0';
    }
    host_devices = o->host_devices;
    host_threads = o->host_threads;
    pthread_mutex_unlock(&lock);
    return TANDEM_OK;
}

void tandem_runtime_get_options(tandem_runtime_options *out) {
    tandem_runtime_options_init(out);
    pthread_mutex_lock(&lock);
#define TANDEM_SET_AT(i) (paths[i][0] ? paths[i] : NULL)
    out->cuda_driver = TANDEM_SET_AT(TANDEM_SETTING_CUDA_DRIVER);
    out->cublaslt = TANDEM_SET_AT(TANDEM_SETTING_CUBLASLT);
    out->nvml = TANDEM_SET_AT(TANDEM_SETTING_NVML);
    out->fatbin = TANDEM_SET_AT(TANDEM_SETTING_FATBIN);
    out->cache_dir = TANDEM_SET_AT(TANDEM_SETTING_CACHE_DIR);
#undef TANDEM_SET_AT
    out->host_devices = host_devices;
    out->host_threads = host_threads;
    pthread_mutex_unlock(&lock);
}

const char *tandem_settings_path(tandem_setting_path which, char *buf) {
    pthread_mutex_lock(&lock);
    memcpy(buf, paths[which], strlen(paths[which]) + 1);
    pthread_mutex_unlock(&lock);
    return buf;
}

int tandem_settings_host_devices(void) {
    pthread_mutex_lock(&lock);
    int n = host_devices;
    pthread_mutex_unlock(&lock);
    return n;
}

int tandem_settings_host_threads(void) {
    pthread_mutex_lock(&lock);
    int n = host_threads;
    pthread_mutex_unlock(&lock);
    return n;
}
