"""What an expression inside a compiled function evaluates to, as far as Dynamo is concerned.

Every expression gets one :class:`Kind`:

* ``TENSOR``: a tensor whose value exists only when the graph runs (``torch.isinf(x).any()``,
  ``x.sum() > 0``, a local assigned from one). Branching on it is data-dependent.
* ``DATA``: a Python value computed from tensor data (``t.item()``, ``torch.equal(a, b)``).
  Producing it is itself the break.
* ``STATIC``: known while tracing (constants, shapes, dtypes, ``x is None``, ``isinstance``,
  ``self.training``). Branching on it costs a guard, not a break.
* ``UNKNOWN``: anything else (attributes of configs, results of submodule calls).

Tensor-ness is never assumed for a bare unannotated parameter: only torch calls, tensor
methods, reductions, annotations (``x: torch.Tensor``) and registered buffers count.
"""

from __future__ import annotations

import ast
import enum
from typing import Callable, Dict, List, Optional, Set

from .index import FunctionFacts, ModuleIndex, walk
from .symbols import ClassInfo, ModuleSymbols, self_call_assignments


class Kind(enum.Enum):
    TENSOR = "tensor"
    DATA = "data"
    STATIC = "static"
    UNKNOWN = "unknown"


#: torch functions that do not return a tensor.
_TORCH_NON_TENSOR = {
    "torch.is_tensor", "torch.is_storage", "torch.is_floating_point", "torch.is_complex",
    "torch.is_grad_enabled", "torch.is_inference_mode_enabled", "torch.is_autocast_enabled",
    "torch.numel", "torch.finfo", "torch.iinfo", "torch.device", "torch.dtype", "torch.Size",
    "torch.get_default_dtype", "torch.get_default_device", "torch.typename",
    "torch.broadcast_shapes",
    "torch.is_nonzero", "torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled",
    "torch.inference_mode", "torch.autocast", "torch.manual_seed", "torch.seed",
    "torch.initial_seed",
    "torch.get_rng_state", "torch.use_deterministic_algorithms",
    "torch.are_deterministic_algorithms_enabled", "torch.compile", "torch.cond",
}
#: Submodules of torch whose functions do not return tensors.
_TORCH_NON_TENSOR_MODULES = (
    "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.jit.", "torch.compiler.",
    "torch._dynamo.", "torch.utils.", "torch.autograd.", "torch.testing.", "torch.version.",
    "torch.onnx.", "torch.fx.", "torch.nn.init.", "torch.nn.utils.", "torch.nn.modules.",
    "torch.overrides.", "torch.library.", "torch.export.", "torch.mps.", "torch.xpu.",
    "torch.random.", "torch.hub.", "torch.profiler.", "torch.amp.", "torch.cpu.", "torch._C.",
    "torch.optim.",
)
#: torch function name prefixes of queries and settings (``torch.get_autocast_dtype``,
#: ``torch.is_...``).
_NON_TENSOR_PREFIXES = ("is_", "get_", "set_", "use_", "are_")
#: torch functions returning a Python bool computed from tensor data.
_TORCH_DATA = {"torch.equal", "torch.allclose", "torch.is_nonzero"}
#: Tensor methods that return static facts (shapes, layout, placement).
_STATIC_METHODS = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "element_size", "is_contiguous",
    "is_floating_point", "is_complex", "get_device", "storage_offset", "data_ptr", "type",
    "has_names", "is_pinned", "is_shared", "is_sparse",
}
#: Tensor methods that turn tensor data into Python values.
_DATA_METHODS = {"item", "tolist", "equal", "allclose"}
#: Methods that are tensor-valued whatever the receiver is (data-dependent reductions and tests).
_REDUCTIONS = {
    "any", "all", "sum", "mean", "max", "min", "amax", "amin", "prod", "argmax", "argmin",
    "count_nonzero", "norm", "std", "var", "isnan", "isinf", "isfinite", "isneginf", "isposinf",
    "logical_and", "logical_or", "logical_not", "logical_xor", "eq", "ne", "gt", "ge", "lt", "le",
    "nansum", "nanmean", "median", "cumsum", "abs",
}
#: Methods only tensors have (modules and containers do not), so their result is a tensor.
_TENSOR_ONLY_METHODS = {
    "squeeze", "unsqueeze", "view", "view_as", "reshape", "reshape_as", "transpose", "permute",
    "contiguous", "flatten", "unflatten", "softmax", "log_softmax", "masked_fill", "matmul",
    "expand", "expand_as", "repeat", "type_as", "clamp", "clamp_min", "clamp_max", "sigmoid",
    "tanh", "exp", "sqrt", "rsqrt", "pow", "narrow", "chunk", "gather", "index_select",
}
#: Keywords of ``str.split`` (``Tensor.split`` takes ``split_size``/``split_size_or_sections`` and
#: ``dim``).
_STR_SPLIT_KEYWORDS = {"sep", "maxsplit"}
#: Attributes that are static facts of a tensor or module.
_STATIC_ATTRIBUTES = {
    "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "requires_grad", "layout",
    "is_leaf", "training", "is_sparse", "is_quantized", "names",
}
#: Attributes of a tensor that are tensors.
_TENSOR_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag", "grad", "data"}
_STATIC_BUILTINS = {"len", "isinstance", "issubclass", "hasattr", "callable", "type", "id", "range"}
_SCALAR_BUILTINS = {"int", "float", "bool", "complex"}
_TENSOR_ANNOTATIONS = {
    "torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor",
    "torch.nn.Parameter",
}
_STATIC_ANNOTATIONS = {
    "int", "float", "bool", "str", "bytes", "torch.dtype", "torch.device", "torch.Size"
}
#: Functions and tensor methods whose result is a boolean tensor.
_BOOL_RESULTS = {
    "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor",
    "bool", "eq", "ne", "gt", "ge", "lt", "le",
}
_REGISTER_METHODS = ("register_buffer", "register_parameter")
_DEPTH_LIMIT = 12
#: The test of an ``if`` that graphmend [Where] keeps as written for eager code and autograd,
#: whose ``else`` selects (``fixers/helpers.py``). The analysis follows the compiled path
#: without autograd, where the fix removed the break: the kept ``if`` is not reported again.
KEEPS_BRANCH = "_graphmend_keeps_branch"
#: Zero-argument probes of the tracing state, with the truth value Dynamo gives them while it
#: traces (torch 2.13's ``tracing_state_functions``, which Dynamo folds to constants, and wrappers
#: such as transformers' ``is_torchdynamo_compiling``): True for "being compiled", False for
#: TorchScript, ``jit.trace``, FX, ONNX and ``torch.export`` (``torch.compiler.is_exporting()``
#: is False under ``torch.compile``). Matched by the called name's last part.
DYNAMO_PROBES = {
    KEEPS_BRANCH: False,
    "is_compiling": True,
    "is_dynamo_compiling": True,
    "is_torchdynamo_compiling": True,
    "is_scripting": False,
    "is_tracing": False,
    "_get_tracing_state": False,
    "is_fx_tracing": False,
    "is_fx_symbolic_tracing": False,
    "is_in_onnx_export": False,
    "is_exporting": False,
    "is_torchdynamo_exporting": False,
}
#: One-argument tests that a value is an FX proxy (symbolic tracing): False for every value
#: Dynamo traces (transformers' ``is_torch_fx_proxy(x)`` is ``isinstance(x, torch.fx.Proxy)``).
FX_PROXY_TESTS = {"is_torch_fx_proxy"}
_FX_PROXY_CLASSES = {"torch.fx.Proxy", "torch.fx.proxy.Proxy"}
#: Stands for a value the analysis does not model (loop and ``with`` targets).
_UNKNOWN_VALUE = ast.Dict(keys=[], values=[])


