# Sourced by a round's bench/results/rN/steps.sh: `R=bench/results/rN; . bench/quiet_steps.sh`,
# then `step NAME LIMIT CMD...` per measurement. Each step runs alone (llama.cpp spin-waits),
# logs its start, end, exit status and load to $R/log.txt, and is skipped once /work/STOP exists.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export PYTHONPATH=src:.
PY=.venv/bin/python
LOG=$R/log.txt
step() {  # name limit cmd...
  local name=$1 limit=$2; shift 2
  if [ -f /work/STOP ]; then echo "$(date +%T) SKIP $name (STOP)" >> "$LOG"; return; fi
  echo "$(date +%T) START $name (limit ${limit}s, load $(cut -d' ' -f1 /proc/loadavg))" >> "$LOG"
  timeout -s INT "$limit" "$@" > "$R/$name.out" 2> "$R/$name.err"
  echo "$(date +%T) END $name rc=$? (load $(cut -d' ' -f1 /proc/loadavg))" >> "$LOG"
}
