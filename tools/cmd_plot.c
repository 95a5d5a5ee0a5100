/* cmd_plot.c — `tandem plot`: the two figures of a training run, after the fact, drawn by the
 * code the trainer draws them with at its checkpoints, through the public tandem_plot_run
 * (tandem_plot.h):
 *   * loss.png: train loss and validation L1 against step, from the run's metrics.jsonl;
 *   * mel.png: target vs teacher-forced prediction of one utterance (the first row of the
 *     dataset's metadata.csv, or --utt ID). The trainer's own mel.png shows the first usable
 *     utterance of its held-out set: --data VALDIR picks the same one unless the first
 *     metadata row was skipped by the index.
 * A bad checkpoint is reported before anything is written.
 * Exit codes: cli_exit_code (0 done, 2 bad usage or bad input, 1 any other failure). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: tandem plot --run DIR [--checkpoint FILE --data DIR [--utt ID]] [--out-dir DIR]\n\n"
               "Writes <out-dir>/loss.png from <run>/metrics.jsonl and, with --checkpoint and "
               "--data,\n<out-dir>/mel.png: the target log-mel of one utterance of DIR (first row "
               "of its\nmetadata.csv, or --utt ID) above the checkpoint's teacher-forced "
               "prediction.\n--out-dir defaults to --run.\n");
}

int cli_plot(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *run = NULL, *ckpt = NULL, *data = NULL, *utt = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "tandem plot: option '%s' needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--run")) run = v;
        else if (!strcmp(a, "--checkpoint")) ckpt = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--utt")) utt = v;
        else if (!strcmp(a, "--out-dir")) out = v;
        else {
            return cli_unknown_option("plot", a);
        }
    }
    if (!run || (!ckpt != !data)) {
        fprintf(stderr, "tandem plot: give --run, and --checkpoint with --data (see --help)\n");
        return 2;
    }
    tandem_plot_options o;
    tandem_plot_options_init(&o);
    o.out_dir = out ? out : run;
    o.checkpoint = ckpt;
    o.data_dir = data;
    o.utterance = utt;
    char loss[4096], mel[4096], metrics[4096]; /* neither figure replaces an input */
    snprintf(loss, sizeof loss, "%s/loss.png", o.out_dir);
    snprintf(mel, sizeof mel, "%s/mel.png", o.out_dir);
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", run);
    const char *outs[2] = {loss, mel}, *ins[2] = {ckpt, metrics};
    tandem_status st = tandem_files_check_distinct(outs, 2, ins, 2);
    if (st != TANDEM_OK) return cli_fail("plot", st);
    tandem_plot_result r;
    st = tandem_plot_run(run, &o, &r);
    if (r.metrics_bad_lines)
        fprintf(stderr, "tandem plot: %s/metrics.jsonl: %d unreadable line%s skipped\n", run,
                r.metrics_bad_lines, r.metrics_bad_lines == 1 ? "" : "s");
    if (r.loss_written) {
        printf("loss curve: %s/loss.png (%d train points, %d validation points", o.out_dir,
               r.train_points, r.val_points);
        if (r.stride > 1) printf("; one in %lld logged steps", (long long)r.stride);
        printf(")\n");
    }
    if (r.mel_written)
        printf("mel comparison: %s/mel.png (%s, %d frames; top target, middle teacher-forced "
               "prediction, bottom free-running generation)\n", o.out_dir, r.utterance,
               r.mel_frames);
    return cli_fail("plot", st);
}
