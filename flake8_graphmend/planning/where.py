"""[Where]: may a Python ``if`` on a tensor become a selection, and in which of its shapes?

Three shapes of ``if`` are rewritten, each with its own plan:

* ``ReturnSelection``: ``if c: return A`` with ``else: return B`` or a ``return B`` right after;
* ``CallSelection``: both branches are the same call with different arguments;
* ``AssignSelection``: both branches (or an else-less one) assign local names.

A conditional expression ``A if c else B`` that is the whole value of a ``return`` or of an
assignment to a name is one more (``ExpressionSelection``): it is the ``if`` of the first or
the third shape written on one line.

Computing both sides is exact only when neither can raise or change anything
(``analysis/purity.py``), and selecting is exact only when no one can tell the selected tensor
from the original (``aliasing.py``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import (
    TYPE_CHECKING, AbstractSet, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union,
)

from ..analysis.dtypes import Dtypes, names_surely_read, proven_before, proven_by
from ..analysis.index import deleted_names, loops_around, names_bound_by, outer_names, walk
from ..analysis.purity import extrema_outside, extrema_taken, impurity
from ..analysis.symbols import self_attribute, self_chain
from ..analysis.values import Kind
from . import Plan, Planned, declined, position
from .aliasing import (
    aliases_after,
    aliasing_problem,
    hands_on_caller_tensor,
    layout_problem,
    may_alias,
    reaching_bindings,
    reaching_values,
)
from .conditions import shared_line_problem, shares_line, split_condition, tensor_condition_problem
from .draws import DrawGuard, draw_guard_plan
from .gradients import gradient_inputs, gradient_problem, shown_problem, shown_returned_problem
from .items import compared_item
from .submodules import is_torch_function
from .presence import may_be_none, unknown_attribute
from .totals import maybe_unbound
from .callers import passed_none

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: ``name = value`` statements of one branch, by name.
Assigned = Dict[str, ast.expr]


class Selection(Plan):
    """What the three selection plans share: whether the selection is made while autograd
    records."""

    #: Leading conjuncts of the test that stay a Python ``if`` (values known while tracing).
    static_conjuncts: int
    #: Why a compiled selection would show another autograd node (the function prints or
    #: logs it), or None.
    kept_branch: Optional[str]
    #: Why the selection may change gradients (``gradients.py``), or None. With either
    #: reason, the code as written stays under ``if _graphmend_keeps_branch(...):`` (eager,
    #: and while autograd records through ``grad_inputs``) and the selection runs in its
    #: ``else``; with neither, it selects in training too (``_graphmend_where_grad``).
    training_problem: Optional[str]
    #: What the sides compute with that may require grad (``h``, ``self.w``), given to
    #: ``_graphmend_keeps_branch``; none: the branch stays whenever grad mode is on.
    grad_inputs: Tuple[str, ...]
    #: The tensor test is ``<whole reduction>.item() <op> <int>`` (``items.compared_item``):
    #: the selection compares ``_graphmend_item(<reduction>)``, a tensor, in its place.
    item_test: bool

    def caveat(self) -> Optional[str]:
        if self.training_problem is not None:
            return f"it keeps the branch while autograd records: {self.training_problem}"
        if self.kept_branch is None:
            return None
        return f"it keeps the branch for tensors that require grad: {self.kept_branch}"


@dataclass(frozen=True)
class ReturnSelection(Selection):
    """``return _graphmend_where(c, A, B)`` replaces both returns."""

    static_conjuncts: int
    #: ``B`` is the ``return`` statement after an else-less ``if`` (replaced too).
    trailing_return: bool
    kept_branch: Optional[str] = None
    training_problem: Optional[str] = None
    grad_inputs: Tuple[str, ...] = ()
    item_test: bool = False


@dataclass(frozen=True)
class CallSelection(Selection):
    """One call ``f(.., _graphmend_where(c, A, B), ..)`` in place of both branches' calls."""

    #: Positions of the arguments that differ (positional ones first, then keywords).
    differing: Tuple[int, ...]
    static_conjuncts: int = 0
    kept_branch: Optional[str] = None
    training_problem: Optional[str] = None
    grad_inputs: Tuple[str, ...] = ()
    item_test: bool = False


@dataclass(frozen=True)
class AssignSelection(Selection):
    """Setups moved out, then ``name = _graphmend_where(c, A, B)`` for each result name."""

    static_conjuncts: int
    #: The names assigned by the ``if`` that code after it reads, in selection order.
    results: Tuple[str, ...]
    #: Statements (by index in their branch) that only set up that branch's values: they run
    #: unconditionally, before the selection.
    hoisted_body: FrozenSet[int]
    hoisted_orelse: FrozenSet[int]
    #: The condition goes into a temporary first (several selections, or it reads a result).
    condition_temp: bool
    kept_branch: Optional[str] = None
    training_problem: Optional[str] = None
    grad_inputs: Tuple[str, ...] = ()
    item_test: bool = False


