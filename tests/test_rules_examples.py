"""Each rule's embedded examples: linted here, and run under Dynamo (torch 2.13, CPU) to prove
that the failing one really breaks with the predicted graph-break id and the passing one compiles
to a single graph."""

import importlib.util

import pytest

from flake8_graphmend.engine import analyze_source
from flake8_graphmend.registry import RULES

torch = pytest.importorskip("torch")
from flake8_graphmend.verify.dynamo import probe  # noqa: E402


def marked_line(rule):
    lines = rule.failing.splitlines()
    (number,) = [
        n for n, line in enumerate(lines, 1) if line.rstrip().endswith(f"# <- {rule.code}")
    ]
    return number


def load(source, path):
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_failing_example_is_reported_at_the_marked_line(rule):
    findings = analyze_source(rule.failing, "example.py")
    assert [(f.code, f.line) for f in findings if f.code == rule.code] == [
        (rule.code, marked_line(rule))
    ]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_passing_example_has_no_finding(rule):
    assert analyze_source(rule.passing, "example.py") == []


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_failing_example_breaks_the_graph_as_predicted(rule, tmp_path):
    model, args = load(rule.failing, tmp_path / f"{rule.code.lower()}_failing.py").build()
    report = probe(model, *args)
    assert report.breaks >= 1, f"{rule.code}: no graph break on torch {torch.__version__}"
    at_site = [
        s
        for s in report.break_sites
        if s.lineno == marked_line(rule) and s.filename.endswith("_failing.py")
    ]
    assert at_site, f"{rule.code}: breaks elsewhere: {[str(s) for s in report.break_sites]}"
    assert {s.gb_id for s in at_site} & set(rule.gb_ids), (
        f"{rule.code}: {[str(s) for s in at_site]}"
    )


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_passing_example_compiles_to_one_graph(rule, tmp_path):
    model, args = load(rule.passing, tmp_path / f"{rule.code.lower()}_passing.py").build()
    report = probe(model, *args)
    assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]
