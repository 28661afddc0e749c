"""Property test of FixAll's semantics on generated modules that mix every fixable pattern.

Hypothesis writes a ``forward`` from random blocks: logger, print and warnings.warn calls,
data-dependent if/else (one or two results, a setup line), else-less updates, returns in both
branches, validation guards (tensor tests and torch.equal), static conditions (``self.training``,
``x.dim() == 2``, ...) in front of or around them, in a few layouts, and updates in place
through aliases and views (which make the sites that read the name before them unfixable).
Inputs have random shapes (empty ones too), float32, float16 or int64, and edge values: zeros,
ties with the thresholds, inf and nan.

For each module: FixAll declines exactly the findings that the analysis declines, fixes the
others, and its output parses and is a fixed point. For each input, with grad mode on and off:
eager(original) == eager(fixed) (values bitwise, exception type and message, stdout, log records
and warnings, with the function and file they come from) == compiled(fixed) (the same, except
where records and warnings come from: a deferred call makes them from its helper's line).
Each compilation is one graph, unless a site was declined or autograd records through a
selection (where the helper keeps the branch, as documented). Examples are derandomized and no
database is used: CI runs the same ones.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from textwrap import indent
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")

from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402
from test_fixers_dynamo import load, outcome, same, side_effects  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402
from fixers.helpers import KEEPS_BRANCH  # noqa: E402
from flake8_graphmend.engine import analyze_source  # noqa: E402
from flake8_graphmend.verify.dynamo import recorded_graph_breaks  # noqa: E402

HEADER = '''\
import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger("graphmend.fixture")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(1.5))

    def forward(self, x):
'''

THRESHOLDS = ("0", "1", "-1", "0.5", "2")
STATIC_TESTS = (
    "self.training",
    "not self.training",
    "x.dim() == 2",
    "x.dim() == 1",
    "x.dtype == torch.float16",
    "x.shape[-1] > 2",
)
EXCEPTIONS = ("ValueError", "RuntimeError", "TypeError", "AssertionError")
CATEGORIES = ("", ", FutureWarning", ", UserWarning", ", DeprecationWarning")


class Program(NamedTuple):
    source: str
    weighted: bool  # forward starts with `x = x * self.weight` (autograd records through it)
    training: bool


# ---------------------------------------------------------------------------- source strategies
#: Tensor tests as templates on a name ``{v}`` and a bound ``{b}``: 0-d bool tensors, defined
#: for empty inputs too.
TESTS = (
    "{v}.sum() > {b}",
    "{v}.sum() >= {b}",
    "{v}.sum() == {b}",
    "({v} > {b}).any()",
    "({v} >= {b}).all()",
    "({v} == {b}).any()",
    "{v}.abs().sum() < {b}",
    "torch.isnan({v}).any()",
    "torch.isinf({v}).all()",
)
#: Tests of validation guards, which fail on fewer inputs (so that more code runs after them).
GUARD_TESTS = (
    "torch.isnan({v}).any()",
    "torch.isinf({v}).any()",
    "({v} < -2).any()",
    "({v} > {b}).all()",
    "not ({v} <= 2).all()",
    "{v}.sum() == 7",
)
#: torch.equal guards (GM302), one tensor test each: nan differs from nan, -0.0 equals 0.0.
EQUAL_GUARD_TESTS = (
    "not torch.equal({v}, {w})",
    "not torch.equal({v}, {v}.abs())",
    "torch.equal({v}, -{w})",
)


def indented(lines: List[str]) -> List[str]:
    return [f"    {line}" for line in lines]


def atoms_from(templates: Sequence[str], names: Sequence[str]) -> st.SearchStrategy[str]:
    name = st.sampled_from(names)
    return st.builds(
        str.format, st.sampled_from(templates), v=name, w=name, b=st.sampled_from(THRESHOLDS)
    )


def tensor_tests(
    names: Sequence[str], templates: Sequence[str] = TESTS, negated: bool = True
) -> st.SearchStrategy[List[str]]:
    """The tensor conjuncts of a test: one test, its negation, an `or` or an `and` of two."""
    atom = atoms_from(templates, names)
    two = st.tuples(atom, atom)
    return st.one_of(
        atom.map(lambda test: [test]),
        atom.map(lambda test: [f"not {test}" if negated else test]),
        two.map(lambda pair: [f"({pair[0]} or {pair[1]})"]),
        two.map(list),
    )


def values(names: Sequence[str]) -> st.SearchStrategy[str]:
    """An elementwise expression that keeps the shape and dtype (float16, float32, int64)."""
    one, other = st.sampled_from(names), st.sampled_from(names)
    return st.one_of(
        one.flatmap(
            lambda v: st.sampled_from(
                [f"{v} * 2", f"{v} - 1", f"{v} + 1", f"-{v}", f"{v}.abs()",
                 f"torch.clamp({v}, min=-1, max=1)"]
            )
        ),
        st.tuples(one, other).flatmap(
            lambda p: st.sampled_from(
                [f"{p[0]} * {p[1]}", f"{p[0]} + {p[1]}", f"torch.maximum({p[0]}, {p[1]})"]
            )
        ),
    )


@st.composite
def if_statement(
    draw: Any, names: Sequence[str], body: List[str], orelse: Optional[List[str]] = None,
    static: bool = False, tests: Optional[st.SearchStrategy[List[str]]] = None,
) -> List[str]:
    """``if <test>:`` with ``body`` (and ``orelse``), in one of the layouts the fixers keep."""
    tests = draw(tensor_tests(names) if tests is None else tests)
    if static:
        tests = [draw(st.sampled_from(STATIC_TESTS)), *tests]
    layouts = ["plain"]
    if len(tests) > 1:
        layouts.append("parenthesized")
    if len(body) == 1:
        layouts.append("one line")
    layout = draw(st.sampled_from(layouts))
    if layout == "parenthesized":
        lines = ["if (", f"    {tests[0]}", *(f"    and {test}" for test in tests[1:]), "):"]
    else:
        lines = [f"if {' and '.join(tests)}:"]
    if layout == "one line":
        lines[-1] += f" {body[0]}"
    else:
        lines += indented(body)
    if draw(st.booleans()):
        lines[-1] += "  # kept as a comment"
    if orelse is not None:
        lines += ["else:", *indented(orelse)]
    return lines


@st.composite
def side_effect(draw: Any, names: Sequence[str], index: int) -> List[str]:
    name, category = draw(st.sampled_from(names)), draw(st.sampled_from(CATEGORIES))
    calls = [
        f'logger.warning("block %d: %s", {index}, "warned")',
        f'logger.info("block %d: sum %s", {index}, {name}.sum())',
        f'logger.info("block {index}", stacklevel=1)',
        f'print("block", {index}, sep=": ")',
        f'print("block {index}:", {name})',
        f'warnings.warn("block {index} is deprecated"{category})',
    ]
    return [draw(st.sampled_from(calls))]


@st.composite
def guard(draw: Any, names: Sequence[str], index: int, static: bool = False) -> List[str]:
    error = draw(st.sampled_from(EXCEPTIONS))
    message = draw(
        st.sampled_from(
            [f'"guard {index} failed"', f'"guard {index}: \'x\' is out of range"',
             f'f"guard {index} failed on a {{x.dim()}}-d input"']
        )
    )
    tests = st.one_of(
        tensor_tests(names, GUARD_TESTS, negated=False),
        atoms_from(EQUAL_GUARD_TESTS, names).map(lambda test: [test]),
    )
    return draw(if_statement(names, [f"raise {error}({message})"], static=static, tests=tests))


@st.composite
def selection(
    draw: Any, names: List[str], index: int, static: bool = False, new_names: bool = True
) -> List[str]:
    """An if/else or else-less ``if`` that assigns tensors: [Where]'s assignment shapes."""
    value = values(names)
    shape = draw(st.sampled_from(["if/else", "update", "two results", "setup"]))
    if not new_names:
        shape = draw(st.sampled_from(["if/else", "update"]))
    target = draw(st.sampled_from(names))
    if new_names and shape != "update" and draw(st.booleans()):
        target = f"y{index}"
    if shape == "update":
        lines = draw(if_statement(names, [f"{target} = {draw(value)}"], static=static))
    elif shape == "if/else":
        assigned = draw(st.sampled_from([target, f"{target}: torch.Tensor"]))
        lines = draw(if_statement(
            names, [f"{assigned} = {draw(value)}"], [f"{target} = {draw(value)}"], static=static
        ))
    elif shape == "two results":
        first, second = f"a{index}", f"b{index}"
        lines = draw(if_statement(
            names,
            [f"{first} = {draw(value)}", f"{second} = {draw(value)}"],
            [f"{first} = {draw(value)}", f"{second} = {draw(value)}"],
            static=static,
        ))
        names.append(first)
        target = second
    else:  # a line that only its branch uses, run before the selection
        setup = f"s{index}"
        lines = draw(if_statement(
            names,
            [f"{setup} = {draw(value)}", f"{target} = {setup} * 2"],
            [f"{target} = {draw(value)}"],
            static=static,
        ))
    if target not in names:
        names.append(target)
    return lines


