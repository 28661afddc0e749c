"""Whether a call before a raising check may change state that outlives it
(``flake8_graphmend.planning.module_state``): each case is what ``Model.forward`` runs in a
small module that builds its layers the way real code does."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from flake8_graphmend.analysis.symbols import ModuleSymbols
from flake8_graphmend.engine import Options, analyze_tree
from flake8_graphmend.planning.module_state import body_changes_state, call_changes_state

HEADER = """
from collections import OrderedDict

import torch
from torch import nn
import math
import time

import numpy as np
import torch.nn.functional as F
from einops import rearrange
from transformers.activations import ACT2FN
from transformers.utils import is_torch_xla_available, is_torchdynamo_compiling
from transformers.utils import logging as hf_logging
from . import layers
from .layers import ForeignBlock, ForeignCache, ForeignBase, normalize, Tracker

TRACKER = Tracker()
LAYERS = [nn.Linear(4, 4), nn.BatchNorm1d(4)]
hf_logger = hf_logging.get_logger(__name__)


class Mlp(nn.Module):
    def __init__(self, dim, drop_path=0.0):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = ACT2FN["gelu"]
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        return x + self.drop_path(self.act(self.fc(x)))


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return x * (torch.rand(x.shape[0], 1) > self.p)


class Normed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bn = nn.BatchNorm1d(dim)

    def forward(self, x):
        return self.bn(x)


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps += 1
        return x


class Residual(nn.Module):
    def forward(self, x):
        x += 1
        return x


class Through(nn.Module):
    def forward(self, x):
        return x


def helper(x):
    return x * 2


def helper_in_place(x):
    x.mul_(2)
    return x


def helper_through_a_view(x):
    flat = x.view(-1)
    flat.mul_(2)
    return x


def helper_on_a_new_tensor(x):
    y = x * 2
    y.add_(1)
    n = x.size(0)
    n += 1
    return y


def helper_drop_path(x):
    return x * x.new_empty(x.shape[0], 1).bernoulli_(0.9).div_(0.9)


def helper_shift_right(x, start):
    shifted = x.new_zeros(x.shape)
    shifted[..., 1:] = x[..., :-1].clone()
    shifted[..., 0] = start
    return shifted


def helper_collect(x):
    features = []
    features.append(x * 2)
    total = 0
    total += x.size(0)
    return features, total


scale = helper
scale_in_place = helper_in_place


def helper_through_a_loop(pairs):
    for first, _ in pairs:
        first.zero_()
