/* freeze.c — the parameter ranges a run does not train (see freeze.h). */
#include "runtime/run/freeze.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

#define GROUPS "embeddings, prenet, blocks.N, blocks.A-B, final_norm, heads, or a parameter-name prefix"

/* Does parameter `name` belong to group g (len bytes)? */
static int in_group(const char *name, const char *g, size_t len) {
    static const struct {
        const char *group, *prefix[2];
    } named[] = {
        {"embeddings", {"sym_emb.", "pos_emb."}}, {"prenet", {"prenet.", NULL}},
        {"final_norm", {"ln_f.", NULL}},         {"heads", {"mel_head.", "stop_head."}},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strlen(named[i].group) == len && !memcmp(g, named[i].group, len))
            return !strncmp(name, named[i].prefix[0], strlen(named[i].prefix[0])) ||
                   (named[i].prefix[1] && !strncmp(name, named[i].prefix[1], strlen(named[i].prefix[1])));
    char text[128];
    if (len >= sizeof text) return 0;
    memcpy(text, g, len);
    text[len] = '\0';
    long a = 0, b = 0;
    int used = 0;
    const int range = sscanf(text, "blocks.%ld-%ld%n", &a, &b, &used) == 2 && (size_t)used == len;
    if (!range) {
        used = 0;
        if (sscanf(text, "blocks.%ld%n", &a, &used) != 1 || (size_t)used != len)
            return !strncmp(name, text, len); /* a parameter-name prefix */
        b = a;
    }
    long layer = -1;
    return sscanf(name, "layers.%ld.", &layer) == 1 && layer >= a && layer <= b;
}

static int cmp_span(const void *x, const void *y) {
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* Mark the parameters of each group of spec in frozen[]; the first group naming nothing fails. */
static tandem_status mark(const tandem_model *m, const char *spec, char *frozen) {
    for (const char *g = spec; *g;) {
        const size_t len = strcspn(g, ",");
        int hits = 0;
        for (int i = 0; len && i < m->n_params; i++)
            if (in_group(m->param[i].name, g, len)) frozen[i] = 1, hits++;
        if (!hits)
            return tandem_fail(TANDEM_E_INVALID, "--freeze '%s': group '%.*s' names no parameter of this model; "
                               "expected %s", spec, (int)len, g, GROUPS);
        g += len + (g[len] == ',');
    }
    return TANDEM_OK;
}

tandem_status tandem_freeze_spans(const tandem_model *m, const char *spec, int64_t **spans, int *n) {
    *spans = NULL;
    *n = 0;
    if (!spec || !spec[0]) return TANDEM_OK;
    char *frozen = tandem_calloc((size_t)m->n_params, 1);
    int64_t *s = tandem_calloc((size_t)m->n_params * 2 + 2, sizeof *s);
    tandem_status st = frozen && s ? mark(m, spec, frozen) : tandem_fail(TANDEM_E_NOMEM, "freeze: out of memory");
    int k = 0, count = 0;
    int64_t elems = 0;
    for (int i = 0; st == TANDEM_OK && i < m->n_params; i++)
        if (frozen[i]) {
            s[2 * k] = m->param[i].offset;
            s[2 * k + 1] = m->param[i].offset + m->param[i].numel;
            k++, count++;
            elems += m->param[i].numel;
        }
    qsort(s, (size_t)k, 2 * sizeof *s, cmp_span);
    int merged = 0;
    for (int i = 0; i < k; i++) {
        if (merged && s[2 * (merged - 1) + 1] >= s[2 * i]) {
            if (s[2 * i + 1] > s[2 * (merged - 1) + 1]) s[2 * (merged - 1) + 1] = s[2 * i + 1];
            continue;
        }
        s[2 * merged] = s[2 * i];
        s[2 * merged + 1] = s[2 * i + 1];
        merged++;
    }
    tandem_free(frozen);
    if (st != TANDEM_OK) {
        tandem_free(s);
        return st;
    }
    tandem_logf(TANDEM_LOG_INFO, "freeze '%s': %d of %d parameters (%" PRId64 " values) not trained", spec, count,
                m->n_params, elems);
    *spans = s;
    *n = merged;
    return TANDEM_OK;
}

/* Frozen [a, b) less the sorted ranges k[0..nk) into out (pairs); returns the pairs written. */
static int cut(int64_t a, int64_t b, const int64_t *k, int nk, int64_t *out, int64_t *freed) {
    int w = 0;
    for (int i = 0; i < nk && a < b; i++) {
        const int64_t kb = k[2 * i] > a ? k[2 * i] : a, ke = k[2 * i + 1] < b ? k[2 * i + 1] : b;
        if (kb >= ke) continue;
        if (kb > a) out[2 * w] = a, out[2 * w + 1] = kb, w++;
        *freed += ke - kb;
        a = ke;
    }
    if (a < b) out[2 * w] = a, out[2 * w + 1] = b, w++;
    return w;
}

tandem_status tandem_freeze_release(const char *spec, int64_t *keep, int n_keep, int64_t **spans, int *n) {
    if (!*n || !n_keep) return TANDEM_OK;
    qsort(keep, (size_t)n_keep, 2 * sizeof *keep, cmp_span);
    int64_t *s = tandem_calloc((size_t)(*n + n_keep) * 2 + 2, sizeof *s);
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "freeze: out of memory");
    int w = 0;
    int64_t freed = 0;
    for (int i = 0; i < *n; i++) w += cut((*spans)[2 * i], (*spans)[2 * i + 1], keep, n_keep, s + 2 * w, &freed);
    tandem_free(*spans);
    *spans = s;
    *n = w;
    if (freed)
        tandem_logf(TANDEM_LOG_INFO, "freeze '%s': %" PRId64 " values that --init-from did not copy (new symbols' and "
                    "speakers' rows, parameters it lacks) are trained: frozen, they would keep their random "
                    "initialisation", spec, freed);
    return TANDEM_OK;
}

