"""The real-template corpus check: every template in ``../shared/templates-corpus``, read back.

For each template (``tooldialect.conformance.check_template``), with builtins and without: is the
call the template itself writes read back exactly, and does the full tool conversation render?
Prints a per-family table; ``--markdown PATH`` writes it (``docs/corpus.md``), ``--json PATH``
the raw rows.

    python bench/corpus.py [--corpus DIR] [--markdown docs/corpus.md] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tooldialect.conformance import check_template

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("TOOLDIALECT_CORPUS", ROOT.parent / "shared" / "templates-corpus"))


@dataclass(frozen=True)
class Row:
    """One template's verdicts, with builtins (``on``) and without (``off``)."""

    file: str
    family: str
    on: str
    off: str
    dialect: str
    reason_on: str
    reason_off: str


def corpus_files(corpus: Path = CORPUS) -> Iterator[tuple[str, str]]:
    """(file, family) for every template of ``INDEX.tsv``."""
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as f:
        for entry in csv.DictReader(f, delimiter="\t"):
            yield entry["file"], entry["family"]


def check_file(corpus: Path, file: str, family: str) -> Row:
    """Both verdicts for one template."""
    source = (corpus / file).read_text(encoding="utf-8")
    on = check_template(source, builtins=True, bos_token="<s>", eos_token="</s>")
    off = check_template(source, builtins=False, bos_token="<s>", eos_token="</s>")
    return Row(file, family, on.verdict, off.verdict, on.detection.spec.id, on.reason, off.reason)


def check_corpus(corpus: Path = CORPUS) -> list[Row]:
    """Every template's row."""
    return [check_file(corpus, file, family) for file, family in corpus_files(corpus)]


def rate(rows: Sequence[Row], *, builtins: bool) -> tuple[int, int]:
    """(read, templates that write a call) with builtins on or off."""
    verdicts = [r.on if builtins else r.off for r in rows]
    calls = [v for v in verdicts if v in ("reads", "misreads")]
    return sum(v == "reads" for v in calls), len(calls)


INTRO = """# The real-template corpus: does each template's own call read back?

Written by `python bench/corpus.py --markdown docs/corpus.md`; CI runs the same check
(`tests/dialect/test_corpus.py`). The corpus is `../shared/templates-corpus`: 341 real chat
templates of 71 families, byte for byte as published (sources and commits in its `INDEX.tsv`).

For every template, with builtins and derived only (`tooldialect.conformance.check_template`):
detect the dialect; render a past call whose arguments hold every JSON type (a string with
quotes, `<`, `&` and a newline, an integer, a float, a boolean, a null, an array, nested
objects: `tooldialect.verify.RICH_ARGUMENTS`) and require that the parser reads back exactly that
call, types included, with nothing of it left as content; render the whole conversation the
handler sends (system, user, the call, its tool result, a second user turn) without losing a
message. `tooldialect inspect TEMPLATE.jinja` prints the same verdict and reason for one file.

Verdicts: `reads`; `misreads` (the template writes a call the spec does not read exactly, or the
conversation does not render); `no-call` (tools render, a past call does not: nothing to read
back); `no-tools` (the template renders neither); `broken` (it does not compile).

"""


def markdown(rows: Sequence[Row]) -> str:
    """The report: totals, per family, then every template that is not read, with its reason."""
    lines = ["| family | templates | write a call | read (builtins) | read (derived only) |"]
    lines.append("|---|---:|---:|---:|---:|")
    by_family: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_family[r.family].append(r)
    for family in sorted(by_family, key=str.lower):
        group = by_family[family]
        on, calls = rate(group, builtins=True)
        off, calls_off = rate(group, builtins=False)
        lines.append(f"| {family} | {len(group)} | {calls} | {on} | {off} of {calls_off} |")
    on, calls = rate(rows, builtins=True)
    off, calls_off = rate(rows, builtins=False)
    head = [
        f"Templates: {len(rows)}. Write a past call: {calls}. Read back exactly: **{on} of "
        f"{calls} ({100 * on / max(calls, 1):.1f}%)** with builtins, **{off} of {calls_off} "
        f"({100 * off / max(calls_off, 1):.1f}%)** derived only.",
        "",
        "Verdicts (builtins): "
        + ", ".join(f"{k} {v}" for k, v in sorted(Counter(r.on for r in rows).items())),
        "",
    ]
    misread = [r for r in rows if "misreads" in (r.on, r.off)]
    tail = ["", "## Templates not read", ""]
    tail += [f"- `{r.file}` ({r.on}/{r.off}): {r.reason_on or r.reason_off}" for r in misread]
    tail += ["", "## Templates that write no past call", ""]
    tail += [f"- `{r.file}` ({r.on}): {r.reason_on}" for r in rows if r.on in ("no-call",)]
    tail += ["", "## Templates that render neither tools nor a past call", ""]
    tail += [
        "The polyfill serves them (tools described in the system turn, calls as JSON in a tag); "
        "nothing of theirs can be read back. Verdict `no-tools` (`broken`: does not compile):",
        "",
    ]
    tail += [f"- `{r.file}` ({r.on})" for r in rows if r.on in ("no-tools", "broken")]
    return INTRO + "\n".join([*head, *lines, *tail]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not (args.corpus / "INDEX.tsv").exists():
        print(f"no template corpus at {args.corpus}: nothing to check", file=sys.stderr)
        return 0
    rows = check_corpus(args.corpus)
    text = markdown(rows)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
