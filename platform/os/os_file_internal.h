/* os_file_internal.h — test hook into the atomic write: stop it part-way, leaving the files
 * exactly as a crash at that point would (used by test_os.c in a forked child). */
#ifndef TANDEM_PLATFORM_OS_FILE_INTERNAL_H
#define TANDEM_PLATFORM_OS_FILE_INTERNAL_H

#include <stddef.h>

#include "tandem.h"

enum {
    TANDEM_FILE_STAGE_ALL = 0,        /* run to completion (= tandem_file_write_atomic) */
    TANDEM_FILE_STAGE_TEMP_OPEN,      /* stop after creating the empty temp file */
    TANDEM_FILE_STAGE_TEMP_PARTIAL,   /* stop after writing half of the data to the temp */
    TANDEM_FILE_STAGE_TEMP_SYNCED,    /* stop after the temp is written and fsynced, before rename */
    TANDEM_FILE_STAGE_RENAMED,        /* stop after rename, before the directory fsync */
};

/* tandem_file_write_atomic that returns TANDEM_OK at stop_stage without cleaning up. */
tandem_status tandem_file_write_atomic_until(const char *path, const void *data, size_t len,
                                             int stop_stage);

#endif
