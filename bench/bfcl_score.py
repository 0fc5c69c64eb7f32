"""BFCL's AST scoring rules, ported for the Python categories.

A faithful port of ``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` (bfcl-eval 2026.3.23) and of
the relevance rule in ``eval_runner.py``, restricted to ``Language.PYTHON``. Rules kept as BFCL has
them: exactly one call for simple/multiple; the expected function name; every required parameter
present; no parameter outside the doc and the possible answer; each value among the allowed values,
with ints accepted for floats, strings compared after BFCL's ``standardize_string`` (case, spaces
and ``,./-_*^`` ignored), lists and dicts compared element-wise, normalised the same way; optional
parameters either absent (``""`` among the allowed values) or allowed; parallel calls matched in any
order; irrelevance correct iff no call decodes; relevance (``live_relevance``) correct iff a
non-empty call decodes. The ``live_*`` categories dispatch on their names as BFCL's do.

Model output is ``[{name: {param: value}}]`` with the original (dotted) BFCL names; callers map
OpenAI-safe names back first (:func:`decode_calls`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast

PYTHON_TYPE_MAPPING: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
PYTHON_NESTED_TYPE_CHECK_LIST = ("array", "tuple")


@dataclass(frozen=True)
class Verdict:
    """The outcome of scoring one case."""

    valid: bool
    error_type: str = ""
    error: str = ""


class DecodeError(Exception):
    """Arguments that are not a JSON object: BFCL's ``ast_decoder:decoder_failed``."""


def decode_calls(
    calls: list[tuple[str, str]], name_map: dict[str, str]
) -> list[dict[str, dict[str, Any]]]:
    """OpenAI ``(name, arguments JSON)`` pairs as BFCL model output, names mapped back."""
    decoded = []
    for name, arguments in calls:
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise DecodeError(f"arguments of {name!r} are not JSON: {arguments!r}") from exc
        if not isinstance(args, dict):
            raise DecodeError(f"arguments of {name!r} are not an object: {arguments!r}")
        decoded.append({name_map.get(name, name): args})
    return decoded


def score(
    category: str,
    functions: list[dict[str, Any]],
    answer: list[dict[str, Any]],
    calls: list[tuple[str, str]],
    name_map: dict[str, str],
) -> Verdict:
    """Score one case's calls (``(name, arguments JSON)`` in OpenAI form) against BFCL's answer."""
    try:
        output = decode_calls(calls, name_map)
    except DecodeError as exc:
        if "irrelevance" in category:
            return Verdict(True)  # BFCL: a failed decode means no call was made
        if "relevance" in category:
            return Verdict(False, "relevance_error:decoder_failed", str(exc))
        return Verdict(False, "ast_decoder:decoder_failed", str(exc))
    if "irrelevance" in category:
        if _is_empty_output(output):
            return Verdict(True)
        return Verdict(False, "irrelevance_error:decoder_success", "a call was made")
    if "relevance" in category:  # BFCL's relevance_file_runner: any call, its values unchecked
        if _is_empty_output(output):
            return Verdict(False, "relevance_error:decoder_failed", "no call was made")
        return Verdict(True)
    return ast_checker(functions, output, answer, category)


def _is_empty_output(output: list[dict[str, Any]]) -> bool:
    return len(output) == 0 or (len(output) == 1 and len(output[0]) == 0)


def ast_checker(
    functions: list[dict[str, Any]],
    output: list[dict[str, Any]],
    answer: list[dict[str, Any]],
    category: str,
) -> Verdict:
    """BFCL's ``ast_checker`` dispatch on the category name."""
    if "parallel" in category:
        return parallel_no_order(functions, output, answer)
    if "multiple" in category:
        if len(output) != len(answer):
            return Verdict(False, "multiple_function_checker:wrong_count", "wrong number of calls")
        expected = next(iter(answer[0]))
        return simple_function_checker(_find_description(functions, expected), output[0], answer[0])
    if len(output) != 1:
        return Verdict(False, "simple_function_checker:wrong_count", "wrong number of calls")
    return simple_function_checker(functions[0], output[0], answer[0])


def parallel_no_order(
    functions: list[dict[str, Any]], output: list[dict[str, Any]], answer: list[dict[str, Any]]
) -> Verdict:
    """Every expected call matched by a distinct output call, in any order."""
    if len(output) != len(answer):
        return Verdict(
            False, "parallel_function_checker_no_order:wrong_count", "wrong number of calls"
        )
    matched: set[int] = set()
    for expected in answer:
        description = _find_description(functions, next(iter(expected)))
        last = Verdict(False)
        for index, call in enumerate(output):
            if index in matched:
                continue
            last = simple_function_checker(description, call, expected)
            if last.valid:
                matched.add(index)
                break
        if not last.valid:
            return Verdict(
                False,
                "parallel_function_checker_no_order:cannot_find_match",
                f"no output call matches {expected!r}",
            )
    return Verdict(True)


