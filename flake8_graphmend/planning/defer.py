"""[Defer]: may a print, logger or warnings.warn call go through a deferred helper?

The helper the fixer emits makes the call at the same point of the compiled graph (an ordered
custom op, ``fixers/helpers.py``). Module-level names are written into the helper; every other
argument is passed to it and must be a value the op carries.

An ``if`` on a tensor whose branches only make such calls is deferred as a whole
(``DeferIfPlan``): one helper receives the operands of its tests and the calls' arguments, and
runs the original ``if``/``elif``/``else`` on them inside the graph.
"""

from __future__ import annotations

import ast
import builtins
import functools
import io
import itertools
import re
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

from ..analysis.index import assignment_targets, node_memo, parent_map, root_name, run_nodes, walk
from ..analysis.inplace import short_name
from ..analysis.purity import impurity
from ..analysis.symbols import ClassInfo, FunctionNode, ModuleSymbols, is_own_class, self_attribute
from ..analysis.values import Kind, is_size
from . import Plan, Planned, Position, declined, formatted_values, position
from .aliasing import escape_after, hands_on_caller_tensor, may_alias, reaching_bindings
from .conditions import is_elif, shared_line_problem, split_condition
from .items import ELEMENTWISE_OPERATORS, is_zero_dim, item_of
from .module_state import callees_in_file, stored_roots
from .per_call import (
    PASSED_CONSTANTS, changes_between_calls, class_name_of_self, per_call_problem, python_scalar,
)
from .totals import (
    computed_by,
    evaluated_parts,
    maybe_unbound,
    metadata_receiver,
    names_read,
    number_attribute,
    plain_argument,
    self_configuration,
    tensor_metadata,
    total_test,
    unsure_names,
)
from .callers import reached_from, run_by_callers
from .trap import rebuilt_message_problem, state_change_problem

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: Logger methods whose records are attributed through ``stacklevel`` (the stdlib ones).
_STDLIB_LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "fatal", "log"}
#: Literal types the deferred call carries under compile (others are written into the helper).

_CONTAINERS = {"tuple", "list", "dict", "set", "frozenset", "sorted", "zip", "enumerate", "range"}


@dataclass(frozen=True)
class DeferPlan(Plan):
    """The call becomes a call of a registered helper that makes it."""

    ordered = True

    #: The callee as written (``logger.warning``, ``warnings.warn``, ``print``).
    callee: str
    #: Positional arguments written into the helper (module-level names, literals the op
    #: cannot carry); the others are passed to it.
    baked_args: FrozenSet[int]
    #: Positional arguments passed as ``str(value)``: what ``print`` writes for the metadata
    #: of a tensor that is not a name (``x.view(-1).shape``).
    str_args: FrozenSet[int]
    #: Positional arguments ``t.item()`` of a one-element ``t``: ``t`` is passed, and the
    #: helper takes the number (``item_receiver``), so the value need not leave the graph.
    item_args: FrozenSet[int]
    #: Positional arguments ``t.shape``, ``t.size()``, ``t.dtype``, ``t.device`` of a name
    #: ``t``: ``t`` is passed, and the helper reads the same metadata, so the record (or the
    #: printed text) holds the very ``torch.Size`` (or dtype, device), and the graph does not
    #: fix the sizes. A ``t`` that the op cannot carry (not a tensor) makes the helper call as
    #: written.
    metadata_args: FrozenSet[int]
    #: The ``stacklevel`` the helper's call passes, counting the helper's own frame (None: the
    #: callee takes none). Run by the graph, where no caller frame is left, the helper passes
    #: 1: records and warnings are made from its own line, in the caller's module.
    stacklevel: Optional[int]
    #: A helper of its own, never shared with another call: under compile the line the warning
    #: is made from stands for the call's, for the once-per-location filter.
    own_helper: bool
    #: Positional arguments that are f-strings formatting the numbers of tensors
    #: (``f"loss {loss:.4f}"``, ``f"{x.sum().item()}"``) or values that change between calls
    #: (``f"length {x.shape[1]}"``): the helper builds them. Each of
    #: their formatted values is passed: those of ``numbers`` (by argument and value index) as
    #: the tensor, which the helper formats as the original did (``item_numbers``: the tensor
    #: of ``t.item()``, formatted as ``t.item()``), the others as their own text.
    formatted_args: FrozenSet[int] = frozenset()
    numbers: FrozenSet[Tuple[int, int]] = frozenset()
    item_numbers: FrozenSet[Tuple[int, int]] = frozenset()
    #: Formatted values passed as they are (sizes, ints that change between calls), which the
    #: helper formats: a text made in the graph would fix the value there, so that each new
    #: one compiled the graph again.
    passed_values: FrozenSet[Tuple[int, int]] = frozenset()
    #: Where the ``.item()`` calls of ``item_args`` and ``item_numbers`` are (their GM401 is
    #: fixed with the call).
    items: FrozenSet[Position] = frozenset()

    def covers(self) -> FrozenSet[Position]:
        return self.items


def defer_plan(
    code: str, node: ast.Call, statement: ast.stmt, ctx: FunctionContext
) -> Planned[DeferPlan]:
    """Whether [Defer] may rewrite the call ``node`` (reported as ``code``)."""
    problem = (
        _call_form_problem(code, node, statement, ctx)
        or _read_state_problem(node, ctx)
        or _output_code_problem(ctx)
        or _keywords_problem(code, node, ctx)
        or _logger_problem(code, node, ctx)
        or (state_change_problem(statement, ctx, _RAISING_WARNING) if code == "GM103" else None)
        or (_attributed_warning_problem(node) if code == "GM103" else None)
    )
    if problem:
        return declined(problem)
    baked: List[int] = []
    printed: List[int] = []
    items: List[int] = []
    metadata: List[int] = []
    formatted: Dict[int, Dict[int, str]] = {}
    for index, arg in enumerate(node.args):
        if _fixed_in_source(arg, ctx):
            baked.append(index)
            continue
        receiver = item_receiver(arg, ctx)
        if receiver is not None and _passed_problem(receiver, ctx) is None:
            items.append(index)
            continue
        if isinstance(arg, ast.JoinedStr) and (
            _formats_tensors(arg, ctx) or _formats_changing_values(arg, ctx)
        ):
            roles, problem = _formatted_roles(arg, ctx)
            if roles is None:
                return declined(problem or "")
            formatted[index] = roles
            continue
        # metadata (a torch.Size, dtype or device) is not what the op carries: the tensor is
        # passed (a text made in the graph would fix its sizes there, and a new size would
        # compile it again), and the helper reads it
        if tensor_metadata(arg) and _metadata_of_a_name(arg, ctx):
            metadata.append(index)
        elif code == "GM101" and tensor_metadata(arg):
            printed.append(index)  # print writes str(arg): pass that text instead
        else:
            problem = (
                _passed_problem(arg, ctx)
                or _python_value_problem(arg, ctx)
                or per_call_problem(arg, ctx)
                or (_kept_in_record_problem(arg, node, ctx) if code == "GM102" else None)
            )
            if problem:
                return declined(problem)
    plan = DeferPlan(
        callee=ast.unparse(node.func),
        baked_args=frozenset(baked),
        str_args=frozenset(printed),
        item_args=frozenset(items),
        metadata_args=frozenset(metadata),
        stacklevel=_helper_stacklevel(code, node),
        own_helper=code == "GM103",
        formatted_args=frozenset(formatted),
        numbers=frozenset(
            (i, j) for i, roles in formatted.items() for j, role in roles.items()
            if role in (_ITEM, _NUMBER)
        ),
        item_numbers=frozenset(
            (i, j) for i, roles in formatted.items() for j, role in roles.items() if role == _ITEM
        ),
        passed_values=frozenset(
            (i, j) for i, roles in formatted.items() for j, role in roles.items() if role == _VALUE
        ),
        items=frozenset(
            [position(node.args[index], ctx) for index in items]
            + [position(value, ctx) for value in _taken_items(node, formatted)]
        ),
    )
    return plan, None


