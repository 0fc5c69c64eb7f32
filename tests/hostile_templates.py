"""Hostile chat templates, each with the render bound that must stop it: the test suite
(tests/prompt/test_template_budget.py) and ``bench/fuzz.py templates`` run them all."""

from __future__ import annotations

NESTED = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
"""Nested loops of 10**10 steps in all."""

HOSTILE: list[tuple[str, str, str]] = [
    ("nested_range", NESTED, "max_steps"),
    ("range_1e9", "{% for i in range(10**9) %}x{% endfor %}", "max_steps"),
    ("str_mul", "{{ 'x' * 10**10 }}", "max_chars"),
    ("list_mul", "{{ ['x'] * 10**10 }}", "max_chars"),
    (
        "concat_doubling",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s }}",
        "max_chars",
    ),
    (
        "plus_doubling",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}",
        "max_chars",
    ),
    (
        "append_doubling",
        "{% set xs = ['x'] %}{% for i in range(64) %}{% set _ = xs.append(xs[-1] ~ xs[-1]) %}"
        "{% endfor %}",
        "max_chars",
    ),
    (
        "extend_doubling",
        "{% set xs = [1] %}{% for i in range(64) %}{% set _ = xs.extend(xs) %}{% endfor %}",
        "max_chars",
    ),
    (
        "join_doubling",
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
        "{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}",
        "max_chars",
    ),
    ("macro_recursion", "{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}", "max_depth"),
    (
        "macro_exponential",
        "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}"
        "{{ f(40) }}",
        "max_steps",
    ),
    (
        "recursive_loop_on_itself",
        "{% set xs = [] %}{% set _ = xs.append(xs) %}"
        "{% for x in xs recursive %}{{ loop(x) }}{% endfor %}",
        "max_depth",
    ),
    (
        "loop_over_growing_list",
        "{% set xs = [1] %}{% for x in xs %}{% set _ = xs.append(x) %}{% endfor %}",
        "max_steps",
    ),
    ("join_filter_huge_separator", "{{ range(100000)|join(',' * 100000) }}", "max_chars"),
    ("join_method", "{{ ','.join(['x' * 1000000] * 100) }}", "max_chars"),
    ("output_bomb", "{% for i in range(100000) %}{{ 'x' * 10000 }}{% endfor %}", "max_chars"),
    (
        "constant_output_bomb",
        "{% for i in range(100000) %}" + "y" * 2000 + "{% endfor %}",
        "max_chars",
    ),
    (
        "output_bomb_inside_macro",
        "{% macro m() %}{% for i in range(100000) %}" + "y" * 2000 + "{% endfor %}{% endmacro %}"
        "{{ m() }}",
        "max_chars",
    ),
    ("center_method", "{{ 'x'.center(10**10) }}", "max_chars"),
    ("center_filter", "{{ 'x'|center(10**10) }}", "max_chars"),
    ("printf_width", "{{ '%0999999999d' % 1 }}", "max_chars"),
    ("printf_star", "{{ '%*d' % (10**10, 1) }}", "max_chars"),
    ("format_filter", "{{ '%0999999999d'|format(1) }}", "max_chars"),
    ("format_method_width", "{{ '{:>9999999999}'.format(1) }}", "max_chars"),
    ("format_method_nested", "{{ '{:>{}}'.format(1, 10**10) }}", "max_chars"),
    (
        "replace_amplification",
        "{% set ns = namespace(s='x'*1000) %}{% for i in range(10) %}"
        "{% set ns.s = ns.s.replace('x', 'xxxxxxxxxx') %}{% endfor %}",
        "max_chars",
    ),
    ("expandtabs", "{{ ('\\t' * 100000).expandtabs(100000) }}", "max_chars"),
    ("indent_filter", "{{ ('\\n' * 1000000)|indent(1000) }}", "max_chars"),
    ("wordwrap_filter", "{{ ('x' * 1000000)|wordwrap(1, true, 'y' * 1000) }}", "max_chars"),
    ("batch_fill", "{{ [1]|batch(10**9, 0)|list }}", "max_chars"),
    ("tojson_indent", "{{ [1, [2]]|tojson(indent=10**9) }}", "max_chars"),
    ("sum_of_lists", "{{ ([[1] * 10000] * 10000)|sum(start=[]) }}", "max_chars"),
    ("lipsum", "{{ lipsum(10**6) }}", "max_chars"),
    ("dict_fromkeys_range", "{{ dict.fromkeys(range(10**7)) }}", "max_steps"),
    ("int_power", "{{ 2 ** (10**10) }}", "max_int_digits"),
    (
        "int_squaring",
        "{% set ns = namespace(n=3) %}{% for i in range(64) %}{% set ns.n = ns.n * ns.n %}"
        "{% endfor %}",
        "max_int_digits",
    ),
    (
        "calls_in_nested_loops",
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ loop.cycle('a', 'b') }}"
        "{% endfor %}{% endfor %}",
        "max_steps",
    ),
]
"""``(id, template source, the RenderBudget bound that stops it)``."""