@dataclass(frozen=True)
class ExpressionSelection(Selection):
    """``_graphmend_where(c, A, B)`` in place of ``A if c else B``, the value of a ``return`` or
    of ``name = ...``; behind static conjuncts ``s``: ``_graphmend_where(c, A, B) if s else B``."""

    static_conjuncts: int
    kept_branch: Optional[str] = None
    training_problem: Optional[str] = None
    grad_inputs: Tuple[str, ...] = ()
    item_test: bool = False


WherePlan = Union[ReturnSelection, CallSelection, AssignSelection]


def where_plan(
    node: ast.If, block: Sequence[ast.stmt], ctx: FunctionContext
) -> Planned[Union[WherePlan, DrawGuard]]:
    """Whether ``node`` (a statement of ``block``) may be predicated, and in which shape; where it
    may not, whether it branches on a random draw that a static guard can skip (``draws.py``)."""
    plan, reason = selection_plan(node, block, ctx)
    if plan is None:
        guard, draw_reason = draw_guard_plan(node, *split_condition(node.test, ctx), ctx)
        if guard is not None or draw_reason:  # a test of a random draw
            return guard, draw_reason
    return plan, reason


def selection_plan(
    node: ast.If, block: Sequence[ast.stmt], ctx: FunctionContext
) -> Planned[WherePlan]:
    """Whether ``node`` (a statement of ``block``) may become a selection, and in which shape."""
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        return declined("an elif chain has more than two outcomes")
    static, tensor_part = split_condition(node.test, ctx)
    item_test = is_item_test(tensor_part, ctx)
    problem = None if item_test else tensor_condition_problem(tensor_part, ctx)
    if problem:
        return declined(problem)
    plan: Optional[WherePlan]
    if len(node.body) == 1 and isinstance(node.body[0], ast.Return):
        plan, reason = _return_plan(node, block, len(static), ctx)
    elif _common_call(node.body, node.orelse) is not None:
        plan, reason = _call_plan(node, block, len(static), ctx)
    else:
        plan, reason = _assign_plan(node, block, static, tensor_part, ctx)
    if plan is not None and item_test:
        plan = replace(plan, item_test=True)
    return plan, reason


def expression_plan(
    node: ast.IfExp, statement: ast.stmt, block: Sequence[ast.stmt], ctx: FunctionContext
) -> Planned[Union[ExpressionSelection, DrawGuard]]:
    """Whether ``A if c else B`` (in ``statement`` of ``block``) may become a selection or, where
    ``c`` compares a random draw, a guarded comparison (``draws.py``)."""
    value = getattr(statement, "value", None)
    target = statement.targets[0] if isinstance(statement, ast.Assign) else None
    if isinstance(statement, ast.AnnAssign):
        target = statement.target
    if value is not node or not (
        isinstance(statement, ast.Return)
        or isinstance(target, ast.Name)
        and (not isinstance(statement, ast.Assign) or len(statement.targets) == 1)
    ):
        return declined(
            "a conditional expression is rewritten only as the whole value of a `return` or of "
            "an assignment to one name"
        )
    line, column = position(statement, ctx)
    if shares_line(statement, block) or ctx.lines[line - 1][:column].strip():
        return declined("the statement shares its line with other statements or its block's header")
    static, tensor_part = split_condition(node.test, ctx)
    problem = tensor_condition_problem(tensor_part, ctx)
    plan, reason = (None, problem) if problem else _expression_plan(
        node, statement, block, len(static), target, ctx
    )
    if plan is None:
        guard, draw_reason = draw_guard_plan(statement, static, tensor_part, ctx)
        if guard is not None or draw_reason:  # a test of a random draw
            return guard, draw_reason
    return plan, reason


def _expression_plan(
    node: ast.IfExp,
    statement: ast.stmt,
    block: Sequence[ast.stmt],
    static: int,
    target: Optional[ast.expr],
    ctx: FunctionContext,
) -> Planned[ExpressionSelection]:
    """Both sides computed and one selected: each must be a tensor that evaluating cannot fail
    or change anything, and the selection (a new tensor) must not be told from the side's."""
    nonempty = extrema_taken(node.test, ctx.symbols)  # computed first, as `c` was
    dtypes = _dtypes(node.test, statement, ctx)
    pair = (node.body, node.orelse)
    for side in pair:
        if isinstance(side, ast.Constant) and side.value is None:
            return declined("one side is None")
        problem = (
            _returned_value_problem(side, ctx, "a side is")
            or impurity(side, ctx.values, ctx.symbols, nonempty, dtypes=dtypes)
            or _absent_read(side, statement, block, ctx, test=node.test)
        )
        if problem:
            return declined(problem)
    if isinstance(target, ast.Name):
        sides = [{target.id: node.body}, {target.id: node.orelse}]
        problem = _identity_problem([target.id], sides, statement, ctx)
        shown = shown_problem([target.id], ctx)
    else:
        shown = shown_returned_problem(statement, ctx)
        kept = next((v for v in pair if hands_on_caller_tensor(v, statement, ctx)), None)
        problem = layout_problem([pair]) if kept is None else (
            f"a side is `{ast.unparse(kept)}`, which may be an existing tensor the caller can "
            "tell apart; torch.where returns a new tensor"
        )
    if problem:
        return declined(problem)
    training = gradient_problem([pair], ctx)
    inputs = _grad_inputs(shown or training, pair, (), statement, block, ctx)
    return ExpressionSelection(
        static, kept_branch=shown, training_problem=training, grad_inputs=inputs
    ), None


