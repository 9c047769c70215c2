import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.sinusoidal import (
    sinusoidal_angles,
    sinusoidal_encoding,
    sinusoidal_encoding_at,
    sinusoidal_frequencies,
    sinusoidal_shift_matrix,
    sinusoidal_similarity,
)


def test_formula_values_d4_p1():
    # paper: [sin 1, cos 1, sin 0.01, cos 0.01]; t2t/fairseq: [sin 1, sin 1e-4, cos 1, cos 1e-4]
    np.testing.assert_allclose(sinusoidal_encoding(2, 4)[1], [0.841471, 0.540302, 0.010000, 0.999950],
                               atol=5e-7)
    np.testing.assert_allclose(sinusoidal_encoding(2, 4, layout="concat")[1],
                               [0.841471, 0.000100, 0.540302, 1.0], atol=5e-7)


def test_interleaved_is_the_papers_formula_elementwise():
    d, n = 16, 50
    table = sinusoidal_encoding(n, d)
    for p in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = p / 10000 ** (2 * i / d)
            assert table[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-13)
            assert table[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-13)


def test_concat_uses_fairseq_spacing():
    # fairseq get_embedding: emb = exp(arange(half) * -(log(10000) / (half - 1)))
    d = 10
    half = d // 2
    expected = [math.exp(-i * math.log(10000) / (half - 1)) for i in range(half)]
    # np.exp and math.exp may differ by a few ulp (numpy's SIMD exp changes between
    # releases: 1.8e-15 relative with numpy 1.24); dividing by half instead is 58% off.
    np.testing.assert_allclose(sinusoidal_frequencies(d, layout="concat"), expected, rtol=1e-14)
    assert sinusoidal_frequencies(d, layout="concat")[-1] == pytest.approx(1e-4, rel=1e-14)


def test_frequency_ladder_low_index_is_high_frequency():
    w = sinusoidal_frequencies(512)
    assert w[0] == 1.0 and np.all(np.diff(w) < 0)
    wavelengths = 2 * np.pi / w
    assert wavelengths[0] == pytest.approx(2 * np.pi)
    # the last pair, i = d/2 - 1, has wavelength 2 pi 10000^((d-2)/d), just under 2 pi 10^4
    assert wavelengths[-1] == pytest.approx(2 * np.pi * 1e4 ** (510 / 512), rel=1e-12)


def test_norm_is_sqrt_half_d_and_values_bounded():
    table = sinusoidal_encoding(300, 64)
    np.testing.assert_allclose(np.linalg.norm(table, axis=1), math.sqrt(32), rtol=1e-14)
    assert np.abs(table).max() <= 1.0


def test_start_dtype_and_at_agree_with_full_table():
    full = sinusoidal_encoding(40, 8)
    np.testing.assert_array_equal(sinusoidal_encoding(10, 8, start=30), full[30:])
    np.testing.assert_allclose(sinusoidal_encoding(40, 8, dtype=np.float32), full, atol=1e-7)
    assert sinusoidal_encoding(4, 8, dtype=np.float32).dtype == np.float32
    np.testing.assert_array_equal(sinusoidal_encoding_at(np.array([[3, 5]]), 8), full[[3, 5]][None])


def test_dot_product_depends_on_offset_only():
    d = 32
    w = sinusoidal_frequencies(d)
    table = sinusoidal_encoding(200, d)
    for p, q in ((10, 3), (150, 143), (0, 60)):
        expected = np.sum(np.cos(w * (p - q)))
        assert table[p] @ table[q] == pytest.approx(expected, abs=1e-12)


@given(st.integers(0, 5000), st.floats(-300, 300, allow_nan=False), st.sampled_from(["interleaved", "concat"]))
def test_shift_matrix_maps_p_to_p_plus_k(p, k, layout):
    d = 16
    m = sinusoidal_shift_matrix(k, d, layout=layout)
    np.testing.assert_allclose(m @ sinusoidal_encoding_at(np.float64(p), d, layout=layout),
                               sinusoidal_encoding_at(np.float64(p + k), d, layout=layout), atol=1e-9)


@given(st.floats(-50, 50), st.floats(-50, 50))
def test_shift_matrices_are_rotations_that_compose(a, b):
    d = 12
    ma, mb = sinusoidal_shift_matrix(a, d), sinusoidal_shift_matrix(b, d)
    np.testing.assert_allclose(ma @ ma.T, np.eye(d), atol=1e-12)
    assert np.linalg.det(ma) == pytest.approx(1.0, abs=1e-10)
    np.testing.assert_allclose(ma @ mb, sinusoidal_shift_matrix(a + b, d), atol=1e-10)


@pytest.mark.parametrize("call, error, match", [
    (lambda: sinusoidal_encoding(10, 7), ValueError, "d_model must be a positive even integer, got 7"),
    (lambda: sinusoidal_encoding(10, 0), ValueError, "d_model"),
    (lambda: sinusoidal_encoding(10, 2.0), TypeError, "d_model"),
    (lambda: sinusoidal_encoding(-1, 8), ValueError, "n_positions"),
    (lambda: sinusoidal_encoding(10, 8, layout="halves"), ValueError, "layout must be one of 'interleaved', 'concat'"),
    (lambda: sinusoidal_encoding(10, 2, layout="concat"), ValueError, ">= 4"),
    (lambda: sinusoidal_encoding(10, 8, base=-1.0), ValueError, "base"),
    (lambda: sinusoidal_encoding(10, 8, dtype=np.int32), ValueError, "dtype"),
    (lambda: sinusoidal_encoding(10, 8, start=-2), ValueError, "start"),
    (lambda: sinusoidal_encoding_at([1.0, np.nan], 8), ValueError, "positions must be finite"),
    (lambda: sinusoidal_encoding_at(["a"], 8), TypeError, "positions"),
    (lambda: sinusoidal_shift_matrix(np.inf, 8), ValueError, "k must be finite"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()


# Tests for sinusoidal_similarity and sinusoidal_angles.
#
# Known answers come from the paper's formula (theta_i = 10000^(-2i/d)), its values at d = 4,
# p = 1 ([sin 1, cos 1, sin 0.01, cos 0.01]), and IEEE-754 rounding facts (float32 has a 24-bit
# significand).


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