#: How the helper gets a formatted value of a message it builds (``_formatted_roles``).
_ITEM, _NUMBER, _VALUE = "item", "number", "value"


def _formats_tensors(message: ast.JoinedStr, ctx: FunctionContext) -> bool:
    return any(
        ctx.values.kind(piece.value) in (Kind.TENSOR, Kind.DATA)
        for piece in formatted_values(message)
    )


#: A format spec that formats an int, a float and a bool alike without failing: fill and
#: align, sign, ``z``, ``#``, ``0``, width, grouping, and a precision only with one of the
#: types ``e``, ``f``, ``g`` (upper case too); no ``d``, ``%`` or ``n`` (a complex fails there).
_NUMBER_SPEC = re.compile(
    r"(?:.?[<>=^])?[+\- ]?z?#?0?\d*[,_]?(?:(?:\.\d+)?[eEfFgG])?\Z", re.DOTALL
)


def _formatted_roles(
    message: ast.JoinedStr, ctx: FunctionContext
) -> Tuple[Optional[Dict[int, str]], Optional[str]]:
    """How the helper gets each formatted value of ``message`` that it does not get as its own
    text: a tensor's number (``_ITEM``: ``t.item()``; ``_NUMBER``: a one-element tensor with a
    format spec, which formats its number) or a value that changes between calls
    (``_VALUE``); or why the helper cannot build the message. The other values must be plain
    Python values that stay the same (passed as their own text)."""
    problem = rebuilt_message_problem(message, ctx)
    if problem:
        return None, problem
    if not _one_literal(message, ctx):
        return None, "the message is an implicit concatenation of string literals"
    roles: Dict[int, str] = {}
    for index, piece in enumerate(formatted_values(message)):
        value, spec = piece.value, piece.format_spec
        if ctx.values.kind(value) not in (Kind.TENSOR, Kind.DATA):
            problem = _passed_problem(ast.JoinedStr(values=[piece]), ctx) or per_call_problem(
                value, ctx
            )
            if problem:
                return None, problem
            if changes_between_calls(value, ctx):
                roles[index] = _VALUE
            continue
        parts = getattr(spec, "values", ())
        text = "".join(str(part.value) for part in parts if isinstance(part, ast.Constant))
        if not _NUMBER_SPEC.match(text):
            return None, (
                f"the message formats `{ast.unparse(value)}` with the spec `{text}`, which "
                "may fail for some numbers: under compile it would fail inside the graph"
            )
        receiver, tensor = item_receiver(value, ctx), item_of(value)
        if receiver is not None:
            roles[index] = _ITEM
        elif (
            spec is not None
            and piece.conversion == -1
            and ctx.values.kind(value) is Kind.TENSOR
            and is_zero_dim(value, ctx)
        ):
            roles[index] = _NUMBER
        elif tensor is not None:
            return None, (
                f"the message formats `{ast.unparse(value)}`, and "
                f"`{ast.unparse(tensor)}` is not known to hold one element"
            )
        else:
            return None, (
                f"the message formats tensor `{ast.unparse(value)}`: only the number of a "
                "tensor known to hold one element, with a format spec (`{loss:.4f}`), or of "
                "`t.item()`, is formatted the same by the deferred call"
            )
        problem = _passed_problem(receiver if receiver is not None else value, ctx)
        if problem:
            return None, problem
    return roles, None


def _formats_changing_values(message: ast.JoinedStr, ctx: FunctionContext) -> bool:
    """Whether the helper should build ``message`` (it formats values that change between
    calls). One written as several literals (``f"..." f"..."``) it cannot build: that is
    made in the graph as before, and a new value compiles it again (documented)."""
    return _one_literal(message, ctx) and any(
        changes_between_calls(piece.value, ctx) for piece in formatted_values(message)
    )


def _one_literal(message: ast.JoinedStr, ctx: FunctionContext) -> bool:
    """Whether ``message`` is written as one f-string literal (not ``"a" f"{b}"``), with no
    other string literal inside it."""
    source = ast.get_source_segment("\n".join(ctx.lines), message) or ""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    starts = (tokenize.STRING, getattr(tokenize, "FSTRING_START", tokenize.STRING))
    return sum(token.type in starts for token in tokens) == 1


def _taken_items(node: ast.Call, formatted: Dict[int, Dict[int, str]]) -> List[ast.expr]:
    """The ``t.item()`` values of the f-strings the helper builds."""
    return [
        formatted_values(message)[j].value
        for i, roles in formatted.items()
        for j, role in roles.items()
        if role == _ITEM
        for message in [node.args[i]]
        if isinstance(message, ast.JoinedStr)
    ]


def _may_be_new(name: ast.Name, at: ast.AST, ctx: FunctionContext) -> bool:
    """Whether the local ``name`` may hold, at ``at``, a tensor the function made (not only one
    the caller or the module holds): a binding that reaches it may give anything but a name
    or ``self``'s attribute."""
    if ctx.values.is_parameter(name.id):
        bindings, on_entry = reaching_bindings(name.id, at, ctx)
        if on_entry and not bindings:
            return False
    else:
        bindings = reaching_bindings(name.id, at, ctx)[0]
    return any(
        not isinstance(value, ast.Name) and self_attribute(value) is None
        for value in (getattr(binding, "value", None) for binding in bindings)
        if value is not None
    ) or any(getattr(binding, "value", None) is None for binding in bindings)


