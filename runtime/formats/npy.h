/* npy.h — NumPy .npy output (format 1.0) for float32 arrays, e.g. a log-mel [frames, 80] for an
 * external neural vocoder. Owns nothing; the file is replaced atomically and written through a
 * stack buffer (no heap allocation). The writer, tandem_npy_write_f32, is public: its contract
 * is in tandem_files.h. */
#ifndef TANDEM_RUNTIME_NPY_H
#define TANDEM_RUNTIME_NPY_H

#include "tandem.h"

#endif
