/* cmd_monitor.c — `tandem monitor`: a live view of every CUDA device through NVML (utilisation,
 * memory, power, clocks, temperature; tandem_system_nvml_read) and, with --run DIR, of a running
 * training's last metrics.jsonl line (tandem_metrics_last_line: never blocks, whatever is in the
 * file's place), refreshed every --interval seconds; --count N stops after N refreshes (scripts,
 * tests). On a terminal each refresh redraws the screen; otherwise blocks are printed one after
 * another. Exit codes: 0 done, 2 bad usage, 1 nothing to show (no NVML and no --run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem monitor [--interval S] [--count N] [--run DIR]\n\n"
            "Shows every CUDA device's NVML readings (GPU and memory utilisation, memory used, power,\n"
            "SM and memory clocks, temperature), refreshed every S seconds (default 1), and with --run\n"
            "the last metrics line of the training writing DIR/metrics.jsonl (step, loss, step time,\n"
            "data wait, busy %% per device). --count N: stop after N refreshes (default: until Ctrl-C).\n"
            "Without NVML (no libnvidia-ml.so.1, TANDEM_NVML=none) it says so and shows only --run.\n");
}

/* The number after "key": in a metrics line (NAN when absent or null). */
static double field(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return NAN;
    p += strlen(pat);
    while (*p == ' ') p++;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

static void gpu_line(int i, const tandem_system_nvml_reading *r) {
    printf("GPU %d  %s", i, r->pci_bus_id[0] ? r->pci_bus_id : "?");
    if (r->status != TANDEM_OK) {
        printf("  no reading: %s\n", r->error);
        return;
    }
    if (r->have & TANDEM_SYSTEM_NVML_UTIL) printf("  util %3d %%  mem util %3d %%", r->gpu_util_pct, r->mem_util_pct);
    if (r->have & TANDEM_SYSTEM_NVML_MEMORY)
        printf("  memory %llu / %llu MiB", (unsigned long long)(r->mem_used_bytes >> 20),
               (unsigned long long)(r->mem_total_bytes >> 20));
    if (r->have & TANDEM_SYSTEM_NVML_POWER) printf("  power %.1f W", r->power_w);
    if (r->have & TANDEM_SYSTEM_NVML_SM_CLOCK) printf("  SM %d MHz", r->sm_clock_mhz);
    if (r->have & TANDEM_SYSTEM_NVML_MEM_CLOCK) printf("  mem %d MHz", r->mem_clock_mhz);
    if (r->have & TANDEM_SYSTEM_NVML_TEMPERATURE) printf("  %d C", r->temperature_c);
    printf("\n");
}

static void run_line(const char *dir) {
    char line[4200];
    tandem_status st = tandem_metrics_last_line(dir, line, sizeof line);
    if (st != TANDEM_OK) {
        printf("run %s: %s\n", dir, tandem_last_error());
        return;
    }
    if (!line[0]) {
        printf("run %s: no metrics line yet\n", dir);
        return;
    }
    printf("run %s: step %.0f  loss %.4f  step %.1f ms  data wait %.2f ms  model %.0f %% \xc2\xb7 data %.0f %%\n", dir,
           field(line, "step"), field(line, "loss"), field(line, "step_ms"), field(line, "data_wait_ms"),
           field(line, "model_busy_pct"), field(line, "data_busy_pct"));
}

/* One refresh; returns whether NVML answered. */
static int refresh(const char *run, int tty, int first) {
    if (tty) printf("\033[H\033[2J");
    else if (!first) printf("\n");
    time_t now = time(NULL);
    char when[32];
    strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
    printf("tandem monitor  %s\n", when);
    int n = 0, nvml = 0;
    if (tandem_device_count(TANDEM_BACKEND_CUDA, &n) != TANDEM_OK) n = 0;
    tandem_system_nvml_reading r;
    if (n == 0) {
        printf("no CUDA device: %s\n", tandem_last_error()[0] ? tandem_last_error() : "the driver reports none");
    } else if (tandem_system_nvml_read(0, &r) == TANDEM_E_NODRIVER || r.status == TANDEM_E_UNSUPPORTED) {
        printf("no NVML (%s): GPU readings need the NVIDIA driver's libnvidia-ml.so.1\n", r.error);
    } else {
        nvml = 1;
        gpu_line(0, &r);
        for (int i = 1; i < n; i++) {
            tandem_system_nvml_read(i, &r);
            gpu_line(i, &r);
        }
    }
    if (run) run_line(run);
    fflush(stdout);
    return nvml;
}

int cli_monitor(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    double interval = 1.0;
    long count = 0;
    const char *run = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) {
            fprintf(stderr, "tandem monitor: option '%s' needs a value (see --help)\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--interval")) {
            interval = strtod(v, &end);
            if (!*v || *end || !(interval >= 0.05 && interval <= 3600)) {
                fprintf(stderr, "tandem monitor: --interval '%s': expected seconds in [0.05, 3600]\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--count")) {
            count = strtol(v, &end, 10);
            if (!*v || *end || count < 0) {
                fprintf(stderr, "tandem monitor: --count '%s': expected an integer >= 0 (0 = until Ctrl-C)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--run")) {
            run = v;
        } else {
            return cli_unknown_option("monitor", a);
        }
    }
    const int tty = isatty(fileno(stdout));
    int any = 0;
    for (long k = 0; count == 0 || k < count; k++) {
        if (k > 0) {
            struct timespec ts = {(time_t)interval, (long)((interval - floor(interval)) * 1e9)};
            nanosleep(&ts, NULL);
        }
        any |= refresh(run, tty, k == 0);
    }
    return any || run ? 0 : 1;
}
