"""What a tensor computed on a path not taken is known to be, where an operation raises for
some dtypes (measured on torch 2.13): ``x.mean()``, ``x.softmax(-1)``, ``torch.finfo(x.dtype)``
raise for integer and bool tensors. The original computes such an operation only on the path
it takes; a [Where] selection computes both paths, so it may do so only on tensors known to
suit it: floating point or complex (``INEXACT``). (``x.softmax(-1)``, ``x.clamp(...)`` and
``x < 0`` raise for complex tensors, ``x.relu()`` and ``-x`` for bool ones: not judged, a
known problem of GM201.)

The facts tracked: ``INEXACT`` (floating point or complex: what ``mean`` and ``norm``
succeeded on), ``REAL`` (not complex: what a comparison succeeded on), ``BOOL``, and
``RUN_INEXACT`` (floating point or complex when the graph runs, not while Dynamo traces: what
``std`` or ``softmax``, whose fake kernels take integer tensors, succeeded on). Floating point
is ``INEXACT`` and ``REAL``. They come from how a local is bound (``h = self.proj(x)``: an
``nn.Linear`` returns floating point; ``h = x.float()``; ``h = x * 0.5`` of a real ``x``) and
from the operations
the test of the ``if`` computed before the selection (``if x.sum() > 0:`` proves ``x`` real,
``if x.dtype == torch.float16`` floating point), and from what the code before the ``if``
computed on every path to it (``std = adv.std()`` proves ``adv`` floating point or complex).
A parameter is known only by such proofs.
"""

from __future__ import annotations

import ast
from typing import (
    AbstractSet, Callable, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Set,
    Tuple,
)

from .index import (
    TRY_STATEMENTS, bound_without_value, child_blocks, names_bound_by, outer_names, parent_map,
    walk,
)
from .layers import builds_float_layer, holds_tensor
from .symbols import (
    ModuleSymbols, is_self, is_super_call, known_stores, self_attribute, self_chain,
)
from .tensor_methods import TENSOR_METHODS
from .values import Kind, ValueAnalysis, reads_metadata

INEXACT = "inexact"
REAL = "real"
BOOL = "bool"
FLOATING = frozenset({INEXACT, REAL})
BOOLEAN = frozenset({REAL, BOOL})
Facts = FrozenSet[str]
_NONE: Facts = frozenset()
#: The values that may give a name its value where a node starts, each with its binding; None
#: where one of them is not known (a parameter's value on entry).
Reaching = Callable[[str, ast.AST], Optional[List[Tuple[ast.expr, ast.AST]]]]

#: Operations that raise for integer and bool tensors, by what succeeding proves of their
#: tensor: floating point (``softmax``, ``gelu``, which raise for complex ones too), or
#: floating point or complex (``mean``, ``norm``). They need ``INEXACT`` (complex tensors are
#: not judged).
_NEEDS: Dict[str, Facts] = {
    **dict.fromkeys(
        ("softmax", "log_softmax", "gelu", "softplus", "hardsigmoid", "hardswish", "frac",
         "nanmean", "elu", "leaky_relu", "mish"),
        FLOATING,
    ),
    **dict.fromkeys(("mean", "norm", "std", "var", "silu", "lerp"), frozenset({INEXACT})),
}
#: Operations of ``_NEEDS`` that take an integer tensor where given a floating ``dtype=``
#: (``norm`` and ``nanmean`` still raise, measured on torch 2.13).
_COMPUTED_IN_DTYPE = frozenset({"mean", "softmax", "log_softmax"})
#: Operations of ``_NEEDS`` whose result is real, of a complex tensor too.
_REAL_RESULTS = frozenset({"norm", "std", "var"})
#: Operations of ``_NEEDS`` that check the dtype while Dynamo traces too (their fake kernels
#: raise for every integer dtype and bool, measured on torch 2.13). The others check it only
#: when the graph runs: traced, they give an integer tensor of an integer one.
_CHECKED_WHEN_TRACED = frozenset({"mean", "nanmean", "norm", "elu", "leaky_relu"})
#: Those that check it while Dynamo traces for some arguments (``softplus`` given a float
#: ``beta`` or ``threshold``): a need of theirs is judged as one checked then.
_MAY_CHECK_WHEN_TRACED = _CHECKED_WHEN_TRACED | {"softplus"}
#: A third fact: floating point or complex when the graph runs (an operation that checks the
#: dtype only then succeeded on it: ``std = adv.std()``), not while Dynamo traces. Operations
#: that check the dtype when run only may take such a tensor; the others need ``INEXACT``.
RUN_INEXACT = "inexact when run"
_ALL = frozenset({INEXACT, REAL, BOOL, RUN_INEXACT})  # what nothing contradicts yet
#: Products whose tensors must have one dtype (an integer or bool tensor times floating point
#: weights raises, measured on torch 2.13), by the positions of those tensors in the function
#: (in the method, the receiver and the rest) and their keywords. They need each tensor to be
#: ``INEXACT`` (a weight is): two floating tensors of different dtypes are not judged (a known
#: problem of GM201). ``lerp``'s first tensor is judged by ``_NEEDS``.
_MATCHING: Dict[str, Tuple[int, Tuple[str, ...]]] = {
    "matmul": (2, ("input", "other")), "mm": (2, ("input", "mat2")),
    "bmm": (2, ("input", "mat2")), "linear": (3, ("input", "weight", "bias")),
    "lerp": (3, ("end", "weight")),
}
#: Where ``softmax``, ``log_softmax`` and ``norm`` may be given a dtype positionally: the
#: number of positional arguments of the method (of the function, one more) beyond which one
#: may be it (``x.softmax(-1, torch.float32)`` computes in float32 of an integer ``x``).
_DTYPE_POSITION = {"softmax": 1, "log_softmax": 1, "norm": 3}
_NEEDED = frozenset({INEXACT})
#: What bitwise operators need: a bool tensor for `~`, `&`, `|`, `^` (they raise for floating
#: ones; an integer tensor is not judged: no fact shows one), an integer one for shifts, which
#: no fact proves.
_INTEGER = "integer"
_BITWISE: Dict[type, Facts] = {
    **dict.fromkeys((ast.Invert, ast.BitAnd, ast.BitOr, ast.BitXor), frozenset({BOOL})),
    **dict.fromkeys((ast.LShift, ast.RShift), frozenset({_INTEGER})),
}
_OPERATORS = {
    ast.Invert: "~", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
    ast.RShift: ">>",
}
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: The modules whose functions are tensor operations (also ``purity.SAFE_OPERATIONS``').
TORCH_NAMESPACES = ("torch", "torch.nn.functional", "torch.special")
#: Operations that return floating point for a real tensor of any dtype (an integer one too).
_TO_FLOATING = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh",
    "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "erf", "erfc",
    "logsumexp",
})
#: Casts to floating point, and the floating dtypes ``.to()`` may name.
_CASTS = frozenset({"float", "half", "double", "bfloat16"})
_FLOATING_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16", "half", "float",
                              "double"})
