"""Agreement of course_utils.modern with Hugging Face transformers: the layer patterns the Llama 4,
SmolLM3 and Gemma 3 config classes build, Llama 4's attention temperature, partial RoPE (GPT-NeoX),
DeepSeek-V3's decoupled rotary attention, GPT-OSS's sinks, Llama 4's chunked mask, and the layer
patterns of every stored released config (course_utils/data/configs) that the course's pattern
functions can build.

Models are built from tiny configs with random weights: nothing is downloaded. Without
torch/transformers (`make reference`) these tests skip locally and fail in CI.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from course_utils.data.released import released_config, released_config_names
from course_utils.modern import (
    attention_with_sinks,
    chunked_attention_mask,
    deepseek_softmax_scale,
    llama4_attn_scales,
    llama4_layer_types,
    mla_scores,
    no_rope_layers,
    sliding_window_layer_types,
    smollm3_layer_types,
)
from course_utils.rope import apply_rope, rope_inv_freq
from course_utils.scaling import rope_scaling


@pytest.mark.parametrize("n_layers, interval", [(48, 4), (36, 4), (10, 3), (7, 2), (5, 1)])
def test_no_rope_layers_match_llama4_and_smollm3_configs(transformers, n_layers, interval):
    ours = no_rope_layers(n_layers, interval)
    llama4 = transformers.Llama4TextConfig(num_hidden_layers=n_layers, no_rope_layer_interval=interval)
    smol = transformers.SmolLM3Config(num_hidden_layers=n_layers, no_rope_layer_interval=interval)
    assert list(llama4.no_rope_layers) == ours.tolist() == list(smol.no_rope_layers)
    assert list(llama4.layer_types) == llama4_layer_types(ours)
    assert list(smol.layer_types) == smollm3_layer_types(ours)
    windowed = transformers.SmolLM3Config(num_hidden_layers=n_layers, no_rope_layer_interval=interval,
                                          use_sliding_window=True, sliding_window=64)
    assert list(windowed.layer_types) == smollm3_layer_types(ours, use_sliding_window=True,
                                                             sliding_window=64)


@pytest.mark.parametrize("n_layers, pattern", [(26, 6), (62, 6), (34, 6), (12, 2), (9, 4)])
def test_layer_types_match_gemma3_config(transformers, n_layers, pattern):
    config = transformers.Gemma3TextConfig(num_hidden_layers=n_layers, sliding_window_pattern=pattern)
    assert list(config.layer_types) == sliding_window_layer_types(n_layers, pattern)


def test_gemma3_two_bases_and_scaling_of_global_layers_only(transformers):
    config = transformers.Gemma3TextConfig(rope_theta=1e6, rope_local_base_freq=1e4,
                                           rope_scaling={"rope_type": "linear", "factor": 8.0})
    assert config.rope_parameters["sliding_attention"]["rope_theta"] == 1e4
    assert config.rope_parameters["full_attention"]["rope_theta"] == 1e6
    assert config.rope_parameters["full_attention"]["factor"] == 8.0
    assert config.rope_parameters["sliding_attention"]["rope_type"] == "default"


def test_llama4_temperature_matches_attention_layer(torch, transformers):
    """A NoPE layer of a tiny Llama 4 with floor_scale 4: its attention weights are softmax of
    the scores with each query scaled by llama4_attn_scales."""
    config = transformers.Llama4TextConfig(
        hidden_size=16, num_attention_heads=2, num_key_value_heads=2, head_dim=8, num_hidden_layers=4,
        intermediate_size=16, intermediate_size_mlp=16, vocab_size=32, floor_scale=4, attn_scale=0.3,
        attn_temperature_tuning=True, attn_implementation="eager")
    module = importlib.import_module("transformers.models.llama4.modeling_llama4")
    layer = module.Llama4TextAttention(config, layer_idx=3).double().eval()
    assert not layer.use_rope
    n = 23
    x = torch.tensor(np.random.default_rng(0).normal(size=(1, n, 16)))
    mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        _, weights = layer(x, position_embeddings=None, attention_mask=mask)
        q = layer.q_proj(x).view(1, n, 2, 8).transpose(1, 2).numpy()
        k = layer.k_proj(x).view(1, n, 2, 8).transpose(1, 2).numpy()
    scale = llama4_attn_scales(np.arange(n), floor_scale=4, attn_scale=0.3)
    scores = (q * scale[:, None]) @ np.swapaxes(k, -1, -2) / np.sqrt(8)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-6, atol=1e-9)  # float32 factor


@pytest.mark.parametrize("head_size, pct", [(96, 0.25), (64, 0.5), (32, 1.0), (40, 0.4)])
def test_partial_rope_matches_gpt_neox(torch, transformers, head_size, pct):
    config = transformers.GPTNeoXConfig(hidden_size=2 * head_size, num_attention_heads=2,
                                        rotary_pct=pct, rotary_emb_base=10000, num_hidden_layers=1,
                                        intermediate_size=8, vocab_size=16)
    module = importlib.import_module("transformers.models.gpt_neox.modeling_gpt_neox")
    rotary = module.GPTNeoXRotaryEmbedding(config)
    positions = torch.tensor([[0, 1, 5, 17, 300]])
    x = np.random.default_rng(1).normal(size=(1, 2, 5, head_size))
    t = torch.tensor(x)
    rotary_dim = int(head_size * pct)
    # the library's frequencies use the rotated width: theta_i = b^(-2i/rotary_dim)
    np.testing.assert_allclose(rotary.inv_freq.double().numpy(), rope_inv_freq(rotary_dim), rtol=1e-6)
    freqs = positions.double()[..., None] * rotary.inv_freq.double()  # float64 angles, as ours
    emb = torch.cat([freqs, freqs], dim=-1)
    out, _ = module.apply_rotary_pos_emb(t, t, emb.cos(), emb.sin())
    ours = apply_rope(x, positions.numpy()[0], layout="half", rotary_dim=rotary_dim,
                      inv_freq=rotary.inv_freq.double().numpy())
    np.testing.assert_allclose(ours, out.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(ours[..., rotary_dim:], x[..., rotary_dim:])


def _rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


@pytest.mark.parametrize("interleave", [True, False])
@pytest.mark.parametrize("yarn", [False, True])
def test_decoupled_rope_matches_deepseek_v3_attention(torch, transformers, interleave, yarn):
    heads, d_nope, d_rope, d_v, rank, hidden, n = 3, 8, 4, 6, 10, 24, 9
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    if yarn:
        rope = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "beta_fast": 32.0,
                "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                "original_max_position_embeddings": 64}
    config = transformers.DeepseekV3Config(
        hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=heads, q_lora_rank=None,
        kv_lora_rank=rank, qk_nope_head_dim=d_nope, qk_rope_head_dim=d_rope, v_head_dim=d_v,
        num_hidden_layers=1, intermediate_size=8, moe_intermediate_size=8, vocab_size=16,
        max_position_embeddings=256, rope_interleave=interleave, rope_parameters=rope,
        attn_implementation="eager")
    module = importlib.import_module("transformers.models.deepseek_v3.modeling_deepseek_v3")
    layer = module.DeepseekV3Attention(config, 0).double().eval()
    rotary = module.DeepseekV3RotaryEmbedding(config).double()
    rng = np.random.default_rng(2)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.tensor(rng.normal(size=tuple(p.shape))))
        x = torch.tensor(rng.normal(size=(1, n, hidden)))
        positions = torch.arange(n)[None] + 30
        cos, sin = rotary(x, positions)
        mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)[None, None]
        _, weights = layer(x, position_embeddings=(cos, sin), attention_mask=mask)
    xs = x.numpy()[0]
    q = (xs @ layer.q_proj.weight.detach().numpy().T).reshape(n, heads, d_nope + d_rope).transpose(1, 0, 2)
    kv = xs @ layer.kv_a_proj_with_mqa.weight.detach().numpy().T
    latent = _rms_norm(kv[:, :rank], layer.kv_a_layernorm.weight.detach().numpy(), config.rms_norm_eps)
    k_rope = kv[:, rank:]
    up = (latent @ layer.kv_b_proj.weight.detach().numpy().T).reshape(n, heads, d_nope + d_v)
    k_nope = up[..., :d_nope].transpose(1, 0, 2)
    inv_freq, factor = (rope_scaling("yarn", d_rope, base=1e4, factor=4.0,
                                     original_max_position_embeddings=64, mscale=1.0,
                                     mscale_all_dim=1.0) if yarn else (None, 1.0))
    if inv_freq is None:
        inv_freq = 1e4 ** (-np.arange(0, d_rope, 2) / d_rope)
    assert factor == pytest.approx(1.0)  # mscale == mscale_all_dim: nothing on cos and sin
    scale = deepseek_softmax_scale(d_nope + d_rope, rope)
    assert scale == pytest.approx(layer.scaling, rel=1e-12)
    scores = mla_scores(q[..., :d_nope], q[..., d_nope:], k_nope, k_rope, positions.numpy()[0],
                        inv_freq=inv_freq, rope_interleave=interleave, scale=scale)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights.numpy()[0], expected, rtol=1e-5, atol=1e-7)


def test_sinks_match_gpt_oss_eager_attention(torch, transformers):
    module = importlib.import_module("transformers.models.gpt_oss.modeling_gpt_oss")
    rng = np.random.default_rng(3)
    heads, n, d = 2, 7, 8
    q, k, v = (rng.normal(size=(1, heads, n, d)) for _ in range(3))
    sinks = np.array([0.7, -1.2])

    class Holder(torch.nn.Module):
        num_key_value_groups = 1
        training = False

    holder = Holder()
    holder.sinks = torch.nn.Parameter(torch.tensor(sinks))
    allowed = np.tril(np.ones((n, n), dtype=bool)) & ~np.tril(np.ones((n, n), dtype=bool), -3)
    mask = torch.tensor(np.where(allowed, 0.0, -np.inf))[None, None]
    with torch.no_grad():
        out, weights = module.eager_attention_forward(holder, torch.tensor(q), torch.tensor(k),
                                                      torch.tensor(v), mask, scaling=d ** -0.5)
    ours_out, ours_w = attention_with_sinks(q[0], k[0], v[0], sinks, window=3)
    np.testing.assert_allclose(ours_w, weights.numpy()[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours_out, out.numpy()[0].transpose(1, 0, 2), rtol=1e-12, atol=1e-14)


def _pattern_from_file(text):
    """The course's layer pattern for a stored config's text part, from the file's own keys
    (None where no course function builds it from them)."""
    n = text.get("num_hidden_layers")
    if "sliding_window_pattern" in text:
        return sliding_window_layer_types(n, text["sliding_window_pattern"])
    if text.get("model_type") in ("gemma2", "gpt_oss"):
        return sliding_window_layer_types(n, 2)
    if text.get("no_rope_layers") or "no_rope_layer_interval" in text:
        # An empty no_rope_layers list (Llama 4 Scout's file) leaves the pattern to the class's
        # default interval: not a pattern the file states, so such a file is not compared here.
        flags = text.get("no_rope_layers") or no_rope_layers(n, text["no_rope_layer_interval"])
        if text["model_type"] == "llama4_text":
            return llama4_layer_types(flags)
        return smollm3_layer_types(flags, use_sliding_window=text.get("use_sliding_window", False),
                                   sliding_window=text.get("sliding_window"))
    return None


def _text(name):
    cfg = released_config(name).config
    return cfg.get("text_config", cfg)


PATTERNED = [n for n in released_config_names() if _pattern_from_file(_text(n)) is not None]


def test_some_stored_configs_have_a_pattern():
    assert len(PATTERNED) >= 3  # Gemma 2 9B, Gemma 3 1B, GPT-OSS 20B at least


@pytest.mark.parametrize("name", PATTERNED)
def test_layer_patterns_of_stored_configs_match_config_classes(transformers, name):
    """For every stored config with a local/global or NoPE pattern, the course's pattern
    function fed with the file's values gives the config class's ``layer_types`` (built by
    transformers from the same file) and the file's own ``layer_types`` where it has one."""
    cfg = released_config(name).config
    text = cfg.get("text_config", cfg)
    ours = _pattern_from_file(text)
    hf = transformers.AutoConfig.for_model(**cfg)
    hf = hf.get_text_config() if "text_config" in cfg else hf
    assert list(hf.layer_types) == ours
    if "layer_types" in text:
        assert text["layer_types"] == ours


