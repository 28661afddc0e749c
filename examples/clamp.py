"""A half-precision feed-forward layer with BART's fp16 overflow clamp and a print (DC, LC).

The input is large enough that the fp16 activations overflow, so the clamp does change values.

    graphmend verify examples/clamp.py:build
"""

import torch
from torch import nn


class HalfFeedForward(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = self.down(torch.relu(self.up(hidden)))
        print("feed-forward output dtype:", hidden.dtype)
        if hidden.dtype == torch.float16 and (
            torch.isinf(hidden).any() or torch.isnan(hidden).any()
        ):
            clamp_value = torch.finfo(hidden.dtype).max - 1000
            hidden = torch.clamp(hidden, min=-clamp_value, max=clamp_value)
        return hidden


def build():
    torch.manual_seed(0)
    model = HalfFeedForward().half().eval()
    return model, (torch.randn(2, 16).half() * 3000,)
