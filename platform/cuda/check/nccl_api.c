/* check/nccl_api.c — build-time check of platform/cuda/nccl_api.h against an installed nccl.h
 * (compiled by mk/45-nccl.mk when one is found; never part of libtandem.a). nccl.h comes first,
 * so nccl_api.h builds its tandem_pfn_* types from nccl.h's types; assigning each real function
 * to its pointer type fails a -Werror build on any signature difference, and each value the
 * project declares is compared with nccl.h's. */
#include <nccl.h>

#include "platform/cuda/nccl_api.h"

#define CHECK_VALUE(name, value) _Static_assert((long long)(name) == (value), #name " differs from nccl.h");
TANDEM_NCCL_VALUES(CHECK_VALUE)
#undef CHECK_VALUE

_Static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId size");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(int), "ncclRedOp_t is int-sized in nccl_api.h");
_Static_assert(sizeof(ncclDataType_t) == sizeof(int), "ncclDataType_t is int-sized in nccl_api.h");
_Static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t is int-sized in nccl_api.h");
_Static_assert(NCCL_VERSION_CODE >= TANDEM_NCCL_MIN_VERSION, "the installed nccl.h is older than 2.13");

#define CHECK_SIGNATURE(name, ret, params) tandem_pfn_##name tandem_nccl_check_##name = name;
TANDEM_NCCL_CALLS(CHECK_SIGNATURE)
#undef CHECK_SIGNATURE
