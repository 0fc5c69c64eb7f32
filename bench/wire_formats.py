"""Generated wire formats: does detection read each generated template's own calls? (issue 39 §4)

For each of ``--count`` templates of ``bench/wire_generator`` (seed ``--seed``), with builtins and
derived only, as ``bench/corpus.py`` measures the real corpus:

(a) **own call**: ``tooldialect.conformance.check_template``: detect the dialect and require that
    its spec reads back exactly the template's own rendering of a past call whose arguments hold
    every JSON type (``verify.RICH_ARGUMENTS``: quotes, ``<``, ``&``, a newline, nesting);
    **two calls**: the template's rendering of a turn with two calls (the rich one and a second
    tool's), cut where the generator says the reply starts and ends, read back exactly, in order,
    with nothing left as content;
(b) **conversation**: the handler's whole conversation renders (``check_template``'s), and so
    does one with the two calls, both results, an answer and another user turn
    (``frontend.render.render_prompt``).

A template is *read* when (a) and (b) hold. Writes a markdown report with a per-axis table
(``--markdown``) and every template's outcome with the reason for each miss (``--json``). The
numbers measure derivation; nothing here asserts a rate.

    python bench/wire_formats.py --count 2000 --seed 0 \\
        [--markdown bench/results/wire-formats.md] [--json bench/results/wire-formats.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.wire_generator import AXES, BOS, EOS, GeneratedTemplate, generate  # noqa: E402
from tooldialect.conformance import check_template  # noqa: E402
from tooldialect.dialect.spec import DialectSpec  # noqa: E402
from tooldialect.errors import ToolDialectError  # noqa: E402
from tooldialect.frontend.render import render_prompt  # noqa: E402
from tooldialect.prompt.template import ChatTemplate  # noqa: E402
from tooldialect.verify import RICH_ARGUMENTS, read_calls, tool_for  # noqa: E402

RESULTS = ROOT / "bench" / "results"
SECOND_NAME = "get_weather"
SECOND_ARGS: dict[str, Any] = {
    "city": "Lyon & <Paris>",
    "days": 2,
    "metric": False,
    "note": 'a "b"',
}
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("qx7call01", "lookup_item", dict(RICH_ARGUMENTS)),
    ("qx7call02", SECOND_NAME, SECOND_ARGS),
]
KINDS = ("read", "generator", "no spec", "own call", "two calls", "conversation")
"""A template's outcome, the first that applies: ``generator`` (the template renders no call or
does not compile: a fault of the generator), ``no spec`` (detection fell back to the polyfill),
``own call`` (a spec was kept but misreads the rich call), ``two calls``, ``conversation``."""


def tools() -> list[dict[str, Any]]:
    """The two tools the calls use."""
    second = tool_for(SECOND_ARGS)
    second["function"] = {**second["function"], "name": SECOND_NAME}
    return [tool_for(RICH_ARGUMENTS), second]


def two_call_turn() -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in CALLS
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def long_conversation() -> list[dict[str, Any]]:
    """System, user, two calls, both results, an answer, another user turn."""
    results = [
        {"role": "tool", "tool_call_id": i, "name": n, "content": f'{{"ok": {k}}}'}
        for k, (i, n, _) in enumerate(CALLS)
    ]
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find a lamp and the weather."},
        two_call_turn(),
        *results,
        {"role": "assistant", "content": "Found both."},
        {"role": "user", "content": "Thanks."},
    ]


def same_json(got: Any, want: Any) -> bool:
    """``got == want`` with JSON types kept apart (``1 != True != 1.0``)."""
    if isinstance(want, Mapping):
        return (
            isinstance(got, Mapping)
            and set(got) == set(want)
            and all(same_json(got[k], v) for k, v in want.items())
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(same_json(g, w) for g, w in zip(got, want, strict=True))
        )
    return type(got) is type(want) and got == want


def reply_of(g: GeneratedTemplate, rendered: str) -> str:
    """The last assistant turn's text, between the header and the end the generator wrote."""
    start = rendered.rfind(g.reply_open)
    text = rendered[start + len(g.reply_open) :] if start >= 0 else rendered
    end = text.find(g.reply_close)
    return text if end < 0 else text[:end]


