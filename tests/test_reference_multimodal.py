"""Agreement of course_utils.multimodal with the code vision-language models run: Hugging Face
transformers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, ViT, ViT-MAE) and torch's bicubic interpolation.

Every expected value is computed by the library. The models are built from tiny configs with
random weights: nothing is downloaded. Without torch/transformers (`make reference`) these tests
skip locally and fail in CI.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from course_utils.multimodal import (
    apply_mrope,
    apply_rope_2d,
    axial_rope_frequencies,
    bicubic_resize,
    mrope_position_ids,
    resize_pos_table,
    resize_weights,
    sincos_2d_table,
)

TEXT_CONFIG = dict(hidden_size=32, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                   num_key_value_heads=1, head_dim=16, vocab_size=64, bos_token_id=None, eos_token_id=None,
                   pad_token_id=None)
VISION_CONFIG = dict(depth=1, embed_dim=16, hidden_size=32, num_heads=2, mlp_ratio=1,
                     spatial_merge_size=2)

# (token types, image grids, video grids): one image, two images, a video, image + video.
LAYOUTS = [
    ([0] * 3 + [1] * 6 + [0] * 2, [[1, 4, 6]], None),
    ([0] * 2 + [1] * 4 + [0] * 3 + [1] * 12 + [0], [[1, 4, 4], [1, 6, 8]], None),
    ([0] * 4 + [2] * 24 + [0] * 3, None, [[6, 4, 4]]),
    ([0] + [1] * 2 + [0] * 2 + [2] * 18 + [0] * 2, [[1, 2, 4]], [[2, 6, 6]]),
    ([1] * 9 + [0] * 2, [[1, 6, 6]], None),
    ([0] * 5 + [2] * 8 + [0], None, [[8, 2, 2]]),   # more temporal patches than rows or columns
]


def _tiny(transformers, model_name, config_name, **rope):
    config_class = getattr(transformers, config_name)
    text = dict(TEXT_CONFIG, rope_parameters={"rope_type": "default", "rope_theta": 1e4, **rope})
    config = config_class(text_config=text, vision_config=dict(VISION_CONFIG))
    return getattr(transformers, model_name)(config)


def _rope_index(torch, model, types, images, videos, **kwargs):
    def tensor(x):
        return (None if x is None else torch.tensor(x))
    ids, deltas = model.get_rope_index(torch.zeros(1, len(types), dtype=torch.long),
                                       torch.tensor(types)[None], image_grid_thw=tensor(images),
                                       video_grid_thw=tensor(videos), **kwargs)
    return ids[:, 0].numpy(), int(deltas[0, 0])


@pytest.mark.parametrize("types, images, videos", LAYOUTS)
def test_position_ids_identical_to_qwen2_vl_get_rope_index(torch, transformers, types, images, videos):
    model = _tiny(transformers, "Qwen2VLModel", "Qwen2VLConfig", mrope_section=[2, 3, 3])
    expected, delta = _rope_index(torch, model, types, images, videos)
    ours = mrope_position_ids(types, image_grid_thw=images, video_grid_thw=videos)
    np.testing.assert_array_equal(ours, expected)
    assert ours.max() + 1 - len(types) == delta


@pytest.mark.parametrize("seconds", [[0.5], [1.0], [2.0]])
def test_position_ids_identical_to_qwen2_5_vl_with_time(torch, transformers, seconds):
    model = _tiny(transformers, "Qwen2_5_VLModel", "Qwen2_5_VLConfig", mrope_section=[2, 3, 3])
    types = [0] * 2 + [1] * 4 + [0] + [2] * 12 + [0] * 2
    images, videos = [[1, 4, 4]], [[3, 4, 4]]
    expected, _ = _rope_index(torch, model, types, images, videos,
                              second_per_grid_ts=torch.tensor(seconds))
    interval = model.config.vision_config.tokens_per_second * np.array(seconds)
    ours = mrope_position_ids(types, image_grid_thw=images, video_grid_thw=videos,
                              video_time_interval=interval)
    np.testing.assert_array_equal(ours, expected)


def test_position_ids_identical_to_qwen3_vl_frame_by_frame(torch, transformers):
    # Qwen3-VL splits a video into frames (t = 1 each), separated by timestamp text tokens.
    model = _tiny(transformers, "Qwen3VLModel", "Qwen3VLConfig", mrope_section=[2, 3, 3],
                  mrope_interleaved=True)
    types = [0] * 2 + [2] * 4 + [0] * 3 + [2] * 4 + [0] * 3 + [2] * 4 + [0]
    expected, _ = _rope_index(torch, model, types, None, [[3, 4, 4]])
    ours = mrope_position_ids(types, video_grid_thw=[[1, 4, 4]] * 3)
    np.testing.assert_array_equal(ours, expected)


def _hf_mrope(torch, rotary, x, ids):
    """transformers' M-RoPE in float64: its own recomposition of cos/sin, then apply_rotary_pos_emb."""
    freqs = torch.tensor(ids, dtype=torch.float64)[:, None, :, None] * rotary.inv_freq.double()
    cos, sin = rotary.recomposition_frequencies(freqs.cos()), rotary.recomposition_frequencies(freqs.sin())
    q = torch.tensor(x)
    module = importlib.import_module(type(rotary).__module__)
    out, _ = module.apply_rotary_pos_emb(q, q, cos, sin)
    return out.numpy()


