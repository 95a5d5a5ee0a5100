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
    int version_major, version_minor; /* PTX: the PTX ISA version (9.0); SASS: the ELF ABI version */
} tandem_fatbin_image;

typedef struct tandem_fatbin_summary {
    int image_count;
    tandem_fatbin_image images[TANDEM_FATBIN_MAX_IMAGES];
    /* Kernel entry points (ELF STT_FUNC symbols of global binding) of the first uncompressed
     * SASS image; every SASS image of one build holds the same set. */
    int entry_count;
    char entries[TANDEM_FATBIN_MAX_ENTRIES][TANDEM_FATBIN_NAME_MAX];
    /* The toolkit that built the first uncompressed SASS image, from its .note.nv.tkinfo
     * ("Cuda compilation tools, release 13.0, ..."), as a CUDA version (13000); 0 if unknown. */
    int toolkit_version;
} tandem_fatbin_summary;

/* The CUDA version a driver must support to load this fatbin (cuDriverGetVersion >= it):
 * the toolkit's major version (SASS built by 13.x runs on any 13.x driver: minor version
 * compatibility) and, for PTX, the CUDA release that introduced its PTX ISA (9.0 -> 13.0; a
 * driver JIT-compiles only the ISA versions it knows). 0 for an empty fatbin. */
int tandem_fatbin_driver_floor(const tandem_fatbin_summary *s);
/* The CUDA version that introduced PTX ISA major.minor (7.x -> 11.x, 8.0-8.5 -> 12.0-12.5,
 * 8.6-8.8 -> 12.7-12.9, 9.x -> 13.x), as 13000; 0 if unknown. */
int tandem_fatbin_ptx_isa_cuda(int major, int minor);

/* Resources of one kernel as compiled into a SASS image (the cubin), what the driver checks
 * at launch: registers per thread (EIATTR_REGCOUNT in .nv.info, else bits 24-31 of
 * .text.<name>'s section info), static shared memory (size of .nv.shared.<name>; on sm_90 it
 * includes the 1 KiB the system reserves per block), and the block size its __launch_bounds__
 * allow (EIATTR_MAX_THREADS in .nv.info.<name>; 0 without launch bounds). */
typedef struct tandem_fatbin_kernel_attrs {
    int registers;
    unsigned static_shared;
    unsigned max_threads;
} tandem_fatbin_kernel_attrs;
/* TANDEM_E_INVALID when image is not an uncompressed SASS image of
 * data or holds no kernel of that name; TANDEM_E_FORMAT when its ELF is malformed. */
tandem_status tandem_fatbin_kernel_attrs_of(const void *data, size_t len, const tandem_fatbin_image *img,
                                            const char *name, tandem_fatbin_kernel_attrs *out);
/* The SASS image a device of compute capability major.minor runs (same major, the highest
 * minor <= the device's), or NULL (it would JIT the PTX). */
const tandem_fatbin_image *tandem_fatbin_sass_for(const tandem_fatbin_summary *s, int cc_major, int cc_minor);

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
