/* files.c — the public file helpers of tandem_files.h that the OS layer implements
 * (platform/os/os.h); the .npy and WAV writers are npy.c and wav.c. */
#include "tandem.h"

#include "platform/os/log.h"
#include "platform/os/os.h"

tandem_status tandem_files_write_atomic(const char *path, const void *data, size_t len) {
    if (!path || (len > 0 && !data))
        return tandem_fail(TANDEM_E_INVALID, "write %s: NULL argument", path ? path : "(null)");
    return tandem_file_write_atomic(path, data, len);
}

tandem_status tandem_files_check_output(const char *path) {
    if (!path || !path[0]) return tandem_fail(TANDEM_E_INVALID, "output: empty path");
    return tandem_file_check_output(path, "output");
}

tandem_status tandem_files_mkdir_p(const char *path) {
    if (!path || !path[0]) return tandem_fail(TANDEM_E_INVALID, "mkdir: empty path");
    return tandem_mkdir_p(path);
}
