#!/usr/bin/env bash
# The demo (make demo): demo corpus → text frontend → train the tiny model on the devices present
# (two host devices without a GPU) → checkpoint, metrics.jsonl, loss and mel PNGs → a WAV of a
# training sentence → where everything is and a one-screen summary.
#
# usage: tools/demo.sh BUILD_DIR OUT_DIR
# Training: configs/tiny.yaml with a short warm-up (20 steps; the config's 200 would last the
# whole demo), validation every 100 steps on the held-out corpus (with the free-running
# evaluation: eval_* in metrics.jsonl, a third panel in mel.png). The summary says whether the
# synthesized training sentence stopped by itself.
# env:   DEMO_STEPS (default 1000: about 5 minutes of training on an idle 2-core host at batch 8),
#        DEMO_TRAIN_SECONDS (default 270: training gets SIGINT after this long — it finishes the
#        step, writes its checkpoint and exits 0 — so a busy machine still ends the demo in time),
#        DEMO_COUNT (training utterances, default 64), DEMO_VAL_COUNT (held-out, default 8)
set -euo pipefail
build=$1; out=$2
tandem="$build/tandem"
steps=${DEMO_STEPS:-1000}
budget=${DEMO_TRAIN_SECONDS:-270}
t0=$(date +%s)
mkdir -p "$out"
log() { printf '\n== %s\n' "$*"; }

log "devices"
"$tandem" diagnose | sed 's/^/   /'

corpus="$out/corpus"; val="$out/val"
if [ ! -f "$corpus/metadata.csv" ]; then
  log "demo corpus (espeak-ng) → $corpus"
  "$tandem" corpus --out "$corpus" --count "${DEMO_COUNT:-64}" --seed 1 --force | sed 's/^/   /'
fi
if [ ! -f "$val/metadata.csv" ]; then
  log "held-out corpus → $val"
  "$tandem" corpus --out "$val" --count "${DEMO_VAL_COUNT:-8}" --seed 2 --force | sed 's/^/   /'
fi

log "text frontend and cache"
"$tandem" prep --data "$corpus" | sed 's/^/   /'

log "memory plan (configs/tiny.yaml)"
"$tandem" plan --config configs/tiny.yaml | sed 's/^/   /'

run="$out/run"
rm -rf "$run" # a fresh run each time: the summary describes this one
log "training tiny for $steps steps (at most ${budget} s) → $run"
t_train=$(date +%s)
# stdbuf: one progress line per 10 steps as it happens, though stdout is a pipe
timeout --preserve-status -s INT "$budget" stdbuf -oL \
  "$tandem" train --config configs/tiny.yaml --train-data "$corpus" --val-data "$val" \
  --out "$run" --max-steps "$steps" --warmup-steps 20 --log-every 10 --val-every 100 \
  --checkpoint-every "$steps" --keep 2 2>&1 | tee "$out/train.log" | sed -u 's/^/   /'
t_train=$(( $(date +%s) - t_train ))
ckpt=$(ls "$run"/ckpt-*.safetensors | tail -1)

