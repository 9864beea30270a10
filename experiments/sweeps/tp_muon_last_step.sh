#!/bin/sh
# tp_muon_last_step.sh — for samebits.analysis.sweeps.tp_muon_ortho: the orthogonality error of the *full* update
# matrix, which under tp_mode = blockwise the run file does not record (its ortho_error is rank 0's
# shard's). Three short runs of the default model — one process, blockwise at TP 2 and TP 4 —
# of 11 steps (10 of warmup to the peak lr, then one cosine step) keeping the states of steps 10
# and 11 (train.keep_states = 10 and the final state): step 11's update is their difference.
#   nice -n 19 experiments/sweeps/tp_muon_last_step.sh [OUT]        (default runs/sweeps/tp_muon_last)
set -eu
OUT=${1:-runs/sweeps/tp_muon_last}
BIN=${SAMEBITS_BIN:-build/release/bin/samebits}
MPIRUN="mpirun --oversubscribe --bind-to none --allow-run-as-root"
COMMON="experiments/configs/default.ini --run.progress=off --train.steps=11 --train.warmup=10 --train.keep_states=10 --train.eval_every=0"
mkdir -p "$OUT/runs"
export OMP_WAIT_POLICY=passive
$BIN train $COMMON --run.threads=2 --run.out="$OUT/runs/tp1-duplicated.h5" --resume
for T in 2 4; do
  $MPIRUN -np $T "$BIN" train $COMMON --parallel.tp=$T --optim.tp_mode=blockwise --run.threads=1 \
    --run.out="$OUT/runs/tp$T-blockwise.h5" --resume
done