def is_item_test(tensor_part: Sequence[ast.expr], ctx: FunctionContext) -> bool:
    """Whether the tensor part of a test is one ``<whole reduction>.item() <op> <int>``, which a
    selection compares as a tensor (``_graphmend_item``, exact); a bare ``x.any().item()``
    would give a selection a condition that is not bool, so it is left to [Trap]."""
    return (
        len(tensor_part) == 1
        and isinstance(tensor_part[0], ast.Compare)
        and compared_item(tensor_part[0], ctx) is not None
    )


def _dtypes(test: ast.expr, at: ast.stmt, ctx: FunctionContext) -> Dtypes:
    """What is known of the dtypes of the tensors a side of the ``if`` or conditional
    expression at ``at`` computes with: from their bindings that reach it, from what the code
    before it proved (``dtypes.proven_before``), and from what its ``test``, computed first,
    proved (``dtypes.proven_by``); for code after names the branch binds,
    ``Dtypes.rebinding``."""
    read = names_surely_read(test)
    proven = dict(proven_before(at, ctx.region.function, ctx.symbols, read))
    for name, facts in proven_by(test, ctx.symbols).items():
        proven[name] = proven.get(name, frozenset()) | facts
    walrus = {sub.target.id for sub in walk(test) if isinstance(sub, ast.NamedExpr)}
    # names the test binds itself, after what reaches the `if`
    return Dtypes(ctx.values, ctx.symbols, proven, reaching_values(ctx), at, walrus)


# ---------------------------------------------------------------------------- returns
def _return_plan(
    node: ast.If, block: Sequence[ast.stmt], static: int, ctx: FunctionContext
) -> Planned[ReturnSelection]:
    body, orelse = node.body[0], node.orelse
    assert isinstance(body, ast.Return)
    position = block.index(node) + 1
    following = block[position] if position < len(block) else None
    other = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], ast.Return) else None
    trailing = False
    if not orelse and isinstance(following, ast.Return):
        other, trailing = following, True
        if shares_line(following, block):
            return declined("the `return` after the `if` shares its line with other statements")
    if other is None:
        return declined("the branch returns early while the other path goes on")
    if static and trailing:
        return declined("a static conjunct guards an early return")
    dtypes = _dtypes(node.test, node, ctx)
    for value in (body.value, other.value):
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return declined("one path returns None")
        problem = (
            _returned_value_problem(value, ctx)
            or impurity(value, ctx.values, ctx.symbols, dtypes=dtypes)
            or _absent_read(value, node, block, ctx)
        )
        if problem:
            return declined(problem)
    assert body.value is not None and other.value is not None  # checked above
    kept = next(
        (v for v in (body.value, other.value) if hands_on_caller_tensor(v, node, ctx)), None
    )
    if kept is not None:
        return declined(
            f"a path returns `{ast.unparse(kept)}`, which may be an existing tensor the caller "
            "can tell apart; torch.where returns a new tensor"
        )
    problem = layout_problem([(body.value, other.value)])
    if problem:
        return declined(problem)
    training = gradient_problem([(body.value, other.value)], ctx)
    shown = shown_returned_problem(node, ctx)
    inputs = _grad_inputs(shown or training, [body.value, other.value], (), node, block, ctx)
    return ReturnSelection(
        static, trailing, kept_branch=shown, training_problem=training, grad_inputs=inputs
    ), None


def _returned_value_problem(
    value: ast.expr, ctx: FunctionContext, what: str = "a path returns"
) -> Optional[str]:
    """Why a returned value (``what`` says whose) cannot be one ``torch.where`` selection (None:
    it can)."""
    if isinstance(value, (ast.Tuple, ast.List, ast.Dict, ast.Set)):
        return f"{what} `{ast.unparse(value)}`, a container, not one tensor"
    if ctx.values.kind(value) is Kind.STATIC:
        return f"{what} the Python value `{ast.unparse(value)}`, not a tensor"
    return None


# ---------------------------------------------------------------------------- a common call
def _common_call(
    body: Sequence[ast.stmt], orelse: Sequence[ast.stmt]
) -> Optional[Tuple[ast.Call, ast.Call]]:
    """The last statements of both branches when they are calls of one callee, same arity."""
    if not (body and orelse):
        return None
    first, second = (branch[-1] for branch in (body, orelse))
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Call)
        and isinstance(second, ast.Expr)
        and isinstance(second.value, ast.Call)
    ):
        return None
    calls = first.value, second.value
    if ast.dump(calls[0].func) != ast.dump(calls[1].func):
        return None
    if len(calls[0].args) != len(calls[1].args):
        return None
    if [k.arg for k in calls[0].keywords] != [k.arg for k in calls[1].keywords]:
        return None
    return calls


