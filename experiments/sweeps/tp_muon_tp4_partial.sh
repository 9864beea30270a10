#!/bin/sh
# tp_muon_tp4_partial.sh — the TP 4 cells of tp_muon.ini, each stopped after step N (default 50)
# with train --stop-after (a checkpoint, status stopped): what fitted this study's CPU budget on the
# shared 2-core machine. The run files are the sweep's own (runs/sweeps/tp_muon/runs/tp4-*.h5), so
# `samebits sweep experiments/sweeps/tp_muon.ini` later resumes them to step 300 and reports all.
#   nice -n 19 experiments/sweeps/tp_muon_tp4_partial.sh [N]
set -eu
N=${1:-50}
OUT=runs/sweeps/tp_muon
BIN=$(pwd)/${SAMEBITS_BIN:-build/release/bin/samebits}
MPIRUN="mpirun --oversubscribe --bind-to none --allow-run-as-root -np 4"
COMMON="experiments/configs/default.ini --run.progress=off --train.keep_states=25 --train.eval_every=25 --parallel.tp=4 --run.threads=1"
mkdir -p "$OUT/runs" "$OUT/logs"
export OMP_WAIT_POLICY=passive
for MODE in duplicated blockwise distributed; do
  MODE_ARG=""
  [ "$MODE" = duplicated ] || MODE_ARG="--optim.tp_mode=$MODE"
  $MPIRUN "$BIN" train $COMMON $MODE_ARG --run.out="$OUT/runs/tp4-$MODE.h5" --resume --stop-after "$N" \
    > "$OUT/logs/tp4-$MODE.log" 2>&1
done
