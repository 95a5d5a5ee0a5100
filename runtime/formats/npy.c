/* npy.c — .npy v1.0 writer (see npy.h): magic "\x93NUMPY", version 1.0, a little-endian u16
 * header length, then a Python dict literal padded with spaces and ending in a newline so the
 * data starts at a multiple of 64 bytes, then the data. */
#include "runtime/formats/npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runtime/formats/atomic_file.h"
#include "platform/os/log.h"

tandem_status tandem_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape) {
    if (!path || !shape || ndim < 1 || ndim > TANDEM_MAX_DIMS)
        return tandem_fail(TANDEM_E_INVALID, "npy write %s: ndim %d, expected 1..%d", path ? path : "(null)", ndim,
                           TANDEM_MAX_DIMS);
    uint64_t count = 1;
    char dims[TANDEM_MAX_DIMS * 24 + 8];
    size_t dl = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return tandem_fail(TANDEM_E_INVALID, "npy write %s: dimension %d is %" PRId64 ", expected >= 0", path, d,
                               shape[d]);
        if (shape[d] && count > UINT64_MAX / 8 / (uint64_t)shape[d])
            return tandem_fail(TANDEM_E_INVALID, "npy write %s: shape too large", path);
        count *= (uint64_t)shape[d];
        dl += (size_t)snprintf(dims + dl, sizeof dims - dl, d ? ", %" PRId64 : "%" PRId64, shape[d]);
    }
    if (ndim == 1) dl += (size_t)snprintf(dims + dl, sizeof dims - dl, ","); /* a 1-tuple: (n,) */
    if (count && !data) return tandem_fail(TANDEM_E_INVALID, "npy write %s: NULL data", path);

    char header[256];
    int dict = snprintf(header + 10, sizeof header - 10,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
    size_t total = 10 + (size_t)dict + 1, padded = (total + 63) / 64 * 64;
    if (padded > sizeof header) return tandem_fail(TANDEM_E_INTERNAL, "npy write %s: header too long", path);
    size_t hlen = padded - 10;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)(hlen & 0xff);
    header[9] = (char)(hlen >> 8);
    memset(header + 10 + dict, ' ', hlen - (size_t)dict - 1);
    header[padded - 1] = '\n';

    tandem_atomic_file f;
    TANDEM_TRY(tandem_atomic_open(&f, path));
    tandem_status st = tandem_atomic_write(&f, header, padded);
    const uint16_t probe = 1;
    int little = *(const uint8_t *)&probe == 1;
    uint32_t buf[1024];
    for (uint64_t i = 0; i < count && st == TANDEM_OK;) {
        size_t n = count - i < 1024 ? (size_t)(count - i) : 1024;
        memcpy(buf, data + i, n * 4);
        if (!little)
            for (size_t j = 0; j < n; j++) {
                uint32_t u = buf[j];
                buf[j] = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
            }
        st = tandem_atomic_write(&f, buf, n * 4);
        i += n;
    }
    if (st != TANDEM_OK) {
        tandem_atomic_abort(&f);
        return st;
    }
    return tandem_atomic_commit(&f);
}
