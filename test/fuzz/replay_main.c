/* replay_main.c — deterministic replay of one fuzz target for `make test`: every file of the
 * target's seed corpus (test/fuzz/corpus/<name>/), then N seeded mutations of each (bit flips,
 * byte changes to delimiters of the formats, insertions, deletions, truncations, duplicated
 * chunks, boundary integers), all through the target's LLVMFuzzerTestOneInput. Built with the
 * normal compiler flags (and sanitizers under SANITIZE=), linked with one fuzz_<name>.c.
 *
 *   fuzz_<name>                       replay; prints "[       OK ] fuzz_<name> (N inputs, ...)"
 *   fuzz_<name> FILE...               run just these files (a crash input from `make fuzz`)
 *   fuzz_<name> --write FILE K OUT    write mutation K of corpus FILE to OUT (to minimise it)
 *   TANDEM_FUZZ_SEED=S  TANDEM_FUZZ_MUTATIONS=N   change the seed / count (default 300)
 *
 * A broken contract aborts inside the target; the input being run is reported first (signal
 * handler, or the sanitizer's death callback), so the failure names corpus file, mutation and
 * seed. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FUZZ_NAME
#error "build with -DFUZZ_NAME='\"<name>\"' -DFUZZ_CORPUS='\"<dir>\"'"
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define REPLAY_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_SANITIZED 1
#define REPLAY_ASAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif
#ifdef REPLAY_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef REPLAY_ASAN
#include <sanitizer/lsan_interface.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEFAULT_MUTATIONS 300
#define DEFAULT_SEED 0x7a6e64656d5eedull
#define MAX_FILE (4u << 20)
#define MAX_FILES 256

/* ---- what is running (for the crash report) ---- */

static char current_file[1024];
static long current_mutation = -1; /* -1: the file as it is */
static unsigned long long current_seed;

