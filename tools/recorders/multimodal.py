"""Recorders for positions of images and video (notebook 10): transformers' Qwen2-VL, Qwen2.5-VL
and Qwen3-VL position ids and pair split, ViT's and DINOv2's table resizes, ViT-MAE's 2-D table.

Every model is built from a tiny config with random weights (nothing is downloaded); only the
position code is called. Input tables are drawn with ``numpy.random.default_rng(seed)`` so that a
notebook can draw the same table from the seed stored in the record's inputs.
"""

from __future__ import annotations

import numpy as np

_TEXT = dict(hidden_size=32, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, head_dim=16, vocab_size=64, bos_token_id=None,
             eos_token_id=None, pad_token_id=None)
_VISION = dict(depth=1, embed_dim=16, hidden_size=32, num_heads=2, mlp_ratio=1,
               spatial_merge_size=2)


def _qwen(model_name, config_name, head_dim=16, mrope_section=(2, 3, 3), vision=None, **rope):
    import transformers

    text = dict(_TEXT, head_dim=head_dim, hidden_size=2 * head_dim,
                rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                 "mrope_section": list(mrope_section), **rope})
    config = getattr(transformers, config_name)(text_config=text,
                                                vision_config=dict(_VISION, **(vision or {})))
    return getattr(transformers, model_name)(config)


def _rope_index(model, types, images=None, videos=None, **kwargs):
    import torch

    def tensor(x):
        return None if x is None else torch.tensor(x)

    ids, deltas = model.get_rope_index(torch.zeros(1, len(types), dtype=torch.long),
                                       torch.tensor(types)[None], image_grid_thw=tensor(images),
                                       video_grid_thw=tensor(videos), **kwargs)
    return ids[:, 0].numpy(), int(deltas[0, 0])


# Notebook 10's sequences: text + one 4 x 6 image; text, two images, a video, text.
_ONE_IMAGE = ([0] * 3 + [1] * 6 + [0] * 2, [[1, 4, 6]], None)
_MIXED = ([0] * 2 + [1] * 4 + [0] + [1] * 2 + [0] + [2] * 8 + [0] * 2,
          [[1, 4, 4], [1, 2, 4]], [[2, 4, 4]])


def record_mrope_qwen2_vl_ids():
    """Qwen2VLModel.get_rope_index on two sequences: text + image + text, and text with two
    images and a 2 x 2 x 2 video (patch grids before the 2 x 2 merge)."""
    model = _qwen("Qwen2VLModel", "Qwen2VLConfig")
    outputs, inputs = {}, {}
    for key, (types, images, videos) in (("one_image", _ONE_IMAGE), ("mixed", _MIXED)):
        ids, delta = _rope_index(model, types, images, videos)
        outputs[f"{key}_ids"], outputs[f"{key}_rope_deltas"] = ids, delta
        inputs[key] = {"mm_token_type_ids": types, "image_grid_thw": images,
                       "video_grid_thw": videos}
    return ("transformers.models.qwen2_vl.modeling_qwen2_vl.Qwen2VLModel.get_rope_index",
            "src/transformers/models/qwen2_vl/modeling_qwen2_vl.py", inputs, outputs)


def record_mrope_qwen2_5_vl_time():
    """Qwen2_5_VLModel.get_rope_index for 2 text tokens, a video of 4 temporal patches (2 x 2
    tokens each) and 1 text token, at several seconds per temporal patch, tokens_per_second = 2
    (the released Qwen2.5-VL configs)."""
    model = _qwen("Qwen2_5_VLModel", "Qwen2_5_VLConfig", vision={"tokens_per_second": 2})
    import torch

    types, videos = [0] * 2 + [2] * 16 + [0], [[4, 4, 4]]
    seconds = [0.5, 0.75, 1.0, 2.0]
    outputs = {}
    for s in seconds:
        ids, _ = _rope_index(model, types, None, videos,
                             second_per_grid_ts=torch.tensor([s]))
        outputs[f"ids_{s:g}s".replace(".", "_")] = ids
    inputs = {"mm_token_type_ids": types, "video_grid_thw": videos, "tokens_per_second": 2,
              "second_per_grid_ts": seconds}
    return ("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl.Qwen2_5_VLModel.get_rope_index",
            "src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py", inputs, outputs)


