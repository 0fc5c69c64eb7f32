#!/usr/bin/env bash
# quiet-machine sequence, round 6, third part (steps2.sh stopped after its first step: the file
# was rewritten while bash was reading it)
R=bench/results/r6
. "$(dirname "$0")/../../quiet_steps.sh"
step many-qwen-100filler-b 900 $PY bench/many_tools.py --model qwen --tools 100 --tool-kind filler --pairs 6 --tokens 64 --out $R/many-tools-qwen-100filler-b.json
step runquick 1500 $PY bench/run.py --quick
echo "$(date +%T) DONE" >> $LOG
