import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.rope import (
    apply_rope,
    interleaved_to_half_permutation,
    permute_qk_weight_for_half_layout,
    roformer_decay_bound,
    rope_angles,
    rope_inv_freq,
    rope_rotation_matrix,
    round_to_bfloat16,
)


def test_inv_freq_formula():
    np.testing.assert_allclose(rope_inv_freq(8), [1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75], rtol=1e-15)
    assert rope_inv_freq(128, base=5e5)[-1] == pytest.approx(5e5 ** (-126 / 128), rel=1e-14)


def _complex_rope_interleaved(x, m, base=10000.0):
    # The paper's complex form: pair (x_2i, x_2i+1) as x_2i + i x_2i+1, multiplied by e^{i m theta_i}.
    d = x.shape[-1]
    theta = np.array([base ** (-2 * i / d) for i in range(d // 2)])
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * m * theta)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


@given(st.integers(0, 10_000), st.integers(0, 1000))
def test_interleaved_equals_complex_multiplication(m, seed):
    x = np.random.default_rng(seed).normal(size=16)
    np.testing.assert_allclose(apply_rope(x[None], np.array([m]), layout="interleaved")[0],
                               _complex_rope_interleaved(x, m), atol=1e-10)


def test_half_layout_pairs_i_with_i_plus_half():
    x = np.zeros((1, 8))
    x[0, 1] = 1.0  # pair 1 is channels (1, 5) in the half layout
    theta1 = 10000 ** (-2 / 8)
    y = apply_rope(x, np.array([3]), layout="half")[0]
    expected = np.zeros(8)
    expected[1], expected[5] = math.cos(3 * theta1), math.sin(3 * theta1)
    np.testing.assert_allclose(y, expected, atol=1e-15)


@given(st.integers(0, 5000), st.integers(0, 5000), st.integers(-200, 200), st.sampled_from(["half", "interleaved"]))
def test_scores_depend_only_on_offset_and_norm_is_kept(m, n, shift, layout):
    rng = np.random.default_rng(m + 7 * n)
    q, k = rng.normal(size=(2, 1, 32))
    def score(a, b):
        return (apply_rope(q, np.array([a]), layout=layout) @ apply_rope(k, np.array([b]), layout=layout).T)[0, 0]
    assert score(m, n) == pytest.approx(score(m + shift + 200, n + shift + 200), rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(np.linalg.norm(apply_rope(q, np.array([m]), layout=layout)), np.linalg.norm(q))


@given(st.integers(0, 1000), st.integers(0, 100))
def test_layouts_equal_up_to_the_channel_permutation(m, seed):
    x = np.random.default_rng(seed).normal(size=(3, 12))
    perm = interleaved_to_half_permutation(12)
    pos = np.array([m, m + 1, m + 5])
    np.testing.assert_allclose(apply_rope(x[:, perm], pos, layout="half"),
                               apply_rope(x, pos, layout="interleaved")[:, perm], atol=1e-12)


def test_layouts_differ_without_the_permutation():
    x = np.random.default_rng(0).normal(size=(1, 8))
    assert not np.allclose(apply_rope(x, np.array([5]), layout="half"),
                           apply_rope(x, np.array([5]), layout="interleaved"))


def test_permute_qk_weight_matches_the_conversion_script_formula():
    # convert_llama_weights_to_hf.py: w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)
    n_heads, head_dim, d_model = 3, 8, 5
    w = np.random.default_rng(1).normal(size=(n_heads * head_dim, d_model))
    expected = w.reshape(n_heads, head_dim // 2, 2, d_model).transpose(0, 2, 1, 3).reshape(-1, d_model)
    np.testing.assert_array_equal(permute_qk_weight_for_half_layout(w, n_heads), expected)


def test_rotation_matrix_is_orthogonal_and_composes():
    r3 = rope_rotation_matrix(3, 8, layout="half")
    r5 = rope_rotation_matrix(5, 8, layout="half")
    np.testing.assert_allclose(r3.T @ r3, np.eye(8), atol=1e-14)
    np.testing.assert_allclose(r3 @ r5, rope_rotation_matrix(8, 8, layout="half"), atol=1e-12)
    x = np.random.default_rng(2).normal(size=8)
    np.testing.assert_allclose(r3 @ x, apply_rope(x[None], np.array([3]), layout="half")[0], atol=1e-14)


def test_partial_rotary_passes_the_rest_through():
    x = np.random.default_rng(3).normal(size=(2, 4, 10))
    y = apply_rope(x, np.arange(4), layout="half", rotary_dim=6)
    np.testing.assert_array_equal(y[..., 6:], x[..., 6:])
    np.testing.assert_allclose(y[..., :6], apply_rope(x[..., :6], np.arange(4), layout="half"), atol=1e-15)


def test_inv_freq_override_and_broadcasting_positions():
    x = np.random.default_rng(4).normal(size=(2, 3, 5, 8))
    inv = rope_inv_freq(8) / 4.0
    y = apply_rope(x, np.arange(5), layout="half", inv_freq=inv)
    np.testing.assert_allclose(y, apply_rope(x, np.arange(5) / 4.0, layout="half"), atol=1e-12)
    per_batch = np.stack([np.arange(5), np.arange(5) + 10])[:, None, :]  # (2, 1, 5)
    y2 = apply_rope(x, per_batch, layout="half")
    np.testing.assert_allclose(y2[1], apply_rope(x[1], np.arange(5) + 10, layout="half"), atol=1e-12)


def test_float32_input_stays_float32():
    x = np.ones((4, 8), dtype=np.float32)
    assert apply_rope(x, np.arange(4), layout="half").dtype == np.float32


def test_roformer_decay_values_from_reference_sheet():
    vals = roformer_decay_bound(np.array([0, 10, 100, 250]), 128)
    assert vals[0] == pytest.approx(32.5)
    np.testing.assert_allclose(vals[1:], [17.95, 10.23, 6.55], atol=0.01)


@pytest.mark.parametrize("call, error, match", [
    (lambda: rope_inv_freq(7), ValueError, "head_dim must be a positive even integer, got 7"),
    (lambda: apply_rope(np.zeros((2, 8)), np.arange(2)), TypeError, "layout"),
    (lambda: apply_rope(np.zeros((2, 8)), np.arange(2), layout="neox"), ValueError, "'half', 'interleaved'"),
    (lambda: apply_rope(np.zeros((2, 7)), np.arange(2), layout="half"), ValueError, "head_dim"),
    (lambda: apply_rope(np.zeros((2, 8)), np.arange(3), layout="half"), ValueError, "do not broadcast"),
    (lambda: apply_rope(np.zeros((2, 8)), np.array([0, np.nan]), layout="half"), ValueError, "finite"),
    (lambda: apply_rope(np.zeros((2, 8)), np.arange(2), layout="half", inv_freq=np.ones(3)), ValueError, "inv_freq"),
    (lambda: apply_rope(np.zeros((2, 8)), np.arange(2), layout="half", rotary_dim=10), ValueError, "rotary_dim"),
    (lambda: apply_rope(np.zeros(8), 0, layout="half"), ValueError, "x must have at least 2"),
    (lambda: apply_rope(np.array([["a"]]), 0, layout="half"), TypeError, "x must be"),
    (lambda: permute_qk_weight_for_half_layout(np.zeros((10, 4)), 3), ValueError, "weight"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()


# round_to_bfloat16 and rope_angles: emulated low-precision RoPE angles.


def test_bfloat16_known_values():
    # bfloat16 keeps 8 significant bits: pi = 0x4049 = 1.5703125 * 2; spacing 2^(j-7) near 2^j.
    x = [np.pi, 8193.0, 8223.0, 8225.0, 65536.0 + 256, 65536.0 + 257, 1 + 2.0**-8, 1 + 3 * 2.0**-8]
    expected = [3.140625, 8192.0, 8192.0, 8256.0, 65536.0, 65536.0 + 512, 1.0, 1 + 2.0**-6]
    out = round_to_bfloat16(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array(expected, dtype=np.float32))


def test_bfloat16_leaves_representable_values_alone_and_keeps_shape():
    x = np.array([[0.0, -0.5, 2.0**20], [1.5, -3.0, 2.0**-20]])
    out = round_to_bfloat16(x)
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, x.astype(np.float32))


@pytest.mark.parametrize("k", [3, 13, 16, 20])
def test_bfloat16_grid_spacing(k):
    x = np.linspace(2.0**k, 2.0 ** (k + 1), 1001)[:-1]
    out = round_to_bfloat16(x).astype(np.float64)
    step = 2.0 ** (k - 7)
    np.testing.assert_array_equal(out % step, 0.0)
    assert np.max(np.abs(out - x)) <= step / 2


def test_bfloat16_matches_torch(torch):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=2000) * 10.0 ** rng.integers(-6, 7, size=2000)).astype(np.float32)
    expected = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(round_to_bfloat16(x), expected)


def test_angles_float64_formula():
    positions = np.array([0, 1, 5, 1000])
    theta = 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)
    np.testing.assert_allclose(rope_angles(positions, 8), positions[:, None] * theta, rtol=1e-15)
    assert rope_angles(np.zeros((2, 3)), 8).shape == (2, 3, 4)


def test_angles_float32_matches_numpy_float32_arithmetic():
    positions = np.arange(60000, 60100)
    theta32 = (1.0 / 10000 ** (np.arange(0, 16, 2) / 16)).astype(np.float32)
    expected = positions.astype(np.float32)[:, None] * theta32
    np.testing.assert_array_equal(rope_angles(positions, 16, precision="float32"), expected)


def test_angles_bfloat16_lose_the_position():
    positions = np.arange(8192, 16384)
    angle0 = rope_angles(positions, 8, precision="bfloat16")[:, 0]
    # Pair 0 has theta = 1, so the angle is the position rounded to a multiple of 64.
    np.testing.assert_array_equal(angle0 % 64, 0.0)
    assert np.max(np.abs(angle0 - positions)) == 32
    assert rope_angles(np.array([8193]), 8, precision="bfloat16")[0, 0] == 8192


def test_angles_float16_spacing_and_overflow():
    angle0 = rope_angles(np.arange(8192, 16384), 8, precision="float16")[:, 0]
    np.testing.assert_array_equal(angle0 % 8, 0.0)  # float16: 11 significant bits
    with pytest.raises(ValueError, match="65504"):
        rope_angles(np.array([65536]), 8, precision="float16")


def test_angles_bfloat16_match_torch_bfloat16_product(torch):
    positions = np.arange(0, 70000, 37)
    inv = 1.0 / 10000 ** (np.arange(0, 64, 2) / 64)
    pos_t = torch.from_numpy(positions.astype(np.float32)).to(torch.bfloat16)
    inv_t = torch.from_numpy(inv.astype(np.float32)).to(torch.bfloat16)
    expected = (pos_t[:, None] * inv_t[None, :]).float().numpy()
    np.testing.assert_array_equal(rope_angles(positions, 64, precision="bfloat16"), expected)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: round_to_bfloat16([1.0, np.nan]), ValueError, "x must be finite"),
        (lambda: round_to_bfloat16("pi"), TypeError, "x must be an array"),
        (lambda: rope_angles([1, 2], 8, precision="half"), ValueError, "precision must be one of"),
        (lambda: rope_angles([1, 2], 7), ValueError, "head_dim must be a positive even integer"),
        (lambda: rope_angles([1, np.inf], 8), ValueError, "positions must be finite"),
    ],
)
def test_angle_and_rounding_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
