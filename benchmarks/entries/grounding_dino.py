"""Small random-weight ``GroundingDinoModel`` (grounding-dino-tiny's class) with a small
``SwinConfig`` backbone and ``BertConfig`` text encoder, built offline.

Break sites (transformers 4.52.4): ``torch.nonzero`` on the special-token mask (line 1906, DS),
``torch.linspace`` with tensor sizes in ``get_reference_points`` (line 1512, DO), the
multiscale deformable attention's spatial-shape guard (line 608, VG/DC), slicing with tensor bounds
in ``generate_encoder_output_proposals`` (line 2050, DO/DS), and the branch at line 1914 (DC).
"""

import torch
from transformers import BertConfig, GroundingDinoConfig, GroundingDinoModel, SwinConfig

from _mode import built


def build():
    torch.manual_seed(0)
    backbone = SwinConfig(
        image_size=128, patch_size=4, embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2],
        window_size=2, out_features=["stage2", "stage3", "stage4"],
    )
    text = BertConfig(
        vocab_size=1100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )
    config = GroundingDinoConfig(
        backbone_config=backbone.to_dict(), text_config=text.to_dict(), d_model=32,
        encoder_layers=1, decoder_layers=1, encoder_ffn_dim=64, decoder_ffn_dim=64,
        encoder_attention_heads=2, decoder_attention_heads=2, num_queries=10,
        num_feature_levels=4, encoder_n_points=2, decoder_n_points=2, max_text_len=16,
        disable_custom_kernels=True,
    )
    model = built(GroundingDinoModel, config)
    pixel_values = torch.randn(1, 3, 128, 128)
    # [CLS] a . b . [SEP] with BERT's special ids, so the token-group masks are non-trivial
    input_ids = torch.tensor([[101, 5, 1012, 6, 1012, 102]])
    return model, (), {"pixel_values": pixel_values, "input_ids": input_ids}
