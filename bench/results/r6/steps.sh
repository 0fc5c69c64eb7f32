#!/usr/bin/env bash
# quiet-machine sequence, round 6 (run alone: bash bench/results/r6/steps.sh)
R=bench/results/r6
. "$(dirname "$0")/../../quiet_steps.sh"
step memory 300 $PY -c "import json,sys; sys.argv=['x']; from bench import overhead; print(json.dumps(overhead.memory(reps=3)))"
step many-qwen-100filler 900 $PY bench/many_tools.py --model qwen --tools 100 --tool-kind filler --pairs 6 --tokens 64 --out $R/many-tools-qwen-100filler.json
step long-qwen-512-2k 1200 $PY bench/long_answers.py --models qwen --lengths 512,2048 --reps 2 --out $R/long-qwen-512-2k.json
step many-smollm2-100filler 600 $PY bench/many_tools.py --model smollm2 --tools 100 --tool-kind filler --pairs 6 --tokens 64 --out $R/many-tools-smollm2-100filler.json
step long-qwen-8k 2500 $PY bench/long_answers.py --models qwen --lengths 8192 --reps 2 --out $R/long-qwen-8k.json
echo "$(date +%T) DONE" >> $LOG
