"""round_to_bfloat16 and rope_angles: emulated low-precision RoPE angles."""

import numpy as np
import pytest

from course_utils.rope import rope_angles, round_to_bfloat16


def test_bfloat16_known_values():
    # bfloat16 keeps 8 significant bits: pi = 0x4049 = 1.5703125 * 2; spacing 2^(k-7) near 2^k.
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
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
