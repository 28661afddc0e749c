"""Small random-weight ``LayoutLMv3Model`` (text only, ``visual_embed=False``), fp32 and fp16.

``LayoutLMv3Model.forward`` always passes the deprecated ``device`` argument to
``ModuleUtilsMixin.get_extended_attention_mask``, which runs ``warnings.warn(..., FutureWarning)``
(transformers/modeling_utils.py:1614): GB0007 (LC), "Attempted to call function marked as skipped".
The fix must therefore target ``transformers.modeling_utils`` as well.
"""

import torch
from transformers import LayoutLMv3Config, LayoutLMv3Model

from _mode import built


def _workload(dtype=torch.float32):
    torch.manual_seed(0)
    config = LayoutLMv3Config(
        vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=64, coordinate_size=8, shape_size=16,
        visual_embed=False, max_2d_position_embeddings=128,
    )
    model = built(LayoutLMv3Model, config).to(dtype)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    bbox = torch.zeros(1, 8, 4, dtype=torch.long)
    return model, (), {"input_ids": input_ids, "bbox": bbox}


def build():
    return _workload()


def build_fp16():
    return _workload(torch.float16)
