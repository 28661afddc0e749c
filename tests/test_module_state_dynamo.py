"""GM606 under Dynamo (torch 2.13): converting a submodule in compiled code breaks the graph only
when the conversion changes something, as the finding's "(only when it converts ...)" says."""

import textwrap

import pytest

from flake8_graphmend.engine import analyze_source

torch = pytest.importorskip("torch")
from flake8_graphmend.verify.dynamo import probe  # noqa: E402

SOURCE = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Router(nn.Module):
        def __init__(self, dtype):
            super().__init__()
            self.classifier = nn.Linear(4, 2)
            self.dtype = dtype

        def forward(self, x):
            x = x * 2
            self.classifier = self.classifier.to(self.dtype)
            return self.classifier(x.to(self.dtype))
    """
)


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    path = tmp_path_factory.mktemp("gm606") / "router.py"
    path.write_text(SOURCE)
    namespace = {"__name__": "router"}
    exec(compile(SOURCE, str(path), "exec"), namespace)
    return path, namespace["Router"]


def test_the_finding_is_conditional_on_a_conversion(router):
    path, _ = router
    (finding,) = analyze_source(SOURCE, str(path))
    assert finding.code == "GM606" and finding.condition == "it converts `self.classifier`"


@pytest.mark.parametrize("dtype, breaks", [(torch.float32, False), (torch.float64, True)])
def test_it_breaks_only_when_the_dtype_changes(router, dtype, breaks):
    path, cls = router
    report = probe(cls(dtype), torch.randn(3, 4))
    line = SOURCE.splitlines().index("        self.classifier = self.classifier.to(self.dtype)") + 1
    sites = {(s.lineno, s.gb_id) for s in report.break_sites if s.filename == str(path)}
    assert sites == ({(line, "GB0264")} if breaks else set())
