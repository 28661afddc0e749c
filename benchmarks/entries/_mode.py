"""Inference or training: how every entry in this folder builds its model.

By default a model is built for inference (``.eval()``). With ``GRAPHMEND_TABLE2_TRAINING=1`` in
the environment (``benchmarks/table2.py --grad`` sets it, and the runner's arms inherit it) it is
built for training: ``.train()``, with every dropout-like probability set to 0 first, so that
eager and compiled calls compute the same values. "Dropout-like" is any numeric config attribute
whose name contains "drop" (``dropout``, ``attention_dropout``, ``encoder_layerdrop``,
``drop_path_rate``, ``fusion_droppath``, ``resid_pdrop``), in the config and in its sub-configs
(``text_config``, ``backbone_config``): Swin's and Grounding DINO's drop paths and Phi-3's
``*_pdrop`` are random in training too. With ``GRAPHMEND_TABLE2_CHECKPOINTING=1`` as well
(``table2.py --checkpointing``), a model that supports gradient checkpointing is built with it
on (transformers' default, ``use_reentrant=True``).
"""

import os

from transformers import PretrainedConfig

ENVIRONMENT = "GRAPHMEND_TABLE2_TRAINING"
TRAINING = os.environ.get(ENVIRONMENT) == "1"
CHECKPOINTING = TRAINING and os.environ.get("GRAPHMEND_TABLE2_CHECKPOINTING") == "1"


def built(model_class, config):
    """``model_class(config)`` in eval mode, or (training) in train mode without dropout."""
    if not TRAINING:
        return model_class(config).eval()
    _without_dropout(config)
    model = model_class(config).train()
    if CHECKPOINTING and model.supports_gradient_checkpointing:
        model.gradient_checkpointing_enable()
    return model


def _without_dropout(config):
    for name, value in list(vars(config).items()):
        if isinstance(value, PretrainedConfig):
            _without_dropout(value)
        elif "drop" in name and _is_number(value):
            setattr(config, name, 0.0)
        elif "drop" in name and isinstance(value, list) and all(map(_is_number, value)):
            setattr(config, name, [0.0] * len(value))


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
