"""Agreement with the implementations production models run: Hugging Face transformers (on torch).

Every expected value here is computed by transformers' own functions. These tests need the
`reference` extra (`make reference`); without it they skip locally and fail in CI.
"""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.alibi import alibi_bias_bloom, alibi_slopes
from course_utils.learned import fairseq_position_ids
from course_utils.relative import t5_relative_position_bucket
from course_utils.rope import apply_rope, rope_inv_freq
from course_utils.scaling import rope_scaling
from course_utils.sinusoidal import sinusoidal_encoding

RTOL = 1e-5


def _hf_rope(transformers, method, head_dim, base, factor, original, seq_len=None, max_position=None,
             **params):
    """(inv_freq, attention_factor) from transformers' ROPE_INIT_FUNCTIONS for a Llama config."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope_parameters = {"rope_type": method, "rope_theta": base, "factor": factor, **params}
    if method in ("yarn", "llama3", "longrope"):
        rope_parameters["original_max_position_embeddings"] = original
    config = LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                         max_position_embeddings=max_position or original, rope_parameters=rope_parameters)
    inv, attention = ROPE_INIT_FUNCTIONS[method](config, "cpu", seq_len=seq_len)
    return inv.double().numpy(), float(attention)


CASES = [
    ("linear", 128, 1e4, 4.0, 4096, None, {}),
    ("linear", 64, 5e5, 2.5, 2048, None, {}),
    ("dynamic", 128, 1e4, 4.0, 4096, None, {}),
    ("dynamic", 128, 1e4, 4.0, 4096, 3000, {}),
    ("dynamic", 128, 1e4, 4.0, 4096, 9000, {}),
    ("dynamic", 96, 1e6, 2.0, 32768, 100_000, {}),
    ("yarn", 128, 1e4, 16.0, 4096, None, {}),
    ("yarn", 128, 1e4, 4.0, 4096, None, {"beta_fast": 16.0, "beta_slow": 2.0}),
    ("yarn", 64, 1e6, 8.0, 8192, None, {"truncate": False}),
    ("yarn", 128, 1e4, 40.0, 4096, None, {"mscale": 1.0, "mscale_all_dim": 0.707}),
    ("yarn", 128, 1e4, 8.0, 4096, None, {"attention_factor": 1.3}),
    ("llama3", 128, 5e5, 8.0, 8192, None, {"low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    ("llama3", 64, 1e4, 4.0, 2048, None, {"low_freq_factor": 2.0, "high_freq_factor": 8.0}),
    ("longrope", 96, 1e4, 32.0, 4096, 100, {"short_factor": list(np.linspace(1.0, 1.2, 48)),
                                             "long_factor": list(np.linspace(1.0, 30.0, 48))}),
    ("longrope", 96, 1e4, 32.0, 4096, 5000, {"short_factor": list(np.linspace(1.0, 1.2, 48)),
                                              "long_factor": list(np.linspace(1.0, 30.0, 48))}),
]


@pytest.mark.parametrize("method, head_dim, base, factor, original, seq_len, params", CASES)
def test_rope_scaling_matches_transformers(transformers, method, head_dim, base, factor, original, seq_len,
                                           params):
    expected_inv, expected_att = _hf_rope(transformers, method, head_dim, base, factor, original, seq_len,
                                          **params)
    inv, att = rope_scaling(method, head_dim, base=base, factor=factor,
                            original_max_position_embeddings=original, seq_len=seq_len, **params)
    np.testing.assert_allclose(inv, expected_inv, rtol=RTOL)
    assert att == pytest.approx(expected_att, rel=RTOL)


def test_default_inv_freq_matches_transformers(transformers):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=256, num_attention_heads=2, head_dim=128, rope_theta=5e5)
    inv = LlamaRotaryEmbedding(config).inv_freq
    np.testing.assert_allclose(rope_inv_freq(128, base=5e5), inv.double().numpy(), rtol=RTOL)


@pytest.mark.parametrize("positions", [np.arange(7), np.array([0, 5, 100, 4095, 4096, 20_000, 131_071])])
def test_half_layout_matches_llama_apply_rotary_pos_emb(torch, transformers, positions):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 3, len(positions), 64))  # (batch, heads, seq, head_dim)
    inv = rope_inv_freq(64)
    # Hugging Face builds cos/sin as cat(freqs, freqs) from position_ids @ inv_freq (in float32 there).
    freqs = torch.tensor(positions, dtype=torch.float64)[:, None] * torch.tensor(inv)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)[None]
    q_hf, k_hf = apply_rotary_pos_emb(torch.tensor(q), torch.tensor(k), emb.cos(), emb.sin())
    np.testing.assert_allclose(apply_rope(q, positions, layout="half"), q_hf.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(apply_rope(k, positions, layout="half"), k_hf.numpy(), rtol=1e-9, atol=1e-9)


def test_interleaved_layout_matches_gptj(torch, transformers):
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb, create_sinusoidal_positions

    seq, dim = 9, 32
    table = create_sinusoidal_positions(seq, dim).double()  # cat(sin, cos) per position
    sin, cos = torch.split(table, dim // 2, dim=-1)
    x = np.random.default_rng(1).normal(size=(1, seq, 2, dim))  # GPT-J: (batch, seq, heads, dim)
    expected = apply_rotary_pos_emb(torch.tensor(x), sin[None], cos[None]).numpy()
    ours = apply_rope(np.swapaxes(x, 1, 2), np.arange(seq), layout="interleaved")
    np.testing.assert_allclose(np.swapaxes(ours, 1, 2), expected, rtol=1e-6, atol=1e-6)


def test_sinusoidal_matches_distilbert(torch, transformers):
    from transformers.models.distilbert.modeling_distilbert import _create_sinusoidal_embeddings

    out = torch.empty(64, 32)
    expected = _create_sinusoidal_embeddings(64, 32, out).double().numpy()
    np.testing.assert_allclose(sinusoidal_encoding(64, 32), expected, atol=1e-6)


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", [
    (True, 32, 128), (False, 32, 128), (True, 64, 256), (False, 16, 50), (True, 8, 20), (True, 32, 1000),
])
def test_t5_buckets_identical_to_t5(torch, transformers, bidirectional, num_buckets, max_distance):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = np.arange(-3000, 3001)
    expected = T5Attention._relative_position_bucket(torch.tensor(rel), bidirectional=bidirectional,
                                                     num_buckets=num_buckets, max_distance=max_distance)
    ours = t5_relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=num_buckets,
                                       max_distance=max_distance)
    np.testing.assert_array_equal(ours, expected.numpy())


@pytest.mark.parametrize("n_heads", [1, 2, 3, 5, 8, 12, 16, 24, 32, 40, 64, 112])
def test_alibi_matches_bloom(torch, transformers, n_heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = np.array([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    expected = build_alibi_tensor(torch.tensor(mask), n_heads, torch.float64).numpy()
    ours = alibi_bias_bloom(n_heads, 6, attention_mask=mask).reshape(2 * n_heads, 1, 6)
    np.testing.assert_allclose(ours, expected, rtol=RTOL)
    np.testing.assert_allclose(alibi_slopes(n_heads), expected[:n_heads, 0, 1], rtol=RTOL)


def test_roberta_position_ids_match(torch, transformers):
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    ids = np.array([[0, 31414, 232, 2, 1, 1], [0, 5, 1, 7, 2, 1]])
    expected = RobertaEmbeddings.create_position_ids_from_input_ids(torch.tensor(ids), padding_idx=1)
    np.testing.assert_array_equal(fairseq_position_ids(ids, padding_idx=1), expected.numpy())
