"""Checkers for the exercises of notebook 02 (sinusoidal position encodings).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers are written here from the paper's formula, ``theta_i = 10000^(-2i/d)``
(Vaswani et al. 2017, section 3.5), with the notation of the course (pair index ``i``, offset
``r``). A float32 answer (NumPy or torch) is compared with a float32 tolerance.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from . import answer_of, grade
from ._dtypes import flatten_answers, grade_by_precision

__all__ = ["check_wavelengths", "check_shift_encoding", "check_concat_to_interleaved"]


def _theta(d_model, *, spacing="paper"):
    """Frequencies of the paper (``10000^(-2i/d)``) or of tensor2tensor/fairseq spacing."""
    i = np.arange(d_model // 2, dtype=np.float64)
    if spacing == "paper":
        return 10000.0 ** (-2.0 * i / d_model)
    return np.exp(-i * np.log(10000.0) / (d_model // 2 - 1))


def check_wavelengths(answer, *, d_model=128):
    """Exercise 2.1: the wavelength (in positions) of every pair, ``lambda_i = 2 pi / theta_i``.

    Parameters
    ----------
    answer : array of shape ``(d_model // 2,)``, or ``...`` while not attempted.
    d_model : int, even (paper spacing, ``theta_i = 10000^(-2i/d)``).
    """
    d_model = val.positive_int(d_model, "d_model", even=True)
    if d_model < 4:
        raise ValueError(f"d_model must be an even integer >= 4, got {d_model}")
    theta = _theta(d_model)
    expected = 2 * np.pi / theta
    i = np.arange(d_model // 2)
    hints = [
        (theta, "these are the angular frequencies theta_i (radians per position); a wavelength "
                "is the number of positions for one full turn, 2*pi / theta_i"),
        (1 / theta, "missing the 2*pi: one full turn is 2*pi radians, so it takes 2*pi / theta_i "
                    "positions"),
        (expected[::-1], "the ladder is upside down: pair 0 turns fastest (wavelength 2*pi) and "
                         "the last pair slowest"),
        (2 * np.pi * theta, "2*pi*theta_i is not a length in positions; divide 2*pi by theta_i"),
        (2 * np.pi / _theta(d_model, spacing="t2t"),
         "that is the tensor2tensor/fairseq spacing (last frequency exactly 1e-4); the paper's "
         "is theta_i = 10000^(-2i/d)"),
        (2 * np.pi * 10000.0 ** (2 * (i + 1) / d_model),
         "off by one in the pair index: pair 0 has theta_0 = 1 (wavelength 2*pi), so use "
         "i = 0 .. d/2 - 1"),
        (2 * np.pi * 10000.0 ** (i / d_model),
         "the exponent is 2i/d, with i the pair index: pair i holds channels 2i and 2i + 1"),
        (2 * np.pi * 10000.0 ** (2 * i / (d_model // 2)),
         "d in the exponent is d_model, the width of the table, not the number of pairs"),
    ]
    expected_shape = expected.shape

    def compute():
        value = answer_of(answer)
        return flatten_answers([value], [expected_shape])

    return grade_by_precision(f"Exercise 2.1: wavelengths of the {d_model // 2} pairs", compute,
                              expected, hints=hints, tol64=(1e-9, 0.0), tol32=(2e-6, 0.0))


def _rotate(x, r, d_model, *, sign=1.0, spacing="paper", pairs="interleaved", scale=True):
    """Rotate each (sin, cos) pair of ``x`` (shape ``(d_model,)``) by ``sign * r * theta_i``.

    The variants (``sign=-1``, other spacing, half-layout pairs, no per-pair frequency) are the
    wrong answers the checker recognises.
    """
    theta = _theta(d_model, spacing=spacing) if scale else np.ones(d_model // 2)
    angle = sign * r * theta
    if pairs == "interleaved":
        s_ch, c_ch = np.arange(0, d_model, 2), np.arange(1, d_model, 2)
    else:
        s_ch, c_ch = np.arange(d_model // 2), np.arange(d_model // 2, d_model)
    s, c = x[s_ch], x[c_ch]
    out = np.empty(d_model)
    out[s_ch] = s * np.cos(angle) + c * np.sin(angle)  # sin(phi_p + phi_r)
    out[c_ch] = c * np.cos(angle) - s * np.sin(angle)  # cos(a + b)
    return out


def _paper_row(p, d_model):
    out = np.empty(d_model)
    out[0::2], out[1::2] = np.sin(p * _theta(d_model)), np.cos(p * _theta(d_model))
    return out


def _shift_cases():
    """``(x, r, d_model)`` cases: encodings PE[p] at several widths, and vectors that are not
    the encoding of any position (a rotation is linear, so it must work on them too)."""
    cases = [(_paper_row(p, d), r, d) for p, r, d in
             ((0, 1, 16), (3, 4, 16), (10, 25, 8), (100, -7, 16), (1234, 500, 32), (50, 0, 8))]
    rng = np.random.default_rng(22)
    for r, d in ((3, 16), (-40, 8), (1000, 32)):
        cases.append((rng.normal(size=d), r, d))
    return cases


def check_shift_encoding(stub):
    """Exercise 2.2: ``stub(x, r, d_model)`` must return ``T_r x``: each (sin, cos) pair of ``x``
    (interleaved layout, channels ``2i`` and ``2i + 1``) rotated by the angle ``r theta_i``.

    For an encoding ``x = PE[p]`` that is ``PE[p + r]``. The checker uses three widths
    (``d_model`` 8, 16, 32), negative and zero offsets, and vectors that are not the encoding of
    any position, so an answer that recovers ``p`` and re-encodes ``p + r``, or that hard-codes
    one width, does not pass.
    """
    cases = _shift_cases()
    expected = np.concatenate([_rotate(x, r, d) for x, r, d in cases])

    def compute():
        answers = [answer_of(stub, x.copy(), r, d) for x, r, d in cases]
        return flatten_answers(answers, [x.shape for x, _, _ in cases])

    def wrong(**kw):
        return np.concatenate([_rotate(x, r, d, **kw) for x, r, d in cases])

    hints = [
        (wrong(sign=-1.0), "that is T_(-r): the rotation goes the wrong way (flip the sign of the "
                           "angle; sin(x + y) = sin x cos y + cos x sin y)"),
        (np.concatenate([x for x, _, _ in cases]),
         "the vector came back unchanged: rotate pair i by the angle r * theta_i"),
        (np.concatenate([x + _paper_row(r, d) for x, r, d in cases]),
         "encodings do not add: PE[p] + PE[r] is not PE[p + r]; rotate each (sin, cos) pair "
         "instead"),
        (wrong(pairs="half"), "the pairs are channels 2i and 2i + 1 (interleaved layout), not i "
                              "and i + d/2"),
        (wrong(scale=False), "every pair turned by the same angle r; pair i turns by its own "
                             "angle r * theta_i"),
        (wrong(spacing="t2t"), "those are the tensor2tensor/fairseq frequencies; the paper's are "
                               "theta_i = 10000^(-2i/d)"),
    ]
    # An angle r theta_i formed in float32 is off by up to about |r| 2^-23 radians (1.2e-4 at
    # r = 1000, the largest offset here), so a float32 answer gets an absolute tolerance of 3e-4;
    # every wrong answer above differs by far more.
    return grade_by_precision("Exercise 2.2: shift an encoding by r positions", compute, expected,
                              hints=hints, tol64=(1e-9, 1e-9), tol32=(1e-5, 3e-4))


def check_concat_to_interleaved(answer, *, d_model=8):
    """Exercise 2.3: the column order ``perm`` with ``concat_table[:, perm] == interleaved_table``.

    Here ``concat_table`` uses the paper's frequencies in ``[sin | cos]`` halves. Column ``2i`` of
    the interleaved table is ``sin(p theta_i)``, which is column ``i`` of the concat table; column
    ``2i + 1`` is ``cos(p theta_i)``, column ``d/2 + i``. So ``perm = [0, d/2, 1, d/2 + 1, ...]``.
    """
    d_model = val.positive_int(d_model, "d_model", even=True)
    if d_model < 4:
        raise ValueError(f"d_model must be an even integer >= 4, got {d_model}")
    half = d_model // 2
    expected = np.empty(d_model, dtype=np.int64)
    expected[0::2] = np.arange(half)          # interleaved column 2i <- concat column i
    expected[1::2] = half + np.arange(half)   # interleaved column 2i+1 <- concat column d/2 + i
    inverse = np.argsort(expected)
    hints = [
        (inverse, "this is the inverse order: it turns the interleaved table into the concat one. "
                  "Entry j of perm must name the concat column that holds interleaved column j"),
        (np.arange(d_model), "the two tables do not share a column order; interleaved column 1 is "
                             "cos(p theta_0), which sits at concat column d/2"),
        (np.concatenate([half + np.arange(half), np.arange(half)]),
         "that swaps the halves; interleaved columns alternate sin, cos, sin, cos"),
        (expected + 1, "off by one: column indices start at 0"),
    ]
    return grade(f"Exercise 2.3: concat-to-interleaved column order (d = {d_model})",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0.0, atol=0.0)
