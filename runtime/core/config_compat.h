/* config_compat.h — the names MyXTTS users bring (docs/MIGRATING.md): its config keys and
 * train_main.py flags, each mapped to a Tandem key (renamed, a value mapped) or accepted with the
 * reason it means nothing here (an always-on feature, a part of MyXTTS's model Tandem does not
 * have). config.c applies them when a file, a nested section (`model:`, `data:`, `training:`)
 * or an override names one, and logs one INFO line per use saying the Tandem name or the reason.
 * A static table: nothing allocates; any thread. */
#ifndef TANDEM_RUNTIME_CONFIG_COMPAT_H
#define TANDEM_RUNTIME_CONFIG_COMPAT_H

#include <stdint.h>

typedef enum tandem_compat_kind {
    TANDEM_COMPAT_RENAME = 0, /* the value as it is, for `key` */
    TANDEM_COMPAT_BOOL_MAP,   /* a boolean: `key` gets if_true or if_false */
    TANDEM_COMPAT_IGNORE,     /* accepted and ignored (why); `only`, when set, is the one value taken */
    TANDEM_COMPAT_SWITCH,     /* an always-on feature: a flag without a value, or `true` in a file */
} tandem_compat_kind;

typedef struct tandem_compat {
    const char *name;      /* MyXTTS's name, underscores ("gradient_accumulation_steps") */
    const char *key;       /* the Tandem key (RENAME, BOOL_MAP); NULL otherwise */
    tandem_compat_kind kind;
    const char *if_true, *if_false; /* BOOL_MAP */
    const char *only;      /* IGNORE: the one value accepted (e.g. "adamw"); NULL: any */
    int64_t clamp_from;    /* RENAME of an integer key: values above the key's maximum up to
                              this are accepted and set to the maximum (0: no clamping) */
    const char *why;       /* the INFO line's reason */
} tandem_compat;

/* The entry for name (underscores), NULL when it has none. A Tandem key may have one too
 * (prefetch_buffer_size: MyXTTS values up to 100 are clamped to the ring's 16). */
const tandem_compat *tandem_compat_find(const char *name);
/* Every entry, in table order (docs, help, tests). */
int tandem_compat_count(void);
const tandem_compat *tandem_compat_at(int i);
/* Sections of a MyXTTS config whose keys are read as top-level keys (model, data, training). */
int tandem_compat_is_section(const char *name);

#endif
