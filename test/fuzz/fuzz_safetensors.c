/* fuzz_safetensors.c — the safetensors / checkpoint reader (safetensors.h, checkpoint.h) on
 * arbitrary bytes: tandem_st_open_memory (length prefix, strict JSON header, dtypes, shapes,
 * data_offsets, layout), the accessors, tandem_st_read_tensor; and, for inputs the reader
 * accepts, the same bytes as a file through tandem_st_open and tandem_checkpoint_open.
 *
 * Checks beyond "no crash, no leak": failures are TANDEM_E_FORMAT with a message naming the
 * input; an accepted file's tensors have known dtypes, non-negative shapes, bytes = numel x
 * dtype size, data inside the input at the stored offsets, unique names found by name; every
 * metadata key is found by key; read_tensor copies exactly the stored bytes and refuses a
 * wrong dtype, shape or size; the file path agrees with the memory path. */
#include <string.h>

#include "runtime/formats/checkpoint.h"
#include "test/fuzz/fuzz_common.h"
#include "platform/os/os.h"
#include "runtime/formats/safetensors.h"

#define LABEL "fuzz.safetensors"
#define MAX_INPUT (1u << 20)

static void check_tensor(const tandem_st_file *f, const tandem_st_info *t, const uint8_t *data, size_t size) {
    FUZZ_ASSERT(t->name && t->name[0]);
    FUZZ_ASSERT(tandem_st_dtype_name(t->dtype) != NULL);
    FUZZ_ASSERT(t->ndim >= 0 && t->ndim <= TANDEM_MAX_DIMS);
    uint64_t numel = 1;
    int overflow = 0, zero = 0;
    for (int d = 0; d < t->ndim; d++) {
        FUZZ_ASSERT(t->shape[d] >= 0);
        zero |= t->shape[d] == 0;
        overflow |= __builtin_mul_overflow(numel, (uint64_t)t->shape[d], &numel);
    }
    if (zero) numel = 0;
    else FUZZ_ASSERT(!overflow); /* a nonzero tensor's bytes must fit the input */
    FUZZ_ASSERT(t->end >= t->begin && t->end - t->begin == t->bytes);
    if (numel) FUZZ_ASSERT(t->bytes / numel == tandem_dtype_size(t->dtype) && t->bytes % numel == 0);
    else FUZZ_ASSERT(t->bytes == 0);
    const uint8_t *p = t->data;
    FUZZ_ASSERT(p >= data && p <= data + size && t->bytes <= (size_t)(data + size - p));
    FUZZ_ASSERT(tandem_st_find(f, t->name) == t); /* names are unique */

    void *dst = tandem_malloc(t->bytes + 1);
    if (!dst) return;
    fuzz_clear_error();
    tandem_status st = tandem_st_read_tensor(f, t->name, t->dtype, t->ndim, t->shape, dst, t->bytes);
    if (st != TANDEM_OK) fuzz_fail("read_tensor refuses a tensor as listed: %s", tandem_last_error());
    FUZZ_ASSERT(t->bytes == 0 || memcmp(dst, t->data, t->bytes) == 0);
    /* wrong dtype, wrong rank, wrong size: refused with a message, nothing copied past bytes */
    tandem_dtype other = t->dtype == TANDEM_F32 ? TANDEM_I32 : TANDEM_F32;
    fuzz_clear_error();
    st = tandem_st_read_tensor(f, t->name, other, t->ndim, t->shape, dst, t->bytes);
    fuzz_check_status_in(st, "tandem_st_read_tensor", TANDEM_E_FORMAT, -1);
    FUZZ_ASSERT(st != TANDEM_OK);
    if (t->ndim < TANDEM_MAX_DIMS) {
        int64_t shape[TANDEM_MAX_DIMS + 1];
        memcpy(shape, t->shape, sizeof t->shape);
        shape[t->ndim] = 1;
        fuzz_clear_error();
        st = tandem_st_read_tensor(f, t->name, t->dtype, t->ndim + 1, shape, dst, t->bytes);
        fuzz_check_status_in(st, "tandem_st_read_tensor", TANDEM_E_FORMAT, -1);
        FUZZ_ASSERT(st != TANDEM_OK);
    }
    fuzz_clear_error();
    st = tandem_st_read_tensor(f, t->name, t->dtype, t->ndim, t->shape, dst, t->bytes + 1);
    fuzz_check_status_in(st, "tandem_st_read_tensor", TANDEM_E_INVALID, TANDEM_E_FORMAT, -1);
    FUZZ_ASSERT(st != TANDEM_OK);
    tandem_free(dst);
}

