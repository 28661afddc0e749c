"""Unit tests of the runner's parts: entry specs, --fix targets, the overlay, output comparison,
attribution of break sites to findings, and the report."""

import argparse
import json
import sys
from pathlib import Path

import pytest

from flake8_graphmend.verify import attribution
from flake8_graphmend.verify.compare import OutputComparison, compare_outputs, flatten_output
from flake8_graphmend.verify.entry import EntrySpec, parse_entry
from flake8_graphmend.verify.cli import add_verify_arguments, run_verify
from flake8_graphmend.verify.errors import EXIT_FAILED, EXIT_USAGE, VerifyError
from flake8_graphmend.verify.overlay import OverlayFinder, build_overlay, resolve_target
from flake8_graphmend.verify.report import problems, render_table, to_json
from flake8_graphmend.verify.results import ArmResult, SiteResult
from flake8_graphmend.verify.runner import Verification, VerifyOptions, display_path
from flake8_graphmend.verify.timing import Timings

torch = pytest.importorskip("torch")


# --- ENTRY -----------------------------------------------------------------------------------


def test_entry_with_and_without_factory(tmp_path):
    entry = tmp_path / "model.py"
    entry.write_text("def build(): pass\n")
    assert parse_entry(f"{entry}:make") == EntrySpec(entry, "make")
    assert parse_entry(str(entry)) == EntrySpec(entry, "build")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("missing.py:build", "entry file not found: missing.py"),
        ("model.txt:build", "ENTRY must look like path/to/file.py:factory"),
        ("model.py:not-a-name", "is not a Python name"),
    ],
)
def test_bad_entries(text, message):
    with pytest.raises(VerifyError, match=message):
        parse_entry(text)


# --- --fix targets and the overlay ------------------------------------------------------------


def test_targets_resolve_from_paths_and_module_names(tmp_path):
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "mod.py"
    module.write_text("")
    assert resolve_target(str(module)) == module.resolve()
    assert resolve_target(str(tmp_path / "pkg")) == (tmp_path / "pkg").resolve()
    assert resolve_target("json") == Path(sys.modules["json"].__file__).parent.resolve()
    assert resolve_target("json.decoder").name == "decoder.py"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no.such.module", "--fix target not found: 'no.such.module'"),
        ("sys", "is not Python source"),
    ],
)
def test_targets_that_cannot_be_rewritten(target, message):
    with pytest.raises(VerifyError, match=message):
        resolve_target(target)


