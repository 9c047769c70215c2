"""Tests for sinusoidal_similarity and sinusoidal_angles.

Known answers come from the paper's formula (theta_i = 10000^(-2i/d)), its values at d = 4,
p = 1 ([sin 1, cos 1, sin 0.01, cos 0.01]), and IEEE-754 rounding facts (float32 has a 24-bit
significand).
"""

import numpy as np
import pytest

from course_utils.sinusoidal import (
    sinusoidal_angles,
    sinusoidal_encoding,
    sinusoidal_similarity,
)


def test_similarity_d4_known_values():
    # d = 4: theta = [1, 0.01], so PE[p].PE[p+r] = cos(r) + cos(0.01 r).
    k = np.array([0.0, 1.0, 2.5, -7.0])
    expected = np.cos(k) + np.cos(0.01 * k)
    np.testing.assert_allclose(sinusoidal_similarity(k, 4), expected, rtol=0, atol=1e-15)


def test_similarity_is_half_the_width_at_zero_and_even():
    for d in (2, 8, 64):
        assert sinusoidal_similarity(0, d) == pytest.approx(d / 2)
    k = np.arange(1, 50)
    np.testing.assert_allclose(sinusoidal_similarity(k, 32), sinusoidal_similarity(-k, 32))


def test_similarity_matches_explicit_dot_products_for_every_start():
    d, n = 16, 40
    table = sinusoidal_encoding(n, d)
    gram = table @ table.T
    offsets = np.arange(n)[None, :] - np.arange(n)[:, None]
    np.testing.assert_allclose(sinusoidal_similarity(offsets, d), gram, rtol=0, atol=1e-12)


def test_similarity_concat_uses_t2t_frequencies():
    # t2t/fairseq spacing with d = 4: theta = [1, 1e-4].
    k = np.array([3.0, 100.0])
    expected = np.cos(k) + np.cos(1e-4 * k)
    np.testing.assert_allclose(sinusoidal_similarity(k, 4, layout="concat"), expected, atol=1e-15)


def test_similarity_shape_follows_offsets():
    assert sinusoidal_similarity(np.zeros((3, 5)), 8).shape == (3, 5)


def test_angles_float64_are_position_times_frequency():
    p = np.array([0.0, 1.0, 17.0])
    expected = np.outer(p, 10000.0 ** (-2.0 * np.arange(4) / 8))
    np.testing.assert_allclose(sinusoidal_angles(p, 8), expected, rtol=1e-15)


def test_angles_keep_dtype():
    assert sinusoidal_angles([1, 2], 8, dtype=np.float32).dtype == np.float32
    assert sinusoidal_angles([1, 2], 8, dtype=np.float16).dtype == np.float16
    assert sinusoidal_angles([1, 2], 8).shape == (2, 4)


def test_float32_angles_lose_positions_beyond_2_to_the_24():
    # float32 stores integers exactly only up to 2^24; 2^24 + 1 rounds to 2^24.
    a = sinusoidal_angles([2.0**24, 2.0**24 + 1], 8, dtype=np.float32)
    assert np.array_equal(a[0], a[1])
    b = sinusoidal_angles([2.0**24 - 1, 2.0**24], 8, dtype=np.float32)
    assert not np.array_equal(b[0], b[1])


def test_float32_pair0_angle_is_exact_and_other_errors_are_bounded():
    p = np.array([1e4, 1e5, 1e6])
    d = 64
    exact = np.outer(p, 10000.0 ** (-2.0 * np.arange(d // 2) / d))
    approx = sinusoidal_angles(p, d, dtype=np.float32).astype(np.float64)
    err = np.abs(approx - exact)
    assert np.all(err[:, 0] == 0)  # theta_0 = 1, integer p < 2^24: exact
    assert np.all(err <= exact * 2.0**-23 * (1 + 1e-6))
    assert err[2].max() > err[1].max() > err[0].max() > 0


def test_angles_reject_bad_arguments():
    with pytest.raises(ValueError, match="positions must fit in float16"):
        sinusoidal_angles([70000.0], 8, dtype=np.float16)
    with pytest.raises(ValueError, match="d_model"):
        sinusoidal_angles([1.0], 7)
    with pytest.raises(ValueError, match="dtype"):
        sinusoidal_angles([1.0], 8, dtype=np.int32)
    with pytest.raises(TypeError, match="positions"):
        sinusoidal_angles(["a"], 8)
    with pytest.raises(ValueError, match="layout"):
        sinusoidal_similarity([1.0], 8, layout="halves")
    with pytest.raises(ValueError, match="offsets"):
        sinusoidal_similarity([np.nan], 8)
