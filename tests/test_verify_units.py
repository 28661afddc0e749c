"""Unit tests of the runner's parts: entry specs, --fix targets, the overlay, output comparison,
recording and comparing behaviour, attribution of break sites to findings, and the report."""

import argparse
import dataclasses
import functools
import json
import logging
import sys
import warnings
from pathlib import Path

import pytest

from flake8_graphmend.verify import attribution
from flake8_graphmend.verify.behaviour import (
    PARTS,
    TRAP_DIFFERENCE,
    BehaviourComparison,
    CallRecord,
    compare_behaviour,
    record_calls,
)
from flake8_graphmend.verify.compare import OutputComparison, compare_outputs, flatten_output
from flake8_graphmend.verify.entry import EntrySpec, parse_entry
from flake8_graphmend.verify.cli import add_verify_arguments, run_verify
from flake8_graphmend.verify.errors import EXIT_FAILED, EXIT_USAGE, VerifyError
from flake8_graphmend.verify.overlay import OverlayFinder, build_overlay, resolve_target
from flake8_graphmend.verify.report import behaviour_summary, problems, render_table, to_json
from flake8_graphmend.verify.results import ArmResult, SiteResult
from flake8_graphmend.verify.runner import (
    Verification, VerifyOptions, describe_targets, display_path, run_worker,
)
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


def test_every_worker_orders_sets_of_names_alike(tmp_path, monkeypatch):
    """Both arms run with one hash seed: a model that keeps ``list(set(names))`` (diffusers'
    config) must not differ between them for that alone."""
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import json, sys\n"
        "spec = json.load(open(sys.argv[1]))\n"
        "order = list({'upcast_attention', 'flip_sin_to_cos', 'norm_eps', 'act_fn', 'dropout'})\n"
        "json.dump({'order': order}, open(spec['result_path'], 'w'))\n"
    )
    orders = [
        run_worker(
            [str(worker)], {"result_path": str(tmp_path / f"r{n}.json")},
            tmp_path / f"spec{n}.json", {}, "the worker",
        )["order"]
        for n in range(4)
    ]
    assert all(order == orders[0] for order in orders)


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


def test_layouts_compare():
    square = torch.arange(4.0).reshape(2, 2)
    transposed = _compare(square.t(), square.t().contiguous())
    assert transposed.differences == [
        "output (layout): strides (1, 2), requires_grad False "
        "!= strides (2, 1), requires_grad False"
    ]
    assert not _compare(torch.ones(2), torch.ones(2, requires_grad=True)).equal


def test_aliasing_compares():
    base = torch.arange(4.0)
    same = _compare((base, base), (base, base.clone()))
    one = "output (aliasing): one tensor: ['output[0]', 'output[1]'] != None"
    assert same.differences == [one]
    view = _compare((base, base[:2]), (base, base[:2].clone()))
    assert view.differences == ["output (aliasing): one memory: ['output[0]', 'output[1]'] != None"]
    twin = base.clone()
    assert _compare((base, base[:2]), (twin, twin[:2])).equal
    assert _compare((torch.empty(0), torch.empty(0)), (torch.empty(0), torch.empty(0))).equal


def test_objects_are_compared_through_their_attributes():
    class Cache:
        def __init__(self, value):
            self.keys = [value]

    assert _compare(Cache(torch.ones(2)), Cache(torch.ones(2))).equal
    assert not _compare(Cache(torch.ones(2)), Cache(torch.zeros(2))).equal


# --- recording behaviour (no compiling) -----------------------------------------------------------

chatty_logger = logging.getLogger("graphmend.test.chatty")


def _chatty(x):
    print("to stdout")
    print("to stderr", file=sys.stderr)
    chatty_logger.warning("careful with %s", "x")
    chatty_logger.info("not shown: below the effective level")
    warnings.warn("deprecated here", FutureWarning)
    return {"y": x * 2, "n": 1}


