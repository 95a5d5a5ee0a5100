/* pool.c — the tensor pool (tandem.h "memory plan and tensors"): declare fixed-shape tensors,
 * plan them into one arena (planner.c), commit = one device allocation, then addresses.
 *
 * Allocation discipline: tensor records are allocated while declaring (blocks of
 * BLOCK_TENSORS, so handles never move), planning uses a temporary host buffer freed before
 * it returns, commit makes exactly one tandem_dev_mem_alloc. After commit nothing in this file
 * allocates: accessors, copies, reports and stats only read.
 * Threads: declare/plan/commit/destroy belong to one setup thread; after commit the pool is
 * read-only, so accessors and copies may be called from any thread.
 * Owns: the tensor records, the arena (freed by tandem_pool_destroy).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/strbuf.h"
#include "platform/os/os.h"
#include "runtime/core/dev.h"
#include "runtime/core/planner.h"
#include "runtime/core/pool_internal.h"

#define TENSOR_NAME_MAX 96  /* bytes incl. NUL: "model.layers.7.attn.qkv.weight" fits easily */
#define POOL_NAME_MAX 64
#define BLOCK_TENSORS 64
#define REPORT_LARGEST 10

#define DEVICE_ALIGNMENT 256 /* what cuBLASLt and vector loads want on GPUs */
#define HOST_ALIGNMENT 64    /* a cache line; AVX-512 loads */

struct tandem_tensor {
    tandem_pool *pool;
    char name[TENSOR_NAME_MAX];
    tandem_dtype dtype;
    int ndim;
    int64_t shape[TANDEM_MAX_DIMS];
    int64_t numel;
    size_t bytes;
    tandem_lifetime lifetime;
    int first_use, last_use;
    size_t offset; /* valid once planned */
};

typedef struct tensor_block {
    struct tensor_block *next;
    int used;
    tandem_tensor t[BLOCK_TENSORS];
} tensor_block;

typedef enum pool_state { POOL_DECLARING, POOL_PLANNED, POOL_COMMITTED } pool_state;

struct tandem_pool {
    tandem_device *dev; /* NULL: planning-only */
    char name[POOL_NAME_MAX];
    char device_desc[192];
    size_t alignment, budget;
    tensor_block *first, *last;
    int count;
    pool_state state;
    tandem_plan_totals totals; /* valid once planned */
    tandem_dptr base;          /* valid once committed (0 for an empty arena) */
};

/* ---- dtypes ------------------------------------------------------------------------------ */

size_t tandem_dtype_size(tandem_dtype dt) {
    switch (dt) {
    case TANDEM_F32: return 4;
    case TANDEM_BF16: return 2;
    case TANDEM_F16: return 2;
    case TANDEM_I32: return 4;
    case TANDEM_U8: return 1;
    }
    return 0;
}

const char *tandem_dtype_name(tandem_dtype dt) {
    switch (dt) {
    case TANDEM_F32: return "f32";
    case TANDEM_BF16: return "bf16";
    case TANDEM_F16: return "f16";
    case TANDEM_I32: return "i32";
    case TANDEM_U8: return "u8";
    }
    return "?";
}

/* ---- creation ---------------------------------------------------------------------------- */

size_t tandem_pool_backend_alignment(tandem_backend backend) {
    return backend == TANDEM_BACKEND_HOST ? HOST_ALIGNMENT : DEVICE_ALIGNMENT;
}

static tandem_status pool_new(const char *name, size_t budget, tandem_pool **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_pool_create: out is NULL");
    *out = NULL;
    if (!name || !name[0] || strlen(name) >= POOL_NAME_MAX)
        return tandem_fail(TANDEM_E_INVALID,
                           "tandem_pool_create: pool name '%s': expected 1 to %d bytes",
                           name ? name : "(null)", POOL_NAME_MAX - 1);
    tandem_pool *p = tandem_calloc(1, sizeof *p);
    if (!p) return tandem_fail(TANDEM_E_NOMEM, "tandem_pool_create '%s': out of host memory", name);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->budget = budget;
    *out = p;
    return TANDEM_OK;
}

