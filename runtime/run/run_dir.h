/* run_dir.h — ownership of a training run's directory (the config's `out`).
 *
 * One run at a time: open takes an exclusive flock on <out>/.tandem-run.lock (non-blocking) and
 * holds it until close; the lock file carries the holder's pid, so a second trainer on the same
 * directory fails at once naming it (the kernel drops the lock when the holder dies, kill -9
 * included: a stale lock file never blocks a later run).
 * A fresh run (no resume from this directory) refuses a directory that is not empty, unless
 * new_run is set: then the files of the previous run (ckpt-*.safetensors, ckpt-best.safetensors,
 * metrics.jsonl, loss.png, mel.png, events.out.tfevents.*) are moved into <out>/previous-<n>/ (the first free n) and other files are
 * left alone. The move is atomic against kill -9: the files go into <out>/.previous.tmp.<pid>/,
 * renamed to previous-<n> last; the next open rolls back a staging directory left behind. Resuming from the directory itself keeps everything.
 * Under the lock, temp files of the run's own outputs (".<name>.tmp.<pid>.<n>" of checkpoints,
 * loss.png, mel.png) whose process is gone are removed; a live process's temp file is never
 * touched. (The text cache's temps live in the cache directory and are its own.)
 * Owns: the lock's file descriptor. Allocates only while opening (directory listing). One
 * thread: the trainer's. */
#ifndef TANDEM_RUNTIME_RUN_DIR_H
#define TANDEM_RUNTIME_RUN_DIR_H

#include <stdint.h>

#include "tandem.h"

#define TANDEM_RUN_LOCK_NAME ".tandem-run.lock"
#define TANDEM_RUN_STAGING_PREFIX ".previous.tmp."

typedef struct tandem_run_dir {
    int fd;      /* the locked file; -1 when not held */
    int created; /* open made the directory */
    int unstarted; /* a fresh run that trained nothing: discard removes its metrics.jsonl and step 0's samples */
    char out[4096];
} tandem_run_dir;

/* Create out (mkdir -p), lock it, apply the rules above. resume_dir: the directory a resume reads
 * (NULL: a fresh run). On failure nothing is held (rd->fd = -1): TANDEM_E_STATE when another
 * process holds the lock (its pid named), TANDEM_E_INVALID for a non-empty directory. */
tandem_status tandem_run_dir_open(tandem_run_dir *rd, const char *out, const char *resume_dir, int new_run);
/* A trainer create that failed after open, or a fresh run that ended before its first step
 * (rd->unstarted): remove an empty metrics.jsonl (unstarted: metrics.jsonl, and step 0's WAVs and
 * samples/ if empty then) and, when open made the directory, the lock file, an empty samples/ and
 * the directory itself if nothing else is in it, so a refused or failed start leaves nothing that
 * blocks a plain retry. Call before close. */
void tandem_run_dir_discard(tandem_run_dir *rd);
/* Release the lock (idempotent; the lock file stays). */
void tandem_run_dir_close(tandem_run_dir *rd);

/* A resume of this directory took the checkpoint of step: every newer checkpoint (skipped as
 * unusable: unreadable for a moment, changed while read, non-finite, ...) moves into
 * <out>/skipped-<n>/ with a warning, so this line of the run never overwrites or rotates it away.
 * Nothing to do when resume_dir is another directory or the lock is not held. */
tandem_status tandem_run_dir_set_aside(tandem_run_dir *rd, const char *resume_dir, int64_t step);
/* TANDEM_E_STATE naming the pid when another open holds dir's lock (a live run), else TANDEM_OK. */
tandem_status tandem_run_dir_check_free(const char *dir);

/* Tests only: called after each step of a --new-run's move (0: staging made, then each file, then
 * the rename to previous-<n>), so a test can kill the process there. NULL in production. */
extern void (*tandem_run_dir_test_stage)(int stage);

/* True when pid names a live process (kill(pid, 0) does not report ESRCH). */
int tandem_run_pid_alive(long pid);

#endif
