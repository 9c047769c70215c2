"""Checkers for the exercises of notebook 07 (context scaling of RoPE).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from :mod:`course_utils.scaling` (itself compared with Hugging Face's
``modeling_rope_utils.py`` in the tests). Function exercises are checked on several
configurations, so that constants typed in for one of them fail on the others.
"""

from __future__ import annotations

import numpy as np

from ..rope import rope_inv_freq
from ..scaling import rope_scaling, rotations_in_context, yarn_paper_ramp
from . import answer_of, grade
from ._dtypes import as_float64

__all__ = ["check_full_turn_count", "check_paper_ramp", "check_llama3_frequencies"]

# Turns within L at which the ramp is checked: below alpha, the ends, inside, above beta.
_RAMP_R = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 4.0, 10.0, 16.0, 16.5, 31.0, 32.0, 40.0, 652.0])
# (alpha, beta) pairs: the paper's values for Llama, then two others.
_RAMP_BOUNDS = ((1.0, 32.0), (2.0, 16.0), (0.5, 4.0))

# Exercise 7.3: Llama-3.1 (meta-llama/Llama-3.1-8B config.json), then two made-up configurations
# (head_dim, base, factor, L, low_freq_factor, high_freq_factor).
_LLAMA3_CONFIGS = ((128, 5e5, 8.0, 8192, 1.0, 4.0),
                   (64, 1e4, 4.0, 2048, 1.0, 8.0),
                   (96, 1e6, 16.0, 32768, 2.0, 6.0))