#: Operations whose result has their (first) tensor's dtype: what is known of it holds.
_KEEPING = frozenset({
    "sum", "nansum", "prod", "cumsum", "cumprod", "amax", "amin", "max", "min", "abs", "neg",
    "transpose", "permute", "t", "unsqueeze", "squeeze", "flatten", "contiguous", "clone",
    "detach", "view", "view_as", "reshape", "reshape_as", "expand", "expand_as", "repeat",
    "flip", "roll", "narrow", "masked_fill", "nan_to_num", "zeros_like", "ones_like", "tril",
    "triu", "select", "diagonal", "movedim", "square", "dropout", "clamp", "clamp_min",
    "clamp_max", "clip",
})
#: Those of ``_KEEPING`` that keep a bool tensor bool (the others make an integer of it).
_LAYOUT = _KEEPING - {
    "sum", "nansum", "prod", "cumsum", "cumprod", "abs", "neg", "square", "clamp", "clamp_min",
    "clamp_max", "clip",
}
#: Operations that return a bool tensor.
_BOOLEAN_RESULTS = frozenset({
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_and",
    "logical_or", "logical_not", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater",
    "less", "isclose", "isin",
})
#: Operations whose result has the dtype their tensors promote to, as arithmetic does.
_PROMOTING = frozenset({
    "add", "sub", "mul", "multiply", "subtract", "pow", "maximum", "minimum", "fmax", "fmin",
    "lerp", "where",
})
#: torch functions that return floating point (of their inputs, which they take only so: they
#: raise for integer ones).
_FLOAT_FUNCTIONS = frozenset({
    "layer_norm", "group_norm", "rms_norm", "normalize", "scaled_dot_product_attention",
})
#: torch factories that return the default dtype (floating point) without ``dtype=``.
_FLOATING_FACTORIES = frozenset({"randn", "rand", "ones", "zeros", "empty", "linspace"})
#: Through these, what the test proves of a value holds of the tensor it was computed from
#: (not through a cast or ``abs``, whose result of a complex tensor is real).
_PROVING_THROUGH = frozenset({
    "sum", "nansum", "mean", "nanmean", "amax", "amin", "max", "min", "prod", "transpose",
    "permute", "t", "unsqueeze", "squeeze", "flatten", "contiguous", "clone", "detach", "view",
    "reshape", "expand",
})