static void check_file(const tandem_st_file *f, const uint8_t *data, size_t size) {
    int n = tandem_st_count(f);
    FUZZ_ASSERT(n >= 0);
    for (int i = 0; i < n; i++) check_tensor(f, tandem_st_get(f, i), data, size);
    FUZZ_ASSERT(tandem_st_get(f, -1) == NULL && tandem_st_get(f, n) == NULL);
    int m = tandem_st_meta_count(f);
    FUZZ_ASSERT(m >= 0);
    for (int i = 0; i < m; i++) {
        const tandem_st_meta *kv = tandem_st_meta_get(f, i);
        FUZZ_ASSERT(kv && kv->key && kv->value);
        FUZZ_ASSERT(tandem_st_meta_find(f, kv->key) == kv->value); /* keys are unique */
    }
    FUZZ_ASSERT(tandem_st_meta_get(f, m) == NULL);
    FUZZ_ASSERT(tandem_st_find(f, "") == NULL);
}

/* The same bytes from a file: the same verdict, then the checkpoint's metadata rules. */
static void check_as_file(const uint8_t *data, size_t size, int n_tensors) {
    const char *path = fuzz_write_tmp("safetensors", data, size);
    tandem_st_file *f = NULL;
    fuzz_clear_error();
    tandem_status st = tandem_st_open(path, &f);
    if (st != TANDEM_OK) fuzz_fail("accepted from memory, refused from a file: %s", tandem_last_error());
    FUZZ_ASSERT(tandem_st_count(f) == n_tensors);
    tandem_st_close(f);

    f = NULL;
    fuzz_clear_error();
    st = tandem_checkpoint_open(path, (int64_t)(size & 1 ? 7 : -1), &f);
    fuzz_check_status_in(st, "tandem_checkpoint_open", TANDEM_E_FORMAT, -1);
    if (st == TANDEM_OK) {
        FUZZ_ASSERT(f != NULL);
        const char *ver = tandem_st_meta_find(f, TANDEM_CKPT_KEY_FORMAT_VERSION);
        FUZZ_ASSERT(ver && strcmp(ver, TANDEM_CKPT_FORMAT_VERSION) == 0);
        FUZZ_ASSERT(tandem_st_meta_find(f, TANDEM_CKPT_KEY_STEP) != NULL);
        tandem_st_close(f);
    } else {
        FUZZ_ASSERT(strstr(tandem_last_error(), path) != NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_init();
    if (size > MAX_INPUT) size = MAX_INPUT;
    tandem_st_file *f = NULL;
    fuzz_clear_error();
    tandem_status st = tandem_st_open_memory(data, size, LABEL, &f);
    fuzz_check_status_in(st, "tandem_st_open_memory", TANDEM_E_FORMAT, -1);
    if (st != TANDEM_OK) {
        FUZZ_ASSERT(f == NULL);
        if (st == TANDEM_E_FORMAT && !strstr(tandem_last_error(), LABEL))
            fuzz_fail("error message does not name the input: %s", tandem_last_error());
        return 0;
    }
    FUZZ_ASSERT(f != NULL);
    check_file(f, data, size);
    int n = tandem_st_count(f);
    tandem_st_close(f);
    check_as_file(data, size, n);
    return 0;
}