tandem_status tandem_pool_create(tandem_device *dev, const char *name, size_t budget_bytes,
                                 tandem_pool **out) {
    if (!dev) {
        if (out) *out = NULL;
        return tandem_fail(TANDEM_E_INVALID,
                           "tandem_pool_create '%s': device is NULL (use a planning-only pool "
                           "to plan without a device)", name ? name : "(null)");
    }
    TANDEM_TRY(pool_new(name, budget_bytes, out));
    tandem_pool *p = *out;
    p->dev = dev;
    p->alignment = tandem_pool_backend_alignment(dev->info.backend);
    snprintf(p->device_desc, sizeof p->device_desc, "%s:%d (%s)", tandem_dev_backend_name(dev),
             dev->info.ordinal, dev->info.name);
    return TANDEM_OK;
}

tandem_status tandem_pool_create_offline(const char *name, tandem_backend backend,
                                         size_t budget_bytes, tandem_pool **out) {
    TANDEM_TRY(pool_new(name, budget_bytes, out));
    tandem_pool *p = *out;
    p->alignment = tandem_pool_backend_alignment(backend);
    snprintf(p->device_desc, sizeof p->device_desc, "%s (planning only, no device opened)",
             backend == TANDEM_BACKEND_HOST ? "host" : "cuda");
    return TANDEM_OK;
}

void tandem_pool_destroy(tandem_pool *pool) {
    if (!pool) return;
    if (pool->state == POOL_COMMITTED) tandem_dev_mem_free(pool->dev, pool->base);
    for (tensor_block *b = pool->first; b;) {
        tensor_block *next = b->next;
        tandem_free(b);
        b = next;
    }
    tandem_free(pool);
}

/* ---- declaring -------------------------------------------------------------------------------- */

#define FOR_EACH_TENSOR(pool, t)                                                              \
    for (tensor_block *blk_ = (pool)->first; blk_; blk_ = blk_->next)                       \
        for (tandem_tensor *t = blk_->t; t < blk_->t + blk_->used; t++)

static tandem_tensor *find_tensor(tandem_pool *pool, const char *name) {
    FOR_EACH_TENSOR(pool, t) if (strcmp(t->name, name) == 0) return t;
    return NULL;
}

/* "[8, 512, 80]" */
static const char *shape_text(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "[", shape[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

tandem_status tandem_pool_declare(tandem_pool *pool, const char *name, tandem_dtype dtype,
                                  int ndim, const int64_t *shape, tandem_lifetime lifetime,
                                  int first_use, int last_use, tandem_tensor **out) {
    if (out) *out = NULL;
    if (!pool || !name || !shape)
        return tandem_fail(TANDEM_E_INVALID, "tandem_pool_declare: NULL argument");
    if (pool->state == POOL_COMMITTED)
        return tandem_fail(TANDEM_E_STATE,
                           "pool '%s': declare '%s' after commit; every tensor is declared before "
                           "tandem_pool_commit (nothing is allocated after it)", pool->name, name);
    if (!name[0] || strlen(name) >= TENSOR_NAME_MAX)
        return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor name '%.120s': expected 1 to %d bytes",
                           pool->name, name, TENSOR_NAME_MAX - 1);
    if (tandem_dtype_size(dtype) == 0)
        return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor '%s': dtype %d: expected f32, bf16, "
                           "f16, i32 or u8", pool->name, name, (int)dtype);
    if (ndim < 1 || ndim > TANDEM_MAX_DIMS)
        return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor '%s': ndim %d: expected 1 to %d",
                           pool->name, name, ndim, TANDEM_MAX_DIMS);
    int64_t numel = 1;
    size_t esize = tandem_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        char sh[160];
        if (shape[i] <= 0)
            return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor '%s': shape %s: dimension %d is "
                               "%" PRId64 ", expected > 0", pool->name, name,
                               shape_text(ndim, shape, sh, sizeof sh), i, shape[i]);
        if (numel > INT64_MAX / shape[i] || (uint64_t)(numel * shape[i]) > SIZE_MAX / esize)
            return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor '%s': shape %s is too large to "
                               "address", pool->name, name, shape_text(ndim, shape, sh, sizeof sh));
        numel *= shape[i];
    }
    if (lifetime != TANDEM_PERSISTENT && lifetime != TANDEM_PER_STEP)
        return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor '%s': lifetime %d: expected "
                           "TANDEM_PERSISTENT or TANDEM_PER_STEP", pool->name, name, (int)lifetime);
    if (lifetime == TANDEM_PER_STEP && (first_use < 0 || first_use > last_use))
        return tandem_fail(TANDEM_E_INVALID, "pool '%s': per-step tensor '%s': uses %d..%d: expected "
                           "0 <= first_use <= last_use", pool->name, name, first_use, last_use);
    if (find_tensor(pool, name))
        return tandem_fail(TANDEM_E_INVALID, "pool '%s': tensor '%s' declared twice; names are unique "
                           "within a pool", pool->name, name);

    if (!pool->last || pool->last->used == BLOCK_TENSORS) {
        tensor_block *b = tandem_calloc(1, sizeof *b);
        if (!b)
            return tandem_fail(TANDEM_E_NOMEM, "pool '%s': out of host memory declaring '%s'",
                               pool->name, name);
        if (pool->last) pool->last->next = b;
        else pool->first = b;
        pool->last = b;
    }
    tandem_tensor *t = &pool->last->t[pool->last->used++];
    memset(t, 0, sizeof *t);
    t->pool = pool;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    t->numel = numel;
    t->bytes = (size_t)numel * esize;
    t->lifetime = lifetime;
    t->first_use = lifetime == TANDEM_PER_STEP ? first_use : 0;
    t->last_use = lifetime == TANDEM_PER_STEP ? last_use : 0;
    pool->count++;
    pool->state = POOL_DECLARING; /* a new tensor invalidates an earlier plan */
    if (out) *out = t;
    return TANDEM_OK;
}