def test_a_recording_captures_every_part():
    first, second = record_calls([lambda: _chatty(torch.ones(2))] * 2)
    tensors, values = first.output
    assert torch.equal(tensors["output['y']"], torch.full((2,), 2.0))
    assert values == {
        "output['n']": "1",
        "output['y'] (layout)": "strides (1,), requires_grad False",
    }
    assert first.exception is None
    assert (first.stdout, first.stderr) == ("to stdout\n", "to stderr\n")
    assert first.logs == [("graphmend.test.chatty", "WARNING", "careful with x")]
    assert first.warnings == [("FutureWarning", "deprecated here")]
    assert second.logs == first.logs
    assert second.warnings == []  # the default filter: once per location, as in the program


class _Unshowable:
    __slots__ = ()

    def __repr__(self):
        raise RuntimeError("no repr")


@dataclasses.dataclass
class _Output:
    logits: object
    extra: object = None


@pytest.mark.parametrize(
    "make",
    [
        lambda: None,
        lambda: (torch.ones(1), "text", 3),
        lambda: _Output(torch.ones(2), {"cache": [torch.zeros(1)]}),
        lambda: _Unshowable(),
    ],
    ids=["None", "tuple", "dataclass", "unrepresentable"],
)
def test_any_output_is_recorded_and_compares(make):
    first, second = record_calls([make, make])
    assert first.exception is None and first.output is not None
    assert compare_behaviour([first], [second], LABELS).equal


def test_each_recording_starts_from_a_fresh_once_state(monkeypatch):
    @functools.lru_cache(None)
    def warning_once(self, *args):  # as transformers installs it on logging.Logger
        self.warning(*args)

    monkeypatch.setattr(logging.Logger, "warning_once", warning_once, raising=False)

    def call():
        chatty_logger.warning_once("only once")
        warnings.warn("once action", UserWarning)

    with warnings.catch_warnings():
        warnings.filterwarnings("once", "once action")
        for _ in range(2):
            first, second = record_calls([call, call])
            assert first.logs == [("graphmend.test.chatty", "WARNING", "only once")]
            assert first.warnings == [("UserWarning", "once action")]
            assert second.logs == second.warnings == []


def test_a_raising_call_is_recorded_not_raised():
    class GuardError(ValueError):
        pass

    def fails():
        print("before")
        raise GuardError("bad mask")

    (record,) = record_calls([fails])
    assert record.output is None
    assert record.exception == (f"{__name__}.{GuardError.__qualname__}", "bad mask")
    assert record.stdout == "before\n"


def test_non_propagating_loggers_are_recorded_and_torch_s_are_not(monkeypatch):
    library = logging.getLogger("graphmend.test.library")  # like transformers' own logger
    monkeypatch.setattr(library, "propagate", False)
    monkeypatch.setattr(library, "handlers", [logging.NullHandler()])

    def call():
        library.warning("from a library")
        logging.getLogger("torch.graphmend_test").warning("a torch diagnostic")

    (record,) = record_calls([call])
    assert record.logs == [("graphmend.test.library", "WARNING", "from a library")]


# --- comparing behaviour ----------------------------------------------------------------------


def _record(value=1.0, **fields):
    """A call that returned ``tensor([value])``, printed a line and logged a warning."""
    usual = {
        "output": ({"output": torch.tensor([value])}, {}),
        "stdout": "hello\n",
        "logs": [("m", "WARNING", "sub warn")],
    }
    return CallRecord(**(usual | fields))


def _raised(kind, message):
    """The same call, raising ``kind(message)`` at its end."""
    return _record(output=None, exception=(kind, message))


LABELS = ("eager original", "compiled fixed")


def test_equal_recordings():
    comparison = compare_behaviour([_record(), _record()], [_record(), _record()], LABELS)
    assert comparison.equal and comparison.failing() == []
    assert all(part.equal and part.difference is None for part in comparison.parts.values())
    assert list(comparison.parts) == [part for part in PARTS if part != "gradients"]
    assert list(compare_behaviour([], [], LABELS, gradients=True).parts) == list(PARTS)
    assert comparison.key == "eager_original_vs_compiled_fixed"


