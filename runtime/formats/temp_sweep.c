/* temp_sweep.c — tandem_files_sweep_temps (tandem_files.h): the temp files an atomic writer of one
 * output left when its process died (".<name>.tmp.<pid>.<n>", atomic_file.h), removed. */
#include "tandem.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "runtime/formats/atomic_file.h"

/* The writer's pid in a temp name of base's (".<base>.tmp.<pid>.<n>"); 0 for any other name. */
static long temp_pid_of(const char *name, const char *base) {
    if (!tandem_atomic_is_temp_of(name, base)) return 0;
    const char *p = name + 1 + strlen(base) + 5;
    long pid = 0;
    for (; *p >= '0' && *p <= '9' && pid < 1000000000L; p++) pid = pid * 10 + (*p - '0');
    if (*p++ != '.' || !(*p >= '0' && *p <= '9')) return 0;
    while (*p >= '0' && *p <= '9') p++;
    return *p ? 0 : pid;
}

tandem_status tandem_files_sweep_temps(const char *path, int *removed) {
    if (removed) *removed = 0;
    if (!path || !path[0]) return tandem_fail(TANDEM_E_INVALID, "sweep temps: empty path");
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const size_t n = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
    if (!base[0] || n >= sizeof dir) return tandem_fail(TANDEM_E_INVALID, "sweep temps %s: expected a file path", path);
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    DIR *d = opendir(dir);
    if (!d) return TANDEM_OK; /* no directory, no temps: the write itself will say why */
    for (struct dirent *e; (e = readdir(d));) {
        const long pid = temp_pid_of(e->d_name, base);
        char p[PATH_MAX];
        struct stat sb;
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &sb) != 0 ||
            !S_ISREG(sb.st_mode) || unlink(p) != 0)
            continue;
        tandem_logf(TANDEM_LOG_INFO, "removed %s, a temp file left by an interrupted write of %s (process %ld is "
                    "gone)", p, path, pid);
        if (removed) (*removed)++;
    }
    closedir(d);
    return TANDEM_OK;
}