@pytest.mark.parametrize("model_name, config_name, section, interleaved", [
    ("Qwen2VLModel", "Qwen2VLConfig", [2, 3, 3], False),
    ("Qwen2VLModel", "Qwen2VLConfig", [4, 2, 2], False),
    ("Qwen2_5_VLModel", "Qwen2_5_VLConfig", [2, 3, 3], False),
    ("Qwen3VLModel", "Qwen3VLConfig", [4, 2, 2], True),
    ("Qwen3VLModel", "Qwen3VLConfig", [3, 3, 2], True),
])
def test_mrope_rotation_matches_transformers(torch, transformers, model_name, config_name, section,
                                             interleaved):
    extra = {"mrope_interleaved": True} if interleaved else {}
    model = _tiny(transformers, model_name, config_name, mrope_section=section, **extra)
    rotary = model.language_model.rotary_emb
    types = [0] * 3 + [1] * 6 + [0] * 2 + [2] * 8 + [0]
    ids = mrope_position_ids(types, image_grid_thw=[[1, 4, 6]], video_grid_thw=[[2, 4, 4]])
    x = np.random.default_rng(3).normal(size=(1, 2, len(types), 16))   # (batch, heads, seq, head_dim)
    expected = _hf_mrope(torch, rotary, x, ids)
    np.testing.assert_allclose(apply_mrope(x, ids[:, None, None, :], section, interleaved=interleaved),
                               expected, rtol=1e-6, atol=1e-12)


def test_mrope_float32_forward_matches_within_float32(torch, transformers):
    # The model's own forward forms the angles in float32: agreement to float32 accuracy.
    model = _tiny(transformers, "Qwen2VLModel", "Qwen2VLConfig", mrope_section=[2, 3, 3])
    rotary = model.language_model.rotary_emb
    types = [0] * 3 + [1] * 6 + [0] * 2
    ids = mrope_position_ids(types, image_grid_thw=[[1, 4, 6]])
    x = np.random.default_rng(4).normal(size=(1, 2, len(types), 16)).astype(np.float32)
    cos, sin = rotary(torch.tensor(x), torch.tensor(ids)[:, None, :])
    from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb
    expected, _ = apply_rotary_pos_emb(torch.tensor(x), torch.tensor(x), cos, sin)
    np.testing.assert_allclose(apply_mrope(x, ids[:, None, None, :], [2, 3, 3]), expected.numpy(),
                               rtol=1e-5, atol=1e-5)