@pytest.fixture
def package_tree(tmp_path, monkeypatch):
    """A package ``toypkg`` with a submodule, importable from ``tmp_path/src``."""
    package = tmp_path / "src" / "toypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from .layer import value\n")
    (package / "layer.py").write_text("def value():\n    return 'original'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield package
    for name in [name for name in sys.modules if name.startswith("toypkg")]:
        del sys.modules[name]


def test_the_finder_loads_copies_under_the_original_module_names(package_tree, tmp_path):
    copy = tmp_path / "overlay" / "layer.py"
    copy.parent.mkdir()
    copy.write_text("def value():\n    return 'rewritten'\n")
    finder = OverlayFinder({str((package_tree / "layer.py").resolve()): str(copy)})
    finder.install()
    try:
        import toypkg

        assert toypkg.value() == "rewritten"
        assert sys.modules["toypkg.layer"].__file__ == str(copy)
        assert sys.modules["toypkg"].__file__ == str(package_tree / "__init__.py")
    finally:
        sys.meta_path.remove(finder)


def test_the_overlay_copies_and_rewrites_without_touching_originals(package_tree, tmp_path):
    entry = tmp_path / "entry.py"
    entry.write_text("import toypkg\n")
    before = (package_tree / "layer.py").read_text()
    overlay = build_overlay(entry, [package_tree, package_tree / "layer.py"], tmp_path / "overlay")

    assert set(overlay.copies) == {
        str(path.resolve())
        for path in (entry, package_tree / "__init__.py", package_tree / "layer.py")
    }
    assert overlay.entry_copy.read_text() == entry.read_text()
    assert overlay.original_of(overlay.copies[str((package_tree / "layer.py").resolve())]) == str(
        (package_tree / "layer.py").resolve()
    )
    assert (package_tree / "layer.py").read_text() == before
    assert {Path(outcome.path).name for outcome in overlay.fix_outcomes} >= {"entry.py", "layer.py"}


@pytest.mark.parametrize(("scope", "fixed"), [("compiled", 0), ("all", 1)])
def test_the_fix_scope_reaches_helpers_called_from_elsewhere(scope, fixed, tmp_path):
    helper = tmp_path / "helpers.py"
    helper.write_text("import torch\n\n\ndef scaled(x):\n    print('scaling')\n    return x * 2\n")
    overlay = build_overlay(helper, [], tmp_path / "overlay", scope)
    assert [outcome.fixed for outcome in overlay.fix_outcomes] == [fixed]


# --- outputs ------------------------------------------------------------------------------------


def _compare(expected, actual):
    return compare_outputs(flatten_output(expected), flatten_output(actual))


def test_equal_nested_outputs():
    output = {"logits": torch.randn(2, 3), "cache": ((torch.ones(1),), [torch.zeros(2)]), "n": 3}
    twin = {
        "logits": output["logits"].clone(),
        "cache": ((torch.ones(1),), [torch.zeros(2)]),
        "n": 3,
    }
    assert _compare(output, twin) == OutputComparison(True, 0.0, [])


def test_comparison_is_bitwise():
    nan = torch.tensor([float("nan"), 1.0])
    assert _compare(nan, nan.clone()).equal
    signed = _compare(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert not signed.equal and signed.max_abs_diff == 0.0


def test_differences_are_located_and_measured():
    result = _compare(
        (torch.tensor([1.0, 2.0]), torch.ones(2), "a"),
        (torch.tensor([1.0, 2.5]), torch.ones(3), "b"),
    )
    assert not result.equal
    assert result.max_abs_diff == 0.5
    assert result.differences == [
        "output[0]: max |difference| 0.5",
        "output[1]: torch.float32(2,) != torch.float32(3,)",
        "output[2]: 'a' != 'b'",
    ]


def test_objects_are_compared_through_their_attributes():
    class Cache:
        def __init__(self, value):
            self.keys = [value]

    assert _compare(Cache(torch.ones(2)), Cache(torch.ones(2))).equal
    assert not _compare(Cache(torch.ones(2)), Cache(torch.zeros(2))).equal


# --- attribution ----------------------------------------------------------------------------------


def test_statement_spans_cover_multi_line_headers():
    import ast

    tree = ast.parse(
        "def f(x):\n"
        "    if x.dtype == torch.float16 and (\n"
        "        torch.isinf(x).any()\n"
        "    ):\n"
        "        x = x.clamp(-1, 1)\n"
        "    return x\n"
    )
    assert attribution._statement_span(tree, 3) == (2, 4)
    assert attribution._statement_span(tree, 5) == (5, 5)


def test_findings_at_a_break_line(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        print('x')\n        return x\n"
    )
    found = attribution.findings_at(str(source), 5)
    assert found and all(finding["line"] == 5 for finding in found)
    assert attribution.findings_at(str(source), 6) == []


def test_files_that_cannot_be_linted_say_why(tmp_path):
    with pytest.raises(attribution.LintFailure, match="FileNotFoundError"):
        attribution.findings_at(str(tmp_path / "gone.py"), 1)
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    with pytest.raises(attribution.LintFailure, match="SyntaxError"):
        attribution.findings_at(str(broken), 1)


def test_display_paths_are_relative_when_possible(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert display_path(str(tmp_path / "a" / "b.py")) == str(Path("a") / "b.py")
    assert display_path(json.__file__) == "json/__init__.py"


# --- report ---------------------------------------------------------------------------------


def _arm(graphs, sites, comparison=None):
    return ArmResult(
        device="cpu",
        torch_version=torch.__version__,
        graphs=graphs,
        breaks=sum(site.events for site in sites),
        break_sites=sites,
        fullgraph_error=None if graphs == 1 else "Unsupported: Data-dependent branching",
        timings=Timings(compile_s=0.5, cold_s=0.6, warm_median_s=0.1, warm_calls=20),
        comparison=comparison,
    )


def _verification(tmp_path, fixed_graphs=1, equal=True):
    covered = SiteResult(
        "m.py",
        4,
        "GB0170",
        "Data-dependent branching",
        "branching",
        2,
        [
            {
                "code": "GM201",
                "line": 4,
                "message": "Python `if` on a tensor",
                "fixer": "F",
                "decline": None,
            }
        ],
    )
    uncovered = SiteResult("m.py", 9, "GB0036", "Dynamic shape operator", "nonzero", 1, [])
    unlinted = SiteResult(
        "<string>",
        1,
        "GB0007",
        "Attempted to call function marked as skipped",
        "skipped",
        1,
        lint_error="FileNotFoundError: <string>",
    )
    comparison = OutputComparison(
        equal, None if equal else 0.25, [] if equal else ["output: max |difference| 0.25"]
    )
    fixed_sites = [] if fixed_graphs == 1 else [uncovered] * (fixed_graphs - 1)
    return Verification(
        VerifyOptions(EntrySpec(tmp_path / "m.py", "build")),
        original=_arm(4, [covered, uncovered, unlinted]),
        fixed=_arm(fixed_graphs, fixed_sites, comparison),
        fix_outcomes=[
            {
                "path": "m.py",
                "changed": True,
                "fixed": 1,
                "declined": ["GM501 line 9: no fix"],
                "error": None,
            }
        ],
    )


def test_the_table_shows_sites_with_their_findings_or_none(tmp_path):
    table = render_table(_verification(tmp_path))
    assert "graphs                       4           1" in table
    assert "break events                 4           0" in table
    assert "m.py:4  GB0170 x2  Data-dependent branching" in table
    assert "GM201 Python `if` on a tensor" in table
    assert (
        "m.py:9  GB0036  Dynamic shape operator\n      nonzero\n      no GM rule covers this line"
        in table
    )
    assert (
        "<string>:1  GB0007  Attempted to call function marked as skipped\n      skipped\n"
        "      not linted: FileNotFoundError: <string>" in table
    )
    assert "break sites, fixed (lines of the rewritten copies): none" in table
    assert "bitwise equal" in table
    assert "fixes: 1 applied in 1 file\n  declined in m.py: GM501 line 9: no fix" in table


def test_json_has_the_stable_keys(tmp_path):
    document = to_json(_verification(tmp_path))
    assert document["original"]["graphs"] == 4 and document["fixed"]["graphs"] == 1
    assert document["original"]["breaks"] == 4 and document["fixed"]["breaks"] == 0
    assert document["original"]["break_sites"][0]["gb_id"] == "GB0170"
    assert document["outputs_equal"] is True
    assert set(document["timings"]) == {"original", "fixed"}
    assert set(document["timings"]["fixed"]) == {
        "compile_s",
        "cold_s",
        "warm_median_s",
        "warm_calls",
    }
    assert document["ok"] is True and document["problems"] == []
    json.dumps(document)


def test_problems_name_what_failed(tmp_path):
    assert problems(_verification(tmp_path, fixed_graphs=5)) == [
        "the fixed code has more graphs (5) than the original (4)"
    ]
    assert problems(_verification(tmp_path, equal=False)) == ["the outputs of the two arms differ"]
    assert problems(_verification(tmp_path, fixed_graphs=2), max_breaks=0) == [
        "the fixed code has 1 break events, more than --max-breaks 0"
    ]
    failed = _verification(tmp_path)
    failed.fixed, failed.failure = None, VerifyError("fixed arm: it broke", EXIT_FAILED)
    document = to_json(failed)
    assert document["fixed"] is None and document["timings"]["fixed"] is None
    assert document["problems"] == ["fixed arm: it broke"] and document["original"]["graphs"] == 4


# --- command line checks that need no arm ------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["{entry}", "--mode", "reduce-overhead"],
            "--mode reduce-overhead needs --backend inductor",
        ),
        (["{entry}", "--repeat", "0"], "--repeat must be at least 1"),
        (["{entry}", "--overlay-dir", "{tmp}"], "already exists; name a new folder"),
        (["{entry}", "--json", "{tmp}/no/such/folder/out.json"], "its folder does not exist"),
        (["{tmp}/absent.py"], "entry file not found"),
        (["{entry}", "--fix", "{tmp}/notes.txt"], "is not a Python file or a folder"),
    ],
)
def test_bad_command_lines_fail_before_any_arm(arguments, message, tmp_path, capsys):
    entry = tmp_path / "model.py"
    entry.write_text("def build(): pass\n")
    (tmp_path / "notes.txt").write_text("")
    parser = argparse.ArgumentParser()
    add_verify_arguments(parser)
    args = parser.parse_args([a.format(entry=entry, tmp=tmp_path) for a in arguments])
    assert run_verify(args) == EXIT_USAGE
    error = capsys.readouterr().err
    assert error.startswith("graphmend verify: error: ") and message in error
    assert error.count("\n") == 1
