"""`python -m flake8_graphmend.verify` end to end: the examples, the error cases, an inductor run
and a small T5 from transformers 4.52.4 with its modules fixed.

Each run is a subprocess with two arm subprocesses; the runs of this module are started together
(two at a time, longest first) when the first test asks for one, and each test reads its own.
"""

import json
import re
import runpy
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from flake8_graphmend.engine import analyze_file  # noqa: E402
from flake8_graphmend.verify.behaviour import PARTS  # noqa: E402

#: Every test here shares the `runs` fixture, which runs the verify command end to end on every
#: case once (a few minutes): the module is outside the quick tier (`-m "not slow"`).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TM_T5 = "transformers.models.t5"
try:
    import transformers

    INSTALLED_T5 = Path(transformers.__file__).parent / "models" / "t5" / "modeling_t5.py"
    HAS_TRANSFORMERS_4_52_4 = transformers.__version__ == "4.52.4"
except ImportError:
    HAS_TRANSFORMERS_4_52_4 = False
EXAMPLES = ROOT / "examples"

# Each example's break sites: (a snippet of the breaking line, GB id, events). Lines are looked up.
EXAMPLE_SITES = {
    "gate": [
        ("logger.warning(", "GB0291", 1),
        ("if peak > 4:", "GB0170", 1),
        ("if score > 0:", "GB0170", 1),
    ],
    "guards": [
        ("if (mask.sum(dim=-1) == 0).any():", "GB0170", 1),
        ("if not torch.equal(", "GB0033", 1),
    ],
    "clamp": [("print(", "GB0059", 1), ("if hidden.dtype == torch.float16", "GB0170", 2)],
    "scalars": [
        (".item()", "GB0124", 1),
        ("torch.nonzero(", "GB0036", 1),
        ("scores[scores > threshold]", "GB0036", 1),
    ],
}
# Examples whose every break has a fixer: the fixed arm compiles to one graph.
FULLY_FIXABLE = ("gate", "guards", "clamp")

BAD_ENTRIES = {
    "raises.py": """
        def build():
            raise ValueError("no weights for this config")
    """,
    "eager_fails.py": """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return x @ torch.ones(5, 5)

        def build():
            return Net(), (torch.ones(2, 3),)
    """,
    "differs_when_fixed.py": """
        import torch

        ORIGINAL_FILE = {original!r}

        class Net(torch.nn.Module):
            def forward(self, x):
                return x + (1 if __file__ == ORIGINAL_FILE else 2)

        def build():
            return Net(), (torch.ones(3),)
    """,
    "fails_when_fixed.py": """
        import torch

        ORIGINAL_FILE = {original!r}

        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1

        def build():
            if __file__ != ORIGINAL_FILE:
                raise RuntimeError("the rewritten copy fails")
            return Net(), (torch.ones(3),)
    """,
    "raises_when_fixed.py": """
        import torch

        ORIGINAL_FILE = {original!r}

        class Net(torch.nn.Module):
            def forward(self, x):
                if __file__ != ORIGINAL_FILE:
                    raise RuntimeError("the rewritten copy fails")
                return x + 1

        def build():
            return Net(), (torch.ones(3),)
    """,
    "logs_only_originally.py": """
        import logging

        import torch

        ORIGINAL_FILE = {original!r}
        logger = logging.getLogger("graphmend.test.net")

        class Net(torch.nn.Module):
            def forward(self, x):
                if __file__ == ORIGINAL_FILE:
                    logger.warning("sub warn")
                return x + 1

        def build():
            return Net(), (torch.ones(3),)
    """,
    "guard_fails.py": """
        import torch

        class Guarded(torch.nn.Module):
            def forward(self, x, mask):
                if (mask.sum(dim=-1) == 0).any():
                    raise ValueError("every row needs a token")
                return x * mask

        def build():
            return Guarded(), (torch.ones(2, 3), torch.tensor([[0, 0, 0], [1, 1, 1]]))
    """,
    "check_after_batch_norm.py": """
        import torch

        class Normed(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = torch.nn.BatchNorm1d(3)

            def forward(self, x):
                h = self.norm(x)
                torch._assert_async(~torch.isnan(h).any(), "NaN after the norm")
                return h

        def build():
            return Normed().train(), (torch.tensor([[1.0, 2.0, float("nan")], [0.0, 1.0, 2.0]]),)
    """,
    "running_average.py": """
        import torch

        SEEN = {{"calls": []}}

        class Average(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mean", torch.zeros(3))
                self.short, self.long = torch.ones(3), torch.full((3,), 2.0)
                self.register_buffer("scale", self.short, persistent=False)
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                SEEN["calls"].append(self.calls)
                self.mean.lerp_(x.mean(0), 0.5)
                out = (x - self.mean) * self.scale * len(SEEN["calls"])
                self.register_buffer("scale", self.long, persistent=False)  # as LongRoPE does
                return out

        def build():
            return Average(), (torch.ones(2, 3),)
    """,
    "aliases_when_fixed.py": """
        import torch

        ORIGINAL_FILE = {original!r}

        class Rope(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.short, self.long = torch.ones(3), torch.full((3,), 2.0)
                self.register_buffer("inv_freq", self.short, persistent=False)
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                chosen = self.long if __file__ == ORIGINAL_FILE else self.long.clone()
                self.register_buffer("inv_freq", chosen, persistent=False)
                return x * self.inv_freq

        def build():
            return Rope(), (torch.ones(3),)
    """,
    "single_graph.py": """
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(8, 8)

            def forward(self, x):
                return torch.relu(self.linear(x)) * 2

        def build():
            torch.manual_seed(0)
            return Net().eval(), (torch.randn(2, 8),)
    """,
}


