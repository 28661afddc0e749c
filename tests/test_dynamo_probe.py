"""The Dynamo probe on torch 2.13: graphs, break sites, GB ids and fullgraph for each pattern."""

import copy
import functools
import inspect
import logging
import time
import warnings

import pytest

torch = pytest.importorskip("torch")

from flake8_graphmend.verify.dynamo import (  # noqa: E402
    BreakSite,
    fullgraph_error,
    gb_id_for,
    parse_break_record,
    probe,
    recorded_graph_breaks,
)

logger = logging.getLogger("graphmend.test.probe")


class OnceLogger:
    """The shape of transformers' ``logger.warning_once``: an ``lru_cache`` method that logs."""

    @functools.lru_cache(None)
    def warning_once(self, message):
        logger.warning(message)  # BREAK


once_logger = OnceLogger()


def print_call(x):
    x = x + 1
    print("forward called")  # BREAK
    return x * 2


def print_before_any_tensor_op(x):
    print("forward called")  # BREAK
    return x * 2


def logger_warning(x):
    x = x + 1
    logger.warning("deprecated input")  # BREAK
    return x * 2


def logger_warning_once(x):
    x = x + 1
    once_logger.warning_once("deprecated input")
    return x * 2


def warnings_warn(x):
    x = x + 1
    warnings.warn("deprecated input", FutureWarning)  # BREAK
    return x * 2


def data_dependent_if(x):
    if x.sum() > 0:  # BREAK
        return x * 2
    return x - 1


def item_call(x):
    scale = x.sum().item()  # BREAK
    return x * scale


def float_tolist(x):
    total = sum(x[0].tolist())  # BREAK
    return x + total


def nonzero_call(x):
    return torch.nonzero(x > 0) + 1  # BREAK


def boolean_mask(x):
    return x[x > 0] * 2  # BREAK


def time_call(x):
    started = time.time()  # BREAK
    return x * 2 + started * 0


def deepcopy_tensor(x):
    y = copy.deepcopy(x)  # BREAK
    return y + 1


def manual_seed_call(x):
    torch.manual_seed(0)  # BREAK
    return x * 2


def data_ptr_comparison(x):
    y = x.view(-1)
    if x.data_ptr() == y.data_ptr():  # BREAK
        return x * 2
    return x


def torch_equal_guard(x):
    if torch.equal(x, x.abs()):  # BREAK
        return x * 2
    return x


def walrus_if(x):
    if (peak := x.abs().max()) > 1:  # BREAK
        return x / peak
    return x


def marked_line(fn):
    """The line marked ``# BREAK`` in ``fn`` (or in the helper it calls)."""
    target = OnceLogger.warning_once.__wrapped__ if fn is logger_warning_once else fn
    lines, first = inspect.getsourcelines(target)
    return first + next(i for i, line in enumerate(lines) if line.rstrip().endswith("# BREAK"))


# (function, graphs on the first call, GB id, fullgraph=True succeeds)
CASES = [
    (print_call, 2, "GB0059", False),
    (print_before_any_tensor_op, 1, "GB0059", False),
    (logger_warning, 2, "GB0291", False),
    (logger_warning_once, 2, "GB0291", False),
    (warnings_warn, 2, "GB0007", False),
    (data_dependent_if, 2, "GB0170", False),
    (item_call, 2, "GB0124", True),
    (float_tolist, 2, "GB0109", False),
    (nonzero_call, 2, "GB0036", True),
    (boolean_mask, 2, "GB0036", True),
    (time_call, 1, "GB0007", False),
    (deepcopy_tensor, 1, "GB4198", False),
    (manual_seed_call, 1, "GB0007", False),
    (data_ptr_comparison, 2, "GB5976", False),
    (torch_equal_guard, 1, "GB0033", False),
    (walrus_if, 2, "GB0170", False),
]


@pytest.fixture
def x():
    return torch.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])


