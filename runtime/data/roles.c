/* roles.c — device roles (see roles.h). */
#include "runtime/data/roles.h"

#include <stdio.h>
#include <string.h>

#include "platform/device.h"
#include "platform/os/log.h"

/* Open a pair of devices of one backend (ordinals a and b; a == b: one device in both roles). */
static tandem_status open_pair(tandem_backend backend, int a, int b, tandem_device **data,
                               tandem_device **model) {
    TANDEM_TRY(tandem_device_open(backend, a, data));
    if (a == b) {
        *model = *data;
        return TANDEM_OK;
    }
    tandem_status st = tandem_device_open(backend, b, model);
    if (st != TANDEM_OK) {
        tandem_device_close(*data);
        *data = NULL;
    }
    return st;
}

/* Two CUDA devices → data 0, model 1; one → both roles; none (or HOST) → two host devices. */
static tandem_status open_auto(tandem_backend backend, tandem_device **data, tandem_device **model,
                               char *desc, size_t cap) {
    int n = 0;
    if (backend != TANDEM_BACKEND_HOST) {
        tandem_status st = tandem_device_count(backend, &n);
        if (st != TANDEM_OK && !(st == TANDEM_E_NODRIVER && backend == TANDEM_BACKEND_AUTO)) return st;
        int cuda = backend == TANDEM_BACKEND_CUDA;
        if (backend == TANDEM_BACKEND_AUTO) { /* cuda only when a driver reports devices */
            int cuda_n = 0;
            cuda = tandem_cuda_device_count(&cuda_n) == TANDEM_OK && cuda_n > 0;
            if (cuda) n = cuda_n;
        }
        if (cuda) {
            if (n == 0) return tandem_fail(TANDEM_E_DEVICE, "no CUDA device found");
            TANDEM_TRY(open_pair(TANDEM_BACKEND_CUDA, 0, n >= 2 ? 1 : 0, data, model));
            if (n >= 2)
                snprintf(desc, cap, "two CUDA devices: data device 0 (%s), model device 1 (%s); ring copies %s",
                         (*data)->info.name, (*model)->info.name,
                         tandem_device_can_access_peer(*model, *data) ? "peer to peer"
                                                                      : "staged through pinned host memory");
            else
                snprintf(desc, cap, "one CUDA device in both roles: device 0 (%s), separate arenas and streams",
                         (*data)->info.name);
            return TANDEM_OK;
        }
    }
    TANDEM_TRY(open_pair(TANDEM_BACKEND_HOST, 0, 1, data, model));
    snprintf(desc, cap, "no CUDA device: two host devices, data = host 0, model = host 1 (%s)",
             (*data)->info.name);
    return TANDEM_OK;
}

/* Explicit ordinals on n CUDA devices: the role not given takes the other device when there are
 * two, else the same one. */
static tandem_status open_ordinals(int n, int dg, int mg, tandem_device **data, tandem_device **model,
                                   char *desc, size_t cap) {
    if (dg < 0) dg = n >= 2 && mg == 0 ? 1 : 0;
    if (mg < 0) mg = n >= 2 ? (dg == 1 ? 0 : 1) : dg;
    if (dg >= n || mg >= n)
        return tandem_fail(TANDEM_E_DEVICE, "config: %s %d: only %d CUDA device%s (ordinals 0..%d)",
                           dg >= n ? "data_gpu" : "model_gpu", dg >= n ? dg : mg, n, n == 1 ? "" : "s",
                           n - 1);
    TANDEM_TRY(open_pair(TANDEM_BACKEND_CUDA, dg, mg, data, model));
    if (mg == dg)
        snprintf(desc, cap, "CUDA device %d (%s) in both roles (data_gpu = model_gpu), separate arenas "
                 "and streams", dg, (*data)->info.name);
    else
        snprintf(desc, cap, "data device: CUDA %d (%s), model device: CUDA %d (%s); ring copies %s", dg,
                 (*data)->info.name, mg, (*model)->info.name,
                 tandem_device_can_access_peer(*model, *data) ? "peer to peer"
                                                              : "staged through pinned host memory");
    return TANDEM_OK;
}

tandem_status tandem_roles_open(tandem_backend backend, int data_gpu, int model_gpu,
                                tandem_device **data, tandem_device **model, char *desc, size_t cap) {
    if (!data || !model || !desc || !cap) return tandem_fail(TANDEM_E_INVALID, "tandem_roles_open: NULL argument");
    *data = *model = NULL;
    const int explicit_ = data_gpu >= 0 || model_gpu >= 0;
    int n = 0;
    if (!explicit_ || backend == TANDEM_BACKEND_HOST || tandem_cuda_device_count(&n) != TANDEM_OK || n == 0) {
        if (explicit_ && backend == TANDEM_BACKEND_CUDA)
            return tandem_fail(TANDEM_E_DEVICE, "config: data_gpu %d / model_gpu %d: no CUDA device "
                               "found", data_gpu, model_gpu);
        if (explicit_)
            tandem_logf(TANDEM_LOG_WARN, "data_gpu / model_gpu ignored: no CUDA device (two host "
                        "devices are used)");
        return open_auto(backend, data, model, desc, cap);
    }
    return open_ordinals(n, data_gpu, model_gpu, data, model, desc, cap);
}

