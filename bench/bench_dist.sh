#!/usr/bin/env bash
# bench_dist.sh — data parallelism (issue 7, docs/DISTRIBUTED.md): time per step and bytes each rank
# passes to collectives per step, exact (int64 limbs) vs native (float) all-reduce, 1 vs 2 ranks;
# the gradient all-reduce alone; optimizer-state bytes per rank with and without the distributed
# optimizer (2 and 4 ranks). Uses tests/tools/mpi_train_driver (built with the tests). Times are
# the fastest step after the first (and the fastest of REPS all-reduces), which resists the noise
# of a shared machine; bytes and state sizes are exact counts.
#   bench/bench_dist.sh [DRIVER]      (default: build/release/bin/tests/mpi_train_driver)
#   MODEL="--layers 4 --width 128 …" STEPS=8 REPS=200 THREADS=1 bench/bench_dist.sh
set -euo pipefail

DRIVER=${1:-build/release/bin/tests/mpi_train_driver}
MPIRUN=${MPIRUN:-mpirun}
THREADS=${THREADS:-1}  # OpenMP threads per rank
STEPS=${STEPS:-8}
REPS=${REPS:-200}
MODEL=${MODEL:---layers 2 --width 128 --heads 4 --seq 64 --vocab 256 --leaves 8 --leaf-size 2}
[[ -x "$DRIVER" ]] || { echo "bench_dist.sh: no driver at $DRIVER (build target mpi_train_driver)" >&2; exit 2; }
command -v "$MPIRUN" > /dev/null || { echo "bench_dist.sh: no $MPIRUN on PATH" >&2; exit 2; }
LAUNCH=("$MPIRUN" --oversubscribe --bind-to none)
[[ $(id -u) == 0 ]] && LAUNCH+=(--allow-run-as-root)

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

read -r EB ET NB NT < <(driver 2 --bench-collectives "$REPS" |
                        awk '/^# collectives/ { print $6, $8, $10, $12 }')
echo
echo "gradient all-reduce alone, 2 ranks (fastest of $REPS):"
printf '  exact  (int64 limbs): %10d bytes %9.6f s\n' "$EB" "$ET"
printf '  native (float):       %10d bytes %9.6f s\n' "$NB" "$NT"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
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
