"""The fixed code under Dynamo on CPU: one graph, no break, fullgraph, and the original's results.

Each test writes an original module, fixes a copy with FixAll, imports both (as ``model.py`` in
two folders, so file names in records and warnings match) and compares eager original with
compiled fixed code: values bitwise, exceptions by type and message, stdout, log records and
warnings.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import logging
import sys
import warnings
from pathlib import Path
from textwrap import dedent
from types import ModuleType
from typing import Any, Callable, Iterator, List, Tuple

import pytest

torch = pytest.importorskip("torch")

from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402
from flake8_graphmend.engine import analyze_source  # noqa: E402
from flake8_graphmend.verify.dynamo import fullgraph_error, probe  # noqa: E402

_counter = itertools.count()


def load(source: str, folder: Path) -> ModuleType:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.py"
    path.write_text(source)
    name = f"graphmend_fixture_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def original_and_fixed(
    source: str, tmp_path: Path, declines: bool = False
) -> Tuple[ModuleType, ModuleType, str]:
    """The source loaded as written and fixed by FixAll; every site must be fixed unless
    ``declines`` (a source whose other classes are declined on purpose)."""
    source = dedent(source).lstrip()
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert isinstance(result, TransformSuccess), result
    assert declines or [w for w in result.warning_messages if " not fixed: " in w] == []
    return load(source, tmp_path / "original"), load(result.code, tmp_path / "fixed"), result.code


def same(a: Any, b: Any) -> bool:
    """Bitwise equality of tensors (NaN equal to NaN), recursively through tuples."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and torch.equal(a.isnan(), b.isnan())
            and torch.equal(torch.where(a.isnan(), 0, a), torch.where(b.isnan(), 0, b))
        )
    return a == b


def assert_one_graph(fn: Callable, *args: Any) -> None:
    report = probe(fn, *args)
    assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]
    assert fullgraph_error(fn, *args) is None


def assert_breaks(fn: Callable, *args: Any) -> None:
    report = probe(fn, *args)
    assert report.graphs > 1 or report.breaks > 0


def compiled(fn: Callable, backend: str = "eager") -> Callable:
    torch._dynamo.reset()
    return torch.compile(fn, backend=backend)


# ---------------------------------------------------------------------------- [Where]
WHERE_SOURCE = """
    import torch
    from torch import nn


    class Clamp(nn.Module):
        def forward(self, hidden_states):
            hidden_states = hidden_states * 2
            if hidden_states.dtype == torch.float16 and (
                torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
            ):
                clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
            return hidden_states


    class Select(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.full((4,), 1.5))

        def forward(self, x):
            x = x * self.scale
            if not (x > 0).all() and (x < 3).any():
                x = x + 0.5
            if x.sum() > 0:
                y = x * 2
                z = x + 1
            else:
                y = x - 1
                z = x
            if y.sum() >= 0:
                return y + z
            return y - z
"""

SELECT_INPUTS = {
    "positive": torch.tensor([1.0, 2.0, 0.5, 0.25]),
    "negative": torch.tensor([-1.0, -2.0, -0.5, -0.25]),
    "tie": torch.tensor([1.0, -1.0, 2.0, -2.0]) / 1.5,  # x.sum() is exactly 0 after scaling
    "zeros": torch.zeros(4),
    "mixed": torch.tensor([3.0, -0.5, 0.0, 1.0]),
}
HALF = float("inf"), float("nan"), 40000.0, 1.0


@pytest.fixture(scope="module")
def where_modules(tmp_path_factory: pytest.TempPathFactory) -> Tuple[ModuleType, ModuleType]:
    original, fixed, code = original_and_fixed(WHERE_SOURCE, tmp_path_factory.mktemp("where"))
    assert "_graphmend_where_grad(" in code and "if hidden_states.dtype == torch.float16:" in code
    return original, fixed


@pytest.mark.parametrize("value", HALF, ids=["inf", "nan", "overflows", "finite"])
def test_fp16_clamp(where_modules: Tuple[ModuleType, ModuleType], value: float) -> None:
    original, fixed = where_modules
    x = torch.tensor([1.0, value, -3.0, 60000.0], dtype=torch.float16)
    with torch.no_grad():
        assert_breaks(original.Clamp(), x)
        assert_one_graph(fixed.Clamp(), x)
        expected = original.Clamp()(x)
        assert same(fixed.Clamp()(x), expected)
        assert same(compiled(fixed.Clamp())(x), expected)
        assert same(compiled(fixed.Clamp())(x.float()), original.Clamp()(x.float()))


@pytest.mark.parametrize("scale", [1.0, 3e4, 6e4], ids=["finite", "some-overflow", "overflow"])
def test_fp16_clamps_that_each_assign_their_clamp_value(tmp_path: Path, scale: float) -> None:
    """LongT5's block: three clamps in one forward, each assigning its own `clamp_value`."""
    source = (
        Path(__file__).parent
        / "fixtures" / "fix" / "PredicateControlFlow"
        / "fp16_clamps_each_with_its_own_clamp_value.py"
    ).read_text()
    original, fixed, _ = original_and_fixed(source, tmp_path, declines=True)
    torch.manual_seed(0)
    model = original.Block().half()
    fixed_model = fixed.Block().half()
    fixed_model.load_state_dict(model.state_dict())
    x = (torch.randn(2, 8) * scale).half()
    context = (torch.randn(2, 8) * scale).half()
    with torch.no_grad():
        assert_breaks(model, x, context)
        assert_one_graph(fixed_model, x, context)
        expected = model(x, context)
        assert same(fixed_model(x, context), expected)
        assert same(compiled(fixed_model)(x, context), expected)