@pytest.mark.parametrize(
    ("part", "changed", "difference"),
    [
        ("values", {"value": 1.5}, "values: call 2: output: max |difference| 0.5"),
        (
            "stdout",
            {"stdout": "hello\nworld\n"},
            "stdout: eager original has 2 lines, compiled fixed 3: first extra 'world\\n' (call 2)",
        ),
        (
            "stderr",
            {"stderr": "oops"},
            "stderr: eager original has 0 lines, compiled fixed 1: first extra 'oops' (call 2)",
        ),
        (
            "logs",
            {"logs": []},
            "log records: eager original has 2, compiled fixed 1: "
            "first missing WARNING m: 'sub warn' (call 2)",
        ),
        (
            "logs",
            {"logs": [("m", "INFO", "sub warn")]},
            "log records: eager original has 2, compiled fixed 2: first different: "
            "WARNING m: 'sub warn' (call 2) in the eager original, "
            "INFO m: 'sub warn' (call 2) in the compiled fixed",
        ),
        (
            "warnings",
            {"warnings": [("UserWarning", "w")] * 2},
            "warnings: eager original has 0, compiled fixed 2: "
            "first extra UserWarning: 'w' (call 2)",
        ),
    ],
)
def test_each_part_that_differs_is_named_with_its_first_difference(part, changed, difference):
    comparison = compare_behaviour([_record(), _record()], [_record(), _record(**changed)], LABELS)
    assert not comparison.equal and comparison.failing() == [part]
    assert comparison.parts[part].difference == difference


def test_the_same_exception_on_both_sides_is_equal():
    error = _raised("ValueError", "bad mask")
    comparison = compare_behaviour([error, error], [error, error], LABELS)
    assert comparison.equal


def test_an_exception_on_one_side_only():
    comparison = compare_behaviour(
        [_record(), _raised("ValueError", "bad mask")], [_record(), _record()], LABELS
    )
    assert comparison.failing() == ["exceptions"]  # the values of calls that returned are equal
    assert comparison.parts["exceptions"].difference == (
        "exceptions: call 2: eager original raised ValueError: 'bad mask', compiled fixed returned"
    )


def test_the_trap_difference_is_documented_not_a_failure():
    original = [_raised("ValueError", "bad mask")] * 2
    compiled = [_raised("RuntimeError", "bad mask")] * 2
    documented = compare_behaviour(original, compiled, LABELS, trap_documented=True)
    exceptions = documented.parts["exceptions"]
    assert documented.equal and not exceptions.equal and exceptions.documented == TRAP_DIFFERENCE
    assert documented.documented() == ["exceptions"]
    assert behaviour_summary([documented]) == (
        "yes; exceptions: documented difference ([Trap]: RuntimeError under compile)"
    )
    assert not compare_behaviour(original, compiled, LABELS).equal  # only for compiled fixed code


@pytest.mark.parametrize(
    "compiled",
    [
        _raised("RuntimeError", "another message"),
        _raised("torch._dynamo.exc.TorchRuntimeError", "bad mask"),
        _record(),
    ],
)
def test_other_exception_differences_are_failures(compiled):
    comparison = compare_behaviour(
        [_raised("ValueError", "bad mask")], [compiled], LABELS, trap_documented=True
    )
    assert comparison.failing() == ["exceptions"]


def test_a_comparison_survives_the_json_between_processes():
    comparison = compare_behaviour([_record()], [_record(logs=[])], LABELS)
    as_json = json.loads(json.dumps(dataclasses.asdict(comparison)))
    assert BehaviourComparison.from_json(as_json) == comparison


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


