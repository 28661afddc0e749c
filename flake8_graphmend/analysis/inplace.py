"""Where torch's activations and dropouts take ``inplace``: by keyword, or by position
(``F.relu(h, True)``, ``nn.LeakyReLU(0.2, True)``), as GAN and detection code often passes it;
and functions that update arguments by their name alone (``torch._foreach_mul_``,
``operator.imul``)."""

from __future__ import annotations

import ast
from typing import List, Optional

#: Functions of ``torch.nn.functional``: the position of ``inplace`` among their arguments.
FUNCTION_INPLACE = {
    **dict.fromkeys(("relu", "relu6", "silu", "hardswish", "hardsigmoid", "mish", "selu"), 1),
    **dict.fromkeys(("elu", "celu", "leaky_relu"), 2),
    **dict.fromkeys(("hardtanh", "threshold"), 3),
    **dict.fromkeys(
        ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
         "dropout3d"),
        3,
    ),
    "rrelu": 4,
}
#: ``torch.nn`` modules: the position of ``inplace`` among their constructor's arguments.
MODULE_INPLACE = {
    **dict.fromkeys(("ReLU", "ReLU6", "SiLU", "Hardswish", "Hardsigmoid", "Mish", "SELU"), 0),
    **dict.fromkeys(
        ("ELU", "CELU", "LeakyReLU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
         "AlphaDropout", "FeatureAlphaDropout"),
        1,
    ),
    **dict.fromkeys(("Hardtanh", "Threshold", "RReLU"), 2),
}


def short_name(call: ast.Call) -> str:
    """``relu`` for ``F.relu(...)`` and ``relu(...)``; "" for other callees."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def passes_inplace(call: ast.Call, position: Optional[int]) -> bool:
    """Whether ``call`` passes ``inplace`` as anything but a literal false: by keyword, or as
    its positional argument number ``position`` (from 0; None: not by position)."""
    values = [k.value for k in call.keywords if k.arg == "inplace"]
    if position is not None and len(call.args) > position:
        values.append(call.args[position])
    return any(not (isinstance(v, ast.Constant) and not v.value) for v in values)


def updates_first_argument(call: ast.Call, name: Optional[str] = None) -> bool:
    """A ``torch.nn.functional`` call (by its short name, or ``name``: what an alias names)
    told to work in place."""
    return passes_inplace(call, FUNCTION_INPLACE.get(name or short_name(call)))


def builds_in_place_module(call: ast.Call) -> bool:
    """A ``torch.nn`` module (by its short name) built to work in place."""
    return passes_inplace(call, MODULE_INPLACE.get(short_name(call)))


#: ``operator``'s in-place functions: ``operator.imul(a, b)`` updates a tensor ``a`` as
#: ``a *= b`` does, ``operator.setitem(a, k, v)`` as ``a[k] = v``.
OPERATOR_UPDATES = frozenset({
    "iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imatmul", "imod", "imul", "ior", "ipow",
    "irshift", "isub", "itruediv", "ixor", "setitem", "delitem",
})


def updated_arguments(call: ast.Call, name: Optional[str] = None) -> List[ast.expr]:
    """What ``call`` updates in place by its name alone (its short name, or ``name``): the
    tensors of the list that a ``torch._foreach_*_`` op gets first (each element of a list or
    tuple display, else the list), the first operand of ``operator.imul(a, b)`` and the
    like."""
    name = name or short_name(call)
    first = call.args[0] if call.args else None
    if first is None or isinstance(first, ast.Starred):
        return []
    if name.startswith("_foreach_") and name.endswith("_"):
        return list(first.elts) if isinstance(first, (ast.List, ast.Tuple)) else [first]
    return [first] if name in OPERATOR_UPDATES else []