class Run:
    """The outcome of one CLI run: exit code, stdout, stderr and the JSON file (if written)."""

    def __init__(self, process, json_path):
        self.code, self.stdout, self.stderr = process.returncode, process.stdout, process.stderr
        self.json_path = json_path
        self.json = json.loads(json_path.read_text()) if json_path.is_file() else None

    @property
    def error_lines(self):
        """stderr without the progress lines (``graphmend verify: <step> ... done in 1.0 s``)."""
        return [line for line in self.stderr.splitlines() if " ... " not in line]


@pytest.fixture(scope="module")
def bad_entries(tmp_path_factory):
    folder = tmp_path_factory.mktemp("entries")
    for name, source in BAD_ENTRIES.items():
        path = folder / name
        path.write_text(textwrap.dedent(source.format(original=str(path))))
    return folder


@pytest.fixture(scope="module")
def runs(request, bad_entries, tmp_path_factory):
    """Start the runs of this module (the slow ones only if a slow test is selected);
    ``runs[name]`` waits for that one."""
    out = tmp_path_factory.mktemp("json")
    commands = {}
    if any(item.get_closest_marker("slow") for item in request.session.items):
        if HAS_TRANSFORMERS_4_52_4:
            commands["t5"] = ["benchmarks/entries/t5_small.py:build", "--fix", TM_T5]
            commands["t5"] += ["--overlay-dir", str(out / "t5-overlay")]
        commands["inductor"] = [str(bad_entries / "single_graph.py"), "--backend", "inductor"]
    commands.update({f"example:{name}": [str(EXAMPLES / f"{name}.py")] for name in EXAMPLE_SITES})
    commands.update(
        {
            "missing file": [str(bad_entries / "nothing_here.py")],
            "missing factory": [f"{bad_entries / 'raises.py'}:make_model"],
            "factory raises": [str(bad_entries / "raises.py")],
            "fails eagerly": [str(bad_entries / "eager_fails.py")],
            "fixed differs": [str(bad_entries / "differs_when_fixed.py")],
            "fixed fails": [str(bad_entries / "fails_when_fixed.py")],
            "fixed raises": [str(bad_entries / "raises_when_fixed.py")],
            "fixed drops a log record": [str(bad_entries / "logs_only_originally.py")],
            "guard fails": [str(bad_entries / "guard_fails.py")],
            "check after a batch norm": [str(bad_entries / "check_after_batch_norm.py")],
            "running average": [str(bad_entries / "running_average.py")],
            "fixed aliases otherwise": [str(bad_entries / "aliases_when_fixed.py")],
            "fix target missing": [
                str(bad_entries / "single_graph.py"),
                "--fix",
                "no_such_package.models",
            ],
        }
    )

    def run(name, arguments):
        json_path = out / f"{re.sub(r'[^a-z]+', '_', name)}.json"
        process = subprocess.run(
            [
                sys.executable,
                "-m",
                "flake8_graphmend.verify",
                *arguments,
                "--repeat",
                "2",
                "--json",
                str(json_path),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        return Run(process, json_path)

    pool = ThreadPoolExecutor(max_workers=2)
    futures = {name: pool.submit(run, name, arguments) for name, arguments in commands.items()}
    yield futures
    pool.shutdown(cancel_futures=True)


def result(runs, name):
    return runs[name].result()


def line_of(path, snippet):
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if snippet in line)


def independent_count(name):
    """Graphs and break events of the example's first compiled call, counted here directly."""
    from torch._dynamo.utils import counters

    model, args = runpy.run_path(str(EXAMPLES / f"{name}.py"))["build"]()
    graphs = []
    torch._dynamo.reset()
    counters.clear()
    with torch.no_grad():
        model(*args)
        torch.compile(model, backend=lambda gm, example_inputs: graphs.append(gm) or gm.forward)(
            *args
        )
    breaks = sum(counters["graph_break"].values()) + sum(counters["unimplemented"].values())
    return len(graphs), breaks


# --- the examples: original arm -----------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLE_SITES)
def test_example_counts_match_an_independent_count(runs, name):
    report = result(runs, f"example:{name}").json
    graphs, breaks = independent_count(name)
    assert (report["original"]["graphs"], report["original"]["breaks"]) == (graphs, breaks)
    assert graphs > 1


@pytest.mark.parametrize("name", EXAMPLE_SITES)
def test_example_break_sites_and_gb_ids(runs, name):
    sites = result(runs, f"example:{name}").json["original"]["break_sites"]
    path = EXAMPLES / f"{name}.py"
    expected = [
        (f"examples/{name}.py", line_of(path, snippet), gb_id, events)
        for snippet, gb_id, events in EXAMPLE_SITES[name]
    ]
    assert [(s["file"], s["line"], s["gb_id"], s["events"]) for s in sites] == expected
    assert all(site["gb_type"] and site["reason"] for site in sites)


@pytest.mark.parametrize("name", EXAMPLE_SITES)
def test_example_sites_carry_the_findings_at_their_line(runs, name):
    run = result(runs, f"example:{name}")
    findings = analyze_file(EXAMPLES / f"{name}.py", scope="all")
    for site in run.json["original"]["break_sites"]:
        expected = sorted(f.code for f in findings if f.line == site["line"])
        assert sorted(f["code"] for f in site["findings"]) == expected
        if not expected:
            assert f"{site['file']}:{site['line']}" in run.stdout
            assert "no GM rule covers this line" in run.stdout


# --- the examples: fixed arm (needs the fixers) --------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLE_SITES)
def test_example_verifies(runs, name):
    run = result(runs, f"example:{name}")
    assert run.code == 0, run.stderr
    report = run.json
    assert report["outputs_equal"] is True and report["ok"] is True
    assert report["behaviour_equal"] is True, report["behaviour"]
    if name in FULLY_FIXABLE:
        assert (
            report["fixed"]["graphs"],
            report["fixed"]["breaks"],
            report["fixed"]["break_sites"],
        ) == (1, 0, [])
        assert report["fixed"]["fullgraph"] is True
        assert sum(outcome["fixed"] for outcome in report["fixes"]) >= 1
    else:  # .item() and nonzero have no fixer: the breaks stay
        assert report["fixed"]["graphs"] == report["original"]["graphs"]


def test_example_table_and_json_keys(runs):
    run = result(runs, "example:gate")
    for key in ("original", "fixed"):
        assert {"graphs", "breaks", "break_sites", "fullgraph", "fullgraph_error"} <= set(
            run.json[key]
        )
    assert {
        "outputs_equal",
        "max_abs_diff",
        "behaviour_equal",
        "behaviour",
        "timings",
        "fixes",
        "entry",
        "settings",
    } <= set(run.json)
    for comparison in run.json["behaviour"].values():
        assert set(comparison) == {
            "behaviour_equal",
            *(f"{part}_equal" for part in PARTS if part != "gradients"),  # gradients: --grad
            "differences",
            "documented",
        }
    assert set(run.json["timings"]) == {"original", "fixed"}
    assert run.json["settings"]["device"] == "cpu" and run.json["settings"]["backend"] == "eager"
    assert re.search(r"^graphs\s+3\s+1$", run.stdout, re.M)
    assert "outputs           bitwise equal" in run.stdout
    assert "\nbehaviour         yes\n" in run.stdout
    assert "original arm: compiling and timing (eager backend) ... done in" in run.stderr


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("missing file", 2, r"entry file not found: .*nothing_here\.py$"),
        ("missing factory", 2, r".*raises\.py has no factory named 'make_model'$"),
        (
            "factory raises",
            2,
            r"build\(\) raised ValueError: no weights for this config \(at .*raises\.py:3\)$",
        ),
        (
            "fix target missing",
            2,
            r"--fix target not found: 'no_such_package\.models' is not a file, a folder "
            r"or an importable module$",
        ),
        (
            "fixed fails",
            1,
            r"fixed arm: build\(\) raised RuntimeError: the rewritten copy fails "
            r"\(at .*fails_when_fixed\.py:12\) \(rerun with --overlay-dir DIR to keep the "
            r"rewritten files\)$",
        ),
    ],
)
def test_errors_are_one_clear_line(runs, name, code, message):
    run = result(runs, name)
    assert run.code == code
    assert len(run.error_lines) == 1, run.stderr
    assert re.fullmatch(
        r"graphmend verify: error: " + message, run.error_lines[0]
    ), run.error_lines[0]
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_the_original_arm_is_kept_when_the_fixed_arm_fails(runs):
    report = result(runs, "fixed fails").json
    assert report["original"]["graphs"] == 1 and report["fixed"] is None
    assert report["ok"] is False and report["problems"][0].startswith("fixed arm: ")


