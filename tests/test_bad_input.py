"""Bad input: one clear line, no traceback, and the file left byte-for-byte as it was."""

import os
import subprocess
import sys
import textwrap

import pytest

FIXABLE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Model(nn.Module):
        def forward(self, x):
            y = x * 2
            print("scaled")
            return y
    """
)


def graphmend(*args, cwd):
    result = subprocess.run(
        [sys.executable, "-m", "flake8_graphmend.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    return result.returncode, result.stdout, result.stderr


def deeply_nested(depth):
    return (
        "import torch\n\n@torch.compile\ndef f(x):\n    return "
        + "(" * depth
        + "x"
        + ")" * depth
        + "\n"
    )


def long_chain(terms):
    return "import torch\n\n@torch.compile\ndef f(x):\n    return x" + " + x" * terms + "\n"


UNPARSABLE = {
    "syntax_error": (b"import torch\ndef f(:\n", "syntax error"),
    "latin1": ("import torch\nname = 'caf\xe9'\n".encode("latin-1"), "not UTF-8"),
    "nul_byte": (b"import torch\nx = 1\x00\n", "null bytes"),
    "py312_type_alias": (b"import torch\ntype Vector = list[float]\n", "syntax error"),
    "too_deeply_nested": (deeply_nested(300).encode(), "too many nested parentheses"),
}


@pytest.mark.parametrize("command", ["check", "fix"])
@pytest.mark.parametrize("case", sorted(UNPARSABLE))
def test_unparsable_file_is_reported_and_untouched(tmp_path, command, case):
    if case == "py312_type_alias" and sys.version_info >= (3, 12):
        pytest.skip("valid syntax on this Python")
    content, message = UNPARSABLE[case]
    path = tmp_path / f"{case}.py"
    path.write_bytes(content)
    (tmp_path / "good.py").write_text(FIXABLE)
    code, out, err = graphmend(command, path.name, "good.py", cwd=tmp_path)
    assert code == 2
    assert message in err and "Traceback" not in err, err
    assert len([line for line in err.splitlines() if path.name in line]) == 1, err
    assert path.read_bytes() == content
    if command == "fix":
        # the good file is still fixed
        assert "_graphmend_print" in (tmp_path / "good.py").read_text()


@pytest.mark.parametrize(
    "name, content",
    [
        ("bom", "\ufeff" + FIXABLE),
        ("crlf", FIXABLE.replace("\n", "\r\n")),
        ("tabs", FIXABLE.replace("    ", "\t")),
        (
            "match_statement",
            FIXABLE
            + (
                "\n\ndef pick(v):\n    match v:\n        case 1:\n            return 'one'\n"
                "        case _:\n            return 'other'\n"
            ),
        ),
    ],
)
def test_unusual_but_valid_sources_are_fixed_in_their_own_style(tmp_path, name, content):
    path = tmp_path / f"{name}.py"
    path.write_bytes(content.encode("utf-8"))
    assert graphmend("check", path.name, cwd=tmp_path)[0] == 1
    code, _, err = graphmend("fix", path.name, cwd=tmp_path)
    assert code == 0, err
    fixed = path.read_bytes().decode("utf-8")
    assert "_graphmend_print(" in fixed
    assert fixed.startswith("\ufeff") == content.startswith("\ufeff")
    assert ("\r\n" in fixed) == ("\r\n" in content)
    assert fixed.count("\r\n") == fixed.count("\n") or "\r\n" not in content
    compile(fixed.lstrip("\ufeff"), name, "exec")
    assert graphmend("check", path.name, cwd=tmp_path)[:2] == (0, "")


def test_empty_file(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    assert graphmend("check", "empty.py", cwd=tmp_path) == (0, "", "")
    assert graphmend("fix", "empty.py", cwd=tmp_path)[0] == 0
    assert (tmp_path / "empty.py").read_bytes() == b""


@pytest.mark.parametrize("command", ["check", "fix"])
def test_expression_too_deep_for_the_parser(tmp_path, command):
    content = long_chain(3000)
    (tmp_path / "chain.py").write_text(content)
    code, _, err = graphmend(command, "chain.py", cwd=tmp_path)
    assert code == 2 and "nested too deeply" in err and "Traceback" not in err, err
    assert (tmp_path / "chain.py").read_text() == content


def test_long_but_parsable_chain_is_analyzed(tmp_path):
    (tmp_path / "chain.py").write_text(long_chain(300))
    assert graphmend("check", "chain.py", cwd=tmp_path) == (0, "", "")


@pytest.mark.slow
def test_ten_megabyte_file(tmp_path):
    filler = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(300_000))
    path = tmp_path / "big.py"
    path.write_text(FIXABLE + "\n\n" + filler)
    assert path.stat().st_size > 10_000_000
    code, out, err = graphmend("check", "big.py", cwd=tmp_path)
    assert code == 1 and out.count("GM101") == 1, err


def test_read_only_file_is_reported_not_crashed(tmp_path):
    path = tmp_path / "locked.py"
    path.write_text(FIXABLE)
    path.chmod(0o444)
    if os.access(path, os.W_OK):
        pytest.skip("running as a user who can write read-only files (root)")
    code, _, err = graphmend("fix", "locked.py", cwd=tmp_path)
    assert code == 2 and "locked.py" in err and "Traceback" not in err
    assert path.read_text() == FIXABLE


@pytest.mark.parametrize("command", ["check", "fix"])
def test_missing_path(tmp_path, command):
    code, _, err = graphmend(command, "missing.py", cwd=tmp_path)
    assert code == 2 and "missing.py: no such file or directory" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["check", "fix"])
def test_symlink_loop_is_skipped(tmp_path, command):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "model.py").write_text(FIXABLE)
    (package / "loop").symlink_to(package, target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path / "self")
    code, out, err = graphmend(command, "pkg", cwd=tmp_path)
    assert "Traceback" not in err
    assert code == (1 if command == "check" else 0), err


def test_libcst_tool_skips_syntax_that_libcst_parses_but_this_python_does_not(tmp_path):
    """libcst's parser accepts newer syntax than ``ast`` on Python 3.11: the codemod skips the
    file."""
    if sys.version_info >= (3, 12):
        pytest.skip("valid syntax on this Python")
    content = FIXABLE + "\n\ntype Vector = list[float]\n"
    path = tmp_path / "newer.py"
    path.write_text(content)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [
        sys.executable,
        "-m",
        "libcst.tool",
        "codemod",
        "--hide-progress",
        "graphmend.FixAll",
        str(path),
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "not analysed: syntax error" in done.stderr and "Skipped 1 files" in done.stderr
    assert path.read_text() == content
