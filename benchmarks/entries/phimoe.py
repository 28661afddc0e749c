"""Small random-weight ``PhimoeForCausalLM`` with LongRoPE scaling, called with ``use_cache=True``.

``PhimoeForCausalLM.forward`` (modeling_phimoe.py:1303) tests the first cache position against
the original context length, ``if use_cache and self.config.rope_scaling and cache_position is
not None and cache_position[0] == self.config.original_max_position_embeddings:``, and only logs
when it holds (``generate`` passes ``cache_position``; so do ``build`` and, where the test
holds, ``build_at_original_length``): a GB0170 break on every call, which [Defer] of the whole
`if` removes (the Python tests stay a plain `if`). The mixture-of-experts routing breaks on its
own.
"""

import torch
from transformers import PhimoeConfig, PhimoeForCausalLM

from _mode import built


def _workload(first_position):
    torch.manual_seed(0)
    half_head = 32 // 2 // 2  # head_dim / 2
    config = PhimoeConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, num_local_experts=2,
        num_experts_per_tok=2, max_position_embeddings=64, original_max_position_embeddings=16,
        pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_scaling={
            "type": "longrope",
            "short_factor": [1.0 + 0.01 * i for i in range(half_head)],
            "long_factor": [1.5 + 0.05 * i for i in range(half_head)],
            "short_mscale": 1.0,
            "long_mscale": 1.1,
            "original_max_position_embeddings": 16,
        },
    )
    model = built(PhimoeForCausalLM, config)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    positions = torch.arange(first_position, first_position + 8)
    return model, (), {"input_ids": input_ids, "use_cache": True, "cache_position": positions}


def build():
    return _workload(0)


def build_at_original_length():
    """The cache starts at the original context length: the test holds and the warning is
    logged."""
    return _workload(16)