def read_two_calls(g: GeneratedTemplate, template: ChatTemplate, spec: DialectSpec) -> str:
    """``""`` when ``spec`` reads the template's two-call turn exactly, else why not."""
    messages = [{"role": "user", "content": "Find a lamp and the weather."}, two_call_turn()]
    try:
        rendered = template.render(messages, tools=tools(), add_generation_prompt=False)
    except ToolDialectError as exc:
        return f"the two-call turn does not render: {str(exc)[:200]}"
    reply = reply_of(g, rendered)
    cut = min((reply.find(s) for s in spec.stop if s and s in reply), default=-1)
    text = reply if cut < 0 else reply[:cut]
    got = read_calls(text, spec, tools=tools())
    if got is None:
        return f"the parser raised on {text[:200]!r}"
    # a null the template leaves out (TOML has none) is not part of the call as written
    want = [(n, {k: v for k, v in a.items() if v is not None or k in text}) for _, n, a in CALLS]
    if len(got.calls) != 2 or any(
        gn != wn or not same_json(ga, wa)
        for (gn, ga), (wn, wa) in zip(got.calls, want, strict=False)
    ):
        return f"reads {got.calls!r} from {text.strip()[:200]!r}"
    if got.content.strip():
        return f"leaves {got.content.strip()[:120]!r} as content of {text.strip()[:200]!r}"
    return ""


def render_long(template: ChatTemplate, spec: DialectSpec) -> str:
    """``""`` when the long conversation renders, else the error."""
    try:
        render_prompt(template, spec, long_conversation(), tools=tools())
    except ToolDialectError as exc:
        return str(exc).splitlines()[0][:300]
    return ""


@dataclass(frozen=True)
class Verdict:
    """One template under one detection mode."""

    kind: str
    chosen: str
    dialect: str
    reason: str = ""

    @property
    def read(self) -> bool:
        return self.kind == "read"


def judge(g: GeneratedTemplate, *, builtins: bool) -> Verdict:
    """The template's outcome with builtins on or off (see ``KINDS``)."""
    report = check_template(g.source, builtins=builtins, bos_token=BOS, eos_token=EOS)
    spec, chosen = report.detection.spec, report.detection.chosen
    verdict = report.verdict
    if verdict in ("no-call", "no-tools", "broken"):
        return Verdict("generator", chosen, spec.id, f"{verdict}: {report.reason}")
    if chosen == "polyfill":
        reason = report.detection.warning or report.own_call.reason
        return Verdict("no spec", chosen, spec.id, reason[:300])
    if not report.own_call.ok:
        return Verdict("own call", chosen, spec.id, report.own_call.reason[:300])
    template = ChatTemplate(g.source, bos_token=BOS, eos_token=EOS)
    two = read_two_calls(g, template, spec)
    if two:
        return Verdict("two calls", chosen, spec.id, two)
    error = report.conversation_error or render_long(template, spec)
    if error:
        return Verdict("conversation", chosen, spec.id, error)
    return Verdict("read", chosen, spec.id)


@dataclass(frozen=True)
class Row:
    """One template's outcomes."""

    seed: int
    axes: dict[str, str]
    builtins: Verdict
    derived: Verdict


def measure(seed: int) -> Row:
    """Generate the template of ``seed`` and judge it both ways."""
    g = generate(seed)
    return Row(seed, g.axes.as_dict(), judge(g, builtins=True), judge(g, builtins=False))


def measure_all(seeds: Sequence[int], *, jobs: int = 1) -> list[Row]:
    """Every seed's row (``jobs`` processes: 1 keeps the run in this one)."""
    if jobs <= 1:
        return [measure(s) for s in seeds]
    from multiprocessing import Pool

    with Pool(jobs) as pool:
        return pool.map(measure, seeds, chunksize=16)


def seeds_for(count: int, seed: int) -> list[int]:
    """The template seeds of a run (``bench.wire_generator.generate_many``'s)."""
    return [seed * 1_000_000 + i for i in range(count)]


# ---------------------------------------------------------------------------------------------
# The report


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _rate(rows: Iterable[Row]) -> tuple[int, int, int]:
    rows = list(rows)
    return sum(r.builtins.read for r in rows), sum(r.derived.read for r in rows), len(rows)


def axis_table(rows: Sequence[Row]) -> list[str]:
    """Per axis and value: templates, read with builtins, read derived only."""
    lines = [
        "| axis | value | templates | read (builtins) | read (derived only) |",
        "|---|---|---:|---:|---:|",
    ]
    for axis, values in AXES.items():
        groups: dict[str, list[Row]] = defaultdict(list)
        for r in rows:
            groups[r.axes[axis]].append(r)
        for value in values:
            on, off, n = _rate(groups.get(value, []))
            lines.append(f"| {axis} | {value} | {n} | {_pct(on, n)} | {_pct(off, n)} |")
    return lines


