import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.sinusoidal import (
    sinusoidal_encoding,
    sinusoidal_encoding_at,
    sinusoidal_frequencies,
    sinusoidal_shift_matrix,
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
