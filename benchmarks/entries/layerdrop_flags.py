"""Small random-weight models whose LayerDrop flag is a conditional expression (GM203):
``skip_the_layer = True if self.training and (dropout_probability < self.layerdrop) else
False``. It breaks only in training (``GRAPHMEND_TABLE2_TRAINING=1``, which also sets every
dropout-like probability, LayerDrop included, to 0; see ``_mode.py``).

* ``build_m2m100``: ``M2M100Model``, the flag in the encoder and the decoder
  (modeling_m2m_100.py:1066 and 1346);
* ``build_wav2vec2``: ``Wav2Vec2Model`` with the stable layer norm encoder
  (modeling_wav2vec2.py:1104).
"""

import torch
from transformers import M2M100Config, M2M100Model, Wav2Vec2Config, Wav2Vec2Model

from _mode import built


def build_m2m100():
    torch.manual_seed(0)
    config = M2M100Config(
        vocab_size=64, d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=32,
    )
    input_ids = torch.randint(3, config.vocab_size, (1, 8))
    model = built(M2M100Model, config)
    return model, (), {"input_ids": input_ids, "decoder_input_ids": input_ids}


def build_wav2vec2():
    torch.manual_seed(0)
    config = Wav2Vec2Config(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        conv_dim=(8, 8), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2, mask_time_prob=0.0, do_stable_layer_norm=True,
    )
    return built(Wav2Vec2Model, config), (torch.randn(1, 800),), {}