def _kept_in_record_problem(arg: ast.expr, node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """A tensor that a log record keeps (its ``%s`` argument, or its message) and that may be
    updated in place after the call: by this function, or, where it is the caller's or the
    module's (an input, ``self.buffer``) or leaves the function (returned, stored), by other
    code. A handler that formats records later (a ``MemoryHandler``, pytest's ``caplog``)
    shows the update, and under torch.compile the graph hands the op the tensor as it was at
    the call."""
    if (
        ctx.values.kind(arg) is Kind.STATIC
        or is_size(arg)  # `h.numel()` of a parameter `h` not known to be a tensor
        or number_attribute(arg, ctx)
        or not may_alias(arg, ctx)
    ):
        return None  # a number or a string, or a new tensor only the record holds
    shown = ast.unparse(arg)
    later = "a handler that formats records later would show an update made after the call"
    escape = escape_after(arg.id, node, ctx) if isinstance(arg, ast.Name) else None
    if hands_on_caller_tensor(arg, node, ctx):
        # the graph hands the op an input as it is, unless an update came first
        root = root_name(arg)
        plain = isinstance(arg, ast.Name) or self_attribute(arg) is not None
        before = [line for line in ctx.mutations.get(root or "", ()) if line < node.lineno]
        if not plain or before:
            return (
                f"the log record keeps `{shown}`, a tensor the caller or the module holds "
                f"{f'and line {before[0]} updates first' if before else 'or a view of one'}: "
                f"{later}, which the compiled graph cannot pass on"
            )
        if escape is None or not (isinstance(arg, ast.Name) and _may_be_new(arg, node, ctx)):
            return None
        # a local that may also hold a tensor the function made (`y = helper(x)`) and that
        # leaves the function: as below
    if not isinstance(arg, ast.Name):
        return None
    if escape is not None:
        return (
            f"the log record keeps `{shown}`, which line {escape} hands on: {later}, which "
            "the compiled graph cannot pass on"
        )
    # in a loop around the call, an update on an earlier line of it follows the next call
    loops = _loop_spans(node, ctx)
    after = [
        line for line in ctx.mutations.get(arg.id, ())
        if line > node.lineno or any(start <= line <= end for start, end in loops)
    ]
    if not after:
        return None
    return (
        f"the log record keeps `{arg.id}`, which line {after[0]} updates in place: a handler "
        "that formats records later would show the update, which the compiled graph cannot "
        "pass on"
    )


def _attributed_warning_problem(node: ast.Call) -> Optional[str]:
    """A warning attributed to a caller (``stacklevel`` of 2 or more): the graph has no caller
    frame to attribute it to, and filters of the caller's module (Python's own shows
    DeprecationWarning in ``__main__``) or the once-per-location filter over several callers
    would act otherwise on the helper's line."""
    level = _stacklevel(node)
    if level is None or level <= 1:
        return None
    return (
        f"`stacklevel={level}` attributes the warning to a caller, which the compiled graph "
        "cannot name: the filters of the caller's module, and the once-per-location filter "
        "over several callers, would act on the helper's line instead"
    )


def _call_form_problem(
    code: str, node: ast.Call, statement: ast.stmt, ctx: FunctionContext
) -> Optional[str]:
    """Why the call as a whole cannot be deferred (its value is used, it unpacks, ...)."""
    if not (isinstance(statement, ast.Expr) and statement.value is node):
        return "the call's value is used"
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        return "it unpacks *args or **kwargs"
    func = node.func
    if not isinstance(func, ast.Attribute) or code != "GM102":
        if not _is_module_global(func, ctx):  # `import warnings` or a `print` of the function
            return (
                f"`{ast.unparse(func)}` is bound in the function or around it, not the "
                "module-level name the helper can reach"
            )
        return None
    if not _is_module_global(func.value, ctx):
        return (
            f"the logger `{ast.unparse(func.value)}` is not a module-level name "
            "the helper can reach"
        )
    if func.attr == "isEnabledFor":
        return "its result is used to decide what runs"
    if func.attr == "exception" or any(
        k.arg in ("exc_info", "stack_info")
        and not (isinstance(k.value, ast.Constant) and not k.value.value)  # the default
        for k in node.keywords
    ):
        return "exception and stack information are not available inside the compiled graph"
    if func.attr == "warn":
        return (
            "`.warn` is deprecated: it warns (`DeprecationWarning`) from the line that calls "
            "it, which would be the helper's"
        )
    return None


def _read_state_problem(node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """The function, or a function of the module that calls on towards it, changes state that
    the call reads without being given it: how tensors print (``torch.set_printoptions``), or
    an attribute of an object other than ``self`` (``sys.stdout = sink``,
    ``self.filter.active = quiet``, ``setattr``), before the call or in a loop around it.
    Under compile, Dynamo applies such changes after the graph, and the graph makes the
    deferred call before that: it would write to the old stream, pass the record through the
    filter as it was, or print with the old options."""
    loops = _loop_spans(node, ctx)
    own = [
        (sub, "")
        for sub in walk(ctx.region.function)
        if isinstance(sub, (ast.stmt, ast.expr))
        and (sub.lineno < node.lineno or any(start <= sub.lineno <= end for start, end in loops))
    ]
    symbols = ctx.symbols
    reached = reached_from(symbols, lambda f: _changes_read_state(f, symbols), "read state")
    callers = run_by_callers(ctx) if id(ctx.region.function) in reached else ()
    for sub, where in itertools.chain(own, callers):
        # a caller's calls are not followed: one of them leads to this very function
        changed = _read_state_changed(sub, ctx.region.owner, ctx, 0 if not where else 3)
        if changed is None:
            continue
        at = f"line {sub.lineno}{where}"
        subject = f"`{ast.unparse(sub.func)}()` ({at})" if isinstance(sub, ast.Call) else at
        if changed == _PRINT_OPTIONS:
            return (
                f"{subject} sets how tensors print first, under compile while Dynamo traces, "
                "not when the graph makes the call"
            )
        return (
            f"{subject}{',' if where and subject == at else ''} changes `{changed}` first, "
            "which the call may read (a stream, a filter, a handler): under compile that "
            "change is applied after the graph, which makes the call before it"
        )
    return None


def _changes_read_state(function: FunctionNode, symbols: ModuleSymbols) -> bool:
    """Whether ``function``'s own code changes what a deferred call may read, as a caller's
    code before the call is weighed (``_read_state_changed`` at the callers' depth)."""
    return any(
        isinstance(node, ast.Call)
        and (symbols.qualified_name(node.func) or ast.unparse(node.func)).endswith(
            "set_printoptions"
        )
        or _changed_object(node) is not None
        for node in run_nodes(function)
    )


_PRINT_OPTIONS = "torch.set_printoptions"


def _read_state_changed(
    node: ast.AST, owner: Optional[ClassInfo], ctx: FunctionContext, depth: int = 0
) -> Optional[str]:
    """What ``node`` changes that a deferred call may read: how tensors print
    (``_PRINT_OPTIONS``), or the object other than ``self`` it sets an attribute of
    (``_changed_object``); also in a function of this file it calls (``silence()`` that sets
    ``MUTE.active``), followed 3 calls deep."""
    if isinstance(node, ast.Call):
        name = ctx.symbols.qualified_name(node.func) or ast.unparse(node.func)
        if name.endswith("set_printoptions"):
            return _PRINT_OPTIONS
        if depth < 3:
            for callee, callee_owner in callees_in_file(node, owner, ctx.symbols):
                if callee is ctx.region.function:
                    continue  # a recursive call: what runs before the call is weighed already
                for inner in run_nodes(callee):
                    found = _read_state_changed(inner, callee_owner, ctx, depth + 1)
                    if found is not None:
                        return found
    return _changed_object(node)


def _output_code_problem(ctx: FunctionContext) -> Optional[str]:
    """The file gives code of its own to what prints, logs or warns (``_code_given_to_output``):
    under compile that code runs inside the graph, where changes that the compiled code made
    before the call are not applied yet (Dynamo applies them after the graph: a counter, a
    buffer updated in place), and where a change it makes comes after Dynamo read the state
    it changes while tracing."""
    given = _code_given_to_output(ctx.symbols.tree)
    if given is None:
        return None
    return (
        f"line {given.lineno} gives code of this file to what prints, logs or warns "
        f"(`{ast.unparse(given).splitlines()[0]}`): under compile it would run inside the "
        "graph, before the changes the compiled code made first are applied"
    )


#: Calls that hand logging code to run with each record (a filter, a handler, a formatter, a
#: record factory, a logger class).
_LOGGING_INSTALLERS = frozenset({
    "addFilter", "addHandler", "setFormatter", "setLogRecordFactory", "setLoggerClass",
    "basicConfig",
})
#: What printing and warnings call, replaced by assigning to it.
_OUTPUT_HOOKS = frozenset({
    "sys.stdout", "sys.stderr", "sys.displayhook", "builtins.print", "warnings.showwarning",
    "warnings.formatwarning",
})


@node_memo
def _code_given_to_output(tree: ast.Module) -> Optional[Union[ast.stmt, ast.expr]]:
    """A place where the file gives code of its own to what prints, logs or warns: a class
    based on one of the ``logging`` module (a ``Filter``, ``Handler``, ``Formatter``), a
    function, lambda or class of the file handed to a logger (``_LOGGING_INSTALLERS``:
    ``logger.addFilter(lambda r: ...)``), or a replaced stream or warnings hook
    (``_OUTPUT_HOOKS``: ``sys.stdout = Tee()``, ``warnings.showwarning = show``). None where
    there is none: what other files install is not seen."""
    symbols = ModuleSymbols.collect(tree)
    own = set(symbols.functions) | set(symbols.classes)
    for node in walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            (symbols.qualified_name(base) or "").startswith("logging.") for base in node.bases
        ):
            return node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _LOGGING_INSTALLERS
            and any(
                isinstance(sub, ast.Lambda) or isinstance(sub, ast.Name) and sub.id in own
                for argument in [*node.args, *(k.value for k in node.keywords)]
                for sub in walk(argument)
            )
        ):
            return node
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
            symbols.qualified_name(target) in _OUTPUT_HOOKS
            for target in assignment_targets(node)
        ):
            return node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and f"{symbols.qualified_name(node.args[0])}.{node.args[1].value}" in _OUTPUT_HOOKS
        ):
            return node
    return None


