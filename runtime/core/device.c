/* device.c — the public device, stream and event API of tandem.h: argument checks, backend
 * selection (auto = cuda when a driver with devices is present, else host), and dispatch
 * through each device's backend table (platform/device.h).
 * Owns: the stream and event handles (allocated here at create, before any commit). */
#include <stdatomic.h>

#include "platform/device.h"
#include "platform/os/log.h"
#include "platform/os/os.h"

/* The "using the host backend" notice is printed once per process, not once per call. */
static atomic_flag host_notice_done = ATOMIC_FLAG_INIT;

static void host_notice(const char *fmt, const char *why) {
    if (!atomic_flag_test_and_set(&host_notice_done)) tandem_logf(TANDEM_LOG_DEBUG, fmt, why);
}

/* AUTO: no driver → host (with a notice); a driver that is present but fails → that error,
 * never a silent fallback; a driver without devices → host (with a notice). */
static tandem_status resolve_auto(tandem_backend *out, int *cuda_count) {
    int n = 0;
    tandem_status st = tandem_cuda_device_count(&n);
    if (st == TANDEM_E_NODRIVER) {
        const char *why = tandem_cuda_driver_status();
        /* DEBUG: on a CPU-only machine this is the normal case (tandem diagnose reports the driver) */
        host_notice("no CUDA driver (%s): using the host backend", why && why[0] ? why : tandem_last_error());
        *out = TANDEM_BACKEND_HOST;
        return TANDEM_OK;
    }
    if (st != TANDEM_OK)
        return tandem_fail(st, "the CUDA driver is present but failed (not falling back to the host "
                               "backend): %s",
                           tandem_last_error());
    if (n == 0) {
        host_notice("%s", "CUDA driver loaded but it reports no devices: using the host backend");
        *out = TANDEM_BACKEND_HOST;
        return TANDEM_OK;
    }
    *out = TANDEM_BACKEND_CUDA;
    if (cuda_count) *cuda_count = n;
    return TANDEM_OK;
}

static tandem_status check_backend(tandem_backend backend) {
    if (backend != TANDEM_BACKEND_AUTO && backend != TANDEM_BACKEND_HOST && backend != TANDEM_BACKEND_CUDA)
        return tandem_fail(TANDEM_E_INVALID, "backend %d: expected TANDEM_BACKEND_AUTO, _HOST or _CUDA",
                           (int)backend);
    return TANDEM_OK;
}

tandem_status tandem_device_count(tandem_backend backend, int *count) {
    if (!count) return tandem_fail(TANDEM_E_INVALID, "tandem_device_count: count is NULL");
    *count = 0;
    TANDEM_TRY(check_backend(backend));
    if (backend == TANDEM_BACKEND_AUTO) {
        int n = 0;
        TANDEM_TRY(resolve_auto(&backend, &n));
        if (backend == TANDEM_BACKEND_CUDA) {
            *count = n;
            return TANDEM_OK;
        }
    }
    return backend == TANDEM_BACKEND_CUDA ? tandem_cuda_device_count(count) : tandem_host_device_count(count);
}

tandem_status tandem_device_open(tandem_backend backend, int ordinal, tandem_device **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_device_open: out is NULL");
    *out = NULL;
    TANDEM_TRY(check_backend(backend));
    if (backend == TANDEM_BACKEND_AUTO) TANDEM_TRY(resolve_auto(&backend, NULL));
    return backend == TANDEM_BACKEND_CUDA ? tandem_cuda_device_open(ordinal, out)
                                          : tandem_host_device_open(ordinal, out);
}

void tandem_device_close(tandem_device *dev) {
    if (dev) dev->ops->close(dev);
}