def _arm(graphs, sites, comparison=None, behaviour=()):
    return ArmResult(
        device="cpu",
        torch_version=torch.__version__,
        graphs=graphs,
        breaks=sum(site.events for site in sites),
        break_sites=sites,
        fullgraph_error=None if graphs == 1 else "Unsupported: Data-dependent branching",
        timings=Timings(compile_s=0.5, cold_s=0.6, warm_median_s=0.1, warm_calls=20),
        exceptions={"eager": [None, None], "compiled": [None, None]},
        comparison=comparison,
        behaviour=list(behaviour),
    )


def _compared(eager_original, compiled_fixed, gradients=False):
    """The original arm's and the fixed arm's behaviour comparisons, where the compiled original
    and the eager fixed code behave as the eager original."""

    def against(actual, label):
        labels = ("eager original", label)
        return compare_behaviour(
            eager_original, actual, labels, label == "compiled fixed", gradients
        )

    return [against(eager_original, "compiled original")], [
        against(compiled_fixed, "compiled fixed"),
        against(eager_original, "eager fixed"),
    ]


def _verification(
    tmp_path, fixed_graphs=1, equal=True, eager_original=None, compiled_fixed=None, grad=False
):
    """Four graphs fixed to ``fixed_graphs``; with ``grad``, as ``--grad`` (gradients compared)."""
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
    eager_original = eager_original or [_record()] * 2
    reference, behaviour = _compared(eager_original, compiled_fixed or eager_original, grad)
    return Verification(
        VerifyOptions(EntrySpec(tmp_path / "m.py", "build"), grad=grad),
        original=_arm(4, [covered, uncovered, unlinted], behaviour=reference),
        fixed=_arm(fixed_graphs, fixed_sites, comparison, behaviour),
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
    assert "fixes: 1 applied in 1 file\n  m.py:GM501 line 9: no fix" in table


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
    assert problems(_verification(tmp_path, compiled_fixed=[_record(), _record(stdout="")])) == [
        "the behaviour differs, eager original vs compiled fixed: stdout"
    ]
    assert problems(_verification(tmp_path, fixed_graphs=2), max_breaks=0) == [
        "the fixed code has 1 break events, more than --max-breaks 0"
    ]
    eager_again = _verification(tmp_path, fixed_graphs=2)
    eager_again.original.compiled_calls, eager_again.fixed.compiled_calls = 13, 10
    assert problems(eager_again) == [
        "the fixed code's graphs make fewer of the program's calls (10) than the original's "
        "(13): some code that compiled runs eagerly"
    ]
    # without a break the fixed code is traced whole: fewer calls are another path it takes
    # when traced (transformers' `is_torchdynamo_compiling()` shortcuts), nothing eager
    whole = _verification(tmp_path)
    whole.original.compiled_calls, whole.fixed.compiled_calls = 73, 61
    assert whole.fixed.breaks == 0 and problems(whole) == []
    eager_again.fixed.compiled_calls = 14  # a selection computes both sides: more calls
    assert problems(eager_again) == []
    failed = _verification(tmp_path)
    failed.fixed, failed.failure = None, VerifyError("fixed arm: it broke", EXIT_FAILED)
    document = to_json(failed)
    assert document["fixed"] is None and document["timings"]["fixed"] is None
    assert document["problems"] == ["fixed arm: it broke"] and document["original"]["graphs"] == 4


def test_json_has_the_behaviour_of_each_comparison(tmp_path):
    dropped = [_record(), _record(logs=[])]
    document = to_json(_verification(tmp_path, compiled_fixed=dropped))
    assert document["behaviour_equal"] is False and document["ok"] is False
    assert set(document["behaviour"]) == {
        "eager_original_vs_compiled_fixed",
        "eager_original_vs_eager_fixed",
        "eager_original_vs_compiled_original",
    }
    compiled = document["behaviour"]["eager_original_vs_compiled_fixed"]
    assert compiled == {
        "behaviour_equal": False,
        "values_equal": True,
        "state_equal": True,
        "exceptions_equal": True,
        "stdout_equal": True,
        "stderr_equal": True,
        "logs_equal": False,
        "warnings_equal": True,
        "differences": {
            "logs": "log records: eager original has 2, compiled fixed 1: "
            "first missing WARNING m: 'sub warn' (call 2)"
        },
        "documented": {},
    }
    assert document["behaviour"]["eager_original_vs_eager_fixed"]["behaviour_equal"] is True
    assert document["problems"] == [
        "the behaviour differs, eager original vs compiled fixed: logs"
    ]
    assert document["original"]["exceptions"] == {"eager": [None, None], "compiled": [None, None]}


def test_the_table_has_a_behaviour_row_and_the_first_differences(tmp_path):
    table = render_table(_verification(tmp_path, compiled_fixed=[_record(), _record(logs=[])]))
    assert "\nbehaviour         no: logs\n" in table
    assert (
        "  eager original vs compiled fixed: no: logs\n"
        "      log records: eager original has 2, compiled fixed 1: "
        "first missing WARNING m: 'sub warn' (call 2)\n"
        "  eager original vs eager fixed: yes\n"
        "  eager original vs compiled original (reference: what compiling alone changes): yes\n"
    ) in table
    assert "\nbehaviour         yes\n" in render_table(_verification(tmp_path))


def test_a_documented_difference_passes_and_is_shown(tmp_path):
    verification = _verification(
        tmp_path,
        eager_original=[_raised("ValueError", "bad mask")] * 2,
        compiled_fixed=[_raised("RuntimeError", "bad mask")] * 2,
    )
    original, fixed = verification.original, verification.fixed
    original.exceptions["eager"] = ["ValueError: bad mask (at m.py:5)"] * 2
    original.timings = fixed.timings = None  # the compiled calls raise: nothing is timed
    assert problems(verification) == []
    document = to_json(verification)
    assert document["behaviour_equal"] is True and document["ok"] is True
    compiled = document["behaviour"]["eager_original_vs_compiled_fixed"]
    assert compiled["exceptions_equal"] is False and compiled["behaviour_equal"] is True
    assert compiled["documented"] == {"exceptions": TRAP_DIFFERENCE}
    assert document["timings"] == {"original": None, "fixed": None}
    table = render_table(verification)
    assert (
        "behaviour         yes; exceptions: documented difference "
        "([Trap]: RuntimeError under compile)\n" in table
    )
    assert (
        "      exceptions: call 1: eager original raised ValueError: 'bad mask', "
        "compiled fixed raised RuntimeError: 'bad mask'\n" in table
    )
    assert "\n  eager original raises ValueError: bad mask (at m.py:5)\n" in table
    assert "\ncold call (ms)               -           -\n" in table


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


def test_the_fixed_arm_keeps_its_own_inputs_when_they_are_the_saved_ones(tmp_path):
    """Saving makes a tensor that autograd computed a leaf; inputs built alike are kept."""
    from flake8_graphmend.verify._arm import _same_inputs

    def build():
        torch.manual_seed(0)
        return (torch.randn(3, requires_grad=True) * 2, 4), {"mask": torch.ones(3).t()}

    torch.save(build(), tmp_path / "inputs.pt")
    saved = torch.load(tmp_path / "inputs.pt", weights_only=False)
    assert saved[0][0].is_leaf and not build()[0][0].is_leaf
    assert _same_inputs(saved, build())
    other = build()
    other[0][0].data.add_(1)
    assert not _same_inputs(saved, other)
    assert not _same_inputs(saved, ((saved[0][0], 5), saved[1]))
    assert not _same_inputs(saved, ((saved[0][0].detach(), 4), saved[1]))


def test_the_progress_line_names_a_program_that_is_its_own_fix_target_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    entry = EntrySpec(tmp_path / "m.py", "build")
    assert describe_targets(VerifyOptions(entry, fix_targets=["m.py"])) == "m.py"
    both = VerifyOptions(entry, fix_targets=["m.py", "layers.py"])
    assert describe_targets(both) == "m.py, layers.py"
