/* cmd_plan.c — `tandem plan`: the memory plan of a config for every arena, without opening a
 * device. Uses planning-only pools (runtime/core/pool_internal.h) that know the target backend's
 * alignment but own no memory, so it runs the same on a laptop and on the training server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "runtime/core/config.h"
#include "runtime/model/model.h"
#include "runtime/text/symbols.h"
#include "runtime/data/plan_layout.h"
#include "runtime/core/pool_internal.h"
#include "tandem.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem plan --config FILE [--batch-size N] [--data-gpu-memory MiB]\n"
            "                   [--model-gpu-memory MiB] [--backend cuda|host]\n\n"
            "Prints the memory plan of every arena (data device, model device, pinned host\n"
            "staging) for a config, without opening a device. --backend picks the alignment the\n"
            "plan uses: cuda (default, 256 B) or host (64 B). Budgets (MiB, 0 = size by plan)\n"
            "come from the config or the flags; a plan over budget exits with status 2.\n\n"
            "config keys:\n");
    char keys[8192];
    tandem_config_describe(keys, sizeof keys);
    fputs(keys, f);
}

/* The pools log an over-budget report through the hook; here the same report goes to stdout
 * with the rest of the plan, so the logged copy is dropped while planning. */
static void quiet_hook(void *user, tandem_log_level level, const char *msg) {
    (void)user, (void)level, (void)msg;
}

static int fail_usage(const char *fmt, const char *arg) {
    fprintf(stderr, "tandem plan: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see tandem plan --help)\n");
    return 2;
}

static tandem_pool *make_pool(const char *name, tandem_backend backend, int64_t budget_mib) {
    tandem_pool *p = NULL;
    if (tandem_pool_create_offline(name, backend, (size_t)budget_mib << 20, &p) != TANDEM_OK) {
        fprintf(stderr, "tandem plan: %s\n", tandem_last_error());
        return NULL;
    }
    return p;
}

int cli_plan(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL;
    tandem_backend backend = TANDEM_BACKEND_CUDA;
    /* overrides: flag → config key, applied in order after the file */
    static const struct { const char *flag, *key; } flags[] = {
        {"--batch-size", "batch_size"},
        {"--data-gpu-memory", "data_gpu_memory"},
        {"--model-gpu-memory", "model_gpu_memory"},
    };
    const char *over_flag[16], *over_key[16], *over_val[16];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) return fail_usage("option '%s' needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "--config") == 0) {
            config_path = v;
        } else if (strcmp(a, "--backend") == 0) {
            if (strcmp(v, "cuda") == 0) backend = TANDEM_BACKEND_CUDA;
            else if (strcmp(v, "host") == 0) backend = TANDEM_BACKEND_HOST;
            else return fail_usage("--backend '%s': expected cuda or host", v);
        } else {
            int k = 0;
            while (k < 3 && strcmp(a, flags[k].flag) != 0) k++;
            if (k == 3) return fail_usage("unknown option '%s'", a);
            if (n_over == 16) return fail_usage("too many overrides (at '%s')", a);
            over_flag[n_over] = flags[k].flag;
            over_key[n_over] = flags[k].key;
            over_val[n_over++] = v;
        }
    }
    if (!config_path) return fail_usage("%s", "--config FILE is required");

    tandem_config cfg;
    tandem_status st = cli_load_config(&cfg, config_path, n_over, over_flag, over_key, over_val);
    if (st != TANDEM_OK) {
        fprintf(stderr, "tandem plan: %s\n", tandem_last_error());
        return 2;
    }

    tandem_pool *data = make_pool("data", backend, cfg.data_gpu_memory);
    tandem_pool *model = make_pool("model", backend, cfg.model_gpu_memory);
    if (!data || !model) {
        tandem_pool_destroy(data);
        tandem_pool_destroy(model);
        return 1;
    }
    tandem_layout layout;
    st = tandem_layout_declare(&cfg, data, model, &layout);
    /* the model joins its arena: parameters, optimizer state, activations at cfg.precision */
    tandem_model_dims dims;
    tandem_model mdl;
    memset(&mdl, 0, sizeof mdl);
    if (st == TANDEM_OK) st = tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &dims);
    if (st == TANDEM_OK) st = tandem_model_declare_plan(&mdl, backend, model, &dims);
    if (st == TANDEM_OK) st = tandem_model_staging_declare(&dims, &layout.staging); /* its pinned block */
    if (st != TANDEM_OK) {
        fprintf(stderr, "tandem plan: %s\n", tandem_last_error());
        tandem_model_free(&mdl);
        tandem_pool_destroy(data);
        tandem_pool_destroy(model);
        return 2;
    }

    static const char *const sizes[] = {"tiny", "base", "custom"};
    printf("plan for %s: model_size %s (d_model %d, layers %d, heads %d, r %d), batch %d,\n"
           "  max_text %d, max_frames %d, ring of %d slots, %s; target %s (alignment %zu B)\n\n",
           config_path, sizes[cfg.model_size], cfg.d_model, cfg.layers, cfg.heads, cfg.reduction,
           cfg.batch_size, cfg.max_text, cfg.max_frames, cfg.prefetch_buffer_size,
           cfg.precision == TANDEM_PRECISION_BF16 ? "bf16" : "fp32",
           backend == TANDEM_BACKEND_HOST ? "host devices" : "CUDA devices",
           tandem_pool_backend_alignment(backend));

    tandem_pool *pools[2] = {data, model};
    const char *roles[2] = {"data device", "model device"};
    char errors[2][1024];
    int over = 0;
    size_t total = 0;
    tandem_log_set_hook(quiet_hook, NULL);
    for (int i = 0; i < 2; i++) {
        errors[i][0] = 0;
        if (tandem_pool_plan(pools[i]) != TANDEM_OK) {
            snprintf(errors[i], sizeof errors[i], "%s", tandem_last_error());
            over = 1;
        }
    }
    tandem_log_set_hook(NULL, NULL);
    for (int i = 0; i < 2; i++) {
        char rep[4096];
        tandem_pool_report(pools[i], rep, sizeof rep);
        printf("[%s] %s\n", roles[i], rep);
        tandem_pool_stats s;
        tandem_pool_get_stats(pools[i], &s);
        total += s.arena_bytes;
    }
    static char pinned[16384];
    tandem_layout_pinned_report(&layout, pinned, sizeof pinned);
    printf("%s\n", pinned);
    printf("one GPU in both roles needs both arenas on it: %.2f MiB\n", (double)total / (1 << 20));
    printf("(the model arena holds the ring and the model: parameters, optimizer state, %s "
           "activations)\n", cfg.precision == TANDEM_PRECISION_BF16 ? "bf16/f32" : "f32");

    for (int i = 0; i < 2; i++)
        if (errors[i][0]) fprintf(stderr, "tandem plan: %s\n", errors[i]);
    tandem_model_free(&mdl);
    tandem_pool_destroy(data);
    tandem_pool_destroy(model);
    return over ? 2 : 0;
}