static void report_current(void) {
    char line[1400];
    int n;
    if (!current_file[0])
        n = snprintf(line, sizeof line, "\n[  FAILED  ] fuzz_%s: at exit, after every input ran\n", FUZZ_NAME);
    else if (current_mutation < 0)
        n = snprintf(line, sizeof line, "\n[  FAILED  ] fuzz_%s: input %s (unmutated)\n", FUZZ_NAME, current_file);
    else
        n = snprintf(line, sizeof line,
                     "\n[  FAILED  ] fuzz_%s: input %s, mutation %ld, seed 0x%llx "
                     "(write it with: fuzz_%s --write %s %ld OUT)\n",
                     FUZZ_NAME, current_file, current_mutation, current_seed, FUZZ_NAME, current_file,
                     current_mutation);
    if (n > 0) {
        ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
}

static void on_fatal_signal(int sig) {
    report_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_reporters(void) {
#ifdef REPLAY_SANITIZED
    __sanitizer_set_death_callback(report_current);
#endif
    /* abort() from a broken contract; crashes too when no sanitizer owns the signals */
    signal(SIGABRT, on_fatal_signal);
#ifndef REPLAY_SANITIZED
    signal(SIGSEGV, on_fatal_signal);
    signal(SIGBUS, on_fatal_signal);
    signal(SIGFPE, on_fatal_signal);
    signal(SIGILL, on_fatal_signal);
#endif
}

/* ---- deterministic mutations ---- */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static size_t rng_below(uint64_t *s, size_t n) { return n ? (size_t)(rng_next(s) % n) : 0; }

static uint64_t hash_name(const char *s) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* Bytes that mean something to the formats: CSV/YAML/JSON delimiters, line ends, UTF-8 lead
 * and continuation bytes, NUL. */
static const uint8_t special[] = {'|', '\n', '\r', 0xff, '"', '{', '}', '[', ']', ':', ',', '#', '\\',
                                  ' ', '\t', 0, '0', '9', '-', '.', 'e', 0x80, 0xc3, 0xd8, 0xe2, 0xf0};
/* Integers that break length and offset arithmetic. */
static const uint64_t boundary[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000ull,
                                    0xffffffffull, 0x7fffffffffffffffull, 0xffffffffffffffffull};

/* Apply 1..4 random edits to buf (len bytes, capacity cap); returns the new length. */
static size_t mutate(uint8_t *buf, size_t len, size_t cap, uint64_t *s) {
    int edits = 1 + (int)rng_below(s, 4);
    for (int e = 0; e < edits; e++) {
        size_t pos = rng_below(s, len + 1);
        switch (rng_below(s, 9)) {
        case 0: /* flip a bit */
            if (len) buf[rng_below(s, len)] ^= (uint8_t)(1u << rng_below(s, 8));
            break;
        case 1: /* overwrite with a special byte */
            if (len) buf[rng_below(s, len)] = special[rng_below(s, sizeof special)];
            break;
        case 2: /* insert a special byte */
            if (len < cap) {
                memmove(buf + pos + 1, buf + pos, len - pos);
                buf[pos] = special[rng_below(s, sizeof special)];
                len++;
            }
            break;
        case 3: { /* delete a range */
            if (!len) break;
            size_t at = rng_below(s, len), n = 1 + rng_below(s, len - at < 16 ? len - at : 16);
            memmove(buf + at, buf + at + n, len - at - n);
            len -= n;
            break;
        }
        case 4: /* truncate */
            len = rng_below(s, len + 1);
            break;
        case 5: { /* duplicate a chunk elsewhere */
            if (!len) break;
            size_t from = rng_below(s, len), n = 1 + rng_below(s, len - from < 64 ? len - from : 64);
            if (len + n > cap) break;
            memmove(buf + pos + n, buf + pos, len - pos);
            memmove(buf + pos, buf + (from >= pos ? from + n : from), n);
            len += n;
            break;
        }
        case 6: { /* a boundary integer, little-endian, 1/2/4/8 bytes */
            size_t w = (size_t)1 << rng_below(s, 4);
            if (len < w) break;
            uint64_t v = boundary[rng_below(s, sizeof boundary / sizeof boundary[0])];
            if (rng_below(s, 2)) v = ~v;
            memcpy(buf + rng_below(s, len - w + 1), &v, w);
            break;
        }
        case 7: /* a random byte */
            if (len) buf[rng_below(s, len)] = (uint8_t)rng_next(s);
            break;
        case 8: { /* swap two bytes */
            if (len < 2) break;
            size_t a = rng_below(s, len), b = rng_below(s, len);
            uint8_t t = buf[a];
            buf[a] = buf[b];
            buf[b] = t;
            break;
        }
        }
    }
    return len;
}

/* ---- corpus ---- */

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = malloc(MAX_FILE);
    size_t n = buf ? fread(buf, 1, MAX_FILE, f) : 0;
    fclose(f);
    *len = n;
    return buf;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int list_corpus(char **names, int cap) {
    DIR *d = opendir(FUZZ_CORPUS);
    if (!d) {
        fprintf(stderr, "fuzz_%s: corpus %s: %s\n", FUZZ_NAME, FUZZ_CORPUS, strerror(errno));
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        if (e->d_name[0] == '.') continue;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    return n;
}

static uint64_t file_seed(uint64_t seed, const char *name) { return seed ^ hash_name(name); }

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);
    return v && v[0] ? strtoull(v, NULL, 0) : def;
}

/* Mutation k of a file: the same sequence whether replayed in order or written alone. */
static size_t make_mutation(const uint8_t *orig, size_t len, uint8_t *buf, size_t cap, uint64_t seed,
                            const char *name, long k) {
    uint64_t s = file_seed(seed, name) + (uint64_t)k * 0x632be59bd9b4e019ull;
    memcpy(buf, orig, len);
    return mutate(buf, len, cap, &s);
}

static int write_mutation(const char *file, long k, const char *out) {
    uint64_t seed = env_u64("TANDEM_FUZZ_SEED", DEFAULT_SEED);
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", FUZZ_CORPUS, file);
    size_t len;
    uint8_t *orig = read_file(path, &len);
    if (!orig) orig = read_file(file, &len);
    if (!orig) {
        fprintf(stderr, "cannot read %s\n", file);
        return 1;
    }
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t cap = len + 4096;
    uint8_t *buf = malloc(cap);
    size_t n = make_mutation(orig, len, buf, cap, seed, base, k);
    FILE *f = fopen(out, "wb");
    int ok = f && fwrite(buf, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    free(buf);
    free(orig);
    if (!ok) fprintf(stderr, "cannot write %s\n", out);
    return ok ? 0 : 1;
}

static int run_files(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        size_t len;
        uint8_t *buf = read_file(argv[i], &len);
        if (!buf) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            return 1;
        }
        snprintf(current_file, sizeof current_file, "%s", argv[i]);
        current_mutation = -1;
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        printf("[       OK ] fuzz_%s %s\n", FUZZ_NAME, argv[i]);
    }
    return 0;
}

