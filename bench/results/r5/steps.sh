#!/usr/bin/env bash
# quiet-machine sequence, round 5
R=bench/results/r5
. "$(dirname "$0")/../../quiet_steps.sh"
step auto 420 $PY bench/fastforward.py --mode auto --models qwen smollm2 --tools 1 10 --reps 3
step acc-qwen-drafts 420 $PY bench/layout_accuracy.py --model qwen --per-category 8 --choices auto --variants canonical+ff canonical+ff+drafts --explain
step overhead 300 $PY bench/overhead.py --only-overhead --reps 5
step many-smollm2-250small 900 $PY bench/many_tools.py --model smollm2 --tools 250 --tool-kind small --pairs 6 --tokens 64 --out $R/many-tools-smollm2-250small.json
step many-qwen-250small 1100 $PY bench/many_tools.py --model qwen --tools 250 --tool-kind small --pairs 6 --tokens 64 --out $R/many-tools-qwen-250small.json
step runquick 1500 $PY bench/run.py --quick
step long-smollm2-8k 1200 $PY bench/long_answers.py --models smollm2 --lengths 8192 --reps 2 --out $R/long-smollm2-8k.json
echo "$(date +%T) DONE" >> $LOG
