"""Small random-weight Marian (opus-mt-fr-en) ``MarianMTModel``, fp32 and fp16.

* legacy-cache ``logger.warning_once`` in ``MarianDecoder.forward`` (modeling_marian.py:946),
  GB0291 (LC), reached with ``use_cache=True`` and no cache object;
* fp16 only: the encoder layer's overflow clamp (modeling_marian.py:327), GB0170 (DC).
"""

import torch
from transformers import MarianConfig, MarianMTModel

from _mode import built


def _workload(dtype=torch.float32):
    torch.manual_seed(0)
    config = MarianConfig(
        vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
        decoder_start_token_id=2, pad_token_id=1,
    )
    model = built(MarianMTModel, config).to(dtype)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    decoder_input_ids = torch.randint(3, config.vocab_size, (1, 8))
    kwargs = {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids, "use_cache": True}
    return model, (), kwargs


def build():
    return _workload()


def build_fp16():
    return _workload(torch.float16)
