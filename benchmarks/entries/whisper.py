"""Small random-weight Whisper: ``WhisperModel`` (row whisper) and
``WhisperForConditionalGeneration`` (row whisper_cg), fp32 and fp16.

``use_cache=True`` with no cache object: ``WhisperDecoder.forward`` runs the legacy-cache
``logger.warning_once`` (modeling_whisper.py:1104), GB0291 (LC).
"""

import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration, WhisperModel

from _mode import built


def _workload(model_class, dtype=torch.float32):
    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=80,
        max_source_positions=64, max_target_positions=64,
        pad_token_id=1, bos_token_id=2, eos_token_id=2, decoder_start_token_id=2,
        suppress_tokens=None, begin_suppress_tokens=None,
    )
    model = built(model_class, config).to(dtype)
    input_features = torch.randn(1, 80, 128).to(dtype)
    decoder_input_ids = torch.randint(3, config.vocab_size, (1, 8))
    kwargs = {
        "input_features": input_features,
        "decoder_input_ids": decoder_input_ids,
        "use_cache": True,
    }
    return model, (), kwargs


def build():
    return _workload(WhisperModel)


def build_fp16():
    return _workload(WhisperModel, torch.float16)


def build_cg():
    return _workload(WhisperForConditionalGeneration)


def build_cg_fp16():
    return _workload(WhisperForConditionalGeneration, torch.float16)
