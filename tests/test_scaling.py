import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.rope import apply_rope, rope_inv_freq
from course_utils.scaling import (
    METHODS,
    dynamic_ntk_base,
    fit_rope_score,
    rope_scaling,
    rope_score_features,
    rotations_in_context,
    yarn_correction_range,
    yarn_paper_inv_freq,
    yarn_paper_ramp,
)

LLAMA2 = {"base": 1e4, "original_max_position_embeddings": 4096}
LLAMA31 = {"base": 5e5, "original_max_position_embeddings": 8192, "low_freq_factor": 1.0, "high_freq_factor": 4.0}


def test_linear_divides_every_frequency():
    inv, att = rope_scaling("linear", 128, factor=4.0, **LLAMA2)
    np.testing.assert_allclose(inv, rope_inv_freq(128) / 4.0, rtol=1e-15)
    assert att == 1.0


def test_ntk_keeps_highest_and_matches_pi_at_lowest():
    inv, _ = rope_scaling("ntk", 128, factor=8.0, **LLAMA2)
    omega = rope_inv_freq(128)
    assert inv[0] == omega[0]
    # b' = b s^(d/(d-2)): the last pair i = d/2 - 1 gets omega / s exactly
    assert inv[-1] == pytest.approx(omega[-1] / 8.0, rel=1e-12)


def test_dynamic_unchanged_within_training_length_and_formula_beyond():
    omega = rope_inv_freq(64)
    np.testing.assert_allclose(rope_scaling("dynamic", 64, factor=2.0, **LLAMA2)[0], omega)
    np.testing.assert_allclose(rope_scaling("dynamic", 64, factor=2.0, seq_len=100, **LLAMA2)[0], omega)
    new_base = 1e4 * (2.0 * 8192 / 4096 - 1.0) ** (64 / 62)
    np.testing.assert_allclose(rope_scaling("dynamic", 64, factor=2.0, seq_len=8192, **LLAMA2)[0],
                               rope_inv_freq(64, base=new_base), rtol=1e-14)


def test_yarn_llama2_bounds_ramp_and_temperature():
    assert yarn_correction_range(128, base=1e4, original_max_position_embeddings=4096) == (20, 46)
    inv, att = rope_scaling("yarn", 128, factor=16.0, **LLAMA2)
    omega = rope_inv_freq(128)
    np.testing.assert_array_equal(inv[:21], omega[:21])          # ramp 0 up to index low = 20
    np.testing.assert_allclose(inv[46:], omega[46:] / 16.0)      # ramp 1 from index high = 46
    g = (33 - 20) / 26
    assert inv[33] == pytest.approx(omega[33] * (1 - g) + omega[33] / 16 * g)
    assert att == pytest.approx(0.1 * math.log(16.0) + 1.0)


def test_yarn_attention_factor_options():
    _, given = rope_scaling("yarn", 64, factor=4.0, attention_factor=1.5, **LLAMA2)
    assert given == 1.5
    _, ratio = rope_scaling("yarn", 64, factor=40.0, mscale=1.0, mscale_all_dim=0.707, **LLAMA2)
    assert ratio == pytest.approx((0.1 * math.log(40) + 1) / (0.1 * 0.707 * math.log(40) + 1))
    assert rope_scaling("yarn", 64, factor=1.0, **LLAMA2)[1] == 1.0


def test_yarn_untruncated_bounds_are_fractional():
    low, high = yarn_correction_range(128, base=1e4, original_max_position_embeddings=4096, truncate=False)
    assert low == pytest.approx(128 * math.log(4096 / (32 * 2 * math.pi)) / (2 * math.log(1e4)))
    assert 20 < low < 21 and 45 < high < 46


def test_llama31_split_29_6_29():
    inv, att = rope_scaling("llama3", 128, factor=8.0, **LLAMA31)
    omega = rope_inv_freq(128, base=5e5)
    kept = np.isclose(inv, omega, rtol=1e-13)
    divided = np.isclose(inv, omega / 8, rtol=1e-13)
    assert (kept.sum(), (~kept & ~divided).sum(), divided.sum()) == (29, 6, 29)
    assert att == 1.0
    # the smoothed band blends linearly in L / lambda
    lam = 2 * np.pi / omega
    mid = ~kept & ~divided
    g = (8192 / lam[mid] - 1.0) / 3.0
    np.testing.assert_allclose(inv[mid], (1 - g) * omega[mid] / 8 + g * omega[mid], rtol=1e-13)


def test_longrope_switches_factor_lists_and_attention():
    short, long_ = np.linspace(1, 2, 32), np.linspace(1, 40, 32)
    kw = dict(base=1e4, factor=32.0, original_max_position_embeddings=4096, short_factor=short, long_factor=long_)
    omega = rope_inv_freq(64)
    np.testing.assert_allclose(rope_scaling("longrope", 64, seq_len=4096, **kw)[0], omega / short)
    inv, att = rope_scaling("longrope", 64, seq_len=4097, **kw)
    np.testing.assert_allclose(inv, omega / long_)
    assert att == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))


