#!/usr/bin/env bash
# The cluster test (labels cluster, slow): on scripts/cluster's namespace hosts, the Slurm recipes
# (srun + PMIx, mpirun over TCP) and their faults (a host lost, a link cut, a lossy slow link, SIGTERM
# as before the time limit) end to end; every finished run is `samebits diff` IDENTICAL to one process.
#   tests/cluster/test_cluster.sh SAMEBITS [WORKDIR]   (as root; exit 77 when it cannot run here)
# STEPS (default 12) and LONG (default 60) set the runs' lengths; FAIL_AFTER (15) the seconds of
# the long runs before their fault. Prints the figures of docs/studies/cluster_faults.md as it goes.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
sb=$(realpath "${1:?usage: test_cluster.sh SAMEBITS [WORKDIR]}")
work=$(realpath -m "${2:-$PWD/cluster_test}")  # not under /tmp: each host has its own /tmp
steps=${STEPS:-12} long=${LONG:-60} fail_after=${FAIL_AFTER:-15}
cluster=$src/scripts/cluster
cfg=$src/experiments/configs/default.ini
recipe=$src/scripts/slurm/train_cpu.sbatch

[ "$(id -u)" -eq 0 ] || { echo "skipped: the cluster needs root (namespaces, daemons)"; exit 77; }
command -v apt-get >/dev/null || command -v slurmctld >/dev/null || { echo "skipped: no Slurm and no apt-get"; exit 77; }
unshare --net --uts --mount true 2>/dev/null || { echo "skipped: this machine cannot make namespaces (a container?)"; exit 77; }
case $work in /tmp/*) echo "WORKDIR must not be under /tmp (each host has its own /tmp)"; exit 2 ;; esac
if [ -e /run/netns/sb-head ]; then echo "a cluster is up (scripts/cluster status); run scripts/cluster down first"; exit 2; fi

fail() { echo "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
mounted_before=$(mountpoint -q /run/netns && echo yes || echo no)
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$cluster" up 2
eval "$("$cluster" env)"
export SAMEBITS_BIN=$sb OMP_WAIT_POLICY=passive  # as root, as a container's user: the recipes pass what root needs
run_opts=(--train.warmup 2 --train.checkpoint_every 5 --train.eval_every 0)
job() {  # job NAME STEPS SBATCH-OPTION…: submit the CPU recipe for NAME.h5, print the job id
  local name=$1 n=$2; shift 2
  sbatch --parsable -o "$name-%j.out" "$@" "$recipe" "$cfg" "$name.h5" --train.steps "$n" "${run_opts[@]}"
}
gone() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
wait_gone() {  # wait_gone JOB SECONDS: wait until the job left squeue
  local i
  for i in $(seq $(($2 * 5))); do gone "$1" && return; sleep 0.2; done
  fail "job $1 still in squeue after $2 s: $(squeue -h -j "$1")"
}
wait_running() {  # wait_running JOB: until its ranks have run FAIL_AFTER seconds
  local i
  for i in $(seq 600); do [ "$(squeue -h -j "$1" -o %t)" = R ] && break; sleep 0.2; done
  sleep "$fail_after"
}
no_ranks_left() {  # no_ranks_left HOST SECONDS: wait until no samebits (or mpirun) runs on the host
  local i
  for i in $(seq $(($2 * 5))); do
    ip netns pids "sb-$1" | xargs -r ps -o comm= -p | grep -qE '^(samebits|mpirun)$' || return 0
    sleep 0.2
  done
  fail "ranks still running on $1 $2 s later: $(ip netns pids "sb-$1" | xargs -r ps -o pid=,comm= -p)"
}
identical() {  # identical A B: samebits diff exit 0
  "$sb" diff "$1" "$2" >"diff-$(basename "$2" .h5).txt" || fail "$2 differs from $1: $(head -5 "diff-$(basename "$2" .h5).txt")"
  echo "ok: $2 IDENTICAL to $1"
}
interrupted() {  # interrupted NAME: the run file of a job whose host was lost reads, marked by rank 0's watchdog
  "$sb" inspect "$1.h5" >"$1-inspect.txt" || fail "inspect of $1.h5: $(cat "$1-inspect.txt")"
  grep -q '^status  *failed: interrupted by SIGTERM and not at a step boundary' "$1-inspect.txt" ||
    fail "$1.h5 is not marked interrupted: $(grep '^status' "$1-inspect.txt")"
  [ -z "$(find "$1.store" -name '*.tmp*')" ] || fail "half-written files in $1.store: $(ls "$1.store")"
  echo "ok: $1.h5 $(grep '^status' "$1-inspect.txt" | cut -c1-90)…"
}
median_step() {  # median step seconds of a run file, after the first step
  /usr/bin/python3 -c "import h5py, statistics, sys; t = h5py.File(sys.argv[1], 'r')['timing/step_seconds'][1:]; print('%.3f' % statistics.median(t))" "$1"
}

# One process: the references.
"$sb" train "$cfg" --out one.h5 --run.threads 1 --train.steps "$steps" "${run_opts[@]}" >one.log
"$sb" train "$cfg" --out one_long.h5 --run.threads 1 --train.steps "$long" "${run_opts[@]}" >one_long.log

# The recipes on 2 hosts x 2 tasks: srun (PMIx) and mpirun (its daemons started by srun, MPI over TCP).
sbatch_2x2=(-N 2 --ntasks-per-node 2 --cpus-per-task 1)
job srun "$steps" "${sbatch_2x2[@]}" --wait >/dev/null || fail "srun recipe: $(tail -5 srun-*.out)"
identical one.h5 srun.h5
LAUNCHER=mpirun job mpirun "$steps" "${sbatch_2x2[@]}" --wait >/dev/null || fail "mpirun recipe: $(tail -5 mpirun-*.out)"
identical one.h5 mpirun.h5

# The GPU recipe's launch logic: each rank's local rank and ranks per node as samebits reads them.
for launcher in srun mpirun; do
  rm -f launch.txt
  LAUNCHER=$launcher SAMEBITS_BIN=$src/tests/cluster/launch_probe sbatch --wait -o "gpu-$launcher-%j.out" \
    -N 2 --ntasks-per-node 2 --cpus-per-task 1 --gpus-per-node=0 "$src/scripts/slurm/train_gpu.sbatch" "$cfg" gpu.h5 >/dev/null ||
    fail "train_gpu.sbatch ($launcher): $(tail -5 gpu-$launcher-*.out)"
  got=$(sort launch.txt | awk '{print $1, $2, $3}' | tr '\n' ' ')
  [ "$got" = "node1 0 2 node1 1 2 node2 0 2 node2 1 2 " ] || fail "train_gpu.sbatch ($launcher): host, local rank, ranks per node: $got"
  echo "ok: train_gpu.sbatch under $launcher: $got"
done

# A host lost mid-run: the job leaves squeue, the run file reads and is marked interrupted (node1's
# rank 0, blocked in the all-reduce when Slurm's SIGTERM comes, by its watchdog), the surviving host resumes it.
id=$(job lost "$long" "${sbatch_2x2[@]}")
wait_running "$id"
t0=$(now)
"$cluster" fail node2
wait_gone "$id" 60
echo "figure: host lost -> job out of squeue in $(since "$t0") s"
no_ranks_left node1 30
for i in $(seq 150); do [ "$(sacct -j "$id" -X -n -o State | tr -d ' ')" = NODE_FAIL ] && break; sleep 0.2; done
[ "$(sacct -j "$id" -X -n -o State | tr -d ' ')" = NODE_FAIL ] || fail "sacct: job $id is '$(sacct -j "$id" -X -n -o State)', not NODE_FAIL"
interrupted lost
job lost "$long" -N 1 -w node1 --ntasks-per-node 2 --cpus-per-task 1 --wait >/dev/null || fail "resume on node1: $(tail -5 lost-*.out)"
identical one_long.h5 lost.h5
"$cluster" up 2 >/dev/null

# The link cut during the all-reduce: the job ends, nothing left running, the resume is identical.
id=$(job cut "$long" "${sbatch_2x2[@]}")
wait_running "$id"
t0=$(now)
"$cluster" link node2 down
wait_gone "$id" 60
echo "figure: link cut -> job out of squeue in $(since "$t0") s"
"$cluster" link node2 up
no_ranks_left node1 30
no_ranks_left node2 90
interrupted cut
for i in $(seq 150); do sinfo -h -n node2 -o %t | grep -Eq '^(idle|mix)' && break; sleep 0.2; done
job cut "$long" "${sbatch_2x2[@]}" --wait >/dev/null || fail "resume after the link cut: $(tail -5 cut-*.out)"
identical one_long.h5 cut.h5

# A lossy, slow link (2 % loss and 20 ms each way on node2's link): the same bits, the step time measured.
"$cluster" degrade node2 2 20
job lossy "$steps" "${sbatch_2x2[@]}" --wait >/dev/null || fail "lossy link: $(tail -5 lossy-*.out)"
"$cluster" degrade node2 0 0
identical one.h5 lossy.h5
clean=$(median_step srun.h5) lossy=$(median_step lossy.h5)
echo "figure: median step, clean link $clean s, 2 % loss and 20 ms delay $lossy s"
# A degrade that did nothing would pass the bitwise check: the link must have slowed the steps.
awk -v c="$clean" -v l="$lossy" 'BEGIN { exit !(l >= 1.2 * c) }' ||
  fail "the degraded link did not slow the steps (median $lossy s against $clean s clean)"

# SIGTERM to the ranks, as --signal=TERM@N sends it before the time limit (delivered by the same
# slurmstepd path; the timed version is shown in docs/studies/cluster_faults.md): checkpoint, exit 2, resumed.
id=$(job term "$long" "${sbatch_2x2[@]}")
wait_running "$id"
scancel --signal=TERM "$id"
wait_gone "$id" 60
grep -q 'interrupted by SIGTERM' term-*.out || fail "no 'interrupted by SIGTERM' in $(tail -5 term-*.out)"
"$sb" inspect term.h5 | grep -q 'interrupted by SIGTERM' || fail "the run file does not say it was interrupted"
job term "$long" "${sbatch_2x2[@]}" --wait >/dev/null || fail "resume after SIGTERM: $(tail -5 term-*.out)"
identical one_long.h5 term.h5

"$cluster" down
[ -z "$(ip netns list | grep '^sb-')" ] || fail "namespaces left after down: $(ip netns list)"
! pgrep -f samebits-cluster >/dev/null || fail "processes left after down: $(pgrep -a -f samebits-cluster)"
[ "$(mountpoint -q /run/netns && echo yes || echo no)" = "$mounted_before" ] || fail "down left /run/netns mounted"
trap - EXIT
echo "cluster test passed"
