"""A bad value in any configuration file is a one-line error, for flake8 and for ``graphmend``."""

import subprocess
import sys

import pytest

from flake8_graphmend.cli import main

MODEL = (
    "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
    "    def forward(self, x):\n        print(x)\n        return x\n"
)

FLAKE8_FILES = ["setup.cfg", "tox.ini", ".flake8"]

#: (line in a [flake8] section, what the error names)
BAD_FLAKE8_VALUES = [
    (
        "graphmend-scope = bogus",
        "graphmend-scope: invalid choice: 'bogus' (choose from 'compiled', 'all')",
    ),
    ("graphmend_scope = everything", "graphmend-scope: invalid choice: 'everything'"),
    ("graphmend-entry-points = 1bad", "graphmend-entry-points: invalid entry point '1bad'"),
    ("graphmend-entry-points = ok, A.b.c", "graphmend-entry-points: invalid entry point 'A.b.c'"),
    ("graphmend-entry-points = @a.b", "graphmend-entry-points: invalid entry point '@a.b'"),
]


def run(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


def graphmend(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", FLAKE8_FILES)
@pytest.mark.parametrize("line, message", BAD_FLAKE8_VALUES[::2])
def test_flake8_bad_value_in_each_config_file(project, name, line, message):
    (project / name).write_text(f"[flake8]\nselect = GM\n{line}\n")
    code, out, err = run([sys.executable, "-m", "flake8", "model.py"], project)
    assert (code, out) == (2, "")
    assert err.startswith(f"flake8: error: {message}") and err.count("\n") == 1, err


def test_flake8_good_values_still_work(project):
    (project / ".flake8").write_text(
        "[flake8]\nselect = GM\ngraphmend_scope = all\ngraphmend-entry-points = @dec, M.step, f\n"
    )
    code, out, err = run([sys.executable, "-m", "flake8", "model.py"], project)
    assert code == 1 and "GM101" in out, err


def test_flake8_bad_entry_point_on_the_command_line(project):
    code, _, err = run(
        [sys.executable, "-m", "flake8", "--select", "GM", "--graphmend-entry-points", "a.b.c",
         "model.py"],
        project,
    )
    assert code == 2 and err == (
        "flake8: error: graphmend-entry-points: invalid entry point 'a.b.c' "
        "(expected NAME, CLASS, CLASS.METHOD or @DECORATOR)\n"
    )


@pytest.mark.parametrize("name", FLAKE8_FILES)
@pytest.mark.parametrize("line, message", BAD_FLAKE8_VALUES)
def test_graphmend_bad_value_in_each_flake8_config_file(project, capsys, name, line, message):
    (project / name).write_text(f"[flake8]\n{line}\n")
    for command in ("check", "fix"):
        code, out, err = graphmend(capsys, command, "model.py")
        assert (code, out) == (2, ""), command
        assert err.startswith(f"graphmend: error: {name}: [flake8] {message}"), err
        assert err.count("\n") == 1
    assert (project / "model.py").read_text() == MODEL


@pytest.mark.parametrize(
    "toml, message",
    [
        ('scope = "bogus"', "[tool.graphmend] scope: invalid choice: 'bogus'"),
        ("scope = 3", "[tool.graphmend] scope: expected a string, got 3"),
        ('entry-points = ["ok", "1x"]', "[tool.graphmend] entry-points: invalid entry point '1x'"),
        ("compiled-modules = [1]", "compiled-modules: expected a string or a list of strings"),
        ('select = ["GM9"]', "[tool.graphmend] select: unknown GM code or prefix: 'GM9'"),
        ('ignore = "GM1, XY"', "[tool.graphmend] ignore: unknown GM code or prefix: 'XY'"),
        ('scop = "all"', "[tool.graphmend]: unknown graphmend setting(s): scop"),
        ("select = [", "pyproject.toml: "),
    ],
)
def test_graphmend_bad_value_in_pyproject(project, capsys, toml, message):
    (project / "pyproject.toml").write_text(f"[tool.graphmend]\n{toml}\n")
    code, out, err = graphmend(capsys, "check", "model.py")
    assert (code, out) == (2, "")
    assert err.startswith("graphmend: error: ") and message in err, err
    assert err.count("\n") == 1


def test_graphmend_section_that_is_not_a_table(project, capsys):
    (project / "pyproject.toml").write_text("[tool]\ngraphmend = 3\n")
    code, _, err = graphmend(capsys, "check", "model.py")
    assert code == 2 and "[tool.graphmend] must be a table, not 3" in err


def test_graphmend_bad_flake8_file_syntax(project, capsys):
    (project / "setup.cfg").write_text("[flake8\nselect = GM\n")
    code, _, err = graphmend(capsys, "check", "model.py")
    assert code == 2 and err.startswith("graphmend: error: setup.cfg: ") and err.count("\n") == 1


def test_graphmend_bad_entry_point_on_the_command_line(project, capsys):
    code, _, err = graphmend(capsys, "check", "--entry-points", "run,A.b.c", "model.py")
    assert code == 2
    assert err == (
        "graphmend: error: --entry-points: invalid entry point 'A.b.c' "
        "(expected NAME, CLASS, CLASS.METHOD or @DECORATOR)\n"
    )


def test_graphmend_config_errors_have_no_traceback(project):
    (project / "tox.ini").write_text("[flake8]\ngraphmend-scope = bogus\n")
    code, _, err = run([sys.executable, "-m", "flake8_graphmend.cli", "check", "model.py"], project)
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1
