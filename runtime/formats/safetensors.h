/* safetensors.h — the safetensors file format (https://github.com/huggingface/safetensors),
 * written and read by the runtime for checkpoints:
 *
 *   u64 little-endian N | N bytes of JSON header, padded with spaces so 8 + N is a multiple of 8 |
 *   data (each tensor's bytes, little-endian, row-major, back to back with no gaps)
 *
 *   header = {"__metadata__": {"key": "value", ...},
 *             "name": {"dtype": "F32", "shape": [d0, d1], "data_offsets": [begin, end]}, ...}
 *
 * data_offsets are relative to the start of the data; end - begin = numel * dtype size.
 * Dtypes handled: F32, BF16, F16, I32, U8 (tandem_dtype).
 *
 * Owns: the writer (tensor list and fixed buffers sized at create, so writing allocates nothing
 * and can happen during training) and the reader (reads the whole file into memory it owns —
 * never a mapping, so a file truncated or rewritten while in use cannot fault — validates it
 * strictly with its own JSON parser, then hands out pointers into its copy). Assumes a little-endian host
 * (checked at create/open: TANDEM_E_UNSUPPORTED otherwise). */
#ifndef TANDEM_RUNTIME_SAFETENSORS_H
#define TANDEM_RUNTIME_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

/* Headers larger than this are rejected by the reader (the safetensors reference limit). */
#define TANDEM_ST_MAX_HEADER (100u * 1024u * 1024u)

/* Copies bytes [offset, offset + bytes) of a tensor's data into dst. ctx is given to
 * tandem_st_write, user is the tensor's user pointer. Called from tandem_st_write only for
 * tensors whose data pointer is NULL, in chunks of at most the writer's chunk size; with
 * chunk_bytes = 0 at create, once per tensor with offset 0 and the whole size. On failure it
 * returns the status with its message set through tandem_fail (the write adds file and tensor). */
typedef tandem_status (*tandem_st_fetch_fn)(void *ctx, void *user, void *dst, size_t offset,
                                            size_t bytes);

typedef struct tandem_st_tensor {
    const char *name;  /* unique, non-empty, not "__metadata__"; copied at create */
    tandem_dtype dtype;
    int ndim;          /* 0 (a scalar) .. TANDEM_MAX_DIMS */
    int64_t shape[TANDEM_MAX_DIMS];
    const void *data;  /* host bytes read at each write, or NULL to use the fetch callback */
    void *user;        /* handed to the fetch callback */
} tandem_st_tensor;

typedef struct tandem_st_meta {
    const char *key;   /* any UTF-8; JSON-escaped on write */
    const char *value;
} tandem_st_meta;

/* ---- writer ---- */

typedef struct tandem_st_writer tandem_st_writer;

/* Validate the tensor list and size the buffers: the header (tensors, plus room for up to
 * meta_bytes_max bytes of metadata keys and values before escaping) and a fetch chunk
 * (chunk_bytes; 0 = the largest tensor that has no data pointer). The only allocations. */
tandem_status tandem_st_writer_create(const tandem_st_tensor *tensors, int count,
                                      size_t meta_bytes_max, size_t chunk_bytes,
                                      tandem_st_writer **out);
void tandem_st_writer_free(tandem_st_writer *w);
/* Bytes a write with this metadata produces (header + data). */
tandem_status tandem_st_writer_file_size(tandem_st_writer *w, const tandem_st_meta *meta,
                                         int meta_count, uint64_t *bytes);
/* Write the file atomically (temp, fsync, rename, fsync directory). Metadata keys must be
 * unique. No heap allocation. fetch may be NULL when every tensor has a data pointer. */
tandem_status tandem_st_write(tandem_st_writer *w, const char *path, const tandem_st_meta *meta,
                              int meta_count, tandem_st_fetch_fn fetch, void *ctx);

/* A fetch callback for committed pool tensors: ctx is a tandem_stream * of the tensor's
 * device, user a tandem_tensor *. Downloads the whole tensor and waits for the stream, so the
 * writer must be created with chunk_bytes = 0. */
tandem_status tandem_st_fetch_pool_tensor(void *ctx, void *user, void *dst, size_t offset,
                                          size_t bytes);

/* ---- reader ---- */

typedef struct tandem_st_info {
    const char *name;
    tandem_dtype dtype;
    int ndim;
    int64_t shape[TANDEM_MAX_DIMS];
    const void *data;  /* into the reader's copy; may be unaligned for its dtype: copy with memcpy */
    size_t bytes;
    uint64_t begin, end; /* data_offsets as stored */
} tandem_st_info;

typedef struct tandem_st_file tandem_st_file;

/* Read path whole (bounded reads; a file that changes size or mtime while read is
 * TANDEM_E_IO naming it) and validate it: header length against the file size, JSON syntax (strict),
 * dtypes, shapes, data_offsets in bounds, matching dtype x shape, contiguous, covering the
 * data exactly. Anything wrong → TANDEM_E_FORMAT naming the file, the byte offset in the
 * header and the field. Allocates (the file's bytes and the entry table): open checkpoints
 * before the pool commit. */
tandem_status tandem_st_open(const char *path, tandem_st_file **out);
/* The same on bytes already in memory (which must outlive the handle); label names them in
 * errors. */
tandem_status tandem_st_open_memory(const void *data, size_t len, const char *label,
                                    tandem_st_file **out);
void tandem_st_close(tandem_st_file *f);

int tandem_st_count(const tandem_st_file *f);
/* Tensors in header order. */
const tandem_st_info *tandem_st_get(const tandem_st_file *f, int i);
/* NULL when absent. */
const tandem_st_info *tandem_st_find(const tandem_st_file *f, const char *name);
int tandem_st_meta_count(const tandem_st_file *f);
const tandem_st_meta *tandem_st_meta_get(const tandem_st_file *f, int i);
/* NULL when absent. */
const char *tandem_st_meta_find(const tandem_st_file *f, const char *key);

/* Copy tensor name into dst after checking that it exists with this dtype and shape
 * (errors name the file, the tensor, what was expected and what was found). */
tandem_status tandem_st_read_tensor(const tandem_st_file *f, const char *name, tandem_dtype dtype,
                                    int ndim, const int64_t *shape, void *dst, size_t bytes);

/* Test hook (test_safetensors.c): when set, tandem_st_open calls it between its first fstat
 * and the read, so a test can change the file under the reader as another process could.
 * NULL outside tests. */
extern void (*tandem_st_test_before_read)(const char *path);

/* "F32", "BF16", "F16", "I32", "U8" (NULL for an unknown value); parse returns 0 when unknown. */
const char *tandem_st_dtype_name(tandem_dtype dt);
int tandem_st_dtype_parse(const char *s, size_t len, tandem_dtype *dt);

#endif
