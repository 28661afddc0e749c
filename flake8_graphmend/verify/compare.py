"""Flatten model outputs to named leaves and compare two of them bit for bit.

Outputs may nest tuples, lists, dicts, ``ModelOutput`` (a mapping), dataclasses and plain
objects such as cache classes (through their attributes). Tensor leaves are compared by their
bytes (so NaN equals NaN and -0.0 differs from 0.0); when they differ the largest absolute
difference is reported. A tensor's layout (strides, ``requires_grad``) compares too, and so does
the aliasing of the leaves (which paths hold one tensor object, which share memory). Other
leaves are compared by ``repr`` (a ``repr`` that raises gives
``<unrepresentable TYPE>``). ``differs_only_in_zero_signs`` tells a difference in the sign of zero
alone (which the gradients comparison documents rather than fails).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

SCALARS = (str, bytes, int, float, complex, bool, type(None))
_MAX_LISTED_DIFFERENCES = 10
_SIGNED_INTEGERS = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


@dataclass
class OutputComparison:
    """Whether two outputs are bitwise equal, and if not, where and by how much they differ."""

    equal: bool
    max_abs_diff: Optional[float] = None
    differences: List[str] = field(default_factory=list)


def flatten_output(
    output: Any, root: str = "output", beside: Sequence[Tuple[str, Any]] = ()
) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """Split an output into ``{path: tensor copied to CPU}`` and ``{path: repr}`` for the rest
    (paths start with ``root``); the values hold each tensor's layout (``PATH (layout)``) and,
    where its leaves alias one another or the ``(path, leaf)`` pairs ``beside``,
    ``ROOT (aliasing)``."""
    import torch

    tensors: Dict[str, Any] = {}
    values: Dict[str, str] = {}
    flat = list(leaves(output, root))
    for path, leaf in flat:
        if isinstance(leaf, torch.Tensor):
            tensors[path] = leaf.detach().to("cpu", copy=True)
            values[f"{path} (layout)"] = _layout(leaf)
        else:
            values[path] = _repr(leaf)
    shared = aliasing([*flat, *beside])
    if shared:
        values[f"{root} (aliasing)"] = shared
    return tensors, values


def aliasing(flat: List[Tuple[str, Any]]) -> str:
    """Which of the ``(path, leaf)`` pairs hold one tensor object, and which tensor objects share
    memory (views; each named by its first path): groups of paths, "" when no two alias. Equal
    aliasing gives equal text."""
    import torch

    objects: Dict[int, List[str]] = {}
    memory: Dict[Tuple[str, int], List[str]] = {}  # the first path of each tensor object
    for path, leaf in flat:
        if not isinstance(leaf, torch.Tensor):
            continue
        where = _memory(leaf)
        if where is not None and id(leaf) not in objects:
            memory.setdefault(where, []).append(path)
        objects.setdefault(id(leaf), []).append(path)
    groups = [
        f"{kind} {sorted(paths)}"
        for kind, table in (("one tensor:", objects), ("one memory:", memory))
        for paths in table.values()
        if len(paths) > 1
    ]
    return "; ".join(sorted(groups))


def _memory(tensor: Any) -> Optional[Tuple[str, int]]:
    """(device, address of the storage) of a strided tensor with elements, else None."""
    import torch

    if tensor.layout != torch.strided or tensor.numel() == 0:
        return None
    try:
        return str(tensor.device), tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (a wrapper subclass)
        return None


def _layout(tensor: Any) -> str:
    import torch

    strides = tuple(tensor.stride()) if tensor.layout == torch.strided else tensor.layout
    return f"strides {strides}, requires_grad {tensor.requires_grad}"


def leaves(value: Any, path: str, seen: Optional[Set[int]] = None) -> Iterator[Tuple[str, Any]]:
    """``(path, leaf)`` of each leaf of ``value`` in order: tensors, scalars, objects met before
    and objects without children (``flatten_output``'s order and paths)."""
    import torch

    seen = set() if seen is None else seen
    if isinstance(value, (torch.Tensor, *SCALARS)) or id(value) in seen:
        yield path, value
        return
    seen.add(id(value))
    children = _children(value)
    if children is None:
        yield path, value
    for key, child in children or ():
        yield from leaves(child, f"{path}{key}", seen)


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a leaf that cannot be shown still compares: by its type
        return f"<unrepresentable {type(value).__qualname__}>"


def _children(value: Any) -> Optional[List[Tuple[str, Any]]]:
    if isinstance(value, Mapping):
        return [(f"[{key!r}]", child) for key, child in value.items()]
    if isinstance(value, (tuple, list)):
        return [(f"[{index}]", child) for index, child in enumerate(value)]
    if dataclasses.is_dataclass(value):
        return [(f".{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return [(f".{name}", child) for name, child in vars(value).items()]
    return None


def compare_outputs(
    expected: Tuple[Dict[str, Any], Dict[str, str]], actual: Tuple[Dict[str, Any], Dict[str, str]]
) -> OutputComparison:
    """Compare two flattened outputs (``expected`` from the original arm)."""
    expected_tensors, expected_values = expected
    actual_tensors, actual_values = actual
    differences: List[str] = []
    largest: Optional[float] = None
    for path in sorted(expected_tensors.keys() | actual_tensors.keys()):
        if path not in actual_tensors or path not in expected_tensors:
            side = "fixed" if path not in actual_tensors else "original"
            differences.append(f"{path}: tensor missing in the {side} output")
            continue
        difference, gap = tensor_difference(expected_tensors[path], actual_tensors[path])
        if difference:
            differences.append(f"{path}: {difference}")
        if gap is not None:
            largest = gap if largest is None else max(largest, gap)
    for path in sorted(expected_values.keys() | actual_values.keys()):
        if expected_values.get(path) != actual_values.get(path):
            differences.append(f"{path}: {expected_values.get(path)} != {actual_values.get(path)}")
    return OutputComparison(not differences, largest, differences[:_MAX_LISTED_DIFFERENCES])


def tensor_difference(expected: Any, actual: Any) -> Tuple[Optional[str], Optional[float]]:
    """(what differs or None, largest absolute difference when shapes and dtypes match)."""
    import torch

    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return (
            f"{expected.dtype}{tuple(expected.shape)} != {actual.dtype}{tuple(actual.shape)}",
            None,
        )
    if torch.equal(_bytes_of(expected), _bytes_of(actual)):
        return None, 0.0
    wide = torch.complex128 if expected.is_complex() else torch.float64
    gap = (expected.to(wide) - actual.to(wide)).abs()
    if expected.is_floating_point() or expected.is_complex():
        both_nan = expected.isnan() & actual.isnan()
        gap = torch.where(both_nan, 0.0, gap.nan_to_num(nan=float("inf")))
    largest = float(gap.max()) if gap.numel() else 0.0
    return f"max |difference| {largest:.3g}", largest


def differs_only_in_zero_signs(expected: Any, actual: Any) -> bool:
    """True when two floating tensors of one dtype and shape differ, and only where both are
    zero (-0.0 against 0.0): equal values, NaNs at the same places with the same bits."""
    import torch

    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return False
    if expected.is_complex():
        expected, actual = torch.view_as_real(expected), torch.view_as_real(actual)
    if not expected.is_floating_point():
        return False
    bits = getattr(torch, _SIGNED_INTEGERS[expected.element_size()])
    expected, actual = expected.reshape(-1).contiguous(), actual.reshape(-1).contiguous()
    differ = expected.view(bits) != actual.view(bits)
    zeros = (expected[differ] == 0) & (actual[differ] == 0)
    return bool(differ.any()) and bool(zeros.all())


def _bytes_of(tensor: Any) -> Any:
    import torch

    return tensor.reshape(-1).contiguous().view(torch.uint8)
