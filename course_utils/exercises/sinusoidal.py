"""Checkers for the exercises of notebook 02 (sinusoidal position encodings).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from :mod:`course_utils.sinusoidal`.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from ..sinusoidal import pair_channels, sinusoidal_encoding_at, sinusoidal_frequencies
from . import answer_of, grade

__all__ = ["check_wavelengths", "check_shift_encoding", "check_concat_to_interleaved"]

# (p, k) cases for the shift exercise: small and large positions, forward and backward shifts.
_SHIFT_CASES = ((0, 1), (3, 4), (10, 25), (100, -7), (1234, 500), (50, 0))


def check_wavelengths(answer, *, d_model=128):
    """Exercise 2.1: the wavelength (in positions) of every pair, ``lambda_i = 2 pi / omega_i``.

    Parameters
    ----------
    answer : array of shape ``(d_model // 2,)``, or ``...`` while not attempted.
    d_model : int, even (paper spacing, ``omega_i = 10000^(-2i/d)``).
    """
    d_model = val.positive_int(d_model, "d_model", even=True)
    omega = sinusoidal_frequencies(d_model)
    expected = 2 * np.pi / omega
    hints = [
        (omega, "these are the angular frequencies omega_i (radians per position); a wavelength "
                "is the number of positions for one full turn, 2*pi / omega_i"),
        (1 / omega, "missing the 2*pi: one full turn is 2*pi radians, so it takes 2*pi / omega_i "
                    "positions"),
        (expected[::-1], "the ladder is upside down: pair 0 turns fastest (wavelength 2*pi) and "
                         "the last pair slowest"),
        (2 * np.pi * omega, "2*pi*omega_i is not a length in positions; divide 2*pi by omega_i"),
    ]
    return grade(f"Exercise 2.1: wavelengths of the {d_model // 2} pairs",
                 lambda: answer_of(answer), expected, hints=hints, rtol=1e-9)


def check_shift_encoding(stub, *, d_model=16):
    """Exercise 2.2: ``stub(pe_row, k, d_model)`` must return ``PE[p + k]`` from ``PE[p]`` alone.

    The learner rotates each (sin, cos) pair by the angle ``k omega_i``; the position ``p`` is
    never given. Checked for several ``(p, k)``, including a negative ``k`` and ``k = 0``
    (interleaved layout).
    """
    d_model = val.positive_int(d_model, "d_model", even=True)
    p = np.array([c[0] for c in _SHIFT_CASES], dtype=np.float64)
    k = np.array([c[1] for c in _SHIFT_CASES], dtype=np.float64)
    rows = sinusoidal_encoding_at(p, d_model)

    def compute():
        return np.stack([
            np.asarray(answer_of(stub, rows[n].copy(), int(k[n]), d_model), dtype=np.float64)
            for n in range(len(p))
        ])

    hints = [
        (sinusoidal_encoding_at(p - k, d_model),
         "that is PE[p - k]: the rotation goes the wrong way (use the transpose of your matrix, "
         "or flip the sign of the angle)"),
        (rows + sinusoidal_encoding_at(k, d_model),
         "encodings do not add: PE[p] + PE[k] is not PE[p + k]; rotate each (sin, cos) pair "
         "instead"),
        (rows, "the row came back unchanged: rotate pair i by the angle k * omega_i"),
    ]
    return grade("Exercise 2.2: shift an encoding by k positions", compute,
                 sinusoidal_encoding_at(p + k, d_model), hints=hints, atol=1e-9)


def check_concat_to_interleaved(answer, *, d_model=8):
    """Exercise 2.3: the column order ``perm`` with ``concat_table[:, perm] == interleaved_table``.

    Here ``concat_table`` uses the paper's frequencies in ``[sin | cos]`` halves. Column ``2i`` of
    the interleaved table is ``sin(p omega_i)``, which is column ``i`` of the concat table; column
    ``2i + 1`` is ``cos(p omega_i)``, column ``d/2 + i``. So ``perm = [0, d/2, 1, d/2 + 1, ...]``.
    """
    d_model = val.positive_int(d_model, "d_model", even=True)
    if d_model < 4:
        raise ValueError(f"d_model must be an even integer >= 4, got {d_model}")
    sin_i, cos_i = pair_channels(d_model, layout="interleaved")
    sin_c, cos_c = pair_channels(d_model, layout="concat")
    expected = np.empty(d_model, dtype=np.int64)
    expected[sin_i] = sin_c
    expected[cos_i] = cos_c
    inverse = np.argsort(expected)
    hints = [
        (inverse, "this is the inverse order: it turns the interleaved table into the concat one. "
                  "Entry j of perm must name the concat column that holds interleaved column j"),
        (np.arange(d_model), "the two tables do not share a column order; interleaved column 1 is "
                             "cos(p omega_0), which sits at concat column d/2"),
    ]
    return grade(f"Exercise 2.3: concat-to-interleaved column order (d = {d_model})",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0.0, atol=0.0)
