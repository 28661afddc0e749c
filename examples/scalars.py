"""Top-k style selection with Python scalars and data-dependent shapes (DO/TI and DS).

No fixer rewrites these: the result's shape depends on the data. They stay as the residue that
`capture_scalar_outputs` / `capture_dynamic_output_shape_ops` (or a redesign) would have to take.

    graphmend verify examples/scalars.py:build
"""

import torch
from torch import nn


class AboveAverage(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.score = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> tuple:
        scores = self.score(x).squeeze(-1)
        threshold = scores.mean().item()
        keep = torch.nonzero(scores > threshold).squeeze(-1)
        return x[keep] * threshold, scores[scores > threshold]


def build():
    torch.manual_seed(0)
    return AboveAverage().eval(), (torch.randn(10, 8),)
