"""The graphmend codemods on the fixture files of tests/fixtures/fix (no torch needed).

``<Command>/<case>.py`` is rewritten by the codemod ``fixers.graphmend.<Command>``. The output
must equal ``<case>.expected.py`` (no such file: the module is left as it was), parse, and be
skipped by a second run; the codemod's warnings must equal the lines of ``<case>.declines.txt``
(no such file: none), and each one must be a decline the lint side reports too. After a change
to the codemods or their helpers, rewrite the expected files from the current codemods with::

    GRAPHMEND_REGENERATE=1 python -m pytest tests/test_fixers_codemod.py

and review the diff. The tests after the fixtures cover whole-file behaviour.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, Tuple

import pycodestyle
import pytest
from libcst.codemod import (
    CodemodContext,
    TransformFailure,
    TransformSkip,
    TransformSuccess,
    transform_module,
)

from fixers import graphmend
from fixers.apply import fix_paths
from fixers.defer import DeferSideEffects
from fixers.fix_all import FixAll
from fixers.helpers import CHECK, DEFERRED, DIFFER, FIXED_HELPERS, HELPER_LINE_LENGTH, WHERE_GRAD
from fixers.trap import TrapGuards
from fixers.where import PredicateControlFlow
from flake8_graphmend.engine import analyze_source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "fix"
REGENERATE = os.environ.get("GRAPHMEND_REGENERATE") == "1"
#: Cases kept at their own paths, which other tests read too: id -> (input, expected output).
SHARED = {
    "PredicateControlFlow/longrope": ("longrope_before.py", "longrope_after.py"),
    "FixAll/model": ("model_before.py", "model_after.py"),
}


def fixture_cases() -> Dict[str, Tuple[Path, Path]]:
    """``Command/case`` -> (input, expected output) for every fixture."""
    cases = {
        f"{path.parent.name}/{path.stem}": (path, path.with_suffix(".expected.py"))
        for path in FIXTURES.glob("*/*.py")
        if not path.name.endswith(".expected.py")
    }
    cases.update({case: (FIXTURES / a, FIXTURES / b) for case, (a, b) in SHARED.items()})
    return cases


CASES = fixture_cases()


def run(command, source: str, filename: str = "model.py"):
    return transform_module(command(CodemodContext(filename=filename)), source)


def expect(path: Path, actual: str, absent: str) -> None:
    """``actual`` is the text of ``path`` (``absent`` without one), or is written there."""
    if REGENERATE:
        if actual == absent:
            path.unlink(missing_ok=True)
        else:
            path.write_text(actual)
    expected = path.read_text() if path.exists() else absent
    assert actual == expected, f"{path.relative_to(ROOT)} (GRAPHMEND_REGENERATE=1 rewrites it)"


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture(case: str) -> None:
    source_path, expected_path = CASES[case]
    command = getattr(graphmend, case.partition("/")[0])
    filename = str(source_path.relative_to(ROOT))
    source = source_path.read_text()
    result = run(command, source, filename)
    assert not isinstance(result, TransformFailure), result.traceback_str
    code = result.code if isinstance(result, TransformSuccess) else source
    warnings = "".join(f"{warning}\n" for warning in result.warning_messages)
    expect(expected_path, code, source)
    expect(source_path.with_suffix(".declines.txt"), warnings, "")
    findings = analyze_source(source, filename)
    lint = {  # the lint side's declines and caveats that say why in their message
        f"{f.line}:{f.col + 1}: {f.label} not fixed: {f.decline}"
        for f in findings
        if f.decline and f.decline in f.message
    } | {
        f"{f.line}:{f.col + 1}: {f.label} fixed, but {caveat}"
        for f in findings
        for caveat in [f.plan.caveat() if f.plan else None]
        if caveat and caveat in f.message
    }
    assert set(result.warning_messages) - lint == set(), "not said by the lint side"
    if code != source:
        ast.parse(code)
        assert isinstance(run(command, code, filename), TransformSkip), "a second run rewrites"
        new_style = set(style_problems(code, source)) - set(style_problems(source, source))
        assert not new_style, f"the fix writes code pycodestyle flags: {sorted(new_style)}"


def style_problems(code: str, original: str) -> Counter:
    """pycodestyle's codes for ``code`` (its default selection; the longest line of
    ``original`` as the line length, at least 79), counted."""
    longest = max([79, *(len(line) for line in original.splitlines())])
    style = pycodestyle.StyleGuide(quiet=True, max_line_length=longest)
    found: Counter = Counter()

    class Report(pycodestyle.BaseReport):
        def error(self, line_number, offset, text, check):  # type: ignore[no-untyped-def]
            if not self._ignore_code(text[:4]):
                found[text[:4]] += 1

    pycodestyle.Checker(
        lines=code.splitlines(True), options=style.options, report=Report(style.options)
    ).check_all()
    return found


# ---------------------------------------------------------------------------- whole-file behaviour
@pytest.mark.parametrize("name", FIXED_HELPERS)
def test_helpers_fit_any_line_length(name: str) -> None:
    """The emitted helpers keep to ``HELPER_LINE_LENGTH`` (79): they pass a project's flake8."""
    lines = FIXED_HELPERS[name].splitlines()
    assert max(len(line) for line in lines) <= HELPER_LINE_LENGTH


