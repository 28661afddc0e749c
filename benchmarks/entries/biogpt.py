"""Small random-weight ``BioGptForCausalLM`` (microsoft/biogpt's class).

``use_cache=True`` with no cache object: ``BioGptModel.forward`` runs the legacy-cache
``logger.warning_once`` (modeling_biogpt.py:685), GB0291 (LC).
"""

import torch
from transformers import BioGptConfig, BioGptForCausalLM

from _mode import built


def build():
    torch.manual_seed(0)
    config = BioGptConfig(
        vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=64,
    )
    model = built(BioGptForCausalLM, config)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    return model, (), {"input_ids": input_ids, "use_cache": True}
