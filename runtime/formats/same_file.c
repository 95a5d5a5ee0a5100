/* same_file.c — tandem_files_check_distinct (tandem_files.h): whether an output path names the
 * same file as an input or another output, by (device, inode), before a command does any work. */
#include "tandem.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/os/log.h"

/* A path's identity: its own (dev, ino) when it exists, else its directory's and its last
 * component (so two spellings of a file not yet written still match). */
typedef struct file_key {
    dev_t dev;
    ino_t ino;
    const char *base; /* NULL: the path exists */
} file_key;

/* 1 with *k set; 0 when the path has no identity yet (its directory is missing too). */
static int key_of(const char *path, file_key *k) {
    struct stat st;
    k->base = NULL;
    if (stat(path, &st) == 0) {
        k->dev = st.st_dev, k->ino = st.st_ino;
        return 1;
    }
    if (errno != ENOENT) return 0;
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (n >= sizeof dir || (slash && !slash[1])) return 0;
    if (!slash) memcpy(dir, ".", 2);
    else if (n == 0) memcpy(dir, "/", 2);
    else memcpy(dir, path, n), dir[n] = '\0';
    if (stat(dir, &st) != 0) return 0;
    k->dev = st.st_dev, k->ino = st.st_ino;
    k->base = slash ? slash + 1 : path;
    return 1;
}

static int same_key(const file_key *a, const file_key *b) {
    if (a->dev != b->dev || a->ino != b->ino || !a->base != !b->base) return 0;
    return !a->base || strcmp(a->base, b->base) == 0;
}

static tandem_status check_output(const char *out, const char *const *outputs, int i, const char *const *inputs,
                                  int n_inputs) {
    file_key ko, k;
    if (!key_of(out, &ko)) return TANDEM_OK; /* nowhere to write: the writer will say why */
    for (int j = 0; j < n_inputs; j++)
        if (inputs[j] && key_of(inputs[j], &k) && same_key(&ko, &k))
            return tandem_fail(TANDEM_E_INVALID, "output %s is the input %s (the same device and inode): writing "
                               "it would replace the input; name another output path", out, inputs[j]);
    for (int j = 0; j < i; j++)
        if (outputs[j] && key_of(outputs[j], &k) && same_key(&ko, &k))
            return tandem_fail(TANDEM_E_INVALID, "outputs %s and %s are the same file: the second would replace "
                               "the first; name two different paths", outputs[j], out);
    return TANDEM_OK;
}

tandem_status tandem_files_check_distinct(const char *const *outputs, int n_outputs, const char *const *inputs,
                                          int n_inputs) {
    if (n_outputs < 0 || n_inputs < 0 || (n_outputs && !outputs) || (n_inputs && !inputs))
        return tandem_fail(TANDEM_E_INVALID, "tandem_files_check_distinct: NULL array or negative count");
    for (int i = 0; i < n_outputs; i++)
        if (outputs[i]) TANDEM_TRY(check_output(outputs[i], outputs, i, inputs, n_inputs));
    return TANDEM_OK;
}