class _LoopElement(ast.Subscript):
    """An element of an iterated value (the value a ``for`` target receives): a tensor when
    the iterated value is one, an int known while tracing over ``range`` of sizes, else not
    modelled."""

    def __init__(self, iterable: ast.expr):
        super().__init__(value=iterable, slice=ast.Constant(0), ctx=ast.Load())


def _iterated_parts(
    iterable: ast.expr, symbols: ModuleSymbols
) -> Optional[List[Optional[ast.expr]]]:
    """What each part of an element of ``enumerate(a)`` (None: the counter, then ``a``'s
    element) or ``zip(a, b, ...)`` is an element of; None for other iterables."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)):
        return None
    name = iterable.func.id
    if name in symbols.defined_here() or iterable.keywords or any(
        isinstance(arg, ast.Starred) for arg in iterable.args
    ):
        return None
    if name == "enumerate" and len(iterable.args) == 1:
        return [None, iterable.args[0]]
    if name == "zip" and iterable.args:
        return list(iterable.args)
    return None


def parameter_defaults(arguments: ast.arguments) -> Dict[str, ast.expr]:
    """The default value of each parameter that has one, by name."""
    positional = [*arguments.posonlyargs, *arguments.args]
    defaulted = positional[len(positional) - len(arguments.defaults):] if arguments.defaults else []
    defaults = {a.arg: d for a, d in zip(defaulted, arguments.defaults)}
    for parameter, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if default is not None:
            defaults[parameter.arg] = default
    return defaults


def constant_int(node: Optional[ast.expr]) -> Optional[int]:
    """The value of an int literal (``2``, ``-1``), else None."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if negative:
        node = node.operand  # type: ignore[union-attr]
    if not (isinstance(node, ast.Constant) and type(node.value) is int):
        return None
    return -node.value if negative else node.value


