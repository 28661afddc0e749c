"""`verify.state`: what a call leaves behind, recorded after each call and put back before each
recording."""

import pytest

torch = pytest.importorskip("torch")

from flake8_graphmend.verify.entry import Workload  # noqa: E402
from flake8_graphmend.verify.state import Snapshot, plain, state_of  # noqa: E402

STEPS = 0
SEEN = {"calls": []}


class Counter(torch.nn.Module):
    """Counts its calls in an attribute, a global and a global dict, caches a tensor lazily and
    registers an attribute's tensor as a buffer, as models do."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.long = torch.full((2,), 2.0)
        self.register_buffer("scale", torch.ones(2), persistent=False)
        self.config = object()

    def forward(self, x):
        global STEPS
        STEPS += 1
        self.calls += 1
        SEEN["calls"].append(self.calls)
        if not hasattr(self, "cached"):
            self.cached = x * 3
        self.register_buffer("scale", self.long, persistent=False)
        x.add_(1)
        return x * self.scale


def _workload():
    return Workload(Counter(), (torch.zeros(2),), {})


def test_state_holds_attributes_and_globals():
    workload = _workload()
    state = state_of(workload)()
    assert state["attributes"][""]["calls"] == 0
    assert state["attributes"][""]["config"] == "<object>"
    assert "_parameters" not in state["attributes"][""]
    assert state["globals"][__name__]["STEPS"] == 0
    assert state["globals"][__name__]["SEEN"] == {"calls": []}
    assert not any(key.startswith("__") for key in state["globals"][__name__])


def test_a_snapshot_puts_back_what_calls_changed():
    global STEPS
    workload = _workload()
    model, (x,) = workload.model, workload.args
    first_seen, first_scale = SEEN, model.scale
    snapshot = Snapshot(workload)
    try:
        for _ in range(2):
            model(x)
        assert (STEPS, model.calls, SEEN["calls"]) == (2, 2, [1, 2])
        assert model.scale is model.long and hasattr(model, "cached")
        snapshot.restore()
        assert (STEPS, model.calls, SEEN["calls"]) == (0, 0, [])
        assert SEEN is first_seen  # the same dict, its items put back
        assert model.scale is first_scale and not hasattr(model, "cached")
        assert torch.equal(x, torch.zeros(2))
    finally:
        STEPS = 0
        SEEN["calls"].clear()


class ReadOnly(dict):
    """A mapping that refuses every change, as diffusers' ``FrozenDict`` config does."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("read-only")

    clear = update = __setitem__ = __delitem__ = pop = setdefault = _refuse


def test_a_snapshot_leaves_unchanged_containers_alone():
    model = torch.nn.Linear(2, 2)
    model.config = ReadOnly(width=2, names=["a"])
    names = model.config["names"]
    snapshot = Snapshot(Workload(model, (torch.zeros(2),), {}))
    names.append("b")
    snapshot.restore()
    assert model.config == {"width": 2, "names": ["a"]}
    assert model.config["names"] is names


def test_plain_values_keep_containers_and_name_other_objects_by_type():
    tensor = torch.ones(1)
    assert plain((1, [tensor, "a"], {"k": None})) == (1, [tensor, "a"], {"k": None})
    assert plain({"f": len}) == {"f": "<builtin_function_or_method>"}
    assert plain([[[[1]]]]) == [[["<list>"]]]
