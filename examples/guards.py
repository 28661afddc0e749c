"""Masked mean pooling with input validation guards (family VG).

graphmend verify examples/guards.py:build
"""

import torch
from torch import nn


class MaskedMeanPool(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if (mask.sum(dim=-1) == 0).any():
            raise ValueError("every row of the attention mask needs at least one token")
        if not torch.equal(mask, mask.bool().to(mask.dtype)):
            raise ValueError("the attention mask must hold only 0 and 1")
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
        return self.norm(pooled)


def build():
    torch.manual_seed(0)
    hidden = torch.randn(2, 6, 16)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    return MaskedMeanPool().eval(), (hidden, mask)
