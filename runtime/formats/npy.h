/* npy.h — NumPy .npy output (format 1.0) for float32 arrays, e.g. a log-mel [frames, 80] for an
 * external neural vocoder. Owns nothing; the file is replaced atomically and written through a
 * stack buffer (no heap allocation). */
#ifndef TANDEM_RUNTIME_NPY_H
#define TANDEM_RUNTIME_NPY_H

#include <stdint.h>

#include "tandem.h"

/* data: row-major (C order) float32 of the given shape (ndim 1..TANDEM_MAX_DIMS, dims >= 0),
 * written little-endian ('<f4'). */
tandem_status tandem_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape);

#endif