tandem_status tandem_freeze_ranges_text(const int64_t *r, int n, char **out) {
    *out = tandem_calloc((size_t)n * 42 + 1, 1); /* two int64 and two separators per range */
    if (!*out) return tandem_fail(TANDEM_E_NOMEM, "freeze: out of memory");
    size_t at = 0;
    for (int i = 0; i < n; i++)
        at += (size_t)sprintf(*out + at, "%s%" PRId64 "-%" PRId64, i ? "," : "", r[2 * i], r[2 * i + 1]);
    return TANDEM_OK;
}

tandem_status tandem_freeze_release_text(const char *spec, const char *text, int64_t n_flat, int64_t **spans,
                                         int *n) {
    const size_t cap = strlen(text) / 4 + 1; /* each range takes at least 4 characters: "a-b," */
    int64_t *r = tandem_calloc(cap * 2, sizeof *r);
    if (!r) return tandem_fail(TANDEM_E_NOMEM, "freeze: out of memory");
    int k = 0, used = 0;
    for (const char *q = text; *q && (size_t)k < cap; q += used + (q[used] == ',')) {
        used = 0;
        if (sscanf(q, "%" SCNd64 "-%" SCNd64 "%n", &r[2 * k], &r[2 * k + 1], &used) != 2 || !used ||
            (q[used] && q[used] != ',') || r[2 * k] < 0 || r[2 * k] >= r[2 * k + 1] || r[2 * k + 1] > n_flat) {
            tandem_free(r);
            return tandem_fail(TANDEM_E_FORMAT, "checkpoint metadata freeze_trained: '%.40s' is not a list of "
                               "element ranges a-b (0 <= a < b <= %" PRId64 ") as tandem train writes it", q,
                               n_flat);
        }
        k++;
    }
    tandem_status st = tandem_freeze_release(spec, r, k, spans, n);
    tandem_free(r);
    return st;
}
