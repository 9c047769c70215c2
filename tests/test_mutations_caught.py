"""Details that plausible one-line bugs would change and that no other test pinned down.

Each test below fails for a specific wrong variant of the code (named in its docstring) and
takes its expected values from a formula, a brute-force loop or a reference implementation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.attention import scaled_dot_product_attention
from course_utils.lab.model import ModelConfig, init_params
from course_utils.multimodal import mrope_position_ids
from course_utils.relative import relative_positions, t5_bias, t5_relative_position_bucket

# --- attention: the bias is added after the 1/sqrt(d) scaling ------------------------------------

def _attention_by_loops(q, k, v, bias):
    """``softmax(q k^T / sqrt(d) + bias) v`` one query at a time, with math.exp."""
    d = q.shape[-1]
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        scores = [sum(q[i, c] * k[j, c] for c in range(d)) / math.sqrt(d) + bias[i, j]
                  for j in range(k.shape[0])]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        for j in range(k.shape[0]):
            out[i] += e[j] / sum(e) * v[j]
    return out


def test_bias_is_added_unscaled_after_the_scaled_scores():
    """Wrong variant: ``scores + bias / sqrt(d)`` (the bias scaled with the scores)."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    bias = rng.normal(scale=3.0, size=(3, 5))
    out, _ = scaled_dot_product_attention(q, k, v, bias=bias)
    np.testing.assert_allclose(out, _attention_by_loops(q, k, v, bias), rtol=1e-12, atol=1e-12)


def test_zero_queries_give_softmax_of_the_bias_itself():
    """With ``q = 0`` the weights are ``softmax(bias)``: here exactly ``e^b / sum e^b``."""
    bias = np.array([[0.0, math.log(3.0)]])  # weights 1/4 and 3/4 only if the bias is unscaled
    _, weights = scaled_dot_product_attention(np.zeros((1, 16)), np.ones((2, 16)), np.eye(2),
                                              bias=bias)
    np.testing.assert_allclose(weights, [[0.25, 0.75]], rtol=1e-12)


# --- T5: the lookup-table path for large matrices -------------------------------------------------

@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("n", [9, 40])
def test_t5_buckets_of_a_matrix_equal_the_buckets_of_each_entry(bidirectional, n):
    """Wrong variant: the table of distinct values, used for matrices, shifted by one entry.

    A matrix of ``n x n > 64`` entries goes through a table of its distinct values; each entry
    bucketed on its own (size-1 arrays, the elementwise formula) must give the same integers.
    """
    rel = relative_positions(n)
    ours = t5_relative_position_bucket(rel, bidirectional=bidirectional)
    one_by_one = [[int(t5_relative_position_bucket(np.array([r]), bidirectional=bidirectional)[0])
                   for r in row] for row in rel.tolist()]
    np.testing.assert_array_equal(ours, one_by_one)


def test_t5_bucket_matrix_identical_to_t5(torch, transformers):
    """Wrong variant as above; the expected buckets are T5's own (Hugging Face T5Attention)."""
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = relative_positions(30, 200)
    for bidirectional in (True, False):
        expected = T5Attention._relative_position_bucket(
            torch.tensor(rel), bidirectional=bidirectional, num_buckets=32, max_distance=128)
        ours = t5_relative_position_bucket(rel, bidirectional=bidirectional)
        np.testing.assert_array_equal(ours, expected.numpy())


def test_t5_bias_by_loops_matches_bucket_ranges():
    """``bias[h, m, n] = table[bucket(n - m), h]``, buckets typed in from T5's formula.

    32 bidirectional buckets, max_distance 128: a key ``d`` positions before the query is in
    bucket ``d`` for ``d < 8``, then bucket ``8 + k`` from distance ``ceil(8 * 16^(k/8))``
    (8, 12, 16, 23, 32, 46, 64, 91); a key after the query adds 16.
    """
    starts = [8, 12, 16, 23, 32, 46, 64, 91]

    def bucket(r):
        d = abs(r)
        b = d if d < 8 else 8 + sum(d >= s for s in starts[1:])
        return b + (16 if r > 0 else 0)

    table = np.arange(64, dtype=np.float64).reshape(32, 2) * np.array([1.0, -1.0])
    n_queries, n_keys = 12, 110
    bias = t5_bias(table, n_queries, n_keys)
    for m in range(n_queries):
        for n in range(n_keys):
            r = n - (n_keys - n_queries + m)
            assert bias[0, m, n] == table[bucket(r), 0] and bias[1, m, n] == table[bucket(r), 1]


