/* tandem_config.h — the run configuration (part of tandem.h; include tandem.h).
 *
 * A config is one flat YAML mapping of `key: value` (configs/tiny.yaml, docs/TRAINING.md). Every
 * key has a type, a default and a range (tandem_config_describe lists them); `model_size: tiny|
 * base` fills the model keys that are not given explicitly. A tandem_config is a handle: create
 * it (defaults), load a file or a string into it, set single keys (command-line overrides), check
 * the rules across keys, then hand it to tandem_trainer_create, tandem_plan_report or
 * tandem_data_run, which copy what they need (the config may be destroyed afterwards).
 *
 * Threads: a config is plain data; calls on one config must not overlap, calls on different
 * configs may run on any threads. Allocation: create allocates the handle; nothing else does.
 * Errors: TANDEM_E_INVALID with "<origin>:<line>: key '<k>': expected <what>, got '<v>'" (origin:
 * the file name, the string's origin, or the override's name), an unknown key names the nearest
 * known one; a file that cannot be read is TANDEM_E_IO. The message is in tandem_last_error().
 */
/* tandem.h first, outside the guard: it includes every public header in order, this one too */
#include "tandem.h"

#ifndef TANDEM_CONFIG_PUBLIC_H
#define TANDEM_CONFIG_PUBLIC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_config tandem_config;

/* Longest text tandem_config_get writes for any key (a path of up to 1023 bytes and its NUL). */
#define TANDEM_CONFIG_VALUE_MAX 1024

/* A new config holding the defaults (model_size tiny). On failure *out = NULL (TANDEM_E_NOMEM). */
tandem_status tandem_config_create(tandem_config **out);
/* Frees the handle; NULL is ignored. */
void tandem_config_destroy(tandem_config *cfg);

/* Reset cfg to the defaults, read the YAML file `path` (the keys it gives replace defaults), then
 * run tandem_config_check. On failure cfg holds the defaults plus the keys read before the error. */
tandem_status tandem_config_load(tandem_config *cfg, const char *path);
/* The same from YAML text of len bytes; `origin` names it in messages (NULL: "config"). */
tandem_status tandem_config_load_string(tandem_config *cfg, const char *yaml, size_t len,
                                        const char *origin);
/* Set one key from its text, validated like the file ("batch_size", "16"); messages name the
 * origin "override". Run tandem_config_check after the last set. On failure cfg is unchanged. */
tandem_status tandem_config_set(tandem_config *cfg, const char *key, const char *value);
/* The same, naming the origin in messages (e.g. the command-line flag "--batch-size"). */
tandem_status tandem_config_set_from(tandem_config *cfg, const char *origin, const char *key,
                                     const char *value);
/* The value of `key` as text that tandem_config_set accepts back ("16", "0.0003", "true", "tiny",
 * a path as it is), into buf (NUL-terminated). An unknown key is TANDEM_E_INVALID naming the
 * nearest known one; a value longer than cap - 1 bytes is TANDEM_E_INVALID (buf gets ""). A buffer
 * of TANDEM_CONFIG_VALUE_MAX bytes holds any value. */
tandem_status tandem_config_get(const tandem_config *cfg, const char *key, char *buf, size_t cap);
/* The rules across keys (heads divides d_model, reduction divides max_frames): TANDEM_E_INVALID
 * naming both keys and their values when one is broken. load and load_string run it themselves. */
tandem_status tandem_config_check(const tandem_config *cfg);

/* The effective config as YAML, every key on one line (what checkpoints store; it loads back to
 * the same config). Returns the length it needs excluding the NUL and writes at most cap bytes,
 * NUL-terminated when cap > 0, like snprintf. */
size_t tandem_config_dump(const tandem_config *cfg, char *buf, size_t cap);
/* The schema for people: every key with its doc, default and range, two lines per key (what
 * `tandem train --help` prints). Same contract as dump. */
size_t tandem_config_describe(char *buf, size_t cap);

/* ---- the schema and MyXTTS's names, for tools (flags, help, docs) ------------------------------
 * Names: every key is also a command-line flag (`--batch-size 16`, `--batch_size=16`): set and
 * set_from read dashes as underscores. MyXTTS's config keys and train_main.py flags are accepted
 * too (docs/MIGRATING.md): inside a file's `model:`, `data:` and `training:` sections (at the top
 * level of a flat Tandem config they are errors naming the Tandem key) and by set: a renamed key sets the Tandem key (`learning_rate` is `lr`; `mixed_precision: true`
 * is `precision: bf16`), one with no meaning here (an always-on feature, a part of MyXTTS's own
 * model) changes nothing; each use logs one INFO line saying the Tandem name or why. Unknown keys
 * inside a MyXTTS section are accepted with a WARN line; unknown top-level keys stay errors.
 * These calls read static tables: no allocation, any thread. */

typedef struct tandem_config_key_info {
    const char *key;      /* "batch_size" */
    const char *doc;      /* what it means */
    const char *def;      /* default, as written in a file */
    char expected[96];    /* "an integer in [1, 4096]" */
    int is_bool;          /* true or false */
} tandem_config_key_info;

/* The number of keys, and key i (0 <= i < count) in schema order; TANDEM_E_INVALID outside. */
int tandem_config_key_count(void);
tandem_status tandem_config_key_at(int i, tandem_config_key_info *out);

typedef struct tandem_config_alias_info {
    const char *name;     /* MyXTTS's name, underscores ("gradient_accumulation_steps") */
    const char *key;      /* the Tandem key it sets; NULL: accepted, sets nothing (see why) */
    const char *why;      /* the INFO line's text: the Tandem meaning, or why nothing is set */
    int is_switch;        /* an always-on feature: a flag without a value */
                          /* (true/false names also take no value as flags: tandem_config_name_kind) */
} tandem_config_alias_info;

int tandem_config_alias_count(void);
tandem_status tandem_config_alias_at(int i, tandem_config_alias_info *out);

/* What a name (dashes or underscores) is: */
enum {
    TANDEM_CONFIG_NAME_UNKNOWN = 0,
    TANDEM_CONFIG_NAME_KEY,    /* a Tandem key: takes a value */
    TANDEM_CONFIG_NAME_ALIAS,  /* a MyXTTS name that takes a value */
    TANDEM_CONFIG_NAME_SWITCH, /* a MyXTTS flag whose value may be left out (an always-on feature,
                                  or a true/false one: a flag alone means true) */
};
int tandem_config_name_kind(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_CONFIG_PUBLIC_H */