def reads_metadata(node: ast.AST) -> bool:
    """``t.shape``, ``t.dtype``, ``t.numel()``, ``t.dim()``, ``len(t)``, ``zeros_like(t)``,
    ``t.new_ones(n)``: what reads only the metadata of its tensor, not its values (which a
    compiled graph then need not compute)."""
    if isinstance(node, ast.Attribute):
        return node.attr in _STATIC_ATTRIBUTES
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name == "len" if isinstance(func, ast.Name) else name in _STATIC_METHODS or (
        name.endswith("_like") or name.startswith("new_")
    )


def is_shape(node: ast.expr) -> bool:
    """A tensor's whole shape, a tuple of ints: ``x.size()`` or ``x.shape``."""
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "size"
            and not node.args
            and not node.keywords
        )
    return isinstance(node, ast.Attribute) and node.attr == "shape"


def is_size(node: ast.expr) -> bool:
    """An int from a tensor's shape: ``x.shape[0]``, ``x.size()[0]``, ``x.size(1)``, ``x.dim()``,
    ``len(x)``."""
    if isinstance(node, ast.Subscript):
        return constant_int(node.slice) is not None and is_shape(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr == "ndim"
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name):
        return node.func.id == "len" and len(node.args) == 1
    if isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        return len(node.args) == 1  # `x.size()` alone is a torch.Size
    return isinstance(node.func, ast.Attribute) and node.func.attr in ("dim", "numel")


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_text(node: ast.expr) -> bool:
    """A string or bytes literal (f-strings included)."""
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def _splits_a_tensor(call: ast.Call) -> bool:
    """Whether ``receiver.split(...)`` is ``Tensor.split`` rather than ``str.split``: a tensor
    split has a size argument that is not text (``name.split()`` and ``name.split("_")`` are
    string splits)."""
    if any(keyword.arg in _STR_SPLIT_KEYWORDS for keyword in call.keywords):
        return False
    if call.args:
        return not _is_text(call.args[0])
    return bool(call.keywords)


