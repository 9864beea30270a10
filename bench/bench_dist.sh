#!/usr/bin/env bash
# bench_dist.sh — data parallelism (docs/studies/exact_allreduce.md): time per step and
# bytes each rank passes to collectives per step, exact (block-window wire, det/block_wire.hpp) vs
# native (float) all-reduce, 1 vs 2 ranks; the gradient all-reduce alone and the accumulator's
# bytes; optimizer-state bytes per rank with and without the distributed optimizer (2 and 4
# ranks). Uses tests/tools/mpi_train_driver (built with the tests). Then the byte ratios of
# docs/studies/exact_allreduce.md from `samebits train` run files (series/comm_bytes): the default model at 2, 3 and 4 ranks and
# the 85 M shape (docs/PERFORMANCE.md) at 2 ranks, and the default model's step time exact/native at 2
# ranks. Times are the fastest step after the first (and the fastest of REPS all-reduces), which
# resists the noise of a shared machine; bytes and state sizes are exact counts.
#   bench/bench_dist.sh [DRIVER]      (default: build/release/bin/tests/mpi_train_driver)
#   MODEL="--layers 4 --width 128 …" STEPS=8 REPS=200 THREADS=1 bench/bench_dist.sh
#   SAMEBITS=build/release/bin/samebits  CLI_STEPS=4  BIG=0 (skip the 85 M shape: minutes)
#   PART=cli (only the samebits train part; no driver needed)  PART=driver (only the driver part)
#   PAIRS=3 TIME_STEPS=12: step time exact/native at 2 ranks from PAIRS interleaved exact, native
#   runs (median step after the first of each; the ratio of medians and each pair's ratio)
#   PART=rscatter: bytes each rank receives per step (its collectives' results) on the default
#   model at 2, 3, 4 ranks — exact reduce-scatter (distributed optimizer) vs exact all-reduce vs
#   native float all-reduce — and their step times at 2 ranks over RS_PAIRS interleaved triples
#   (RS_STEPS steps each; the driver with --config experiments/configs/default.ini)
set -euo pipefail

DRIVER=${1:-build/release/bin/tests/mpi_train_driver}
PART=${PART:-all}
MPIRUN=${MPIRUN:-mpirun}
THREADS=${THREADS:-1}  # OpenMP threads per rank
STEPS=${STEPS:-8}
REPS=${REPS:-200}
MODEL=${MODEL:---layers 2 --width 128 --heads 4 --seq 64 --vocab 256 --leaves 8 --leaf-size 2}
[[ $PART == cli || -x "$DRIVER" ]] || { echo "bench_dist.sh: no driver at $DRIVER (build target mpi_train_driver)" >&2; exit 2; }
command -v "$MPIRUN" > /dev/null || { echo "bench_dist.sh: no $MPIRUN on PATH" >&2; exit 2; }
LAUNCH=("$MPIRUN" --oversubscribe --bind-to none)
[[ $(id -u) == 0 ]] && LAUNCH+=(--allow-run-as-root)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# driver RANKS ARGS…: the driver alone (1 rank) or under mpirun.
driver() {
  local ranks=$1
  shift
  local cmd=("$DRIVER" $MODEL --threads "$THREADS" "$@")
  [[ $ranks -gt 1 ]] && cmd=("${LAUNCH[@]}" -np "$ranks" "${cmd[@]}")
  "${cmd[@]}"
}
# step RANKS ARGS…: "fastest_step_seconds bytes_per_step optimizer_state_bytes_max".
step() { driver "$@" --bench --steps "$STEPS" | awk '/^# summary/ { print $12, $8, $10 }'; }