def _call_plan(
    node: ast.If, block: Sequence[ast.stmt], static: int, ctx: FunctionContext
) -> Planned[CallSelection]:
    """``f(.., A, ..)`` / ``f(.., B, ..)``: one call of ``f(.., where(c, A, B), ..)``, the
    condition computed first, as the ``if`` did."""
    if static:
        return declined(
            "a static conjunct guards the common call (its else branch runs without it)"
        )
    calls = _common_call(node.body, node.orelse)
    assert calls is not None
    first, second = calls
    pairs = list(zip(first.args, second.args)) + [
        (a.value, b.value) for a, b in zip(first.keywords, second.keywords)
    ]
    if any(isinstance(a, ast.Starred) or isinstance(b, ast.Starred) for a, b in pairs) or any(
        k.arg is None for k in first.keywords
    ):
        return declined("the common call unpacks `*args` or `**kwargs`")
    differing = tuple(i for i, (a, b) in enumerate(pairs) if ast.dump(a) != ast.dump(b))
    if not differing:
        return declined("both branches make the same call; it does not depend on the condition")
    problem = (
        _frame_problem(ctx)
        or _first_statements_problem(node)
        or _differing_arguments_problem([pairs[i] for i in differing], node, block, ctx)
        or _selected_in_place_problem(first, [pairs[i] for i in differing], ctx)
        or _kept_argument_problem(node, first, [pairs[i] for i in differing], ctx)
    )
    if problem:
        return declined(problem)
    training = gradient_problem([pairs[i] for i in differing], ctx)
    from ..rules.side_effects import classify_call  # the rules import the planners

    shown = None
    if classify_call(first, ctx):
        shown = (
            f"`{ast.unparse(first.func)}()` shows its arguments, and a selected tensor names "
            "another autograd node (`grad_fn=<WhereBackward0>`)"
        )
    sides = [side for i in differing for side in pairs[i]]
    inputs = _grad_inputs(shown or training, sides, (), node, block, ctx)
    return CallSelection(
        differing, kept_branch=shown, training_problem=training, grad_inputs=inputs
    ), None


def _first_statements_problem(node: ast.If) -> Optional[str]:
    """Each branch must be the common call alone: a statement before it would run on both
    paths (a memoised ``if not hasattr(self, "k"): ...`` fills a slot that the path not taken
    never filled, ``self.a = self.a.to(x.dtype)`` may round the other path's tensor)."""
    for statement in (*node.body[:-1], *node.orelse[:-1]):
        return (
            f"a branch does `{ast.unparse(statement).splitlines()[0]}` before the common call, "
            "which would then run on both paths"
        )
    return None


def _differing_arguments_problem(
    pairs: Sequence[Tuple[ast.expr, ast.expr]],
    node: ast.If,
    block: Sequence[ast.stmt],
    ctx: FunctionContext,
) -> Optional[str]:
    bound = {  # the calls end the branches: a name a branch binds is read after it
        name
        for statement in (*node.body, *node.orelse)
        for sub in walk(statement)
        for name in names_bound_by(sub)
    }
    dtypes = _dtypes(node.test, node, ctx).rebinding(bound)
    for value in (value for pair in pairs for value in pair):
        if isinstance(value, ast.Constant) and value.value is None:
            return "the calls differ in an argument that is None on one path"
        if ctx.values.kind(value) is Kind.STATIC:
            return f"the calls differ in `{ast.unparse(value)}`, which is not a tensor"
        problem = impurity(value, ctx.values, ctx.symbols, dtypes=dtypes) or _absent_read(
            value, node, block, ctx
        )
        if problem:
            return problem
    return None


def _selected_in_place_problem(
    call: ast.Call, pairs: Sequence[Tuple[ast.expr, ast.expr]], ctx: FunctionContext
) -> Optional[str]:
    stored = {
        value.value
        for value in call.args
        if isinstance(value, ast.Constant) and isinstance(value.value, str)
    }
    selected = {
        node.attr
        for value in (value for pair in pairs for value in pair)
        for node in walk(value)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
    }
    for name in sorted(stored | selected):
        line = _in_place_write(name, ctx.symbols.tree)
        if line:
            return f"`{name}` is modified in place (line {line}); the selection is new"
    return None


def _kept_argument_problem(
    node: ast.If, call: ast.Call, pairs: Sequence[Tuple[ast.expr, ast.expr]], ctx: FunctionContext
) -> Optional[str]:
    """A differing argument that may be a tensor someone else holds, handed to a call that may
    keep it (``states.append(x)``, ``self.register_buffer("f", self.short_factor)``): the
    original kept that very tensor, the selection keeps a new one. torch functions keep
    nothing; a local read again after the ``if`` is held by the code that reads it."""
    qualified = ctx.symbols.qualified_name(call.func) or ""
    if is_torch_function(qualified):
        return None
    for value in (value for pair in pairs for value in pair):
        read_later = isinstance(value, ast.Name) and _reads_outside(value.id, node, ctx)
        if may_alias(value, ctx) and (read_later or hands_on_caller_tensor(value, node, ctx)):
            return (
                f"`{ast.unparse(call.func)}()` may keep `{ast.unparse(value)}`, an existing "
                "tensor on one path; torch.where hands it a new one"
            )
    return None


