/* gemm_check.c — which of a config's GEMM shapes fall back from cuBLASLt's fused plans on a
 * CUDA device (tandem_system.h, tandem_system_gemm_fallbacks; `tandem diagnose --config`): the
 * model declared on the device prepares every shape, the backend says which do not run fused. */
#include <string.h>

#include "platform/os/log.h"
#include "runtime/core/dev.h"
#include "runtime/model/model.h"
#include "tandem.h"
#include "tandem_system.h"

tandem_status tandem_system_gemm_fallbacks(const tandem_config *cfg, int ordinal, char *buf, size_t cap, int *n) {
    if (!cfg || !n || (!buf && cap)) return tandem_fail(TANDEM_E_INVALID, "tandem_system_gemm_fallbacks: NULL argument");
    *n = 0;
    if (buf && cap) buf[0] = 0;
    tandem_model_dims dims;
    TANDEM_TRY(tandem_model_dims_from_config(cfg, tandem_symbols_count(), &dims));
    dims.strict_gemm = 0; /* the list is the answer */
    tandem_device *dev = NULL;
    TANDEM_TRY(tandem_device_open(TANDEM_BACKEND_CUDA, ordinal, &dev));
    tandem_pool *pool = NULL;
    tandem_model m;
    memset(&m, 0, sizeof m);
    tandem_status st = tandem_pool_create(dev, "gemm-check", 0, &pool);
    if (st == TANDEM_OK) st = tandem_model_declare(&m, dev, pool, &dims);
    if (st == TANDEM_OK) *n = tandem_dev_gemm_fallbacks(dev, buf, cap);
    tandem_model_free(&m); /* also after a failed declare */
    tandem_pool_destroy(pool);
    tandem_device_close(dev);
    return st;
}
