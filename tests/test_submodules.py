"""Which classes a submodule call runs, and whether what it returns is a new tensor only the
caller holds (``flake8_graphmend.planning.submodules``)."""

from __future__ import annotations

import ast
from textwrap import dedent
from typing import List, Optional, Tuple

import pytest

from flake8_graphmend.analysis.symbols import ModuleSymbols
from flake8_graphmend.planning.submodules import returns_new_tensor, submodule_classes

LAYERS = """
import torch
from torch import nn

class Local(nn.Module):
    def forward(self, hidden_states, mask=None, **kwargs):
        hidden_states = hidden_states + 1
        outputs = (hidden_states,) + (mask,)
        return outputs

class Cross(nn.Module):
    def forward(self, hidden_states, key_value_states, mask=None):
        out = hidden_states * key_value_states
        return (out, None)

class FeedForward(nn.Module):
    def forward(self, hidden_states):
        return hidden_states + 1

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.local:
            attention = Local
        else:
            attention = Cross
        self.layer = nn.ModuleList()
        self.layer.append(attention())
        if config.is_decoder:
            self.layer.append(Cross())
        self.layer.append(FeedForward())
        self.norm = nn.LayerNorm(4)
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList([FeedForward() for _ in range(2)])

    def forward(self, x, y):
        return {calls}
"""


def call_of(expression: str) -> Tuple[ast.Call, ModuleSymbols]:
    tree = ast.parse(dedent(LAYERS.format(calls=expression)))
    symbols = ModuleSymbols.collect(tree)
    forward = symbols.classes["Block"].methods["forward"]
    returned = forward.body[-1]
    assert isinstance(returned, ast.Return) and isinstance(returned.value, ast.Call)
    return returned.value, symbols


@pytest.mark.parametrize(
    ("expression", "classes"),
    [
        ("self.layer[0](x)", ["Cross", "Local"]),  # the first append: `attention` is either
        ("self.layer[1](x)", ["Cross", "FeedForward"]),  # decoder or not
        ("self.layer[2](x)", ["FeedForward"]),  # only a decoder has a third
        ("self.layer[-1](x)", ["FeedForward"]),  # the last append is unconditional
        ("self.layer[-2](x)", ["Cross", "Local"]),
        ("self.layer[i](x)", ["Cross", "FeedForward", "Local"]),
        ("self.blocks[1](x)", ["FeedForward"]),
        ("self.norm(x)", ["torch.nn.LayerNorm"]),
        ("self.unknown(x)", None),
        ("self.layer(x)", None),  # a list is not called
    ],
)
def test_classes_an_element_of_a_module_list_may_hold(
    expression: str, classes: Optional[List[str]]
) -> None:
    call, symbols = call_of(expression)
    assert submodule_classes(call.func, symbols.classes["Block"], symbols) == classes


@pytest.mark.parametrize(
    "build",
    [
        "stem = nn.Sequential(stem, nn.GELU())",  # timm's `context_module = nn.Sequential(...)`
        "head = nn.Sequential(stem)\n        stem = nn.Sequential(head, nn.GELU())",
    ],
)
def test_a_local_built_of_itself_is_not_known(build: str) -> None:
    """A local whose value is built of itself, directly or through another: its bindings were
    followed without end (timm's ``cpubone.py`` was skipped); its classes are not known."""
    source = f"""
import torch
from torch import nn

class Stem(nn.Module):
    def __init__(self):
        super().__init__()
        stem = nn.Sequential(nn.Linear(4, 4))
        {build}
        self.stem = stem

    def forward(self, x):
        return self.stem(x)
"""
    symbols = ModuleSymbols.collect(ast.parse(source))
    owner = symbols.classes["Stem"]
    call = owner.methods["forward"].body[-1].value
    assert isinstance(call, ast.Call)
    assert submodule_classes(call.func, owner, symbols) is None


@pytest.mark.parametrize(
    ("expression", "path", "new"),
    [
        ("self.layer[-1](x)", (), True),  # FeedForward: `hidden_states + 1`
        ("self.layer[0](x, mask=y)", (0,), True),  # Local; Cross needs key_value_states
        ("self.layer[0](x, mask=y)", (1,), False),  # the mask it was given
        ("self.layer[0](x, mask=y)", (), False),  # the tuple holds the mask
        ("self.layer[0](x, y)", (0,), True),  # Local and Cross
        ("self.layer[1](x, key_value_states=y)", (0,), True),  # Cross only
        ("self.layer[1](x, key_value_states=y)", (1,), True),  # None: no tensor
        ("self.norm(x)", (), True),
        ("self.norm(x)", (0,), False),
        ("self.drop(x)", (), False),  # eval-mode dropout hands its input back
        ("self.layer[0](x, z=y)", (0,), True),  # Local takes **kwargs
    ],
)
def test_what_a_submodule_returns(expression: str, path: Tuple[int, ...], new: bool) -> None:
    call, symbols = call_of(expression)
    assert returns_new_tensor(call, path, symbols.classes["Block"], symbols) is new