def _in_place_write(attribute: str, tree: ast.Module) -> Optional[int]:
    """The line of an in-place method call (``x.attribute.copy_(...)``) on ``attribute``."""
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            method = node.func.attr
            if isinstance(receiver, ast.Attribute) and receiver.attr == attribute:
                if method.endswith("_") and not method.startswith("_"):
                    return node.lineno
    return None


# ---------------------------------------------------------------------------- assignments
def _assign_plan(
    node: ast.If,
    block: Sequence[ast.stmt],
    static: Sequence[ast.expr],
    tensor_part: Sequence[ast.expr],
    ctx: FunctionContext,
) -> Planned[AssignSelection]:
    sides: List[Assigned] = []
    for branch in (node.body, node.orelse):
        assigned, problem = _branch_assignments(branch)
        if assigned is None:
            return declined(problem or "")
        sides.append(assigned)
    problem = _scope_problem(sides, ctx) or shared_line_problem(node, ctx)
    if problem:
        return declined(problem)
    condition_reads = _names_read(ast.BoolOp(op=ast.And(), values=list(tensor_part)))
    results: List[str] = []
    hoisted: List[FrozenSet[int]] = []
    dtypes = _dtypes(node.test, node, ctx)  # once for both branches
    for side, other_branch in ((0, node.orelse), (1, node.body)):
        split, problem = _split_branch(
            sides, side, other_branch, condition_reads, node, block, dtypes, ctx
        )
        if split is None:
            return declined(problem or "")
        hoisted.append(split[0])
        results += [name for name in split[1] if name not in results]
    if not results:
        return declined("the branch computes nothing that is used afterwards")
    problem = _result_values_problem(results, sides, node, block, ctx) or _identity_problem(
        results, sides, node, ctx
    )
    if problem:
        return declined(problem)
    setups = [
        {name: side[name] for index, name in enumerate(side) if index in hoisted_indices}
        for side, hoisted_indices in zip(sides, hoisted)
    ]
    kept = {name: ast.Name(id=name, ctx=ast.Load()) for name in results}
    pairs = [(sides[0].get(name, kept[name]), sides[1].get(name, kept[name])) for name in results]
    training = gradient_problem(pairs, ctx, setups)
    shown = shown_problem(results, ctx)
    values = [v for pair in pairs for v in pair]
    inputs = _grad_inputs(shown or training, values, setups, node, block, ctx)
    return AssignSelection(
        static_conjuncts=len(static),
        results=tuple(results),
        hoisted_body=hoisted[0],
        hoisted_orelse=hoisted[1],
        condition_temp=(
            len(results) > 1
            or bool(condition_reads & set(results))
            or _condition_acts(tensor_part, hoisted, ctx)
        ),
        kept_branch=shown,
        training_problem=training,
        grad_inputs=inputs,
    ), None


def _scope_problem(sides: Sequence[Assigned], ctx: FunctionContext) -> Optional[str]:
    """Why a name the branches bind cannot be bound unconditionally: it is ``global`` or
    ``nonlocal`` (the binding outlives the call), or a ``del`` unbinds it (the kept value of
    the path that skips the branch may not exist)."""
    function = ctx.region.function
    problem = _frame_problem(ctx)
    if problem:
        return problem
    outer, deleted = outer_names(function), deleted_names(function)
    for name in sorted({name for side in sides for name in side}):
        if name in outer:
            return f"`{name}` is a global or nonlocal name: the selection would bind it always"
        if name in deleted:
            return (
                f"`{name}` is deleted by a `del`: the path that skips the branch may have no "
                "value"
            )
    return None


#: Calls that show a function's local names: ``locals()``, ``vars()``, its frame.
_FRAME_READS = frozenset({
    "locals", "vars", "sys._getframe", "inspect.currentframe", "inspect.stack",
})


def _frame_problem(ctx: FunctionContext) -> Optional[str]:
    """Why the fix may show: the function reads its own local names (``locals()``, its frame),
    where the fix may bind names the original did not."""
    for node in walk(ctx.region.function):
        if not isinstance(node, ast.Call) or (node.args and getattr(node.func, "id", "") == "vars"):
            continue
        name = ctx.symbols.qualified_name(node.func) or getattr(node.func, "id", "")
        if name in _FRAME_READS:
            return (
                f"the function reads its own frame (`{ast.unparse(node)}`), where the fix may "
                "bind names the original did not (the condition's temporary, moved statements)"
            )
    return None


def _condition_acts(
    tensor_part: Sequence[ast.expr], hoisted: Sequence[FrozenSet[int]], ctx: FunctionContext
) -> bool:
    """Whether hoisted setups must wait for the condition: it binds a name (``:=``) or has an
    effect (``self.steps.add_(1) > 1``) that they may see."""
    if not any(hoisted):
        return False
    return any(impurity(operand, ctx.values, ctx.symbols) for operand in tensor_part)