/* ---- report ------------------------------------------------------------------------------------ */

static const char *human(size_t b, char *buf, size_t cap) {
    if (b >= ((size_t)1 << 30)) snprintf(buf, cap, "%.2f GiB", (double)b / (1 << 30));
    else if (b >= ((size_t)1 << 20)) snprintf(buf, cap, "%.2f MiB", (double)b / (1 << 20));
    else if (b >= 1024) snprintf(buf, cap, "%.2f KiB", (double)b / 1024);
    else snprintf(buf, cap, "%zu B", b);
    return buf;
}

const char *tandem_shape_text(int ndim, const int64_t *shape, char *buf, size_t cap) {
    return shape_text(ndim, shape, buf, cap);
}

const char *tandem_bytes_text(size_t bytes, char *buf, size_t cap) { return human(bytes, buf, cap); }

/* The REPORT_LARGEST largest tensors, largest first (ties: declaration order). */
static int largest(const tandem_pool *pool, const tandem_tensor **top) {
    int n = 0;
    FOR_EACH_TENSOR(pool, t) {
        int pos = n < REPORT_LARGEST ? n : REPORT_LARGEST;
        while (pos > 0 && top[pos - 1]->bytes < t->bytes) pos--;
        if (pos >= REPORT_LARGEST) continue;
        int last = n < REPORT_LARGEST ? n : REPORT_LARGEST - 1;
        for (int k = last; k > pos; k--) top[k] = top[k - 1];
        top[pos] = t;
        if (n < REPORT_LARGEST) n++;
    }
    return n;
}

static size_t class_bytes(const tandem_pool *pool, tandem_lifetime lt, int *count) {
    size_t sum = 0;
    *count = 0;
    FOR_EACH_TENSOR(pool, t) if (t->lifetime == lt) sum += t->bytes, (*count)++;
    return sum;
}

