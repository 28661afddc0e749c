"""The flake8 plugin, run through flake8 itself."""

import ast
import subprocess
import sys
import textwrap

from flake8_graphmend import plugin
from flake8_graphmend.plugin import GraphMendChecker

COMPILED_PRINT = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Model(nn.Module):
        def forward(self, x):
            y = x * 2
            print(y.shape)
            return y


    def helper(x):
        print("not compiled by default")
        return x
    """
)


def flake8(*args, cwd):
    result = subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True, text=True
    )
    return result.returncode, result.stdout.splitlines(), result.stderr


def test_reports_with_one_based_column_and_fix_hint(tmp_path):
    (tmp_path / "model.py").write_text(COMPILED_PRINT)
    code, out, err = flake8("--select", "GM", "model.py", cwd=tmp_path)
    assert code == 1, err
    assert out == [
        (
            "model.py:8:9: GM101 print() inside compiled forward() breaks the graph [GB0059]; "
            "fix: graphmend.DeferSideEffects"
        )
    ]


def test_noqa_is_left_to_flake8(tmp_path):
    (tmp_path / "model.py").write_text(
        COMPILED_PRINT.replace("print(y.shape)", "print(y.shape)  # noqa: GM101")
    )
    assert flake8("--select", "GM", "model.py", cwd=tmp_path)[:2] == (0, [])


def test_options_are_read_from_config_files(tmp_path):
    (tmp_path / "model.py").write_text(COMPILED_PRINT)
    (tmp_path / "setup.cfg").write_text("[flake8]\nselect = GM\ngraphmend-scope = all\n")
    code, out, _ = flake8("model.py", cwd=tmp_path)
    assert [line.split(":")[1] for line in out] == ["8", "13"]
    (tmp_path / "setup.cfg").write_text("[flake8]\nselect = GM\ngraphmend-entry-points = helper\n")
    assert len(flake8("model.py", cwd=tmp_path)[1]) == 2


def test_bad_option_value_is_a_clear_error(tmp_path):
    (tmp_path / "model.py").write_text(COMPILED_PRINT)
    code, _, err = flake8(
        "--select", "GM", "--graphmend-scope", "everything", "model.py", cwd=tmp_path
    )
    assert code != 0 and "graphmend-scope" in err


def test_internal_error_becomes_one_finding(monkeypatch):
    def explode(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(plugin, "analyze_tree", explode)
    results = list(
        GraphMendChecker(
            ast.parse(COMPILED_PRINT), "model.py", COMPILED_PRINT.splitlines(True)
        ).run()
    )
    assert [(line, col, text.split(" ")[0]) for line, col, text, _ in results] == [(1, 0, "GM000")]
    assert "RecursionError: maximum recursion depth exceeded" in results[0][2]


def test_select_gm_alone_is_silent_on_a_file_that_does_not_parse(tmp_path):
    """flake8 reports E999 only when E9 is selected: docs/usage.md recommends GM,E9."""
    (tmp_path / "broken.py").write_text("import torch\n\n\ndef forward(x:\n    print(x)\n")
    assert flake8("--select", "GM", "broken.py", cwd=tmp_path)[:2] == (0, [])
    code, out, _ = flake8("--select", "GM,E9", "broken.py", cwd=tmp_path)
    assert code == 1 and len(out) == 1 and out[0].startswith("broken.py:") and " E999 " in out[0]
    (tmp_path / ".flake8").write_text("[flake8]\nselect = GM,E9\n")
    code, out, _ = flake8("broken.py", cwd=tmp_path)
    assert code == 1 and " E999 " in out[0]


def test_bad_value_in_a_config_file_is_one_line(tmp_path):
    (tmp_path / "model.py").write_text(COMPILED_PRINT)
    (tmp_path / "setup.cfg").write_text("[flake8]\ngraphmend-scope = bogus\n")
    code, out, err = flake8("--select", "GM", "model.py", cwd=tmp_path)
    assert (code, out) == (2, [])
    assert err == (
        "flake8: error: graphmend-scope: invalid choice: 'bogus' (choose from 'compiled', 'all')\n"
    )