def test_fix_all_is_idempotent_and_adds_helpers_once() -> None:
    """Beyond the FixAll/model fixture: each helper once, and no family finds more to fix."""
    fixed = (FIXTURES / "model_after.py").read_text()
    for name in (DEFERRED, WHERE_GRAD, CHECK, DIFFER):
        assert fixed.count(f"def {name}(") == 1
    assert fixed.count("import torch\n") == 1
    for command in (FixAll, DeferSideEffects, PredicateControlFlow, TrapGuards):
        assert isinstance(run(command, fixed), TransformSkip)


def test_fix_all_leaves_no_fixable_finding() -> None:
    fixed = (FIXTURES / "model_after.py").read_text()
    assert [f for f in analyze_source(fixed, "model.py") if f.fixer] == []


def test_families_one_after_the_other_equal_fix_all() -> None:
    code = (FIXTURES / "model_before.py").read_text()
    for command in (DeferSideEffects, TrapGuards, PredicateControlFlow):
        result = run(command, code)
        assert isinstance(result, TransformSuccess)
        code = result.code
    ast.parse(code)
    assert [f for f in analyze_source(code, "model.py") if f.fixer] == []
    assert isinstance(run(FixAll, code), TransformSkip)


def test_codemods_run_without_torch() -> None:
    script = (
        "import sys\nsys.modules['torch'] = None\n"
        "from libcst.codemod import CodemodContext, transform_module\n"
        "from fixers.graphmend import FixAll\n"
        f"source = open({str(FIXTURES / 'model_before.py')!r}).read()\n"
        "print(transform_module(FixAll(CodemodContext()), source).code, end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (FIXTURES / "model_after.py").read_text()


def test_libcst_tool_resolves_graphmend_commands_from_the_repository_root(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    shutil.copy(FIXTURES / "model_before.py", target)
    command = [
        sys.executable,
        "-m",
        "libcst.tool",
        "codemod",
        "graphmend.FixAll",
        "--hide-progress",
        str(target),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == (FIXTURES / "model_after.py").read_text()


def test_untouched_file_is_skipped() -> None:
    assert isinstance(run(FixAll, "import torch\n\n\ndef f(x):\n    return x\n"), TransformSkip)


def test_fix_paths_keeps_crlf_and_bom_and_reports_syntax_errors(tmp_path: Path) -> None:
    before = (FIXTURES / "model_before.py").read_bytes()
    after = (FIXTURES / "model_after.py").read_bytes()
    (tmp_path / "crlf.py").write_bytes(before.replace(b"\n", b"\r\n"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + before)
    (tmp_path / "broken.py").write_bytes(b"def f(:\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "plain.py").write_bytes(before)
    preview = fix_paths([tmp_path], diff=True)
    assert (tmp_path / "pkg" / "plain.py").read_bytes() == before
    assert all(o.diff for o in preview if o.changed) and sum(o.changed for o in preview) == 3
    outcomes = {o.path.name: o for o in fix_paths([tmp_path])}
    assert (tmp_path / "crlf.py").read_bytes() == after.replace(b"\n", b"\r\n")
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbf" + after
    assert (tmp_path / "pkg" / "plain.py").read_bytes() == after
    assert (
        outcomes["broken.py"].error.startswith("syntax error")
        and (tmp_path / "broken.py").read_bytes() == b"def f(:\n"
    )
    assert outcomes["plain.py"].fixed == 8
    assert all(" fixed, but " in warning for warning in outcomes["plain.py"].declined)
    assert not any(o.changed for o in fix_paths([tmp_path]))
