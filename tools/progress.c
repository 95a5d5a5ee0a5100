/* progress.c — the progress line of `tandem train` (see progress.h). */
#include "tools/progress.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <unistd.h>

void cli_progress_init(cli_progress *p, FILE *out, int plain_every, int force_plain) {
    p->out = out;
    p->tty = !force_plain && out && isatty(fileno(out));
    p->plain_every = plain_every > 0 ? plain_every : 1;
    p->open_line = 0;
    p->write_errno = 0;
}

/* Flush; a failed write is remembered (SIGPIPE and SIGXFSZ are ignored: writes fail instead). */
static void flush_out(cli_progress *p) {
    errno = 0;
    if ((fflush(p->out) != 0 || ferror(p->out)) && !p->write_errno) p->write_errno = errno ? errno : EIO;
}

static size_t fmt_duration(double s, char *buf, size_t cap) {
    if (!(s >= 0) || !isfinite(s)) return (size_t)snprintf(buf, cap, "?");
    long long t = (long long)(s + 0.5);
    if (t >= 3600) return (size_t)snprintf(buf, cap, "%lldh%02lldm", t / 3600, t / 60 % 60);
    if (t >= 60) return (size_t)snprintf(buf, cap, "%lldm%02llds", t / 60, t % 60);
    return (size_t)snprintf(buf, cap, "%llds", t);
}

/* "model 97 %" or, with NVML, "model 97 % (GPU 95 %)". */
static int fmt_device(char *buf, size_t cap, const char *role, double busy, int nvml, int util) {
    if (nvml && util >= 0) return snprintf(buf, cap, "%s %.0f %% (GPU %d %%)", role, busy, util);
    return snprintf(buf, cap, "%s %.0f %%", role, busy);
}

size_t cli_progress_format(const tandem_step_metrics *m, char *buf, size_t cap) {
    if (!cap) return 0;
    char eta[24], model[48], data[48], verdict[48] = "";
    fmt_duration(m->eta_s, eta, sizeof eta);
    fmt_device(model, sizeof model, "model", m->model_busy_pct, m->nvml, m->model_gpu_util_pct);
    fmt_device(data, sizeof data, "data", m->data_busy_pct, m->nvml, m->data_gpu_util_pct);
    if (m->verdict.bound != TANDEM_BOUND_UNKNOWN)
        snprintf(verdict, sizeof verdict, "  [%s]", tandem_bound_name(m->verdict.bound));
    int n = snprintf(buf, cap,
                     "step %" PRId64 "/%" PRId64 "  loss %.4f  %.1f samples/s  %.1fx RT  wait %.1f ms  "
                     "%s \xc2\xb7 %s  ETA %s%s",
                     m->step, m->total_steps, m->loss, m->samples_per_s, m->x_realtime, m->data_wait_ms, model,
                     data, eta, verdict);
    if (n < 0) {
        buf[0] = '\0';
        return 0;
    }
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

void cli_print_verdict(FILE *f, const tandem_verdict *v) {
    if (!f) return;
    if (v->bound == TANDEM_BOUND_UNKNOWN) {
        fprintf(f, "verdict: none (%s)\n", v->why);
        return;
    }
    fprintf(f, "verdict: %s over %d steps: %s\n", tandem_bound_name(v->bound), v->steps, v->why);
    fprintf(f, "recommendation: %s\n", v->advice);
}

/* A validation's line (its free-running evaluation: eval_ms > 0), above the progress line. */
static void validation_line(cli_progress *p, const tandem_step_metrics *m) {
    if (!(m->eval_ms > 0) || !(m->val_l1 >= 0)) return;
    char msg[320];
    snprintf(msg, sizeof msg, "step %" PRId64 " validation: l1 %.4f; free-running: stop within "
             "±20%% %.0f%%, median length x%.2f, DTW-L1 %.3f, text dependence %.2f, spectral "
             "variation %.2f, identified %.0f%% (%.1f s)",
             m->step, m->val_l1, 100.0 * m->eval_stop_within, m->eval_len_ratio, m->eval_dtw_l1,
             m->eval_text_dep, m->eval_spec_var, 100.0 * m->eval_ident, m->eval_ms * 1e-3);
    cli_progress_message(p, msg);
}

void cli_progress_update(cli_progress *p, const tandem_step_metrics *m) {
    if (!p->out) return;
    validation_line(p, m);
    char line[320];
    cli_progress_format(m, line, sizeof line);
    if (p->tty) {
        /* \033[K clears what a longer previous line left behind */
        fprintf(p->out, "\r%s\033[K", line);
        p->open_line = 1;
    } else if (m->step % p->plain_every == 0 || m->step == m->total_steps) {
        fprintf(p->out, "%s\n", line);
    }
    flush_out(p);
}

void cli_progress_on_step(void *user, const tandem_step_metrics *m) { cli_progress_update(user, m); }

void cli_progress_message(cli_progress *p, const char *msg) {
    if (!p->out) return;
    if (p->open_line) fprintf(p->out, "\r\033[K");
    fprintf(p->out, "%s\n", msg);
    p->open_line = 0; /* redrawn at the next update */
    flush_out(p);
}

void cli_progress_finish(cli_progress *p) {
    if (p->out && p->open_line) {
        fputc('\n', p->out);
        fflush(p->out);
    }
    p->open_line = 0;
}
