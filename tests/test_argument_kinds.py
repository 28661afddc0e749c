"""Parameters are tensors where every call from compiled code passes one
(``flake8_graphmend/analysis/arguments.py``), seen through GM404 on a slice bound."""

import textwrap

import pytest

from flake8_graphmend.engine import analyze_source

HEADER = "import torch\nfrom torch import nn\n\n"


def gm404_functions(body):
    findings = analyze_source(HEADER + textwrap.dedent(body), "model.py")
    return sorted(f.message.split("compiled ")[1].split("()")[0] for f in findings
                  if f.code == "GM404")


@pytest.mark.parametrize(
    "calls, reported",
    [
        ("crop(x, x.sum().long())", ["crop"]),
        ("crop(x, n=x.sum().long())", ["crop"]),
        ("crop(x, x.sum().long()) + crop(x, x.argmax())", ["crop"]),
        ("crop(x, 2) + crop(x, x.sum().long())", []),  # one call passes an int
        ("crop(x)", []),  # the default
        ("crop(x, *sizes)", []),  # filled from *args
        ("crop(x, **sizes)", []),  # filled from **kwargs
        ("crop(x, sizes)", []),  # a bare parameter of forward
    ],
)
def test_a_parameter_is_a_tensor_when_every_call_passes_one(calls, reported):
    body = f"""
    def crop(x, n=None):
        return x[:n]


    class Model(nn.Module):
        def forward(self, x, sizes):
            return {calls}
    """
    assert gm404_functions(body) == reported


def test_tensor_kinds_flow_down_call_chains():
    body = """
    def inner(x, n):
        return x[:n]


    def outer(x, m):
        return inner(x, m + 1)


    class Block(nn.Module):
        def forward(self, x, length):
            return outer(x, length)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x, length=torch.count_nonzero(x))
    """
    assert gm404_functions(body) == ["inner"]


def test_static_and_class_methods_bind_their_parameters():
    body = """
    class Model(nn.Module):
        @staticmethod
        def head(x, n):
            return x[:n]

        @classmethod
        def tail(cls, x, n):
            return x[n:]

        def forward(self, x):
            n = x.argmax()
            return self.head(x, n) + self.tail(x, n) + Model.head(x, n)
    """
    assert gm404_functions(body) == ["head", "tail"]


def codes(body):
    return [f.code for f in analyze_source(HEADER + textwrap.dedent(body), "model.py")]


def test_a_tensor_annotation_with_a_flag_default_is_no_tensor():
    body = """
    from typing import Optional


    class Model(nn.Module):
        def forward(self, x, output_attentions: Optional[torch.Tensor] = False):
            return (x, x) if output_attentions else (x, None)
    """
    assert codes(body) == []


def test_calls_that_pass_python_values_overrule_a_tensor_annotation():
    body = """
    from typing import Optional


    class Attention(nn.Module):
        def forward(self, x, output_attentions: Optional[torch.Tensor] = None):
            return (x, x) if output_attentions else (x, None)


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()

        def forward(self, x, output_attentions: bool = False):
            return self.attention(x, output_attentions=output_attentions)
    """
    assert codes(body) == []
    # without the calls, the annotation is trusted
    assert codes(body.split("class Layer")[0]) == ["GM203"]


def test_methods_of_a_helper_object_assigned_in_init_are_compiled():
    body = """
    class Positions:
        def relative(self, pos: torch.Tensor, stride: int):
            top = pos[-1] - pos[0]
            return torch.arange(top, -1, -stride)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.positions = Positions()

        def forward(self, x):
            return x + self.positions.relative(torch.arange(x.shape[0]), 2).sum()
    """
    assert gm404_functions(body) == ["relative"]


def test_a_reassigned_parameter_is_passed_as_what_it_was_assigned():
    body = """
    from typing import Optional


    class Encoder(nn.Module):
        def forward(self, x, head_mask=None):
            if head_mask.count(None) == len(head_mask):
                return x
            return x * 2


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()

        def forward(self, x, head_mask: Optional[torch.Tensor] = None):
            head_mask = self.get_head_mask(head_mask)
            return self.encoder(x, head_mask=head_mask)
    """
    assert codes(body) == []
