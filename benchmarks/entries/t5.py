"""Small random-weight T5 models: the Table 2 rows t5, t5_cg, flan_t5 (fp32) and fp16 twins.

Called with ``use_cache=True`` and no cache object, the decoder ``T5Stack`` takes the legacy-tuple
branch and runs ``logger.warning_once`` (transformers 4.52.4 modeling_t5.py:1019): a GB0291 (LC)
break. ``flan_t5`` is the gated-gelu feed-forward variant (flan-t5's ``feed_forward_proj``).
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration, T5Model

from _mode import built


def _config(**overrides):
    return T5Config(
        vocab_size=128, d_model=64, d_ff=128, num_layers=2, num_heads=2, d_kv=32, **overrides
    )


def _workload(model_class, config, dtype=torch.float32):
    torch.manual_seed(0)
    model = built(model_class, config).to(dtype)
    input_ids = torch.randint(0, config.vocab_size, (1, 8))
    decoder_input_ids = torch.randint(0, config.vocab_size, (1, 8))
    kwargs = {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids, "use_cache": True}
    return model, (), kwargs


def build():
    """t5: ``T5Model`` (encoder-decoder, no LM head)."""
    return _workload(T5Model, _config())


def build_cg():
    """t5_cg: ``T5ForConditionalGeneration``."""
    return _workload(T5ForConditionalGeneration, _config())


def build_flan():
    """flan_t5: ``T5ForConditionalGeneration`` with flan-t5's gated-gelu feed-forward."""
    return _workload(T5ForConditionalGeneration, _config(feed_forward_proj="gated-gelu"))


def build_fp16():
    return _workload(T5Model, _config(), torch.float16)


def build_cg_fp16():
    return _workload(T5ForConditionalGeneration, _config(), torch.float16)