def _pair_axes(model):
    """Which of the three position ids each rotary pair follows: the recomposed frequencies of
    ids (0, 1, 2) on the three axes, read back."""
    import torch

    rotary = model.language_model.rotary_emb
    n_pairs = rotary.inv_freq.shape[0]
    freqs = torch.arange(3, dtype=torch.float64)[:, None, None, None].expand(3, 1, 1, n_pairs)
    recomposed = rotary.recomposition_frequencies(freqs.clone())
    return recomposed[0, 0, :n_pairs].numpy().astype(np.int64)


def record_mrope_pair_axes():
    """The axis (0 temporal, 1 height, 2 width) of each of the 64 pairs of a 128-wide head:
    Qwen2-VL's blocks with mrope_section [16, 24, 24], Qwen3-VL's interleaving with [24, 20, 20]."""
    qwen2 = _qwen("Qwen2VLModel", "Qwen2VLConfig", head_dim=128, mrope_section=(16, 24, 24))
    qwen3 = _qwen("Qwen3VLModel", "Qwen3VLConfig", head_dim=128, mrope_section=(24, 20, 20),
                  mrope_interleaved=True)
    inputs = {"head_dim": 128, "qwen2_vl_mrope_section": [16, 24, 24],
              "qwen3_vl_mrope_section": [24, 20, 20]}
    return ("Qwen2VLRotaryEmbedding / Qwen3VLTextRotaryEmbedding.recomposition_frequencies",
            "src/transformers/models/qwen2_vl/modeling_qwen2_vl.py, "
            "src/transformers/models/qwen3_vl/modeling_qwen3_vl.py", inputs,
            {"qwen2_vl": _pair_axes(qwen2), "qwen3_vl": _pair_axes(qwen3)})


def _resized(embeddings_class, config, table, new_side, patch):
    import torch

    embeddings = embeddings_class(config).double()
    with torch.no_grad():
        embeddings.position_embeddings.copy_(torch.tensor(table)[None])
        dummy = torch.zeros(1, 1 + new_side * new_side, table.shape[1], dtype=torch.float64)
        out = embeddings.interpolate_pos_encoding(dummy, new_side * patch, new_side * patch)
    return out[0].double().numpy()


#: The table both resize records start from: a class token and a 14 x 14 grid, 4 channels.
_RESIZE_SEED, _RESIZE_WIDTH, _RESIZE_SIDES = 10, 4, (24, 7)


def _resize_table():
    return np.random.default_rng(_RESIZE_SEED).normal(size=(1 + 14 * 14, _RESIZE_WIDTH))


def record_resize_vit_bicubic():
    """ViTEmbeddings.interpolate_pos_encoding (bicubic, no antialiasing): a 14 x 14 table
    enlarged to 24 x 24 and shrunk to 7 x 7."""
    import transformers
    from transformers.models.vit.modeling_vit import ViTEmbeddings

    config = transformers.ViTConfig(image_size=28, patch_size=2, hidden_size=_RESIZE_WIDTH,
                                    num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=8)
    table = _resize_table()
    outputs = {f"to_{n}": _resized(ViTEmbeddings, config, table, n, 2) for n in _RESIZE_SIDES}
    inputs = {"table": f"numpy.random.default_rng({_RESIZE_SEED}).normal(size=(197, 4))",
              "old_grid": [14, 14], "new_sides": list(_RESIZE_SIDES)}
    return ("transformers.models.vit.modeling_vit.ViTEmbeddings.interpolate_pos_encoding",
            "src/transformers/models/vit/modeling_vit.py", inputs, outputs)


def record_resize_dinov2_antialias():
    """Dinov2WithRegistersEmbeddings.interpolate_pos_encoding (bicubic with antialias=True, the
    torch call timm's resample_abs_pos_embed makes by default): the same table and sizes."""
    import transformers
    from transformers.models.dinov2_with_registers.modeling_dinov2_with_registers import (
        Dinov2WithRegistersEmbeddings,
    )

    config = transformers.Dinov2WithRegistersConfig(
        image_size=28, patch_size=2, hidden_size=_RESIZE_WIDTH, num_hidden_layers=1,
        num_attention_heads=2, mlp_ratio=1, num_register_tokens=0)
    table = _resize_table()
    outputs = {f"to_{n}": _resized(Dinov2WithRegistersEmbeddings, config, table, n, 2)
               for n in _RESIZE_SIDES}
    inputs = {"table": f"numpy.random.default_rng({_RESIZE_SEED}).normal(size=(197, 4))",
              "old_grid": [14, 14], "new_sides": list(_RESIZE_SIDES)}
    return ("transformers.models.dinov2_with_registers.modeling_dinov2_with_registers."
            "Dinov2WithRegistersEmbeddings.interpolate_pos_encoding",
            "src/transformers/models/dinov2_with_registers/modeling_dinov2_with_registers.py",
            inputs, outputs)


