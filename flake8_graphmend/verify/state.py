"""What outlives a call of the workload, to record after each call and to start each recording
from.

The state of a workload is:

- the model's buffers and parameters, and the tensors of the inputs;
- the plain attributes of each submodule (``plain``: tensors, numbers, strings, and tuples,
  lists and dicts of them; other objects by their type's name), less what every
  ``nn.Module`` keeps and the mark ``torch.compile`` leaves on the module it wraps;
- the plain globals of the Python modules that define the model's classes and of the entry
  module (a counter, a cache dict), names that start with ``__`` aside (Dynamo adds some).

``Snapshot`` puts it back as the factory built it: each name and slot gets its first object
again with its first contents (tensors by value, lists, dicts and sets three levels deep), and
a plain attribute or global that a call added is removed.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from .compare import SCALARS, leaves
from .entry import ENTRY_MODULE_NAME, Workload

_TORCH_MARKS = {"_is_torch_compile"}
"""Attributes that torch.compile sets on the module it wraps."""


def state_of(workload: Workload) -> Callable[[], Dict[str, Any]]:
    """A function that gives the workload's state (see the module docstring) now."""
    module = _module_of(workload)
    namespaces = _namespaces(workload)

    def state() -> Dict[str, Any]:
        tensors: Dict[str, Any] = {"inputs": (workload.args, workload.kwargs)}
        if module is not None:
            tensors["buffers"] = dict(module.named_buffers())
            tensors["parameters"] = dict(module.named_parameters())
        for kind, name, namespace, keep in namespaces:
            tensors.setdefault(kind, {})[name] = {
                key: plain(value) for key, value in namespace.items() if keep(key, value)
            }
        return tensors

    return state


def plain(value: Any, depth: int = 3) -> Any:
    """``value`` where it is a tensor, a scalar, or a tuple, list or dict of those (to ``depth``
    levels); else the name of its type: an attribute that holds a config, a function or a
    cache compares by type, not by an address that differs between processes."""
    import torch

    if isinstance(value, (torch.Tensor, *SCALARS)):
        return value
    if depth and isinstance(value, (tuple, list)):
        items = [plain(item, depth - 1) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    if depth and isinstance(value, dict) and all(isinstance(k, (str, int)) for k in value):
        return {key: plain(item, depth - 1) for key, item in value.items()}
    return f"<{type(value).__qualname__}>"


class Snapshot:
    """The workload's state as it is now, to put back before each recording."""

    def __init__(self, workload: Workload) -> None:
        import torch

        self.slots: List[Tuple[Dict[str, Any], str, Any, Any]] = []
        module = _module_of(workload)
        for sub in module.modules() if module is not None else ():
            for table in (sub._buffers, sub._parameters):
                for name, tensor in table.items():
                    if tensor is not None:
                        self.slots.append((table, name, tensor, tensor.detach().clone()))
        self.inputs = [
            (leaf, leaf.detach().clone())
            for _, leaf in leaves((workload.args, workload.kwargs), "inputs")
            if isinstance(leaf, torch.Tensor)
        ]
        self.namespaces = []
        for _, _, namespace, keep in _namespaces(workload):
            first = {
                key: (value, _contents(value))
                for key, value in namespace.items()
                if keep(key, value) and _mutable_plain(value)
            }
            self.namespaces.append((namespace, keep, first))

    def restore(self) -> None:
        """Give each module its buffers and parameters back (a model may register another
        tensor as a buffer: LongRoPE's ``inv_freq``) with their first values, the inputs
        theirs, and each plain attribute and global its first object and contents."""
        import torch

        with torch.no_grad():
            for table, name, tensor, saved in self.slots:
                table[name] = tensor
                tensor.copy_(saved)
            for tensor, saved in self.inputs:
                tensor.copy_(saved)
            for namespace, keep, first in self.namespaces:
                added = [
                    key
                    for key, value in namespace.items()
                    if key not in first and keep(key, value) and _mutable_plain(value)
                ]
                for key in added:
                    del namespace[key]
                for key, (value, contents) in first.items():
                    namespace[key] = value
                    _put_back(value, contents)


_Keep = Callable[[str, Any], bool]


def _module_of(workload: Workload) -> Optional[Any]:
    import torch

    return workload.model if isinstance(workload.model, torch.nn.Module) else None


def _namespaces(workload: Workload) -> List[Tuple[str, str, Dict[str, Any], _Keep]]:
    """(kind, name, namespace, which of its entries are state) for each submodule's attributes
    and each model module's globals."""
    import torch

    internal = set(vars(torch.nn.Module())) - {"training"} | _TORCH_MARKS
    module = _module_of(workload)
    found: List[Tuple[str, str, Dict[str, Any], _Keep]] = []
    for name, sub in module.named_modules(remove_duplicate=False) if module is not None else ():
        found.append(("attributes", name, vars(sub), lambda key, _: key not in internal))
    for python_module in _model_modules(module):
        found.append(("globals", python_module.__name__, vars(python_module), _is_plain_global))
    return found


def _model_modules(module: Optional[Any]) -> Iterator[ModuleType]:
    """The Python modules that define the model's classes, and the entry module."""
    names = {ENTRY_MODULE_NAME}
    if module is not None:
        names.update(type(sub).__module__ for sub in module.modules())
    for name in sorted(names):
        if name in sys.modules:
            yield sys.modules[name]


def _is_plain_global(key: str, value: Any) -> bool:
    """Not a dunder, nor what Dynamo adds to the globals (``__builtins_dict___0``)."""
    return not key.startswith("__") and _mutable_plain(value)


def _mutable_plain(value: Any) -> bool:
    """A value whose name and contents a call may change: a scalar, a tensor or a container."""
    import torch

    return isinstance(value, (torch.Tensor, list, dict, set, tuple, *SCALARS))


def _contents(value: Any, depth: int = 3) -> Any:
    """What a call may change in place, to ``depth`` levels: a copy of a tensor's values, a
    container's items with their own contents."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if not depth:
        return None
    if isinstance(value, list):
        return [(item, _contents(item, depth - 1)) for item in value]
    if isinstance(value, dict):
        return {key: (item, _contents(item, depth - 1)) for key, item in value.items()}
    if isinstance(value, set):
        return set(value)
    return None


def _put_back(value: Any, contents: Any) -> None:
    """Give ``value`` its first ``contents`` again (``_contents``). A container whose items are
    still the first ones is left as it is: a read-only mapping (diffusers' ``FrozenDict``
    config) raises on ``update``, and would be left empty by the ``clear`` before it."""
    import torch

    if contents is None:
        return
    if isinstance(value, torch.Tensor):
        if value.shape == contents.shape:
            value.copy_(contents)
        return
    if isinstance(value, set):
        if value != contents:
            value.clear()
            value.update(contents)
        return
    if isinstance(value, list):
        if not _same_items(value, [item for item, _ in contents]):
            value[:] = [item for item, _ in contents]
        pairs = contents
    else:
        first = {key: item for key, (item, _) in contents.items()}
        if list(value) != list(first) or not _same_items(list(value.values()), first.values()):
            value.clear()
            value.update(first)
        pairs = contents.values()
    for item, inner in pairs:
        _put_back(item, inner)


def _same_items(now: List[Any], first: Iterable[Any]) -> bool:
    """Whether ``now`` holds the very objects ``first`` does, in the same order."""
    then = list(first)
    return len(now) == len(then) and all(a is b for a, b in zip(now, then))
