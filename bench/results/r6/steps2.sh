#!/usr/bin/env bash
# quiet-machine sequence, round 6, second part (steps.sh's 8k step was stopped at 3 min for time)
R=bench/results/r6
. "$(dirname "$0")/../../quiet_steps.sh"
step long-qwen-8k 1500 $PY bench/long_answers.py --models qwen --lengths 8192 --reps 1 --out $R/long-qwen-8k.json
step many-qwen-100filler-b 900 $PY bench/many_tools.py --model qwen --tools 100 --tool-kind filler --pairs 6 --tokens 64 --out $R/many-tools-qwen-100filler-b.json
echo "$(date +%T) DONE" >> $LOG