@pytest.mark.parametrize("name", SELECT_INPUTS)
def test_selections_inference(where_modules: Tuple[ModuleType, ModuleType], name: str) -> None:
    original, fixed = where_modules
    x = SELECT_INPUTS[name]
    before, after = original.Select(), fixed.Select()
    with torch.no_grad():
        assert_breaks(before, x)
        assert_one_graph(after, x)
        assert same(compiled(after)(x), before(x))
        assert same(after(x), before(x))


@pytest.mark.parametrize("name", ["positive", "negative", "tie"])
def test_selections_keep_exact_gradients_while_training(
    where_modules: Tuple[ModuleType, ModuleType], name: str
) -> None:
    original, fixed = where_modules
    x = SELECT_INPUTS[name]
    before, after = original.Select(), fixed.Select()
    expected = before(x)
    (expected_grad,) = torch.autograd.grad(expected.sum(), before.scale)
    output = compiled(after)(x)
    (grad,) = torch.autograd.grad(output.sum(), after.scale)
    assert same(output.detach(), expected.detach()) and same(grad, expected_grad)
    # every selection is exact for gradients (tests/test_fixers_autograd.py): one graph
    assert_one_graph(after, x)


ITEM_INPUTS = {
    "small": [0.5, -0.25, 0.125, 1.0],
    "large": [300.0, -500.0, 20.0, 1.0],
    "negative": [-3.0, -2.0, -1.0, -4.0],
    "nan": [float("nan"), 1.0, 2.0, 3.0],
    "inf": [float("inf"), 1.0, 2.0, 3.0],
}


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_item_comparisons_are_selected_as_tensors(tmp_path: Path, training: bool) -> None:
    """`if h.abs().max().item() > 100:` and its kin: the number stays a tensor
    (`_graphmend_item`), so inference is one graph; values, and gradients in training, are the
    original's, eager and compiled."""
    source = (
        Path(__file__).parent
        / "fixtures" / "fix" / "PredicateControlFlow"
        / "item_comparison_kept_a_tensor.py"
    ).read_text()
    original, fixed, code = original_and_fixed(source, tmp_path)
    assert code.count("_graphmend_item(h.") == 4
    torch.manual_seed(0)
    before, after = original.Normalize(), fixed.Normalize()
    after.load_state_dict(before.state_dict())
    before.train(training)
    after.train(training)
    x = torch.tensor([ITEM_INPUTS["large"]] * 2).repeat(1, 2)
    with torch.no_grad():
        assert_breaks(before, x)
        assert_one_graph(after, x)
    compiled_after = compiled(after)
    for name, values in ITEM_INPUTS.items():
        x = torch.tensor([values] * 2).repeat(1, 2) * torch.tensor([[1.0], [0.5]])
        for model in (before, after):
            model.zero_grad()
        expected = before(x)
        expected.sum().backward()
        for model in (after, compiled_after):
            output = model(x)
            output.sum().backward()
            assert same(output.detach(), expected.detach()), name
            for mine, theirs in zip(after.parameters(), before.parameters()):
                assert same(mine.grad, theirs.grad), name
            after.zero_grad()


@pytest.mark.slow
def test_selections_under_inductor(where_modules: Tuple[ModuleType, ModuleType]) -> None:
    original, fixed = where_modules
    with torch.no_grad():
        model = torch.compile(fixed.Select(), backend="inductor", fullgraph=True)
        for x in SELECT_INPUTS.values():
            assert same(model(x), original.Select()(x))


def test_longrope_buffer_update_is_declined() -> None:
    """LongRoPE's shape: each branch fills or moves module state (a memoised
    ``self.long_inv_freq``, ``self.original_inv_freq.to(device)``), which would then run on
    both paths, before ``register_buffer("inv_freq", <that very tensor>)``, whose identity a
    selection would not keep either. The site is declined."""
    source = (Path(__file__).parent / "fixtures" / "fix" / "longrope_before.py").read_text()
    (finding,) = [f for f in analyze_source(source, "longrope.py") if f.code == "GM201"]
    assert finding.plan is None
    assert "before the common call, which would then run on both paths" in (
        finding.decline or ""
    )


# ---------------------------------------------------------------------------- [Trap]
TRAP_SOURCE = """
    import torch
    from torch import nn


    class Guarded(nn.Module):
        def forward(self, hidden, mask, expected):
            pooled = hidden * mask
            if hidden.dim() == 1 and (mask.sum() == 0 or (mask < 0).any()):
                raise ValueError("the mask must keep a position and be non-negative")
            if not torch.equal(mask, expected):
                raise RuntimeError("unsupported attention mask")
            return pooled + 1
"""