class Dtypes:
    """The facts known of the tensors of one function (``ValueAnalysis``) where ``at`` starts,
    with those the test of an ``if`` proved of its names (``proven``). Names are followed
    through the bindings that reach (``reaching``, flow-sensitive) where it is given; else,
    and for names ``rebound`` between ``at`` and the code judged (by the branch before it),
    through every binding of the function, a parameter's value being not known."""

    def __init__(
        self,
        values: ValueAnalysis,
        symbols: ModuleSymbols,
        proven: Mapping[str, Facts],
        reaching: Optional[Reaching] = None,
        at: Optional[ast.AST] = None,
        rebound: AbstractSet[str] = frozenset(),
    ) -> None:
        self.values, self.symbols = values, symbols
        self.proven = {name: facts for name, facts in proven.items() if name not in rebound}
        self.reaching, self.at, self.rebound = reaching, at, rebound
        self._names: Dict[Tuple[str, int], Facts] = {}

    def rebinding(self, names: AbstractSet[str]) -> "Dtypes":
        """These facts, for code that runs after ``names`` are bound again (by the branch
        before it): they are followed through all their bindings, and what the test proved of
        them no longer holds."""
        rebound = {*self.rebound, *names}
        return Dtypes(self.values, self.symbols, self.proven, self.reaching, self.at, rebound)

    def failure(self, node: ast.AST) -> Optional[str]:
        """Why ``node`` may raise for the dtype of a tensor it computes with (``_NEEDS``, and
        the mask of ``masked_fill`` or ``torch.where``, which must be bool)."""
        for operand, needs, name, at, traced in self._needed(node):
            if self._python_value(operand):
                continue
            facts = self.facts(operand, 0, at)
            if RUN_INEXACT in facts and not traced:
                facts = facts | {INEXACT}  # it checks the dtype when run only, as the proof did
            if not needs <= facts:
                what = (
                    "an integer tensor" if _INTEGER in needs
                    else "a bool tensor" if BOOL in needs else "floating point"
                )
                known = "not known to be" if RUN_INEXACT not in facts else (
                    "known to be only when the graph runs (what proved it checks the dtype "
                    "only then), not while Dynamo traces, where this operation checks it"
                )
                if name.strip("`") in ("@", *_MATCHING):
                    what += " and another tensor of the product is"
                return (
                    f"`{ast.unparse(node)}` raises where `{ast.unparse(operand)}` is not "
                    f"{what}, which it is {known} ({name} on the path that did not run it)"
                )
        return None

    def _python_value(self, operand: ast.expr) -> bool:
        """A value known while tracing (``-self.threshold``), not a tensor of unknown dtype.
        (What ``self`` holds is judged by ``facts``: a layer's weight or an ``nn.Parameter`` is
        floating point, a buffer is not known.)"""
        return self.values.kind(operand) is Kind.STATIC

    def _needed(
        self, node: ast.AST
    ) -> Iterator[Tuple[ast.expr, Facts, str, Optional[ast.AST], bool]]:
        """Each tensor ``node`` computes with that must suit the operation, with what it needs,
        the operation, where its value is judged (a binding, for ``torch.finfo(dtype)`` of a
        local ``dtype = x.dtype``), and whether the operation checks it while Dynamo traces."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            for operand in (node.left, node.right):
                yield operand, _NEEDED, "`@`", self.at, True
            return
        if isinstance(node, (ast.UnaryOp, ast.BinOp)) and type(node.op) in _BITWISE:
            operands = [node.operand] if isinstance(node, ast.UnaryOp) else [node.left, node.right]
            operator = f"`{_OPERATORS[type(node.op)]}`"
            for operand in operands:  # `~mask`, `a & b`, `x >> 1`
                yield operand, _BITWISE[type(node.op)], operator, self.at, True
            return
        if not isinstance(node, ast.Call):
            return
        func = node.func
        yield from self._matched(node)
        operation = func.attr if isinstance(func, ast.Attribute) else ""
        needs = _NEEDED if operation in _NEEDS else None
        if operation == "round" and any(k.arg == "decimals" for k in node.keywords):
            needs = _NEEDED  # `round(x, decimals=2)` raises for an integer tensor
        traced = operation in _MAY_CHECK_WHEN_TRACED
        if operation in _COMPUTED_IN_DTYPE and any(k.arg == "dtype" for k in node.keywords):
            needs = None  # `x.mean(dtype=torch.float32)` computes in the dtype given
        if isinstance(func, ast.Attribute) and needs is not None:
            if self._torch(func.value):
                given = [k.value for k in node.keywords if k.arg == "input"]
                for operand in [*node.args[:1], *given]:
                    yield operand, needs, f"`{func.attr}`", self.at, traced
            elif not (is_self(func.value) or is_super_call(func.value)):
                yield func.value, needs, f"`{func.attr}`", self.at, traced
        mask = self._mask(node)
        if mask is not None:
            yield mask, frozenset({BOOL}), f"`{ast.unparse(func)}`", self.at, True
        elif self.symbols.qualified_name(func) == "torch.finfo" and node.args:
            for tensor, at in self._dtypes_of(node.args[0], self.at):
                yield tensor, frozenset({INEXACT}), "`torch.finfo`", at, True

    def _matched(
        self, node: ast.Call
    ) -> Iterator[Tuple[ast.expr, Facts, str, Optional[ast.AST], bool]]:
        """The tensors of a product of ``_MATCHING`` (``torch.matmul(a, b)``, ``a.mm(b)``,
        ``F.linear(x, w)``), but for the receiver of ``lerp``: they must be floating point
        where a weight is (checked while Dynamo traces, for ``bmm`` and ``lerp`` at least)."""
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _MATCHING:
            return
        count, keywords = _MATCHING[func.attr]
        if self._torch(func.value):
            operands = node.args[:count]
        elif is_self(func.value) or is_super_call(func.value) or func.attr == "linear":
            return  # `self.linear(x)`: a module's method, not a product of tensors
        else:
            operands = [func.value, *node.args[:count - 1]]
        if func.attr == "lerp":
            operands = operands[1:]
        operands += [k.value for k in node.keywords if k.arg in keywords]
        for operand in operands:
            yield operand, _NEEDED, f"`{func.attr}`", self.at, True

    def _dtypes_of(
        self, dtype: ast.expr, at: Optional[ast.AST]
    ) -> List[Tuple[ast.expr, Optional[ast.AST]]]:
        """The tensors whose dtype ``dtype`` (computed where ``at`` starts) is, each with where
        it is judged: ``x`` of ``x.dtype``, through a local bound to it (``x`` where that binding
        starts), or ``dtype`` itself where it is not known to be one (judged as a tensor of
        unknown dtype); none for a floating dtype of torch (``torch.float16``)."""
        if _floating_dtype(dtype, self.symbols):
            return []
        if isinstance(dtype, ast.Attribute) and dtype.attr == "dtype":
            return [(dtype.value, at)]
        local = isinstance(dtype, ast.Name) and dtype.id not in self.rebound
        if local and self.reaching is not None and at is not None:
            assert isinstance(dtype, ast.Name)
            bound = self.reaching(dtype.id, at)
            if bound:
                return [found for value, binding in bound
                        for found in self._dtypes_of(value, binding)]
        return [(dtype, at)]

    def _mask(self, node: ast.Call) -> Optional[ast.expr]:
        """The mask of ``x.masked_fill(mask, v)`` or ``torch.masked_fill(x, mask, v)``, the
        condition of ``torch.where(c, a, b)``: they raise unless it is a bool tensor."""
        func = node.func
        if not isinstance(func, ast.Attribute) or is_self(func.value):
            return None
        torch_function = self._torch(func.value)
        if func.attr == "masked_fill":
            position = 1 if torch_function else 0
            given = [k.value for k in node.keywords if k.arg == "mask"]
            return given[0] if given else (
                node.args[position] if len(node.args) > position else None
            )
        if func.attr == "where" and torch_function and len(node.args) == 3:
            return node.args[0]
        return None

    def _torch(self, receiver: ast.expr) -> bool:
        return self.symbols.qualified_name(receiver) in TORCH_NAMESPACES

    def facts(self, node: ast.expr, depth: int = 0, at: Optional[ast.AST] = None) -> Facts:
        """What ``node``, computed where ``at`` starts, is known to be: ``INEXACT``, ``REAL``,
        both, or neither."""
        if depth > 12:
            return _NONE
        if isinstance(node, ast.Name):
            return self._name(node.id, depth, at)
        if isinstance(node, ast.Constant):  # a number: `1j` makes a complex tensor complex
            if isinstance(node.value, complex):
                return frozenset({INEXACT})
            return FLOATING if isinstance(node.value, float) else frozenset({REAL})
        if isinstance(node, (ast.Subscript, ast.Attribute)) and _extremum_pair(node.value):
            return self._part(node, depth, at)
        if isinstance(node, (ast.Subscript, ast.Starred)):
            return self.facts(node.value, depth + 1, at)
        if isinstance(node, ast.UnaryOp):  # `~mask` stays bool, `-x` is not
            known = self.facts(node.operand, depth + 1, at)
            return known if isinstance(node.op, ast.Invert) else known - {BOOL}
        if isinstance(node, ast.Compare):
            return BOOLEAN
        if isinstance(node, ast.IfExp):
            sides = (self.facts(side, depth + 1, at) for side in (node.body, node.orelse))
            return frozenset.intersection(*map(_with_weaker, sides))
        if isinstance(node, ast.BinOp):
            return self._arithmetic(node, depth, at)
        if isinstance(node, ast.Call):
            return self._call(node, depth, at)
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "data"):
            return self.facts(node.value, depth + 1, at)
        if isinstance(node, ast.Attribute) and (
            node.attr in ("weight", "bias") and holds_tensor(node, self.symbols)
            or _parameter(node, self.symbols)
        ):  # a layer's buffers aside (`num_batches_tracked` is int64)
            return frozenset({INEXACT})  # weights: what requires grad is floating or complex
        return _NONE

    def _name(self, name: str, depth: int, at: Optional[ast.AST]) -> Facts:
        key = (name, id(at))
        if key not in self._names:
            self._names[key] = _NONE  # a binding that reads the name itself adds nothing
            bound: Optional[List[Tuple[ast.expr, Optional[ast.AST]]]]
            if name in bound_without_value(self.values.function):
                bound = None  # `import torch as h`, `case (h, n):`: not what assignments give
            elif self.reaching is not None and at is not None and name not in self.rebound:
                reached = self.reaching(name, at)
                bound = None if reached is None else list(reached)
            elif self.values.is_parameter(name):
                bound = None
            else:
                bound = [(value, None) for value in self.values.assignments_of(name)]
            known = _NONE
            if bound:
                known = _ALL
                for value, binding in bound:
                    known &= _with_weaker(self.facts(value, depth + 1, binding))
            proven = self.proven.get(name, _NONE) if at is self.at else _NONE
            self._names[key] = known | proven
        return self._names[key]

    def _arithmetic(self, node: ast.BinOp, depth: int, at: Optional[ast.AST]) -> Facts:
        operands = [self.facts(node.left, depth + 1, at), self.facts(node.right, depth + 1, at)]
        if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return BOOLEAN if all(BOOL in facts for facts in operands) else _NONE
        promoted = _promoted(operands)  # a true division of integers is floating point
        return promoted | {INEXACT} if isinstance(node.op, ast.Div) else promoted

    def _call(self, node: ast.Call, depth: int, at: Optional[ast.AST]) -> Facts:
        func = node.func
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
        if dtype is not None:  # `zeros_like(x, dtype=torch.long)`, `cumsum(0, dtype=...)`
            if _floating_dtype(dtype, self.symbols):
                return FLOATING
            return BOOLEAN if self.symbols.qualified_name(dtype) == "torch.bool" else _NONE
        qualified = self.symbols.qualified_name(func) or ""
        name = qualified.rpartition(".")[2] if qualified.startswith("torch.") else None
        method = func.attr if isinstance(func, ast.Attribute) and name is None else None
        made = self._made(node, name, method)
        if made is not None:
            return made
        if method is not None and not self._tensor_method(node):
            return _NONE  # `self.exp(x)`, `super().sigmoid(x)`: a module's, not a tensor's
        operation = name or method
        first = node.args[0] if name is not None and node.args else (
            func.value if isinstance(func, ast.Attribute) and method is not None else None
        )
        if operation == "to" and first is not None and self._moved(node):
            return self.facts(first, depth + 1, at)
        if operation == "type_as" and node.args:
            return self.facts(node.args[0], depth + 1, at)
        if first is None or operation is None or _given_dtype(node, operation, name is not None):
            return _NONE  # `x.softmax(-1, dt)`, `x.view(dt)`: in a dtype given
        known = self.facts(first, depth + 1, at)
        if operation in _TO_FLOATING:
            if REAL in known:
                return FLOATING
            # of any tensor floating point or complex; but where a complex number made its
            # tensor inexact and not real (`theta * 1j`), complex, which `gelu` would not take
            return _NONE if INEXACT in known else frozenset({INEXACT})
        if operation in _NEEDS:  # it raises unless the tensor suits it: what follows holds
            if operation not in _CHECKED_WHEN_TRACED and INEXACT not in known:
                return frozenset({RUN_INEXACT})  # traced, an integer tensor gives an integer one
            known = known | _NEEDS[operation]
            return FLOATING if known >= FLOATING or operation in _REAL_RESULTS else known
        kept = operation in _KEEPING and not _extremum_pair(node)  # not `x.max(-1)`: a pair
        if kept and not _elementwise_extremum(node):
            return known if operation in _LAYOUT else known - {BOOL}
        if operation in _PROMOTING:
            operands = [first, *node.args[1 if name else 0:]]
            if operation == "where" and name:
                operands = node.args[1:3]
            return _promoted([self.facts(o, depth + 1, at) for o in operands])
        return _NONE

    def _part(
        self, node: ast.Subscript | ast.Attribute, depth: int, at: Optional[ast.AST]
    ) -> Facts:
        """What a part of ``x.max(dim)`` (``_extremum_pair``) is: its values (``[0]``,
        ``.values``) have ``x``'s dtype, its indices (``[1]``, ``.indices``) are int64; nothing
        is known of another part."""
        call = node.value
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
        if isinstance(node, ast.Subscript):
            index = node.slice
            part = index.value if isinstance(index, ast.Constant) else None
        else:
            part = {"values": 0, "indices": 1}.get(node.attr)
        if part == 1:
            return frozenset({REAL})
        if part != 0:
            return _NONE
        if not self._torch(call.func.value):
            return self.facts(call.func.value, depth + 1, at)
        given = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "input")]
        return self.facts(given[0], depth + 1, at) if given else _NONE

    def _made(self, node: ast.Call, name: Optional[str], method: Optional[str]) -> Optional[Facts]:
        """Floating point where ``node`` makes it whatever it computes with: an ``nn`` layer
        of ``builds_float_layer``, a factory of the default dtype, a layer's function, a cast
        (``.float()``, ``.to(torch.float16)``); nothing known of what is not a torch function
        nor a method; None otherwise (what it makes depends on its tensors)."""
        if builds_float_layer(node.func, self.symbols) or name in _FLOAT_FUNCTIONS:
            return FLOATING
        if name is None and method is None:
            return _NONE
        if name in _FLOATING_FACTORIES:
            return _NONE if node.keywords else FLOATING
        if name in ("tensor", "as_tensor") and len(node.args) == 1:
            return _of_literal(node.args[0])
        operation = name or method
        if operation in _CASTS and not node.args and not node.keywords:
            return FLOATING
        if operation in _BOOLEAN_RESULTS or operation == "bool" and not node.args:
            return BOOLEAN
        dtypes = [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]
        if operation == "to" and any(_floating_dtype(d, self.symbols) for d in dtypes):
            return FLOATING
        if operation == "to" and any(
            self.symbols.qualified_name(d) == "torch.bool" for d in dtypes
        ):
            return BOOLEAN
        return None

    def _tensor_method(self, call: ast.Call) -> bool:
        """Whether ``call`` (``receiver.m(...)``) may be a tensor's method, not one of ``self``,
        ``super()``, a module ``self`` holds (or a local bound to one: ``ops = self.ops``):
        ``m`` is a tensor method of torch, and an operation of ``_TO_FLOATING`` is given no
        argument (a tensor's ``exp()`` takes none; ``ops.exp(x)`` is not it)."""
        func = call.func
        assert isinstance(func, ast.Attribute)
        receiver = func.value
        held = [receiver] + (
            list(self.values.assignments_of(receiver.id)) if isinstance(receiver, ast.Name) else []
        )
        return (
            func.attr in TENSOR_METHODS
            and not is_super_call(receiver)
            and not (func.attr in _TO_FLOATING and call.args and func.attr != "logsumexp")
            and not any(
                isinstance(value, ast.expr) and (
                    is_self(value) or self_chain(value) and not holds_tensor(value, self.symbols)
                )
                for value in held
            )
        )

    def _moved(self, node: ast.Call) -> bool:
        """``.to(x.device)``, ``.to("cuda", non_blocking=True)``: a move that keeps the dtype."""
        return all(k.arg in ("device", "non_blocking") for k in node.keywords) and all(
            self._device(a) for a in node.args
        )

    def _device(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "device" or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
        )


def _of_literal(data: ast.expr) -> Facts:
    """What ``torch.tensor(data)`` makes of a literal (``[True, False]``: bool, ``[0.5, 1]``:
    floating point, ``[[1, -True]]``: an integer); nothing known of another value."""
    try:
        value = ast.literal_eval(data)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NONE
    numbers: List[object] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(item)
        else:
            numbers.append(item)
    if not numbers or not all(type(n) in (bool, int, float) for n in numbers):
        return _NONE
    if all(type(n) is bool for n in numbers):
        return BOOLEAN
    return FLOATING if any(type(n) is float for n in numbers) else frozenset({REAL})


def _with_weaker(facts: Facts) -> Facts:
    """``facts`` with ``RUN_INEXACT`` where they hold ``INEXACT`` (which implies it), so that
    what two values have in common keeps it."""
    return facts | {RUN_INEXACT} if INEXACT in facts else facts


def _promoted(operands: List[Facts]) -> Facts:
    """What is known of the dtype operands promote to: floating point or complex where one of
    them is, real where all are."""
    inexact = any(INEXACT in facts for facts in operands)
    real = bool(operands) and all(REAL in facts for facts in operands)
    return frozenset({INEXACT} if inexact else ()) | frozenset({REAL} if real else ())


def _parameter(node: ast.Attribute, symbols: ModuleSymbols) -> bool:
    """Whether ``node``, ``self.scale``, is an ``nn.Parameter`` that requires grad on every
    build of the file (``torch`` makes no such tensor of an integer dtype)."""
    builds = known_stores(symbols.tree, self_attribute(node))
    return bool(builds) and all(
        isinstance(build, ast.Call)
        and symbols.qualified_name(build.func) in ("torch.nn.Parameter",
                                                   "torch.nn.parameter.Parameter")
        and len(build.args) == 1
        and not build.keywords
        for build in builds
    )


def _floating_dtype(node: ast.expr, symbols: ModuleSymbols) -> bool:
    """``torch.float16`` and the other floating dtypes of torch (``_FLOATING_DTYPES``)."""
    qualified = symbols.qualified_name(node) or ""
    return qualified.startswith("torch.") and qualified[6:] in _FLOATING_DTYPES


def _of_self(node: ast.expr) -> bool:
    """``self`` or an attribute chain of it: a module or an object, not a tensor method's
    receiver (those calls are judged as calls of modules)."""
    return is_self(node) or self_chain(node)


def proven_by(test: ast.expr, symbols: ModuleSymbols) -> Dict[str, Facts]:
    """The facts that computing ``test`` proves of the names it computes with, as the fixed
    code computes it before the selection: an ordering comparison succeeds only on real
    operands, ``mean`` only on floating point or complex ones, ``softmax`` only on floating
    point ones (the parts of a conditional expression, a lambda or a comprehension do not
    count); a conjunct ``x.dtype == torch.float16`` or ``x.is_floating_point()`` of the test,
    true wherever the selection runs, proves ``x`` floating point."""
    conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(
        test.op, ast.And
    ) else [test]
    tested = [_tested_floating(conjunct, symbols) for conjunct in conjuncts]
    succeeded = _succeeded(test, symbols)
    return _of_names([*((t, FLOATING) for t in tested if t is not None), *succeeded], symbols)


def _of_names(
    proofs: Iterable[Tuple[ast.expr, Facts]], symbols: ModuleSymbols
) -> Dict[str, Facts]:
    """What ``proofs`` prove of names: of ``x`` where the proof is of ``x``, ``x[i]``, ``-x``
    or ``x.sum()`` (``_PROVING_THROUGH``)."""
    proven: Dict[str, Set[str]] = {}
    for node, facts in proofs:
        while not isinstance(node, ast.Name):
            if isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                node = node.operand
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _PROVING_THROUGH
                and symbols.qualified_name(node.func.value) != "torch"
                and not any(k.arg == "dtype" for k in node.keywords)
                and not _given_dtype(node, node.func.attr, False)
                and not _elementwise_extremum(node)
            ):
                node = node.func.value
            else:
                break
        if isinstance(node, ast.Name):
            proven.setdefault(node.id, set()).update(facts)
    return {name: frozenset(facts) for name, facts in proven.items()}