def _loop_spans(node: ast.Call, ctx: FunctionContext) -> List[Tuple[int, int]]:
    """The first and last lines of each loop of the function around ``node``: code on any of
    their lines may run both before and after it."""
    return [
        (loop.lineno, loop.end_lineno or loop.lineno)
        for loop in walk(ctx.region.function)
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
        and loop.lineno <= node.lineno <= (loop.end_lineno or loop.lineno)
    ]


#: Attributes of a tensor that code sets (``h.requires_grad = True``): no stream, filter or
#: handler reads them.
_TENSOR_FLAGS = frozenset({"requires_grad", "grad", "data"})


def _changed_object(node: ast.AST) -> Optional[str]:
    """What ``node`` changes an attribute of, other than ``self`` itself: ``sys`` of
    ``sys.stdout = s``, ``self.mute`` of ``self.mute.active = q``, the object of ``setattr``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "setattr" and node.args:
            return ast.unparse(node.args[0])
        return None
    targets: List[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    for target in targets:
        if not isinstance(target, ast.Attribute) or target.attr in _TENSOR_FLAGS:
            continue
        owner = target.value
        if not (isinstance(owner, ast.Name) and owner.id == "self"):
            return ast.unparse(owner)
    return None


def _keywords_problem(code: str, node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """Keywords are written into the helper: they must be literals or module-level names."""
    for keyword in node.keywords:
        if keyword.arg == "stacklevel" and not (
            isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, int)
        ):
            return "`stacklevel=` is computed at run time"
        if not (isinstance(keyword.value, ast.Constant) or _fixed_in_source(keyword.value, ctx)):
            return f"keyword `{keyword.arg}=` is computed at run time"
    if code == "GM103" and len(node.args) > 2:
        return "`stacklevel` is passed positionally"
    return None


#: How a warnings.warn call is named where it may raise (state_change_problem's subject).
_RAISING_WARNING = "the warning (which a filter such as `-W error` turns into an exception)"
#: Factories of ``logging.Logger`` objects: the stdlib's, and the wrappers of libraries that
#: return the stdlib's loggers (transformers' and diffusers' ``utils.logging.get_logger``,
#: seen as ``logging.get_logger`` after ``from ...utils import logging``).
_STDLIB_LOGGER_FACTORIES = {"logging.getLogger", "logging.get_logger"}
_STDLIB_LOGGER_WRAPPERS = (".utils.logging.get_logger", "transformers.logging.get_logger")


def _logger_problem(code: str, node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """A logger call is deferred only on a ``logging.Logger`` the analysis can see made (its
    helper passes ``stacklevel``, which other loggers treat otherwise, or refuse)."""
    if code != "GM102":
        return None
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else node.func
    patched = _patched_logger(receiver, ctx)
    if patched is not None:
        return (
            f"the file replaces what `{ast.unparse(receiver)}` runs (line {patched.lineno}: "
            f"`{ast.unparse(patched)}`): the deferred call passes `stacklevel`, which the "
            "replacement may not take, and under compile runs it inside the graph"
        )
    if _is_stdlib_logger(receiver, ctx):
        return None
    return (
        f"`{ast.unparse(receiver)}` is not known to be a `logging.Logger` (made by "
        "`logging.getLogger`), whose records the deferred call keeps at the caller's line"
    )


def _patched_logger(receiver: ast.expr, ctx: FunctionContext) -> Optional[ast.expr]:
    """Where the file replaces a method of the logger ``receiver`` names, or of the logging
    classes (``log.warning = short_warning``, ``setattr(log, "info", f)``,
    ``logging.Logger.info = f``), if it does."""
    roots = {root_name(receiver)} | {
        name for name, module in ctx.symbols.imports.items() if module == "logging"
    }
    for node in walk(ctx.symbols.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and (
            root_name(node) in roots and node.attr in _LOGGER_CODE
        ):
            return node
        if isinstance(node, ast.Call) and short_name(node) in ("setattr", "delattr") and (
            len(node.args) > 1 and root_name(node.args[0]) in roots
            and not (isinstance(node.args[1], ast.Constant) and node.args[1].value not in (
                _LOGGER_CODE
            ))
        ):
            return node
    return None


#: What a logger runs when called (not its settings: ``propagate``, ``disabled``).
_LOGGER_CODE = _STDLIB_LOGGER_METHODS | {
    "exception", "isEnabledFor", "_log", "handle", "makeRecord", "callHandlers", "findCaller",
    "warning_once", "info_once",
}


def _is_stdlib_logger(receiver: ast.expr, ctx: FunctionContext) -> bool:
    if not isinstance(receiver, ast.Name):
        return False
    symbols = ctx.symbols
    if symbols.imports.get(receiver.id) == "logging":
        return True  # the logging module's own functions log to the root logger
    if receiver.id in ctx.local_names:
        return False
    return _makes_stdlib_logger(symbols.assignments.get(receiver.id), ctx)


def _makes_stdlib_logger(value: Optional[ast.expr], ctx: FunctionContext) -> bool:
    """``logging.getLogger(__name__)``, a library's wrapper of it, or ``getChild`` of such a
    logger (``logger.getChild("attn")``), which is one of the same manager."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr == "getChild":
        parent = func.value
        return _is_stdlib_logger(parent, ctx) if isinstance(parent, ast.Name) else (
            _makes_stdlib_logger(parent, ctx)
        )
    name = ctx.symbols.qualified_name(func)
    return name is not None and (
        name in _STDLIB_LOGGER_FACTORIES or name.endswith(_STDLIB_LOGGER_WRAPPERS)
    )


