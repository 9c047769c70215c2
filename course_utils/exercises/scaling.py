"""Checkers for the exercises of notebook 07 (context scaling of RoPE).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from :mod:`course_utils.scaling`.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from ..rope import rope_inv_freq
from ..scaling import rope_scaling, rotations_in_context, yarn_paper_ramp
from . import answer_of, grade

__all__ = ["check_full_turn_count", "check_paper_ramp", "check_llama3_frequencies"]

# Turns within L at which the ramp is checked: below alpha, the ends, inside, above beta.
_RAMP_R = np.array([0.0, 0.5, 1.0, 1.5, 4.0, 10.0, 16.5, 31.0, 32.0, 40.0, 652.0])


def check_full_turn_count(answer, *, head_dim=128, base=1e6,
                          original_max_position_embeddings=32768):
    """Exercise 7.1: how many pairs complete at least one full turn within ``L`` positions.

    A pair completes a turn when its wavelength ``2 pi b^(2i/d)`` is at most ``L``, that is when
    ``r_i = L / lambda_i >= 1``. The default configuration is Mistral 7B v0.2's
    (``rope_theta = 1e6``, head dimension 128, 32768 positions).

    Parameters
    ----------
    answer : int, or ``...`` while not attempted.
    """
    r = rotations_in_context(head_dim, base=base,
                             original_max_position_embeddings=original_max_position_embeddings)
    n_pairs = r.size
    right = int(np.sum(r >= 1))
    hints = [
        (n_pairs - right, "that counts the pairs that do NOT complete a turn (r_i < 1); the "
                          "question asks for those with r_i >= 1"),
        (right - 1, "one short: pair indices start at 0, so pairs 0 .. k are k + 1 pairs"),
        (2 * right, "that counts channels; each pair is two channels, and the question counts "
                    "pairs"),
        (int(np.sum(r >= 32)), "that counts the pairs with more than 32 turns (YaRN's beta); "
                               "one full turn is r_i >= 1"),
    ]
    return grade("Exercise 7.1: pairs that complete a full turn within L",
                 lambda: answer_of(answer), right, hints=hints, rtol=0, atol=0)


def check_paper_ramp(stub, *, alpha=1.0, beta=32.0):
    """Exercise 7.2: ``stub(r, alpha, beta)`` must return the YaRN paper's ramp ``gamma(r)``.

    ``gamma = 0`` for ``r < alpha``, ``1`` for ``r > beta``, ``(r - alpha) / (beta - alpha)``
    between. Checked on an array of turn counts covering every case.
    """
    alpha = val.positive_float(alpha, "alpha")
    beta = val.positive_float(beta, "beta")
    r = _RAMP_R.copy()
    expected = yarn_paper_ramp(r, alpha=alpha, beta=beta)
    hints = [
        (1 - expected, "the ramp is upside down: gamma is 1 (keep the frequency) for pairs with "
                       "MANY turns, r > beta, and 0 (interpolate) for r < alpha"),
        ((r - alpha) / (beta - alpha), "the ramp must be clipped to [0, 1]: 0 below alpha, 1 "
                                       "above beta"),
        (np.clip(r / beta, 0, 1), "the ramp starts at alpha, not at 0: use (r - alpha) / "
                                  "(beta - alpha)"),
    ]

    def compute():
        return np.asarray(answer_of(stub, r.copy(), alpha, beta), dtype=np.float64)

    return grade("Exercise 7.2: the YaRN paper's ramp gamma(r)", compute, expected, hints=hints,
                 atol=1e-12)


def check_llama3_frequencies(stub, *, head_dim=128, base=5e5, factor=8.0,
                             original_max_position_embeddings=8192, low_freq_factor=1.0,
                             high_freq_factor=4.0):
    """Exercise 7.3: ``stub(omega, factor, L, low_freq_factor, high_freq_factor)`` must return
    Llama-3's scaled frequencies.

    Keep ``omega`` where the wavelength is below ``L / high_freq_factor``, divide by ``factor``
    where it is above ``L / low_freq_factor``, and between blend
    ``(1 - g) omega / s + g omega`` with ``g = (L / lambda - lf) / (hf - lf)``. Defaults: Llama-3.1.
    The expected answer is :func:`course_utils.scaling.rope_scaling` with ``"llama3"``.
    """
    omega = rope_inv_freq(head_dim, base=base)
    expected, _ = rope_scaling("llama3", head_dim, base=base, factor=factor,
                               original_max_position_embeddings=original_max_position_embeddings,
                               low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor)
    wavelength = 2 * np.pi / omega
    length = original_max_position_embeddings
    g = (length / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    medium = (wavelength >= length / high_freq_factor) & (wavelength <= length / low_freq_factor)
    reversed_blend = np.where(medium, g * omega / factor + (1 - g) * omega, expected)
    hints = [
        (omega / factor, "every frequency was divided by the factor (Position Interpolation); "
                         "the fast pairs, wavelength < L / high_freq_factor, must be kept"),
        (reversed_blend, "the blend is reversed in the middle band: g = (L/lambda - lf)/(hf - lf) "
                         "is the weight of the ORIGINAL frequency, (1 - g) that of omega / s"),
        (np.where(wavelength > length / low_freq_factor, omega / factor, omega),
         "the middle band (L/hf <= wavelength <= L/lf) must be blended, not kept"),
    ]

    def compute():
        return np.asarray(answer_of(stub, omega.copy(), factor, length, low_freq_factor,
                                    high_freq_factor), dtype=np.float64)

    return grade("Exercise 7.3: Llama-3.1's scaled frequencies", compute, expected, hints=hints,
                 rtol=1e-9, atol=0)
