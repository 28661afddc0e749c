"""What the linter leaves alone does not break, and what it still reports does: each function
below is linted as an entry point and run under Dynamo (torch 2.13), and the two must agree."""

import copy
import textwrap

import pytest

from flake8_graphmend.engine import Options, analyze_source

torch = pytest.importorskip("torch")

from flake8_graphmend.verify.dynamo import probe  # noqa: E402

SOURCE = textwrap.dedent(
    '''
    import copy

    import torch
    from transformers.utils import is_torch_fx_proxy


    def fx_proxy_guard(x):
        y = x * 2
        if is_torch_fx_proxy(y) and y.sum() > 0:
            print("symbolic tracing only")
        proxy = isinstance(y, torch.fx.Proxy)
        if proxy and y.mean() > 0:
            print("symbolic tracing only")
        return y + 1


    def exporting_guard(x):
        y = x * 2
        if torch.compiler.is_exporting() and y.sum() > 0:
            y = y - 1
        return y + 1


    def string_logic(x, name="ir_r2"):
        y = x * 2
        block_type = name.split("_")[0]
        if block_type == "ir":
            y = y + int(name.split("_")[1][1:])
        return y


    def deepcopy_python_values(x):
        y = x * 2
        settings = copy.deepcopy({"scale": 2, "names": ("a", "b")})
        return y * settings["scale"]


    def deepcopy_tuple_with_tensor(x):
        y = x * 2
        kept = copy.deepcopy((y, 1))
        return kept[0] + 1


    LINEAR = torch.nn.Linear(3, 3)


    def deepcopy_module(x):
        y = x * 2
        return copy.deepcopy(LINEAR)(y)
    '''
)
#: function -> (the codes the linter reports, Dynamo's graph breaks on the first call)
EXPECTED = {
    "fx_proxy_guard": ((), 0),
    "exporting_guard": ((), 0),
    "string_logic": ((), 0),
    "deepcopy_python_values": ((), 0),
    "deepcopy_tuple_with_tensor": (("GM602",), 1),
    "deepcopy_module": (("GM602",), 1),
}


@pytest.fixture(scope="module")
def namespace():
    pytest.importorskip("transformers")
    scope = {"copy": copy}
    exec(compile(SOURCE, "precision_cases.py", "exec"), scope)
    return scope


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_linter_and_dynamo_agree(name, namespace):
    codes, breaks = EXPECTED[name]
    findings = analyze_source(SOURCE, "precision_cases.py", Options(entry_points=(name,)))
    assert tuple(f.code for f in findings) == codes, [f.text for f in findings]
    report = probe(namespace[name], torch.ones(3))
    assert (report.breaks, report.graphs) == (breaks, breaks + 1)
