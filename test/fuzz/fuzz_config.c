/* fuzz_config.c — YAML config text (config.h): tandem_config_load_string on arbitrary bytes,
 * and tandem_config_set_from on a key=value split of the same bytes.
 *
 * Checks beyond "no crash, no leak": a failure is TANDEM_E_INVALID (or NOMEM) with a message
 * naming the origin; a loaded config passes tandem_config_check; its dump (what checkpoints
 * store) loads back and dumps to the same text, so a resumed run sees the same settings. */
#include <string.h>

#include "runtime/core/config.h"
#include "test/fuzz/fuzz_common.h"
#include "platform/os/os.h"

#define ORIGIN "fuzz.yaml"
#define MAX_INPUT 16384
#define DUMP_CAP 16384

static void check_round_trip(const tandem_config *cfg) {
    static char dump1[DUMP_CAP], dump2[DUMP_CAP];
    size_t n1 = tandem_config_dump(cfg, dump1, sizeof dump1);
    FUZZ_ASSERT(n1 < sizeof dump1 && strlen(dump1) == n1);
    /* a short buffer gets a NUL-terminated prefix and the same length back, like snprintf */
    char small[16];
    FUZZ_ASSERT(tandem_config_dump(cfg, small, sizeof small) == n1);
    FUZZ_ASSERT(strlen(small) == sizeof small - 1 && memcmp(small, dump1, sizeof small - 1) == 0);

    tandem_config again;
    fuzz_clear_error();
    tandem_status st = tandem_config_load_string(&again, dump1, n1, "dump");
    if (st != TANDEM_OK) fuzz_fail("the dump of a loaded config does not load: %s\n%s", tandem_last_error(), dump1);
    size_t n2 = tandem_config_dump(&again, dump2, sizeof dump2);
    if (n1 != n2 || memcmp(dump1, dump2, n1) != 0)
        fuzz_fail("dump -> load -> dump changed the config:\n%s---\n%s", dump1, dump2);
}

/* "key=value" (first '=' splits; no '=' → no call) through the command-line override path. */
static void check_override(const uint8_t *data, size_t size) {
    const uint8_t *eq = memchr(data, '=', size);
    if (!eq) return;
    size_t kn = (size_t)(eq - data), vn = size - kn - 1;
    char *key = tandem_malloc(kn + 1), *value = tandem_malloc(vn + 1);
    if (key && value) {
        memcpy(key, data, kn);
        key[kn] = 0;
        memcpy(value, eq + 1, vn);
        value[vn] = 0;
        tandem_config cfg;
        tandem_config_init(&cfg);
        fuzz_clear_error();
        tandem_status st = tandem_config_set_from(&cfg, "--fuzz", key, value);
        fuzz_check_status_in(st, "tandem_config_set_from", TANDEM_E_INVALID, -1);
        if (st == TANDEM_E_INVALID) FUZZ_ASSERT(strstr(tandem_last_error(), "--fuzz") != NULL);
        if (st == TANDEM_OK) {
            fuzz_clear_error();
            st = tandem_config_check(&cfg);
            fuzz_check_status_in(st, "tandem_config_check", TANDEM_E_INVALID, -1);
            if (st == TANDEM_OK) check_round_trip(&cfg);
        }
    }
    tandem_free(key);
    tandem_free(value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_init();
    if (size > MAX_INPUT) size = MAX_INPUT;
    tandem_config cfg;
    fuzz_clear_error();
    tandem_status st = tandem_config_load_string(&cfg, (const char *)data, size, ORIGIN);
    fuzz_check_status_in(st, "tandem_config_load_string", TANDEM_E_INVALID, -1);
    if (st == TANDEM_E_INVALID) {
        if (!strstr(tandem_last_error(), ORIGIN))
            fuzz_fail("error message does not name the file: %s", tandem_last_error());
    } else if (st == TANDEM_OK) {
        fuzz_clear_error();
        st = tandem_config_check(&cfg);
        if (st != TANDEM_OK) fuzz_fail("a loaded config fails tandem_config_check: %s", tandem_last_error());
        check_round_trip(&cfg);
    }
    check_override(data, size);
    return 0;
}