def _helper_stacklevel(code: str, node: ast.Call) -> Optional[int]:
    """``stacklevel`` for the helper's call: the caller's, plus the helper's own frame."""
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    if code == "GM101" or (code == "GM102" and method not in _STDLIB_LOGGER_METHODS):
        return None
    level = _stacklevel(node)
    return level + 1 if level is not None else None


def _is_module_global(node: ast.expr, ctx: FunctionContext) -> bool:
    """A name or dotted name whose root is a module-level name or a builtin, seen from here.

    A helper at module level can refer to it by the same spelling. Locals, closure variables,
    ``except ... as`` names and modules imported inside the function cannot be reached there.
    """
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name) or node.id in ctx.local_names:
        return False
    return node.id in ctx.symbols.defined_here() or hasattr(builtins, node.id)


def _mangled(node: ast.expr, ctx: FunctionContext) -> bool:
    """A ``__name`` inside a class, which Python mangles there (but not in a module-level
    helper)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    name = node.id if isinstance(node, ast.Name) else ""
    return ctx.region.owner is not None and name.startswith("__") and not name.endswith("__")


def _fixed_in_source(node: ast.expr, ctx: FunctionContext) -> bool:
    """A module-level name that no code rebinds or updates, or a literal the op cannot carry
    (None), to write into the helper. A global that changes (``global calls``,
    ``seen.append(...)``) is passed instead: under compile the helper runs inside the graph,
    before Dynamo applies the changes the code made before the call."""
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, PASSED_CONSTANTS)
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    assigned = ctx.symbols.assignments.get(root.id) if isinstance(root, ast.Name) else None
    return (
        isinstance(node, (ast.Name, ast.Attribute))
        and _is_module_global(node, ctx)
        and not _mangled(node, ctx)
        and isinstance(root, ast.Name)
        and root.id not in _changing_globals(ctx.symbols.tree, frozenset(ctx.symbols.assignments))
        # a module-level tensor or container may be updated in place by code the analysis
        # does not follow (through `self.stats = STATS`): it is passed, as it is there
        and not (assigned is not None and _mutable(assigned, ctx))
    )


#: Displays and comprehensions of containers.
_DISPLAYS = (
    ast.Tuple, ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp,
)


def _is_container(node: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A display or constructor call of a container, a local only ever bound to one (``names =
    sorted(...)``), or a module-level name bound to a list, dict or set (``STATS = {}``, which
    code may change through another name)."""
    if isinstance(node, _DISPLAYS) or (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CONTAINERS
        and node.func.id not in ctx.symbols.defined_here()
    ):
        return True
    if isinstance(node, ast.Name) and depth < 4 and ctx.values.only_assigned(
        node.id, lambda value: _is_container(value, ctx, depth + 1)
    ):
        return True
    assigned = ctx.symbols.assignments.get(node.id) if isinstance(node, ast.Name) else None
    return (
        assigned is not None
        and _is_module_global(node, ctx)
        and _mutable(assigned, ctx)
        and ctx.values.kind(assigned) is not Kind.TENSOR
    )


#: Calls that build a mutable container.
_MUTABLE_CONTAINERS = {"list", "dict", "set", "bytearray", "collections.defaultdict",
                       "collections.OrderedDict", "collections.Counter", "collections.deque"}


def _mutable(value: ast.expr, ctx: FunctionContext) -> bool:
    """A module-level value that may change in place: a tensor, a list, dict or set."""
    if ctx.values.kind(value) is Kind.TENSOR:
        return True
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        name = ctx.symbols.qualified_name(value.func) or ast.unparse(value.func)
        return name in _MUTABLE_CONTAINERS
    return False


@functools.lru_cache(maxsize=8)
def _changing_globals(tree: ast.Module, assigned: FrozenSet[str]) -> FrozenSet[str]:
    """Names that code of the module may rebind or update at run time: declared ``global``,
    stored into (``cache[k] = v``, ``state.count += 1``), updated by a container method or in
    place (``SCRATCH.copy_(x)``), or objects ``assigned`` at module level whose methods it calls
    (``COUNTER.bump()`` may change what ``COUNTER`` prints) but for methods that only read."""
    names = set()
    for node in walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
        names |= stored_roots(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in assigned
            and node.func.attr not in _READING_METHODS
        ):
            names.add(node.func.value.id)
    return frozenset(names)


#: Methods of module-level objects that only read them (their calls leave the value as it was).
_READING_METHODS = frozenset({
    "get", "keys", "values", "items", "copy", "count", "index", "format", "join", "split",
    "startswith", "endswith", "lower", "upper", "strip", "replace", "encode", "__contains__",
})


def item_receiver(node: ast.expr, ctx: FunctionContext) -> Optional[ast.expr]:
    """``t`` of ``t.item()`` where ``t`` is a tensor that always has one element (a whole
    reduction, a comparison of one, a local only ever assigned one: ``items.is_zero_dim``, or
    assigned one by every binding that reaches the call: ``loss = F.cross_entropy(...)``
    before ``loss.item()``, whatever ``loss`` is given elsewhere), so that ``.item()`` cannot
    fail and gives the same number inside the helper."""
    receiver = item_of(node)
    if receiver is None or ctx.values.kind(receiver) is Kind.STATIC:
        return None
    if is_zero_dim(receiver, ctx) or _reaching_zero_dim(receiver, node, ctx):
        return receiver
    return None


def _reaching_zero_dim(
    receiver: ast.expr, at: ast.AST, ctx: FunctionContext, depth: int = 0
) -> bool:
    """Whether every binding of the local ``receiver`` that reaches ``at`` gives it a tensor of
    one element: an assignment of one, or ``receiver += v`` (any elementwise operator) of a
    Python number or such a tensor to such a tensor (the update keeps its shape)."""
    if not isinstance(receiver, ast.Name) or depth > 3:
        return False
    bindings, on_entry = reaching_bindings(receiver.id, at, ctx)
    return bool(bindings) and not on_entry and all(
        isinstance(binding, ast.Assign)
        and len(binding.targets) == 1
        and isinstance(binding.targets[0], ast.Name)
        and is_zero_dim(binding.value, ctx)
        or isinstance(binding, ast.AugAssign)
        and isinstance(binding.op, ELEMENTWISE_OPERATORS)
        and (is_zero_dim(binding.value, ctx) or ctx.values.kind(binding.value) is Kind.STATIC)
        and _reaching_zero_dim(receiver, binding, ctx, depth + 1)  # what it updates
        for binding in bindings
    )


