#!/usr/bin/env bash
# A stop signal that finds a rank blocked in a collective (docs/DISTRIBUTED.md §5): rank 1 of an
# `mpirun -np 2 samebits train` is stopped (SIGSTOP: a peer that never answers), rank 0 gets SIGTERM
# as Slurm sends it. Rank 0's watchdog must end it with exit 2 after its grace (10 s + twice its
# longest step: what it reports, checked against the floor and the time it took, so a loaded
# machine's slow steps lengthen the wait but cannot fail the test), the run file readable, marked
# interrupted, no half-written file in its store, and a resume must continue from its last checkpoint.
#   tests/integration/test_mpi_lost_peer.sh SAMEBITS MPIRUN   (exit 77 without MPI or mpirun)
set -euo pipefail
sb=$(realpath "${1:?usage: test_mpi_lost_peer.sh SAMEBITS MPIRUN}")
mpirun=${2:-}
[ -n "$mpirun" ] && [ -x "$mpirun" ] || { echo "skipped: no mpirun in this build"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
work=$(mktemp -d)
job=""
trap '[ -z "$job" ] || kill -9 "$job" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
cat >run.ini <<EOF
[model]
vocab = 64
seq_len = 16
n_layer = 1
n_head = 2
n_embd = 32
[data]
leaf_size = 1
leaves = 4
[train]
steps = 100000
warmup = 2
eval_every = 0
checkpoint_every = 5
[run]
threads = 1
progress = off
log_every = 100000
EOF
root=()
[ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
OMP_WAIT_POLICY=passive "$mpirun" --oversubscribe --bind-to none "${root[@]}" -np 2 \
  "$sb" train run.ini --out lost.h5 >job.log 2>&1 &
job=$!
latest_state() {  # the step of the newest checkpoint in the store (older ones are pruned as it runs)
  ls lost.store 2>/dev/null | sed -n 's/^state_step_0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -1
}
for i in $(seq 600); do [ "$(latest_state)" -ge 20 ] 2>/dev/null && break; sleep 0.1; done
[ "$(latest_state)" -ge 20 ] 2>/dev/null || fail "no checkpoint of step 20 or later after 60 s: $(ls lost.store 2>&1; cat job.log)"
children() {  # children PID: the samebits processes whose parent is PID (no procps needed)
  local stat pid comm state ppid rest
  for stat in /proc/[0-9]*/stat; do
    read -r pid comm state ppid rest <"$stat" 2>/dev/null || continue
    [ "$ppid" = "$1" ] && [ "$comm" = "(samebits)" ] && echo "$pid"
  done
  return 0
}
rank=()
for pid in $(children "$job"); do
  r=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
  rank[$r]=$pid
done
[ -n "${rank[0]:-}" ] && [ -n "${rank[1]:-}" ] || fail "ranks not found among mpirun's children ($(children "$job"))"
alive() {  # alive PID: the process exists and has not ended (a zombie awaiting mpirun's wait has)
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}
kill -STOP "${rank[1]}"
t0=$(date +%s.%N)
kill -TERM "${rank[0]}"
for i in $(seq 2400); do alive "${rank[0]}" || break; sleep 0.1; done
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
alive "${rank[0]}" && fail "rank 0 still runs 240 s after SIGTERM: $(cat job.log)"
kill -9 "${rank[1]}" 2>/dev/null || true
set +e
wait "$job"
set -e
job=""
if grep -q 'ended its session after SIGTERM but still runs .* this rank ends (exit 2)' job.log; then
  # Rank 1 was stopped after its part of the stop agreement: rank 0 ended its session at the step
  # boundary (the file marked as any interrupted run), and its watchdog ended the process that
  # MPI's finalisation held, 10 s after the session at the earliest.
  echo "rank 0 stopped at a step boundary, its process ended by the watchdog ${took} s after SIGTERM"
  awk -v t="$took" 'BEGIN { exit !(t >= 10 && t < 200) }' || fail "rank 0's process ended ${took} s after SIGTERM"
  marked='failed: interrupted by SIGTERM after step [0-9]*; continue with'
else
  grace=$(sed -n 's/.*not at a step boundary \([0-9.]*\) s later.*this rank ends (exit 2).*/\1/p' job.log | head -1)
  [ -n "$grace" ] || fail "rank 0 did not say why it ended: $(cat job.log)"
  echo "rank 0 ended ${took} s after SIGTERM (its grace: ${grace} s)"
  awk -v t="$took" -v g="$grace" 'BEGIN { exit !(g >= 10 && t >= g - 0.5 && t < g + 20) }' ||
    fail "rank 0 ended ${took} s after SIGTERM, not after its grace of ${grace} s (10 s + twice its longest step)"
  marked='failed: interrupted by SIGTERM and not at a step boundary [0-9.]* s later (a rank blocked in a collective: a peer or its host lost?) after step [0-9]*; continue with'
fi
"$sb" inspect lost.h5 >inspect.txt || fail "inspect: $(cat inspect.txt)"
grep -q "^status  *$marked" inspect.txt || fail "the run file is not marked interrupted: $(grep '^status' inspect.txt)"
[ -z "$(find lost.store -name '*.tmp*')" ] || fail "half-written files in the store: $(ls lost.store)"
"$sb" train run.ini --out lost.h5 --resume --stop-after 30 >resume.log 2>&1 || fail "resume: $(cat resume.log)"
grep -q 'resume: lost.h5 at step [1-9][0-9]* (from checkpoint' resume.log || fail "resume did not start at a checkpoint: $(cat resume.log)"
echo "ok: $(grep '^status' inspect.txt | cut -c1-100)…; resumed: $(grep -m1 'resume: lost.h5' resume.log)"