def record_vit_mae_sincos():
    """build_2d_sinusoidal_position_embedding(3, 5, 16, cls_token=True) (rows first) and the
    table ViTMAEEmbeddings.initialize_weights builds for a 4 x 4 grid of width 16 (columns
    first)."""
    import torch
    import transformers
    from transformers.models.vit_mae.modeling_vit_mae import (
        ViTMAEEmbeddings,
        build_2d_sinusoidal_position_embedding,
    )

    rows_first = build_2d_sinusoidal_position_embedding(3, 5, 16, cls_token=True,
                                                        dtype=torch.float64)
    config = transformers.ViTMAEConfig(image_size=16, patch_size=4, hidden_size=16,
                                       num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=16)
    embeddings = ViTMAEEmbeddings(config)
    embeddings.initialize_weights()
    inputs = {"build_2d_sinusoidal_position_embedding": [3, 5, 16, "cls_token=True"],
              "ViTMAEEmbeddings": {"image_size": 16, "patch_size": 4, "hidden_size": 16}}
    return ("transformers.models.vit_mae.modeling_vit_mae.build_2d_sinusoidal_position_embedding",
            "src/transformers/models/vit_mae/modeling_vit_mae.py", inputs,
            {"rows_first_3x5": rows_first.double().numpy().reshape(-1, 16),
             "initialize_weights_4x4": embeddings.position_embeddings[0].detach().double().numpy()})


def _rotated(model, x, ids):
    """transformers' M-RoPE of ``x`` (seq, head_dim) at ``ids`` (3, seq), in float64: its own
    recomposition of cos and sin, then its ``apply_rotary_pos_emb``."""
    import importlib

    import torch

    rotary = model.language_model.rotary_emb
    freqs = torch.tensor(ids, dtype=torch.float64)[:, None, :, None] * rotary.inv_freq.double()
    cos = rotary.recomposition_frequencies(freqs.cos())
    sin = rotary.recomposition_frequencies(freqs.sin())
    module = importlib.import_module(type(rotary).__module__)
    q = torch.tensor(x)[None, None]  # (batch, heads, seq, head_dim)
    out, _ = module.apply_rotary_pos_emb(q, q, cos, sin)
    return out[0, 0].numpy()


def record_mrope_rotation():
    """M-RoPE rotation of 20 random vectors (head_dim 16, numpy.random.default_rng(12)) at the
    ids of notebook 10's text + two images + video sequence: Qwen2-VL's blocks with
    mrope_section [2, 3, 3] and Qwen3-VL's interleaving with [3, 3, 2]."""
    types, images, videos = _MIXED
    qwen2 = _qwen("Qwen2VLModel", "Qwen2VLConfig", mrope_section=(2, 3, 3))
    ids, _ = _rope_index(qwen2, types, images, videos)
    x = np.random.default_rng(12).normal(size=(len(types), 16))
    qwen3 = _qwen("Qwen3VLModel", "Qwen3VLConfig", mrope_section=(3, 3, 2),
                  mrope_interleaved=True)
    inputs = {"x": "numpy.random.default_rng(12).normal(size=(20, 16))", "position_ids": ids,
              "qwen2_vl_mrope_section": [2, 3, 3], "qwen3_vl_mrope_section": [3, 3, 2],
              "rope_theta": 1e4}
    # the cos and sin come from recomposition_frequencies of each model's rotary embedding
    return ("transformers.models.qwen2_vl.modeling_qwen2_vl.apply_rotary_pos_emb",
            "src/transformers/models/qwen2_vl/modeling_qwen2_vl.py, "
            "src/transformers/models/qwen3_vl/modeling_qwen3_vl.py", inputs,
            {"qwen2_vl": _rotated(qwen2, x, ids), "qwen3_vl": _rotated(qwen3, x, ids)})
