"""Small random-weight ``PegasusForCausalLM`` (hf-internal-testing tiny-random Pegasus's class),
fp32 and fp16.

``use_cache=True`` with no cache object: ``PegasusDecoder.forward`` runs the legacy-cache
``logger.warning_once`` (modeling_pegasus.py:997), GB0291 (LC).
"""

import torch
from transformers import PegasusConfig, PegasusForCausalLM

from _mode import built


def _workload(dtype=torch.float32):
    torch.manual_seed(0)
    config = PegasusConfig(
        vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
    )
    model = built(PegasusForCausalLM, config).to(dtype)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    return model, (), {"input_ids": input_ids, "use_cache": True}


def build():
    return _workload()


def build_fp16():
    return _workload(torch.float16)
