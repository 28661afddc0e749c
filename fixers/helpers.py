"""The module-level helpers that fixed code calls, and their insertion into a module.

Each helper is emitted once per module, after the leading imports (or after the helpers an
earlier run emitted), with ``import torch`` added when the module lacks it. A helper is reused
when a module-level function of the same name has exactly the same source; a name that the
module uses for something else is never taken.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Sequence, Set, Tuple

import libcst as cst

from flake8_graphmend.analysis.values import KEEPS_BRANCH
from flake8_graphmend.planning.frames import EAGER_FRAME

PREFIX = "_graphmend_"

INLINE_ONLY = f"{PREFIX}inline_only"
DEFERRED = f"{PREFIX}deferred"
WHERE = f"{PREFIX}where"
WHERE_GRAD = f"{PREFIX}where_grad"
CHECK = f"{PREFIX}check"
RAISE = f"{PREFIX}raise"
DIFFER = f"{PREFIX}differ"
ITEM = f"{PREFIX}item"
ASSERT = f"{PREFIX}assert"
KEEP = f"{PREFIX}keep"
DRAW_BELOW = f"{PREFIX}draw_below"

#: The longest line of the emitted helpers (they fit any file's line length).
HELPER_LINE_LENGTH = 79
#: Frames that ``_graphmend_deferred``'s wrapper (``call``) adds between the caller and the
#: helper: ``stacklevel`` counts them.
DEFERRED_WRAPPER_FRAMES = 1
#: The keyword that ``_graphmend_deferred`` sets on a helper when the graph runs it.
IN_GRAPH = "in_graph"
#: The prefixes of a deferred helper's parameters that it reads only for a number
#: (``t.item()``) or metadata (``t.shape``): a tensor passed there may require grad.
NUMBER = "number"
METADATA = "meta"
#: The process-wide module (in ``sys.modules``) that holds the custom op and the deferred
#: functions of every fixed module, so that the op is registered once.
RUNTIME_MODULE = f"{PREFIX}runtime"

_INLINE_ONLY_SOURCE = f'''\
def {INLINE_ONLY}(function):
    """Let torch.compile trace `function` only where a caller inlines it.

    Called from compiled code, Dynamo traces it into the caller's graph.
    Where Dynamo would compile a call of it on its own (in the rest of a
    frame that it runs eagerly, or after the helper breaks the graph), it
    runs as plain Python, and so does what it calls, as the code it
    replaced would: no graph of its own, none of the logging code it may
    run (with warnings of Dynamo on `time.time`), and one graph break, not
    one more per frame. Without this torch API (older versions), Dynamo
    compiles such calls as before.
    """
    frames = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
    setter = getattr(frames, "set_code_exec_strategy", None)
    if setter is not None and hasattr(frames, "_FrameExecStrategy"):
        action = frames._FrameAction
        setter(
            function.__code__,
            frames._FrameExecStrategy(action.SKIP, action.SKIP),
        )
    return function
'''

_DEFERRED_SOURCE = f'''\
def {DEFERRED}(function):
    """Run `function` in order inside the compiled graph (graphmend [Defer]).

    Eager calls run `function` as it is. Under torch.compile, in every frame
    that Dynamo inlines, the call becomes an ordered custom op that runs
    `function` at the same point of the graph, with the tensors as they are
    there, and with `{IN_GRAPH}=True` if it takes that keyword. Arguments must
    be tensors, str, int, float or bool; where that, or the op, is not
    available (an older torch, a tensor that requires grad or is of a
    subclass, a transform of torch.func such as vmap, for which the op has no
    rule), the call runs as written, graph break included.
    """
    import functools
    import inspect
    import sys
    import types

    groups = (
        ("t", torch.Tensor), ("s", str), ("b", bool), ("i", int), ("f", float)
    )
    runtime = sys.modules.get("{RUNTIME_MODULE}")
    if runtime is None:
        runtime = types.ModuleType("{RUNTIME_MODULE}")
        runtime.functions, runtime.op = {{}}, None
        library = torch.library
        if hasattr(library, "custom_op") and hasattr(library, "EffectType"):

            @torch.library.custom_op(
                "graphmend::deferred",
                mutates_args=(),
                schema="(str name, str kinds, Tensor[] t, str[] s, bool[] b, "
                "SymInt[] i, float[] f) -> ()",
            )
            def deferred(name, kinds, *values):
                queues = zip(groups, values)
                values = {{kind: iter(group) for (kind, _), group in queues}}
                args = [next(values[kind]) for kind in kinds]
                runtime.functions[name](*args)

            deferred.register_fake(lambda *args: None)
            deferred.register_effect(torch.library.EffectType.ORDERED)
            runtime.op = deferred
        sys.modules[runtime.__name__] = runtime
    # two files loaded under one module name must not share a name
    code = function.__code__
    name = f"{{function.__module__}}.{{function.__qualname__}}@{{code.co_filename}}"
    # a function with an `{IN_GRAPH}` keyword is told when the graph runs it
    parameters = inspect.signature(function).parameters
    located = "{IN_GRAPH}" in parameters
    # the parameters it reads only for a number or metadata, whose text has no
    # grad_fn: there, a tensor that requires grad goes to the op too
    read = {{
        index for index, name in enumerate(parameters)
        if name.startswith(("{NUMBER}", "{METADATA}"))
    }}
    runtime.functions[name] = (
        functools.partial(function, {IN_GRAPH}=True) if located else function
    )
    {INLINE_ONLY}(function)
    level = getattr(
        getattr(torch._C, "_functorch", None), "maybe_current_level", None
    )
    traced = getattr(torch.compiler, "is_dynamo_compiling", lambda: True)

    def kind_of(value):  # an Enum or a numpy scalar prints otherwise: "?"
        if isinstance(value, torch.Tensor):
            return "t"
        kind = next((k for k, type_ in groups if type(value) is type_), "?")
        if kind == "i" and not -(2**63) <= value < 2**63:
            return "?"  # beyond int64: SymInt[] cannot hold it
        if kind == "s" and not value.isascii():
            try:  # str[] cannot hold a lone surrogate (from os.fsdecode)
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "?"
        return kind

    def call(*args):
        if runtime.op is None or not torch.compiler.is_compiling():
            return function(*args)
        if level is not None and level() is not None:
            return function(*args)  # in a torch.func transform (vmap, jvp)
        kinds = "".join(kind_of(arg) for arg in args)
        # a tensor that requires grad prints a grad_fn the op's copy lacks;
        # traced by Dynamo, one of a subclass reaches the op as the graph's
        # plain tensor, which prints without the subclass (a Parameter's
        # shape and number are its tensor's)
        subclasses = traced()
        unlike = any(
            kind == "t" and (
                arg.requires_grad and index not in read
                or subclasses and type(arg) is not torch.Tensor
                and not (index in read and type(arg) is torch.nn.Parameter)
            )
            for index, (kind, arg) in enumerate(zip(kinds, args))
        )
        if "?" in kinds or unlike:
            return function(*args)
        pairs = list(zip(kinds, args))
        values = [[a for k, a in pairs if k == kind] for kind, _ in groups]
        if not values[0]:  # an op with no tensor has no device: Inductor
            values[0] = [torch.empty(0)]  # (CPU) then frees buffers too early
        return runtime.op(name, kinds, *values)

    return {INLINE_ONLY}(call)
'''


def _where_source(name: str, summary: str, exactness: str, grad_test: str) -> str:
    """A selection helper; the two differ in what they do while autograd records."""
    return f'''\
@{INLINE_ONLY}
def {name}(condition, if_true, if_false):
    """{summary}

    Eager, it branches in Python like the original code: it returns the very
    tensor the branch chose, autograd history and aliases included. Under
    torch.compile, torch.where is used only where it is exact: a 0-d bool
    tensor condition on the sides' device (a condition on another device
    fails there; not a meta one, whose truth the `if` cannot read), two dense
    tensors of one shape, dtype, device and strides (the selection keeps that
    layout), and
    {exactness}
    """
    if not torch.compiler.is_compiling():
        return if_true if condition else if_false
    if (
        isinstance(condition, torch.Tensor)
        and condition.dim() == 0
        and condition.dtype == torch.bool
        and isinstance(if_true, torch.Tensor)
        and isinstance(if_false, torch.Tensor)
        and if_true.layout == if_false.layout == torch.strided
        and if_true.shape == if_false.shape
        and if_true.dtype == if_false.dtype
        and if_true.device == if_false.device == condition.device
        and not condition.is_meta
        and if_true.stride() == if_false.stride()
        and {grad_test}
    ):
        selected = torch.where(condition, if_true, if_false)
        if selected.stride() == if_true.stride():
            return selected
    return if_true if condition else if_false
'''


_WHERE_SOURCE = _where_source(
    WHERE,
    "Select like `if condition:`, without a branch on data (graphmend).",
    """neither side requiring grad (autograd would record the selection; without
    it, a kept Parameter would lose its requires_grad). Otherwise it branches
    in Python, exactly as the original code did.""",
    """not (if_true.requires_grad or if_false.requires_grad)""",
)
_WHERE_GRAD_SOURCE = _where_source(
    WHERE_GRAD,
    "Select like `if condition:`, also while autograd records (graphmend).",
    """both sides requiring grad alike (neither while autograd is off, when the
    selection would not require grad where a kept Parameter does): the fixer
    proved that the side not selected passes exact zeros back and reads the
    same tensors as the other, so gradients are the original's. Otherwise it
    branches in Python, as the original code did.""",
    """if_true.requires_grad == if_false.requires_grad
        and (torch.is_grad_enabled() or not if_true.requires_grad)""",
)

_CHECK_SOURCE = f'''\
@{INLINE_ONLY}
def {CHECK}(failed, error, message):
    """Raise `error(message)` if `failed` (graphmend [Trap]).

    The test runs as a deferred call, inside the graph when compiled (see
    {DEFERRED}): eager and compiled, it raises the same exception
    with the same message at the same point.
    """
    {RAISE}(failed, error.__name__, message)


@{DEFERRED}
def {RAISE}(failed, error, message):
    if failed:
        import builtins

        raise getattr(builtins, error)(message)
'''

_DIFFER_SOURCE = f'''\
@{INLINE_ONLY}
def {DIFFER}(a, b):
    """`not torch.equal(a, b)` as a 0-d bool tensor (graphmend [Trap]).

    Compiled, the shapes are compared first (`a != b` would broadcast); as in
    torch.equal, values compare after type promotion and NaN differs from NaN.
    Values other than tensors, and meta tensors, go to torch.equal itself,
    which raises for them as the original did.
    """
    plain = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    if not (plain and torch.compiler.is_compiling()) or a.is_meta or b.is_meta:
        return torch.tensor(not torch.equal(a, b))
    if a.shape != b.shape:
        return torch.ones((), dtype=torch.bool, device=a.device)
    return (a != b).any()
'''

_ITEM_SOURCE = f'''\
@{INLINE_ONLY}
def {ITEM}(value):
    """`value.item()` kept as a tensor that compares with an int exactly as the
    number does (graphmend [Trap], [Where]).

    Python compares the float or int that `.item()` gives with an int exactly;
    so does a 0-d tensor promoted to float64 (floating dtypes) or to int64
    (bool and integer dtypes), for ints below 2**53. Anything else gives
    `value.item()` itself: complex, unsigned 64-bit and quantized tensors,
    meta tensors, floating tensors on MPS (no float64), tensors not 0-d, and
    values that are not tensors.
    """
    if not isinstance(value, torch.Tensor) or value.dim() or value.is_meta:
        return value.item()
    if value.is_floating_point() and value.device.type != "mps":
        return value.to(torch.float64)
    integers = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32)
    if value.dtype in (*integers, torch.int64):
        return value.to(torch.int64)
    return value.item()
'''

_ASSERT_SOURCE = f'''\
@{DEFERRED}
def {ASSERT}(holds, *message):
    """`assert holds, *message` as a deferred call (graphmend [Trap]).

    Inside the graph when compiled (see {DEFERRED}): eager and
    compiled, a failing test raises AssertionError with the same message at
    the same point. The fixed code calls it under `if __debug__:`, so
    `python -O` skips it as it skips the `assert`.
    """
    if not holds:
        raise AssertionError(*message)
'''

_KEEPS_BRANCH_SOURCE = f'''\
@{INLINE_ONLY}
def {KEEPS_BRANCH}(*inputs):
    """Whether an `if` that graphmend [Where] keeps runs as written.

    It does eager, and while autograd records through one of `inputs` (what
    the branches compute with; with none given, whenever grad mode is on):
    there, computing the path not taken could change gradients (AOTAutograd
    would send it a zero gradient, NaN through a division), or the selection
    would show another autograd node. Compiled otherwise, the code after
    `else` computes both sides and selects, without a graph break. A layer
    stands for its weights, whose parameters are looked at: reading a weight
    may run a parametrization (`spectral_norm`) that updates its state.
    """
    if not torch.compiler.is_compiling():
        return True
    if not torch.is_grad_enabled():
        return False
    for value in inputs:
        if isinstance(value, torch.nn.Module):
            if any(p.requires_grad for p in value.parameters()):
                return True
        elif isinstance(value, torch.Tensor) and value.requires_grad:
            return True
    return len(inputs) == 0
'''

_KEEP_SOURCE = f'''\
@{DEFERRED}
def {KEEP}(value):
    """Nothing, at this point of the compiled graph (graphmend [Where]).

    Compiled, the call is an ordered op (see {DEFERRED}) that takes
    `value`: AOTAutograd and Inductor keep computing `value` where nothing
    else reads it, as they keep a value that a graph break returns. Without
    the op (an older torch), the graph breaks here, which keeps it too.
    """
    if torch.compiler.is_compiling():
        torch._dynamo.graph_break()
'''

_DRAW_BELOW_SOURCE = f'''\
@{INLINE_ONLY}
def {DRAW_BELOW}(draw, probability):
    """`draw < probability`, for a draw of `torch.rand` (graphmend [Where]).

    The draw lies in [0, 1): with `probability` a number at 0 or below (or
    NaN) the answer is False, a Python bool, and Dynamo does not break the
    graph to test it. The draw still goes into the graph
    ({KEEP}), where the comparison took it, so the numbers drawn
    after it stay the same. Anything else (None, an array, a tensor), and
    any draw inside a torch.func transform, is compared as written.
    """
    if not isinstance(probability, (int, float)) or probability > 0:
        return draw < probability
    functorch = getattr(torch._C, "_functorch", None)
    level = getattr(functorch, "maybe_current_level", lambda: None)
    if level() is not None:  # in a torch.func transform (vmap), where its
        return draw < probability  # truth is tested as the original did
    {KEEP}(draw)
    return False
'''

_EAGER_FRAME_SOURCE = f'''\
@{INLINE_ONLY}
def {EAGER_FRAME}():
    """Keep a graph break here, in a loop (graphmend).

    A fix removed the break that made Dynamo run this loop's frame eagerly.
    Where the code after this call runs, that break would have happened,
    and Dynamo traces the code otherwise than Python runs it (activation
    checkpointing): traced, the call breaks the graph in the loop, so Dynamo
    runs the whole frame eagerly again, as before the fix. Eager calls do
    nothing.
    """
    if torch.compiler.is_compiling():
        torch._dynamo.graph_break()
'''

#: Fixed helpers that call, or are decorated by, other fixed helpers.
_NEEDS: Dict[str, str] = {
    CHECK: DEFERRED,
    ASSERT: DEFERRED,
    KEEP: DEFERRED,
    DRAW_BELOW: KEEP,
    EAGER_FRAME: INLINE_ONLY,
    **{name: INLINE_ONLY for name in (DEFERRED, DIFFER, ITEM, WHERE, WHERE_GRAD, KEEPS_BRANCH)},
}

#: The fixed helpers, in the order they are emitted.
FIXED_HELPERS: Dict[str, str] = {
    INLINE_ONLY: _INLINE_ONLY_SOURCE,
    DEFERRED: _DEFERRED_SOURCE,
    CHECK: _CHECK_SOURCE,
    DIFFER: _DIFFER_SOURCE,
    ITEM: _ITEM_SOURCE,
    ASSERT: _ASSERT_SOURCE,
    WHERE: _WHERE_SOURCE,
    WHERE_GRAD: _WHERE_GRAD_SOURCE,
    KEEPS_BRANCH: _KEEPS_BRANCH_SOURCE,
    KEEP: _KEEP_SOURCE,
    DRAW_BELOW: _DRAW_BELOW_SOURCE,
    EAGER_FRAME: _EAGER_FRAME_SOURCE,
}


def deferred_helper_source(name: str, parameters: Sequence[str], body: str) -> str:
    """A registered helper ``name(parameters)`` running ``body`` (its lines, indented)."""
    header = f"def {name}({', '.join(parameters)}):"
    if len(header) > HELPER_LINE_LENGTH:
        header = "".join([f"def {name}(\n", *(f"    {p},\n" for p in parameters), "):"])
    return f"@{DEFERRED}\n{header}\n{body}"


def call_source(callee: str, arguments: Sequence[str], indent: str) -> str:
    """The line(s) of ``callee(arguments)`` at ``indent`` in a helper; one argument a line when
    longer than the helpers' line length (79)."""
    call = f"{callee}({', '.join(arguments)})"
    if len(indent) + len(call) > HELPER_LINE_LENGTH or any("\n" in a for a in arguments):
        inner = indent + "    "
        call = "".join([f"{callee}(\n", *(f"{inner}{a},\n" for a in arguments), f"{indent})"])
    return f"{indent}{call}\n"


