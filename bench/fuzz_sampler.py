"""Child process for ``fuzz_cases.run_sampler_cases``: grammars on llama.cpp's sampler.

Reads JSON lines ``{"gbnf", "accept": [texts], "reject": [texts]}`` from stdin, loads the model
given on the command line with ``vocab_only=True`` and prints one JSON line per case, flushed, so
the parent knows which case was running if llama.cpp aborts the process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# the llama.cpp grammar helpers live with the tests (tests/grammar_check.py)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> None:
    import llama_cpp

    from grammar_check import grammar_accepts, validate_grammar, vocab_of
    from tooldialect.errors import GrammarError

    llama = llama_cpp.Llama(sys.argv[1], vocab_only=True, verbose=False)
    vocab = vocab_of(llama)
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        out: dict[str, object] = {"loaded": True, "accept_fail": [], "reject_fail": []}
        # The vocab cannot spell some code points (rare planes): not a grammar question.
        accept = [t for t in case["accept"] if _round_trips(llama, t)]
        out["untokenizable"] = len(case["accept"]) - len(accept)
        try:
            validate_grammar(case["gbnf"], vocab=vocab)
        except GrammarError:
            out["loaded"] = False
        else:
            out["accept_fail"] = [
                t for t in accept if not grammar_accepts(case["gbnf"], t, llama=llama)
            ]
            out["reject_fail"] = [
                t for t in case["reject"] if grammar_accepts(case["gbnf"], t, llama=llama)
            ]
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def _round_trips(llama: object, text: str) -> bool:
    data = text.encode("utf-8")
    tokens = llama.tokenize(data, add_bos=False, special=True)  # type: ignore[attr-defined]
    return bool(llama.detokenize(tokens) == data)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