@st.composite
def mutation(draw: Any, names: Sequence[str], index: int) -> List[str]:
    """An in-place update of a name through an alias or a view: the sites that read the name
    before it must be declined ([Where] would select a copy, [Defer] would print the update)."""
    name, alias = draw(st.sampled_from(names)), f"z{index}"
    update = draw(st.sampled_from(["{}.add_(1)", "{}.mul_(2)", "{}.neg_()", "torch.relu_({})"]))
    view = draw(st.sampled_from(["{}", "{}.view(-1)", "{}[0:1]", "rows"]))
    if view == "rows":
        return [f"for {alias} in {name}:", *indented([update.format(alias)])]
    return [f"{alias} = {view.format(name)}", update.format(alias)]


@st.composite
def returns(draw: Any, names: Sequence[str]) -> List[str]:
    """The end of ``forward``: all names, or [Where]'s return shapes."""
    value = values(names)
    shape = draw(st.sampled_from(["tuple", "both branches", "trailing", "static"]))
    if shape == "tuple":
        return [f"return {', '.join(names)}"]
    if shape == "trailing":
        return [*draw(if_statement(names, [f"return {draw(value)}"])), f"return {draw(value)}"]
    return draw(
        if_statement(
            names, [f"return {draw(value)}"], [f"return {draw(value)}"], static=shape == "static"
        )
    )