"""

#: name -> (what Model.__init__ builds, what Model.forward runs before it returns, whether one
#: of its calls may change state)
CASES = {
    "torch.nn layers": ("self.lin = nn.Linear(4, 4)", "self.lin(x)", False),
    "a batch norm": ("self.norm = nn.BatchNorm1d(4)", "self.norm(x)", True),
    "a norm built by a factory parameter": ("self.norm = norm_layer(4)", "self.norm(x)", True),
    "a sequential of stateless layers": (
        "self.seq = nn.Sequential(nn.Linear(4, 4), nn.GELU())", "self.seq(x)", False,
    ),
    "a sequential holding a batch norm": (
        "self.seq = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.BatchNorm1d(4)))",
        "self.seq(x)",
        True,
    ),
    "a sequential of a list built here": (
        "layers = []\n        for _ in range(2):\n            layers.append(nn.Linear(4, 4))\n"
        "            layers += [nn.GroupNorm(1, 4), nn.ReLU()]\n"
        "        self.seq = nn.Sequential(*layers)",
        "self.seq(x)",
        False,
    ),
    "a sequential of a list changed otherwise": (
        "layers = [nn.Linear(4, 4)]\n        layers.insert(0, nn.BatchNorm1d(4))\n"
        "        self.seq = nn.Sequential(*layers)",
        "self.seq(x)",
        True,
    ),
    "a sequential of a list handed in": (
        "self.seq = nn.Sequential(*norm_layer)", "self.seq(x)", True,
    ),
    "a sequential of an ordered dict": (
        'self.seq = nn.Sequential(OrderedDict([("fc", nn.Linear(4, 4)), ("act", nn.GELU())]))',
        "self.seq(x)",
        False,
    ),
    "a sequential of an ordered dict holding a batch norm": (
        'self.seq = nn.Sequential(OrderedDict([("bn", nn.BatchNorm1d(4))]))', "self.seq(x)", True,
    ),
    "a sequential of this file's blocks": (
        "self.seq = nn.Sequential(*[Mlp(4) for _ in range(2)])", "self.seq(x)", False,
    ),
    "a sequential of this file's blocks, one normed": (
        "self.seq = nn.Sequential(Mlp(4), Normed(4))", "self.seq(x)", True,
    ),
    "a sequential working in place on its input": (
        "self.seq = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(4, 4))", "self.seq(x)", True,
    ),
    "a sequential working in place on a new tensor": (
        "self.seq = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(4, 4))",
        "self.seq(x * 2)",
        False,
    ),
    "a sequential of a list: a layer, then one working in place, in a loop": (
        "layers = []\n        for _ in range(2):\n            layers.append(nn.Linear(4, 4))\n"
        "            layers.append(nn.ReLU(inplace=True))\n"
        "        self.seq = nn.Sequential(*layers)",
        "self.seq(x)",
        False,
    ),
    "a sequential of a list: one working in place first in a loop": (
        "layers = []\n        for _ in range(2):\n"
        "            layers.append(nn.ReLU(inplace=True))\n"
        "            layers.append(nn.Linear(4, 4))\n"
        "        self.seq = nn.Sequential(*layers)",
        "self.seq(x)",
        True,
    ),
    "a sequential of a list: a layer added on a condition, then one working in place": (
        "layers = []\n        if norm_layer:\n            layers.append(nn.Linear(4, 4))\n"
        "        layers.append(nn.ReLU(inplace=True))\n"
        "        self.seq = nn.Sequential(*layers)",
        "self.seq(x)",
        True,
    ),
    "a sequential working in place after a block of this file": (
        "self.seq = nn.Sequential(Mlp(4), nn.ReLU(inplace=True))", "self.seq(x * 2)", True,
    ),
    "an instance norm": ("self.norm = nn.InstanceNorm1d(4)", "self.norm(x)", False),
    "a sequential a batch norm is added to": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n"
        '        self.seq.add_module("bn", nn.BatchNorm1d(4))',
        "self.seq(x)",
        True,
    ),
    "a sequential a batch norm is set on": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n"
        '        setattr(self.seq, "bn", nn.BatchNorm1d(4))',
        "self.seq(x)",
        True,
    ),
    "an instance norm whose statistics are registered later": (
        "self.norm = nn.InstanceNorm1d(4)\n"
        '        self.norm.register_buffer("running_mean", torch.zeros(4))',
        "self.norm(x)",
        True,
    ),
    "an activation working in place on an instance norm's output": (
        "self.norm = nn.InstanceNorm1d(4)\n        self.act = nn.ReLU(inplace=True)",
        "self.act(self.norm(x))",
        False,
    ),
    "an activation working in place on what a module named like a tensor method hands back": (
        "self.norm = Through()\n        self.act = nn.ReLU(inplace=True)",
        "self.act(self.norm(x))",
        True,
    ),
    "a sequential appended to after it is built": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n"
        "        self.seq.append(nn.BatchNorm1d(4))",
        "self.seq(x)",
        True,
    ),
    "a sequential changed through another name": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n        seq = self.seq\n"
        "        seq.append(nn.BatchNorm1d(4))",
        "self.seq(x)",
        True,
    ),
    "a sequential changed through its namespace": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n"
        "        self.seq._modules.update(bn=nn.BatchNorm1d(4))",
        "self.seq(x)",
        True,
    ),
    "a sequential handed to a method of its class": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n"
        "        nn.Sequential.append(self.seq, nn.BatchNorm1d(4))",
        "self.seq(x)",
        True,
    ),
    "a sequential of a local sequential changed first": (
        "inner = nn.Sequential(nn.Linear(4, 4))\n        inner.append(nn.BatchNorm1d(4))\n"
        "        self.seq = nn.Sequential(inner, nn.ReLU())",
        "self.seq(x)",
        True,
    ),
    "an instance norm built again": (
        "self.norm = nn.InstanceNorm1d(4)\n"
        "        self.norm.__init__(4, track_running_stats=True)",
        "self.norm(x)",
        True,
    ),
    "a sequential of a module-level list": (
        "self.seq = nn.Sequential(*LAYERS)", "self.seq(x)", True,
    ),
    "an activation set to work in place by a walk over the modules": (
        "self.act = nn.ReLU()\n        for m in self.modules():\n"
        "            if isinstance(m, nn.ReLU):\n                m.inplace = True",
        "self.act(x)",
        True,
    ),
    "an activation set to work in place by apply": (
        "self.act = nn.ReLU()\n        self.apply(lambda m: setattr(m, 'inplace', True))",
        "self.act(x)",
        True,
    ),
    "a layer whose weights apply fills": (
        "self.lin = nn.Linear(4, 4)\n"
        "        self.apply(lambda m: nn.init.zeros_(m.weight) if isinstance(m, nn.Linear) "
        "else None)",
        "self.lin(x)",
        False,
    ),
    "layers iterated through enumerate": (
        "self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])",
        "for i, layer in enumerate(self.layers):\n            x = layer(x)",
        False,
    ),
    "layers iterated through zip with norms": (
        "self.layers = nn.ModuleList([nn.Linear(4, 4)])\n"
        "        self.norms = nn.ModuleList([nn.LayerNorm(4)])",
        "for layer, norm in zip(self.layers, self.norms):\n            x = norm(layer(x))",
        False,
    ),
    "layers whose enumeration is handed on": (
        "self.layers = nn.ModuleList([nn.Linear(4, 4)])\n"
        "        pairs = enumerate(self.layers)\n        self.pairs = list(pairs)",
        "for i, layer in enumerate(self.layers):\n            x = layer(x)",
        True,
    ),
    "a sequential read, not changed": (
        "self.seq = nn.Sequential(nn.Linear(4, 4))\n        n = len(self.seq)\n"
        "        w = self.seq[0].weight",
        "self.seq(x)",
        False,
    ),
    "an instance norm keeping running statistics": (
        "self.norm = nn.InstanceNorm1d(4, track_running_stats=True)", "self.norm(x)", True,
    ),
    "a batch norm keeping no running statistics": (
        "self.norm = nn.BatchNorm1d(4, 1e-5, 0.1, True, False)", "self.norm(x)", False,
    ),
    "a batch norm told by a value whether to keep them": (
        "self.norm = nn.BatchNorm1d(4, track_running_stats=norm_layer)", "self.norm(x)", True,
    ),
    "a lazy instance norm": ("self.norm = nn.LazyInstanceNorm1d()", "self.norm(x)", True),
    "an activation working in place on the input": (
        "self.act = nn.ReLU(inplace=True)", "self.act(x)", True,
    ),
    "an activation working in place on a view of the input": (
        "self.act = nn.LeakyReLU(0.2, True)", "h = x.view(-1)\n        self.act(h)", True,
    ),
    "an activation working in place on a new tensor": (
        "self.act = nn.ReLU(inplace=True)\n        self.lin = nn.Linear(4, 4)",
        "h = self.lin(x)\n        h = self.act(h)\n        y = self.act(x * 2)",
        False,
    ),
    "an activation told not to work in place": (
        "self.act = nn.ReLU(inplace=False)", "self.act(x)", False,
    ),
    "an embedding that renorms": (
        "self.emb = nn.Embedding(10, 4, max_norm=1.0)", "self.emb(x)", True,
    ),
    "a batch norm registered by name": (
        'self.add_module("norm", nn.BatchNorm1d(4))', "self.norm(x)", True,
    ),
    "a linear layer registered by setattr": (
        'setattr(self, "lin", nn.Linear(4, 4))', "self.lin(x)", False,
    ),
    "a module registered under a computed name": (
        "self.add_module(type(self).__name__, nn.BatchNorm1d(4))\n"
        "        self.lin = nn.Linear(4, 4)",
        "self.lin(x)",
        True,
    ),
    "an embedding": ("self.emb = nn.Embedding(10, 4)", "self.emb(x)", False),
    "a stateless block: activation of another file, drop path or identity": (
        "self.mlp = Mlp(4, drop_path=0.1)", "self.mlp(x)", False,
    ),
    "a block of this file holding a batch norm": ("self.block = Normed(4)", "self.block(x)", True),
    "a block updating its buffer": ("self.block = Counting()", "self.block(x)", True),
    "a block adding in place to its input": ("self.block = Residual()", "self.block(x)", True),
    "a list of stateless blocks, in a loop": (
        "self.blocks = nn.ModuleList([Mlp(4) for _ in range(2)])",
        "for block in self.blocks:\n            x = block(x)",
        False,
    ),
    "a list of blocks holding a batch norm, in a loop": (
        "self.blocks = nn.ModuleList([Mlp(4), Normed(4)])",
        "for i, block in enumerate(self.blocks):\n            x = block(x)",
        True,
    ),
    "a list of blocks holding a batch norm, in a comprehension": (
        "self.blocks = nn.ModuleList([Mlp(4), Normed(4)])",
        "outputs = [block(x) for block in self.blocks]",
        True,
    ),
    "a list holding a batch norm, by index": (
        "self.blocks = nn.ModuleList([Mlp(4), Normed(4)])", "self.blocks[1](x)", True,
    ),
    "one instance repeated in a list": (
        "head = Normed(4)\n        self.heads = nn.ModuleList([head for _ in range(2)])",
        "self.heads[0](x)",
        True,
    ),
    "a module set to None here, and by another class": (
        "self.head = None", "self.head(x)", False,
    ),
    "blocks zipped with norms, in a loop": (
        "self.blocks = nn.ModuleList([Mlp(4)])\n        self.norms = nn.ModuleList([Normed(4)])",
        "for block, norm in zip(self.blocks, self.norms):\n            x = norm(block(x))",
        True,
    ),
    "a local function": ("pass", "act = torch.relu\n        x = act(x)", True),
    "a helper function": ("pass", "helper(x)", False),
    "a helper updating its argument in place": ("pass", "helper_in_place(x)", True),
    "a helper updating a view of its argument": ("pass", "helper_through_a_view(x)", True),
    "a helper updating a new tensor": ("pass", "helper_on_a_new_tensor(x)", False),
    "a helper drawing into a new tensor": ("pass", "helper_drop_path(x)", False),
    "a module-level alias of a helper": ("pass", "scale(x)", False),
    "a module-level alias of a helper updating its argument": (
        "pass", "scale_in_place(x)", True,
    ),
    "a helper setting items of a new tensor": (
        "self.start = 0", "helper_shift_right(x, self.start)", False,
    ),
    "a helper collecting new tensors": ("pass", "helper_collect(x)", False),
    "a helper updating tensors of the list it is handed": (
        "pass", "helper_through_a_loop([(x, x)])", True,
    ),
    "a method of torch's base class": ("pass", "self.post_init()", False),
    "a class of another file": ("self.block = ForeignBlock()", "self.block(x)", True),
    "a function of another file": ("pass", "x = normalize(x)", True),
    "a function of another file, through its module": ("pass", "x = layers.normalize(x)", True),
    "a method of a module-level object of another file's class": (
        "pass", "TRACKER.record(x)", True,
    ),
    "an object of another file's class, built": ("pass", "cache = ForeignCache()", True),
    "torch, math, numpy, einops and builtins": (
        "pass",
        "x = F.relu(torch.tanh(x)) * math.sqrt(2.0)\n        x = rearrange(x, 'b d -> b d')\n"
        "        y = np.zeros(3)\n        n = max(len(x), 1)\n        e = ValueError('x')",
        False,
    ),
    "numpy's random generator": ("pass", "noise = np.random.rand(3)", True),
    "a clock and a probe of the tracing state": (
        "pass", "t0 = time.perf_counter()\n        c = is_torchdynamo_compiling()", False,
    ),
    "an availability probe": ("pass", "xla = is_torch_xla_available()", False),
    "a logger made by another file's factory": ("pass", "hf_logger.warning_once('x')", False),
}

MODEL = """

