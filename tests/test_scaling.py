import math

import numpy as np
import pytest

from course_utils.rope import rope_inv_freq
from course_utils.scaling import METHODS, rope_scaling, yarn_correction_range

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