@st.composite
def programs(draw: Any) -> Program:
    names = ["x"]
    weighted, training = draw(st.booleans()), draw(st.booleans())
    lines = ["x = x * self.weight"] if weighted else []
    for index in range(draw(st.integers(1, 5))):
        kinds = ["side effect", "guard", "selection", "static prefix", "static block"]
        if not weighted:  # in place after `x * self.weight`, backward might need the old value
            kinds.append("mutation")
        kind = draw(st.sampled_from(kinds))
        if kind == "side effect":
            lines += draw(side_effect(names, index))
        elif kind == "guard":
            lines += draw(guard(names, index))
        elif kind == "selection":
            lines += draw(selection(names, index))
        elif kind == "mutation":
            lines += draw(mutation(names, index))
        elif kind == "static prefix":
            if draw(st.booleans()):
                lines += draw(guard(names, index, static=True))
            else:
                lines += draw(selection(names, index, static=True))
        else:  # names bound inside are not bound on every path: only rebind existing ones
            inner = draw(st.one_of(side_effect(names, index), guard(names, index),
                                   selection(names, index, new_names=False)))
            lines += [f"if {draw(st.sampled_from(STATIC_TESTS))}:", *indented(inner)]
    lines += draw(returns(names))
    source = HEADER + "".join(indent(f"{line}\n", " " * 8) for line in lines)
    return Program(source, weighted, training)


# ---------------------------------------------------------------------------- input strategies
FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5)
SPECIAL = (float("inf"), float("-inf"), float("nan"))
INTEGERS = (0, 1, -1, 2, -3)


@st.composite
def inputs(draw: Any) -> torch.Tensor:
    """A tensor of ties and small values; a float one may hold one inf or nan."""
    shape = draw(st.sampled_from([(0,), (1,), (3,), (2, 3), (0, 3)]))
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.int64]))
    pool = INTEGERS if dtype == torch.int64 else FLOATS
    count = shape[0] * (shape[1] if len(shape) > 1 else 1)
    elements = draw(st.lists(st.sampled_from(pool), min_size=count, max_size=count))
    if elements and dtype != torch.int64 and draw(st.booleans()):
        elements[draw(st.integers(0, count - 1))] = draw(st.sampled_from(SPECIAL))
    return torch.tensor(elements, dtype=dtype).reshape(shape)


