"""Small diffusers models for ``graphmend verify`` (an independent check: code the rules and
fixers were not written against). Needs ``pip install diffusers==0.33.1`` (not in the extras).

    graphmend verify benchmarks/entries/diffusers_models.py:build_unet --fix diffusers.models

Factories: ``build_unet`` (UNet2DConditionModel, an odd latent size so that the upsampling
branch runs), ``build_sd3`` (SD3Transformer2DModel), ``build_flux`` (FluxTransformer2DModel),
``build_vae`` (AutoencoderKL); tiny configs, random weights (seed 0), eval mode.
"""

import torch


def build_unet():
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    model = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=8,
    ).eval()
    sample = torch.randn(2, 4, 9, 9)
    context = torch.randn(2, 5, 32)
    kwargs = {"cross_attention_kwargs": {"scale": 0.5}}
    return model, (sample, torch.tensor([10, 20]), context), kwargs


def build_sd3():
    from diffusers import SD3Transformer2DModel

    torch.manual_seed(0)
    model = SD3Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
        pooled_projection_dim=8, out_channels=4, pos_embed_max_size=16,
    ).eval()
    kwargs = {
        "hidden_states": torch.randn(1, 4, 8, 8),
        "encoder_hidden_states": torch.randn(1, 3, 16),
        "pooled_projections": torch.randn(1, 8),
        "timestep": torch.tensor([3]),
        "joint_attention_kwargs": {"scale": 1.0},
    }
    return model, (), kwargs


def build_flux():
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1, in_channels=8, num_layers=1, num_single_layers=1, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=16, pooled_projection_dim=8,
        axes_dims_rope=(2, 2, 4),
    ).eval()
    kwargs = {
        "hidden_states": torch.randn(1, 16, 8),
        "encoder_hidden_states": torch.randn(1, 4, 16),
        "pooled_projections": torch.randn(1, 8),
        "timestep": torch.tensor([0.5]),
        "img_ids": torch.zeros(16, 3),
        "txt_ids": torch.zeros(4, 3),
        "joint_attention_kwargs": {"scale": 1.0},
    }
    return model, (), kwargs


def build_vae():
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    model = AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32),
        latent_channels=4, norm_num_groups=8, sample_size=16,
    ).eval()
    return model, (torch.randn(1, 3, 16, 16),), {"sample_posterior": False}