class Model(nn.Module):
    def __init__(self, norm_layer=nn.BatchNorm1d):
        super().__init__()
        {init}

    def forward(self, x):
        {call}
        return x

    def set_head(self, value):
        self.head = value


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Model()
        self.heads = nn.ModuleList([Mlp(4) for _ in range(2)])
        self.model.head = self.heads[0]

    def set_model_head(self, value):
        self.model.head = value
"""


@pytest.mark.parametrize("name", CASES)
def test_call_changes_state(name: str) -> None:
    init, call, changes = CASES[name]
    tree = ast.parse(dedent(HEADER) + MODEL.format(init=init, call=call))
    symbols = ModuleSymbols.collect(tree)
    owner = symbols.classes["Model"]
    forward = owner.methods["forward"]
    calls = [n for s in forward.body[:-1] for n in ast.walk(s) if isinstance(n, ast.Call)]
    assert calls
    assert any(call_changes_state(c, forward, owner, symbols) for c in calls) is changes


@pytest.mark.parametrize(
    "base, call, changes",
    [
        ("ForeignBase", "self.reset_stats()", True),
        ("ForeignBase", "super().reset_stats()", True),
        ("ForeignBase", "self.scale(x)", False),  # a method of this file's class
        ("nn.Module", "self.parameters()", False),  # nn.Module's own
    ],
)
def test_methods_inherited_from_a_base_of_another_file(base: str, call: str, changes: bool) -> None:
    """``self.m()`` or ``super().m()`` where no class of this file defines ``m`` runs what a
    base of another file defines: not read, so it may change state (not so for torch's)."""
    source = dedent(HEADER) + dedent(
        f"""

        class Derived({base}):
            def scale(self, x):
                return x * 2

            def forward(self, x):
                {call}
                return x
        """
    )
    symbols = ModuleSymbols.collect(ast.parse(source))
    owner = symbols.classes["Derived"]
    forward = owner.methods["forward"]
    made = next(n for n in ast.walk(forward.body[0]) if isinstance(n, ast.Call))
    assert call_changes_state(made, forward, owner, symbols) is changes


def first_call_changes_state(source: str, package: str = "") -> bool:
    """Whether the first call of ``Model.forward``'s first statement in ``source`` (a module
    of ``package``) may change state."""
    symbols = ModuleSymbols.collect(ast.parse(source), package)
    owner = symbols.classes["Model"]
    forward = owner.methods["forward"]
    call = next(n for n in ast.walk(forward.body[0]) if isinstance(n, ast.Call))
    return call_changes_state(call, forward, owner, symbols)


def test_a_store_from_a_shadowed_class_statement_is_not_known() -> None:
    """``holder.head = ...`` in a class statement that a later one of the same name shadows:
    the analysis does not say which of the two the value was read in, so the head is unknown."""
    source = dedent(HEADER) + MODEL.format(init="self.head = None", call="self.head(x)") + dedent(
        """

        class Wrapper(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = Model()
                self.model.head = self.norm
        """
    )
    assert first_call_changes_state(source)


SELF_READING_LOOKUP = """
import warnings
from collections import UserDict

import torch


class Batch(UserDict):
    def __getattr__(self, item):
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError(item)

    def scaled(self, x):
        y = x * self.scale
        warnings.warn("scaled")
        return y
"""


def test_a_lookup_that_reads_self_is_followed_to_a_bounded_depth() -> None:
    """``__getattr__`` runs for every attribute its own body reads of ``self`` (transformers'
    ``BatchEncoding``): followed without end, it exhausted the recursion and the file was
    skipped. Beyond the depth that calls are followed to, it may change state."""
    symbols = ModuleSymbols.collect(ast.parse(SELF_READING_LOOKUP))
    owner = symbols.classes["Batch"]
    assert body_changes_state(owner.methods["__getattr__"], owner, symbols)
    lines = SELF_READING_LOOKUP.splitlines()
    findings = analyze_tree(ast.parse(SELF_READING_LOOKUP), lines, "batch.py", Options("all"))
    assert [f.code for f in findings] == ["GM103"]
    assert "`self.scale` (line 16) may change Python state" in (findings[0].decline or "")


def test_tensor_method_names_are_those_of_the_torch_installed() -> None:
    """``analysis/tensor_methods.py`` lists them for the lint side, which runs without torch."""
    torch = pytest.importorskip("torch")
    from flake8_graphmend.analysis.tensor_methods import TENSOR_METHODS

    names = {n for n in dir(torch.Tensor) if not n.startswith("_") and not n.endswith("_")}
    assert TENSOR_METHODS == names


#: A transformers model file's relative imports, the module it calls, and whether the call
#: may change state once they are resolved from the file's package.
RELATIVE = {
    "an activation": ("from ...activations import ACT2FN", "self.act(x)", False),
    "an availability probe": ("from ...utils import is_torch_xla_available",
                              "is_torch_xla_available()", False),
    "a function of the package": ("from ...pytorch_utils import prune", "prune(x)", True),
    "a probe of another package": ("from ...mylib import is_cache_available",
                                   "is_cache_available()", True),
}


@pytest.mark.parametrize("name", RELATIVE)
@pytest.mark.parametrize("package", ["transformers.models.bert", ""])
def test_relative_imports_are_resolved_from_the_package(name: str, package: str) -> None:
    """``from ...activations import ACT2FN`` in ``transformers.models.bert`` is
    ``transformers.activations.ACT2FN``; where the package is not known, nothing is known."""
    imported, call, changes = RELATIVE[name]
    activation = 'ACT2FN["gelu"]' if "ACT2FN" in imported else "nn.GELU()"
    source = dedent(
        f"""
        import torch
        from torch import nn
        {imported}


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = {activation}

            def forward(self, x):
                {call}
                return x
        """
    )
    assert first_call_changes_state(source, package) is (changes or not package)


#: Module-level code that may change or rebind what ``Model.forward`` calls, and the call.
REBOUND = {
    "a function that appends to the built model's sequential": (
        "def build():\n    model = Model()\n    model.seq.append(nn.BatchNorm1d(4))\n"
        "    return model\n",
        "self.seq(x)",
    ),
    "a probe imported from the package first, transformers' after": (
        "try:\n    from .utils import is_peft_available\nexcept ImportError:\n"
        "    from transformers.utils import is_peft_available\n",
        "is_peft_available()",
    ),
    "a probe after a star import of the package": (
        "from transformers.utils import is_peft_available\nfrom .utils import *\n",
        "is_peft_available()",
    ),
    "a probe bound again": (
        "from transformers.utils import is_peft_available\nfrom . import utils\n\n"
        "is_peft_available = utils.is_peft_available\n",
        "is_peft_available()",
    ),
}


@pytest.mark.parametrize("name", REBOUND)
def test_what_module_level_code_may_change_or_rebind_is_not_known(name: str) -> None:
    module_code, call = REBOUND[name]
    source = dedent(
        f"""
        import torch
        from torch import nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = nn.Sequential(nn.Linear(4, 4))

            def forward(self, x):
                {call}
                return x
        """
    ) + "\n\n" + module_code
    assert first_call_changes_state(source, "pkg")


#: Code that makes every module call run code of the file's choice (module-level code of the
#: file, or a builder it defines), and code that does not.
GIVES_MODULES_CODE = {
    "a hook for all modules": (
        "from torch.nn.modules.module import register_module_forward_pre_hook\n\n"
        "register_module_forward_pre_hook(lambda m, a: None)\n",
        True,
    ),
    "a hook for all modules, imported under another name": (
        "from torch.nn.modules.module import register_module_forward_hook as watch\n\n\n"
        "def build(debug=True):\n    if debug:\n        watch(lambda m, a, o: None)\n"
        "    return Model()\n",
        True,
    ),
    "a hook registered through a bound method": (
        "def build():\n    model = Model()\n    hook = model.seq.register_forward_pre_hook\n"
        "    hook(lambda m, a: None)\n    return model\n",
        True,
    ),
    "a hook put in a module's hook dict": (
        "def build(model):\n    model.seq[0]._forward_pre_hooks[0] = lambda m, a: None\n",
        True,
    ),
    "a class of torch patched": (
        "plain = nn.Linear.forward\nnn.Linear.forward = lambda self, x: plain(self, x)\n", True,
    ),
    "a class of torch patched by setattr": (
        "setattr(nn.Linear, 'forward', lambda self, x: x)\n", True,
    ),
    "spectral norm applied by a builder": (
        "from torch.nn.utils import spectral_norm\n\n\ndef build(model):\n"
        "    model.apply(lambda m: spectral_norm(m) if isinstance(m, nn.Linear) else m)\n",
        True,
    ),
    "weight norm through its parametrization": (
        "def build(model):\n"
        "    nn.utils.parametrizations.weight_norm(model.seq[0])\n",
        True,
    ),
    "pruning": (
        "import torch.nn.utils.prune as prune\n\n\ndef build(model):\n"
        "    prune.l1_unstructured(model.seq[0], 'weight', 0.5)\n",
        True,
    ),
    "a builder that only builds": (
        "def build():\n    model = Model()\n    model.eval()\n    return model\n", False,
    ),
}


@pytest.mark.parametrize("name", GIVES_MODULES_CODE)
def test_a_file_that_gives_modules_code_to_run_makes_every_module_call_count(name: str) -> None:
    module_code, gives = GIVES_MODULES_CODE[name]
    source = dedent(
        """
        import torch
        from torch import nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = nn.Sequential(nn.Linear(4, 4))

            def forward(self, x):
                self.seq(x)
                return x
        """
    ) + "\n\n" + module_code
    assert first_call_changes_state(source, "pkg") is gives