int main(int argc, char **argv) {
    install_reporters();
    if (argc == 5 && strcmp(argv[1], "--write") == 0) return write_mutation(argv[2], atol(argv[3]), argv[4]);
    if (argc > 1) return run_files(argc - 1, argv + 1);

    uint64_t seed = env_u64("TANDEM_FUZZ_SEED", DEFAULT_SEED);
    long per_file = (long)env_u64("TANDEM_FUZZ_MUTATIONS", DEFAULT_MUTATIONS);
    current_seed = (unsigned long long)seed;
    char *names[MAX_FILES];
    int n_files = list_corpus(names, MAX_FILES);
    if (n_files <= 0) {
        printf("[  FAILED  ] fuzz_%s: empty or missing corpus %s\n", FUZZ_NAME, FUZZ_CORPUS);
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long inputs = 0;
    for (int i = 0; i < n_files; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", FUZZ_CORPUS, names[i]);
        size_t len;
        uint8_t *orig = read_file(path, &len);
        if (!orig) {
            printf("[  FAILED  ] fuzz_%s: cannot read %s\n", FUZZ_NAME, path);
            return 1;
        }
        snprintf(current_file, sizeof current_file, "%s", names[i]);
        current_mutation = -1;
        LLVMFuzzerTestOneInput(orig, len);
        inputs++;
        /* a fresh copy per input: libFuzzer inputs are exactly sized, so ASan sees overreads */
        size_t cap = len + 4096;
        uint8_t *work = malloc(cap);
        for (long k = 0; k < per_file; k++) {
            current_mutation = k;
            size_t n = make_mutation(orig, len, work, cap, seed, names[i], k);
            uint8_t *exact = malloc(n ? n : 1);
            memcpy(exact, work, n);
            LLVMFuzzerTestOneInput(exact, n);
            free(exact);
            inputs++;
        }
        free(work);
        free(orig);
#ifdef REPLAY_ASAN
        /* a leak is pinned to the corpus file whose mutations made it (report printed above) */
        if (__lsan_do_recoverable_leak_check()) {
            printf("[  FAILED  ] fuzz_%s: memory leaked while running %s and its %ld mutations (seed 0x%llx)\n",
                   FUZZ_NAME, names[i], per_file, (unsigned long long)seed);
            fflush(stdout); /* LeakSanitizer's exit report ends the process without flushing */
            current_file[0] = 0;
            return 1;
        }
#endif
        free(names[i]);
    }
    current_file[0] = 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("[       OK ] fuzz_%s (%ld inputs: %d corpus files + %ld mutations each, seed 0x%llx, %.1f s)\n",
           FUZZ_NAME, inputs, n_files, per_file, (unsigned long long)seed, secs);
    return 0;
}