ONES = torch.ones(4)
TRAP_CASES = {
    "passes": (ONES, ONES, None),
    "empty mask": (
        torch.zeros(4),
        torch.zeros(4),
        (ValueError, "the mask must keep a position and be non-negative"),
    ),
    "negative mask": (torch.tensor([1.0, -1.0, 1.0, 1.0]),) * 2
    + ((ValueError, "the mask must keep a position and be non-negative"),),
    "other values": (
        ONES,
        torch.tensor([1.0, 0.0, 1.0, 1.0]),
        (RuntimeError, "unsupported attention mask"),
    ),
    "broadcastable shape": (ONES, torch.ones(1, 4), (RuntimeError, "unsupported attention mask")),
    "nan": (torch.tensor([1.0, float("nan"), 1.0, 1.0]),) * 2
    + ((RuntimeError, "unsupported attention mask"),),
    "other dtype, same values": (ONES, torch.ones(4, dtype=torch.int64), None),
}


def outcome(fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as error:  # the exception is the outcome under test
        return type(error), str(error).splitlines()[0]


@pytest.fixture(scope="module")
def trap_modules(tmp_path_factory: pytest.TempPathFactory) -> Tuple[ModuleType, ModuleType]:
    original, fixed, code = original_and_fixed(TRAP_SOURCE, tmp_path_factory.mktemp("trap"))
    assert code.count("_graphmend_check(") == 3 and "_graphmend_differ(mask, expected)" in code
    return original, fixed


@pytest.mark.parametrize("name", TRAP_CASES)
def test_guards(trap_modules: Tuple[ModuleType, ModuleType], name: str) -> None:
    original, fixed = trap_modules
    mask, expected, failure = TRAP_CASES[name]
    hidden = torch.arange(4.0)
    before, after = original.Guarded(), fixed.Guarded()
    eager = outcome(before, hidden, mask, expected)
    assert same(outcome(after, hidden, mask, expected), eager)  # eager: same type and message
    if failure is None:
        assert same(eager, hidden * mask + 1)
        assert_breaks(before, hidden, mask, expected)
        assert_one_graph(after, hidden, mask, expected)
        assert same(outcome(compiled(after), hidden, mask, expected), eager)
    else:
        assert eager == failure
        # compiled: the check runs in the graph and raises the same exception, same message
        assert outcome(compiled(after), hidden, mask, expected) == failure


@pytest.mark.slow
def test_guards_under_inductor(trap_modules: Tuple[ModuleType, ModuleType]) -> None:
    _, fixed = trap_modules
    model = torch.compile(fixed.Guarded(), backend="inductor", fullgraph=True)
    hidden = torch.arange(4.0)
    assert same(model(hidden, ONES, ONES), hidden + 1)
    assert outcome(model, hidden, torch.zeros(4), torch.zeros(4)) == (
        ValueError,
        "the mask must keep a position and be non-negative",
    )


# ---------------------------------------------------------------------------- [Defer]
DEFER_SOURCE = """
    import logging
    import sys
    import warnings

    import torch
    from torch import nn
    from transformers.utils import logging as hf_logging

    logger = logging.getLogger("graphmend.fixture")
    hf_logger = hf_logging.get_logger("graphmend.fixture.hf")


    class Chatty(nn.Module):
        def forward(self, x, scale):
            y = x * scale
            print("scaled by", scale, sep=" = ", file=sys.stdout)
            print("y:", y)
            logger.warning("scaling by %s", "two")
            logger.info("info %d", 3, stacklevel=1)
            hf_logger.warning_once("legacy cache format")
            warnings.warn("the scale argument is deprecated", FutureWarning)
            return y + 1
"""


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def side_effects() -> Iterator[Tuple[io.StringIO, Capture, list]]:
    """Capture stdout, the fixture loggers' records and every warning."""
    stdout, handler = io.StringIO(), Capture()
    loggers = [logging.getLogger("graphmend.fixture")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stdout):
            warnings.simplefilter("always")
            yield stdout, handler, caught
    finally:
        for lg, (level, propagate) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate


def run_three_times(fn: Callable, module: ModuleType) -> Tuple[str, list, list, list]:
    module.hf_logger.warning_once.cache_clear()
    with side_effects() as (stdout, handler, caught):
        outputs = [fn(torch.full((3,), float(i)), 2) for i in range(3)]
    records = [(r.name, r.levelname, r.getMessage()) for r in handler.records]
    sites = [
        (Path(r.pathname).name, r.funcName, r.lineno)
        for r in handler.records
        if r.name == "graphmend.fixture"
    ]
    caught_warnings = [(str(w.message), w.category) for w in caught]
    return (
        stdout.getvalue(),
        records,
        caught_warnings,
        outputs + sites + [(Path(w.filename).name, w.lineno) for w in caught],
    )


def line_of(code: str, text: str) -> int:
    """The line of the first statement that starts with ``text``."""
    return next(
        number for number, line in enumerate(code.splitlines(), 1) if line.strip().startswith(text)
    )


def test_deferred_side_effects(tmp_path: Path) -> None:
    original, fixed, code = original_and_fixed(DEFER_SOURCE, tmp_path)
    source = dedent(DEFER_SOURCE).lstrip()
    x = torch.ones(3)
    with side_effects():
        original.hf_logger.warning_once.cache_clear()
        assert_breaks(original.Chatty(), x, 2)
        fixed.hf_logger.warning_once.cache_clear()
        assert_one_graph(fixed.Chatty(), x, 2)
    stdout, records, caught, rest = run_three_times(original.Chatty(), original)
    assert stdout.count("scaled by = 2\n") == stdout.count("y: tensor([") == 3
    assert records.count(("graphmend.fixture.hf", "WARNING", "legacy cache format")) == 1
    assert len(records) == 7 and len(caught) == 3
    # Eager fixed: identical side effects, attributed to the same function and statement.
    fixed_stdout, fixed_records, fixed_caught, fixed_rest = run_three_times(fixed.Chatty(), fixed)
    assert (fixed_stdout, fixed_records, fixed_caught) == (stdout, records, caught)
    assert same(tuple(fixed_rest[:3]), tuple(rest[:3]))
    original_lines = [line_of(source, t) for t in ("logger.warning(", "logger.info(")] * 3
    fixed_lines = [
        line_of(code, t) for t in ("_graphmend_logger_warning(", "_graphmend_logger_info(")
    ] * 3
    assert [site[2] for site in rest[3:9]] == original_lines
    assert [site[2] for site in fixed_rest[3:9]] == fixed_lines
    assert {site[:2] for site in rest[3:9] + fixed_rest[3:9]} == {("model.py", "forward")}
    warn_line = line_of(source, "warnings.warn(")
    fixed_warn_line = line_of(code, "_graphmend_warnings_warn(")
    assert (
        rest[9:] == [("model.py", warn_line)] * 3
        and fixed_rest[9:] == [("model.py", fixed_warn_line)] * 3
    )
    # Compiled fixed: the same stdout, records and warnings, emitted after the graph.
    compiled_stdout, compiled_records, compiled_caught, compiled_rest = run_three_times(
        compiled(fixed.Chatty()), fixed
    )
    assert (compiled_stdout, compiled_records, compiled_caught) == (stdout, records, caught)
    assert same(tuple(compiled_rest[:3]), tuple(rest[:3]))


PADDING_SOURCE = """
    import logging

    import torch
    from torch import nn

    logger = logging.getLogger("graphmend.fixture.padding")


    class Padder(nn.Module):
        def __init__(self, window):
            super().__init__()
            self.window = window

        def forward(self, input_ids, inputs_embeds=None):
            window = self.window if isinstance(self.window, int) else max(self.window)
            input_shape = input_ids.shape if input_ids is not None else inputs_embeds.shape
            batch_size, seq_len = input_shape[:2]
            padding_len = (window - seq_len % window) % window
            if padding_len > 0:
                logger.warning(
                    f"padded from {seq_len} to {seq_len + padding_len}, a multiple of {window}"
                )
                input_ids = nn.functional.pad(input_ids, (0, padding_len), value=0)
            return input_ids * 2
"""


@pytest.mark.parametrize("dynamic", [None, True])
def test_deferred_message_of_sizes_and_configuration(tmp_path: Path, dynamic: Any) -> None:
    """Longformer's and LED's padding warning formats sizes plus configuration: deferred, its
    text is the eager one for every length, also when the length is a symbolic size."""
    original, fixed, _ = original_and_fixed(PADDING_SOURCE, tmp_path)
    lengths = (5, 13, 16, 21)

    def run(fn: Callable) -> Tuple[list, list]:
        with side_effects() as (_, handler, _caught):
            outputs = [fn(torch.ones(2, n, dtype=torch.long)) for n in lengths]
        return outputs, [(r.levelname, r.getMessage()) for r in handler.records]

    expected_outputs, expected_records = run(original.Padder([4, 8]))
    assert [m for _, m in expected_records][0] == "padded from 5 to 8, a multiple of 8"
    assert len(expected_records) == 3  # 16 needs no padding
    torch._dynamo.reset()
    compiled_fixed = torch.compile(fixed.Padder([4, 8]), backend="eager", dynamic=dynamic)
    for fn in (fixed.Padder([4, 8]), compiled_fixed):
        outputs, records = run(fn)
        assert records == expected_records
        assert all(same(a, b) for a, b in zip(outputs, expected_outputs))
    with side_effects():
        assert_breaks(original.Padder(8), torch.ones(2, 5, dtype=torch.long))
        assert_one_graph(fixed.Padder(8), torch.ones(2, 5, dtype=torch.long))


CAST_SOURCE = """
    import torch
    from torch import nn
    from transformers.utils import logging as hf_logging

    hf_logger = hf_logging.get_logger("graphmend.fixture.cast")


    class FlashStyleAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(4, 4)

        def forward(self, x):
            q = self.q_proj(x)
            if q.dtype == torch.float32:
                if torch.is_autocast_enabled():
                    target_dtype = torch.get_autocast_gpu_dtype()
                else:
                    target_dtype = self.q_proj.weight.dtype
                hf_logger.warning_once(f"casting the input back to {target_dtype}.")
                q = q.to(target_dtype)
            return q * 2
"""


SKIPPED_FRAME_SOURCE = """
    import logging

    import torch
    from torch import nn

    logger = logging.getLogger("graphmend.skipped")


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, h):
            h = self.fc(h)
            logger.info("layer", extra={"k": 1})
            return h


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer(), Layer()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            print("rows", x.shape[0])
            h = x * 3
            if h.sum() > 0:
                h = h * 2
            return h
"""


def test_helpers_called_where_dynamo_runs_code_eagerly_make_no_graph(tmp_path: Path) -> None:
    """A break that stays (a declined log in a loop's callee) makes Dynamo run the rest of the
    caller eagerly; the helpers called there (`_graphmend_inline_only`) run as plain Python,
    as the code they replaced did, and are not compiled as graphs of their own."""
    original, fixed, code = original_and_fixed(SKIPPED_FRAME_SOURCE, tmp_path, declines=True)
    assert "_graphmend_print(" in code and "_graphmend_where_grad(" in code
    torch.manual_seed(0)
    before, after = original.Model(), fixed.Model()
    after.load_state_dict(before.state_dict())
    x = torch.randn(2, 4)
    with torch.no_grad():
        expected = probe(before, x)
        report = probe(after, x)
        assert (report.graphs, report.breaks) == (expected.graphs, expected.breaks)
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            assert same(compiled(after)(x), before(x))
        assert stdout.getvalue() == "rows 2\n" * 2


def test_deferred_message_of_a_dtype_chosen_by_branches(tmp_path: Path) -> None:
    """The flash-attention paths' warning formats a dtype that static branches choose."""
    original, fixed, code = original_and_fixed(CAST_SOURCE, tmp_path)
    assert "_graphmend_hf_logger_warning_once(" in code
    x = torch.ones(2, 4)
    seen = []
    models = []
    for module in (original, fixed, fixed):
        torch.manual_seed(0)
        models.append(module.FlashStyleAttention())
    for fn in (models[0], models[1], compiled(models[2])):
        fixed.hf_logger.warning_once.cache_clear()
        with side_effects() as (_, handler, _caught):
            outputs = [fn(x), fn(x)]
        seen.append(([r.getMessage() for r in handler.records], outputs))
    assert seen[0][0] == ["casting the input back to torch.float32."]
    assert all(messages == seen[0][0] for messages, _ in seen)
    assert all(same(tuple(outputs), tuple(seen[0][1])) for _, outputs in seen)
    fixed.hf_logger.warning_once.cache_clear()
    with side_effects():
        assert_one_graph(fixed.FlashStyleAttention(), x)


CONSTANT_WARNING_SOURCE = """
    import warnings

    import torch
    from torch import nn


    class Embedder(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(16, 8)
            self.positions = nn.Embedding(16, 8)
            self.out = nn.Linear(8, 8)

        def forward(self, ids):
            mask = ids.ne(1).int()
            positions = torch.cumsum(mask, dim=1) * mask + 1
            h = self.words(ids) + self.positions(positions)
            h = torch.nn.functional.layer_norm(h, (8,))
            warnings.warn("the device argument is deprecated", FutureWarning)
            return self.out(h)
"""


@pytest.mark.slow
def test_deferred_call_without_tensors_under_inductor(tmp_path: Path) -> None:
    """A deferred call whose arguments hold no tensor compiles with CPU Inductor.

    torch 2.13's Inductor flushes its pending C++ kernels before an op only when the op has a
    device; the helper passes the op an empty tensor, without which this model's generated
    code frees its inputs before the fused kernel that reads them (UnboundLocalError).
    """
    original, fixed, _ = original_and_fixed(CONSTANT_WARNING_SOURCE, tmp_path)
    ids = torch.randint(0, 16, (1, 8))
    torch.manual_seed(0)
    model = original.Embedder().eval()
    fixed_model = fixed.Embedder().eval()
    fixed_model.load_state_dict(model.state_dict())
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expected = model(ids)
        compiled_model = torch.compile(fixed_model, backend="inductor", fullgraph=True)
        outputs = [compiled_model(ids), compiled_model(ids)]
    messages = [str(w.message) for w in caught if w.category is FutureWarning]
    assert messages == ["the device argument is deprecated"] * 3
    assert all(torch.allclose(output, expected, atol=1e-6) for output in outputs)


CONDITIONAL_SOURCE = """
    import logging
    import warnings

    import torch
    from torch import nn
    from transformers.utils import logging as hf_logging

    logger = logging.getLogger("graphmend.fixture")
    hf_logger = hf_logging.get_logger("graphmend.fixture.hf")


    class Watchful(nn.Module):
        def forward(self, x, mask=None):
            y = x * 2
            if mask is not None and (mask.mean(dim=-1) <= torch.finfo(mask.dtype).min).any():
                # musicgen's shape: the mask hides every position of a row
                hf_logger.warning_once("empty attention mask")
            if (y > 0).all():
                print("all positive:", y)
            elif (y < 0).any() and not (y == 0).any():
                logger.warning("negative values: %s", y)
                logger.info("sum %s", y.sum())
            else:
                warnings.warn("zeros in the input", UserWarning)
            return y + 1


    class Ambiguous(nn.Module):
        def forward(self, x: torch.Tensor):
            if x > 0:
                print("positive")
            return x - 1
"""

MASKED = torch.tensor([[0.0, 0.0], [torch.finfo(torch.float32).min] * 2])
#: (x, mask) of successive calls: every branch taken, the "once" warning due twice.
CONDITIONAL_CALLS = [
    (torch.tensor([1.0, 2.0]), None),
    (torch.tensor([-1.0, -2.0]), MASKED),
    (torch.tensor([0.0, 3.0]), torch.zeros(2, 2)),
    (torch.tensor([-1.0, 0.0]), MASKED),
    (torch.tensor([1.0, 2.0]), torch.zeros(2, 2)),
]


def run_calls(fn: Callable, module: ModuleType, calls: list) -> Tuple[str, list, list, list]:
    """stdout, records (logger, level, message, function), warnings and outputs of ``calls``."""
    module.hf_logger.warning_once.cache_clear()
    with side_effects() as (stdout, handler, caught):
        outputs = [fn(*args) for args in calls]
    records = [(r.name, r.levelname, r.getMessage(), r.funcName) for r in handler.records]
    return stdout.getvalue(), records, [(str(w.message), w.category) for w in caught], outputs


@pytest.fixture(scope="module")
def conditional_modules(
    tmp_path_factory: pytest.TempPathFactory,
) -> Tuple[ModuleType, ModuleType]:
    original, fixed, code = original_and_fixed(
        CONDITIONAL_SOURCE, tmp_path_factory.mktemp("conditional")
    )
    assert code.count("_graphmend_if_") == 6  # three helpers, each defined and called once
    forward = code.split("class Watchful")[1].split("class Ambiguous")[0]
    assert "if mask is not None:\n" in forward and "logger.warning(" not in forward
    return original, fixed


def test_conditional_side_effects(conditional_modules: Tuple[ModuleType, ModuleType]) -> None:
    """An `if` on a tensor whose branches only print, log or warn: deferred as a whole.

    One graph; eager and compiled, the same stdout, records (with the caller's function) and
    warnings, in the same order and number, over calls that take every branch and log the
    `warning_once` message once.
    """
    original, fixed = conditional_modules
    for x, mask in CONDITIONAL_CALLS[1:3]:
        assert_breaks(original.Watchful(), x, mask)
        assert_one_graph(fixed.Watchful(), x, mask)
    stdout, records, caught, outputs = run_calls(original.Watchful(), original, CONDITIONAL_CALLS)
    assert stdout == "all positive: tensor([2., 4.])\n" * 2
    assert [r[2] for r in records] == [
        "empty attention mask", "negative values: tensor([-2., -4.])", "sum tensor(-6.)",
    ]
    assert caught == [("zeros in the input", UserWarning)] * 2
    eager = run_calls(fixed.Watchful(), fixed, CONDITIONAL_CALLS)
    assert eager[:3] == (stdout, records, caught) and same(tuple(eager[3]), tuple(outputs))
    # compiled, records come from torch's custom-op frame (a known problem of [Defer])
    result = run_calls(compiled(fixed.Watchful()), fixed, CONDITIONAL_CALLS)
    assert [r[:3] for r in result[1]] == [r[:3] for r in records]
    assert (result[0], result[2]) == (stdout, caught) and same(tuple(result[3]), tuple(outputs))


def test_conditional_warning_once_per_location(
    conditional_modules: Tuple[ModuleType, ModuleType],
) -> None:
    """Under the default filter a warning is shown once per location, as in the original."""
    original, fixed = conditional_modules
    zeros = [(torch.zeros(2), None)] * 3
    counts = []
    for arm in (original.Watchful(), fixed.Watchful(), compiled(fixed.Watchful())):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            for args in zeros:
                arm(*args)
        counts.append(len(caught))
    assert counts == [1, 1, 1]


@pytest.mark.parametrize("shape", [(), (1,), (3,)])
def test_conditional_on_a_tensor_of_any_size(
    conditional_modules: Tuple[ModuleType, ModuleType], shape: Tuple[int, ...]
) -> None:
    """`bool()` as in the original: one element decides, more raise the same RuntimeError."""
    original, fixed = conditional_modules
    results = []
    for arm in (original.Ambiguous(), fixed.Ambiguous(), compiled(fixed.Ambiguous())):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            results.append((outcome(arm, torch.ones(shape)), stdout.getvalue()))
    assert same(results[1], results[0]) and same(results[2], results[0])
    if shape == (3,):
        assert results[0][0][0] is RuntimeError
    else:
        assert results[0][1] == "positive\n"
        assert_one_graph(fixed.Ambiguous(), torch.ones(shape))


@pytest.mark.slow
def test_conditional_side_effects_under_inductor(
    conditional_modules: Tuple[ModuleType, ModuleType],
) -> None:
    original, fixed = conditional_modules
    expected = run_calls(original.Watchful(), original, CONDITIONAL_CALLS)
    torch._dynamo.reset()
    model = torch.compile(fixed.Watchful(), backend="inductor", fullgraph=True)
    stdout, records, caught, outputs = run_calls(model, fixed, CONDITIONAL_CALLS)
    caught = [w for w in caught if w[1] is not DeprecationWarning]  # Inductor's own, compiling
    assert (stdout, caught) == (expected[0], expected[2])
    assert same(tuple(outputs), tuple(expected[3]))
    assert [r[:3] for r in records] == [r[:3] for r in expected[1]]


WARNING_SITES_SOURCE = """
    import warnings

    import torch
    from torch import nn


    class Model(nn.Module):
        def forward(self, x):
            y = x * 2
            warnings.warn("check the input")
            y = y + 1
            warnings.warn("check the input")
            if (x < 0).any():
                warnings.warn("negative input", RuntimeWarning)
            else:
                warnings.warn("check the input", RuntimeWarning)
            return y
"""


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("action", ["default", "error", "ignore"])
def test_deferred_warnings_meet_the_filters_of_their_module(
    tmp_path: Path, backend: str, action: str
) -> None:
    """Compiled, each deferred warning comes from a line of its own in the caller's module:
    Python's once-per-location filter shows a message repeated on two lines twice, and a
    filter scoped to the module (`module=__name__`) raises or hides it, as in the original."""
    original, fixed, _ = original_and_fixed(WARNING_SITES_SOURCE, tmp_path)
    shown = []
    for module, arm in [
        (original, original.Model()),
        (fixed, fixed.Model()),
        (fixed, compiled(fixed.Model(), backend)),
    ]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            warnings.filterwarnings(action, module=module.__name__)
            results = [outcome(arm, x) for x in (torch.ones(2), torch.ones(2), -torch.ones(2))]
        files = {Path(w.filename).name for w in caught}
        assert files <= {"model.py"}, files
        shown.append((tuple((w.category, str(w.message)) for w in caught), tuple(results)))
    assert len(shown[0][0]) == {"default": 4, "error": 0, "ignore": 0}[action]
    assert same(shown[1], shown[0]) and same(shown[2], shown[0])


# ---------------------------------------------------------------------------- --helpers-module
HELPERS_SOURCE = """
    import logging

    import torch
    from torch import nn

    logger = logging.getLogger("graphmend.fixture")


    class Model(nn.Module):
        def forward(self, x):
            logger.info("forward of %s", "Model")
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 1
            if torch.isnan(y).any():
                raise ValueError("NaN in the output")
            return y
"""


def test_helpers_module_is_imported_and_exact(tmp_path: Path) -> None:
    """With ``helpers_module``, the fixed file imports the fixed helpers from one module of the
    package (written by ``helpers_module_source``) and keeps only its deferred helpers; a second
    run adds nothing; both compile to one graph with the same results and records."""
    from fixers.helpers import CHECK, DEFERRED, WHERE_GRAD, helpers_module_source

    source = dedent(HELPERS_SOURCE).lstrip()
    command = FixAll(CodemodContext(filename="model.py"), helpers_module="pkg._graphmend")
    result = transform_module(command, source)
    assert isinstance(result, TransformSuccess), result
    fixed = result.code
    assert f"from pkg._graphmend import {DEFERRED}, {CHECK}, {WHERE_GRAD}\n" in fixed
    assert f"def {WHERE_GRAD}(" not in fixed and f"def {DEFERRED}(" not in fixed
    assert f"@{DEFERRED}\ndef _graphmend_logger_info(" in fixed
    again = transform_module(
        FixAll(CodemodContext(filename="model.py"), helpers_module="pkg._graphmend"), fixed
    )
    assert not isinstance(again, TransformSuccess) or again.code == fixed

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_graphmend.py").write_text(helpers_module_source())
    (package / "model.py").write_text(fixed)
    sys.path.insert(0, str(tmp_path))
    try:
        fixed_module = importlib.import_module("pkg.model")
    finally:
        sys.path.remove(str(tmp_path))
    original_module = load(source, tmp_path / "original")
    x = torch.randn(4)
    assert_breaks(original_module.Model(), x)
    assert_one_graph(fixed_module.Model(), x)
    with side_effects() as (_, records, _):
        expected = compiled(original_module.Model())(x)
    original_records = [r.getMessage() for r in records.records]
    with side_effects() as (_, records, _):
        actual = compiled(fixed_module.Model())(x)
    assert same(expected, actual)
    assert [r.getMessage() for r in records.records] == original_records == ["forward of Model"]
    with pytest.raises(ValueError, match="NaN in the output"):
        compiled(fixed_module.Model())(torch.full((4,), float("nan")))


WARNINGS_AS_ERRORS = """
import warnings

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        h = self.lin(x)
        sizes = x.sum(-1).tolist()
        {after}
        return h * len(sizes)
"""


@pytest.mark.parametrize("after", ["warnings.warn('experimental')", "h = h + 1"])
def test_warnings_as_errors_fail_dynamo_in_a_resumed_frame(after: str, tmp_path: Path) -> None:
    """A known problem of torch 2.13, not of the fixes (GM101-103's fix notes): with every
    warning an error, Dynamo fails where it traces a frame resumed after a break (here
    `.tolist()`) and meets a non-leaf tensor that requires grad: it reads `.grad`, which
    warns. The original raises its own warning only because its resumed frame breaks again at
    once, at the `warnings.warn` that [Defer] puts into the graph; plain code there
    (`h = h + 1`) fails the same way. If torch fixes this, the notes can go."""
    source = WARNINGS_AS_ERRORS.replace("{after}", after)
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    fixed = result.code if isinstance(result, TransformSuccess) else source
    assert (fixed != source) == after.startswith("warnings")
    arms = {"original": source, "fixed": fixed}
    for name, code in arms.items():
        module = load(code, tmp_path / name)
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if name == "original" and after.startswith("warnings"):
                with pytest.raises(UserWarning, match="experimental"):
                    torch.compile(module.Model(), backend="aot_eager")(torch.ones(1, 2))
                continue
            with pytest.raises(torch._dynamo.exc.InternalTorchDynamoError, match=r"\.grad"):
                torch.compile(module.Model(), backend="aot_eager")(torch.ones(1, 2))
    torch._dynamo.reset()


ALIASED_INPUTS = """
import torch
from torch import nn


def report(t):
    print("sum", t.sum())


class Model(nn.Module):
    def forward(self, a, b):
        report(a)
        a.add_(1)
        return a + b
"""


def test_deferred_op_fails_with_mutated_inputs_that_share_memory(tmp_path: Path) -> None:
    """A known problem of torch 2.13 (GM101-103's and GM301's fix notes): a graph that holds
    the ordered op of the deferred calls and updates in place an input that shares memory with
    another (a cache and a view of it) fails in AOTAutograd, the op's effect token going
    missing. [Defer] and [Trap] decline where the function itself makes such an update
    (`aliasing.graph_input_update`); here the update is in the caller, which the fix of
    `report` does not see. With inputs that share nothing, the fixed code compiles. If torch
    fixes this, the decline and the notes can go."""
    result = transform_module(FixAll(CodemodContext(filename="model.py")), ALIASED_INPUTS)
    assert isinstance(result, TransformSuccess) and result.code != ALIASED_INPUTS
    for name, code in {"original": ALIASED_INPUTS, "fixed": result.code}.items():
        module = load(code, tmp_path / name)
        for shared in (True, False):
            torch._dynamo.reset()
            base = torch.arange(6.0)
            a, b = (base[:4], base[2:]) if shared else (torch.arange(4.0), torch.arange(4.0))
            compiled = torch.compile(module.Model(), backend="aot_eager")
            with contextlib.redirect_stdout(io.StringIO()):
                if name == "fixed" and shared:
                    with pytest.raises(StopIteration):
                        compiled(a, b)
                else:
                    compiled(a, b)
    torch._dynamo.reset()


TRANSFORMED = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x)
        print("mean", h.mean(), x.shape[0])
        return h.relu()
