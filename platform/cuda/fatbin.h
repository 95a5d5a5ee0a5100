/* fatbin.h — reading a CUDA fatbin without the CUDA toolkit: which images it holds (SASS for
 * which sm, PTX for which compute capability) and which kernel entry points the SASS defines.
 * Used by diagnose, by the cuda backend to explain a missing architecture, and by tests.
 * Parsing never allocates: results go into the caller's fixed-size summary. */
#ifndef TANDEM_PLATFORM_FATBIN_H
#define TANDEM_PLATFORM_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

#define TANDEM_FATBIN_MAX_IMAGES 32
#define TANDEM_FATBIN_MAX_ENTRIES 256
#define TANDEM_FATBIN_NAME_MAX 96

typedef enum { TANDEM_FATBIN_PTX = 1, TANDEM_FATBIN_SASS = 2 } tandem_fatbin_kind;

typedef struct tandem_fatbin_image {
    tandem_fatbin_kind kind;
    int arch;          /* 80 for sm_80 / compute_80 */
    size_t offset;     /* payload offset in the fatbin */
    size_t size;       /* payload bytes */
    int compressed;    /* payload compressed (entries then not listed) */
} tandem_fatbin_image;

typedef struct tandem_fatbin_summary {
    int image_count;
    tandem_fatbin_image images[TANDEM_FATBIN_MAX_IMAGES];
    /* Kernel entry points (ELF STT_FUNC symbols of global binding) of the first uncompressed
     * SASS image; every SASS image of one build holds the same set. */
    int entry_count;
    char entries[TANDEM_FATBIN_MAX_ENTRIES][TANDEM_FATBIN_NAME_MAX];
} tandem_fatbin_summary;

/* Parse a fatbin (the bytes nvcc -fatbin writes). TANDEM_E_FORMAT with a message naming
 * the offset and what was expected when the bytes are not a fatbin. An empty input
 * (host-only build) gives image_count = 0 and TANDEM_OK. */
tandem_status tandem_fatbin_parse(const void *data, size_t len, tandem_fatbin_summary *out);

/* "sm_80 sm_86 sm_89 sm_90 compute_90" */
void tandem_fatbin_arch_string(const tandem_fatbin_summary *s, char *buf, size_t cap);

/* Whether a device of compute capability major.minor can run this fatbin: SASS for the same
 * major and minor <= device minor, or PTX for a compute capability <= the device's. */
int tandem_fatbin_runs_on(const tandem_fatbin_summary *s, int cc_major, int cc_minor);

/* The fatbin embedded in libtandem.a (empty in a host-only build). */
extern const unsigned char tandem_fatbin_embedded[];
extern const uint64_t tandem_fatbin_embedded_size;

/* The fatbin the runtime loads: $TANDEM_FATBIN if set (read into *owned, caller frees with
 * tandem_free), else the embedded one. */
tandem_status tandem_fatbin_load(const void **data, size_t *len, void **owned);

#endif
