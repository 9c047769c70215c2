"""Precision at large positions: float64 angles stay accurate, float32 angles do not.

The reference angles are computed exactly enough with :mod:`decimal` (50 significant digits):
the frequency ``base^(-2i/d)`` (or fairseq's ``exp(-i ln(base) / (d/2 - 1))``) is evaluated in
decimal, multiplied by the position exactly, and reduced modulo ``2 pi`` (pi to 50 digits, from
the Gauss-Legendre iteration below), so :func:`math.sin` and :func:`math.cos` then see an
argument in ``[0, 2 pi)`` whose float64 rounding costs at most ``4e-16``. mpmath would do the same
but is not a dependency of the course environment (it only arrives with the optional torch).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from course_utils.rope import apply_rope, rope_angles
from course_utils.sinusoidal import sinusoidal_angles, sinusoidal_encoding_at

DIGITS = 50
POSITIONS = [10**6, 10**6 + 1, 999_999.5, 1_234_567.25, 2 * 10**6 - 1]


def _pi():
    """pi to DIGITS + 10 digits by the Gauss-Legendre iteration (quadratic convergence)."""
    with localcontext() as ctx:
        ctx.prec = DIGITS + 10
        a, b, t, p = Decimal(1), Decimal(1) / Decimal(2).sqrt(), Decimal(1) / 4, Decimal(1)
        for _ in range(8):  # 2^8 > 60 correct digits
            a, b, t, p = (a + b) / 2, (a * b).sqrt(), t - p * ((a - b) / 2) ** 2, 2 * p
        return (a + b) ** 2 / (4 * t)


PI = _pi()


def _frequencies(d, base, spacing):
    with localcontext() as ctx:
        ctx.prec = DIGITS
        half = d // 2
        if spacing == "paper":  # base^(-2i/d): Vaswani et al. 2017, Su et al. 2021
            return [Decimal(base) ** (Decimal(-2 * i) / Decimal(d)) for i in range(half)]
        # tensor2tensor / fairseq: exp(-i ln(base) / (d/2 - 1))
        return [(-Decimal(i) * Decimal(base).ln() / Decimal(half - 1)).exp() for i in range(half)]


def _exact_cos_sin(position, frequencies):
    """cos and sin of ``position * w`` for each frequency, the angle reduced exactly."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        two_pi = 2 * PI
        reduced = [float((Decimal(position) * w) % two_pi) for w in frequencies]
    return np.cos(reduced), np.sin(reduced)


def _exact_angles(position, frequencies):
    with localcontext() as ctx:
        ctx.prec = DIGITS
        return np.array([float(Decimal(position) * w) for w in frequencies])


def test_pi_reference_is_pi():
    assert float(PI) == math.pi
    assert str(PI).startswith("3.14159265358979323846264338327950288419716939937510")


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("d_model", [64, 512])
def test_sinusoidal_float64_accurate_to_1e_9_near_a_million(layout, d_model):
    spacing = "paper" if layout == "interleaved" else "fairseq"
    frequencies = _frequencies(d_model, 10000, spacing)
    table = sinusoidal_encoding_at(np.array(POSITIONS), d_model, layout=layout)
    for row, position in zip(table, POSITIONS, strict=True):
        cos, sin = _exact_cos_sin(position, frequencies)
        if layout == "interleaved":
            got_sin, got_cos = row[0::2], row[1::2]
        else:
            got_sin, got_cos = row[: d_model // 2], row[d_model // 2:]
        assert np.max(np.abs(got_sin - sin)) <= 1e-9
        assert np.max(np.abs(got_cos - cos)) <= 1e-9


def test_sinusoidal_float32_table_only_rounds_the_result():
    # Angles are formed in float64, so a float32 table is off by float32 rounding alone:
    # at most half a float32 spacing below 1, 2^-25, plus the float64 error.
    frequencies = _frequencies(128, 10000, "paper")
    table = sinusoidal_encoding_at(np.array(POSITIONS), 128, dtype=np.float32)
    for row, position in zip(table, POSITIONS, strict=True):
        cos, sin = _exact_cos_sin(position, frequencies)
        assert np.max(np.abs(row[0::2] - sin)) <= 2**-24 + 1e-9
        assert np.max(np.abs(row[1::2] - cos)) <= 2**-24 + 1e-9


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("head_dim", "base"), [(128, 10000), (128, 500000), (64, 10000)])
def test_apply_rope_float64_accurate_to_1e_9_near_a_million(layout, head_dim, base):
    half = head_dim // 2
    frequencies = _frequencies(head_dim, base, "paper")
    # Each pair set to (1, 0): the rotated pair is (cos, sin) of its angle.
    unit = np.zeros(head_dim)
    if layout == "half":
        unit[:half] = 1.0
    else:
        unit[0::2] = 1.0
    x = np.tile(unit, (len(POSITIONS), 1))
    out = apply_rope(x, np.array(POSITIONS), base=base, layout=layout)
    rng = np.random.default_rng(0)
    q = rng.normal(size=(len(POSITIONS), head_dim))
    rotated = apply_rope(q, np.array(POSITIONS), base=base, layout=layout)
    for row, q_row, r_row, position in zip(out, q, rotated, POSITIONS, strict=True):
        cos, sin = _exact_cos_sin(position, frequencies)
        first, second = (row[:half], row[half:]) if layout == "half" else (row[0::2], row[1::2])
        assert np.max(np.abs(first - cos)) <= 1e-9
        assert np.max(np.abs(second - sin)) <= 1e-9
        # And a general vector, against the rotation written out with the exact cos and sin.
        a, b = (q_row[:half], q_row[half:]) if layout == "half" else (q_row[0::2], q_row[1::2])
        y1, y2 = (r_row[:half], r_row[half:]) if layout == "half" else (r_row[0::2], r_row[1::2])
        assert np.max(np.abs(y1 - (a * cos - b * sin))) <= 1e-9 * (1 + np.max(np.abs(q_row)))
        assert np.max(np.abs(y2 - (b * cos + a * sin))) <= 1e-9 * (1 + np.max(np.abs(q_row)))


def test_float32_angles_err_by_up_to_three_roundings():
    # The documented limit: forming m * theta in float32 rounds the position, the frequency and
    # the product (each by a relative 2^-24), so the angle is off by up to 3 m theta 2^-24.
    position, head_dim = 10**6, 128
    frequencies = _frequencies(head_dim, 10000, "paper")
    exact = _exact_angles(position, frequencies)
    bound = 3 * exact * 2.0**-24
    for angles in (rope_angles(np.array([position]), head_dim, precision="float32")[0],
                   sinusoidal_angles(np.array([position]), head_dim,
                                     dtype=np.float32)[0].astype(np.float64)):
        error = np.abs(angles - exact)
        assert (error <= bound + 1e-12).all()
        # ... and the loss is real: the fastest pairs are off by over a hundredth of a radian,
        # ten million times the float64 error.
        assert error.max() > 1e-2
    float64_error = np.abs(rope_angles(np.array([position]), head_dim)[0] - exact)
    assert float64_error.max() <= 1e6 * 2.0**-52 * 2