"""


@pytest.mark.parametrize("transform", ["vmap", "jvp", "per-sample grad"])
def test_a_deferred_call_in_a_torch_func_transform_runs_as_written(
    transform: str, tmp_path: Path
) -> None:
    """The deferred calls' op has no rule for torch.func's transforms (vmap: "Batching rule
    not implemented for graphmend::deferred"; jvp: its copy loses the wrapper that the
    original printed): compiled inside one, the call runs as written, as the original did,
    and outside them the fixed code is still one graph (the twenty-fourth sweep's)."""
    result = transform_module(FixAll(CodemodContext(filename="model.py")), TRANSFORMED)
    assert isinstance(result, TransformSuccess) and result.code != TRANSFORMED
    outcomes = []
    for name, code in {"original": TRANSFORMED, "fixed": result.code}.items():
        torch.manual_seed(0)
        model = load(code, tmp_path / name).Model()
        x = torch.randn(2, 4, 3)
        if transform == "vmap":
            run = torch.func.vmap(model)
        elif transform == "jvp":
            def run(t: Any) -> Any:
                return torch.func.jvp(model, (t,), (torch.ones_like(t),))[1]
            x = x[0]
        else:
            params = {k: v.detach() for k, v in model.named_parameters()}

            def loss(p: Any, t: Any) -> Any:
                return torch.func.functional_call(model, p, (t[None],)).sum()

            per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))

            def run(t: Any) -> Any:
                return per_sample(params, t)["lin.weight"]
            x = x[0]
        torch._dynamo.reset()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            value = torch.compile(run, backend="aot_eager")(x)
        outcomes.append((value, out.getvalue()))
    (expected, printed), (got, fixed_printed) = outcomes
    assert torch.equal(got, expected) and fixed_printed == printed and printed
    with torch.no_grad():  # a tensor that requires grad is printed as written
        report = probe(load(result.code, tmp_path / "plain").Model(), torch.randn(4, 3))
    assert (report.graphs, report.breaks) == (1, 0)
    torch._dynamo.reset()


