"""Small random-weight ``Phi3ForCausalLM`` with LongRoPE scaling (Phi-4-mini's rope type).

``dynamic_rope_update``'s ``longrope_frequency_update`` (transformers/modeling_rope_utils.py:50)
branches on ``seq_len = torch.max(position_ids) + 1`` against the original context length:
GB0170 (DC). ``build`` feeds 24 tokens, longer than ``original_max_position_embeddings`` (16), so
the long-factor path runs; ``build_short`` feeds 8 tokens (the short-factor path). The fix must
target ``transformers.modeling_rope_utils`` as well as ``transformers.models.phi3``.
"""

import torch
from transformers import Phi3Config, Phi3ForCausalLM

from _mode import built


def _workload(length):
    torch.manual_seed(0)
    half_head = 64 // 2 // 2  # head_dim / 2
    config = Phi3Config(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
        original_max_position_embeddings=16, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_scaling={
            "type": "longrope",
            "short_factor": [1.0 + 0.01 * i for i in range(half_head)],
            "long_factor": [1.5 + 0.05 * i for i in range(half_head)],
        },
    )
    model = built(Phi3ForCausalLM, config)
    input_ids = torch.randint(3, config.vocab_size, (1, length))
    return model, (), {"input_ids": input_ids}


def build():
    return _workload(24)


def build_short():
    return _workload(8)