def _branch_assignments(branch: Sequence[ast.stmt]) -> Tuple[Optional[Assigned], Optional[str]]:
    """The ``name = value`` statements of a branch, or why it holds something else."""
    assigned: Assigned = {}
    for statement in branch:
        target = statement.targets[0] if isinstance(statement, ast.Assign) else None
        if isinstance(statement, ast.AnnAssign):
            target = statement.target if statement.value is not None else None
        if isinstance(statement, ast.Assign) and len(statement.targets) != 1:
            target = None
        if isinstance(target, ast.Name):
            name, value = target.id, getattr(statement, "value")
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            stored = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            return None, f"it assigns `{ast.unparse(stored)}`, which is not a plain local name"
        elif isinstance(statement, ast.AugAssign):
            return None, f"it updates `{ast.unparse(statement.target)}` in place"
        else:
            return None, f"a branch contains `{ast.unparse(statement).splitlines()[0]}`"
        if name in assigned:
            return None, f"`{name}` is assigned twice in one branch"
        assigned[name] = value
    return assigned, None


def _split_branch(
    sides: Sequence[Assigned],
    side: int,
    other_branch: Sequence[ast.stmt],
    condition_reads: Set[str],
    node: ast.If,
    block: Sequence[ast.stmt],
    dtypes: Dtypes,
    ctx: FunctionContext,
) -> Tuple[Optional[Tuple[FrozenSet[int], List[str]]], Optional[str]]:
    """The setup statements of one branch (by index) and its result names, or why not;
    ``dtypes``: what is known of the dtypes where the ``if`` starts (``_dtypes``).

    A setup value used only inside its own branch runs unconditionally before the selection: it
    must not be read elsewhere, nor read this branch's other results.
    """
    both = set(sides[0]) & set(sides[1])
    other_reads = set().union(*(_names_read(s) for s in other_branch))
    setups: Set[str] = set()
    earlier: Set[str] = set()
    hoisted: Set[int] = set()
    results: List[str] = []
    # the selection computes the test first: an extremum it takes of a name that the branch
    # has not bound again yet cannot fail in a value (`if x.max() > 1: x = x / x.max()`)
    taken = extrema_taken(node.test, ctx.symbols)
    for index, (name, value) in enumerate(sides[side].items()):
        assigned_before = set(list(sides[side])[:index])
        problem = impurity(
            value,
            ctx.values,
            ctx.symbols,
            extrema_outside(taken, assigned_before),
            dtypes=dtypes.rebinding(assigned_before),
        ) or _absent_read(value, node, block, ctx, assigned_before)
        if problem:
            return None, problem
        if isinstance(value, ast.Constant) and value.value is None:
            return None, f"`{name}` is None on one path"
        confined = (
            name not in both | other_reads | condition_reads
            and not _reads_outside(name, node, ctx)
        )
        earlier_results = _names_read(value) & (earlier - setups)
        earlier.add(name)
        if confined and not earlier_results:
            setups.add(name)
            hoisted.add(index)
        elif earlier_results:
            return None, (
                f"`{name}` reads `{sorted(earlier_results)[0]}`, "
                "assigned earlier in the same branch and used outside it"
            )
        elif name not in results:
            results.append(name)
    return (frozenset(hoisted), results), None


def _result_values_problem(
    results: Sequence[str],
    sides: Sequence[Assigned],
    node: ast.If,
    block: Sequence[ast.stmt],
    ctx: FunctionContext,
) -> Optional[str]:
    """Each result must be a tensor on both paths, and bound on the path that skips it."""
    for name in results:
        for value in (side.get(name) for side in sides):
            if value is not None and ctx.values.kind(value) is Kind.STATIC:
                # the helper would branch in Python as before: nothing to gain, say so instead
                plain = ast.unparse(value)
                return f"`{name}` is the Python value `{plain}` on one path, not a tensor"
        if not all(name in side for side in sides) and not _bound_before(name, node, block, ctx):
            return f"`{name}` is not defined on both paths"
    return None


def _identity_problem(
    results: Sequence[str], sides: Sequence[Assigned], node: ast.stmt, ctx: FunctionContext
) -> Optional[str]:
    """Why a selected result would be told apart from the tensor the original binds."""
    aliased = set(results) | {
        value.id for side in sides for value in side.values() if isinstance(value, ast.Name)
    }
    for name in sorted(aliased):
        if name in ctx.mutations:
            return (
                f"`{name}` is mutated in place (line {ctx.mutations[name][0]}); "
                "torch.where returns a new tensor, not the same one"
            )
    problem = aliasing_problem(results, sides, node, ctx) or layout_problem(
        [(sides[0].get(name), sides[1].get(name)) for name in results]
    )
    if problem:
        return problem
    kept = [n for n in results if any(may_alias(side[n], ctx) for side in sides if n in side)]
    line = _identity_read(kept, node, ctx)
    if line is not None:
        return (
            f"line {line} tells tensors apart by identity or storage (`is`, `data_ptr()`), and "
            "one path keeps an existing tensor where torch.where returns a new one"
        )
    # Results assigned later must not read results assigned before them (they would see new values).
    for index, name in enumerate(results):
        for value in (side.get(name) for side in sides):
            if value is not None and _names_read(value) & set(results[:index]):
                return f"`{name}` reads a name that the same `if` reassigns"
    return None


#: What tells a tensor from another with the same values: its storage, its identity.
_IDENTITY_READS = frozenset({
    "data_ptr", "untyped_storage", "storage", "storage_offset", "_base", "_cdata", "_is_view",
    "is_set_to", "_version",
})