def test_axial_rope_matches_qwen2_vl_vision_rotary(torch, transformers):
    # Qwen2-VL's vision encoder: axial 2-D RoPE, rows first, half layout, theta_j = base^(-4j/d).
    from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb_vision

    model = _tiny(transformers, "Qwen2VLModel", "Qwen2VLConfig", mrope_section=[2, 3, 3])
    rotary = model.visual.rotary_pos_emb
    head_dim = model.config.vision_config.embed_dim // model.config.vision_config.num_heads
    rows, cols = np.divmod(np.arange(12), 4)
    x = np.random.default_rng(5).normal(size=(12, 2, head_dim))   # (seq, heads, head_dim)
    freqs = torch.tensor(np.stack([rows, cols]), dtype=torch.float64)[..., None] * rotary.inv_freq.double()
    cos = rotary.recomposition_frequencies(freqs.cos().transpose(0, 1))
    sin = rotary.recomposition_frequencies(freqs.sin().transpose(0, 1))
    expected, _ = apply_rotary_pos_emb_vision(torch.tensor(x), torch.tensor(x), cos, sin)
    base = model.config.vision_config.rope_parameters["rope_theta"]
    freq_row, freq_col = axial_rope_frequencies(head_dim, base=base)
    ours = apply_rope_2d(np.swapaxes(x, 0, 1), rows, cols, freq_row, freq_col, layout="half")
    np.testing.assert_allclose(np.swapaxes(ours, 0, 1), expected.double().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("height, width, dim", [(14, 14, 64), (3, 5, 16), (7, 2, 8), (1, 1, 4)])
def test_sincos_table_matches_vit_mae(torch, transformers, height, width, dim):
    from transformers.models.vit_mae.modeling_vit_mae import build_2d_sinusoidal_position_embedding

    expected = build_2d_sinusoidal_position_embedding(height, width, dim, cls_token=True,
                                                      dtype=torch.float64).numpy()
    np.testing.assert_allclose(sincos_2d_table(height, width, dim, cls_token=True), expected,
                               rtol=1e-6, atol=1e-12)


def test_sincos_column_first_matches_vit_mae_initialisation(torch, transformers):
    # ViTMAEEmbeddings.initialize_weights swaps the halves to match the MAE checkpoints (column first).
    config = transformers.ViTMAEConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=16)
    embeddings = transformers.models.vit_mae.modeling_vit_mae.ViTMAEEmbeddings(config)
    embeddings.initialize_weights()
    expected = embeddings.position_embeddings[0].detach().double().numpy()
    np.testing.assert_allclose(sincos_2d_table(4, 4, 32, first_axis="col", cls_token=True), expected,
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("old, new", [((14, 14), (24, 24)), ((14, 14), (7, 9)), ((4, 4), (5, 11)),
                                      ((3, 3), (3, 3))])
def test_resized_table_matches_vit_interpolate_pos_encoding(torch, transformers, old, new):
    patch = 2
    config = transformers.ViTConfig(image_size=old[0] * patch, patch_size=patch, hidden_size=8,
                                    num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    embeddings = transformers.models.vit.modeling_vit.ViTEmbeddings(config).double()
    table = np.random.default_rng(6).normal(size=(1 + old[0] * old[1], 8))
    with torch.no_grad():
        embeddings.position_embeddings.copy_(torch.tensor(table)[None])
        dummy = torch.zeros(1, 1 + new[0] * new[1], 8, dtype=torch.float64)
        expected = embeddings.interpolate_pos_encoding(dummy, new[0] * patch, new[1] * patch)[0].numpy()
    np.testing.assert_allclose(resize_pos_table(table, new), expected, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("shape, size", [((14, 14), (24, 24)), ((5, 3), (2, 8)), ((1, 4), (3, 3))])
def test_bicubic_matches_torch_interpolate(torch, shape, size):
    grid = np.random.default_rng(7).normal(size=shape + (3,))
    image = torch.tensor(grid).permute(2, 0, 1)[None]
    expected = torch.nn.functional.interpolate(image, size=size, mode="bicubic", align_corners=False)
    np.testing.assert_allclose(bicubic_resize(grid, *size), expected[0].permute(1, 2, 0).numpy(),
                               rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("shape, size", [((14, 14), (24, 24)), ((14, 14), (7, 7)), ((14, 14), (5, 9)),
                                         ((5, 3), (2, 8)), ((4, 4), (11, 3))])
def test_antialiased_bicubic_matches_torch_interpolate(torch, shape, size):
    # timm's resample_abs_pos_embed calls F.interpolate(mode="bicubic", antialias=True) by default
    grid = np.random.default_rng(8).normal(size=shape + (3,))
    image = torch.tensor(grid).permute(2, 0, 1)[None]
    expected = torch.nn.functional.interpolate(image, size=size, mode="bicubic", antialias=True)
    m_h = resize_weights(shape[0], size[0], method="bicubic_antialias")
    m_w = resize_weights(shape[1], size[1], method="bicubic_antialias")
    ours = np.einsum("ah,hwd,bw->abd", m_h, grid, m_w)
    np.testing.assert_allclose(ours, expected[0].permute(1, 2, 0).numpy(), rtol=1e-6, atol=1e-12)


def test_antialiased_table_matches_dinov2_interpolate_pos_encoding(torch, transformers):
    # Dinov2WithRegistersEmbeddings resizes with antialias=True (in float32)
    from transformers.models.dinov2_with_registers.modeling_dinov2_with_registers import (
        Dinov2WithRegistersEmbeddings,
    )

    config = transformers.Dinov2WithRegistersConfig(image_size=28, patch_size=2, hidden_size=4,
                                                    num_hidden_layers=1, num_attention_heads=2,
                                                    mlp_ratio=1, num_register_tokens=0)
    embeddings = Dinov2WithRegistersEmbeddings(config).double()
    table = np.random.default_rng(9).normal(size=(197, 4))
    for side in (24, 7):
        with torch.no_grad():
            embeddings.position_embeddings.copy_(torch.tensor(table)[None])
            dummy = torch.zeros(1, 1 + side * side, 4, dtype=torch.float64)
            expected = embeddings.interpolate_pos_encoding(dummy, 2 * side, 2 * side)[0].numpy()
        ours = resize_pos_table(table, (side, side), method="bicubic_antialias")
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


def test_linear_corners_matches_scipy_zoom_order_1():
    # the original ViT code: scipy.ndimage.zoom(posemb_grid, zoom, order=1)
    from scipy import ndimage  # a core dependency: this test never skips
    grid = np.random.default_rng(11).normal(size=(14, 14, 3))
    for side in (24, 7):
        expected = ndimage.zoom(grid, (side / 14, side / 14, 1), order=1)
        ours = np.einsum("ah,hwd,bw->abd", resize_weights(14, side, method="linear_corners"), grid,
                         resize_weights(14, side, method="linear_corners"))
        np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-12)