@pytest.mark.parametrize("n_queries, chunk, n_keys", [(12, 4, 12), (5, 3, 13), (9, 16, 9)])
def test_chunked_mask_matches_masking_utils(torch, transformers, n_queries, chunk, n_keys):
    """chunked_overlay on top of the causal rule, evaluated at every (query, key) pair."""
    masking = importlib.import_module("transformers.masking_utils")
    overlay = masking.chunked_overlay(chunk, torch.zeros(1, dtype=torch.long))
    causal = masking.causal_mask_function
    offset = n_keys - n_queries
    ref = np.array([[bool(causal(0, 0, m + offset, n)) and bool(overlay(0, 0, m + offset, n))
                     for n in range(n_keys)] for m in range(n_queries)])
    np.testing.assert_array_equal(chunked_attention_mask(n_queries, chunk, n_keys), ref)


@pytest.mark.parametrize("factor, mscale, mscale_all_dim, qk_head_dim",
                         [(40.0, 1.0, 1.0, 192), (40.0, 0.707, 0.707, 192), (4.0, 1.0, 0.0, 192),
                          (16.0, 1.0, 0.5, 96), (32.0, 0.0, 0.0, 128), (1.0, 1.0, 1.0, 192)])
def test_exercise_yarn_scales_match_deepseek_v3(transformers, factor, mscale, mscale_all_dim,
                                                qk_head_dim):
    """Exercise 11.4's expected answers (course functions) against DeepseekV3RotaryEmbedding's
    attention_scaling and DeepseekV3Attention.scaling, on the checker's configurations."""
    rope = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": factor, "beta_fast": 32.0,
            "beta_slow": 1.0, "original_max_position_embeddings": 64}
    if mscale:
        rope["mscale"] = mscale
    if mscale_all_dim:
        rope["mscale_all_dim"] = mscale_all_dim
    config = transformers.DeepseekV3Config(
        hidden_size=16, num_attention_heads=2, num_key_value_heads=2, q_lora_rank=None,
        kv_lora_rank=8, qk_nope_head_dim=qk_head_dim - 64, qk_rope_head_dim=64, v_head_dim=8,
        num_hidden_layers=1, intermediate_size=8, moe_intermediate_size=8, vocab_size=16,
        max_position_embeddings=256, rope_parameters=rope, attn_implementation="eager")
    module = importlib.import_module("transformers.models.deepseek_v3.modeling_deepseek_v3")
    rotary = module.DeepseekV3RotaryEmbedding(config)
    layer = module.DeepseekV3Attention(config, 0)
    from course_utils.exercises import modern as exercises

    expected = exercises._yarn_pairs(lambda *c: (
        rope_scaling("yarn", 64, base=1e4, factor=c[0], original_max_position_embeddings=64,
                     mscale=c[1] or None, mscale_all_dim=c[2] or None)[1],
        deepseek_softmax_scale(c[3], {"rope_type": "yarn", "factor": c[0],
                                      "mscale_all_dim": c[2]})))
    row = exercises._YARN_CONFIGS.index((factor, mscale, mscale_all_dim, qk_head_dim))
    assert expected[2 * row] == pytest.approx(rotary.attention_scaling, rel=1e-12)
    assert expected[2 * row + 1] == pytest.approx(layer.scaling, rel=1e-12)
