/* tandem_files.h — writing what the API computes to files (part of tandem.h): a float32 array as
 * NumPy .npy (a log-mel for an external vocoder), audio as a 16-bit PCM WAV, any bytes, and a
 * directory with its parents.
 *
 * Every writer replaces its target atomically: the bytes go to a temp file beside it, which is
 * fsynced and renamed over the target, so a failure or a crash leaves the old file (or none),
 * never a half-written one. Any thread may call any function (distinct paths at once). The
 * .npy writer allocates nothing; the WAV writer goes through libsndfile, which allocates inside
 * its open. Errors name the path: TANDEM_E_INVALID for bad arguments, TANDEM_E_IO for the OS's
 * refusal (with its reason).
 *
 * A writer only ever replaces a regular file: when the target is a FIFO, socket, device,
 * directory or a symbolic link it is refused with TANDEM_E_IO naming the path and what is
 * there, before anything is written (docs/RELIABILITY.md, "Inputs and outputs").
 */
/* tandem.h first, outside the guard (see tandem_text.h). */
#include "tandem.h"

#ifndef TANDEM_FILES_H
#define TANDEM_FILES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* data: row-major (C order) float32 of the given shape (ndim 1..TANDEM_MAX_DIMS, dims >= 0),
 * written as NumPy format 1.0, little-endian '<f4'. */
tandem_status tandem_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape);

/* samples [n] in [-1, 1] → round(x * 32767) (clipped beyond +-1) → a mono 16-bit PCM WAV at
 * sample_rate Hz. A non-finite sample is TANDEM_E_INVALID naming its index. */
tandem_status tandem_wav_write_pcm16(const char *path, const float *samples, int64_t n, int sample_rate);

/* data[0..len) → path, replaced atomically. */
tandem_status tandem_files_write_atomic(const char *path, const void *data, size_t len);

/* TANDEM_OK when a writer above may replace path (nothing there, or a regular file); otherwise
 * the TANDEM_E_IO those writers would give. Lets a tool refuse a bad --out before working. */
tandem_status tandem_files_check_output(const char *path);

/* TANDEM_OK when no output names the same file as an input or as another output, compared by
 * (device, inode): a hard link, a symbolic link or another spelling of the same path counts; an
 * output not yet written is compared by its directory's (device, inode) and its name. NULL
 * entries are skipped (optional paths); so are inputs that do not exist. Otherwise
 * TANDEM_E_INVALID naming both paths. Lets a tool refuse `--out` = its own input before working. */
tandem_status tandem_files_check_distinct(const char *const *outputs, int n_outputs, const char *const *inputs,
                                          int n_inputs);

/* Remove the temp files a writer of path left when its process died: ".<name>.tmp.<pid>.<n>"
 * beside path whose <pid> is gone (kill(pid, 0) says ESRCH); nothing else is touched. *removed
 * (may be NULL) counts them. A missing directory is TANDEM_OK. Opens the directory (allocates):
 * call it before the work, as `tandem synth` and `tandem features` do. */
tandem_status tandem_files_sweep_temps(const char *path, int *removed);

/* Create directory path and any missing parents (like mkdir -p); an existing directory is fine. */
tandem_status tandem_files_mkdir_p(const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_FILES_H */