def test_different_outputs_fail_verification(runs):
    run = result(runs, "fixed differs")
    assert run.code == 1
    assert run.json["outputs_equal"] is False and run.json["max_abs_diff"] == 1.0
    assert run.json["output_differences"] == ["output: max |difference| 1"]
    assert "DIFFERENT (largest difference 1)" in run.stdout
    assert run.error_lines == [
        "graphmend verify: FAILED: the outputs of the two arms differ; "
        "the behaviour differs, eager original vs compiled fixed: values; "
        "the behaviour differs, eager original vs eager fixed: values"
    ]


# --- behaviour ------------------------------------------------------------------------------------


def test_a_dropped_log_record_fails_verification(runs):
    run = result(runs, "fixed drops a log record")
    assert run.code == 1 and run.json["behaviour_equal"] is False
    assert run.json["outputs_equal"] is True  # the outputs alone would pass
    for fixed in ("compiled_fixed", "eager_fixed"):
        comparison = run.json["behaviour"][f"eager_original_vs_{fixed}"]
        failing = [key for key, equal in comparison.items() if key.endswith("_equal") and not equal]
        assert failing == ["behaviour_equal", "logs_equal"]
        assert comparison["differences"] == {
            "logs": f"log records: eager original has 2, {fixed.replace('_', ' ')} 0: "
            "first missing WARNING graphmend.test.net: 'sub warn' (call 1)"
        }
    assert run.json["behaviour"]["eager_original_vs_compiled_original"]["behaviour_equal"] is True
    assert re.search(r"^behaviour\s+no: logs$", run.stdout, re.M)
    assert run.error_lines == [
        "graphmend verify: FAILED: the behaviour differs, eager original vs compiled fixed: logs; "
        "the behaviour differs, eager original vs eager fixed: logs"
    ]


