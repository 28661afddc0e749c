"""A gated MLP block: a log call, an else-less update and an if/else on tensors (LC and DC).

graphmend verify examples/gate.py:build
"""

import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class GatedBlock(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.gate = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logger.warning("GatedBlock is experimental; its output scale may change")
        hidden = self.proj(x)
        peak = hidden.abs().max()
        if peak > 4:
            hidden = hidden * (4 / peak)
        score = self.gate(hidden).mean()
        if score > 0:
            out = torch.relu(hidden)
        else:
            out = torch.tanh(hidden)
        return out


def build():
    torch.manual_seed(0)
    return GatedBlock().eval(), (torch.randn(4, 16) * 3,)