def _identity_read(names: Sequence[str], node: ast.stmt, ctx: FunctionContext) -> Optional[int]:
    """A line, after ``node`` or in a loop around it, that reads the identity or storage of one
    of ``names`` or of a name bound to it after ``node``: ``y is h``, ``id(y)``,
    ``y.data_ptr()``, ``y.untyped_storage()``. (A helper that compares its arguments so, or a
    set or dict keyed by the tensor, is not seen.)"""
    if not names:
        return None
    end = node.end_lineno or node.lineno
    around = {id(sub) for loop in loops_around(ctx.region.function, node) for sub in walk(loop)}
    wanted = {alias for name in names for alias in aliases_after(name, end, ctx)}  # `z = y`
    for sub in walk(ctx.region.function):
        if getattr(sub, "lineno", 0) <= end and id(sub) not in around:
            continue
        identity = isinstance(sub, ast.Compare) and any(
            isinstance(o, (ast.Is, ast.IsNot)) for o in sub.ops
        )
        if isinstance(sub, ast.Compare) and identity:
            operands = [sub.left, *sub.comparators]
        elif isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "id":
            operands = list(sub.args)
        elif isinstance(sub, ast.Attribute) and sub.attr in _IDENTITY_READS:
            operands = [sub.value]
        elif isinstance(sub, ast.Call) and getattr(sub.func, "attr", "") in _IDENTITY_READS:
            operands = list(sub.args)  # `torch.Tensor.data_ptr(y)`
        else:
            continue
        if any(isinstance(o, ast.Name) and o.id in wanted for o in operands):
            return getattr(sub, "lineno", None)
    return None


def _names_read(node: ast.AST) -> Set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _reads_outside(name: str, node: ast.If, ctx: FunctionContext) -> bool:
    """Whether a read of ``name`` outside the ``if`` statement may see a value bound inside it.

    A read that the function's own code rebinds the name before, on every path (each fp16
    clamp of a block assigns its own ``clamp_value`` first), does not; reads in nested
    functions and lambdas always count.
    """
    inside = {id(n) for n in walk(node)}
    nested = {
        id(n)
        for scope in walk(ctx.region.function)
        if scope is not ctx.region.function
        and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for n in walk(scope)
    }
    for sub in walk(ctx.region.function):
        if not (isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load)):
            continue
        if id(sub) in inside:
            continue
        if id(sub) in nested:
            return True
        bindings, _ = reaching_bindings(name, sub, ctx)
        if any(id(binding) in inside for binding in bindings):
            return True
    return False


