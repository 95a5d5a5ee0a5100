/* cmd_prep.c — `tandem prep`: index a dataset, run the text frontend (or load it from the text
 * cache) and print a summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "platform/os/os.h"
#include "runtime/text/symbols.h"
#include "tandem.h"
#include "runtime/data/text_index.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem prep --data DIR [--text-column normalized|text] [--max-text N] [--num-workers N]\n"
            "                   [--max-frames N] [--val-fraction F] [--seed S] [--no-audio-check] [--no-cache]\n\n"
            "Reads DIR/metadata.csv (LJSpeech layout), checks every row, normalises and encodes the\n"
            "text on worker threads and stores the result in the text cache ($TANDEM_CACHE_DIR, else\n"
            "$XDG_CACHE_HOME/tandem, else ~/.cache/tandem). Skipped rows are reported as\n"
            "metadata.csv:<line>: <reason> when the index is built. Audio durations are read from\n"
            "the file headers once and cached with the text.\n\n"
            "  --text-column C    normalized (3rd column, default) or text (2nd column)\n"
            "  --max-text N       max tokens per utterance incl. <lang> BOS EOS (default 128)\n"
            "  --max-frames N     mel frames per utterance (default 512): longer audio is left out\n"
            "  --num-workers N    frontend threads (default: CPU count)\n"
            "  --val-fraction F   hold out this share for validation, seeded (default 0)\n"
            "  --seed S           seed of the validation split (default 0)\n"
            "  --no-audio-check   do not require wavs/<id>.{wav,flac,ogg} (text-only corpora, benchmarks)\n"
            "  --no-cache         neither read nor write the text cache\n");
}

static int parse_long(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > hi) {
        fprintf(stderr, "tandem prep: %s '%s': expected an integer in [%ld, %ld]\n", opt, v, lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

int cli_prep(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    tandem_text_index_config cfg;
    tandem_text_index_config_default(&cfg);
    long max_frames = 512; /* the tiny preset's */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--no-audio-check")) cfg.check_audio = 0;
        else if (!strcmp(a, "--no-cache")) cfg.use_cache = 0;
        else if (v && !strcmp(a, "--data")) cfg.data_dir = argv[++i];
        else if (v && !strcmp(a, "--text-column")) {
            i++;
            if (!strcmp(v, "normalized")) cfg.column = TANDEM_TEXT_COLUMN_NORMALIZED;
            else if (!strcmp(v, "text")) cfg.column = TANDEM_TEXT_COLUMN_RAW;
            else {
                fprintf(stderr, "tandem prep: --text-column '%s': expected normalized or text\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--max-text")) {
            if (!parse_long(a, argv[++i], 4, 65535, &x)) return 2;
            cfg.max_text = (int)x;
        } else if (v && !strcmp(a, "--max-frames")) {
            if (!parse_long(a, argv[++i], 16, 16384, &max_frames)) return 2;
        } else if (v && !strcmp(a, "--num-workers")) {
            if (!parse_long(a, argv[++i], 1, 64, &x)) return 2;
            cfg.num_workers = (int)x;
        } else if (v && !strcmp(a, "--seed")) {
            if (!parse_long(a, argv[++i], 0, 0x7fffffffL, &x)) return 2;
            cfg.seed = (uint64_t)x;
        } else if (v && !strcmp(a, "--val-fraction")) {
            char *end;
            cfg.val_fraction = strtod(argv[++i], &end);
            if (*end || !(cfg.val_fraction >= 0 && cfg.val_fraction < 1)) {
                fprintf(stderr, "tandem prep: --val-fraction '%s': expected a number in [0, 1)\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "tandem prep: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!cfg.data_dir) {
        fprintf(stderr, "tandem prep: --data DIR is required\n\n");
        usage(stderr);
        return 2;
    }

    cfg.max_samples = (int64_t)max_frames * TANDEM_FEATURE_HOP; /* one hop per mel frame */
    uint64_t t0 = tandem_now_ns();
    tandem_text_index ix;
    tandem_status st = tandem_text_index_open(&cfg, &ix);
    uint64_t t1 = tandem_now_ns();
    if (st != TANDEM_OK) {
        fprintf(stderr, "tandem prep: %s\n", tandem_last_error());
        return st == TANDEM_E_INVALID || st == TANDEM_E_FORMAT ? 2 : 1;
    }

    printf("data: %s (metadata.csv, %u rows, text column: %s)\n", cfg.data_dir, ix.lines,
           cfg.column == TANDEM_TEXT_COLUMN_RAW ? "text" : "normalized");
    printf("utterances: %u usable (train %u, val %u)\n", ix.count, ix.n_train, ix.n_val);
    uint32_t n_skipped = 0;
    for (int r = 0; r < TANDEM_SKIP_COUNT; r++) n_skipped += ix.skipped[r];
    printf("skipped: %u", n_skipped);
    for (int r = 0, first = 1; r < TANDEM_SKIP_COUNT; r++) {
        if (!ix.skipped[r]) continue;
        printf("%s%s %u", first ? " (" : ", ", tandem_skip_reason_name((tandem_skip_reason)r), ix.skipped[r]);
        first = 0;
    }
    printf("%s%s\n", n_skipped ? ")" : "", n_skipped && ix.cache_hit ? "; per-line reasons were logged when the cache was built" : "");
    printf("languages: en %u, fa %u\n", ix.lang_count[TANDEM_LANG_EN], ix.lang_count[TANDEM_LANG_FA]);

    /* durations: read from each file's header when the index was built, cached with it */
    uint64_t samples = 0;
    uint32_t scanned = 0, lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < ix.count; i++) {
        uint32_t ns = ix.utts[i].n_samples;
        if (!ns) continue;
        samples += ns;
        scanned++;
        if (ns < lo) lo = ns;
        if (ns > hi) hi = ns;
    }
    if (scanned)
        printf("duration: %.1f s total, %.2f s mean, %.2f .. %.2f s (%u files)\n", (double)samples / TANDEM_FEATURE_SAMPLE_RATE,
               (double)samples / TANDEM_FEATURE_SAMPLE_RATE / scanned, (double)lo / TANDEM_FEATURE_SAMPLE_RATE,
               (double)hi / TANDEM_FEATURE_SAMPLE_RATE, scanned);
    else
        printf("duration: (audio not scanned)\n");
    if (cfg.check_audio)
        printf("audio: %u too long for max_frames %ld (%.2f s), %u shorter than one hop, %u unreadable "
               "(left out of train/val)\n",
               ix.audio_too_long, max_frames, (double)cfg.max_samples / TANDEM_FEATURE_SAMPLE_RATE, ix.audio_too_short,
               ix.audio_unreadable);

    printf("tokens: %llu total, %.1f mean, %u max (max_text %d, framing <lang> BOS EOS included)\n",
           (unsigned long long)ix.n_tokens, (double)ix.n_tokens / ix.count, ix.max_tok, cfg.max_text);
    printf("symbols: version %d, %d ids\n", TANDEM_SYMBOLS_VERSION, tandem_symbols_count());
    if (!cfg.use_cache)
        printf("cache: off (--no-cache)\n");
    else if (!ix.cache_path[0])
        printf("cache: unavailable (see the warning above)\n");
    else
        printf("cache: %s (%s, key %016llx)\n", ix.cache_hit ? "hit" : "miss, written", ix.cache_path,
               (unsigned long long)ix.key);
    printf("time: %.1f ms\n", (double)(t1 - t0) * 1e-6);
    tandem_text_index_free(&ix);
    return 0;
}