def kind_table(rows: Sequence[Row]) -> list[str]:
    on = Counter(r.builtins.kind for r in rows)
    off = Counter(r.derived.kind for r in rows)
    lines = ["| outcome | builtins | derived only |", "|---|---:|---:|"]
    lines += [f"| {k} | {on[k]} | {off[k]} |" for k in KINDS]
    return lines


def _example_misses(rows: Sequence[Row], limit: int) -> list[str]:
    """The first miss (derived only) of each structure and codec pair, up to ``limit``."""
    seen: set[tuple[str, str]] = set()
    lines: list[str] = []
    for r in rows:
        pair = (r.axes["structure"], r.axes["codec"])
        if r.derived.read or pair in seen or len(lines) >= limit:
            continue
        seen.add(pair)
        reason = r.derived.reason.replace("|", "\\|").replace("\n", "\\n")[:220]
        lines.append(
            f"- seed {r.seed} ({pair[0]}, {pair[1]}, name {r.axes['name_at']}): "
            f"{r.derived.kind}: `{reason}`"
        )
    return lines


def markdown(
    rows: Sequence[Row], *, seed: int, seconds: float, jobs: int, source: str, note: str = ""
) -> str:
    on, off, n = _rate(rows)
    head = [
        "# Generated wire formats: does detection read each template's own calls?",
        "",
        f"Written by `python bench/wire_formats.py --count {n} --seed {seed}`, measuring "
        f"{source}.{' ' + note if note else ''} The generator is `bench/wire_generator/` "
        "(its docstring documents every "
        "axis); the checks are in `bench/wire_formats.py`: the template's own rich call read "
        "back exactly (`check_template`, as `bench/corpus.py`), a two-call turn read back "
        "exactly and in order, and two whole conversations rendered.",
        "",
        f"Templates: {n} (seed {seed}). Read: **{on} of {n} ({_pct(on, n)})** with builtins, "
        f"**{off} of {n} ({_pct(off, n)})** derived only.",
        "",
        f"Time: {seconds:.0f} s for {n} templates ({1000 * seconds / max(n, 1):.0f} ms a "
        f"template, both modes), {jobs} process{'es' if jobs > 1 else ''}.",
        "",
        "## Outcomes",
        "",
        *kind_table(rows),
        "",
        "## Per axis",
        "",
        *axis_table(rows),
        "",
        "## A miss of each structure and codec (derived only)",
        "",
        *_example_misses(rows, 60),
    ]
    return "\n".join(head) + "\n"


def rows_json(rows: Sequence[Row], *, seed: int, seconds: float, source: str, note: str) -> str:
    """The run as JSON, one template a line: its seed, axes and derived-only outcome, and its
    outcome with builtins, or ``"as derived"`` where that is the same."""
    head = {"count": len(rows), "seed": seed, "seconds": round(seconds, 1), "source": source}
    lines = []
    for r in rows:
        row = asdict(r)
        if r.builtins == r.derived:
            row["builtins"] = "as derived"
        lines.append(json.dumps(row, ensure_ascii=False))
    meta = json.dumps({**head, "note": note}, ensure_ascii=False)[:-1]
    return meta + ', "rows": [\n' + ",\n".join(lines) + "\n]}\n"


def _source_note() -> str:
    """Which ``tooldialect`` was measured: the commit, and whether it was the checkout's own
    ``src`` with uncommitted changes or another copy (``PYTHONPATH``)."""
    import tooldialect

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT)
        except OSError:
            return ""
        return out.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    where = Path(tooldialect.__file__).resolve().parents[1]
    if where != ROOT / "src":
        return f"`tooldialect` from `{where}` (the checkout is at `{commit}`)"
    dirty = git("status", "--porcelain", "--", "src")
    return f"commit `{commit}`" + (" with uncommitted changes in `src/`" if dirty else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--markdown", type=Path, default=RESULTS / "wire-formats.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "wire-formats.json")
    parser.add_argument("--note", default="", help="a sentence for the report's head")
    args = parser.parse_args(argv)
    # 2,000 new templates a run: keep them out of the compiled-template cache on disk
    os.environ["TOOLDIALECT_CACHE_DIR"] = ""
    start = time.perf_counter()
    rows = measure_all(seeds_for(args.count, args.seed), jobs=args.jobs)
    seconds = time.perf_counter() - start
    source = _source_note()
    text = markdown(
        rows, seed=args.seed, seconds=seconds, jobs=args.jobs, source=source, note=args.note
    )
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(text, encoding="utf-8")
    args.json.write_text(
        rows_json(rows, seed=args.seed, seconds=seconds, source=source, note=args.note),
        encoding="utf-8",
    )
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
