"""What the ``torch.nn`` layers a module builds hold: ``self.proj.weight`` of ``self.proj =
nn.Linear(4, 4)`` is a tensor, ``self.proj.bias`` of ``nn.Linear(4, 4, bias=False)`` is None,
``self.norm.weight`` of ``nn.Identity()`` does not exist.

A positive table: a layer that is not in it, or a build that is not a call of one (a factory,
a class of another module), is not known to hold anything; nor is any layer of a file that
gives modules code to run (``hooks``): a parametrization computes the weight on every read,
a forward hook may replace what the layer returns.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

from .hooks import code_given_to_modules
from .symbols import ModuleSymbols, known_stores, self_attribute

#: (keyword, position, default) of an argument that must be true for a layer to hold a tensor.
_Needs = Tuple[Tuple[str, int, bool], ...]

_CONVOLUTIONS = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                 "ConvTranspose3d")
_AFFINE_TRACKED: Dict[str, _Needs] = {
    "weight": (("affine", 3, True),),
    "bias": (("affine", 3, True),),
    "running_mean": (("track_running_stats", 4, True),),
    "running_var": (("track_running_stats", 4, True),),
    "num_batches_tracked": (("track_running_stats", 4, True),),
}
#: The tensors each ``nn`` layer holds, each with the arguments that must all be true for the
#: layer to hold it (none: always).
LAYER_TENSORS: Dict[str, Dict[str, _Needs]] = {
    "Linear": {"weight": (), "bias": (("bias", 2, True),)},
    "Bilinear": {"weight": (), "bias": (("bias", 3, True),)},
    **{name: {"weight": (), "bias": (("bias", 7, True),)} for name in _CONVOLUTIONS},
    "Embedding": {"weight": ()},
    "EmbeddingBag": {"weight": ()},
    "PReLU": {"weight": ()},
    "LayerNorm": {
        "weight": (("elementwise_affine", 2, True),),
        "bias": (("elementwise_affine", 2, True), ("bias", 3, True)),
    },
    "RMSNorm": {"weight": (("elementwise_affine", 2, True),)},
    "GroupNorm": {"weight": (("affine", 3, True),), "bias": (("affine", 3, True),)},
    **{name: _AFFINE_TRACKED for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                                          "SyncBatchNorm")},
    **{
        name: {key: tuple((k, p, False) for k, p, _ in needs)
               for key, needs in _AFFINE_TRACKED.items()}
        for name in ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d")
    },
}


def holds_tensor(node: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``node``, ``self.proj.weight``, is surely a tensor, read without running code:
    ``self.proj`` is built in this file, on every build, as an ``nn`` layer that holds
    ``weight`` with the arguments given (``LAYER_TENSORS``), and the file parametrizes no
    module (``spectral_norm(self.proj)`` makes the weight a property that computes it)."""
    return layer_tensor(node, symbols) and code_given_to_modules(symbols.tree) is None


def computed_on_read(node: ast.expr, symbols: ModuleSymbols) -> Optional[ast.expr]:
    """Where the file gives modules code to run (``spectral_norm(self.proj)``), when ``node``,
    ``self.proj.weight``, is a tensor of an ``nn`` layer of the file: reading it may run that
    code. None otherwise."""
    given = code_given_to_modules(symbols.tree)
    return given if given is not None and layer_tensor(node, symbols) else None


def layer_tensor(node: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``node``, ``self.proj.weight``, is a tensor of what ``self.proj`` is on every
    build of the file: an ``nn`` layer that holds ``weight`` (``LAYER_TENSORS``), maybe
    computed on read (``holds_tensor`` is the stricter question)."""
    if not isinstance(node, ast.Attribute):
        return False
    builds = known_stores(symbols.tree, self_attribute(node.value))
    return bool(builds) and all(_built_with(build, node.attr, symbols) for build in builds)


def _built_with(build: ast.expr, name: str, symbols: ModuleSymbols) -> bool:
    """Whether the layer ``build`` makes holds a tensor ``name`` (``LAYER_TENSORS``)."""
    if not isinstance(build, ast.Call):
        return False
    qualified = symbols.qualified_name(build.func) or ""
    needs = LAYER_TENSORS.get(qualified.rpartition(".")[2], {}).get(name)
    if not qualified.startswith("torch.nn.") or needs is None:
        return False
    if any(isinstance(a, ast.Starred) for a in build.args) or any(
        k.arg is None for k in build.keywords
    ):
        return False
    for keyword, position, default in needs:
        given = next((k.value for k in build.keywords if k.arg == keyword), None)
        if given is None and position < len(build.args):
            given = build.args[position]
        true = isinstance(given, ast.Constant) and given.value is True
        if not (default if given is None else true):
            return False
    return True


#: Settings that ``nn`` layers keep as plain Python values, never None.
LAYER_SETTINGS = frozenset({
    "in_features", "out_features", "in1_features", "in2_features", "in_channels",
    "out_channels", "kernel_size", "stride", "dilation", "groups", "eps", "normalized_shape",
    "num_embeddings", "embedding_dim", "num_features", "num_groups", "num_channels",
    "elementwise_affine", "affine", "embed_dim", "num_heads", "head_dim",
})


def holds_setting(node: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``node``, ``self.proj.out_features``, is a setting (``LAYER_SETTINGS``) of what
    ``self.proj`` is on every build of the file: an ``nn`` layer."""
    if not (isinstance(node, ast.Attribute) and node.attr in LAYER_SETTINGS):
        return False
    builds = known_stores(symbols.tree, self_attribute(node.value))
    return bool(builds) and all(
        isinstance(build, ast.Call)
        and (symbols.qualified_name(build.func) or "").startswith("torch.nn.")
        for build in builds
    )


#: ``nn`` layers that return floating point tensors (of their weights' dtype).
_FLOAT_LAYERS = frozenset({
    "Linear", "Bilinear", "Embedding", "EmbeddingBag", "LayerNorm", "RMSNorm", "GroupNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", *_CONVOLUTIONS,
})


def builds_float_layer(func: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether calling ``func``, ``self.proj``, calls an ``nn`` layer of ``_FLOAT_LAYERS`` built
    without a ``dtype`` on every build of the file, which registers no forward hook (one may
    return another value): what it returns is floating point."""
    if code_given_to_modules(symbols.tree) is not None:
        return False
    builds = known_stores(symbols.tree, self_attribute(func))
    return bool(builds) and all(
        isinstance(build, ast.Call)
        and _float_layer(symbols.qualified_name(build.func) or "")
        and not any(k.arg in ("dtype", None) for k in build.keywords)  # `dtype=complex64`
        for build in builds
    )


def _float_layer(qualified: str) -> bool:
    return qualified.startswith("torch.nn.") and qualified.rpartition(".")[2] in _FLOAT_LAYERS
