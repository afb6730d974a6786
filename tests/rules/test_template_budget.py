"""The in-process render under a budget (``ggscope.rules.templates.budget``).

Two things must hold.  The budget is only a shortcut: wherever it renders, it gives
exactly the rows the forked, rlimit-capped child gives (the oracle: the same template
rendered by ``sandbox.render_all``).  And it cannot be abused: hostile templates the
syntax-tree analysis lets through (growth the analysis cannot see, recursion that fans
out, widths computed at render time, cycles) trip the budget - the caller then renders in
the forked child - instead of running away in ggscope's own process.  Each hostile case
runs in a forked child capped at 1 GiB more memory and 60 s of CPU, so a regression fails
the test instead of hanging or exhausting the machine; no test asserts a time.
"""
from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

import pytest

from ggscope.rules.templates import budget, sandbox, sources
from ggscope.rules.templates.analysis import parse
from ggscope.rules.templates.engine import environment
from template_corpus import CASES

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = Path(os.environ.get("GGSCOPE_LLAMA_TEMPLATES", REPO / ".cache" / "llama-templates"))
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "", "pad_token": "",
           "mask_token": ""}


def bounded_rows(text: str):
    """The in-process rows of ``text`` (compiled whatever the analysis says), or None."""
    template = budget.compile_bounded(environment(), parse(text))
    assert template is not None, "the template does not compile"
    return budget.render_bounded(template, SPECIAL, sandbox.conversations(text), sandbox.render_rows)


