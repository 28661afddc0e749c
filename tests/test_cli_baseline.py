"""``graphmend check --write-baseline`` / ``--baseline``: fail on new findings only."""

import ast
import json
import subprocess
import sys
import textwrap

import pytest

from flake8_graphmend.baseline import VERSION, Baseline, _enclosing, _scopes
from flake8_graphmend.cli import main

MODEL = textwrap.dedent(
    """\
    import logging

    import torch
    from torch import nn

    logger = logging.getLogger(__name__)


    class Model(nn.Module):
        def forward(self, x):
            logger.warning("slow path")
            print("a")
            print("a")
            if x.sum() > 0:
                x = x * 2
            return x.sum().item()
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_baseline(graphmend):
    code, out, err = graphmend("check", "--write-baseline", "baseline.json", "src")
    assert (code, out) == (0, ""), err
    return err


def test_write_baseline_format(project, graphmend):
    assert "wrote baseline.json: 5 finding(s) in 1 file(s)" in write_baseline(graphmend)
    data = json.loads((project / "baseline.json").read_text())
    assert data["version"] == VERSION and data["tool"] == "flake8-graphmend"
    assert data["findings"] == [
        {"path": "src/model.py", "code": "GM101", "function": "Model.forward",
         "statement": 'print("a")', "count": 2},
        {"path": "src/model.py", "code": "GM102", "function": "Model.forward",
         "statement": 'logger.warning("slowpath")', "count": 1},
        {"path": "src/model.py", "code": "GM201", "function": "Model.forward",
         "statement": "ifx.sum()>0", "count": 1},
        {"path": "src/model.py", "code": "GM401", "function": "Model.forward",
         "statement": "x.sum().item()", "count": 1},
    ]


def test_baseline_is_stable(project, graphmend):
    (project / "src" / "other.py").write_text(MODEL)
    write_baseline(graphmend)
    first = (project / "baseline.json").read_bytes()
    graphmend("check", "--write-baseline", "baseline.json", "src/other.py", "src/model.py")
    assert (project / "baseline.json").read_bytes() == first


def test_baselined_findings_pass_and_new_ones_fail(project, graphmend):
    write_baseline(graphmend)
    code, out, err = graphmend("check", "--baseline", "baseline.json", "src")
    assert (code, out) == (0, "")
    assert "5 finding(s) in the baseline baseline.json, 0 new" in err
    source = MODEL.replace("        return x.sum()", '        print("b")\n        return x.sum()')
    (project / "src" / "model.py").write_text(source)
    code, out, err = graphmend("check", "--baseline", "baseline.json", "src")
    assert code == 1
    assert [line.split(" ")[:2] for line in out.splitlines()] == [["src/model.py:16:9:", "GM101"]]
    assert "5 finding(s) in the baseline baseline.json, 1 new" in err


def test_matching_survives_moved_and_reformatted_lines(project, graphmend):
    write_baseline(graphmend)
    moved = MODEL.replace("logger = logging", "\n\nCONSTANT = 1\nlogger = logging").replace(
        'logger.warning("slow path")', 'logger.warning(\n            "slow path"\n        )'
    ).replace("if x.sum() > 0:", "if x.sum()  >  0:")
    (project / "src" / "model.py").write_text(moved)
    code, out, err = graphmend("check", "--baseline", "baseline.json", "src")
    assert (code, out) == (0, ""), out
    assert "0 new" in err


def test_duplicates_are_counted(project, graphmend):
    write_baseline(graphmend)
    three = MODEL.replace('print("a")\n', 'print("a")\n        print("a")\n', 1)
    (project / "src" / "model.py").write_text(three)
    code, out, _ = graphmend("check", "--baseline", "baseline.json", "src")
    assert code == 1 and out.count("GM101") == 1
    one = MODEL.replace('        print("a")\n', "", 1)
    (project / "src" / "model.py").write_text(one)
    code, out, err = graphmend("check", "--baseline", "baseline.json", "src")
    assert (code, out) == (0, "")
    assert "1 baseline entry matched nothing" in err


def test_same_statement_in_another_function_is_new(project, graphmend):
    write_baseline(graphmend)
    source = MODEL + textwrap.dedent(
        """

        class Other(nn.Module):
            def forward(self, x):
                print("a")
                return x
        """
    )
    (project / "src" / "model.py").write_text(source)
    code, out, _ = graphmend("check", "--baseline", "baseline.json", "src")
    assert code == 1 and out.startswith("src/model.py:21:9: GM101")


def test_paths_are_relative_to_the_baseline(project, graphmend, monkeypatch):
    write_baseline(graphmend)
    monkeypatch.chdir(project / "src")
    code, out, err = graphmend("check", "--baseline", "../baseline.json", "model.py")
    assert (code, out) == (0, ""), err


def test_baseline_with_another_format_reports_only_new_findings(project, graphmend):
    write_baseline(graphmend)
    (project / "src" / "new.py").write_text(MODEL)
    code, out, _ = graphmend(
        "check", "--baseline", "baseline.json", "--format", "sarif", "src"
    )
    results = json.loads(out)["runs"][0]["results"]
    assert code == 1 and len(results) == 5
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {
        "src/new.py"
    }


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "baseline bad.json: no such file (write one with --write-baseline bad.json)"),
        ("{not json", "baseline bad.json: not valid JSON"),
        ("[]", "baseline bad.json: not a graphmend baseline"),
        ('{"version": 99, "findings": []}', "baseline bad.json: version 99 is not supported"),
        ('{"version": 1, "findings": [{"path": 1}]}', "baseline bad.json: finding 0 is malformed"),
        ('{"version": 1, "findings": {}}', "baseline bad.json: finding 0 is malformed"),
        (b"\xff\xfe", "baseline bad.json: not valid JSON"),
    ],
)
def test_unusable_baseline_is_a_one_line_error(project, graphmend, content, message):
    if isinstance(content, str):
        (project / "bad.json").write_text(content)
    elif content is not None:
        (project / "bad.json").write_bytes(content)
    code, out, err = graphmend("check", "--baseline", "bad.json", "src")
    assert (code, out) == (2, "")
    assert err.startswith(f"graphmend: error: {message}") and err.count("\n") == 1, err


def test_unusable_baseline_has_no_traceback(project):
    (project / "bad.json").write_text("{")
    result = subprocess.run(
        [sys.executable, "-m", "flake8_graphmend.cli", "check", "--baseline", "bad.json", "src"],
        cwd=project, capture_output=True, text=True,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_baseline_and_write_baseline_exclude_each_other(project, capsys, graphmend):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--baseline", "a.json", "--write-baseline", "b.json", "src"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_unwritable_baseline_is_a_one_line_error(project, graphmend):
    code, _, err = graphmend("check", "--write-baseline", "nope/baseline.json", "src")
    assert code == 2
    assert err.startswith("graphmend: error: baseline nope/baseline.json: cannot write")


def test_enclosing_function_names():
    tree = ast.parse(
        textwrap.dedent(
            """\
            x = 1
            class A:
                def f(self):
                    def inner():
                        return 1
                    return inner
                y = 2
            async def g():
                pass
            """
        )
    )
    scopes = _scopes(tree)
    names = [_enclosing(scopes, line) for line in range(1, 10)]
    assert names == ["", "A", "A.f", "A.f.inner", "A.f.inner", "A.f", "A", "g", "g"]


def test_split_is_a_multiset_match():
    key = ("m.py", "GM101", "f", "print()")
    other = ("m.py", "GM101", "g", "print()")
    baseline = Baseline({key: 2})
    assert baseline.split([key, other, key, key], {"m.py"}) == ([1, 3], 2, 0)
    assert baseline.split([], {"m.py"}) == ([], 0, 2)
    assert baseline.split([], {"other.py"}) == ([], 0, 0)


def test_entries_of_files_not_checked_are_not_reported_as_stale(project, graphmend):
    (project / "src" / "other.py").write_text(MODEL)
    write_baseline(graphmend)
    code, _, err = graphmend("check", "--baseline", "baseline.json", "src/model.py")
    assert code == 0 and "5 finding(s) in the baseline baseline.json, 0 new\n" in err