# ---- issue 16, option 3: what each rank receives, reduce-scatter vs all-reduce ----------------
if [[ $PART == rscatter ]]; then
  RS_STEPS=${RS_STEPS:-4}
  RS_PAIRS=${RS_PAIRS:-3}
  CONFIG=experiments/configs/default.ini
  # rs RANKS ARGS…: "payload_bytes_per_step median_step recv_mean recv_max grad_mean grad_max"
  # (received per rank per step: everything, and without the weights' broadcasts and the replica
  # check's all-gather, i.e. the gradient and the step's scalars).
  rs() {
    local ranks=$1
    shift
    local out
    out=$(driver "$ranks" --config "$CONFIG" --threads "$THREADS" --steps "$RS_STEPS" --warmup 0 "$@")
    local median
    median=$(awk '/^# traffic step/ && $4 > 1 { print $6 }' <<< "$out" | sort -g |
             awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    awk -v m="$median" '
      /^# received rank/ {
        t = $6; g = t
        for (i = 7; i <= NF; ++i) { split($i, kv, "="); if (kv[1] == "broadcast" || kv[1] == "allgather") g -= kv[2] }
        n += 1; st += t; sg += g; if (t > mt) mt = t; if (g > mg) mg = g
      }
      /^# summary/ { b = $8 }
      END { printf "%s %s %.0f %.0f %.0f %.0f\n", b, m, st / n, mt, sg / n, mg }' <<< "$out"
  }
  echo "default model ($CONFIG), $RS_STEPS steps (mean of steps 2..), $THREADS thread(s) per rank; load $(cut -d' ' -f1 /proc/loadavg)"
  echo "received per rank per step: all collectives, and gradient (without the weights' broadcasts and the replica check)"
  printf '%-5s %-15s %12s %12s %12s %12s %12s\n' ranks path "payload B" "recv mean" "recv max" "grad mean" "grad max"
  declare -A G
  for ranks in 2 3 4; do
    for mode in rscatter allreduce native; do
      case $mode in
        rscatter) args=(--dist-optimizer) ;;
        allreduce) args=(--allreduce exact) ;;
        native) args=(--allreduce native) ;;
      esac
      read -r b _ rm rx gm gx < <(rs "$ranks" "${args[@]}")
      G[$mode$ranks]=$gm
      printf '%-5s %-15s %12s %12s %12s %12s %12s\n' "$ranks" "$mode" "$b" "$rm" "$rx" "$gm" "$gx"
    done
    printf '      gradient received, mean per rank: reduce-scatter/all-reduce %s, reduce-scatter/native %s, all-reduce/native %s\n' \
      "$(ratio "${G[rscatter$ranks]}" "${G[allreduce$ranks]}")" "$(ratio "${G[rscatter$ranks]}" "${G[native$ranks]}")" \
      "$(ratio "${G[allreduce$ranks]}" "${G[native$ranks]}")"
  done
  echo
  echo "step time, 2 ranks, $RS_PAIRS interleaved triples (median step after the first):"
  for ((p = 1; p <= RS_PAIRS; ++p)); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    order=(rscatter allreduce native)
    ((p % 2)) || order=(native allreduce rscatter)
    declare -A T
    for mode in "${order[@]}"; do
      case $mode in
        rscatter) args=(--dist-optimizer) ;;
        allreduce) args=(--allreduce exact) ;;
        native) args=(--allreduce native) ;;
      esac
      read -r _ T[$mode] _ < <(rs 2 "${args[@]}")
    done
    printf '  triple %d (load %s): reduce-scatter %s s, all-reduce %s s, native %s s; rs/ar %s, rs/native %s\n' \
      "$p" "$load" "${T[rscatter]}" "${T[allreduce]}" "${T[native]}" \
      "$(ratio "${T[rscatter]}" "${T[allreduce]}")" "$(ratio "${T[rscatter]}" "${T[native]}")"
  done
  exit 0
fi

if [[ $PART != cli ]]; then
echo "model: $MODEL; $STEPS steps, $THREADS thread(s) per rank; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-36s %10s %12s %15s\n' "configuration" "step (s)" "bytes/step" "opt-state/rank"
declare -A T B S
row() {
  local key=$1 label=$2 ranks=$3
  shift 3
  read -r T[$key] B[$key] S[$key] < <(step "$ranks" "$@")
  printf '%-36s %10.4f %12d %15d\n' "$label" "${T[$key]}" "${B[$key]}" "${S[$key]}"
}
row exact1 "allreduce=exact, 1 rank" 1 --allreduce exact
row exact2 "allreduce=exact, 2 ranks" 2 --allreduce exact
row native1 "allreduce=native, 1 rank" 1 --allreduce native
row native2 "allreduce=native, 2 ranks" 2 --allreduce native
row dist2 "exact + distributed optimizer, 2" 2 --dist-optimizer
row dist4 "exact + distributed optimizer, 4" 4 --dist-optimizer

read -r EB ET NB NT AB < <(driver 2 --bench-collectives "$REPS" |
                           awk '/^# collectives/ { print $6, $8, $10, $12, $14 }')
echo
echo "gradient all-reduce alone, 2 ranks (fastest of $REPS, one leaf's gradient per rank):"
printf '  exact  (block wire): %10d bytes %9.6f s\n' "$EB" "$ET"
printf '  native (float):      %10d bytes %9.6f s\n' "$NB" "$NT"
printf '  accumulator:         %10d bytes = %.2f bytes/param (4-limb design: 32)\n' "$AB" \
  "$(awk -v a="$AB" -v n="$NB" 'BEGIN { print a / (n / 4) }')"

echo
echo "all-reduce bytes exact/native:            $(ratio "$EB" "$NB")"
echo "all-reduce time exact/native:             $(ratio "$ET" "$NT")"
echo "bytes/step exact/native (any world):      $(ratio "${B[exact2]}" "${B[native2]}")"
echo "step exact/native, 2 ranks:               $(ratio "${T[exact2]}" "${T[native2]}")"
echo "step 2 ranks/1 rank, exact:               $(ratio "${T[exact2]}" "${T[exact1]}")"
echo "step 2 ranks/1 rank, native:              $(ratio "${T[native2]}" "${T[native1]}")"
echo "bytes/step distributed/plain, 2 ranks:    $(ratio "${B[dist2]}" "${B[exact2]}")"
echo "step distributed/plain, 2 ranks:          $(ratio "${T[dist2]}" "${T[exact2]}")"
echo "opt-state/rank distributed/plain, 2:      $(ratio "${S[dist2]}" "${S[exact2]}")"
echo "opt-state/rank distributed/plain, 4:      $(ratio "${S[dist4]}" "${S[exact1]}")"