@pytest.mark.parametrize("call, error, match", [
    (lambda: rope_scaling("ntk-by-parts", 64, factor=2.0, **LLAMA2), ValueError,
     "'linear', 'ntk', 'dynamic', 'yarn', 'llama3', 'longrope'"),
    (lambda: rope_scaling("linear", 64, factor=0.5, **LLAMA2), ValueError, "factor must be >= 1"),
    (lambda: rope_scaling("linear", 63, factor=2.0, **LLAMA2), ValueError, "head_dim"),
    (lambda: rope_scaling("linear", 64, factor=2.0, beta_fast=3, **LLAMA2), TypeError, "unknown parameter"),
    (lambda: rope_scaling("llama3", 64, factor=2.0, **LLAMA2), TypeError, "low_freq_factor"),
    (lambda: rope_scaling("longrope", 64, factor=2.0, short_factor=[1.0], long_factor=[1.0], **LLAMA2),
     ValueError, "short_factor must be a list of 32"),
    (lambda: rope_scaling("dynamic", 64, factor=2.0, seq_len=-3, **LLAMA2), ValueError, "seq_len"),
    (lambda: rope_scaling("yarn", 64, factor=2.0, base=1e4, original_max_position_embeddings=0), ValueError,
     "original_max_position_embeddings"),
    (lambda: rope_scaling("llama3", 64, factor=2.0, base=5e5, original_max_position_embeddings=8192,
                          low_freq_factor=4.0, high_freq_factor=1.0), ValueError, "high_freq_factor must exceed"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_every_method_returns_positive_frequencies():
    extra = {"yarn": {}, "llama3": {"low_freq_factor": 1.0, "high_freq_factor": 4.0},
             "longrope": {"short_factor": np.ones(32), "long_factor": np.full(32, 2.0)}}
    for method in METHODS:
        inv, att = rope_scaling(method, 64, factor=4.0, seq_len=10_000, **LLAMA2, **extra.get(method, {}))
        assert inv.shape == (32,) and np.all(inv > 0) and att >= 1.0


# Turns within L, the YaRN paper's ramp, the two dynamic NTK
# formulas, and the least-squares fit of a RoPE score (Position Interpolation's argument).
#
# Expected values come from the formulas in Peng et al. 2023 (YaRN), Chen et al. 2023 (PI), the
# closed forms derived in notebook 07, and Hugging Face's ``_compute_dynamic_ntk_parameters``
# (reference tests).


LLAMA2 = {"base": 1e4, "original_max_position_embeddings": 4096}


# --- rotations_in_context ----------------------------------------------------------------------

def test_turns_known_values_llama2():
    r = rotations_in_context(128, **LLAMA2)
    assert r.shape == (64,)
    assert r[0] == pytest.approx(4096 / (2 * math.pi), rel=1e-14)          # pair 0 turns 1 rad/position
    assert r[63] == pytest.approx(4096 * 1e4 ** (-126 / 128) / (2 * math.pi), rel=1e-12)
    # YaRN's bound for Llama 2 (d = 128, b = 1e4, L = 4096): pairs 0..45 complete a turn
    # (ramp upper bound 46), 46..63 do not.
    assert int(np.sum(r >= 1)) == 46


@pytest.mark.parametrize("base, length, expected_short", [
    (1e4, 4096, 18),        # Llama-2 7B
    (5e5, 8192, 29),        # Llama-3 8B: the 29 pairs Llama-3.1's scaling divides by s
    (1e6, 32768, 24),       # Mistral 7B v0.2, Qwen2-7B
])
def test_turns_short_of_one_match_closed_form(base, length, expected_short):
    r = rotations_in_context(128, base=base, original_max_position_embeddings=length)
    # lambda_i > L  <=>  i > (d/2) ln(L / 2 pi) / ln b
    bound = 64 * math.log(length / (2 * math.pi)) / math.log(base)
    assert int(np.sum(r < 1)) == 64 - (math.floor(bound) + 1) == expected_short


def test_llama31_divided_pairs_are_those_short_of_a_turn():
    r = rotations_in_context(128, base=5e5, original_max_position_embeddings=8192)
    inv, _ = rope_scaling("llama3", 128, base=5e5, factor=8.0, original_max_position_embeddings=8192,
                          low_freq_factor=1.0, high_freq_factor=4.0)
    divided = np.isclose(inv, rope_inv_freq(128, base=5e5) / 8.0, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(divided, r < 1)


@given(st.sampled_from([64, 96, 128]), st.sampled_from([1e4, 5e5, 1e6]),
       st.sampled_from([2048, 4096, 8192, 32768]))
def test_turns_agree_with_yarn_correction_range(head_dim, base, length):
    r = rotations_in_context(head_dim, base=base, original_max_position_embeddings=length)
    low, high = yarn_correction_range(head_dim, base=base, original_max_position_embeddings=length)
    i = np.arange(head_dim // 2)
    assert np.all(r[i <= low] > 32) and np.all(r[(i > low)] < 32)
    assert np.all(r[(i >= high)] < 1) and np.all(r[i < high] >= 1)


def test_turns_validation():
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        rotations_in_context(128, base=1e4, original_max_position_embeddings=0)
    with pytest.raises(ValueError, match="head_dim"):
        rotations_in_context(7, base=1e4, original_max_position_embeddings=4096)


# --- the YaRN paper's ramp --------------------------------------------------------------------

def test_paper_ramp_cases():
    r = np.array([0.0, 0.5, 1.0, 16.5, 32.0, 33.0, 1000.0])
    # gamma = 0 below alpha, (r - 1)/31 between, 1 above beta (Peng et al. 2023, section 3.2)
    np.testing.assert_allclose(yarn_paper_ramp(r), [0, 0, 0, 0.5, 1, 1, 1], atol=1e-15)
    assert yarn_paper_ramp(np.array([[9.0]]), alpha=2.0, beta=16.0).shape == (1, 1)
    assert yarn_paper_ramp(9.0, alpha=2.0, beta=16.0) == pytest.approx(0.5)


def test_paper_ramp_validation():
    with pytest.raises(ValueError, match="beta must exceed alpha"):
        yarn_paper_ramp([1.0], alpha=32.0, beta=1.0)
    with pytest.raises(ValueError, match="non-negative"):
        yarn_paper_ramp([-1.0])
    with pytest.raises(TypeError, match="r must be"):
        yarn_paper_ramp(["a"])


def test_paper_inv_freq_known_pair():
    inv = yarn_paper_inv_freq(128, factor=8.0, **LLAMA2)
    omega = rope_inv_freq(128)
    r33 = 4096 * 1e4 ** (-66 / 128) / (2 * math.pi)
    gamma = (r33 - 1) / 31
    assert inv[33] == pytest.approx((1 - gamma) * omega[33] / 8 + gamma * omega[33], rel=1e-12)


def test_paper_and_code_agree_outside_the_ramp_and_differ_inside():
    paper = yarn_paper_inv_freq(128, factor=16.0, **LLAMA2)
    code, _ = rope_scaling("yarn", 128, factor=16.0, **LLAMA2)
    np.testing.assert_allclose(paper[:21], code[:21], rtol=1e-14)   # kept, i <= 20
    np.testing.assert_allclose(paper[46:], code[46:], rtol=1e-14)   # divided, i >= 46
    # Inside, the code is linear in i, the paper in r: at pair 33 the code keeps weight 1/2,
    # the paper (r_33 = 5.64) about 0.15.
    assert np.all(np.abs(paper[22:46] / code[22:46] - 1) > 1e-3)
    assert paper[33] < code[33]


def test_paper_inv_freq_factor_one_is_identity():
    np.testing.assert_allclose(yarn_paper_inv_freq(64, factor=1.0, **LLAMA2), rope_inv_freq(64),
                               rtol=1e-15)


# --- dynamic NTK: the code's formula and the paper's ------------------------------------------

def test_dynamic_base_known_values():
    e = 128 / 126
    kw = dict(base=1e4, factor=4.0, original_max_position_embeddings=4096)
    assert dynamic_ntk_base(128, seq_len=4096, **kw) == 1e4
    assert dynamic_ntk_base(128, seq_len=100, **kw) == 1e4
    assert dynamic_ntk_base(128, seq_len=8192, **kw) == pytest.approx(1e4 * 5.0**e, rel=1e-14)
    assert dynamic_ntk_base(128, seq_len=8192, convention="yarn_paper", **kw) == pytest.approx(
        1e4 * 2.0**e, rel=1e-14)
    assert dynamic_ntk_base(128, seq_len=100, convention="yarn_paper", **kw) == 1e4


@given(st.integers(1, 200_000), st.sampled_from([64, 128]))
def test_dynamic_conventions_agree_for_factor_one(seq_len, head_dim):
    kw = dict(base=1e4, factor=1.0, seq_len=seq_len, original_max_position_embeddings=4096)
    assert dynamic_ntk_base(head_dim, **kw) == pytest.approx(
        dynamic_ntk_base(head_dim, convention="yarn_paper", **kw), rel=1e-12)


def test_dynamic_base_is_what_rope_scaling_uses():
    for seq_len in (1000, 4096, 5000, 20000):
        base = dynamic_ntk_base(96, base=1e6, factor=3.0, seq_len=seq_len,
                                original_max_position_embeddings=4096)
        inv, _ = rope_scaling("dynamic", 96, base=1e6, factor=3.0, seq_len=seq_len,
                              original_max_position_embeddings=4096)
        np.testing.assert_allclose(inv, rope_inv_freq(96, base=base), rtol=1e-14)


def test_dynamic_base_validation():
    kw = dict(base=1e4, factor=2.0, seq_len=10, original_max_position_embeddings=4)
    with pytest.raises(ValueError, match="head_dim must be >= 4"):
        dynamic_ntk_base(2, **kw)
    with pytest.raises(ValueError, match="convention"):
        dynamic_ntk_base(64, convention="paper", **kw)
    with pytest.raises(ValueError, match="factor"):
        dynamic_ntk_base(64, base=1e4, factor=0.5, seq_len=10, original_max_position_embeddings=4)


@pytest.mark.parametrize("seq_len", [2048, 4096, 4097, 9000, 50_000])
def test_dynamic_base_matches_transformers(transformers, seq_len):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = LlamaConfig(hidden_size=256, num_attention_heads=2, head_dim=128,
                         max_position_embeddings=4096,
                         rope_parameters={"rope_type": "dynamic", "rope_theta": 1e4, "factor": 4.0})
    inv, _ = ROPE_INIT_FUNCTIONS["dynamic"](config, "cpu", seq_len=seq_len)
    base = dynamic_ntk_base(128, base=1e4, factor=4.0, seq_len=seq_len,
                            original_max_position_embeddings=4096)
    np.testing.assert_allclose(rope_inv_freq(128, base=base), inv.double().numpy(), rtol=1e-5)


# --- RoPE score features and the least-squares fit ----------------------------------------------

def test_score_features_shape_and_zero_distance():
    inv = rope_inv_freq(16)
    f = rope_score_features(np.zeros((2, 3)), inv)
    assert f.shape == (2, 3, 16)
    np.testing.assert_array_equal(f[..., :8], 1.0)
    np.testing.assert_array_equal(f[..., 8:], 0.0)


def test_every_rope_score_lies_in_the_span_of_the_features():
    # <R_m q, R_n k> depends on D = m - n through cos(D theta_i) and sin(D theta_i) only.
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 8))
    m = rng.integers(0, 300, size=60)
    n = rng.integers(0, 300, size=60)
    scores = np.array([(apply_rope(q, [a], layout="half")[0] @ apply_rope(k, [b], layout="half")[0])
                       for a, b in zip(m, n, strict=True)])
    inv = rope_inv_freq(8)
    coef = fit_rope_score(m - n, scores, inv)
    np.testing.assert_allclose(rope_score_features(m - n, inv) @ coef, scores, atol=1e-10)


def test_fit_recovers_known_coefficients():
    inv = np.array([1.0, 0.5, 0.25])
    coef = np.array([0.3, -1.0, 2.0, 0.5, 0.0, -0.7])
    dist = np.arange(40.0)
    y = rope_score_features(dist, inv) @ coef
    np.testing.assert_allclose(fit_rope_score(dist, y, inv), coef, rtol=1e-9, atol=1e-12)


def test_ridge_shrinks_the_coefficients():
    inv = rope_inv_freq(32)
    dist = np.arange(257.0)
    y = np.exp(-dist / 40) * np.cos(dist / 9)
    norms = [np.linalg.norm(fit_rope_score(dist, y, inv, ridge=r)) for r in (0.0, 1e-6, 1e-2, 1.0)]
    assert norms[0] > norms[1] > norms[2] > norms[3]


def test_pi_argument_bounded_between_large_beyond():
    # Chen et al. 2023, Figure 2: fitted on integer distances in [0, L], the function stays near
    # the data between them and is far larger past L.
    inv = rope_inv_freq(128)
    train = np.arange(2049.0)
    y = np.exp(-train / 300) * np.cos(train / 50)
    coef = fit_rope_score(train, y, inv, ridge=1e-8)
    between = rope_score_features(np.arange(0, 2048, 0.25), inv) @ coef
    beyond = rope_score_features(np.arange(2048, 8192, 0.5), inv) @ coef
    assert np.max(np.abs(between)) < 1.01
    assert np.max(np.abs(beyond)) > 20


def test_fit_validation():
    inv = rope_inv_freq(8)
    with pytest.raises(ValueError, match="same length"):
        fit_rope_score(np.arange(5.0), np.arange(4.0), inv)
    with pytest.raises(ValueError, match="ridge"):
        fit_rope_score(np.arange(5.0), np.arange(5.0), inv, ridge=-1.0)
    with pytest.raises(TypeError, match="ridge"):
        fit_rope_score(np.arange(5.0), np.arange(5.0), inv, ridge="small")
    with pytest.raises(ValueError, match="inv_freq"):
        rope_score_features(np.arange(3.0), np.ones((2, 2)))
