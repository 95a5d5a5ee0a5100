/* staging.c — the pinned host staging plan: declaration, allocation, report (see staging.h). */
#include "runtime/core/staging.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/strbuf.h"
#include "runtime/core/dev.h"
#include "runtime/core/pool_internal.h"

static size_t align_up(size_t x) {
    return (x + TANDEM_STAGING_ALIGN - 1) / TANDEM_STAGING_ALIGN * TANDEM_STAGING_ALIGN;
}

void tandem_staging_init(tandem_staging_plan *p) {
    if (p) memset(p, 0, sizeof *p);
}

tandem_status tandem_staging_begin(tandem_staging_plan *p, const char *name, const char *device,
                                   tandem_staging_when when, const char *purpose, int *index) {
    if (!p || !name || !device || !purpose)
        return tandem_fail(TANDEM_E_INVALID, "tandem_staging_begin: NULL argument");
    if (!name[0] || strlen(name) >= TANDEM_STAGING_NAME_MAX)
        return tandem_fail(TANDEM_E_INVALID, "pinned staging: block name '%.60s': expected 1 to %d bytes",
                           name, TANDEM_STAGING_NAME_MAX - 1);
    if (tandem_staging_find(p, name) >= 0)
        return tandem_fail(TANDEM_E_INVALID, "pinned staging: block '%s' declared twice; block names are "
                           "unique within a plan", name);
    if (p->n_blocks == TANDEM_STAGING_MAX_BLOCKS)
        return tandem_fail(TANDEM_E_INVALID, "pinned staging: block '%s': the plan holds at most %d blocks "
                           "(TANDEM_STAGING_MAX_BLOCKS)", name, TANDEM_STAGING_MAX_BLOCKS);
    tandem_staging_block *b = &p->block[p->n_blocks];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->device = device;
    b->purpose = purpose;
    b->when = when;
    b->first = p->n_bufs;
    if (index) *index = p->n_blocks;
    p->n_blocks++;
    return TANDEM_OK;
}

tandem_status tandem_staging_add(tandem_staging_plan *p, const char *name, tandem_dtype dtype,
                                 int ndim, int64_t d0, int64_t d1, int64_t d2) {
    if (!p || !name) return tandem_fail(TANDEM_E_INVALID, "tandem_staging_add: NULL argument");
    if (p->n_blocks == 0)
        return tandem_fail(TANDEM_E_STATE, "pinned staging: buffer '%s' added before any block "
                           "(call tandem_staging_begin first)", name);
    tandem_staging_block *b = &p->block[p->n_blocks - 1];
    const int64_t dims[3] = {d0, d1, d2};
    const size_t esize = tandem_dtype_size(dtype);
    if (!name[0] || strlen(name) >= TANDEM_STAGING_NAME_MAX || ndim < 1 || ndim > 3 || esize == 0)
        return tandem_fail(TANDEM_E_INVALID, "pinned staging: block '%s', buffer '%.60s': expected a "
                           "name of 1 to %d bytes, 1 to 3 dimensions and a known dtype (got %d, dtype %d)",
                           b->name, name, TANDEM_STAGING_NAME_MAX - 1, ndim, (int)dtype);
    if (p->n_bufs == TANDEM_STAGING_MAX_BUFS)
        return tandem_fail(TANDEM_E_INVALID, "pinned staging: block '%s', buffer '%s': the plan holds at "
                           "most %d buffers (TANDEM_STAGING_MAX_BUFS)", b->name, name, TANDEM_STAGING_MAX_BUFS);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 1 || (uint64_t)dims[i] > SIZE_MAX / esize / numel)
            return tandem_fail(TANDEM_E_INVALID, "pinned staging: block '%s', buffer '%s': dimension %d is "
                               "%" PRId64 ", expected 1 or more (and an addressable size)", b->name, name, i, dims[i]);
        numel *= (size_t)dims[i];
    }
    tandem_staging_buf *x = &p->buf[p->n_bufs++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->dtype = dtype;
    x->ndim = ndim;
    memcpy(x->shape, dims, sizeof dims);
    x->offset = b->bytes; /* the previous end, already aligned */
    x->bytes = numel * esize;
    b->bytes = align_up(x->offset + x->bytes);
    b->count++;
    return TANDEM_OK;
}

