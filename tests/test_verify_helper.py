"""The pytest helper `assert_graph_breaks`: passes within limits, fails listing sites and GB ids."""

import logging
import re

import pytest

torch = pytest.importorskip("torch")

from flake8_graphmend.verify import assert_graph_breaks  # noqa: E402

logger = logging.getLogger("graphmend.test.helper")


class Clean(torch.nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x * 2, x - 1)


class Chatty(torch.nn.Module):  # breaks on purpose
    def forward(self, x):
        logger.info("forward")  # noqa: GM102
        x = x * 2
        if x.sum() > 0:  # noqa: GM201
            x = x - 1
        return x


def test_passes_without_breaks():
    report = assert_graph_breaks(Clean(), torch.ones(3))
    assert (report.graphs, report.breaks) == (1, 0)
    assert torch.equal(report.output, torch.full((3,), 2.0))


def test_fails_with_the_sites_and_gb_ids():
    with pytest.raises(AssertionError) as failure:
        assert_graph_breaks(Chatty(), torch.ones(3), max_breaks=0)
    message = str(failure.value)
    assert message.startswith("torch.compile gives 2 graph break events, more than the 0 allowed;")
    assert re.search(rf"{re.escape(__file__)}:22 GB0291 logging.Logger method", message)
    assert re.search(rf"{re.escape(__file__)}:24 GB0170 Data-dependent branching", message)


def test_limits_on_breaks_and_graphs():
    assert assert_graph_breaks(Chatty(), torch.ones(3), max_breaks=2).breaks == 2
    with pytest.raises(AssertionError, match=r"gives 2 graphs, more than the 1 allowed"):
        assert_graph_breaks(Chatty(), torch.ones(3), max_breaks=2, max_graphs=1)


def test_a_break_before_any_tensor_op_counts():
    def log_first(x):
        logger.info("start")
        return x + 1

    with pytest.raises(AssertionError, match="1 graph break events"):
        assert_graph_breaks(log_first, torch.ones(2))
