"""``graphmend check`` and ``graphmend rules``: output, exit codes, configuration, bad input."""

import json
import subprocess
import sys
import textwrap

import pytest

from flake8_graphmend.registry import RULES

MODEL = textwrap.dedent(
    """\
    import logging

    import torch
    from torch import nn

    logger = logging.getLogger(__name__)


    class Model(nn.Module):
        def forward(self, x):
            logger.warning("slow path")
            if x.sum() > 0:
                x = x * 2
            return x.item()
    """
)


def graphmend(*args, cwd):
    command = [sys.executable, "-m", "flake8_graphmend.cli", *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def test_check_prints_flake8_style_lines_and_exits_1(project):
    code, out, err = graphmend("check", "model.py", cwd=project)
    assert code == 1, err
    assert [line.split(" ")[0:2] for line in out.splitlines()] == [
        ["model.py:11:9:", "GM102"],
        ["model.py:12:9:", "GM201"],
        ["model.py:14:16:", "GM401"],
    ]


def test_check_clean_file_exits_0(project):
    (project / "clean.py").write_text("import torch\n\n\ndef f(x):\n    return x\n")
    assert graphmend("check", "clean.py", cwd=project) == (0, "", "")


def test_select_ignore_and_noqa(project):
    assert graphmend("check", "--select", "GM4", "model.py", cwd=project)[1].count("GM") == 1
    assert "GM102" not in graphmend("check", "--ignore", "GM1", "model.py", cwd=project)[1]
    (project / "model.py").write_text(MODEL.replace('"slow path")', '"slow path")  # noqa: GM102'))
    assert "GM102" not in graphmend("check", "model.py", cwd=project)[1]
    assert "GM102" in graphmend("check", "--disable-noqa", "model.py", cwd=project)[1]


def test_unknown_code_is_a_usage_error(project):
    code, _, err = graphmend("check", "--select", "GM9", "model.py", cwd=project)
    assert code == 2 and "unknown GM code or prefix: 'GM9'" in err


def test_pyproject_configuration(project):
    (project / "model.py").write_text(MODEL + "\n\ndef helper(x):\n    print(x)\n")
    (project / "pyproject.toml").write_text('[tool.graphmend]\nscope = "all"\nignore = ["GM2"]\n')
    out = graphmend("check", "model.py", cwd=project)[1]
    assert "GM101" in out and "GM201" not in out
    # helper() is checked only because of scope = "all": the message does not call it compiled
    assert "GM101 print() inside helper() breaks the graph" in out
    (project / "pyproject.toml").write_text('[tool.graphmend]\nscop = "all"\n')
    code, _, err = graphmend("check", "model.py", cwd=project)
    assert code == 2 and "unknown graphmend setting(s): scop" in err


def test_json_format(project):
    payload = json.loads(graphmend("check", "--format", "json", "model.py", cwd=project)[1])
    assert payload[0] == {
        "path": "model.py", "line": 11, "column": 9, "code": "GM102",
        "message": payload[0]["message"], "fixer": "DeferSideEffects", "decline": None,
    }


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("broken.py", "import torch\ndef f(:\n", "broken.py:2: syntax error"),
        ("latin1.py", "import torch\nname = 'caf\xe9'\n".encode("latin-1"), "not UTF-8"),
    ],
)
def test_unparsable_files_are_reported_and_skipped(project, name, content, message):
    path = project / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = graphmend("check", name, "model.py", cwd=project)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert "GM102" in out  # the other file is still checked


def test_missing_path(project):
    code, _, err = graphmend("check", "nope.py", cwd=project)
    assert code == 2 and "nope.py: no such file or directory" in err and "Traceback" not in err


def test_rules_lists_every_code(project):
    out = graphmend("rules", cwd=project)[1]
    header, *rows, footer = out.splitlines()
    assert header.split()[:3] == ["code", "family", "name"]
    assert [line.split()[0] for line in rows] == [rule.code for rule in RULES]
    assert footer.startswith("graphmend rules CODE shows one rule in full")