def _metadata_of_a_name(node: ast.expr, ctx: FunctionContext) -> bool:
    """Whether ``node`` (metadata) is read from a name that may hold a tensor."""
    receiver = metadata_receiver(node)
    return receiver is not None and ctx.values.kind(receiver) in (Kind.TENSOR, Kind.UNKNOWN)


#: Tensor methods that make a Python value of its data.
_PYTHON_VALUE_METHODS = frozenset({
    "item", "tolist", "numpy", "__str__", "__repr__", "__format__", "__bool__", "__float__",
    "__int__", "__index__",
})


def _python_value_problem(arg: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why ``arg`` cannot be computed in the graph: it makes a Python value of a tensor's data
    inside it (``"loss " + str(loss)``, ``" ".join(map(str, [a, b]))``, ``t.numpy()``), where
    Dynamo breaks, so the break would stay where the fix was claimed."""
    func = arg.func if isinstance(arg, ast.Call) else None
    numpy = (ctx.symbols.qualified_name(func) or "").startswith("numpy.") if func else False
    made = isinstance(func, ast.Attribute) and func.attr in _PYTHON_VALUE_METHODS
    if ctx.values.kind(arg) in (Kind.TENSOR, Kind.DATA) and not (numpy or made):
        return None
    parents = parent_map(arg)
    for node in walk(arg):
        if node is arg or not isinstance(node, ast.expr):
            continue
        if ctx.values.kind(node) not in (Kind.TENSOR, Kind.DATA):
            continue
        parent = parents.get(id(node))
        while isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Starred)):
            parent = parents.get(id(parent))
        if isinstance(parent, ast.Attribute):
            taken = parent.attr in _PYTHON_VALUE_METHODS
        elif isinstance(parent, ast.Call):
            qualified = ctx.symbols.qualified_name(parent.func) or ""
            taken = node is not parent.func and not qualified.startswith("torch.")
            taken = taken and (parent is arg or ctx.values.kind(parent) not in (
                Kind.TENSOR, Kind.DATA
            ))
            taken = taken and not is_size(parent)
        else:
            taken = isinstance(parent, ast.BinOp) and ctx.values.kind(parent) not in (
                Kind.TENSOR, Kind.DATA
            )
        if taken:
            return (
                f"`{ast.unparse(arg)}` makes a Python value of tensor `{ast.unparse(node)}` "
                "inside the graph, where Dynamo breaks"
            )
    return None


#: Builtins that turn their first argument into text.
_TEXT_BUILTINS = frozenset({"str", "repr", "ascii", "format"})


def _formatted_into_text(node: ast.expr, ctx: FunctionContext) -> Optional[List[ast.expr]]:
    """The values that ``node`` formats into a str, where it is a message built so: an
    f-string, ``"..." % values``, ``"...".format(...)``, ``str(v)``, ``repr(v)``,
    ``format(v, spec)``; None for anything else."""
    if isinstance(node, ast.JoinedStr):
        return [piece.value for piece in formatted_values(node)]
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, (ast.Constant, ast.JoinedStr))
        and isinstance(getattr(node.left, "value", ""), str)
    ):
        right = node.right
        if isinstance(right, ast.Dict):
            return [value for value in right.values]
        return list(right.elts) if isinstance(right, ast.Tuple) else [right]
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "format"
        and isinstance(func.value, ast.Constant)
        and isinstance(func.value.value, str)
    ):
        return [*node.args, *(keyword.value for keyword in node.keywords)]
    if (
        isinstance(func, ast.Name)
        and func.id in _TEXT_BUILTINS
        and func.id not in ctx.symbols.defined_here()
        and node.args
    ):
        return list(node.args[:1])
    return None


def _passed_problem(node: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why ``node`` cannot be passed to the deferred call under compile (None: it can).

    The op carries tensors and str, int, float and bool values (an f-string of Python values is
    a str when Dynamo traces it). A value of unknown type is passed too: when it turns out to be
    something else at run time, the helper makes the call as written, graph break included.
    """
    shown = _formatted_into_text(node, ctx)
    if shown is not None:  # a str only if Dynamo can format every value itself
        for value in shown:
            kind = ctx.values.kind(value)
            if kind in (Kind.TENSOR, Kind.DATA):
                return f"the message formats tensor `{ast.unparse(value)}`"
            plain = _configuration_value(value, ctx) or python_scalar(value, ctx)
            if not plain or _is_exception(value, ctx):
                return (
                    f"the message formats `{ast.unparse(value)}`, which is not known "
                    "to be a plain Python value"
                )
            problem = impurity(value, ctx.values, ctx.symbols)
            if problem:
                return problem
        return None
    if _is_exception(node, ctx):
        return f"`{ast.unparse(node)}` is the exception object of an `except` clause"
    receiver = item_of(node)
    if receiver is not None:
        return (
            f"`{ast.unparse(node)}` turns tensor data into a Python number; the helper "
            "takes `.item()` itself only of a tensor known to hold one element (a whole "
            "reduction such as `x.sum()`, or a comparison of one), and "
            f"`{ast.unparse(receiver)}` is not known to"
        )
    if _is_container(node, ctx):
        return (
            f"`{ast.unparse(node)}` is a container; "
            "the deferred call carries only scalars and tensors"
        )
    if _reads_own_class(node) and not class_name_of_self(node, ctx):
        return (
            f"`{ast.unparse(node)}` reads the class of `self`, where a class of its lineage "
            "may run code for it (a metaclass, a `__class__` property, a base of another file)"
        )
    if isinstance(node, ast.Constant) or ctx.values.kind(node) in (Kind.TENSOR, Kind.UNKNOWN):
        return None
    if python_scalar(node, ctx):
        return None
    return (
        f"`{ast.unparse(node)}` is a Python value that is neither a str, int, float nor bool "
        "as far as the analysis can tell; the deferred call carries only those and tensors"
    )


def _reads_own_class(node: ast.expr) -> bool:
    """Whether ``node`` reads ``self.__class__`` or ``type(self)`` (``self.__class__.__name__``)."""
    return any(is_own_class(sub) for sub in ast.walk(node) if isinstance(sub, ast.expr))


_SCALAR_BUILTINS = {"max", "min", "len", "int", "float", "str", "abs", "round", "bool"}


def _configuration_value(node: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A Python value built from literals, values known while tracing (``Kind.STATIC``: sizes,
    dtypes) and ``self``'s (non-tensor) attributes, such as ``seq_len + self.config.window if
    ... else max(self.config.window)``, through at most 3 local names (``depth``)."""
    if depth > 3:
        return False
    if isinstance(node, ast.Constant) or ctx.values.kind(node) is Kind.STATIC:
        return True
    if isinstance(node, ast.Attribute):
        return self_configuration(node, ctx)
    if isinstance(node, ast.Name):
        return ctx.values.only_assigned(
            node.id, lambda value: _configuration_value(value, ctx, depth + 1)
        )
    if isinstance(node, ast.IfExp):
        return all(_configuration_value(v, ctx, depth) for v in (node.body, node.orelse))
    if isinstance(node, ast.BinOp):
        return all(_configuration_value(v, ctx, depth) for v in (node.left, node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return (
            node.func.id in _SCALAR_BUILTINS
            and node.func.id not in ctx.symbols.defined_here()
            and all(_configuration_value(a, ctx, depth) for a in node.args)
        )
    return False


def _is_exception(node: ast.expr, ctx: FunctionContext) -> bool:
    """The name bound by an ``except ... as`` clause of the function."""
    function = ctx.region.function
    return isinstance(node, ast.Name) and any(
        isinstance(n, ast.ExceptHandler) and n.name == node.id for n in walk(function)
    )


def _stacklevel(node: ast.Call) -> Optional[int]:
    for keyword in node.keywords:
        if keyword.arg == "stacklevel":
            value = keyword.value
            return (
                value.value
                if isinstance(value, ast.Constant) and isinstance(value.value, int)
                else None
            )
    return 1


# ---------------------------------------------------------------------- an `if` as a whole
#: ``classify_call`` of ``rules/side_effects.py``: the LC code of a call, or None.
Classify = Callable[[ast.Call, "FunctionContext"], Optional[str]]


@dataclass(frozen=True)
class DeferIfPlan(Plan):
    """An ``if`` on a tensor whose branches only print, log or warn becomes one deferred call.

    The call passes the operands of the tests (the tensors themselves, not ``bool()`` of them)
    and the passed arguments of the branches' calls, in source order. The helper runs the
    original ``if``/``elif``/``else`` on its parameters, so ``bool()`` is applied exactly where
    and as the original applied it: a 0-d or one-element tensor is true when nonzero (NaN too),
    a larger one raises the same ``RuntimeError``, and ``and``/``or`` stop where they did.
    """

    ordered = True

    #: The line of the ``if``.
    line: int
    #: Leading conjuncts of the ``if`` test that are Python values: they stay a plain ``if``
    #: (only for an ``if`` without ``elif``/``else``, whose other branch does nothing).
    static_conjuncts: int
    #: The branches' calls, in source order.
    calls: Tuple[DeferPlan, ...]
    #: Where the branches' calls are (their findings are fixed with the ``if``).
    call_sites: FrozenSet[Position]

    def covers(self) -> FrozenSet[Position]:
        return self.call_sites.union(*(call.covers() for call in self.calls))


def deferred_if(
    statement: ast.stmt, ctx: FunctionContext, classify: Classify
) -> Optional[Planned[DeferIfPlan]]:
    """Whether the ``if`` chain that ``statement`` heads, continues (``elif``) or is a branch
    statement of may be deferred as a whole; None when no such chain holds a print, log or
    warnings.warn call."""
    memo = vars(ctx).setdefault("_deferred_ifs", {})  # kept like a cached_property's value
    chains: Optional[_Chains] = memo.get(classify)
    if chains is None:
        chains = memo[classify] = _Chains(ctx, classify)
    return chains.plan(statement)


class _Chains:
    """The ``if`` chains on tensors of one compiled function, each planned once."""

    def __init__(self, ctx: FunctionContext, classify: Classify) -> None:
        self._ctx, self._classify = ctx, classify
        self._head: Dict[int, ast.If] = {}
        self._plans: Dict[int, Optional[Planned[DeferIfPlan]]] = {}
        continued: set = set()  # ``elif`` clauses: part of the chain of the ``if`` before them
        for node in walk(ctx.region.function):
            if not isinstance(node, ast.If):
                continue
            if node.orelse and _elif(node, ctx):
                continued.add(id(node.orelse[0]))
            values = ctx.values
            if id(node) in continued or not (
                values.is_data_dependent(node.test)
                and values.kind(node.test) is Kind.TENSOR
                and values.dynamo_truth(node.test) is None
            ):
                continue
            tests, branches = _chain(node, ctx)
            for part in [*tests, *(statement for branch in branches for statement in branch)]:
                self._head.setdefault(id(part), node)

    def plan(self, statement: ast.stmt) -> Optional[Planned[DeferIfPlan]]:
        head = self._head.get(id(statement))
        if head is None:
            return None
        if id(head) not in self._plans:
            self._plans[id(head)] = deferred_if_plan(head, self._ctx, self._classify)
        return self._plans[id(head)]


def _elif(node: ast.If, ctx: FunctionContext) -> bool:
    """Whether ``node``'s ``else`` is an ``elif`` clause."""
    orelse = node.orelse
    return len(orelse) == 1 and isinstance(orelse[0], ast.If) and is_elif(orelse[0], ctx)


def _chain(head: ast.If, ctx: FunctionContext) -> Tuple[List[ast.If], List[List[ast.stmt]]]:
    """The ``if`` and its ``elif`` clauses, and the branches (the ``else`` block last)."""
    clauses, branches = [head], [head.body]
    while _elif(clauses[-1], ctx):
        clause = clauses[-1].orelse[0]
        assert isinstance(clause, ast.If)
        clauses.append(clause)
        branches.append(clause.body)
    if clauses[-1].orelse:
        branches.append(clauses[-1].orelse)
    return clauses, branches


def test_operands(test: ast.expr) -> List[ast.expr]:
    """The operands of ``and``/``or``/``not`` in ``test``, in the order Python evaluates them:
    what the deferred call passes (the fixer splits the libcst test the same way)."""
    if isinstance(test, ast.BoolOp):
        return [operand for value in test.values for operand in test_operands(value)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test_operands(test.operand)
    return [test]


def deferred_if_plan(
    head: ast.If,
    ctx: FunctionContext,
    classify: Classify,
    only: Optional[Sequence[ast.stmt]] = None,
) -> Optional[Planned[DeferIfPlan]]:
    """The plan of the chain that ``head`` starts, or of its statements ``only`` (the others
    left out of its branches, ``split.py``); None when they make no print, log or warn call."""
    clauses, branches = _chain(head, ctx)
    if only is not None:
        kept = {id(statement) for statement in only}
        kept_branches = ([s for s in branch if id(s) in kept] for branch in branches)
        branches = [branch for branch in kept_branches if branch]  # an `else` may log nothing
    statements = [statement for branch in branches for statement in branch]
    codes = [
        classify(statement.value, ctx)
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
        else None
        for statement in statements
    ]
    if not any(codes):
        return None
    for statement, code in zip(statements, codes):
        if code is None:
            text = ast.unparse(statement).splitlines()[0]
            return declined(
                f"`{text}` (line {statement.lineno}) is not a print, log or warnings.warn call"
            )
    problem = _shared_warning_problem(
        [
            statement.value
            for statement, code in zip(statements, codes)
            if code == "GM103"
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
        ]
    )
    if problem:
        return declined(problem)
    for clause in clauses:
        problem = shared_line_problem(clause, ctx)
        if problem:
            return declined(problem)
    static: List[ast.expr] = []
    tests = [head.test]
    if len(branches) == 1:  # no other branch: a leading Python test may stay a plain `if`
        static, tests = split_condition(head.test, ctx)
    operands = [o for test in tests + [c.test for c in clauses[1:]] for o in test_operands(test)]
    problem = _operands_problem(operands, head, ctx)
    if not problem and ("GM103" in codes or not all(is_zero_dim(o, ctx) for o in operands)):
        # a warning that a filter turns into an error, or a test of several elements,
        # raises inside the deferred call
        problem = state_change_problem(head, ctx, "the deferred `if`")
    if problem:
        return declined(problem)
    calls: List[DeferPlan] = []
    sites: List[Position] = []
    for statement, code in zip(statements, codes):
        assert isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
        call, problem = defer_plan(code or "", statement.value, statement, ctx)
        problem = problem or _arguments_problem(statement.value, call, head, operands, ctx)
        if call is None or problem:
            return declined(f"{problem} (line {statement.lineno})")
        calls.append(call)
        sites.append(position(statement.value, ctx))
    return DeferIfPlan(head.lineno, len(static), tuple(calls), frozenset(sites)), None


def _shared_warning_problem(warnings: List[ast.Call]) -> Optional[str]:
    """Two warnings.warn calls of one deferred ``if`` that may show the same message with the
    same category: eager, the helper makes both from the line of its call, where Python's
    once-per-location filter shows the message once, and the original showed it once per line."""
    for first, second in itertools.combinations(warnings, 2):
        if not (_distinct(first, second, 0) or _distinct(first, second, 1)):
            return (
                f"the warnings.warn calls of lines {first.lineno} and {second.lineno} may "
                "show the same message: eager, the deferred `if` makes both from its own "
                "line, where the once-per-location filter shows it once"
            )
    return None


def _distinct(first: ast.Call, second: ast.Call, index: int) -> bool:
    """The ``index``-th arguments of two warnings.warn calls (the message, the category) are
    different string literals or builtin names (a missing category is ``UserWarning``)."""

    def written(call: ast.Call) -> Optional[str]:
        if index < len(call.args):
            argument = call.args[index]
        else:
            keyword = ("message", "category")[index]
            found = [k.value for k in call.keywords if k.arg == keyword]
            if not found:
                return "UserWarning" if index else None
            argument = found[0]
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            return repr(argument.value)
        if index and isinstance(argument, ast.Name) and hasattr(builtins, argument.id):
            return argument.id  # a name of the module's own may alias another
        return None

    one, other = written(first), written(second)
    return one is not None and other is not None and one != other


def _operands_problem(
    operands: List[ast.expr], head: ast.If, ctx: FunctionContext
) -> Optional[str]:
    """Why the tests' operands cannot all be computed before the deferred call.

    The first runs where it ran; the others run on every call, so each must be a tensor
    computed without effects or failures on values. Python values are not passed: one may
    guard what follows it (``mask is not None and (mask == 0).any()``).
    """
    for index, operand in enumerate(operands):
        kind = ctx.values.kind(operand)
        text = ast.unparse(operand)
        if isinstance(operand, ast.Compare) and len(operand.ops) > 1:
            return (
                f"`{text}` is a chained comparison: Python takes the truth of its first "
                "comparison, which breaks the graph in the deferred call too"
            )
        if kind is Kind.DATA:
            return f"`{text}` turns tensor data into a Python value; that is the break to fix first"
        if kind is not Kind.TENSOR:
            return (
                f"`{text}` is not a tensor: only Python tests before the tensor test of an "
                "`if` without `elif`/`else` stay a plain `if`"
            )
        if index and not total_test(operand, ctx):
            return (
                f"`{text}` would be computed on every call, not only when tested, and only "
                "reductions such as `(x == 0).any()`, `torch.isnan(x).any()` of a name are "
                "known to compute for every dtype and shape"
            )
        unsure = unsure_names(operand, operands[0], head, ctx) if index else []
        if unsure:  # the first test computes with its names: they hold tensors
            return (
                f"`{text}` would be computed on every call, not only when tested, and "
                f"`{unsure[0]}`, which the first test does not compute with, may be None or "
                "unbound there"
            )
    return None


def passed_arguments(call: ast.Call, plan: DeferPlan, ctx: FunctionContext) -> List[ast.expr]:
    """What the call of the helper passes, in order: the arguments not built into it, the
    tensor of ``t.item()`` or of ``t.shape`` that the helper reads, and each formatted value of
    an f-string the helper builds (a number's tensor, or the value whose text is passed)."""
    passed: List[ast.expr] = []
    for index, argument in enumerate(call.args):
        if index in plan.baked_args:
            continue
        if index in plan.item_args:  # the tensor is passed; the helper takes `.item()`
            argument = item_receiver(argument, ctx) or argument
        if index in plan.metadata_args:  # the tensor is passed; the helper reads `.shape`
            argument = metadata_receiver(argument) or argument
        if index in plan.formatted_args and isinstance(argument, ast.JoinedStr):
            passed += [
                (item_receiver(piece.value, ctx) if (index, j) in plan.item_numbers else None)
                or piece.value
                for j, piece in enumerate(formatted_values(argument))
            ]
            continue
        passed.append(argument)
    return passed


def _arguments_problem(
    call: ast.Call,
    plan: Optional[DeferPlan],
    head: ast.If,
    operands: List[ast.expr],
    ctx: FunctionContext,
) -> Optional[str]:
    """Why the call's passed arguments cannot be computed on every call (the helper's own
    arguments, module-level names and literals, are evaluated only when the test holds).

    Only plain arguments (``totals.plain_argument``) and what the tests' ``operands`` compute
    anyway (``totals.computed_by``) are passed: another operation may fail for
    some dtypes or shapes (``ids.mean()`` on integers, ``h.sum(2)`` on a matrix, ``x.mT`` on a
    vector), or an attribute be missing (``self.missing``, ``x.grad.sum()``, ``h.numel()`` of
    an ``h`` that passed the test but is a numpy array), where the original never ran it."""
    if plan is None:
        return None
    tested = names_read(head.test)
    # the names the tests read whatever the values: unbound, they raise there, as before
    read = {part.id for part in evaluated_parts(operands) if isinstance(part, ast.Name)}
    for argument in passed_arguments(call, plan, ctx):
        again = computed_by(argument, operands, ctx)
        if not (again or plain_argument(argument, ctx)):
            return (
                f"`{ast.unparse(argument)}` would be computed on every call, not only when the "
                "test holds, and a tensor operation may fail for some dtypes or shapes"
            )
        unknown = [] if isinstance(argument, ast.Name) else sorted(
            # `h.sum()` of a submodule's `h`: a tuple there fails on every call
            name for name in names_read(argument) - tested
            if name != "self"
            and ctx.values.value_kind(ast.Name(id=name, ctx=ast.Load()))
            not in (Kind.TENSOR, Kind.STATIC)
        )
        if unknown:
            return (
                f"`{ast.unparse(argument)}` would be computed on every call, not only when the "
                f"test holds, and `{unknown[0]}`, which the test does not compute with, may not "
                "be a tensor"
            )
        unbound = sorted(n for n in names_read(argument) - read if maybe_unbound(n, head, ctx))
        if unbound:
            return (
                f"`{unbound[0]}` would be read on every call, not only when the test holds, "
                "and may be unbound where the `if` starts"
            )
        problem = impurity(argument, ctx.values, ctx.symbols, static_indexing=False, again=again)
        if problem:
            return (
                f"`{ast.unparse(argument)}` would be computed on every call, "
                f"not only when the test holds: {problem}"
            )
    return None
