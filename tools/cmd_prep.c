/* cmd_prep.c — `tandem prep`: index a dataset, run the text frontend (or load it from the text
 * cache) and print a summary (tandem_data_prep, tandem_data.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem prep --data DIR [--text-column normalized|text] [--max-text N] [--num-workers N]\n"
            "                   [--max-frames N] [--val-fraction F] [--seed S] [--no-audio-check] [--no-cache]\n"
            "                   [--layout auto|ljspeech|generic|vctk|libritts] [--vctk-mic 1|2]\n\n"
            "Reads DIR/metadata.csv (LJSpeech or generic id|speaker|text layout) or, without one, a\n"
            "VCTK or LibriTTS tree (docs/FORMATS.md), checks every row, normalises and encodes the\n"
            "text on worker threads and stores the result in the text cache ($TANDEM_CACHE_DIR, else\n"
            "$XDG_CACHE_HOME/tandem, else ~/.cache/tandem). Skipped rows are reported as\n"
            "metadata.csv:<line>: <reason> (directory layouts: <file>: <reason>) when the index is\n"
            "built. Audio durations are read from the file headers once and cached with the text.\n\n"
            "  --text-column C    normalized (3rd column, default) or text (2nd column)\n"
            "  --max-text N       max tokens per utterance incl. <lang> BOS EOS (default 128)\n"
            "  --max-frames N     mel frames per utterance (default 512): longer audio is left out\n"
            "  --num-workers N    frontend threads (default: CPU count)\n"
            "  --val-fraction F   hold out this share for validation, seeded (default 0)\n"
            "  --seed S           seed of the validation split (default 0)\n"
            "  --no-audio-check   do not require wavs/<id>.{wav,flac,ogg} (text-only corpora, benchmarks)\n"
            "  --no-cache         neither read nor write the text cache\n"
            "  --layout L         the dataset layout (default auto: metadata.csv, else the tree's own)\n"
            "  --vctk-mic M       VCTK 0.92: read <id>_mic<M>.flac (default 1)\n");
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

static void print_report(const tandem_data_prep_options *o, const tandem_data_prep_report *r) {
    static const char *const layouts[] = {"?", "LJSpeech layout: metadata.csv", "generic layout: metadata.csv",
                                          "VCTK layout", "LibriTTS layout"};
    const int dir_layout = r->layout >= 3;
    printf("data: %s (%s, %u %s", o->data_dir, layouts[r->layout >= 0 && r->layout <= 4 ? r->layout : 0], r->rows,
           dir_layout ? "utterances listed" : "rows");
    if (!dir_layout) printf(", text column: %s", o->raw_text ? "text" : "normalized");
    printf(")\n");
    if (r->speakers) printf("speakers: %u\n", r->speakers);
    printf("utterances: %u usable (train %u, val %u)\n", r->utterances, r->n_train, r->n_val);
    uint32_t n_skipped = 0;
    for (int k = 0; k < TANDEM_DATA_SKIP_REASONS; k++) n_skipped += r->skipped[k];
    printf("skipped: %u", n_skipped);
    for (int k = 0, first = 1; k < TANDEM_DATA_SKIP_REASONS; k++) {
        if (!r->skipped[k]) continue;
        printf("%s%s %u", first ? " (" : ", ", tandem_data_skip_reason_name(k), r->skipped[k]);
        first = 0;
    }
    printf("%s%s\n", n_skipped ? ")" : "", n_skipped && r->cache_hit ? "; per-line reasons were logged when the cache was built" : "");
    printf("languages: en %u, fa %u\n", r->lang_en, r->lang_fa);
    if (r->files_scanned)
        printf("duration: %.1f s total, %.2f s mean, %.2f .. %.2f s (%u files)\n", r->total_s, r->mean_s, r->min_s,
               r->max_s, r->files_scanned);
    else
        printf("duration: (audio not scanned)\n");
    if (o->check_audio)
        printf("audio: %u too long for max_frames %d (%.2f s), %u shorter than one hop, %u unreadable "
               "(left out of train/val)\n",
               r->too_long, o->max_frames, r->max_s_allowed, r->too_short, r->unreadable);
    printf("tokens: %llu total, %.1f mean, %u max (max_text %d, framing <lang> BOS EOS included)\n",
           (unsigned long long)r->tokens, (double)r->tokens / r->utterances, r->max_tokens, o->max_text);
    printf("symbols: version %d, %d ids\n", r->symbols_version, r->symbols);
    if (!o->use_cache)
        printf("cache: off (--no-cache)\n");
    else if (!r->cache_path[0])
        printf("cache: unavailable (see the warning above)\n");
    else
        printf("cache: %s (%s, key %016llx)\n", r->cache_hit ? "hit" : "miss, written", r->cache_path,
               (unsigned long long)r->cache_key);
    printf("time: %.1f ms\n", r->ms);
}

int cli_prep(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    tandem_data_prep_options o;
    tandem_data_prep_options_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--no-audio-check")) o.check_audio = 0;
        else if (!strcmp(a, "--no-cache")) o.use_cache = 0;
        else if (v && !strcmp(a, "--data")) o.data_dir = argv[++i];
        else if (v && !strcmp(a, "--text-column")) {
            i++;
            if (!strcmp(v, "normalized")) o.raw_text = 0;
            else if (!strcmp(v, "text")) o.raw_text = 1;
            else {
                fprintf(stderr, "tandem prep: --text-column '%s': expected normalized or text\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--layout")) {
            static const char *const names[] = {"auto", "ljspeech", "generic", "vctk", "libritts"};
            i++;
            o.layout = -1;
            for (int k = 0; k < 5; k++)
                if (!strcmp(v, names[k])) o.layout = k;
            if (o.layout < 0) {
                fprintf(stderr, "tandem prep: --layout '%s': expected auto, ljspeech, generic, vctk or libritts\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--vctk-mic")) {
            if (!parse_long(a, argv[++i], 1, 2, &x)) return 2;
            o.vctk_mic = (int)x;
        } else if (v && !strcmp(a, "--max-text")) {
            if (!parse_long(a, argv[++i], 4, 65535, &x)) return 2;
            o.max_text = (int)x;
        } else if (v && !strcmp(a, "--max-frames")) {
            if (!parse_long(a, argv[++i], 16, 16384, &x)) return 2;
            o.max_frames = (int)x;
        } else if (v && !strcmp(a, "--num-workers")) {
            if (!parse_long(a, argv[++i], 1, 64, &x)) return 2;
            o.num_workers = (int)x;
        } else if (v && !strcmp(a, "--seed")) {
            if (!parse_long(a, argv[++i], 0, 0x7fffffffL, &x)) return 2;
            o.seed = (uint64_t)x;
        } else if (v && !strcmp(a, "--val-fraction")) {
            char *end;
            o.val_fraction = strtod(argv[++i], &end);
            if (*end || !(o.val_fraction >= 0 && o.val_fraction < 1)) {
                fprintf(stderr, "tandem prep: --val-fraction '%s': expected a number in [0, 1)\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "tandem prep: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o.data_dir) {
        fprintf(stderr, "tandem prep: --data DIR is required\n\n");
        usage(stderr);
        return 2;
    }
    tandem_data_prep_report r;
    tandem_status st = tandem_data_prep(&o, &r);
    if (st != TANDEM_OK) return cli_fail("prep", st);
    print_report(&o, &r);
    return 0;
}
