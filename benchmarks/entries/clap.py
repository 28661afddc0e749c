"""Small random-weight CLAP with ``enable_fusion=True`` (laion/clap-htsat-fused's setting).

``ClapAudioEncoder.forward`` selects the "longer" clips with
``torch.where(is_longer_list == 1)[0]`` (modeling_clap.py:904): GB0036 (DS), outside the paper's
families, so the paper fixes none of these breaks.

In training the audio batch holds two clips: the fusion block's ``BatchNorm2d`` sees one value
per channel with one clip, which batch norm refuses in train mode.
"""

import torch
from transformers import ClapAudioConfig, ClapAudioModel, ClapConfig, ClapModel, ClapTextConfig

from _mode import TRAINING, built

_AUDIO = dict(
    enable_fusion=True, hidden_size=128, patch_embeds_hidden_size=16, depths=[1, 1, 1, 1],
    num_attention_heads=[1, 2, 2, 4], projection_dim=32, num_mel_bins=64, spec_size=256,
    window_size=8,
)


def _audio_inputs():
    clips = 2 if TRAINING else 1
    input_features = torch.randn(clips, 4, 1001, 64)
    is_longer = torch.tensor([[True]] * clips)
    return input_features, is_longer


def build():
    """clap_fused: ``ClapModel`` (text and audio towers)."""
    torch.manual_seed(0)
    config = ClapConfig(
        text_config=ClapTextConfig(
            vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=64, projection_dim=32,
        ).to_dict(),
        audio_config=ClapAudioConfig(**_AUDIO).to_dict(),
        projection_dim=32,
    )
    model = built(ClapModel, config)
    input_ids = torch.randint(3, 128, (1, 8))
    attention_mask = torch.ones(1, 8, dtype=torch.long)
    input_features, is_longer = _audio_inputs()
    kwargs = {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "input_features": input_features,
        "is_longer": is_longer,
    }
    return model, (), kwargs


def build_audio():
    """clap_audio_fused: ``ClapAudioModel`` alone."""
    torch.manual_seed(0)
    model = built(ClapAudioModel, ClapAudioConfig(**_AUDIO))
    input_features, is_longer = _audio_inputs()
    return model, (), {"input_features": input_features, "is_longer": is_longer}