def _tested_floating(conjunct: ast.expr, symbols: ModuleSymbols) -> Optional[ast.expr]:
    """``x`` of ``x.dtype == torch.float16`` (a floating dtype) or ``x.is_floating_point()``."""
    if (
        isinstance(conjunct, ast.Compare)
        and len(conjunct.ops) == 1
        and isinstance(conjunct.ops[0], (ast.Eq, ast.Is))
        and isinstance(conjunct.left, ast.Attribute)
        and conjunct.left.attr == "dtype"
    ):
        floating = _floating_dtype(conjunct.comparators[0], symbols)
        return conjunct.left.value if floating else None
    if (
        isinstance(conjunct, ast.Call)
        and isinstance(conjunct.func, ast.Attribute)
        and conjunct.func.attr == "is_floating_point"
        and not conjunct.args
    ):
        return conjunct.func.value
    return None


def _succeeded(
    node: ast.AST, symbols: ModuleSymbols, short_circuit: bool = False, valued: bool = True
) -> Iterator[Tuple[ast.expr, Facts]]:
    """What computing ``node`` proves, where it succeeds: an ordering comparison of real
    operands, an operation of ``_NEEDS`` of a tensor that suits it (``RUN_INEXACT`` where the
    operation checks the dtype only when run, and only where ``valued``: not under a read of
    metadata, ``x.std().numel()``, for which the graph need not compute it); with
    ``short_circuit``, only what Python surely computes: of ``a and b`` and of ``a < b < c``,
    ``a`` and ``a < b``."""
    valued = valued and not reads_metadata(node)
    if isinstance(node, (ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                         ast.GeneratorExp)):
        return
    if short_circuit and isinstance(node, ast.BoolOp):
        yield from _succeeded(node.values[0], symbols, short_circuit, valued)
        return
    children: List[ast.AST] = list(ast.iter_child_nodes(node))
    if isinstance(node, ast.Compare):
        if short_circuit:
            children = [node.left, node.comparators[0]]
        ordered = [  # of `a == b < c`, Python may not compute `b < c`
            (node.left, *node.comparators)[i:i + 2] for i, o in enumerate(node.ops)
            if isinstance(o, _ORDERING) and (i == 0 or not short_circuit)
        ]
        yield from ((operand, frozenset({REAL})) for pair in ordered for operand in pair)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        operation = node.func.attr
        receiver = node.func.value
        function = symbols.qualified_name(receiver) in TORCH_NAMESPACES
        if (
            operation in _NEEDS
            and not any(k.arg == "dtype" for k in node.keywords)
            and not _given_dtype(node, operation, function)
        ):
            proved = _NEEDS[operation] if operation in _CHECKED_WHEN_TRACED else frozenset(
                {RUN_INEXACT} if valued else ()
            )
            if not proved:
                pass
            elif not function and not _of_self(receiver):
                yield receiver, proved
            elif node.args:
                yield node.args[0], proved
    for child in children:
        yield from _succeeded(child, symbols, short_circuit, valued)