# ---------------------------------------------------------------------------- checks
def fix(source: str) -> Tuple[str, bool]:
    """FixAll's output for ``source`` and whether it declined sites; checked to parse, to decline
    just what the analysis declines, and to be a fixed point."""
    findings = analyze_source(source, "model.py")
    assert all(f.fixer or f.decline for f in findings), findings
    declined = [f for f in findings if f.decline]
    caveats = [f for f in findings if f.plan is not None and f.plan.caveat()]
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert isinstance(result, TransformSuccess), result
    not_fixed = [w for w in result.warning_messages if " not fixed: " in w]
    assert len(not_fixed) == len(declined), result.warning_messages
    assert len(result.warning_messages) == len(declined) + len(caveats), result.warning_messages
    assert result.code != source
    ast.parse(result.code)
    again = transform_module(FixAll(CodemodContext(filename="model.py")), result.code)
    assert not isinstance(again, TransformSuccess), again.code
    return result.code, bool(declined)


class Observed(NamedTuple):
    """One call: its outcome, stdout, log records and warnings (each with its function, file)."""

    outcome: Any
    stdout: str
    records: list
    warnings: list

    def effects(self, located: bool = True) -> tuple:
        """stdout, records and warnings; ``located=False`` drops where each was emitted from."""
        if located:
            return self.stdout, self.records, self.warnings
        return self.stdout, [r[:2] for r in self.records], [w[:2] for w in self.warnings]


TORCH_ROOT = Path(torch.__file__).parent


def observe(fn: Callable, x: torch.Tensor) -> Observed:
    with side_effects() as (stdout, handler, caught):
        result = outcome(fn, x.clone())  # the code may update its input in place
    records = [
        (r.levelname, r.getMessage(), r.funcName, Path(r.pathname).name) for r in handler.records
    ]
    caught = [  # Dynamo warns about what it cannot trace (a declined site's logging internals)
        (w.category, str(w.message), Path(w.filename).name)
        for w in caught
        if not Path(w.filename).is_relative_to(TORCH_ROOT)
    ]
    return Observed(result, stdout.getvalue(), records, caught)


def raised(result: Any) -> bool:
    return isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], type)


def gradient(result: Any, weight: torch.Tensor) -> Optional[torch.Tensor]:
    """d(sum of the outputs)/d(weight), when autograd recorded through the weight."""
    outputs = result if isinstance(result, tuple) else (result,)
    total = sum(output.float().sum() for output in outputs if output.requires_grad)
    if not isinstance(total, torch.Tensor):
        return None
    return torch.autograd.grad(total, weight)[0]


def check_example(program: Program, xs: Sequence[torch.Tensor], folder: Path) -> None:
    fixed_source, declined = fix(program.source)
    original = load(program.source, folder / "original").Model().train(program.training)
    fixed = load(fixed_source, folder / "fixed").Model().train(program.training)
    graphs: List[Any] = []

    def counting_backend(graph_module: Any, example_inputs: Any) -> Callable:
        graphs.append(graph_module)
        return graph_module.forward

    for grad in (False, True):
        torch._dynamo.reset()
        compiled = torch.compile(fixed, backend=counting_backend)
        with torch.set_grad_enabled(grad):
            for x in xs:
                expected, eager = observe(original, x), observe(fixed, x)
                assert same(eager.outcome, expected.outcome), (eager.outcome, expected.outcome)
                assert eager.effects() == expected.effects()
                graphs.clear()
                with recorded_graph_breaks() as sites:
                    got = observe(compiled, x)
                # one graph, unless a site was declined or autograd records through a selection
                # (or keeps it as written whenever grad mode is on)
                kept = f"if {KEEPS_BRANCH}(" in fixed_source
                one_graph = not declined and not (grad and (program.weighted or kept))
                if graphs and one_graph:  # compiled in this call, not a cache hit
                    assert (len(graphs), sites) == (1, []), [str(site) for site in sites]
                assert same(got.outcome, expected.outcome), (got.outcome, expected.outcome)
                # compiled, records come from the helper's line or from Dynamo's resume function
                assert got.effects(located=False) == expected.effects(located=False)
                if grad and program.weighted and not raised(expected.outcome):
                    grads = [gradient(o.outcome, m.weight) for o, m in
                             ((expected, original), (eager, fixed), (got, fixed))]
                    assert all(same(g, grads[0]) for g in grads[1:]), grads