# --- M-RoPE: fractional time intervals are truncated, as torch's .long() -------------------------

def test_video_temporal_ids_truncate_fractional_steps():
    """Wrong variant: ``round`` instead of ``floor``. Qwen2.5-VL forms ``(arange(t) * interval).long()``."""
    ids = mrope_position_ids([2] * 4, video_grid_thw=[[4, 2, 2]], video_time_interval=[0.6])
    assert ids[0].tolist() == [int(k * 0.6) for k in range(4)] == [0, 0, 1, 1]


@pytest.mark.parametrize("seconds", [[0.15], [0.4]])
def test_fractional_time_intervals_identical_to_qwen2_5_vl(torch, transformers, seconds):
    """Same wrong variant; expected ids from Qwen2_5_VLModel.get_rope_index (4 tokens per second)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLModel

    text = dict(hidden_size=32, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, head_dim=16, vocab_size=64, bos_token_id=None,
                eos_token_id=None, pad_token_id=None,
                rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                 "mrope_section": [2, 3, 3]})
    vision = dict(depth=1, embed_dim=16, hidden_size=32, num_heads=2, mlp_ratio=1,
                  spatial_merge_size=2)
    model = Qwen2_5_VLModel(Qwen2_5_VLConfig(text_config=text, vision_config=vision))
    types = [0] * 2 + [2] * 12 + [0] * 2
    expected, _ = model.get_rope_index(torch.zeros(1, len(types), dtype=torch.long),
                                       torch.tensor(types)[None], image_grid_thw=None,
                                       video_grid_thw=torch.tensor([[3, 4, 4]]),
                                       second_per_grid_ts=torch.tensor(seconds))
    interval = model.config.vision_config.tokens_per_second * np.array(seconds)
    ours = mrope_position_ids(types, video_grid_thw=[[3, 4, 4]], video_time_interval=interval)
    # a step where rounding and truncating part ways: 0.6 or 1.6 positions per temporal patch
    assert any(round(k * interval[0]) != int(k * interval[0]) for k in range(3))
    np.testing.assert_array_equal(ours, expected[:, 0].numpy())


# --- lab model: GPT-2's residual scaling at initialisation -----------------------------------------

@pytest.mark.parametrize("n_layers", [1, 3])
def test_residual_projections_start_scaled_by_one_over_sqrt_two_n_layers(n_layers):
    """Wrong variant: ``1/sqrt(n_layers)``. GPT-2 (Radford et al. 2019, section 2.3; Hugging Face
    ``GPT2PreTrainedModel._init_weights``) divides the std of each residual output projection by
    ``sqrt(2 n_layers)``: two residual branches (attention, MLP) per layer.

    With 4096 (or 8192) draws the sample std is within about 2% of its target; the two
    candidates differ by a factor ``sqrt(2)``.
    """
    config = ModelConfig(scheme="none", vocab_size=8, d_model=64, n_heads=4, n_layers=n_layers,
                         d_mlp=128)
    params = init_params(config, seed=0)
    for layer in range(n_layers):
        wo, w2 = params[f"l{layer}.wo"], params[f"l{layer}.w2"]
        np.testing.assert_allclose(wo.std(), 64 ** -0.5 / math.sqrt(2 * n_layers), rtol=0.06)
        np.testing.assert_allclose(w2.std(), 128 ** -0.5 / math.sqrt(2 * n_layers), rtol=0.06)
        np.testing.assert_allclose(params[f"l{layer}.wq"].std(), 64 ** -0.5, rtol=0.06)