size_t tandem_pool_report(const tandem_pool *pool, char *buf, size_t cap) {
    tandem_strbuf o = {buf, cap, 0};
    if (cap) buf[0] = 0;
    if (!pool) return 0;
    char h1[32], h2[32], h3[32];
    int np, ns;
    size_t pb = class_bytes(pool, TANDEM_PERSISTENT, &np), sb = class_bytes(pool, TANDEM_PER_STEP, &ns);
    tandem_strbuf_printf(&o, "arena '%s' on %s, alignment %zu B, %d tensors%s\n", pool->name, pool->device_desc,
         pool->alignment, pool->count,
         pool->state == POOL_COMMITTED ? ", committed" : pool->state == POOL_PLANNED ? "" : " (not planned yet)");
    const tandem_plan_totals *t = &pool->totals;
    int planned = pool->state != POOL_DECLARING;
    tandem_strbuf_printf(&o, "  persistent      %12s  (%d tensors, %s before alignment)\n",
         planned ? human(t->persistent_bytes, h1, sizeof h1) : "-", np, human(pb, h2, sizeof h2));
    tandem_strbuf_printf(&o, "  per-step peak   %12s  (%d tensors; %s without overlaying)\n",
         planned ? human(t->per_step_peak, h1, sizeof h1) : "-", ns,
         human(planned ? t->per_step_sum : sb, h2, sizeof h2));
    if (planned) tandem_strbuf_printf(&o, "  arena           %12s  (%zu bytes)\n", human(t->arena_bytes, h1, sizeof h1), t->arena_bytes);
    if (!pool->budget) tandem_strbuf_printf(&o, "  budget          %12s\n", "unlimited");
    else if (planned && t->arena_bytes > pool->budget)
        tandem_strbuf_printf(&o, "  budget          %12s  OVER by %s\n", human(pool->budget, h1, sizeof h1),
             human(t->arena_bytes - pool->budget, h2, sizeof h2));
    else if (planned)
        tandem_strbuf_printf(&o, "  budget          %12s  (%s free)\n", human(pool->budget, h1, sizeof h1),
             human(pool->budget - t->arena_bytes, h2, sizeof h2));
    else tandem_strbuf_printf(&o, "  budget          %12s\n", human(pool->budget, h1, sizeof h1));

    const tandem_tensor *top[REPORT_LARGEST];
    int n = largest(pool, top);
    if (n) tandem_strbuf_printf(&o, "  largest tensors:\n");
    for (int i = 0; i < n; i++) {
        const tandem_tensor *x = top[i];
        char sh[160], life[48], off[40];
        shape_text(x->ndim, x->shape, sh, sizeof sh);
        if (x->lifetime == TANDEM_PERSISTENT) snprintf(life, sizeof life, "persistent");
        else snprintf(life, sizeof life, "per-step %d..%d", x->first_use, x->last_use);
        if (planned) snprintf(off, sizeof off, "@ %zu", x->offset);
        else off[0] = 0;
        tandem_strbuf_printf(&o, "    %-30s %-4s %-20s %12s  %-16s %s\n", x->name, tandem_dtype_name(x->dtype), sh,
             human(x->bytes, h3, sizeof h3), life, off);
    }
    return o.len;
}

/* The report through the log hook, one line per call (the hook takes single lines). */
static void log_report(const tandem_pool *pool, tandem_log_level level) {
    char text[4096];
    tandem_pool_report(pool, text, sizeof text);
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        tandem_logf(level, "%s", line);
        if (!nl) break;
        line = nl + 1;
    }
}

/* ---- plan and commit ----------------------------------------------------------------------- */

static tandem_status place(tandem_pool *pool);

/* Plan if anything was declared since the last plan; then the budget check, every time, so
 * that a commit after a failed plan fails the same way. */
tandem_status tandem_pool_plan(tandem_pool *pool) {
    if (!pool) return tandem_fail(TANDEM_E_INVALID, "tandem_pool_plan: pool is NULL");
    if (pool->state == POOL_DECLARING) TANDEM_TRY(place(pool));
    const tandem_plan_totals *totals = &pool->totals;
    if (pool->budget && totals->arena_bytes > pool->budget) {
        char h1[32], h2[32];
        log_report(pool, TANDEM_LOG_ERROR);
        const tandem_tensor *top[REPORT_LARGEST];
        int nt = largest(pool, top);
        char sh[160];
        return tandem_fail(TANDEM_E_BUDGET,
                           "pool '%s' on %s: the plan needs %s (%zu bytes) but the budget is %s; "
                           "largest tensor '%s' %s %s (plan report logged)",
                           pool->name, pool->device_desc, human(totals->arena_bytes, h1, sizeof h1),
                           totals->arena_bytes, human(pool->budget, h2, sizeof h2),
                           nt ? top[0]->name : "", nt ? tandem_dtype_name(top[0]->dtype) : "",
                           nt ? shape_text(top[0]->ndim, top[0]->shape, sh, sizeof sh) : "");
    }
    return TANDEM_OK;
}