class Tagged(torch.Tensor):
    """A tensor subclass that prints under its own name (as units or metadata wrappers do)."""


SUBCLASS_PRINTED = """
import logging

import torch
from torch import nn

logger = logging.getLogger("graphmend.subclass")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((2,), 3.0), requires_grad=False)

    def forward(self, x):
        y = x * 2
        print("y", y)
        logger.warning("scale %s", self.scale)
        return y + self.scale
"""


def test_a_deferred_call_given_a_tensor_subclass_runs_as_written(tmp_path: Path) -> None:
    """Compiled, a tensor of a subclass (a frozen Parameter too) reaches the deferred calls' op
    as the graph's plain tensor, which printed `tensor(...)` where the original printed
    `Tagged(...)` and `Parameter containing:` (the forty-fifth sweep's): such a call runs as
    written (with `backend="eager"`: AOTAutograd fails on such a subclass, the original too)."""
    original, fixed, code = original_and_fixed(SUBCLASS_PRINTED, tmp_path)
    assert "_graphmend_print" in code and "_graphmend_logger_warning" in code
    outcomes = []
    for module in (original, fixed):
        torch._dynamo.reset()
        model = module.Model()
        out, handler = io.StringIO(), Capture()
        logging.getLogger("graphmend.subclass").addHandler(handler)
        try:
            with contextlib.redirect_stdout(out):
                value = torch.compile(model, backend="eager")(
                    torch.arange(2.0).as_subclass(Tagged)
                )
        finally:
            logging.getLogger("graphmend.subclass").removeHandler(handler)
        messages = [r.getMessage() for r in handler.records]
        outcomes.append((type(value), value.tolist(), out.getvalue(), messages))
    assert outcomes[1] == outcomes[0]
    assert "Tagged(" in outcomes[0][2] and "Parameter containing" in outcomes[0][3][0]
