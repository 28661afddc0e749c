"""Fixture files under tests/fixtures/lint: every ``# error: GMxxx:COL`` comment is a finding at
that line and (1-based) column, every other line has none. ``declines: TEXT`` after the marker
says the paired fixer declines the site with a reason containing TEXT; ``says: TEXT`` that the
message contains TEXT. A first line ``# options: scope=all`` (or ``entry_points=a,b``,
``compiled_modules=GLOB``; several separated by ``;``) analyses the file with those options."""

import re
from pathlib import Path

import pytest

from flake8_graphmend.engine import Options, analyze_source

FIXTURES = Path(__file__).parent / "fixtures" / "lint"
MARKER = re.compile(
    r"# error: (?P<code>GM\d{3}):(?P<col>\d+)"
    r"(?: declines: (?P<decline>.+?))?(?: says: (?P<says>.+))?$"
)
OPTIONS = re.compile(r"^# options: (?P<options>.+)$")


def expectations(source):
    expected = {}
    for number, line in enumerate(source.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            expected[(number, match["code"])] = (int(match["col"]), match["decline"], match["says"])
    return expected


def fixture_options(source):
    """The ``# options:`` header of a fixture, as engine Options."""
    match = OPTIONS.match(source.partition("\n")[0])
    if not match:
        return Options()
    settings = {}
    for item in match["options"].split(";"):
        key, _, value = item.strip().partition("=")
        settings[key] = value if key == "scope" else tuple(v.strip() for v in value.split(","))
    return Options(**settings)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.py")), ids=lambda p: p.stem)
def test_fixture_findings(path):
    source = path.read_text()
    expected = expectations(source)
    findings = analyze_source(source, str(path), fixture_options(source))
    actual = {(f.line, f.code): f for f in findings}
    assert sorted(actual) == sorted(expected), "\n".join(f.text + f" @{f.line}" for f in findings)
    for key, (col, decline, says) in expected.items():
        finding = actual[key]
        assert finding.col + 1 == col, f"line {key[0]}: column {finding.col + 1}, expected {col}"
        if decline:
            assert finding.fixer is None
            assert decline.strip() in finding.decline, finding.message
        if says:
            assert says.strip() in finding.message, finding.message


def test_scope_all_reports_every_function_of_a_torch_file():
    source = (FIXTURES / "scope.py").read_text()
    found = {(f.line, f.code) for f in analyze_source(source, "scope.py", Options(scope="all"))}
    lines = source.splitlines()
    prints = {n for n, line in enumerate(lines, 1) if line.strip().startswith("print(")}
    # Everything but the @torch.compiler.disable function, which never runs compiled.
    eager = next(n for n, line in enumerate(lines, 1) if "runs eagerly by design" in line)
    assert {n for n, code in found if code == "GM101"} == prints - {eager}


def test_entry_points_option_names_extra_functions():
    source = (FIXTURES / "scope.py").read_text()
    found = {f.line for f in analyze_source(source, "scope.py", Options(entry_points=("plain",)))}
    never = next(n for n, line in enumerate(source.splitlines(), 1) if "never compiled" in line)
    assert never in found


def test_compiled_modules_option_matches_path_globs():
    source = "import torch\n\ndef shared(x):\n    print(x)\n    return x\n"
    assert analyze_source(source, "pkg/lib/shared.py") == []
    options = Options(compiled_modules=("*/lib/shared.py",))
    (finding,) = analyze_source(source, "pkg/lib/shared.py", options)
    assert finding.code == "GM101"
    # Nothing here is known to be compiled: the file is only declared to be.
    assert finding.message.startswith("print() inside shared() breaks the graph [GB0059]")


def test_entry_points_name_classes_defined_in_functions():
    source = (
        "import torch\n\n\ndef build():\n    class Stepper:\n        def step(self, x):\n"
        "            print(x)\n            return x\n\n    return Stepper()\n"
    )
    assert analyze_source(source, "f.py") == []
    (finding,) = analyze_source(source, "f.py", Options(entry_points=("Stepper.step",)))
    assert (finding.line, finding.code) == (7, "GM101")
    assert "inside compiled step()" in finding.message


def test_file_without_torch_has_no_findings_even_in_scope_all():
    source = "def f(x):\n    print(x)\n"
    assert analyze_source(source, "f.py", Options(scope="all")) == []


def test_columns_count_characters_not_bytes():
    source = "import torch\n\n@torch.compile\ndef f(x):\n    é = 1; print('ü', x)\n    return x\n"
    (finding,) = analyze_source(source, "f.py")
    assert finding.col == source.splitlines()[4].index("print")