tandem_status tandem_device_get_info(const tandem_device *dev, tandem_device_info *out) {
    if (!dev || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_device_get_info: NULL argument");
    *out = dev->info;
    return TANDEM_OK;
}

tandem_status tandem_device_sync(tandem_device *dev) {
    if (!dev) return tandem_fail(TANDEM_E_INVALID, "tandem_device_sync: dev is NULL");
    return dev->ops->sync(dev);
}

int tandem_device_can_access_peer(const tandem_device *dst, const tandem_device *src) {
    if (!dst || !src) return 0;
    if (dst == src) return 1;
    if (dst->ops != src->ops) return 0; /* no direct access between backends */
    return dst->ops->can_access_peer(dst, src);
}

/* ---- streams -------------------------------------------------------------------------------------- */

tandem_status tandem_stream_create(tandem_device *dev, tandem_stream **out) {
    if (!dev || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_stream_create: NULL argument");
    *out = NULL;
    tandem_stream *s = tandem_calloc(1, sizeof *s);
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "tandem_stream_create: out of memory for the handle");
    s->dev = dev;
    tandem_status st = dev->ops->stream_create(dev, s);
    if (st != TANDEM_OK) {
        tandem_free(s);
        return st;
    }
    *out = s;
    return TANDEM_OK;
}

void tandem_stream_destroy(tandem_stream *s) {
    if (!s) return;
    s->dev->ops->stream_destroy(s);
    tandem_free(s);
}

tandem_status tandem_stream_sync(tandem_stream *s) {
    if (!s) return tandem_fail(TANDEM_E_INVALID, "tandem_stream_sync: stream is NULL");
    return s->dev->ops->stream_sync(s);
}

/* ---- events --------------------------------------------------------------------------------------- */

tandem_status tandem_event_create(tandem_device *dev, tandem_event **out) {
    if (!dev || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_event_create: NULL argument");
    *out = NULL;
    tandem_event *e = tandem_calloc(1, sizeof *e);
    if (!e) return tandem_fail(TANDEM_E_NOMEM, "tandem_event_create: out of memory for the handle");
    e->dev = dev;
    tandem_status st = dev->ops->event_create(dev, e);
    if (st != TANDEM_OK) {
        tandem_free(e);
        return st;
    }
    *out = e;
    return TANDEM_OK;
}

void tandem_event_destroy(tandem_event *e) {
    if (!e) return;
    e->dev->ops->event_destroy(e);
    tandem_free(e);
}

tandem_status tandem_event_record(tandem_event *e, tandem_stream *s) {
    if (!e || !s) return tandem_fail(TANDEM_E_INVALID, "tandem_event_record: NULL argument");
    /* As in CUDA, an event is recorded on a stream of its own device (two handles of one device
     * share it); other devices only wait on it. */
    if (e->dev->ops != s->dev->ops || e->dev->info.ordinal != s->dev->info.ordinal)
        return tandem_fail(TANDEM_E_INVALID,
                           "tandem_event_record: event of %s device %d recorded on a stream of %s "
                           "device %d; expected a stream of the event's device",
                           e->dev->ops->name, e->dev->info.ordinal, s->dev->ops->name, s->dev->info.ordinal);
    return e->dev->ops->event_record(e, s);
}

tandem_status tandem_stream_wait_event(tandem_stream *s, tandem_event *e) {
    if (!s || !e) return tandem_fail(TANDEM_E_INVALID, "tandem_stream_wait_event: NULL argument");
    if (s->dev->ops == e->dev->ops) return s->dev->ops->stream_wait_event(s, e);
    /* Across backends no stream can wait on the other's event: block the caller until the event
     * completes, which orders everything queued on s afterwards behind it (conservatively). */
    return e->dev->ops->event_sync(e);
}

tandem_status tandem_stream_order(tandem_stream *after, tandem_stream *before, tandem_event *e) {
    if (!after || !before || !e) return tandem_fail(TANDEM_E_INVALID, "tandem_stream_order: NULL argument");
    if (after->dev->ops != before->dev->ops || after->dev->info.ordinal != before->dev->info.ordinal ||
        !after->dev->ops->stream_order) { /* no capture edges to keep: the plain pair */
        TANDEM_TRY(tandem_event_record(e, before));
        return tandem_stream_wait_event(after, e);
    }
    return after->dev->ops->stream_order(after, before, e);
}

tandem_status tandem_event_query(tandem_event *e, int *done) {
    if (!e || !done) return tandem_fail(TANDEM_E_INVALID, "tandem_event_query: NULL argument");
    return e->dev->ops->event_query(e, done);
}

tandem_status tandem_event_sync(tandem_event *e) {
    if (!e) return tandem_fail(TANDEM_E_INVALID, "tandem_event_sync: event is NULL");
    return e->dev->ops->event_sync(e);
}

tandem_status tandem_event_elapsed_ms(tandem_event *start, tandem_event *end, float *ms) {
    if (!start || !end || !ms) return tandem_fail(TANDEM_E_INVALID, "tandem_event_elapsed_ms: NULL argument");
    if (start->dev->ops != end->dev->ops)
        return tandem_fail(TANDEM_E_INVALID,
                           "tandem_event_elapsed_ms: events of a %s and a %s device; expected one backend",
                           start->dev->ops->name, end->dev->ops->name);
    return start->dev->ops->event_elapsed_ms(start, end, ms);
}

/* ---- graphs (dev.h) ------------------------------------------------------------------------------- */

int tandem_graph_supported(const tandem_device *dev) { return dev && dev->ops->graph_create != NULL; }

tandem_status tandem_graph_create(tandem_device *dev, tandem_graph **out) {
    if (!dev || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_graph_create: NULL argument");
    *out = NULL;
    if (!dev->ops->graph_create)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "%s device %d: no graphs (its calls run as they are made: "
                           "run the step eagerly)", dev->ops->name, dev->info.ordinal);
    tandem_graph *g = tandem_calloc(1, sizeof *g);
    if (!g) return tandem_fail(TANDEM_E_NOMEM, "tandem_graph_create: out of memory for the handle");
    g->dev = dev;
    tandem_status st = dev->ops->graph_create(dev, g);
    if (st != TANDEM_OK) {
        tandem_free(g);
        return st;
    }
    *out = g;
    return TANDEM_OK;
}

tandem_status tandem_graph_begin(tandem_graph *g, tandem_stream *s) {
    if (!g || !s) return tandem_fail(TANDEM_E_INVALID, "tandem_graph_begin: NULL argument");
    if (s->dev != g->dev) return tandem_fail(TANDEM_E_INVALID, "tandem_graph_begin: stream of another device");
    return g->dev->ops->graph_begin(g, s);
}

tandem_status tandem_graph_end(tandem_graph *g, tandem_stream *s) {
    if (!g || !s) return tandem_fail(TANDEM_E_INVALID, "tandem_graph_end: NULL argument");
    tandem_status st = g->dev->ops->graph_end(g, s);
    if (st == TANDEM_OK) g->ready = 1;
    return st;
}

tandem_status tandem_graph_launch(tandem_graph *g, tandem_stream *s) {
    if (!g || !s) return tandem_fail(TANDEM_E_INVALID, "tandem_graph_launch: NULL argument");
    if (!g->ready) return tandem_fail(TANDEM_E_STATE, "tandem_graph_launch: the graph was never captured");
    if (s->dev != g->dev) return tandem_fail(TANDEM_E_INVALID, "tandem_graph_launch: stream of another device");
    return g->dev->ops->graph_launch(g, s);
}

void tandem_graph_destroy(tandem_graph *g) {
    if (!g) return;
    g->dev->ops->graph_destroy(g);
    tandem_free(g);
}