int tandem_staging_find(const tandem_staging_plan *p, const char *name) {
    for (int i = 0; p && name && i < p->n_blocks; i++)
        if (strcmp(p->block[i].name, name) == 0) return i;
    return -1;
}

size_t tandem_staging_total(const tandem_staging_plan *p, int peer) {
    size_t sum = 0;
    for (int i = 0; p && i < p->n_blocks; i++)
        if (!peer || p->block[i].when != TANDEM_STAGING_NO_PEER) sum += p->block[i].bytes;
    return sum;
}

tandem_status tandem_staging_alloc(tandem_device *dev, const tandem_staging_plan *p, int block,
                                   void **base) {
    if (!dev || !p || !base || block < 0 || block >= p->n_blocks)
        return tandem_fail(TANDEM_E_INVALID, "tandem_staging_alloc: bad argument (block %d of %d)", block,
                           p ? p->n_blocks : 0);
    *base = NULL;
    const tandem_staging_block *b = &p->block[block];
    if (b->bytes == 0)
        return tandem_fail(TANDEM_E_INVALID, "pinned staging '%s': the block has no buffers", b->name);
    tandem_status st = tandem_dev_pinned_alloc(dev, b->bytes, base);
    if (st != TANDEM_OK)
        return tandem_fail(st, "pinned staging '%s' (%zu bytes): %s", b->name, b->bytes,
                           tandem_last_error());
    memset(*base, 0, b->bytes); /* deterministic content until the first fill */
    return TANDEM_OK;
}

void tandem_staging_free(tandem_device *dev, void *base) {
    tandem_dev_pinned_free(dev, base);
}

void *tandem_staging_ptr(const tandem_staging_plan *p, int block, void *base, int i) {
    const tandem_staging_block *b = &p->block[block];
    return (char *)base + p->buf[b->first + i].offset;
}

size_t tandem_staging_report(const tandem_staging_plan *p, char *buf, size_t cap) {
    tandem_strbuf o = {buf, cap, 0};
    if (cap) buf[0] = 0;
    if (!p) return 0;
    char h1[32], h2[32], sh[96];
    tandem_strbuf_printf(&o, "pinned host staging (page-locked, alignment %d B): %d blocks, %d buffers\n",
                         TANDEM_STAGING_ALIGN, p->n_blocks, p->n_bufs);
    for (int i = 0; i < p->n_blocks; i++) {
        const tandem_staging_block *b = &p->block[i];
        tandem_strbuf_printf(&o, "  %-16s %-13s %12s  %s%s\n", b->name, b->device,
                             tandem_bytes_text(b->bytes, h1, sizeof h1), b->purpose,
                             b->when == TANDEM_STAGING_NO_PEER ? " (only without peer access)" : "");
        for (int j = b->first; j < b->first + b->count; j++) {
            const tandem_staging_buf *x = &p->buf[j];
            tandem_strbuf_printf(&o, "    %-28s %-4s %-20s %12s  @ %zu\n", x->name, tandem_dtype_name(x->dtype),
                                 tandem_shape_text(x->ndim, x->shape, sh, sizeof sh),
                                 tandem_bytes_text(x->bytes, h2, sizeof h2), x->offset);
        }
    }
    const size_t all = tandem_staging_total(p, 0), peer = tandem_staging_total(p, 1);
    tandem_strbuf_printf(&o, "  total            %26s  (%zu bytes)", tandem_bytes_text(all, h1, sizeof h1), all);
    if (peer != all)
        tandem_strbuf_printf(&o, "; %s (%zu bytes) when the devices have peer access",
                             tandem_bytes_text(peer, h2, sizeof h2), peer);
    tandem_strbuf_printf(&o, "\n");
    return o.len;
}