@pytest.mark.parametrize(
    "forward",
    [
        # kept by the module
        """
        def forward(self, x):
            out = x + 1
            self.last = out
            return out
        """,
        # handed to a call that may keep it
        """
        def forward(self, x):
            out = x + 1
            self.cache.append(out)
            return out
        """,
        # the parameter itself on one path
        """
        def forward(self, x):
            if x.dtype == torch.float16:
                x = x + 1
            return x
        """,
        # a closure
        """
        def forward(self, x):
            out = x + 1
            self.hook = lambda: out
            return out
        """,
        # a view of the input
        """
        def forward(self, x):
            return x.view(-1)
        """,
        # the tuple is copied on with `+` into what is kept
        """
        def forward(self, x):
            outputs = (x + 1,)
            self.everything = outputs + (None,)
            return outputs
        """,
        # bound in a loop
        """
        def forward(self, x):
            for _ in range(2):
                out = x + 1
            return out
        """,
        # the same tensor twice: `out[0] is out[1]`
        """
        def forward(self, x):
            state = torch.tanh(x) * 2
            return state, state
        """,
        # a chained assignment keeps it
        """
        def forward(self, x):
            self.last = h = x * 100.0
            return (h,)
        """,
        # a global
        """
        def forward(self, x):
            global LAST
            LAST = x * 100.0
            return (LAST,)
        """,
        # locals() hands every local on
        """
        def forward(self, x):
            h = x * 100.0
            self.stats.update(locals())
            return (h,)
        """,
        # in place: the input itself
        """
        def forward(self, x):
            return (F.relu(x, inplace=True),)
        """,
        """
        def forward(self, x):
            return (F.relu(x, True),)
        """,
        """
        def forward(self, x):
            return (torch.add(x, 0, out=x),)
        """,
        # einsum may return a view of its operand
        """
        def forward(self, x):
            return (torch.einsum("bd->bd", x),)
        """,
        # tuples joined: the first element is the caller's
        """
        def forward(self, x, states):
            return states + (x * 2,)
        """,
        # a decorator may keep the output
        """
        @keep_output
        def forward(self, x):
            return (x * 2,)
        """,
    ],
)
def test_a_layer_that_keeps_or_passes_a_tensor_does_not_return_a_new_one(forward: str) -> None:
    source = f"""
import torch
import torch.nn.functional as F
from torch import nn

class Layer(nn.Module):
{dedent(forward).replace(chr(10), chr(10) + "    ")}

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = Layer()

    def forward(self, x):
        return self.layer(x)
"""
    tree = ast.parse(source)
    symbols = ModuleSymbols.collect(tree)
    returned = symbols.classes["Block"].methods["forward"].body[-1]
    assert isinstance(returned, ast.Return) and isinstance(returned.value, ast.Call)
    assert not returns_new_tensor(returned.value, (), symbols.classes["Block"], symbols)
    assert not returns_new_tensor(returned.value, (0,), symbols.classes["Block"], symbols)


@pytest.mark.parametrize(
    "build",
    [
        # a subclass of this file replaces an element
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([FF()])

    def forward(self, x):
        return self.layer[0](x)

class Model(Block):
    def __init__(self):
        super().__init__()
        self.layer[0] = Passthrough()
""",
        # a base class appends first
        """
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList()
        self.layer.append(Passthrough())

class Block(Base):
    def __init__(self):
        super().__init__()
        self.layer.append(FF())

    def forward(self, x):
        return self.layer[0](x)
""",
        # the list is rebuilt on one path
        """
class Block(nn.Module):
    def __init__(self, training):
        super().__init__()
        self.layer = nn.ModuleList()
        self.layer.append(FF())
        if training:
            self.layer = nn.ModuleList([Passthrough()])

    def forward(self, x):
        return self.layer[0](x)
""",
        # an early return skips the last append
        """
class Block(nn.Module):
    def __init__(self, training):
        super().__init__()
        self.layer = nn.ModuleList()
        if training:
            self.layer.append(Passthrough())
            return
        self.layer.append(FF())

    def forward(self, x):
        return self.layer[-1](x)
""",
        # an element deleted, popped, inserted through an alias, set by name
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([Passthrough(), FF()])
        del self.layer[0]

    def forward(self, x):
        return self.layer[0](x)
""",
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([Passthrough(), FF()])
        self.layer.pop(0)

    def forward(self, x):
        return self.layer[0](x)
""",
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([FF()])
        layers = self.layer
        layers.insert(0, Passthrough())

    def forward(self, x):
        return self.layer[0](x)
""",
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = FF()
        self.add_module("layer", Passthrough())

    def forward(self, x):
        return self.layer(x)
""",
        # an append in a function nested in __init__ (the last element is not FF)
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([FF()])

        def add(module):
            self.layer.append(module)

        add(Passthrough())

    def forward(self, x):
        return self.layer[-1](x)
""",
        # the class name is bound again at module level
        """
try:
    FF = Passthrough
except ImportError:
    pass

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = FF()

    def forward(self, x):
        return self.layer(x)
""",
        # a base class of the layer defines __call__
        """
class Recording(nn.Module):
    def __call__(self, *args):
        out = super().__call__(*args)
        self.last = out
        return out

class Kept(Recording):
    def forward(self, x):
        return x * 2

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = Kept()

    def forward(self, x):
        return self.layer(x)
""",
        # `nn.ReLU(True)` updates its input in place and returns it
        """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ReLU(True)

    def forward(self, x):
        return self.layer(x)
""",
    ],
)
def test_a_layer_list_changed_where_the_analysis_cannot_follow_is_not_trusted(build: str) -> None:
    source = f"""
import torch
from torch import nn

class FF(nn.Module):
    def forward(self, x):
        return x * 2

class Passthrough(nn.Module):
    def forward(self, x):
        return x
{build}"""
    tree = ast.parse(source)
    symbols = ModuleSymbols.collect(tree)
    block = symbols.classes["Block"]
    returned = block.methods["forward"].body[-1]
    assert isinstance(returned, ast.Return) and isinstance(returned.value, ast.Call)
    assert not returns_new_tensor(returned.value, (), block, symbols)