fi
[[ $PART == driver ]] && exit 0

# ---- byte ratios of real training runs (samebits train; series/comm_bytes) ----------
SAMEBITS=${SAMEBITS:-$(dirname "$DRIVER")/../samebits}
CLI_STEPS=${CLI_STEPS:-4}
BIG=${BIG:-1}
[[ -x "$SAMEBITS" ]] || { echo "bench_dist.sh: no samebits at $SAMEBITS" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# cli RANKS MODE NAME ARGS…: a run file $work/NAME.h5 (one thread per rank).
cli() {
  local ranks=$1 mode=$2 name=$3
  shift 3
  local cmd=("$SAMEBITS" train experiments/configs/default.ini --train.warmup 0 --run.threads 1
             --train.checkpoint_every 0 --train.eval_every 0 --numerics.allreduce "$mode"
             --out "$work/$name.h5" "$@")
  [[ $ranks -gt 1 ]] && cmd=("${LAUNCH[@]}" -np "$ranks" "${cmd[@]}")
  "${cmd[@]}" > "$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
}
# summary EXACT NATIVE: "bytes_exact bytes_native ratio fastest_exact fastest_native time_ratio"
# (bytes: mean per step; times: fastest step after the first).
summary() {
  /usr/bin/python3 - "$work/$1.h5" "$work/$2.h5" <<'PY'
import sys, h5py
def read(p):
    f = h5py.File(p, "r")
    b = f["series/comm_bytes"][:].sum(axis=1)
    t = f["timing/step_seconds"][:]
    return b.mean(), (t[1:] if len(t) > 1 else t).min()
be, te = read(sys.argv[1]); bn, tn = read(sys.argv[2])
print(f"{be:.0f} {bn:.0f} {be / bn:.4f} {te:.4f} {tn:.4f} {te / tn:.3f}")
PY
}
echo
echo "samebits train, default model (experiments/configs/default.ini), $CLI_STEPS steps:"
printf '%-28s %12s %12s %8s %9s %9s %7s\n' "ranks" "exact B/step" "native B/step" "ratio" \
  "exact s" "native s" "t ratio"
for ranks in 2 3 4; do
  cli "$ranks" exact "e$ranks" --train.steps "$CLI_STEPS"
  cli "$ranks" native "n$ranks" --train.steps "$CLI_STEPS"
  read -r be bn r te tn tr < <(summary "e$ranks" "n$ranks")
  printf '%-28s %12s %12s %8s %9s %9s %7s\n' "default, $ranks ranks" "$be" "$bn" "$r" "$te" "$tn" "$tr"
done
PAIRS=${PAIRS:-3}
TIME_STEPS=${TIME_STEPS:-12}
median_step() {
  /usr/bin/python3 -c 'import sys, h5py, statistics as s
t = h5py.File(sys.argv[1], "r")["timing/step_seconds"][1:]
print(f"{s.median(t):.4f}")' "$work/$1.h5"
}
echo
echo "step time, default model, 2 ranks, $PAIRS interleaved pairs of $TIME_STEPS steps (median step):"
te_all=() tn_all=()
for ((p = 1; p <= PAIRS; ++p)); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if ((p % 2)); then  # alternate which goes first
    cli 2 exact "te$p" --train.steps "$TIME_STEPS"; cli 2 native "tn$p" --train.steps "$TIME_STEPS"
  else
    cli 2 native "tn$p" --train.steps "$TIME_STEPS"; cli 2 exact "te$p" --train.steps "$TIME_STEPS"
  fi
  te=$(median_step "te$p") tn=$(median_step "tn$p")
  te_all+=("$te") tn_all+=("$tn")
  printf '  pair %d (load %s): exact %s s, native %s s, ratio %s\n' "$p" "$load" "$te" "$tn" \
    "$(awk -v a="$te" -v b="$tn" 'BEGIN { printf "%.3f", a / b }')"
done
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "  step exact/native, 2 ranks (median of pairs): $(awk -v a="$(med "${te_all[@]}")" -v b="$(med "${tn_all[@]}")" 'BEGIN { printf "%.3f", a / b }')"
if [[ $BIG == 1 ]]; then
  big=(--model.n_layer 12 --model.n_embd 768 --model.n_head 12 --model.seq_len 256
       --data.leaves 2 --data.leaf_size 1 --train.steps 2)
  cli 2 exact ebig "${big[@]}"
  cli 2 native nbig "${big[@]}"
  read -r be bn r te tn tr < <(summary ebig nbig)
  printf '%-28s %12s %12s %8s %9s %9s %7s\n' "85 M shape, 2 ranks" "$be" "$bn" "$r" "$te" "$tn" "$tr"
fi
