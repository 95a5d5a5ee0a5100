/* settings.h — the process-wide runtime options (tandem_runtime_options in tandem.h), as the
 * platform and runtime code read them: the library reads no environment variable, only these.
 * Owns: one copy of the options in fixed storage (no allocation), behind a lock: any thread
 * may read while another sets them. */
#ifndef TANDEM_PLATFORM_SETTINGS_H
#define TANDEM_PLATFORM_SETTINGS_H

#include "tandem.h"

/* The path-valued options, in tandem_runtime_options' order. */
typedef enum tandem_setting_path {
    TANDEM_SETTING_CUDA_DRIVER = 0,
    TANDEM_SETTING_CUBLASLT,
    TANDEM_SETTING_NVML,
    TANDEM_SETTING_FATBIN,
    TANDEM_SETTING_CACHE_DIR,
    TANDEM_SETTING_PATH_COUNT,
} tandem_setting_path;

/* Copy of one path option into buf[TANDEM_RUNTIME_PATH_MAX]; returns buf, "" when unset
 * (the caller's built-in default applies). */
const char *tandem_settings_path(tandem_setting_path which, char *buf);
/* host_devices as set: 0 = default, TANDEM_HOST_DEVICES_NONE, or 1..TANDEM_MAX_HOST_DEVICES. */
int tandem_settings_host_devices(void);
/* host_threads as set: 0 = default, or 1..TANDEM_MAX_HOST_THREADS. */
int tandem_settings_host_threads(void);

#endif