def _bound_names(tree: ast.Module) -> Set[str]:
    """Every name the module binds or reads anywhere (a new helper must not take one)."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _imports_torch(statement: ast.stmt) -> bool:
    """``import torch`` or ``import torch.x``: both bind the name ``torch``."""
    return isinstance(statement, ast.Import) and any(
        alias.asname is None and alias.name.split(".")[0] == "torch" for alias in statement.names
    )


def _same_code(first: str, second: str) -> bool:
    return ast.dump(ast.parse(first)) == ast.dump(ast.parse(second))


class HelperSet:
    """The helpers one module needs: reuses those already there, names new ones, inserts them.

    With ``helpers_module`` (``mypkg._graphmend``), the fixed helpers are imported from that
    module (see ``helpers_module_source``) instead of being written into the file; the deferred
    helpers, which name the file's own globals, stay in it.
    """

    def __init__(
        self, module: cst.Module, tree: ast.Module, helpers_module: Optional[str] = None
    ) -> None:
        self._existing: Dict[str, str] = {
            statement.name.value: module.code_for_node(statement.with_changes(leading_lines=()))
            for statement in module.body
            if isinstance(statement, cst.FunctionDef) and statement.name.value.startswith(PREFIX)
        }
        self._from = helpers_module
        self._imported: Set[str] = {
            alias.asname or alias.name
            for statement in tree.body
            if isinstance(statement, ast.ImportFrom)
            and statement.level == 0
            and statement.module == helpers_module
            for alias in statement.names
        }
        self._taken = _bound_names(tree) - set(self._existing) - self._imported
        self._has_torch = any(_imports_torch(statement) for statement in tree.body)
        self._new: Dict[str, str] = {}
        self._new_imports: Set[str] = set()

    def fixed(self, name: str) -> str:
        """Request one of ``FIXED_HELPERS`` by name; returns the name."""
        if name in self._taken:
            raise HelperNameTaken(name)
        if self._from is not None:
            if name not in self._imported:
                self._new_imports.add(name)
            return name
        if name in _NEEDS:
            self.fixed(_NEEDS[name])
        if name not in self._existing:
            self._new.setdefault(name, FIXED_HELPERS[name])
        elif not _same_code(self._existing[name], FIXED_HELPERS[name]):
            raise HelperNameTaken(name, "a function of another body (another version's helper?)")
        return name

    def deferred(
        self, base: str, parameters: Sequence[str], body: str, shared: bool = True
    ) -> str:
        """The name of a registered helper ``(parameters)`` running ``body`` (its lines, indented
        once): an identical existing one (if ``shared``), or a new one."""
        self.fixed(DEFERRED)
        for number in range(1, 100):
            name = base if number == 1 else f"{base}_{number}"
            source = deferred_helper_source(name, parameters, body)
            if name in self._taken:
                continue
            known = self._new.get(name, self._existing.get(name))
            if known is None:
                self._new[name] = source
                return name
            if shared and _same_code(known, source):
                return name
        raise HelperNameTaken(base)

    def insert(self, module: cst.Module) -> cst.Module:
        """``module`` with the new helpers (and ``import torch`` if missing) after its imports."""
        if not (self._new or self._new_imports):
            return module
        order = list(FIXED_HELPERS)  # fixed helpers first, then the deferred ones as requested
        names = sorted(
            self._new, key=lambda name: order.index(name) if name in order else len(order)
        )
        parts = [self._new[name] for name in names]
        body = list(module.body)
        if self._new_imports:
            imported = sorted(self._imported | self._new_imports, key=order.index)
            statement = f"from {self._from} import {', '.join(imported)}\n"
            existing = _import_from(body, self._from or "")
            if existing is None:
                parts.insert(0, statement)
            else:
                body[existing] = cst.parse_statement(
                    statement, config=module.config_for_parsing
                ).with_changes(leading_lines=body[existing].leading_lines)
        if not parts:
            return module.with_changes(body=body)
        text = _indented("\n\n".join(parts), module.default_indent)
        if not self._has_torch:
            text = "import torch\n\n\n" + text
        config = module.config_for_parsing
        statements = list(
            cst.parse_module(text.replace("\n", module.default_newline), config=config).body
        )
        position = _insertion_index(module)
        blank = (cst.EmptyLine(), cst.EmptyLine())
        statements = [statement.with_changes(leading_lines=blank) for statement in statements]
        follows_import = not self._has_torch or (self._new_imports and existing is None)
        if position == 0 or follows_import:  # it starts the module, or is (after) an import
            statements[0] = statements[0].with_changes(leading_lines=())
        if position < len(body):
            following = body[position]
            body[position] = following.with_changes(
                leading_lines=_two_blank_lines_first(following.leading_lines)
            )
        body[position:position] = statements
        return module.with_changes(body=body)


def helpers_module_source() -> str:
    """The module that ``--helpers-module`` names: every fixed helper, importing only torch."""
    header = (
        '"""The helpers that code fixed by graphmend imports (`--helpers-module`).\n\n'
        "Written by `graphmend helpers`; it imports torch alone. Write it again, rather\n"
        'than edit it, when graphmend is upgraded.\n"""\n\nimport torch\n'
    )
    return header + "".join(f"\n\n{source}" for source in FIXED_HELPERS.values())


