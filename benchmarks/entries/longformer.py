"""Small random-weight ``LongformerModel``, window 8, 20 tokens.

20 is not a multiple of the attention window, so ``_pad_to_window_size`` pads and runs
``logger.warning_once`` (modeling_longformer.py:1496, GB0291, LC). The self-attention's
``is_index_global_attn.flatten().any().item()`` (modeling_longformer.py:1272, GB0124, DO) is
outside the paper's families.
"""

import torch
from transformers import LongformerConfig, LongformerModel

from _mode import built


def build():
    torch.manual_seed(0)
    config = LongformerConfig(
        vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=128, attention_window=8,
        pad_token_id=1,
    )
    model = built(LongformerModel, config)
    input_ids = torch.randint(3, config.vocab_size, (1, 20))
    return model, (), {"input_ids": input_ids}