/* Automatic roles of local rank k of L on n CUDA devices: disjoint pairs when there are two per
 * local rank, else one each; *a / *b the data / model ordinals, or an error naming the counts. */
static tandem_status rank_ordinals(int n, int k, int L, int *a, int *b) {
    if (k < 0 || (L > 0 && k >= L))
        return tandem_fail(TANDEM_E_INVALID, "data-parallel: local rank %d of %d ranks on this machine; expected 0 <= "
                           "local rank < local ranks (the launcher's LOCAL_RANK / LOCAL_WORLD_SIZE)", k, L);
    if (L > 0 && n >= 2 * L) {
        *a = 2 * k, *b = 2 * k + 1;
        return TANDEM_OK;
    }
    if ((L > 0 ? L : k + 1) <= n) {
        *a = *b = k;
        return TANDEM_OK;
    }
    return tandem_fail(TANDEM_E_DEVICE, "data-parallel: %d CUDA device%s on this machine for %s%d local ranks (this is "
                       "local rank %d): each local rank needs a GPU of its own (two for a separate data and model "
                       "device); start at most %d rank%s per machine, or give each rank data_gpu / model_gpu",
                       n, n == 1 ? "" : "s", L > 0 ? "" : "at least ", L > 0 ? L : k + 1, k, n, n == 1 ? "" : "s");
}

tandem_status tandem_roles_open_rank(tandem_backend backend, int data_gpu, int model_gpu, int local_rank,
                                     int local_world, tandem_device **data, tandem_device **model, char *desc,
                                     size_t cap) {
    int n = 0;
    if (backend == TANDEM_BACKEND_HOST || tandem_cuda_device_count(&n) != TANDEM_OK || n == 0 || data_gpu >= 0 ||
        model_gpu >= 0) {
        if (n > 0 && backend != TANDEM_BACKEND_HOST) { /* explicit ordinals: not by local rank */
            char d[16] = "auto", m[16] = "auto";
            if (data_gpu >= 0) snprintf(d, sizeof d, "%d", data_gpu);
            if (model_gpu >= 0) snprintf(m, sizeof m, "%d", model_gpu);
            tandem_logf(TANDEM_LOG_INFO, "data-parallel local rank %d: data_gpu %s / model_gpu %s from the config, "
                        "used as given (ranks sharing a machine each need their own)", local_rank, d, m);
        }
        return tandem_roles_open(backend, data_gpu, model_gpu, data, model, desc, cap);
    }
    if (!data || !model || !desc || !cap)
        return tandem_fail(TANDEM_E_INVALID, "tandem_roles_open_rank: NULL argument");
    *data = *model = NULL;
    int a = 0, b = 0;
    TANDEM_TRY(rank_ordinals(n, local_rank, local_world, &a, &b));
    TANDEM_TRY(open_pair(TANDEM_BACKEND_CUDA, a, b, data, model));
    char of[32] = "";
    if (local_world > 0) snprintf(of, sizeof of, " of %d", local_world);
    if (a == b)
        snprintf(desc, cap, "local rank %d%s: CUDA device %d (%s) in both roles (%d GPU%s, one per local rank%s), "
                 "separate arenas and streams", local_rank, of, a, (*data)->info.name, n, n == 1 ? "" : "s",
                 local_world > 0 ? "" : "; local_world_size unknown");
    else
        snprintf(desc, cap, "local rank %d%s: data device CUDA %d (%s), model device CUDA %d (%s), two of %d GPUs per "
                 "local rank; ring copies %s", local_rank, of, a, (*data)->info.name, b, (*model)->info.name, n,
                 tandem_device_can_access_peer(*model, *data) ? "peer to peer" : "staged through pinned host memory");
    return TANDEM_OK;
}

void tandem_roles_close(tandem_device *data, tandem_device *model) {
    if (model && model != data) tandem_device_close(model);
    if (data) tandem_device_close(data);
}

void tandem_roles_note_force_staged(char *desc, size_t cap) {
    char *p = strstr(desc, "ring copies peer to peer");
    if (p)
        snprintf(p, cap - (size_t)(p - desc),
                 "ring copies staged through pinned host memory (force_staged; peer access is available)");
}
