#!/bin/bash
# A single-node Slurm cluster for cqlab campaigns, started by hand (no
# systemd): munged, slurmctld and slurmd as root, with every file under one
# state directory and ports of their own, so it disturbs no other Slurm.
#
#   tools/slurm/single-node.sh install   # apt-get install slurm-wlm munge (root)
#   tools/slurm/single-node.sh start     # install if needed, start, wait until the node is idle
#   tools/slurm/single-node.sh env       # print the SLURM_CONF export to use the cluster
#   tools/slurm/single-node.sh stop      # stop the daemons
#
# Exit status 3 means "cannot run here" (not root, no apt-get, packages not
# installable, daemons refuse to start); the reason is on stderr.
#
# Packages: Debian's slurm-wlm and munge. Configuration keys: slurm.conf(5)
# of Slurm 22.05; munged(8).
set -euo pipefail

STATE=${CQLAB_SLURM_DIR:-/tmp/cqlab-slurm}
CONF=$STATE/slurm.conf
CTLD_PORT=${CQLAB_SLURM_CTLD_PORT:-16817}
SLURMD_PORT=${CQLAB_SLURM_SLURMD_PORT:-16818}
SKIP=3

skip() { echo "cqlab-slurm: SKIP: $*" >&2; exit $SKIP; }
have_all() { command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; }

find_munged() {
  command -v munged 2>/dev/null || { [ -x /usr/sbin/munged ] && echo /usr/sbin/munged; } || true
}

install() {
  export PATH=$PATH:/usr/sbin:/sbin
  have_all && return 0
  [ "$(id -u)" = 0 ] || skip "slurm-wlm/munge are not installed and installing them needs root"
  command -v apt-get >/dev/null || skip "slurm-wlm/munge are not installed and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends slurm-wlm munge >"$STATE.apt.log" 2>&1; then
    apt-get update -qq >>"$STATE.apt.log" 2>&1 || true
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >>"$STATE.apt.log" 2>&1 ||
      skip "apt-get install slurm-wlm munge failed (log: $STATE.apt.log)"
  fi
  have_all || skip "slurm-wlm/munge installed but sbatch/slurmctld/slurmd/munged not found"
}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  install
  export PATH=$PATH:/usr/sbin:/sbin
  [ "$(id -u)" = 0 ] || skip "the daemons are started as root"
  mkdir -p "$STATE"/ctld "$STATE"/d "$STATE"/munge
  chmod 700 "$STATE/munge"
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo)
  if [ ! -f "$STATE/munge/munge.key" ]; then
    dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$STATE/munge/munge.key"
  fi
  if ! running "$STATE/munge/munged.pid"; then
    "$(find_munged)" --force --key-file="$STATE/munge/munge.key" --socket="$STATE/munge/munge.socket" \
      --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
      --seed-file="$STATE/munge/munged.seed" || skip "munged does not start (see $STATE/munge/munged.log)"
  fi
  cat >"$CONF" <<CONF
ClusterName=cqlab
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$STATE/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=cqlab Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$CONF
  running "$STATE/slurmctld.pid" || slurmctld -f "$CONF" || skip "slurmctld does not start (see $STATE/slurmctld.log)"
  running "$STATE/slurmd.pid" || slurmd -f "$CONF" || skip "slurmd does not start (see $STATE/slurmd.log)"
  for _ in $(seq 1 150); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "cqlab-slurm: node $host is up; use: export SLURM_CONF=$CONF" >&2
      return 0
    fi
    sleep 0.2
  done
  skip "the node did not come up in 30 s (sinfo: $(sinfo -h -N 2>&1 | head -1); logs in $STATE)"
}

stop() {
  for p in "$STATE/slurmd.pid" "$STATE/slurmctld.pid" "$STATE/munge/munged.pid"; do
    if running "$p"; then kill "$(cat "$p")" || true; fi
  done
}

case "${1:-}" in
  install) mkdir -p "$(dirname "$STATE")"; install ;;
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 install|start|stop|env" >&2; exit 2 ;;
esac