_examples = itertools.count()


@pytest.mark.slow
@settings(max_examples=35, deadline=None, derandomize=True, database=None)
@given(program=programs(), xs=st.lists(inputs(), min_size=2, max_size=3))
def test_fixed_modules_behave_like_the_originals(
    tmp_path_factory: pytest.TempPathFactory, program: Program, xs: List[torch.Tensor]
) -> None:
    assume(any(f.fixer for f in analyze_source(program.source, "model.py")))  # not only updates
    check_example(program, xs, tmp_path_factory.mktemp(f"example{next(_examples)}"))


# ---------------------------------------------------------------------------- regressions
#: Updates in place through an alias, a view or a torch function, found by the test above:
#: [Where] selected a copy (eager results changed), so that site is declined. [Defer] once
#: printed or logged the updated value under compile; its call now runs inside the graph at the
#: point of the call, so print sites are fixed and must show the value before the update. A
#: log record keeps its tensor, and a handler may format it after the update, which the graph
#: cannot pass on: that site is declined.
ALIASED_UPDATES = {
    "where, alias": ("z = y\nif x.sum() > 0:\n    y = y * 2\nz.add_(1)", "GM201"),
    "print, alias": ('z = y\nprint("y:", y)\nz.add_(1)', "GM101"),
    "print, view": ('print("y:", y)\nz = y.view(-1)\nz.add_(1)', "GM101"),
    "print, chunk": ('print("y:", y)\nfirst, second = y.chunk(2)\nfirst.add_(1)', "GM101"),
    "print, rows": ('print("y:", y)\nfor row in y:\n    row.mul_(2)', "GM101"),
    "log, item": ('logger.warning("first: %s", y[0])\ny.add_(1)', "GM102"),
    "print, torch function": ('print("y:", y)\ntorch.relu_(y)', "GM101"),
}


def forward_source(body: str) -> str:
    return HEADER + indent(f"{body}\n", " " * 8)


@pytest.mark.parametrize("name", ALIASED_UPDATES)
def test_sites_read_before_an_aliased_update_keep_their_values(name: str, tmp_path: Path) -> None:
    body, code = ALIASED_UPDATES[name]
    source = forward_source(f'warnings.warn("start")\ny = x * 2\n{body}\nreturn y')
    (finding,) = [f for f in analyze_source(source, "model.py") if f.code == code]
    if code == "GM201":
        assert "`y` is mutated in place" in finding.decline
    elif code == "GM102":
        assert "the log record keeps `y[0]`" in finding.decline
    else:
        assert finding.fixer and not finding.decline
    check_example(Program(source, weighted=False, training=True), [torch.tensor([-1.0, 2.0])],
                  tmp_path)


def test_a_new_tensor_updated_in_place_keeps_the_fix(tmp_path: Path) -> None:
    source = forward_source('y = x * 2\nprint("y:", y)\nz = y * 3\nz.add_(1)\nreturn y, z')
    assert all(f.fixer for f in analyze_source(source, "model.py"))
    check_example(Program(source, weighted=False, training=True), [torch.tensor([-1.0, 2.0])],
                  tmp_path)


@pytest.mark.parametrize("reduction", ["y.abs().max()", "y.min()", "y.std()", "y.argmax()"])
def test_a_log_record_of_a_reduction_keeps_a_new_tensor(reduction: str, tmp_path: Path) -> None:
    """A reduction allocates: the record holds a tensor no later update reaches."""
    source = forward_source(
        f'y = x * 2\nlogger.warning("peak: %s", {reduction})\ny.add_(1)\nreturn y'
    )
    (finding,) = [f for f in analyze_source(source, "model.py") if f.code == "GM102"]
    assert finding.fixer and not finding.decline, finding.decline
    check_example(Program(source, weighted=False, training=True), [torch.tensor([-1.0, 2.0])],
                  tmp_path)