def _annotation_kind(annotation: Optional[ast.expr], symbols: ModuleSymbols) -> Kind:
    if annotation is None:
        return Kind.UNKNOWN
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return Kind.UNKNOWN
    if isinstance(annotation, ast.Subscript):
        # Optional[Tensor] / Union[Tensor, None]: a tensor when it is not None.
        head = symbols.qualified_name(annotation.value) or ""
        if head.split(".")[-1] in ("Optional", "Union"):
            inner = annotation.slice
            elements = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            kinds = {_annotation_kind(e, symbols) for e in elements if not _is_none(e)}
            return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        return Kind.UNKNOWN
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [annotation.left, annotation.right]
        kinds = {_annotation_kind(p, symbols) for p in parts if not _is_none(p)}
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
    qualified = symbols.qualified_name(annotation) or ""
    if qualified in _TENSOR_ANNOTATIONS:
        return Kind.TENSOR
    if qualified in _STATIC_ANNOTATIONS:
        return Kind.STATIC
    return Kind.UNKNOWN


def registered_name(call: ast.Call) -> Optional[str]:
    """``"X"`` of ``m.register_buffer("X", ...)`` or ``m.register_parameter("X", ...)``."""
    func = call.func
    first = call.args[0] if call.args else None
    if isinstance(func, ast.Attribute) and func.attr in _REGISTER_METHODS:
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def class_tensor_attributes(
    info: Optional[ClassInfo], symbols: ModuleSymbols, index: ModuleIndex
) -> Set[str]:
    """Attributes of ``self`` that hold tensors: buffers and parameters set up by initialisers."""
    if info is None:
        return set()
    names: Set[str] = set()
    for name, method in info.methods.items():
        if not (name == "__init__" or name.startswith(("_init", "reset", "build"))):
            continue
        facts = index.facts(method)
        names.update(filter(None, map(registered_name, facts.calls)))
        for attribute, value in self_call_assignments(facts.bindings):
            if (symbols.qualified_name(value.func) or "").endswith("nn.Parameter"):
                names.add(attribute)
    return names


