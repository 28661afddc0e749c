"""Small random-weight BART models: the Table 2 rows bart (``BartModel``) and rebel
(``BartForConditionalGeneration``, as Babelscape/rebel-large), in fp32 and fp16.

* ``use_cache=True`` with no cache object: ``BartDecoder.forward`` runs the legacy-cache
  ``logger.warning_once`` (modeling_bart.py:1246), GB0291 (LC).
* fp16 only: ``BartEncoderLayer.forward``'s overflow clamp ``if hidden_states.dtype ==
  torch.float16 and (torch.isinf(...).any() or torch.isnan(...).any())`` (modeling_bart.py:567),
  GB0170 (DC). fp32 never reaches the tensor part of the condition.
"""

import torch
from transformers import BartConfig, BartForConditionalGeneration, BartModel

from _mode import built


def _workload(model_class, dtype=torch.float32):
    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
    )
    model = built(model_class, config).to(dtype)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    decoder_input_ids = torch.randint(3, config.vocab_size, (1, 8))
    kwargs = {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids, "use_cache": True}
    return model, (), kwargs


def build():
    """bart: ``BartModel``."""
    return _workload(BartModel)


def build_fp16():
    return _workload(BartModel, torch.float16)


def build_rebel():
    """rebel: ``BartForConditionalGeneration``."""
    return _workload(BartForConditionalGeneration)


def build_rebel_fp16():
    return _workload(BartForConditionalGeneration, torch.float16)