def _assigns(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` binds ``name`` on every path through it that goes on."""
    if isinstance(statement, ast.Assign):
        return any(
            isinstance(n, ast.Name) and n.id == name
            for t in statement.targets
            for n in walk(t)
        )
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return (
            getattr(statement, "value", None) is not None
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        )
    if isinstance(statement, ast.If):
        return _block_assigns(statement.body, name) and _block_assigns(statement.orelse, name)
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return _block_assigns(statement.body, name)
    return False


def _block_assigns(block: Sequence[ast.stmt], name: str) -> bool:
    return any(
        _assigns(statement, name) or isinstance(statement, (ast.Return, ast.Raise))
        for statement in block
    )


def _grad_inputs(
    kept: Optional[str],
    values: Sequence[ast.expr],
    setups: Sequence[Assigned],
    node: ast.stmt,
    block: Sequence[ast.stmt],
    ctx: FunctionContext,
) -> Tuple[str, ...]:
    """What the test of an ``if`` (or of the conditional expression of ``node``) kept while
    autograd records (``kept``: why; None: not kept)
    is given: ``gradient_inputs`` of the sides ``values``, a local counting as read safely
    where it surely has a value when ``node`` starts."""
    if not kept:
        return ()
    return gradient_inputs(values, setups, lambda name: _bound(name, node, block, ctx), ctx)


def _bound(name: str, node: ast.stmt, block: Sequence[ast.stmt], ctx: FunctionContext) -> bool:
    """Whether ``name`` surely has a value where ``node`` (a statement of ``block``) starts."""
    return not maybe_unbound(name, node, ctx) or _bound_before(name, node, block, ctx)


def _absent_read(
    value: ast.expr,
    node: ast.stmt,
    block: Sequence[ast.stmt],
    ctx: FunctionContext,
    assigned: AbstractSet[str] = frozenset(),
    test: Optional[ast.expr] = None,
) -> Optional[str]:
    """Why computing ``value`` at ``node`` where the original did not may read what is not
    there: a local bound on some paths only (deleted by a ``del``, unbound by ``except ... as``;
    ``UnboundLocalError``), a global the module may not have bound, or a value that may be None
    (a parameter that defaults to None, ``self.gamma = ... if scale else None``) that the test
    does not rule out. ``assigned``: names the branch binds before ``value``; those the test
    (``test``, else ``node``'s) binds (``:=``, computed first) have a value too."""
    function = ctx.region.function
    test = node.test if isinstance(node, ast.If) else test
    tested = {s.target.id for s in walk(test) if isinstance(s, ast.NamedExpr)} if test else set()
    unbinding = deleted_names(function) | {
        sub.name for sub in walk(function) if isinstance(sub, ast.ExceptHandler) and sub.name
    }
    outer = outer_names(function)
    for name in sorted(_names_read(value) - set(assigned) - tested):
        if name in outer and name not in ctx.symbols.assignments:
            return f"`{name}` is a global that the module may not have bound"
        if name in ctx.local_names and (name in unbinding or not _bound(name, node, block, ctx)):
            return (
                f"`{name}` may have no value here, and reading it on the path that did not "
                "read it fails"
            )
    guarded = _ruled_out_none(test, ctx) if test is not None else set()
    compared = _compared_with_is(value)  # `x is None` reads no value of `x`
    methods = {  # `self.proj.weight.sum()`: the method is judged with the call
        id(sub.func) for sub in walk(value)
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
        and self_attribute(sub.func) is None
    }
    for sub in walk(value):
        if id(sub) in compared or id(sub) in methods:
            continue
        if not isinstance(sub, (ast.Name, ast.Attribute)) or not isinstance(sub.ctx, ast.Load):
            continue
        if isinstance(sub, ast.Attribute) and not self_chain(sub):
            continue
        shown = ast.unparse(sub)
        if shown not in guarded and getattr(sub, "id", "") not in assigned and may_be_none(
            sub, node, ctx, lambda name: passed_none(name, ctx)
        ):
            missing = " or not be there" if isinstance(sub, ast.Attribute) else ""
            return (
                f"`{shown}` may be None{missing}, and computing with it on the path that did "
                "not fails"
            )
    called = {id(sub.func) for sub in walk(value) if isinstance(sub, ast.Call)}
    for sub in walk(value):
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load):
            if id(sub) not in called and unknown_attribute(sub, ctx):
                return (
                    f"`{ast.unparse(sub)}` is an attribute of an object the analysis does not "
                    "know: on the path that did not read it, it may be None, missing or a "
                    "property"
                )
    return None


def _compared_with_is(node: ast.expr) -> Set[int]:
    """The ids of the operands of the ``is``/``is not`` comparisons in ``node``."""
    return {
        id(operand)
        for sub in walk(node)
        if isinstance(sub, ast.Compare) and any(isinstance(o, (ast.Is, ast.IsNot)) for o in sub.ops)
        for operand in (sub.left, *sub.comparators)
    }


def _fails_on_none(operand: ast.expr, parent: Optional[ast.AST]) -> bool:
    """Whether computing ``parent`` with ``operand`` None raises: arithmetic (``x + bias``), a
    sign, an attribute or an item of it (``bias.sum()``, ``bias[0]``), an ordering comparison
    (``h.max() > self.limit``: tensors, numbers and numpy's values raise ``TypeError`` against
    None); not an equality (``bias == 0`` is False), ``not``, nor a call that may take None
    (``F.linear(x, w, bias)``)."""
    if isinstance(parent, ast.BinOp):
        return True
    if isinstance(parent, ast.Compare):
        return all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in parent.ops)
    if isinstance(parent, ast.UnaryOp):
        return not isinstance(parent.op, ast.Not)
    return isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is operand


def _ruled_out_none(test: ast.expr, ctx: FunctionContext) -> Set[str]:
    """The names and attributes that cannot be None once ``test`` has held or been computed:
    those its tensor part computes with so that None would raise (``_fails_on_none``; outside
    conditional expressions and ``and``/``or``, which may skip them), and those a static
    conjunct tests (``mask is not None``, ``self.gamma``)."""
    static, tensor_part = split_condition(test, ctx)
    skipped = {  # what `a if c else b` and `a or b` may not compute with
        id(inner)
        for part in tensor_part
        for sub in walk(part)
        if isinstance(sub, (ast.IfExp, ast.BoolOp))
        for inner in walk(sub)
    }
    parents = {
        id(child): sub
        for part in tensor_part
        for sub in walk(part)
        for child in ast.iter_child_nodes(sub)
    }
    found = {
        ast.unparse(sub)
        for part in tensor_part
        for sub in walk(part)
        if isinstance(sub, (ast.Name, ast.Attribute))
        and id(sub) not in skipped
        and _fails_on_none(sub, parents.get(id(sub)))
    }
    for conjunct in static:
        if isinstance(conjunct, (ast.Name, ast.Attribute)):
            found.add(ast.unparse(conjunct))
        elif (
            isinstance(conjunct, ast.Compare)
            and len(conjunct.ops) == 1
            and isinstance(conjunct.ops[0], ast.IsNot)
            and isinstance(conjunct.comparators[0], ast.Constant)
            and conjunct.comparators[0].value is None
        ):
            found.add(ast.unparse(conjunct.left))
    return found


def _bound_before(
    name: str, node: ast.stmt, block: Sequence[ast.stmt], ctx: FunctionContext
) -> bool:
    """Whether ``name`` surely has a value when the ``if`` starts (parameter or earlier
    assignment)."""
    if ctx.values.is_parameter(name):
        return True
    function = ctx.region.function
    earlier = list(block[: block.index(node)]) + [
        s for s in function.body if (s.end_lineno or s.lineno) < node.lineno
    ]
    return any(_assigns(statement, name) for statement in earlier)