def check_full_turn_count(answer, *, head_dim=128, base=1e6,
                          original_max_position_embeddings=32768):
    """Exercise 7.1: how many pairs complete at least one full turn within ``L`` positions.

    A pair completes a turn when its wavelength ``2 pi b^(2i/d)`` is at most ``L``, that is when
    ``rho_i = L / lambda_i >= 1``. The default configuration is Mistral 7B v0.2's
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
        (n_pairs - right, "that counts the pairs that do NOT complete a turn (rho_i < 1); the "
                          "question asks for those with rho_i >= 1"),
        (right - 1, "one short: pair indices start at 0, so pairs 0 .. j are j + 1 pairs"),
        (2 * right, "that counts channels; each pair is two channels, and the question counts "
                    "pairs"),
        (int(np.sum(r >= 32)), "that counts the pairs with more than 32 turns (YaRN's beta); "
                               "one full turn is rho_i >= 1"),
    ]
    return grade("Exercise 7.1: pairs that complete a full turn within L",
                 lambda: answer_of(answer), right, hints=hints, rtol=0, atol=0)


def check_paper_ramp(stub):
    """Exercise 7.2: ``stub(rho, alpha, beta)`` must return the YaRN paper's ramp ``gamma(rho)``.

    ``gamma = 0`` for ``rho < alpha``, ``1`` for ``rho > beta``,
    ``(rho - alpha) / (beta - alpha)``
    between. Checked on an array of turn counts covering every case, for three ``(alpha, beta)``
    pairs: (1, 32), (2, 16), (0.5, 4).
    """
    r = _RAMP_R.copy()

    def concat(make):
        return np.concatenate([np.asarray(make(a, b), dtype=np.float64) for a, b in _RAMP_BOUNDS])

    expected = concat(lambda a, b: yarn_paper_ramp(r, alpha=a, beta=b))
    hints = [
        (1 - expected, "the ramp is upside down: gamma is 1 (keep the frequency) for pairs with "
                       "MANY turns, rho > beta, and 0 (interpolate) for rho < alpha"),
        (concat(lambda a, b: (r - a) / (b - a)),
         "the ramp must be clipped to [0, 1]: 0 below alpha, 1 above beta"),
        (concat(lambda a, b: np.clip(r / b, 0, 1)),
         "the ramp starts at alpha, not at 0: use (rho - alpha) / (beta - alpha)"),
        (concat(lambda a, b: yarn_paper_ramp(r, alpha=1.0, beta=32.0)),
         "right for alpha = 1, beta = 32 only: use the arguments alpha and beta, not the "
         "paper's numbers"),
        (concat(lambda a, b: np.clip((r - a) / b, 0, 1)),
         "divide by the width of the ramp, beta - alpha, not by beta"),
    ]

    def compute():
        answers = []
        for a, b in _RAMP_BOUNDS:
            result = as_float64(answer_of(stub, r.copy(), a, b))
            if result.shape != r.shape:
                raise ValueError(f"gamma(rho) must have rho's shape {r.shape}, got {result.shape}")
            answers.append(result)
        return np.concatenate(answers)

    return grade("Exercise 7.2: the YaRN paper's ramp gamma(rho)", compute, expected, hints=hints,
                 rtol=1e-6, atol=1e-9)


def check_llama3_frequencies(stub):
    """Exercise 7.3: ``stub(theta, factor, L, low_freq_factor, high_freq_factor)`` must return
    Llama-3's scaled frequencies.

    Keep ``theta`` where the wavelength is below ``L / high_freq_factor``, divide by ``factor``
    where it is above ``L / low_freq_factor``, and between blend
    ``(1 - gamma) theta / s + gamma theta`` with ``g = (L / lambda - lf) / (hf - lf)``. Checked on
    Llama-3.1's configuration and two others (``_LLAMA3_CONFIGS``); the expected answer is
    :func:`course_utils.scaling.rope_scaling` with ``"llama3"``.
    """
    configs = []
    for head_dim, base, factor, length, low_ff, high_ff in _LLAMA3_CONFIGS:
        theta = rope_inv_freq(head_dim, base=base)
        expected, _ = rope_scaling("llama3", head_dim, base=base, factor=factor,
                                   original_max_position_embeddings=length,
                                   low_freq_factor=low_ff, high_freq_factor=high_ff)
        configs.append((theta, factor, length, low_ff, high_ff, expected))

    def concat(make):
        return np.concatenate([make(*config) for config in configs])

    def blend(theta, factor, length, low_ff, high_ff, expected, *, reverse=False):
        wavelength = 2 * np.pi / theta
        g = (length / wavelength - low_ff) / (high_ff - low_ff)
        if reverse:
            g = 1 - g
        medium = (wavelength >= length / high_ff) & (wavelength <= length / low_ff)
        return np.where(medium, (1 - g) * theta / factor + g * theta, expected)

    def llama31_constants(theta, *_):
        # The formula with Llama-3.1's numbers typed in instead of the arguments.
        return blend(theta, 8.0, 8192, 1.0, 4.0,
                     np.where(2 * np.pi / theta > 8192, theta / 8.0, theta))

    hints = [
        (concat(lambda theta, factor, *_: theta / factor),
         "every frequency was divided by the factor (Position Interpolation); the fast pairs, "
         "wavelength < L / high_freq_factor, must be kept"),
        (concat(lambda *c: blend(*c, reverse=True)),
         "the blend is reversed in the middle band: gamma = (L/lambda - lf)/(hf - lf) is the weight "
         "of the ORIGINAL frequency, (1 - g) that of theta / s"),
        (concat(lambda theta, factor, length, low_ff, high_ff, expected:
                np.where(2 * np.pi / theta > length / low_ff, theta / factor, theta)),
         "the middle band (L/hf <= wavelength <= L/lf) must be blended, not kept"),
        (concat(llama31_constants),
         "right for Llama-3.1 only: use the arguments factor, L, low_freq_factor and "
         "high_freq_factor instead of the numbers 8, 8192, 1 and 4"),
        (concat(lambda theta, factor, length, low_ff, high_ff, expected:
                np.where(2 * np.pi / theta < length / high_ff, theta, theta / factor)),
         "the middle band (L/hf <= wavelength <= L/lf) must be blended, not divided: check the "
         "two thresholds (kept below L / high_freq_factor, divided above L / low_freq_factor; "
         "swapped, they leave no middle band), then blend (1 - gamma) theta / s + gamma theta"),
    ]

    def compute():
        answers = []
        for theta, factor, length, low_ff, high_ff, _ in configs:
            result = as_float64(answer_of(stub, theta.copy(), factor, length, low_ff, high_ff))
            if result.shape != theta.shape:
                raise ValueError(f"the result must have theta's shape {theta.shape}, got "
                                 f"{result.shape}")
            answers.append(result)
        return np.concatenate(answers)

    return grade("Exercise 7.3: Llama-3's scaled frequencies", compute, concat(
        lambda *c: c[-1]), hints=hints, rtol=1e-6, atol=0)
