"""The long fuzzing run: schemas, model outputs, messages, hostile templates, parser scaling.

    python bench/fuzz.py --budget 600            # every target, ~600 s in all
    python bench/fuzz.py schemas --count 200     # one target, a fixed number of cases

Prints one JSON line per target, then a last line with everything (``docs/reliability.md`` quotes
it). A finding is a property that failed (see ``bench/fuzz_cases.py``); a crash would end the run,
so the sampler, the only code that can abort the process, runs in child processes.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hypothesis.errors import NonInteractiveExampleWarning
from scripts.fetch_models import model_file

from bench import fuzz_cases as fc
from bench.parse_scaling import adversarial_output

DEFAULT_MODEL = model_file("smollm2")
TARGETS = ("schemas", "outputs", "messages", "templates", "scaling")


def _until(budget: float, count: int | None) -> Any:
    """Yields case numbers until ``count`` cases or ``budget`` seconds."""
    start = time.monotonic()
    n = 0
    while (count is None or n < count) and (count is not None or time.monotonic() - start < budget):
        yield n
        n += 1


def fuzz_schemas(budget: float, count: int | None, model: Path) -> dict[str, Any]:
    from hypothesis_jsonschema import from_schema

    strategy = fc.schemas()
    cases: list[dict[str, Any]] = []
    unsupported = 0
    findings: list[str] = []
    fuzzed = 0
    for _ in _until(budget / 2, count):
        fuzzed += 1
        schema = strategy.example()
        instances: list[Any] = []
        try:
            values = from_schema(fc.instance_schema(schema))
            instances = [values.example() for _ in range(3)]
        except Exception:
            pass  # unsatisfiable or beyond hypothesis-jsonschema: the garbage checks still run
        try:
            case = fc.schema_case(schema, instances)
        except Exception as exc:
            findings.append(f"{type(exc).__name__}: {exc} for {json.dumps(schema)[:300]}")
            continue
        if isinstance(case, str):
            unsupported += 1
        else:
            cases.append(case)
    results, aborts = fc.run_sampler_cases(cases, model=model) if cases else ([], 0)
    accepted = rejected = untokenizable = 0
    for case, result in zip(cases, results, strict=False):
        if result.get("aborted"):
            findings.append(f"abort on {json.dumps(case['schema'])[:300]}")
            continue
        if not result["loaded"]:
            findings.append(f"grammar not loaded for {json.dumps(case['schema'])[:300]}")
            continue
        for text in result["accept_fail"]:
            findings.append(f"valid {text[:80]!r} rejected by {json.dumps(case['schema'])[:300]}")
        for text in result["reject_fail"]:
            findings.append(f"invalid {text!r} accepted by {json.dumps(case['schema'])[:300]}")
        untokenizable += result.get("untokenizable", 0)
        accepted += (
            len(case["accept"]) - len(result["accept_fail"]) - result.get("untokenizable", 0)
        )
        rejected += len(case["reject"]) - len(result["reject_fail"])
    return {
        "fuzzed": fuzzed,
        "unsupported": unsupported,
        "grammars_checked": len(cases),
        "instances_accepted": accepted,
        "instances_untokenizable": untokenizable,
        "invalid_rejected": rejected,
        "aborts": aborts,
        "findings": findings,
    }


def fuzz_outputs(budget: float, count: int | None) -> dict[str, Any]:
    from tooldialect.dialect.builtins import builtin_dialects

    # every builtin, and the specs derived from the invented templates (message headers, nested
    # element bodies, attribute markers: parser paths no builtin takes)
    names = [*builtin_dialects(), *fc.derived_names()]
    per = -(-count // len(names)) if count else 20
    deadline = time.monotonic() + budget
    findings: list[str] = []
    fuzzed = 0
    markers = {name: fc.dialect_markers(name) for name in names}
    while True:
        for name in names:
            seen = [0]
            try:
                _outputs_property(name, markers[name], per, seen)()
            except Exception as exc:  # hypothesis re-raises the shrunk failure
                findings.append(f"{name}: {str(exc)[:500]}")
            fuzzed += seen[0]
        if count or time.monotonic() > deadline:
            break
    return {"fuzzed": fuzzed, "dialects": len(names), "findings": findings}


def _outputs_property(name: str, markers: list[str], per: int, seen: list[int]) -> Any:
    from hypothesis import HealthCheck, given, settings

    @settings(
        max_examples=per, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=fc.model_outputs(markers))
    def run(case: tuple[str, list[str], list[int]]) -> None:
        seen[0] += 1
        fc.check_output(name, *case)

    return run


def fuzz_messages(budget: float, count: int | None) -> dict[str, Any]:
    from tooldialect import detect_dialect
    from tooldialect.prompt.template import ChatTemplate

    templates = sorted((fc.ROOT / "tests/fixtures/templates").glob("*.jinja"))
    strategy = fc.conversations()
    outcomes: collections.Counter[str] = collections.Counter()
    findings: list[str] = []
    prepared = []
    for path in templates:
        source = path.read_text(encoding="utf-8")
        prepared.append(
            (
                path.name,
                ChatTemplate(source, bos_token="<s>", eos_token="</s>"),
                detect_dialect(source, bos_token="<s>", eos_token="</s>"),
            )
        )
    fc.REFUSALS.clear()
    for n in _until(budget, count):
        name, template, spec = prepared[n % len(prepared)]
        messages, tools = strategy.example()
        try:
            outcomes[fc.check_conversation(template, spec, messages, tools)] += 1
        except Exception as exc:
            findings.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
    quirks = collections.Counter(r.split(": ", 1)[1][:100] for r in fc.REFUSALS)
    return {
        "fuzzed": sum(outcomes.values()) + len(findings),
        "templates": len(prepared),
        "outcomes": dict(outcomes),
        "template_refusals": dict(quirks.most_common(12)),
        "findings": findings,
    }


def fuzz_templates() -> dict[str, Any]:
    """The hostile templates of the test suite, each in this process with the default budget."""
    sys.path.insert(0, str(fc.ROOT / "tests"))
    from hostile_templates import HOSTILE
    from tooldialect import RenderBudgetError
    from tooldialect.prompt.template import ChatTemplate

    stopped: dict[str, str] = {}
    findings: list[str] = []
    slowest = 0.0
    for name, source, bound in HOSTILE:
        start = time.perf_counter()
        try:
            ChatTemplate(source).render([{"role": "user", "content": "hi"}])
            findings.append(f"{name}: rendered")
        except RenderBudgetError as exc:
            stopped[name] = exc.bound
            if exc.bound not in (bound, "max_seconds"):  # the wall clock may trip first
                findings.append(f"{name}: stopped at {exc.bound}, expected {bound}")
        slowest = max(slowest, time.perf_counter() - start)
    return {
        "hostile": len(HOSTILE),
        "stopped": len(stopped),
        "slowest_s": round(slowest, 3),
        "findings": findings,
    }


def parser_scaling() -> dict[str, Any]:
    """Adversarial outputs of 100 kB and 1 MB for every dialect: parse time must grow linearly
    (ratio of the two times well under the quadratic 100; the bar is 20)."""
    from tooldialect.dialect.builtins import builtin_dialects
    from tooldialect.dialect.spec import DialectSpec
    from tooldialect.parse import parse_output

    worst = ("", 0.0)
    findings = []
    for name in builtin_dialects():
        spec = DialectSpec.builtin(name)
        times = []
        for size in (100_000, 1_000_000):
            text = adversarial_output(name, size)  # half-open markers
            start = time.perf_counter()
            parse_output(text, spec, tools=fc.FUZZ_TOOLS)
            times.append(time.perf_counter() - start)
        ratio = times[1] / max(times[0], 1e-6)
        if ratio > worst[1]:
            worst = (name, ratio)
        if ratio > 20:
            findings.append(f"{name}: 1 MB took {ratio:.1f}x the time of 100 kB")
    return {
        "dialects": len(builtin_dialects()),
        "worst": worst[0],
        "worst_ratio": round(worst[1], 2),
        "findings": findings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help=f"any of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds in all (roughly)")
    parser.add_argument("--count", type=int, default=None, help="cases per target instead")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="GGUF for the sampler")
    args = parser.parse_args()
    warnings.simplefilter("ignore", NonInteractiveExampleWarning)
    targets = args.targets or list(TARGETS)
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; choose from {', '.join(TARGETS)}")
    share = args.budget / max(
        1, len([t for t in targets if t in ("schemas", "outputs", "messages")])
    )
    report: dict[str, Any] = {}
    for target in targets:
        start = time.monotonic()
        if target == "schemas":
            report[target] = fuzz_schemas(share, args.count, args.model)
        elif target == "outputs":
            report[target] = fuzz_outputs(share, args.count)
        elif target == "messages":
            report[target] = fuzz_messages(share, args.count)
        elif target == "templates":
            report[target] = fuzz_templates()
        else:
            report[target] = parser_scaling()
        report[target]["seconds"] = round(time.monotonic() - start, 1)
        print(json.dumps({target: report[target]}), file=sys.stderr, flush=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
