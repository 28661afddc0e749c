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


def test_modules_are_probed_through_their_call(x):
    class Net(torch.nn.Module):
        def forward(self, t):
            t = t * 3
            if t.mean() > 0:  # BREAK
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
