"""Backward passes for ``graphmend verify --grad``: the scalar, the gradients, their differences.

With ``--grad`` every recorded call (eager and compiled, both arms) is followed by a backward
pass on one scalar made from the call's output::

    scalar = sum((leaf.float() * weight).sum() for leaf in output's tensor leaves
                 if leaf.requires_grad)

The leaves are taken in ``compare.flatten_output``'s order. ``weight`` is a float32 tensor of the
leaf's shape, ``torch.randn`` drawn on the CPU from a private ``torch.Generator`` seeded with
``WEIGHT_SEED`` for each call (the global RNG is not touched), then moved to the leaf's device:
every arm and mode weighs an output alike. When no leaf requires grad, no backward pass runs and
the call's record says so (``NO_OUTPUT``).

The targets: every parameter of the model when it is an ``nn.Module`` (``param:<name>``) and
every tensor of the inputs that requires grad (``input:args[0]``, ``input:kwargs['x']``). Before
each call their ``.grad`` is set to None, so a call's gradients are its own; after the backward
pass each ``.grad`` is copied to the CPU, or None where it got no gradient (not zeros: optimizers
skip a None gradient).

Gradients compare bitwise, target by target. A difference only in the sign of zero (-0.0 against
0.0, the values and NaNs equal) is reported as such, for the caller to document.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

from .compare import differs_only_in_zero_signs, leaves, tensor_difference

WEIGHT_SEED = 20260
DONE, NO_OUTPUT, RAISED = "done", "no output tensor requires grad", "raised"
"""What a call's backward pass did (``CallRecord.backward``; None: not asked or not reached)."""
ZERO_SIGNS = "gradients differ only in the sign of zero (-0.0 vs 0.0)"

Gradients = Dict[str, Any]
"""``{"param:<name>" or "input:<path>": CPU tensor or None}``"""


def gradient_targets(model: Any, args: tuple, kwargs: dict) -> Dict[str, Any]:
    """The tensors whose gradients are recorded, by name (see the module docstring)."""
    import torch

    targets: Dict[str, Any] = {}
    if isinstance(model, torch.nn.Module):
        targets.update((f"param:{name}", p) for name, p in model.named_parameters())
    for root, value in (("args", args), ("kwargs", kwargs)):
        targets.update(
            (f"input:{path}", leaf)
            for path, leaf in leaves(value, root)
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad
        )
    return targets


def clear_gradients(targets: Dict[str, Any]) -> None:
    for tensor in targets.values():
        tensor.grad = None


def backward(output: Any, targets: Dict[str, Any]) -> Tuple[str, Optional[Gradients]]:
    """Run the backward pass of ``output``'s scalar; (``DONE``, the targets' gradients), or
    (``NO_OUTPUT``, None) when no output tensor requires grad. Raises what backward raises.

    The graph is kept: an input that autograd computed (a non-leaf) is one graph for every
    recorded call. A non-leaf target that does not retain its gradient has None, read without
    the warning that reading its ``.grad`` gives."""
    scalar = training_scalar(output)
    if scalar is None:
        return NO_OUTPUT, None
    scalar.backward(retain_graph=True)
    return DONE, {
        name: _gradient(tensor) for name, tensor in targets.items()
    }


def _gradient(tensor: Any) -> Any:
    if not (tensor.is_leaf or tensor.retains_grad) or tensor.grad is None:
        return None
    return tensor.grad.detach().to("cpu", copy=True)


def training_scalar(output: Any) -> Any:
    """The scalar of the module docstring, or None when no output tensor requires grad."""
    import torch

    generator = torch.Generator().manual_seed(WEIGHT_SEED)
    total = None
    for leaf in _grad_leaves(output):
        weight = torch.randn(leaf.shape, generator=generator).to(leaf.device)
        term = (leaf.float() * weight).sum()
        total = term if total is None else total + term
    return total


def _grad_leaves(output: Any) -> Iterator[Any]:
    import torch

    for _, leaf in leaves(output, "output"):
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
            yield leaf


def gradient_differences(
    expected: Gradients, actual: Gradients, labels: Tuple[str, str]
) -> List[Tuple[str, bool]]:
    """``(target: what differs, only the sign of zero)`` for each target whose gradient differs;
    ``labels`` name the two sides ("eager original", "compiled fixed")."""
    names = [*expected, *(name for name in actual if name not in expected)]
    found = [
        _difference(name, expected.get(name, _ABSENT), actual.get(name, _ABSENT), labels)
        for name in names
    ]
    return [difference for difference in found if difference is not None]


def _difference(
    name: str, want: Any, got: Any, labels: Tuple[str, str]
) -> Optional[Tuple[str, bool]]:
    if want is _ABSENT or got is _ABSENT:
        return f"{name}: not a target in the {labels[1] if got is _ABSENT else labels[0]}", False
    if want is None or got is None:
        if want is got:
            return None
        return f"{name}: {_has(want)} in the {labels[0]}, {_has(got)} in the {labels[1]}", False
    difference, _ = tensor_difference(want, got)
    if difference is None:
        return None
    if differs_only_in_zero_signs(want, got):
        return f"{name}: only the sign of zero differs", True
    return f"{name}: {difference}", False


_ABSENT = object()


def _has(gradient: Any) -> str:
    return "no gradient" if gradient is None else "a gradient"