def _elementwise_extremum(call: ast.Call) -> bool:
    """``x.max(other)``, ``torch.min(x, other)``: elementwise, with the dtype ``x`` and
    ``other`` promote to (an integer ``x`` and a float ``other`` give floating point), not a
    reduction (``x.max()``, ``x.max(-1)``, ``x.max(dim=1)``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("max", "min")):
        return False
    function = isinstance(func.value, ast.Name) and func.value.id == "torch"
    arguments = call.args[1:] if function else call.args
    dim = arguments[0] if arguments else None
    while isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub):
        dim = dim.operand
    return any(k.arg == "other" for k in call.keywords) or dim is not None and not (
        isinstance(dim, ast.Constant) and type(dim.value) is int
    )


def _extremum_pair(node: ast.expr) -> bool:
    """``x.max(-1)``, ``torch.min(x, dim=1)``: a reduction along a dimension, which gives a
    pair (values, indices), not a tensor."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("max", "min")
        and not _elementwise_extremum(node)
    ):
        return False
    function = isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
    return len(node.args) > int(function) or any(  # `**kw` and `*args` may hold a dim
        k.arg in ("dim", None) for k in node.keywords
    ) or any(isinstance(a, ast.Starred) for a in node.args)


def names_surely_read(node: ast.AST) -> Set[str]:
    """The names whose values computing ``node`` reads on every evaluation: not in an arm of
    a conditional expression, after the first operand of ``and``/``or``, past the first pair
    of a chained comparison, in a lambda or a comprehension, nor only for their metadata
    (``s.numel()``)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return set()
    if reads_metadata(node):
        return set()
    if isinstance(node, ast.IfExp):
        children: List[ast.AST] = [node.test]
    elif isinstance(node, ast.BoolOp):
        children = [node.values[0]]
    elif isinstance(node, ast.Compare):
        children = [node.left, node.comparators[0]]
    else:
        children = list(ast.iter_child_nodes(node))
    return {name for child in children for name in names_surely_read(child)}


def _given_dtype(call: ast.Call, operation: str, function: bool) -> bool:
    """Whether ``call`` may be given a dtype by position (``_DTYPE_POSITION``), or is a
    ``view`` that may reinterpret its tensor (``x.view(torch.int32)``; a view to a shape has
    several sizes, a literal one, or a shape)."""
    if operation == "view" and len(call.args) == 1 and not call.keywords:
        size = call.args[0]
        while isinstance(size, ast.UnaryOp) and isinstance(size.op, ast.USub):
            size = size.operand
        return not (
            isinstance(size, ast.Constant) and type(size.value) is int
            or isinstance(size, (ast.Tuple, ast.List, ast.Starred))
            or isinstance(size, ast.Attribute) and size.attr == "shape"
            or isinstance(size, ast.Call) and getattr(size.func, "attr", "") == "size"
        )
    if operation == "view":
        return any(k.arg == "dtype" for k in call.keywords)
    position = _DTYPE_POSITION.get(operation)
    return position is not None and len(call.args) > position + function


def proven_before(
    at: ast.stmt, function: ast.AST, symbols: ModuleSymbols, live: AbstractSet[str] = frozenset()
) -> Dict[str, Facts]:
    """What the code that runs before ``at`` on every path to it proved of names that keep
    their value till there (``m = x.mean()`` before the ``if`` proves ``x`` floating point or
    complex: for an integer tensor it raised; ``std = adv.std()`` proves ``adv`` so when the
    graph runs, ``RUN_INEXACT``): the assignments and
    expressions before it in its block and in each block around it, and the tests of the
    ``if`` statements around it (what Python's ``and`` and ``or`` surely ran). A name bound in
    between, in a loop around it, or in a ``try`` whose handler or ``else`` holds it, is not
    judged. ``RUN_INEXACT`` comes only from the tests around it and from assignments to names
    in ``live`` (those the ``if``'s own test surely reads, ``names_surely_read``): a value
    nothing reads is dropped from the graph (AOTAutograd's dead-code elimination), and with it
    the failure that proved it."""
    parents = parent_map(function)
    blocked = outer_names(function)  # type: ignore[arg-type]
    proven: Dict[str, Facts] = {}

    def prove(node: ast.AST, short_circuit: bool, unknown: Set[str], read: bool = True) -> None:
        for name, facts in _of_names(_succeeded(node, symbols, short_circuit), symbols).items():
            facts = facts if read else facts - {RUN_INEXACT}
            if name not in unknown and facts:
                proven[name] = proven.get(name, _NONE) | facts

    node: ast.AST = at
    while node is not function and id(node) in parents:
        parent = parents[id(node)]
        if isinstance(parent, _SCOPES) and parent is not function:
            break  # a nested function runs when called, not where it is defined
        blocks = child_blocks(parent) if isinstance(parent, ast.stmt) else [
            getattr(parent, "body", [])  # an except handler's
        ]
        block = next((b for b in blocks if any(s is node for s in b)), None)
        if isinstance(parent, _CUT):
            if not (isinstance(parent, TRY_STATEMENTS) and block is parent.body):
                blocked |= _bound_in(parent)  # a loop's later rounds, a try body cut short
        else:  # what its test or items bind (`if (x := x.long()) ...:`, `with ... as x:`)
            blocked |= {name for part in _header(parent) for name in _bound_in(part)}
        if block is not None:
            for statement in reversed(block[:[id(s) for s in block].index(id(node))]):
                bound = _bound_in(statement)
                value = getattr(statement, "value", None)  # not a local's annotation
                if isinstance(statement, _COMPUTING) and value is not None:
                    read = isinstance(statement, ast.Assign) and all(
                        isinstance(target, ast.Name) and target.id in live
                        for target in statement.targets
                    )
                    prove(value, True, blocked | bound, read)
                blocked |= bound
        if isinstance(parent, ast.If):  # in its body, every conjunct of its test ran
            test = parent.test
            every = block is parent.body and isinstance(test, ast.BoolOp) and isinstance(
                test.op, ast.And
            )
            for conjunct in test.values if every else [test]:  # type: ignore[attr-defined]
                prove(conjunct, True, blocked)
        node = parent
    return proven


#: Where ``proven_before`` stops: another scope.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: Blocks out of which ``proven_before`` judges no name they bind: a loop's (its later rounds
#: run before), a ``try``'s handlers, ``else`` and ``finally`` (its body may have been cut
#: short), a ``case``'s (its pattern binds).
_CASE = getattr(ast, "match_case", ast.ExceptHandler)  # `match` (Python 3.10)
_CUT = (ast.For, ast.AsyncFor, ast.While, *TRY_STATEMENTS, ast.ExceptHandler, _CASE)


#: The statements whose value ``proven_before`` judges.
_COMPUTING = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)


def _header(statement: ast.AST) -> List[ast.AST]:
    """What ``statement`` computes before its blocks: a test, ``with`` items, a subject."""
    return [
        child for field, child in ast.iter_fields(statement)
        if field not in ("body", "orelse", "finalbody", "handlers", "cases")
        and isinstance(child, ast.AST)
    ] + [item for item in getattr(statement, "items", [])]


def _bound_in(node: ast.AST) -> Set[str]:
    """The names that ``node`` may bind or unbind (``names_bound_by`` of it and of what it
    holds, nested functions' bodies too: on the safe side)."""
    return {name for sub in walk(node) for name in names_bound_by(sub)}