/* Run the planner over the declared tensors and store offsets and totals. */
static tandem_status place(tandem_pool *pool) {
    int n = pool->count;
    tandem_plan_item *items = NULL;
    size_t *offsets = NULL;
    int *scratch = NULL;
    void *mem = NULL;
    if (n > 0) {
        /* one temporary block, freed before returning: items | offsets | scratch */
        size_t bytes = (size_t)n * (sizeof *items + sizeof *offsets) +
                       TANDEM_PLANNER_SCRATCH_INTS(n) * sizeof(int);
        mem = tandem_malloc(bytes);
        if (!mem)
            return tandem_fail(TANDEM_E_NOMEM, "pool '%s': out of host memory planning %d tensors",
                               pool->name, n);
        items = mem;
        offsets = (size_t *)(items + n);
        scratch = (int *)(offsets + n);
    }
    int i = 0;
    FOR_EACH_TENSOR(pool, t) {
        items[i++] = (tandem_plan_item){.size = t->bytes, .alignment = pool->alignment,
                                        .lifetime = t->lifetime, .first_use = t->first_use,
                                        .last_use = t->last_use};
    }
    tandem_plan_totals totals;
    tandem_status st = tandem_planner_place(items, n, offsets, scratch, &totals);
    if (st == TANDEM_OK) {
        i = 0;
        FOR_EACH_TENSOR(pool, t) t->offset = offsets[i++];
        pool->totals = totals;
        pool->state = POOL_PLANNED;
    }
    tandem_free(mem);
    return st;
}

tandem_status tandem_pool_commit(tandem_pool *pool) {
    if (!pool) return tandem_fail(TANDEM_E_INVALID, "tandem_pool_commit: pool is NULL");
    if (!pool->dev)
        return tandem_fail(TANDEM_E_STATE, "pool '%s' is planning-only (no device): it cannot be "
                           "committed", pool->name);
    if (pool->state == POOL_COMMITTED)
        return tandem_fail(TANDEM_E_STATE, "pool '%s': already committed", pool->name);
    TANDEM_TRY(tandem_pool_plan(pool)); /* a budget failure stops here, before device work */
    tandem_dptr base = 0;
    if (pool->totals.arena_bytes > 0) {
        TANDEM_TRY(tandem_dev_mem_alloc(pool->dev, pool->totals.arena_bytes, &base));
        if (base % pool->totals.max_alignment != 0) {
            tandem_dev_mem_free(pool->dev, base);
            return tandem_fail(TANDEM_E_INTERNAL, "pool '%s': the %s backend returned an arena at "
                               "0x%" PRIx64 ", not aligned to %zu bytes", pool->name,
                               tandem_dev_backend_name(pool->dev), base,
                               pool->totals.max_alignment);
        }
    }
    pool->base = base;
    pool->state = POOL_COMMITTED;
    char h[32];
    tandem_logf(TANDEM_LOG_DEBUG, "pool '%s': committed %s on %s for %d tensors", pool->name,
                human(pool->totals.arena_bytes, h, sizeof h), pool->device_desc, pool->count);
    return TANDEM_OK;
}

void tandem_pool_get_stats(const tandem_pool *pool, tandem_pool_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!pool) return;
    int unused;
    out->budget_bytes = pool->budget;
    out->tensor_count = pool->count;
    if (pool->state == POOL_DECLARING) {
        /* not planned: the sums are known, the overlay is not */
        out->per_step_sum = class_bytes(pool, TANDEM_PER_STEP, &unused);
        return;
    }
    out->persistent_bytes = pool->totals.persistent_bytes;
    out->per_step_peak = pool->totals.per_step_peak;
    out->per_step_sum = pool->totals.per_step_sum;
    out->arena_bytes = pool->totals.arena_bytes;
}

/* ---- tensors ----------------------------------------------------------------------------------- */

const char *tandem_tensor_name(const tandem_tensor *t) { return t ? t->name : ""; }
tandem_dtype tandem_tensor_dtype(const tandem_tensor *t) { return t->dtype; }
int tandem_tensor_ndim(const tandem_tensor *t) { return t->ndim; }
int64_t tandem_tensor_dim(const tandem_tensor *t, int i) {
    return i >= 0 && i < t->ndim ? t->shape[i] : 0;
}
int64_t tandem_tensor_numel(const tandem_tensor *t) { return t->numel; }
size_t tandem_tensor_bytes(const tandem_tensor *t) { return t->bytes; }
size_t tandem_tensor_offset(const tandem_tensor *t) { return t->offset; }
uint64_t tandem_tensor_addr(const tandem_tensor *t) {
    if (!t || t->pool->state != POOL_COMMITTED) return 0;
    return t->pool->base + t->offset;
}
tandem_device *tandem_tensor_device(const tandem_tensor *t) { return t ? t->pool->dev : NULL; }