def test_a_fixed_copy_that_raises_fails_verification(runs):
    run = result(runs, "fixed raises")
    assert run.code == 1 and run.json["behaviour_equal"] is False
    eager = run.json["behaviour"]["eager_original_vs_eager_fixed"]
    assert eager["differences"] == {
        "exceptions": "exceptions: call 1: eager original returned, "
        "eager fixed raised RuntimeError: 'the rewritten copy fails'"
    }
    assert run.json["fixed"]["exceptions"]["compiled"][0].startswith(
        "RuntimeError: the rewritten copy fails (at "
    )
    assert run.json["timings"]["fixed"] is None and run.json["outputs_equal"] is None


def test_a_failing_guard_passes_with_the_trap_difference_documented(runs):
    run = result(runs, "guard fails")
    assert run.code == 0, run.stdout + run.stderr
    report = run.json
    assert report["behaviour_equal"] is True and report["ok"] is True
    assert report["fixed"]["graphs"] == 1
    compiled = report["behaviour"]["eager_original_vs_compiled_fixed"]
    # the [Trap] check raises RuntimeError(message) under compile, or the original's type
    assert compiled["exceptions_equal"] or compiled["documented"] == {
        "exceptions": "[Trap]: RuntimeError under compile"
    }
    assert report["behaviour"]["eager_original_vs_eager_fixed"]["exceptions_equal"] is True
    assert re.search(r"^behaviour\s+yes", run.stdout, re.M)
    assert "eager original raises ValueError: every row needs a token (at " in run.stdout