def _import_from(body: Sequence[cst.BaseStatement], name: str) -> Optional[int]:
    """The index of the statement ``from <name> import ...`` in ``body``, if any."""
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, cst.ImportFrom)
            and not small.relative
            and small.module is not None
            and cst.Module([]).code_for_node(small.module) == name
            for small in statement.body
        ):
            return index
    return None


def _indented(text: str, unit: str) -> str:
    """``text`` (helpers written with four spaces a level) indented with ``unit``, the module's
    own indentation (a tab, two spaces). Only docstrings hold lines that start with spaces
    inside a string; they are indented alike, which their text ignores."""
    if unit == "    ":
        return text
    lines = []
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        lines.append(unit * ((len(line) - len(stripped)) // 4) + stripped)
    return "\n".join(lines)


class HelperNameTaken(Exception):
    """The module already uses a helper's name for something else."""

    def __init__(self, name: str, what: str = "") -> None:
        used = f" for {what}" if what else ""
        super().__init__(f"the module already uses the name `{name}`{used}")


def _two_blank_lines_first(lines: Sequence[cst.EmptyLine]) -> Tuple[cst.EmptyLine, ...]:
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    return (cst.EmptyLine(),) * max(0, 2 - blank) + tuple(lines)


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _insertion_index(module: cst.Module) -> int:
    """After the helpers of an earlier run, else after the last import before any def or class."""
    index = 1 if module.body and _is_docstring(module.body[0]) else 0
    for position, statement in enumerate(module.body):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
        ):
            index = position + 1
    for position, statement in enumerate(module.body):
        if isinstance(statement, cst.FunctionDef) and statement.name.value.startswith(PREFIX):
            index = max(index, position + 1)
    return index