def in_child(fn, *args):
    """``fn(*args)`` in a forked child under rlimits; its return value (a small str) or
    a description of how it died."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            with open("/proc/self/statm") as f:
                mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            limit = mapped + (1 << 30)
            resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
            resource.setrlimit(resource.RLIMIT_CPU, (60, 61))
            os.write(w, str(fn(*args)).encode()[:4096])
            code = 0
        except BaseException as exc:   # noqa: BLE001 - reported to the parent
            os.write(w, f"raised {type(exc).__name__}".encode())
        finally:
            os._exit(code)
    os.close(w)
    out = b""
    while chunk := os.read(r, 4096):
        out += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return out.decode()


def trips(text: str) -> str:
    return "tripped" if bounded_rows(text) is None else "rendered"


# hostile templates the analysis does not flag (each checked below), and why each is hostile
HOSTILE = {
    "nested loops over a list": "{% set r = range(99999)|list %}{% for a in r %}{% for b in r %}{% endfor %}{% endfor %}",
    "self-referencing list doubles": "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}"
                                     "{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}",
    "replace doubles": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
                       "{% set ns.s = ns.s|replace('a', 'aa') %}{% endfor %}{{ ns.s|length }}",
    "swapped concatenation doubles": "{% set ns = namespace(a='x', b='x') %}{% for i in range(100) %}"
                                     "{% set ns.a = ns.b ~ ns.b %}{% set ns.b = ns.a %}{% endfor %}{{ ns.b|length }}",
    "recursion fans out": "{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
    "recursion goes deep": "{% macro f(n) %}{% if n > -1 %}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
    "output floods": "{% for m in messages %}{% for i in range(99999) %}{{ m.content }}{% endfor %}{% endfor %}",
    "loop body text floods": "{% for i in range(99999) %}" + "x" * 5000 + "{% endfor %}",
    "computed width": "{{ 'x'|center(messages|length * 100000) }}",
    "computed tojson indent": "{{ messages|tojson(indent=messages|length * 1000) }}",
    "computed %-width": "{{ ('%' ~ (messages|length * 1000000) ~ 's') % 'x' }}",
    "integer squares itself": "{% set ns = namespace(x=3) %}{% for i in range(64) %}{% set ns.x = ns.x ** 2 %}"
                              "{% endfor %}{{ ns.x }}",
    "huge join separator": "{{ (range(99999)|list)|join('x' * 9999) }}",
    "namespace holds itself": "{% set ns = namespace() %}{% set ns.me = [ns, ns] %}{% set ns.me = [ns.me, ns.me] %}"
                              "{% for i in range(30) %}{% set ns.me = [ns.me, ns.me] %}{% endfor %}{{ ns }}",
    "string method width": "{{ 'x'.ljust(messages|length * 1000000) }}",
    "method replace from input": "{{ (messages[0].content * 1000).replace('', 'y' * 1000) }}",
    "unknown callable": "{{ lipsum(5) }}",
    # constants only: Jinja2's optimizer would compute this while compiling, before any budget
    "constant folding": "{% set s = '" + "a" * 15000 + "' %}{{ ('" + "a" * 15000 + "'|replace('a', '" + "a" * 15000
                        + "'))|replace('a', '" + "a" * 15000 + "')|length }}",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_template_trips_the_budget_in_a_bounded_child(name):
    assert in_child(trips, HOSTILE[name]) == "tripped"


@pytest.mark.parametrize("name", sorted(set(HOSTILE) - {"unknown callable"}))
def test_hostile_cases_pass_the_analysis(name):
    """Each case is one the static pass cannot bound, so the budget is what stops it."""
    assert budget.eligible(HOSTILE[name], sources.study(HOSTILE[name]).issues), sources.study(HOSTILE[name]).issues


def test_a_trip_falls_back_to_the_child_whose_verdict_stands():
    text = HOSTILE["output floods"]
    assert bounded_rows(text) is None
    sources.clear_caches()
    got = sources._renders(text, tuple(sorted(SPECIAL.items())))
    want = sandbox.render_all(text, SPECIAL)
    assert got == tuple(want) and {r.outcome for r in got} == {"ok"}


def _same(text: str) -> None:
    rows = bounded_rows(text)
    assert rows is not None, "the budget tripped on a benign template"
    assert sandbox.rows_to_renders(rows) == sandbox.render_all(text, SPECIAL)


BENIGN = [c for c in CASES if c.expected == "none" and c.template]


@pytest.mark.parametrize("case", BENIGN, ids=[c.name for c in BENIGN])
def test_in_process_rows_equal_the_forked_childs(case):
    _same(case.template)


@pytest.mark.parametrize("text", [
    "{{ nothing() }}",                                              # an undefined callable
    "{{ messages[0].content.upper().split()|join('-') }}",          # methods and filters
    "{% for m in messages recursive %}{{ m.role }}{{ loop([]) }}{% endfor %}",   # loop() in a recursive loop
    "{{ '%s=%d'|format('a', 1) }}{{ '{}:{}'.format('b', 2) }}{{ 'x' ~ 1 ~ [1, 2] }}",
    "{{ dict(a=1)|items|list }}{{ namespace(n=1).n }}{{ range(3)|sum }}{{ (messages|map(attribute='role'))|join }}",
    "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s ~ m.content %}{% endfor %}{{ ns.s }}",
])
def test_in_process_rows_equal_the_forked_childs_on_edge_cases(text):
    _same(text)


@pytest.mark.skipif(not sorted(TEMPLATES.glob("*.jinja")),
                    reason=f"no templates in {TEMPLATES}: run python -m tools.fetch_llama_templates")
def test_real_templates_render_in_process_as_in_the_child():
    """llama.cpp's own templates: every one is rendered here, with the child's rows."""
    for path in sorted(TEMPLATES.glob("*.jinja")):
        text = path.read_text(encoding="utf-8")
        assert sources.study(text).bounded is not None, path.name
        _same(text)


def test_the_bundled_example_renders_in_process():
    import ggscope
    mf = ggscope.open(str(REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"))
    [t] = sources.templates(mf)
    study = sources.study(t.text)
    assert study.bounded is not None
    assert budget.render_bounded(study.bounded, sources.special_texts(mf), sandbox.conversations(t.text),
                                 sandbox.render_rows)


def test_flagged_or_large_templates_go_to_the_child():
    assert sources.study("{{ ().__class__ }}").bounded is None                 # an escape step
    assert sources.study("{{ 'x' * 10**9 }}").bounded is None                  # unbounded work
    assert sources.study("{{ lipsum }}").bounded is None                       # an engine internal
    big = "{{ messages[0].content }}" + "x" * budget.MAX_TEXT
    assert sources.study(big).bounded is None


def test_one_study_per_template_text():
    sources.clear_caches()
    text = "{% for m in messages %}{{ m.content }}{% endfor %}"
    sources.study(text)
    sources.study(str(text))          # another file of the same model: the same text
    info = sources.study.cache_info()
    assert (info.hits, info.misses) == (1, 1)


def test_without_a_budget_the_hooks_pass_through():
    """The forked child renders with the same environment: no budget, no limit."""
    t = environment().from_string("{{ 'x' * 300000 }}")
    assert len(t.render()) == 300000
    assert budget.active() is None


def test_budget_is_cleared_after_a_trip():
    assert bounded_rows(HOSTILE["computed width"]) is None
    assert budget.active() is None
    assert sys.getrecursionlimit() > 0


def test_an_old_jinja2_renders_nothing_here(monkeypatch):
    """Before 3.1.6 ``|attr('format')`` left Jinja2's sandbox (CVE-2025-27516)."""
    assert budget.eligible("{{ messages[0].content }}", ())
    monkeypatch.setattr(budget, "_SANDBOX_FIXED", False)
    assert not budget.eligible("{{ messages[0].content }}", ())