def test_an_update_lost_by_a_check_failing_inside_the_graph_fails_verification(runs):
    """A compiled call that raised is recorded again with aot_eager, which writes updates of
    buffers back after the graph: the batch norm's running statistics are lost there."""
    run = result(runs, "check after a batch norm")
    assert run.code == 1, run.stdout + run.stderr
    functional = run.json["behaviour"]["eager_original_vs_compiled_fixed_aot_eager"]
    assert functional["state_equal"] is False and functional["values_equal"] is True
    assert functional["differences"]["state"].startswith("state after call 1: state['buffers']")
    assert run.json["behaviour"]["eager_original_vs_compiled_fixed"]["state_equal"] is True
    assert run.error_lines == [
        "graphmend verify: FAILED: the behaviour differs, "
        "eager original vs compiled fixed, aot_eager: state"
    ]


def test_each_recording_starts_from_the_state_the_factory_built(runs):
    """A model that updates a buffer, an attribute and a global on each call, and registers
    another tensor as a buffer, gives the same outputs and states, call for call, eager and
    compiled: each module gets its buffers and attributes back, with their values, and the
    module its globals, between the recordings."""
    run = result(runs, "running average")
    assert run.code == 0, run.stdout + run.stderr
    for comparison in run.json["behaviour"].values():
        assert comparison["behaviour_equal"] and comparison["state_equal"], comparison


def test_a_buffer_that_no_longer_aliases_an_attribute_fails_verification(runs):
    """Equal values, but the fixed code registers a copy where the original registered the
    attribute itself (as a [Where] rewrite of LongRoPE's choice would): the state's aliasing
    differs. The plain attribute ``calls`` counts alike on both sides."""
    run = result(runs, "fixed aliases otherwise")
    assert run.code == 1, run.stdout + run.stderr
    assert run.json["outputs_equal"] is True
    for fixed in ("compiled_fixed", "eager_fixed"):
        comparison = run.json["behaviour"][f"eager_original_vs_{fixed}"]
        assert comparison["differences"] == {
            "state": "state after call 1: state (aliasing): "
            "one tensor: [\"state['attributes']['']['long']\", "
            "\"state['buffers']['inv_freq']\"] != None"
        }
    assert run.json["behaviour"]["eager_original_vs_compiled_original"]["behaviour_equal"]


def test_a_model_that_raises_is_compared_by_its_exception(runs):
    """Dynamo raises its own error where the eager model raises: torch's difference, shown for
    reference, and a difference of the compiled fixed code too."""
    run = result(runs, "fails eagerly")
    report = run.json
    raised = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 5x5) (at "
    assert all(text.startswith(raised) for text in report["original"]["exceptions"]["eager"])
    assert f"eager original raises {raised}" in run.stdout
    reference = report["behaviour"]["eager_original_vs_compiled_original"]
    assert reference["exceptions_equal"] is False
    assert report["behaviour"]["eager_original_vs_eager_fixed"]["behaviour_equal"] is True
    assert run.code == 1 and report["behaviour_equal"] is False
    assert report["timings"] == {"original": None, "fixed": None}
    assert "Traceback" not in run.stderr


# --- inductor -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_inductor_run_times_both_arms(runs):
    run = result(runs, "inductor")
    assert run.code == 0, run.stderr
    assert run.json["settings"]["backend"] == "inductor"
    assert run.json["original"]["graphs"] == run.json["fixed"]["graphs"] == 1
    for arm in ("original", "fixed"):
        timings = run.json["timings"][arm]
        assert timings["cold_s"] > timings["warm_median_s"] > 0 and timings["warm_calls"] == 2
        assert timings["compile_s"] == pytest.approx(timings["cold_s"] - timings["warm_median_s"])


# --- transformers ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    not HAS_TRANSFORMERS_4_52_4, reason="the break sites are those of transformers 4.52.4"
)
def test_t5_is_one_graph_once_its_modules_are_fixed(runs):
    """The legacy-cache `logger.warning_once` (modeling_t5.py:1019, GB0291) breaks the original."""
    run = result(runs, "t5")
    report = run.json
    sites = {(s["file"], s["line"], s["gb_id"]) for s in report["original"]["break_sites"]}
    assert ("transformers/models/t5/modeling_t5.py", 1019, "GB0291") in sites
    assert report["original"]["graphs"] > 1

    assert run.code == 0, run.stderr
    assert report["fixed"]["graphs"] == 1 and report["fixed"]["breaks"] == 0
    assert report["outputs_equal"] is True
    assert any(outcome["changed"] for outcome in report["fixes"])
    rewritten = (run.json_path.parent / "t5-overlay").rglob("modeling_t5.py")
    assert next(rewritten).read_text() != INSTALLED_T5.read_text()  # fixed in the copy only
    assert 'logger.warning_once(\n                    "Passing a tuple' in INSTALLED_T5.read_text()
