"""Small random-weight Blenderbot (``BlenderbotModel``, ``BlenderbotForConditionalGeneration``)
and BlenderbotSmall (``BlenderbotSmallModel``), fp32 and fp16.

* legacy-cache ``logger.warning_once`` in the decoders (modeling_blenderbot.py:951,
  modeling_blenderbot_small.py:935), GB0291 (LC), with ``use_cache=True`` and no cache object;
* fp16 only, BlenderbotSmall: the encoder layer's overflow clamp
  (modeling_blenderbot_small.py:313), GB0170 (DC). Blenderbot's pre-norm layers have none.
"""

import torch
from transformers import (
    BlenderbotConfig,
    BlenderbotForConditionalGeneration,
    BlenderbotModel,
    BlenderbotSmallConfig,
    BlenderbotSmallModel,
)

from _mode import built

_SIZES = dict(
    vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
    encoder_attention_heads=2, decoder_attention_heads=2,
    encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
)


def _workload(model_class, config, dtype=torch.float32):
    torch.manual_seed(0)
    model = built(model_class, config).to(dtype)
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    decoder_input_ids = torch.randint(3, config.vocab_size, (1, 8))
    kwargs = {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids, "use_cache": True}
    return model, (), kwargs


def build():
    return _workload(BlenderbotModel, BlenderbotConfig(**_SIZES))


def build_fp16():
    return _workload(BlenderbotModel, BlenderbotConfig(**_SIZES), torch.float16)


def build_cg():
    return _workload(BlenderbotForConditionalGeneration, BlenderbotConfig(**_SIZES))


def build_cg_fp16():
    return _workload(BlenderbotForConditionalGeneration, BlenderbotConfig(**_SIZES), torch.float16)


def build_small():
    return _workload(BlenderbotSmallModel, BlenderbotSmallConfig(**_SIZES))


def build_small_fp16():
    return _workload(BlenderbotSmallModel, BlenderbotSmallConfig(**_SIZES), torch.float16)
