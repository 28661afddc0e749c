"""``graphmend fix``: ``--check`` as a CI gate, ``--diff``, and ``--select``/``--ignore``."""

import textwrap

import pytest

from flake8_graphmend.engine import analyze_source

MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Model(nn.Module):
        def forward(self, x):
            print("scaled")
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 1
            return y
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "clean.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def codes_left(project):
    return [f.code for f in analyze_source((project / "model.py").read_text(), "model.py")]


def test_check_exits_1_when_something_would_change_and_writes_nothing(project, graphmend):
    code, out, err = graphmend("fix", "--check", ".")
    assert code == 1
    assert out == "would fix model.py: 2 site(s)\n"
    assert "graphmend: would fix 2 site(s) in 1 of 2 file(s)" in err
    assert (project / "model.py").read_text() == MODEL


def test_check_exits_0_when_nothing_would_change(project, graphmend):
    assert graphmend("fix", ".")[0] == 0
    fixed = (project / "model.py").read_text()
    assert fixed != MODEL
    code, out, _ = graphmend("fix", "--check", ".")
    assert (code, out) == (0, "")
    assert (project / "model.py").read_text() == fixed


def test_check_with_diff_prints_the_diff(project, graphmend):
    code, out, _ = graphmend("fix", "--check", "--diff", "model.py")
    assert code == 1
    assert out.startswith("--- a/model.py\n+++ b/model.py\n")
    assert (project / "model.py").read_text() == MODEL


def test_diff_alone_still_exits_0(project, graphmend):
    code, out, _ = graphmend("fix", "--diff", "model.py")
    assert code == 0 and out.startswith("--- a/model.py")
    assert (project / "model.py").read_text() == MODEL


def test_check_on_a_broken_file_is_exit_2(project, graphmend):
    (project / "broken.py").write_text("def f(:\n")
    code, _, err = graphmend("fix", "--check", ".")
    assert code == 2 and "broken.py: syntax error" in err


@pytest.mark.parametrize(
    "flags, left",
    [
        (["--select", "GM1"], ["GM201"]),
        (["--ignore", "GM2"], ["GM201"]),
        (["--select", "GM2"], ["GM101"]),
        (["--select", "GM4"], ["GM101", "GM201"]),
    ],
)
def test_select_and_ignore_restrict_what_is_fixed(project, graphmend, flags, left):
    code, _, err = graphmend("fix", *flags, "model.py")
    assert code == 0, err
    assert codes_left(project) == left


def test_select_from_pyproject_restricts_what_is_fixed(project, graphmend):
    (project / "pyproject.toml").write_text('[tool.graphmend]\nselect = ["GM2"]\n')
    assert graphmend("fix", "model.py")[0] == 0
    assert codes_left(project) == ["GM101"]


def test_unknown_selection_is_a_usage_error(project, graphmend):
    code, _, err = graphmend("fix", "--select", "GM9", "model.py")
    assert code == 2 and "unknown GM code or prefix: 'GM9'" in err
    assert (project / "model.py").read_text() == MODEL


@pytest.fixture
def package(tmp_path, monkeypatch):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_helpers_module_is_written_once_and_imported(package, graphmend):
    from fixers.helpers import WHERE_GRAD, helpers_module_source

    code, _, err = graphmend("fix", "--helpers-module", "mypkg._graphmend", "mypkg")
    assert code == 0
    helpers = package / "mypkg" / "_graphmend.py"
    assert helpers.read_text() == helpers_module_source()
    assert f"wrote the helpers module {helpers}" in err
    fixed = (package / "mypkg" / "model.py").read_text()
    assert f"from mypkg._graphmend import _graphmend_deferred, {WHERE_GRAD}\n" in fixed
    assert f"def {WHERE_GRAD}(" not in fixed
    code, _, err = graphmend("fix", "--helpers-module", "mypkg._graphmend", "mypkg")
    assert (code, (package / "mypkg" / "model.py").read_text()) == (0, fixed)
    assert "helpers module" not in err


def test_helpers_module_from_the_config_file(package, graphmend):
    (package / "setup.cfg").write_text("[flake8]\ngraphmend-helpers-module = mypkg.fixes\n")
    assert graphmend("fix", "mypkg")[0] == 0
    assert (package / "mypkg" / "fixes.py").is_file()
    assert "from mypkg.fixes import" in (package / "mypkg" / "model.py").read_text()


@pytest.mark.parametrize(
    "value, message",
    [
        ("not-a-module", "not a module name: 'not-a-module'"),
        ("elsewhere.helpers", "no folder `elsewhere` above the fixed paths"),
    ],
)
def test_bad_helpers_module_is_a_one_line_error_and_fixes_nothing(
    package, graphmend, value, message
):
    code, out, err = graphmend("fix", "--helpers-module", value, "mypkg")
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert (package / "mypkg" / "model.py").read_text() == MODEL


def test_helpers_command_prints_or_writes_the_module(tmp_path, graphmend):
    from fixers.helpers import helpers_module_source

    assert graphmend("helpers")[:2] == (0, helpers_module_source())
    target = tmp_path / "h.py"
    assert graphmend("helpers", "--write", target)[0] == 0
    assert target.read_text() == helpers_module_source()


def test_an_analysis_crash_is_one_line_and_leaves_the_file(project, graphmend, monkeypatch):
    """An analysis bug on one file is reported as `check` reports it, without a traceback, and
    the other files are still fixed."""
    import fixers.apply

    def explode(source, filename, *args, **kwargs):
        if filename.endswith("model.py"):
            raise NameError("name 'oops' is not defined")
        return analyze_source(source, filename, *args, **kwargs)

    (project / "other.py").write_text(MODEL)
    monkeypatch.setattr(fixers.apply, "analyze_source", explode)
    code, _, err = graphmend("fix", ".")
    assert code != 0
    assert "model.py: internal error: NameError: name 'oops' is not defined" in err
    assert "Traceback" not in err
    assert (project / "model.py").read_text() == MODEL
    assert (project / "other.py").read_text() != MODEL
