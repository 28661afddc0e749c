"""Small random-weight ``MusicgenForConditionalGeneration`` (SDPA attention) for `graphmend verify`.

The text encoder's attention mask pads the second prompt, and the decoder's cross-attention
(``MusicgenSdpaAttention.forward``) tests it: ``if attention_mask is not None and
(attention_mask.mean(dim=[1, 2, 3]) <= torch.finfo(attention_mask.dtype).min).any():``
(modeling_musicgen.py:457), a GB0170 break in every decoder layer. Its branch logs with
``logger.warning_once`` and then returns the eager attention (``super().forward(...)``), so it
is not an `if` that only logs: the fix declines it. ``build_empty_prompt`` masks the whole
second prompt, so that the branch is taken.
"""

import torch
from transformers import (
    EncodecConfig,
    EncodecModel,
    MusicgenConfig,
    MusicgenDecoderConfig,
    MusicgenForCausalLM,
    MusicgenForConditionalGeneration,
    T5Config,
    T5EncoderModel,
)

from _mode import built


def _workload(mask):
    torch.manual_seed(0)
    text = T5Config(vocab_size=64, d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16)
    audio = EncodecConfig(
        hidden_size=16, num_filters=4, upsampling_ratios=[2, 2], codebook_size=32,
        codebook_dim=16, target_bandwidths=[1.5], sampling_rate=16000, num_residual_layers=1,
        num_lstm_layers=1,
    )
    decoder = MusicgenDecoderConfig(
        vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        ffn_dim=64, num_codebooks=2, max_position_embeddings=64,
    )
    config = MusicgenConfig.from_sub_models_config(text, audio, decoder)
    config.decoder._attn_implementation = "sdpa"
    model = built(_musicgen, config)
    input_ids = torch.randint(2, text.vocab_size, (2, 6))
    decoder_input_ids = torch.randint(0, decoder.vocab_size, (2 * decoder.num_codebooks, 4))
    kwargs = {
        "input_ids": input_ids,
        "attention_mask": torch.tensor(mask),
        "decoder_input_ids": decoder_input_ids,
    }
    return model, (), kwargs


def _musicgen(config):
    """The model from its three parts (``AutoModel`` would import every family's config)."""
    return MusicgenForConditionalGeneration(
        config,
        text_encoder=T5EncoderModel(config.text_encoder),
        audio_encoder=EncodecModel(config.audio_encoder),
        decoder=MusicgenForCausalLM(config.decoder),
    )


def build():
    return _workload([[1] * 6, [1] * 4 + [0] * 2])


def build_empty_prompt():
    return _workload([[1] * 6, [0] * 6])
