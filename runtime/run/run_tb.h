/* run_tb.h — a training run's TensorBoard events (runtime/report/tensorboard.h), when the config's
 * `tensorboard` is true: the scalars of every logged step, the figures (loss.png, mel.png) at every
 * checkpoint and the test sentences' WAVs at every validation.
 *
 * Tags: train/{loss,l1,stop_bce,ga,lr,grad_norm}, perf/{step_ms,data_wait_ms,model_busy_pct,
 * data_busy_pct,samples_per_s,x_realtime}, and on validation steps val/{l1,stop_bce} and
 * eval/{stop_within,len_ratio,dtw_l1,text_dep} (those that ran); images figures/loss,
 * figures/mel; audio samples/<k> (k = 1.. of test_sentences).
 * Event files are diagnostics like the figures: a failure to write is a warning and the run goes
 * on (after the first failure the writer is closed, with one warning). Allocates only at open.
 * One thread: the trainer's. */
#ifndef TANDEM_RUNTIME_RUN_TB_H
#define TANDEM_RUNTIME_RUN_TB_H

#include "runtime/core/config.h"
#include "runtime/report/tensorboard.h"
#include "tandem.h"

/* *out = NULL when cfg->tensorboard is false. resumed_step: the step a resume continues from
 * (0: a fresh run). */
tandem_status tandem_run_tb_open(const tandem_config *cfg, int64_t resumed_step, tandem_tb **out);
/* The scalars of step m (val/eval ones when validated). */
void tandem_run_tb_step(tandem_tb **tb, const tandem_step_metrics *m, int validated);
/* step 0's validation of a fresh run: val/l1 and val/stop_bce. */
void tandem_run_tb_initial(tandem_tb **tb, double val_l1, double val_stop_bce);
/* loss.png and mel.png of out (those that exist) after the checkpoint of step. */
void tandem_run_tb_figures(tandem_tb **tb, const char *out, int64_t step);
/* samples/step-<step>-<k>.wav, k = 1..n, written by the validation of step. */
void tandem_run_tb_samples(tandem_tb **tb, const char *samples_dir, int64_t step, int n);

#endif
