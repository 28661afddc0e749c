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