if ls "$run"/*.png >/dev/null 2>&1; then
  log "figures (written by the trainer at its checkpoints)"
  pngs=$(ls "$run"/*.png | tr '\n' ' ')
else
  log "figures (tandem plot: metrics.jsonl and the checkpoint's teacher-forced mel of a held-out utterance)"
  "$tandem" plot --run "$run" --checkpoint "$ckpt" --data "$val" | sed 's/^/   /'
  pngs="$run/loss.png $run/mel.png"
fi

# A training sentence: the first English row of the corpus (normalised column).
text=$(awk -F'|' '$3 ~ /^[a-z]/ { print $3; exit }' "$corpus/metadata.csv")
id=$(awk -F'|' '$3 ~ /^[a-z]/ { print $1; exit }' "$corpus/metadata.csv")
log "synthesis of training sentence $id: \"$text\""
"$tandem" synth --checkpoint "$ckpt" --text "$text" --out "$out/synth.wav" \
  --mel-out "$out/synth.npy" | tee "$out/synth.log" | sed 's/^/   /'

# ---- summary ----
m="$run/metrics.jsonl"
field() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p" "$m"; }
loss_first=$(field loss | head -1); loss_last=$(field loss | tail -1)
l1_first=$(field l1 | head -1); l1_last=$(field l1 | tail -1)
val_first=$(field val_l1 | head -1); val_last=$(field val_l1 | tail -1)
last_step=$(field step | tail -1)
# means over the logged steps past warm-up (the first two logged lines are skipped)
tail_avg() { field "$1" | tail -n +3 | awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print "n/a" }'; }
wait_pct=$(paste <(field data_wait_ms) <(field step_ms) | tail -n +3 |
  awk '{ w += $1; s += $2 } END { if (s > 0) printf "%.2f", 100 * w / s; else print "n/a" }')
devices=$(sed -n 's/^devices: //p' "$out/train.log")
steps_line=$(sed -n 's/^ *\(steps .*\)/\1/p' "$out/train.log" | head -1)
rates=$(grep -E 'samples/s, data wait' "$out/train.log" || true)
gen=$(grep -E '^generated' "$out/synth.log" || true)
# Did the synthesized training sentence stop by itself (tandem synth's "stop:" line)? Its true
# length: the recording's frames (hop 256 at 22050 Hz).
stop=$(grep -E '^stop:' "$out/synth.log" || true)
true_frames=$(( ($(stat -c %s "$corpus/wavs/$id.wav") - 44) / 2 / 256 ))
# What to listen for in synth.wav, from the last validation's free-running figures: speech is
# identified among the held-out sentences and moves like its recording (docs/TRAINING.md).
ident=$(field eval_ident | tail -1); specvar=$(field eval_spec_var | tail -1)
if awk -v i="${ident:-0}" -v v="${specvar:-0}" 'BEGIN { exit !(i >= 0.9 && v >= 0.5) }'; then
  listen="listen to $out/synth.wav: speech — the held-out sentences were identified (${ident}) and
             move like their recordings (spectral variation ${specvar})"
else
  listen="listen to $out/synth.wav: not yet speech at this budget (held-out identified ${ident:-n/a},
             spectral variation ${specvar:-n/a}; a drone is 0, speech 1) — expect about the right
             length and pauses, sounds that are not yet words; make bench-speak measures how far
             4000 steps get (docs/BENCHMARKS-training.md, \"Does it speak?\")"
fi
if grep -q '^stop: fired' "$out/synth.log"; then
  speak="stopped by itself: ${stop#stop: } — the recording has about ${true_frames} frames"
else
  speak="did NOT stop by itself (${stop#stop: }): $last_step steps on this machine are too few
             for free-running speech; \`make bench-speak\` (4000 steps) measures how far it gets
             (docs/BENCHMARKS-training.md, \"Does it speak?\")"
fi
eval_line=$(grep '"eval_stop_within"' "$m" | tail -1 |
  sed -n 's/.*"eval_stop_within":\([-0-9.eE+]*\).*"eval_len_ratio":\([-0-9.eE+]*\).*"eval_dtw_l1":\([-0-9.eE+]*\).*"eval_text_dep":\([-0-9.eE+]*\).*"eval_spec_var":\([-0-9.eE+]*\).*"eval_ident":\([-0-9.eE+]*\).*/fraction stopped within ±20 % \1, identified \6, spectral variation \5 (drone 0, speech 1), median length ratio \2, DTW-L1 \3, text dependence \4/p')
total=$(( $(date +%s) - t0 ))

cat <<EOF

================================ demo summary ================================
devices      ${devices:-see $out/train.log}
training     tiny, batch 8, ${t_train} s: ${steps_line:-$last_step steps}
logged       every 10 steps: loss ${loss_first:-?} → ${loss_last:-?}, masked L1 ${l1_first:-?} → ${l1_last:-?}; held-out L1 ${val_first:-n/a} → ${val_last:-n/a}
throughput   ${rates:-see $out/train.log}
past warm-up $(tail_avg samples_per_s) samples/s, data wait ${wait_pct} % of step time ($(tail_avg data_wait_ms) ms/step),
             model device busy $(tail_avg model_busy_pct) %, data device busy $(tail_avg data_busy_pct) %, step $(tail_avg step_ms) ms
synthesis    ${gen:-see $out/synth.log}
             ${speak}
             ${listen}
free-running ${eval_line:-n/a} (last validation; docs/TRAINING.md)

outputs
  corpus        $corpus/ (metadata.csv, wavs/), held-out $val/
  checkpoint    $ckpt
  metrics       $m
  figures       $pngs
  audio         $out/synth.wav (Griffin-Lim), log-mel $out/synth.npy
  logs          $out/train.log, $out/synth.log
demo time      ${total} s (after the build)
==============================================================================
EOF

# Convergence: the held-out L1 must end clearly below its step-0 value (threshold and its
# measurement: tools/check_convergence.sh, docs/BENCHMARKS.md).
bash "$(dirname "$0")/check_convergence.sh" "$run"
