"""A small random-weight T5 for `graphmend verify`: the Table 2 "t5_cg" row on transformers 4.52.4.

Called with `use_cache=True` (T5Config's default) and no cache object, the decoder stack takes
the legacy-tuple branch and runs `logger.warning_once` (modeling_t5.py:1019), a GB0291 break.
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

from _mode import built


def build():
    torch.manual_seed(0)
    config = T5Config(vocab_size=128, d_model=64, d_ff=128, num_layers=2, num_heads=2, d_kv=32)
    model = built(T5ForConditionalGeneration, config)
    input_ids = torch.randint(0, config.vocab_size, (1, 8))
    decoder_input_ids = torch.randint(0, config.vocab_size, (1, 8))
    return (
        model,
        (),
        {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids, "use_cache": True},
    )
