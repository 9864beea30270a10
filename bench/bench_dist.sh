#!/usr/bin/env bash
# bench_dist.sh — data parallelism (issue 7, docs/DISTRIBUTED.md): seconds per step and bytes each
# rank passes to collectives per step, exact (int64 limbs) vs native (float) all-reduce, 1 vs 2
# ranks; optimizer-state bytes per rank with and without the distributed optimizer (1, 2, 4 ranks).
# Uses tests/tools/mpi_train_driver (built with the tests). Timings exclude the first step.
#   bench/bench_dist.sh [DRIVER]      (default: build/release/bin/tests/mpi_train_driver)
#   MODEL="--layers 4 --width 128 …" STEPS=6 THREADS=1 bench/bench_dist.sh
set -euo pipefail

DRIVER=${1:-build/release/bin/tests/mpi_train_driver}
MPIRUN=${MPIRUN:-mpirun}
THREADS=${THREADS:-1}  # OpenMP threads per rank
STEPS=${STEPS:-6}
MODEL=${MODEL:---layers 2 --width 128 --heads 4 --seq 64 --vocab 256 --leaves 8 --leaf-size 2}
[[ -x "$DRIVER" ]] || { echo "bench_dist.sh: no driver at $DRIVER (build target mpi_train_driver)" >&2; exit 2; }
command -v "$MPIRUN" > /dev/null || { echo "bench_dist.sh: no $MPIRUN on PATH" >&2; exit 2; }
LAUNCH=("$MPIRUN" --oversubscribe --bind-to none)
[[ $(id -u) == 0 ]] && LAUNCH+=(--allow-run-as-root)

# summary RANKS THREADS ARGS…: prints "seconds_per_step bytes_per_step optimizer_state_bytes_max".
summary() {
  local ranks=$1 threads=$2
  shift 2
  local cmd=("$DRIVER" --bench $MODEL --steps "$STEPS" --threads "$threads" "$@")
  [[ $ranks -gt 1 ]] && cmd=("${LAUNCH[@]}" -np "$ranks" "${cmd[@]}")
  "${cmd[@]}" | awk '/^# summary/ { print $6, $8, $10 }'
}

echo "model: $MODEL, $STEPS steps, $THREADS thread(s) per rank; $(nproc) cores here, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-34s %8s %14s %14s\n' "configuration" "s/step" "bytes/step" "opt-state/rank"
declare -A T B S
for mode in exact native; do
  for ranks in 1 2; do
    read -r t b s < <(summary "$ranks" "$THREADS" --allreduce "$mode")
    T[$mode$ranks]=$t B[$mode$ranks]=$b S[$mode$ranks]=$s
    printf '%-34s %8.3f %14d %14d\n' "allreduce=$mode, $ranks rank(s)" "$t" "$b" "$s"
  done
done
for ranks in 2 4; do
  read -r t b s < <(summary "$ranks" "$THREADS" --dist-optimizer)
  S[dist$ranks]=$s B[dist$ranks]=$b T[dist$ranks]=$t
  printf '%-34s %8.3f %14d %14d\n' "exact + dist. optimizer, $ranks ranks" "$t" "$b" "$s"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
echo
echo "bytes/step exact/native (2 ranks):           $(ratio "${B[exact2]}" "${B[native2]}")"
echo "s/step exact/native (2 ranks):               $(ratio "${T[exact2]}" "${T[native2]}")"
echo "s/step 2 ranks/1 rank (exact):               $(ratio "${T[exact2]}" "${T[exact1]}")"
echo "s/step 2 ranks/1 rank (native):              $(ratio "${T[native2]}" "${T[native1]}")"
echo "bytes/step dist/plain (2 ranks):             $(ratio "${B[dist2]}" "${B[exact2]}")"
echo "s/step dist/plain (2 ranks):                 $(ratio "${T[dist2]}" "${T[exact2]}")"
echo "opt-state/rank dist/plain, 2 ranks:          $(ratio "${S[dist2]}" "${S[exact2]}")"
echo "opt-state/rank dist/plain, 4 ranks:          $(ratio "${S[dist4]}" "${S[exact1]}")"