/* ---- copies ------------------------------------------------------------------------------------- */

static tandem_status check_committed(const char *op, const tandem_tensor *t) {
    if (t->pool->state != POOL_COMMITTED)
        return tandem_fail(TANDEM_E_STATE, "%s: tensor '%s' of pool '%s' has no memory yet; commit "
                           "the pool first", op, t->name, t->pool->name);
    return TANDEM_OK;
}

static tandem_status check_stream(const char *op, const tandem_stream *s, const tandem_tensor *t) {
    if (s->dev != t->pool->dev)
        return tandem_fail(TANDEM_E_INVALID, "%s: stream on %s:%d, tensor '%s' on %s; use a stream of "
                           "the tensor's device", op, tandem_dev_backend_name(s->dev),
                           s->dev->info.ordinal, t->name, t->pool->device_desc);
    return TANDEM_OK;
}

static tandem_status check_bytes(const char *op, const tandem_tensor *t, size_t bytes) {
    if (bytes != t->bytes) {
        char sh[160];
        return tandem_fail(TANDEM_E_INVALID, "%s: %zu bytes for tensor '%s' %s %s, expected %zu (whole "
                           "tensor)", op, bytes, t->name, tandem_dtype_name(t->dtype),
                           shape_text(t->ndim, t->shape, sh, sizeof sh), t->bytes);
    }
    return TANDEM_OK;
}

tandem_status tandem_tensor_upload(tandem_stream *s, tandem_tensor *t, const void *src, size_t bytes) {
    static const char op[] = "tandem_tensor_upload";
    if (!s || !t || !src) return tandem_fail(TANDEM_E_INVALID, "%s: NULL argument", op);
    TANDEM_TRY(check_committed(op, t));
    TANDEM_TRY(check_stream(op, s, t));
    TANDEM_TRY(check_bytes(op, t, bytes));
    return tandem_dev_upload(s, t, 0, src, bytes);
}

tandem_status tandem_tensor_download(tandem_stream *s, void *dst, const tandem_tensor *t, size_t bytes) {
    static const char op[] = "tandem_tensor_download";
    if (!s || !t || !dst) return tandem_fail(TANDEM_E_INVALID, "%s: NULL argument", op);
    TANDEM_TRY(check_committed(op, t));
    TANDEM_TRY(check_stream(op, s, t));
    TANDEM_TRY(check_bytes(op, t, bytes));
    return tandem_dev_download(s, dst, t, 0, bytes);
}

tandem_status tandem_tensor_copy(tandem_stream *s, tandem_tensor *dst, const tandem_tensor *src) {
    static const char op[] = "tandem_tensor_copy";
    if (!s || !dst || !src) return tandem_fail(TANDEM_E_INVALID, "%s: NULL argument", op);
    TANDEM_TRY(check_committed(op, dst));
    TANDEM_TRY(check_committed(op, src));
    TANDEM_TRY(check_bytes(op, dst, src->bytes));
    tandem_device *dd = dst->pool->dev, *sd = src->pool->dev;
    if (dd == sd) {
        TANDEM_TRY(check_stream(op, s, src));
        return tandem_dev_copy(s, dst, 0, src, 0, src->bytes);
    }
    /* across devices the copy runs on the source device's stream (copy_peer's contract) */
    if (s->dev != sd)
        return tandem_fail(TANDEM_E_INVALID, "%s '%s' -> '%s': across devices the stream must belong "
                           "to the source device %s", op, src->name, dst->name, src->pool->device_desc);
    if (!tandem_device_can_access_peer(dd, sd))
        return tandem_fail(TANDEM_E_UNSUPPORTED, "%s '%s' (%s) -> '%s' (%s): no peer access between "
                           "the devices; staged copies go through the ring's pinned host buffers "
                           "(download, then upload)", op, src->name, src->pool->device_desc,
                           dst->name, dst->pool->device_desc);
    return tandem_dev_copy_peer(s, dst, src);
}