class ValueAnalysis:
    """Classifies expressions of one function (see the module docstring)."""

    def __init__(
        self,
        facts: FunctionFacts,
        symbols: ModuleSymbols,
        self_tensors: Set[str],
        argument_kinds: Optional[Dict[str, Kind]] = None,
    ):
        self.function = facts.node
        self.symbols = symbols
        self.self_tensors = self_tensors
        #: Kinds of parameters known from every call of the function in compiled code
        #: (``analysis/arguments.py``; see ``_parameter_kind``).
        self.argument_kinds = argument_kinds or {}
        self._assigned: Dict[str, List[ast.expr]] = {}
        self._params: Dict[str, ast.arg] = {}
        self._cache: Dict[str, Kind] = {}
        self._visiting: Set[str] = set()
        self._truth_visiting: Set[str] = set()
        #: The ``x op v`` values that stand for ``x op= v``: their kind is ``x``'s other
        #: values' joined with ``v``'s (``step = 0`` then ``step += 1``: a number).
        self._augmented: Dict[int, ast.expr] = {}
        args = facts.node.args
        for arg in args.posonlyargs + args.args + args.kwonlyargs:
            self._params[arg.arg] = arg
        self._defaults = parameter_defaults(args)
        for node in facts.bindings:
            self._record_binding(node)
        for clause in facts.comprehensions:
            self._bind_loop_target(clause.target, clause.iter)

    # ------------------------------------------------------------------ bindings
    def _record_binding(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind_target(node.target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            value = ast.BinOp(
                left=ast.Name(node.target.id, ast.Load()), op=node.op, right=node.value
            )
            self._augmented[id(value)] = node.value
            self._assigned.setdefault(node.target.id, []).append(value)
        elif isinstance(node, ast.NamedExpr):
            self._bind_target(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._bind_loop_target(node.target, node.iter)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind_unknown(item.optional_vars)

    def _bind_unknown(self, target: ast.expr) -> None:
        for name in walk(target):
            if isinstance(name, ast.Name):
                self._assigned.setdefault(name.id, []).append(_UNKNOWN_VALUE)

    def _bind_loop_target(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for target in iterable``: each name gets the element it receives, through
        ``enumerate`` and ``zip`` (``for level, (h, w) in enumerate(shapes)``)."""
        if isinstance(target, ast.Name):
            self._assigned.setdefault(target.id, []).append(_LoopElement(iterable))
            return
        parts = _iterated_parts(iterable, self.symbols)
        if isinstance(target, (ast.Tuple, ast.List)) and parts is not None:
            if len(parts) != len(target.elts):
                self._bind_unknown(target)
                return
            for element, part in zip(target.elts, parts):
                if part is None:  # ``enumerate``'s counter
                    self._bind_target(element, ast.Constant(0))
                else:
                    self._bind_loop_target(element, part)
        elif isinstance(target, (ast.Tuple, ast.List)):
            # the parts of an element of a tensor (``for h, w in shapes``) are tensors
            for element in target.elts:
                self._bind_loop_target(element, _LoopElement(iterable))
        else:
            self._bind_unknown(target)

    def _bind_target(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self._assigned.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            # ``values, indices = torch.sort(x)``: the parts of a tensor-valued call are tensors.
            for element in target.elts:
                if isinstance(element, ast.Name):
                    part = value
                    if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                        part = value.elts[target.elts.index(element)]
                    self._assigned.setdefault(element.id, []).append(part)

    def assignments_of(self, name: str) -> List[ast.expr]:
        return self._assigned.get(name, [])

    def is_parameter(self, name: str) -> bool:
        return name in self._params

    def value_kind(self, node: ast.expr) -> Kind:
        """``kind``, except that a parameter the function assigns again counts by what it is
        assigned (``head_mask = self.get_head_mask(head_mask)``): an argument passed on
        after such an assignment is not what the parameter's annotation says."""
        if isinstance(node, ast.Name) and node.id in self._params and node.id in self._assigned:
            return self._combine([self.kind(v) for v in self._assigned[node.id]])
        return self.kind(node)

    def only_assigned(self, name: str, test: Callable[[ast.expr], bool]) -> bool:
        """Whether ``name`` is a local (not a parameter) whose every assigned value passes
        ``test``."""
        bound = self._assigned.get(name, [])
        return bool(bound) and name not in self._params and all(map(test, bound))

    def augmented_operand(self, value: ast.expr) -> Optional[ast.expr]:
        """``v`` where ``value``, one of a name's assigned values, stands for ``x op= v``."""
        return self._augmented.get(id(value))

    # ------------------------------------------------------------------ classification
    def kind(self, node: ast.expr, depth: int = 0) -> Kind:
        if depth > _DEPTH_LIMIT:
            return Kind.UNKNOWN
        method = getattr(self, "_kind_" + type(node).__name__, None)
        return method(node, depth + 1) if method else Kind.UNKNOWN

    def is_data_dependent(self, node: ast.expr) -> bool:
        return self.kind(node) in (Kind.TENSOR, Kind.DATA)

    def may_hold_tensor(self, node: ast.expr) -> bool:
        """Whether the value may be or contain a tensor: anything but a static value or a
        tuple, list, set or dict display of such values (``{"scale": 2}``)."""
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.may_hold_tensor(element) for element in node.elts)
        if isinstance(node, ast.Dict):
            parts = [key for key in node.keys if key is not None] + node.values
            return any(self.may_hold_tensor(part) for part in parts)
        return self.kind(node) is not Kind.STATIC

    def _kind_Constant(self, node: ast.Constant, depth: int) -> Kind:
        return Kind.STATIC

    def _kind_JoinedStr(self, node: ast.JoinedStr, depth: int) -> Kind:
        return Kind.STATIC

    def _kind_Name(self, node: ast.Name, depth: int) -> Kind:
        name = node.id
        if name in self._cache:
            return self._cache[name]
        if name in self._visiting:
            return Kind.UNKNOWN
        self._visiting.add(name)
        try:
            kinds = {
                self.kind(self._augmented.get(id(value), value), depth)
                for value in self._assigned.get(name, [])
            }
            if name in self._params:
                kinds.add(self._parameter_kind(name))
        finally:
            self._visiting.discard(name)
        if not kinds:
            result = Kind.UNKNOWN
        elif Kind.TENSOR in kinds:
            result = Kind.TENSOR
        elif Kind.DATA in kinds:
            result = Kind.DATA
        elif kinds == {Kind.STATIC}:
            result = Kind.STATIC
        else:
            result = Kind.UNKNOWN
        self._cache[name] = result
        return result

    def _parameter_kind(self, name: str) -> Kind:
        """A parameter's kind: its annotation's, unless its default or every call of the
        function in compiled code says otherwise. A bare parameter is a tensor when every call
        passes one; ``flag: Optional[torch.Tensor] = False`` (a mistaken annotation, common in
        transformers) is not one, nor is a parameter annotated Tensor that every call passes
        a Python value known while tracing."""
        annotated = _annotation_kind(self._params[name].annotation, self.symbols)
        default = self._defaults.get(name)
        if (
            annotated is Kind.TENSOR
            and isinstance(default, ast.Constant)
            and isinstance(default.value, (bool, int, float, str))
        ):
            annotated = Kind.UNKNOWN
        passed = self.argument_kinds.get(name)
        if passed is Kind.TENSOR and annotated is Kind.UNKNOWN:
            return Kind.TENSOR
        if passed is Kind.STATIC and annotated is Kind.TENSOR:
            return Kind.STATIC
        return annotated

    def _kind_Attribute(self, node: ast.Attribute, depth: int) -> Kind:
        if node.attr in _STATIC_ATTRIBUTES:
            return Kind.STATIC
        value = node.value
        if isinstance(value, ast.Name) and value.id == "self":
            return Kind.TENSOR if node.attr in self.self_tensors else Kind.UNKNOWN
        qualified = self.symbols.qualified_name(node) or ""
        if (
            qualified.startswith("torch.")
            and isinstance(value, (ast.Name, ast.Attribute))
            and self.symbols.qualified_name(value) in ("torch", "torch.nn")
        ):
            return Kind.STATIC  # torch.float16, torch.bool, ...
        if node.attr in _TENSOR_ATTRIBUTES and self.kind(value, depth) is Kind.TENSOR:
            return Kind.TENSOR
        if self.kind(value, depth) is Kind.STATIC:
            return Kind.STATIC
        return Kind.UNKNOWN

    def _kind_Subscript(self, node: ast.Subscript, depth: int) -> Kind:
        value_kind = self.kind(node.value, depth)
        return value_kind if value_kind in (Kind.TENSOR, Kind.DATA, Kind.STATIC) else Kind.UNKNOWN

    def _kind__LoopElement(self, node: "_LoopElement", depth: int) -> Kind:
        counted = self.counted_range(node)
        if counted is not None and all(self.kind(a, depth) is Kind.STATIC for a in counted.args):
            return Kind.STATIC  # `for i in range(n)` over sizes: an int while tracing
        return Kind.TENSOR if self.kind(node.value, depth) is Kind.TENSOR else Kind.UNKNOWN

    def counted_range(self, node: ast.expr) -> Optional[ast.Call]:
        """The ``range(...)`` call when ``node`` is what a ``for`` target receives from it (an
        int), else None."""
        iterated = node.value if isinstance(node, _LoopElement) else None
        if (
            isinstance(iterated, ast.Call)
            and isinstance(iterated.func, ast.Name)
            and iterated.func.id == "range"
            and "range" not in self.symbols.defined_here()
            and not iterated.keywords
        ):
            return iterated
        return None

    def _kind_Starred(self, node: ast.Starred, depth: int) -> Kind:
        return self.kind(node.value, depth)

    def _kind_NamedExpr(self, node: ast.NamedExpr, depth: int) -> Kind:
        return self.kind(node.value, depth)

    def _combine(self, kinds: List[Kind]) -> Kind:
        if Kind.TENSOR in kinds:
            return Kind.TENSOR
        if Kind.DATA in kinds:
            return Kind.DATA
        if all(k is Kind.STATIC for k in kinds):
            return Kind.STATIC
        return Kind.UNKNOWN

    def _kind_BinOp(self, node: ast.BinOp, depth: int) -> Kind:
        return self._combine([self.kind(node.left, depth), self.kind(node.right, depth)])

    def _kind_UnaryOp(self, node: ast.UnaryOp, depth: int) -> Kind:
        return self.kind(node.operand, depth)

    def _kind_BoolOp(self, node: ast.BoolOp, depth: int) -> Kind:
        return self._combine([self.kind(v, depth) for v in node.values])

    def _kind_Compare(self, node: ast.Compare, depth: int) -> Kind:
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return Kind.STATIC
        if all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            return Kind.UNKNOWN
        operands = [node.left, *node.comparators]
        if any(_is_text(operand) for operand in operands):
            return Kind.STATIC  # ``name == "tiny"``: a tensor compared with text is no tensor
        return self._combine([self.kind(operand, depth) for operand in operands])

    def _kind_IfExp(self, node: ast.IfExp, depth: int) -> Kind:
        return self._combine([self.kind(node.body, depth), self.kind(node.orelse, depth)])

    def _kind_Call(self, node: ast.Call, depth: int) -> Kind:
        func = node.func
        qualified = self.symbols.qualified_name(func) or ""
        if isinstance(func, ast.Name) and func.id not in self.symbols.defined_here():
            if func.id in _STATIC_BUILTINS:
                return Kind.STATIC
            if func.id in _SCALAR_BUILTINS and node.args:
                arg = self.kind(node.args[0], depth)
                return Kind.DATA if arg in (Kind.TENSOR, Kind.DATA) else arg
            if func.id in ("max", "min", "abs", "sum"):
                if not node.args:
                    return Kind.UNKNOWN
                return self._combine([self.kind(a, depth) for a in node.args])
            return Kind.UNKNOWN
        if qualified.startswith("torch."):
            if qualified in _TORCH_DATA:
                return Kind.DATA
            if (
                qualified in _TORCH_NON_TENSOR
                or qualified.startswith(_TORCH_NON_TENSOR_MODULES)
                or qualified.rsplit(".", 1)[-1].startswith(_NON_TENSOR_PREFIXES)
            ):
                return Kind.STATIC
            return Kind.TENSOR
        if isinstance(func, ast.Attribute):
            receiver = self.kind(func.value, depth)
            if func.attr in _DATA_METHODS and receiver is not Kind.STATIC:
                return Kind.DATA
            if receiver is Kind.TENSOR:
                return Kind.STATIC if func.attr in _STATIC_METHODS else Kind.TENSOR
            if receiver is Kind.UNKNOWN and not self._is_module_receiver(func.value):
                if func.attr in _REDUCTIONS or func.attr in _TENSOR_ONLY_METHODS:
                    return Kind.TENSOR
                if func.attr == "split" and _splits_a_tensor(node):
                    return Kind.TENSOR
        return Kind.UNKNOWN

    def _is_module_receiver(self, node: ast.expr) -> bool:
        """``math.max``-style calls on imported modules are not tensor reductions."""
        imports = self.symbols.imports
        return (
            isinstance(node, ast.Name)
            and node.id in imports
            and not imports[node.id].startswith("torch")
        )

    # ------------------------------------------------------------------ tracing-state probes
    def dynamo_truth(self, node: ast.expr, depth: int = 0) -> Optional[bool]:
        """The truth value Dynamo sees for a test built from tracing-state probes, else None.

        ``is_compiling()`` is True, ``torch.jit.is_scripting()`` False (see ``DYNAMO_PROBES``),
        and so is a test for an FX proxy (``isinstance(x, torch.fx.Proxy)``);
        ``not``, ``and`` and ``or`` combine them (``p and <anything>`` is False when ``p`` is),
        and a local name counts when every assignment to it in this function has the same known
        value (``compiling = is_torchdynamo_compiling()``).
        """
        if depth > _DEPTH_LIMIT:
            return None
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == KEEPS_BRANCH:  # whatever it is given
                return False
            if node.keywords:
                return None
            if not node.args:
                return DYNAMO_PROBES.get(name)
            return False if self._tests_fx_proxy(node, name) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value = self.dynamo_truth(node.operand, depth + 1)
            return None if value is None else not value
        if isinstance(node, ast.BoolOp):
            deciding = isinstance(node.op, ast.Or)  # the value that ends the chain
            values = [self.dynamo_truth(operand, depth + 1) for operand in node.values]
            if deciding in values:
                return deciding
            return None if None in values else not deciding
        if isinstance(node, ast.NamedExpr):
            return self.dynamo_truth(node.value, depth + 1)
        if isinstance(node, ast.Name) and node.id not in self._params:
            assigned = self._assigned.get(node.id, [])
            if not assigned or node.id in self._truth_visiting:
                return None
            self._truth_visiting.add(node.id)
            try:
                truths = {self.dynamo_truth(value, depth + 1) for value in assigned}
            finally:
                self._truth_visiting.discard(node.id)
            return truths.pop() if len(truths) == 1 else None
        return None

    def _tests_fx_proxy(self, call: ast.Call, name: str) -> bool:
        """``isinstance(x, torch.fx.Proxy)`` or ``is_torch_fx_proxy(x)``: False under Dynamo,
        whose values are never FX proxies."""
        if len(call.args) == 1:
            return name in FX_PROXY_TESTS
        return (
            len(call.args) == 2
            and isinstance(call.func, ast.Name)
            and call.func.id == "isinstance"
            and self.symbols.qualified_name(call.args[1]) in _FX_PROXY_CLASSES
        )

    def evaluated_operands(self, node: ast.expr) -> List[ast.expr]:
        """The parts of a test that Dynamo evaluates: an ``and`` stops at its first operand
        known to be False, an ``or`` at its first known to be True (``dynamo_truth``)."""
        if isinstance(node, ast.BoolOp):
            stop = isinstance(node.op, ast.Or)
            evaluated: List[ast.expr] = []
            for operand in node.values:
                evaluated.extend(self.evaluated_operands(operand))
                if self.dynamo_truth(operand) is stop:
                    break
            return evaluated
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.evaluated_operands(node.operand)
        return [node]

    # ------------------------------------------------------------------ masks
    def is_bool_mask(self, node: ast.expr, depth: int = 0) -> bool:
        """A boolean tensor (for ``x[mask]``)."""
        if depth > _DEPTH_LIMIT:
            return False
        if isinstance(node, ast.Compare):
            # Only tensors (and arrays) accept a comparison as an index, so an operand of unknown
            # type counts too (``scores > threshold`` with ``threshold`` a Python float).
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return False
            operands = [node.left, *node.comparators]
            if any(_is_text(operand) for operand in operands):
                return False
            return any(self.kind(operand) in (Kind.TENSOR, Kind.UNKNOWN) for operand in operands)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            return self.is_bool_mask(node.operand, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return any(self.is_bool_mask(side, depth + 1) for side in (node.left, node.right))
        if isinstance(node, ast.Call):
            qualified = self.symbols.qualified_name(node.func) or ""
            named = isinstance(node.func, (ast.Attribute, ast.Name))
            name = qualified.rsplit(".", 1)[-1] if named else ""
            if name in _BOOL_RESULTS:
                if qualified.startswith("torch."):
                    return True
                func = node.func
                return isinstance(func, ast.Attribute) and self.kind(func.value) is Kind.TENSOR
            for keyword in node.keywords:
                dtype = keyword.value if keyword.arg == "dtype" else None
                if dtype is not None and self.symbols.qualified_name(dtype) == "torch.bool":
                    return True
        if isinstance(node, ast.Name):
            values = self._assigned.get(node.id, [])
            return bool(values) and all(self.is_bool_mask(v, depth + 1) for v in values)
        return False