def _find_description(functions: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for function in functions:
        if function["name"] == name:
            return function
    raise KeyError(f"no function {name!r} in the case's function docs")


def standardize_string(text: str) -> str:
    """BFCL: drop spaces and ``,./-_*^``, lowercase, single quotes to double."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _possible_answer_type(possible: list[Any]) -> type | None:
    for item in possible:
        if item != "":
            return type(item)
    return None


def _type_check(
    param: str,
    value: Any,
    possible: list[Any],
    expected_desc: str,
    expected: type,
    nested: type | None,
) -> tuple[Verdict, bool]:
    """BFCL's ``type_checker``: (verdict, is_variable)."""
    possible_type = _possible_answer_type(possible)
    is_variable = possible_type is not None and possible_type != expected
    if type(value) is expected:
        if nested is None:
            return Verdict(True), is_variable
        for item in possible:
            ok = True
            if type(item) is list:
                # `type(value) is expected` narrowed `value` to `object`; it is the list checked
                for element in cast("list[Any]", value):
                    inner, _ = _type_check(param, element, item, str(nested), nested, None)
                    if not inner.valid:
                        ok = False
                        break
            if ok:
                return Verdict(True), is_variable
        # BFCL marks the result invalid here; its fall-through returns it invalid either way
        return Verdict(
            False, "type_error:nested", f"nested type check failed for {param!r}: {value!r}"
        ), False
    if possible_type is not None and type(value) is possible_type:
        return Verdict(True), True
    return (
        Verdict(
            False,
            "type_error:simple",
            f"incorrect type for {param!r}: expected {expected_desc}, got {value!r}",
        ),
        False,
    )


def _standardize(value: Any) -> Any:
    return standardize_string(value) if type(value) is str else value


def _string_check(param: str, value: str, possible: list[Any]) -> Verdict:
    allowed = [standardize_string(p) for p in possible if type(p) is str]
    if standardize_string(value) not in allowed:
        return Verdict(
            False,
            "value_error:string",
            f"invalid value for {param!r}: {value!r}; expected one of {possible!r}",
        )
    return Verdict(True)


def _list_check(param: str, value: list[Any], possible: list[Any]) -> Verdict:
    got = [_standardize(v) for v in value]
    allowed = [[_standardize(v) for v in option] for option in possible if isinstance(option, list)]
    if got not in allowed:
        return Verdict(
            False,
            "value_error:list/tuple",
            f"invalid value for {param!r}: {value!r}; expected one of {possible!r}",
        )
    return Verdict(True)


def _dict_check(param: str, value: dict[str, Any], possibles: list[Any]) -> Verdict:
    result = Verdict(False, "dict_checker:unclear", f"no allowed value for {param!r} matches")
    for possible in possibles:
        if possible == "":
            continue
        ok = True
        for key, item in value.items():
            if key not in possible:
                result = Verdict(False, "value_error:dict_key", f"unexpected dict key {key!r}")
                ok = False
                break
            if _standardize(item) not in [_standardize(p) for p in possible[key]]:
                result = Verdict(
                    False, "value_error:dict_value", f"invalid value for key {key!r}: {item!r}"
                )
                ok = False
                break
        for key, allowed in possible.items():
            if key not in value and "" not in allowed:
                result = Verdict(False, "value_error:dict_key", f"missing dict key {key!r}")
                ok = False
                break
        if ok:
            return Verdict(True)
    return result


def _list_dict_check(param: str, value: list[Any], possibles: list[Any]) -> Verdict:
    result = Verdict(False, "list_dict_checker:unclear", f"no allowed value for {param!r} matches")
    for option in possibles:
        if len(value) != len(option):
            result = Verdict(False, "value_error:list_dict_count", "wrong number of dictionaries")
            continue
        ok = True
        for item, expected in zip(value, option, strict=True):
            result = _dict_check(param, item, [expected])
            if not result.valid:
                ok = False
                break
        if ok:
            return Verdict(True)
    return result


def simple_function_checker(
    description: dict[str, Any], call: dict[str, Any], expected: dict[str, Any]
) -> Verdict:
    """One call against one expected ``{name: {param: [allowed]}}``."""
    possible = next(iter(expected.values()))
    name = description["name"]
    details = description["parameters"]["properties"]
    required = description["parameters"].get("required", [])
    if name not in call:
        return Verdict(
            False, "simple_function_checker:wrong_func_name", f"function {name!r} not called"
        )
    params = call[name]
    if not isinstance(params, dict):
        return Verdict(False, "ast_decoder:decoder_wrong_output_format", f"arguments {params!r}")
    for param in required:
        if param not in params:
            return Verdict(
                False, "simple_function_checker:missing_required", f"missing required {param!r}"
            )
    for param, raw in params.items():
        if param not in details or param not in possible:
            return Verdict(
                False, "simple_function_checker:unexpected_param", f"unexpected parameter {param!r}"
            )
        value = raw
        expected_desc = details[param]["type"]
        expected_type = PYTHON_TYPE_MAPPING[expected_desc]
        nested: type | None = None
        if expected_desc in PYTHON_NESTED_TYPE_CHECK_LIST:
            nested = PYTHON_TYPE_MAPPING[details[param].get("items", {}).get("type", "any")]
        if expected_desc == "float" and type(value) is int:
            value = float(value)  # Python's int -> float auto conversion
        verdict, is_variable = _type_check(
            param, value, possible[param], expected_desc, expected_type, nested
        )
        if not verdict.valid:
            return verdict
        if not is_variable:
            if expected_type is dict:
                verdict = _dict_check(param, value, possible[param])
            elif expected_type is list and nested is dict:
                verdict = _list_dict_check(param, value, possible[param])
            elif expected_type is str:
                verdict = _string_check(param, value, possible[param])
            elif expected_type is list:
                verdict = _list_check(param, value, possible[param])
            else:
                verdict = None  # type: ignore[assignment]
            if verdict is not None:
                if not verdict.valid:
                    return verdict
                continue
        if value not in possible[param]:
            return Verdict(
                False,
                "value_error:others",
                f"invalid value for {param!r}: {value!r}; expected one of {possible[param]!r}",
            )
    for param, allowed in possible.items():
        if param not in params and "" not in allowed:
            return Verdict(
                False,
                "simple_function_checker:missing_optional",
                f"optional {param!r} not provided",
            )
    return Verdict(True)
