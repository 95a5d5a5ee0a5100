#!/usr/bin/env bash
# soak.sh — kill -9 and SIGINT/SIGTERM trials on a tiny custom model (issue 10, done-when 2).
# Not part of `make test`: `make soak` (SOAK_KILL=200 SOAK_SIG=50 by default).
# Each trial starts `tandem train` (resuming the same run directory after the first), lets it run
# a random 0.2–1.2 s, then kill -9 (or SIGINT / SIGTERM, alternately) and checks:
#   * after a signal: exit 0 within 5 s of the signal, and the last checkpoint is of the last logged step;
#   * always: the next resume picks the newest good checkpoint (its step = the highest
#     ckpt-*.safetensors that the trainer accepts), and metrics.jsonl, once resumed, has every
#     training step at most once and no partial line.
# A final clean resume to max_steps then checks every step 1..max appears exactly once.
set -u
TANDEM=${TANDEM:-build/tandem}
KILLS=${SOAK_KILL:-200}
SIGS=${SOAK_SIG:-50}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tandem_soak.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
DATA=$WORK/data OUT=$WORK/run
mkdir -p "$DATA/wavs"
# a tiny corpus: 8 WAVs of 0.2 s written here (python3's wave module, no third-party code)
python3 - "$DATA" <<'PY'
import math, random, struct, sys, wave
d = sys.argv[1]; random.seed(1)
texts = ["a cat", "the dog ran", "red sun", "blue sea", "hello there", "one two", "green tree", "big ship"]
with open(d + "/metadata.csv", "w") as m:
    for i, t in enumerate(texts):
        n = 4410 + 441 * i
        w = wave.open("%s/wavs/u%d.wav" % (d, i), "wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(0.05 * (i + 1) * k) + random.randint(-300, 300))) for k in range(n)))
        w.close(); m.write("u%d|%s|%s\n" % (i, t, t))
PY
MAX=100000
ARGS=(--train-data "$DATA" --out "$OUT" --model-size custom --batch-size 2 --grad-accum 1 --num-workers 1
      --max-steps $MAX --checkpoint-every 3 --keep 2 --log-every 1 --val-every 0 --backend host --quiet)
EXTRA=(--config "$WORK/tiny.yaml")
printf 'model_size: custom\nd_model: 16\nlayers: 1\nheads: 2\nreduction: 2\nmax_text: 24\nmax_frames: 32\n' > "$WORK/tiny.yaml"
fail=0; trials=0; sigtrials=0; max_sig_ms=0
check_metrics() { # every training step at most once ($1 = 1: exactly once in 1..$2), whole lines
    python3 - "$OUT/metrics.jsonl" "$1" "$2" <<'PY'
import json, sys, collections
p, exact, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
raw = open(p, "rb").read()
if raw and not raw.endswith(b"\n"): print("partial last line"); sys.exit(1)
c = collections.Counter(json.loads(l)["step"] for l in raw.decode().splitlines() if '"loss"' in l)
dup = [s for s, n in c.items() if n > 1]
if dup: print("steps logged twice:", dup[:10]); sys.exit(1)
if exact and any(c[s] != 1 for s in range(1, top + 1)): print("missing steps"); sys.exit(1)
PY
}
newest() { ls "$OUT" 2>/dev/null | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.safetensors$/\1/p' | sort -n | tail -1; }
trial() { # $1: KILL, INT or TERM
    local resume=() ; [ -d "$OUT" ] && [ -n "$(newest)" ] && resume=(--resume "$OUT")
    [ -d "$OUT" ] && [ -z "$(newest)" ] && resume=(--new-run)
    local before; before=$(newest)
    { exec "$TANDEM" train "${EXTRA[@]}" "${ARGS[@]}" "${resume[@]}" > "$WORK/out.txt" 2> "$WORK/err.txt"; } &
    local pid=$! ; sleep "0.$((2 + RANDOM % 10))"
    kill -"$1" $pid 2>/dev/null
    local t0; t0=$(date +%s%N)
    wait $pid 2>/dev/null; local rc=$?
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ "$1" != KILL ]; then
        sigtrials=$((sigtrials + 1)); [ $ms -gt "$max_sig_ms" ] && max_sig_ms=$ms
        local last; last=$(grep '"loss"' "$OUT/metrics.jsonl" 2>/dev/null | tail -1 | sed 's/^{"step":\([0-9]*\).*/\1/')
        if [ $rc -ne 0 ] || [ $ms -gt 5000 ]; then
            echo "trial $trials ($1): exit $rc after $ms ms"; tail -3 "$WORK/err.txt"; fail=$((fail + 1))
        elif [ -n "$last" ] && [ "$(newest)" != "$last" ]; then
            echo "trial $trials ($1): last logged step $last, newest checkpoint $(newest)"; fail=$((fail + 1))
        fi
    fi
    if [ -n "$(newest)" ] && [ -n "$before" ] && [ "$(newest)" -lt "$before" ]; then
        echo "trial $trials: newest checkpoint went back from $before to $(newest)"; fail=$((fail + 1))
    fi
    trials=$((trials + 1))
}
kills=0; sigs=0
for ((i = 0; i < KILLS + SIGS; i++)); do
    # signals spread among the kills: every 5th trial while any are left
    if [ $sigs -lt $SIGS ] && { [ $((i % 5)) -eq 4 ] || [ $kills -ge $KILLS ]; }; then
        sigs=$((sigs + 1)); [ $((sigs % 2)) -eq 0 ] && trial INT || trial TERM
    else kills=$((kills + 1)); trial KILL; fi
    # the resume takes the newest checkpoint (none is corrupt here: they are written atomically)
    n=$(newest)
    if [ -n "$n" ]; then
        "$TANDEM" train "${EXTRA[@]}" "${ARGS[@]}" --resume "$OUT" --max-steps "$n" > "$WORK/out2.txt" 2> "$WORK/err2.txt"
        if ! grep -q "^steps $n\.\.$n " "$WORK/out2.txt"; then
            echo "after trial $i: resume did not start at the newest checkpoint $n:"; head -3 "$WORK/out2.txt" "$WORK/err2.txt"
            fail=$((fail + 1))
        fi
    fi
    if [ -f "$OUT/metrics.jsonl" ] && ! check_metrics 0 0; then echo "after trial $i"; fail=$((fail + 1)); fi
done
top=$(newest); top=${top:-0}
"$TANDEM" train "${EXTRA[@]}" "${ARGS[@]}" --resume "$OUT" --max-steps $((top + 3)) > /dev/null 2>&1 || { echo "final resume failed"; fail=$((fail + 1)); }
check_metrics 1 $((top + 3)) || fail=$((fail + 1))
echo "soak: $trials trials ($((trials - sigtrials)) kill -9, $sigtrials SIGINT/SIGTERM), reached step $((top + 3)), slowest signal exit $max_sig_ms ms, $fail failures"
[ $fail -eq 0 ]