@pytest.mark.parametrize(
    ("fn", "graphs", "gb_id", "fullgraph_ok"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_probe_finds_the_break(fn, graphs, gb_id, fullgraph_ok, x, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(x.clone())
        report = probe(fn, x.clone())
        fullgraph = fullgraph_error(fn, x.clone())

    assert report.graphs == graphs
    assert report.breaks >= 1
    site = report.break_sites[0]
    assert (site.filename, site.lineno, site.gb_id) == (__file__, marked_line(fn), gb_id)
    assert site.gb_type and site.reason
    assert torch.equal(report.output, expected)
    assert (fullgraph is None) == fullgraph_ok
    if not fullgraph_ok:
        assert fullgraph.startswith("Unsupported: ")


def test_a_function_without_breaks_reports_none(x):
    report = probe(lambda t: torch.relu(t) * 2, x)
    assert (report.graphs, report.breaks, report.break_sites) == (1, 0, [])
    assert fullgraph_error(lambda t: torch.relu(t) * 2, x) is None


def _graphmend_check(t):  # a helper as the fixers emit them: its calls are not the program's
    return torch.logical_not(t.isnan().any())


def test_compiled_calls_are_the_programs_own(x):
    """Counted: the calls the graphs make for the program's code, its helpers' left out."""
    report = probe(lambda t: (torch.relu(t) * 2, _graphmend_check(t)), x)
    assert (report.graphs, report.compiled_calls) == (1, 2)


def test_compiled_calls_fall_when_a_frame_runs_eagerly(x):
    """A print before a loop that breaks: the code before it compiles. Without the print, the
    loop's break is the frame's first, and Dynamo runs the whole frame eagerly."""

    def with_print(t):
        t = t.sin().cos()
        print("start")
        for _ in range(2):
            t = t * int(t.abs().sum().item())
        return t

    def without(t):
        t = t.sin().cos()
        for _ in range(2):
            t = t * int(t.abs().sum().item())
        return t

    before, after = probe(with_print, x), probe(without, x)
    assert (before.graphs, before.compiled_calls) == (1, 2)
    assert (after.graphs, after.compiled_calls) == (0, 0)


def test_modules_are_probed_through_their_call(x):
    class Net(torch.nn.Module):
        def forward(self, t):
            t = t * 3
            if t.mean() > 0:  # noqa: GM201  # BREAK
                t = t - 1
            return t

    report = probe(Net(), x)
    assert report.graphs >= 2
    assert {(s.lineno, s.gb_id) for s in report.break_sites} == {
        (marked_line(Net.forward), "GB0170")
    }


def test_site_counts_group_repeated_events(x):
    def twice(t):
        for _ in range(2):
            t = logger_warning(t)
        return t

    report = probe(twice, x)
    counts = report.site_counts()
    site = next(iter(counts))
    assert site.lineno == marked_line(logger_warning)
    assert sum(counts.values()) == report.breaks


def test_gb_ids_come_from_the_installed_registry():
    assert gb_id_for("Data-dependent branching") == "GB0170"
    assert gb_id_for("logging.Logger method not supported for non-export cases") == "GB0291"
    assert gb_id_for("no such graph break type") is None


def test_logging_state_is_restored(x):
    loggers = [
        logging.getLogger(name)
        for name in list(logging.root.manager.loggerDict)
        if name.endswith(".__graph_breaks")
    ]
    before = [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    with recorded_graph_breaks():
        pass
    probe(print_call, x)
    assert [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers] == before


def test_parse_a_duplicate_suppressed_record():
    message = (
        "Graph break (user stack suppressed due to duplicate graph break) "
        "in user code at /src/m.py:12\n"
        "Graph Break Reason: Data-dependent branching\n"
        "  Explanation: Detected data-dependent branching."
    )
    assert parse_break_record(message) == BreakSite(
        "/src/m.py", 12, "GB0170", "Data-dependent branching", "Detected data-dependent branching."
    )


def test_a_break_in_a_helper_is_the_line_that_calls_it(tmp_path):
    """A break inside an emitted helper (``_graphmend_eager_frame()``) is attributed to the
    line that calls it, also when Dynamo logs it again without its stack."""
    from flake8_graphmend.verify.dynamo import _BreakLogHandler

    source = tmp_path / "m.py"
    source.write_text(
        "def _graphmend_eager_frame():\n    graph_break()\n\n\ndef forward():\n"
        "    _graphmend_eager_frame()\n"
    )
    helper_line = f"in user code at {source}:2"
    explained = "\nCall to `torch._dynamo.graph_break()`\n  Explanation: User-inserted."
    first = (
        f"Graph break {helper_line}{explained}\nUser code traceback:\n"
        f'  File "{source}", line 6, in forward\n  File "{source}", line 2, in helper\n'
    )
    again = f"Graph break (user stack suppressed due to duplicate graph break) {helper_line}"
    sites = []
    handler = _BreakLogHandler(sites)
    for message in (first, again + explained):
        handler.emit(logging.LogRecord("graph_breaks", logging.DEBUG, "", 0, message, (), None))
    assert [(site.filename, site.lineno) for site in sites] == [(str(source), 6)] * 2


# ---------------------------------------------------------------------------- what Dynamo traces
# The linter's scope (flake8_graphmend/analysis/regions.py and engine.py) against Dynamo: each
# function below is probed, and the GM findings on its lines must be exactly on the lines where
# Dynamo breaks (marked ``# BREAK``), or on none where it does not break.


def scripting_branch(x):
    if torch.jit.is_scripting():
        print("TorchScript only")
    return x * 2


def tracing_branch(x):
    if torch.jit.is_tracing():
        print("torch.jit.trace only")
    return x * 2


def not_scripting_else_branch(x):
    if not torch.jit.is_scripting():
        x = x * 2
    else:
        print("TorchScript only")
    return x + 1


def compiling_local_conjunct(x):
    compiling = torch.compiler.is_compiling()
    if not compiling and x.sum() > 0:
        print("eager only")
    return x * 2


def tracing_local_disjunction(x):
    # transformers' modeling_attn_mask_utils.py
    is_tracing = (
        torch.jit.is_tracing() or isinstance(x, torch.fx.Proxy) or torch.compiler.is_compiling()
    )
    if not is_tracing and torch.all(x == 1):
        print("eager only")
        return x
    return x * 2


def scripting_conditional_expression(x):
    y = x.sum().item() if torch.jit.is_scripting() else x.sum()
    return x * y


def compiling_branch(x):
    x = x + 1
    if torch.compiler.is_compiling():
        print("traced under compile")  # noqa: GM101  # BREAK
    return x * 2


def scripting_else_branch(x):
    x = x + 1
    if torch.jit.is_scripting():
        pass
    else:
        print("the else branch is traced")  # noqa: GM101  # BREAK
    return x * 2


class ProbeBase(torch.nn.Module):
    def forward(self, t):
        return self.transform(t * 3)

    def transform(self, t):
        return t


class ProbeChild(ProbeBase):
    def transform(self, t):
        print("override called from the base forward")  # noqa: GM101  # BREAK
        return t - 1


def build_nested_module():
    class Net(torch.nn.Module):
        def forward(self, t):
            t = t * 3
            print("forward of a class defined in a function")  # noqa: GM101  # BREAK
            return t - 1

    return Net()


def make_compiled_inner():
    def inner(t):
        t = t + 1
        print("nested function passed to torch.compile")  # noqa: GM101  # BREAK
        return t * 2

    return inner, torch.compile(inner, backend="eager")


#: Plain functions above, linted as entry points (as if compiled); the classes and factories
#: below them are compiled regions by themselves.
PROBED_FUNCTIONS = [
    scripting_branch,
    tracing_branch,
    not_scripting_else_branch,
    compiling_local_conjunct,
    tracing_local_disjunction,
    scripting_conditional_expression,
    compiling_branch,
    scripting_else_branch,
]
#: (what to probe, the source it runs that the break lines and findings are looked for in)
SCOPE_CASES = [(fn, fn) for fn in PROBED_FUNCTIONS] + [
    (ProbeChild, ProbeChild.transform),
    (build_nested_module, build_nested_module),
    (make_compiled_inner, make_compiled_inner),
]


@functools.lru_cache(maxsize=1)
def _lint_findings():
    from flake8_graphmend.engine import Options, analyze_source

    with open(__file__, encoding="utf-8") as source:
        text = source.read()
    options = Options(entry_points=tuple(fn.__name__ for fn in PROBED_FUNCTIONS))
    return tuple(analyze_source(text, __file__, options))


def _instance(maker):
    if maker is ProbeChild:
        return ProbeChild()
    if maker is build_nested_module:
        return build_nested_module()
    if maker is make_compiled_inner:
        return make_compiled_inner()[0]
    return maker


@pytest.mark.parametrize(("maker", "source"), SCOPE_CASES, ids=[c[0].__name__ for c in SCOPE_CASES])
def test_lint_scope_matches_what_dynamo_traces(maker, source, x, capsys):
    lines, first = inspect.getsourcelines(source)
    marked = {first + i for i, line in enumerate(lines) if line.rstrip().endswith("# BREAK")}
    report = probe(_instance(maker), x.clone())
    assert {s.lineno for s in report.break_sites if s.filename == __file__} == marked
    if not marked:
        assert (report.graphs, report.breaks) == (1, 0)
    span = range(first, first + len(lines))
    assert {f.line for f in _lint_findings() if f.line in span} == marked
