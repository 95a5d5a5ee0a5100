/* staging.h — pinned host staging, planned like the arenas (DESIGN.md §4).
 *
 * Page-locked host memory is the runtime's other planned memory: the loader's staged batches,
 * the ring's feature staging (devices without peer access), the model's step I/O, synthesis
 * I/O. Whoever owns a block declares its buffers (name, dtype, shape) into a
 * tandem_staging_plan from the config, before anything is allocated: the declaration places each
 * buffer at a multiple of TANDEM_STAGING_ALIGN inside its block. The owner then allocates each
 * block with exactly the plan's bytes (tandem_staging_alloc) and takes its buffers at the plan's
 * offsets (tandem_staging_ptr); `tandem plan` prints the same plan (tandem_staging_report).
 * Nothing else sizes pinned memory.
 *
 * Owns: nothing; a plan is a plain value (fixed arrays). Blocks are allocated by
 * tandem_staging_alloc on the device whose streams copy from them, before the pools are
 * committed, and freed by tandem_staging_free. Threads: a plan is filled by one thread, then
 * read by any.
 */
#ifndef TANDEM_RUNTIME_STAGING_H
#define TANDEM_RUNTIME_STAGING_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

#define TANDEM_STAGING_ALIGN 64      /* every buffer starts on a cache line */
#define TANDEM_STAGING_MAX_BLOCKS 8
#define TANDEM_STAGING_MAX_BUFS 80   /* 2 staged batches x 4 + 16 ring slots x 4 + the model's 4 */
#define TANDEM_STAGING_NAME_MAX 32

typedef struct tandem_staging_buf {
    char name[TANDEM_STAGING_NAME_MAX]; /* within its block: "audio", "0.mels" */
    tandem_dtype dtype;
    int ndim;                           /* 1 to 3 */
    int64_t shape[3];
    size_t offset; /* from the block's start, a multiple of TANDEM_STAGING_ALIGN */
    size_t bytes;  /* numel * dtype size */
} tandem_staging_buf;

/* When a block is allocated. */
typedef enum tandem_staging_when {
    TANDEM_STAGING_ALWAYS = 0,
    TANDEM_STAGING_NO_PEER, /* only when the data device cannot copy into the model device */
} tandem_staging_when;

/* One pinned allocation and the buffers carved from it. */
typedef struct tandem_staging_block {
    char name[TANDEM_STAGING_NAME_MAX]; /* "loader.0", "ring", "model" */
    const char *device;                 /* whose allocation, for the report (a literal) */
    const char *purpose;                /* one line for the report (a literal) */
    tandem_staging_when when;
    int first, count; /* its buffers: buf[first, first + count) */
    size_t bytes;     /* the allocation: its last buffer's end, rounded to the alignment */
} tandem_staging_block;

typedef struct tandem_staging_plan {
    int n_blocks, n_bufs;
    tandem_staging_block block[TANDEM_STAGING_MAX_BLOCKS];
    tandem_staging_buf buf[TANDEM_STAGING_MAX_BUFS];
} tandem_staging_plan;

/* An empty plan. */
void tandem_staging_init(tandem_staging_plan *p);

/* Start a block; the buffers added next belong to it. device and purpose must outlive the plan
 * (string literals). Block names are unique within a plan. *index (may be NULL) = its index. */
tandem_status tandem_staging_begin(tandem_staging_plan *p, const char *name, const char *device,
                                   tandem_staging_when when, const char *purpose, int *index);
/* Add a buffer dtype [d0, d1, d2] (the first ndim dimensions, each >= 1) to the current block,
 * after its last buffer. */
tandem_status tandem_staging_add(tandem_staging_plan *p, const char *name, tandem_dtype dtype,
                                 int ndim, int64_t d0, int64_t d1, int64_t d2);

/* Index of the block called name, or -1. */
int tandem_staging_find(const tandem_staging_plan *p, const char *name);
/* Bytes the plan allocates: every block, or (peer != 0) all but the TANDEM_STAGING_NO_PEER ones. */
size_t tandem_staging_total(const tandem_staging_plan *p, int peer);

/* Allocate block `block` on dev (page-locked, zero-filled, exactly the block's bytes) into
 * *base. Allocates; call before the pools are committed. Free with tandem_staging_free. */
tandem_status tandem_staging_alloc(tandem_device *dev, const tandem_staging_plan *p, int block,
                                   void **base);
void tandem_staging_free(tandem_device *dev, void *base); /* NULL: nothing */
/* Buffer i (in declaration order) of block `block` allocated at base. */
void *tandem_staging_ptr(const tandem_staging_plan *p, int block, void *base, int i);

/* "pinned host staging: ..." with every block and buffer (device, shape, bytes, offset) and the
 * totals; snprintf contract (returns the length it needs). */
size_t tandem_staging_report(const tandem_staging_plan *p, char *buf, size_t cap);

#endif
