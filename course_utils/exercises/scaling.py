"""Checkers for the exercises of notebook 07 (context scaling of RoPE).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
Exercises 7.1 and 7.2 are graded against routes written here, independent of
:mod:`course_utils.scaling` (counting pairs; the paper's cases pair by pair); 7.3 against
:func:`course_utils.scaling.rope_scaling` (itself compared with Hugging Face's
``modeling_rope_utils.py`` in the tests). Function exercises are checked on several
configurations, so that constants typed in for one of them fail on the others.
"""

from __future__ import annotations

import numpy as np

from ..rope import rope_inv_freq
from ..scaling import rope_scaling
from . import answer_of, grade
from ._dtypes import as_float64

__all__ = ["check_yarn_bounds", "check_paper_yarn_frequencies", "check_llama3_frequencies"]

# Exercise 7.1: (head_dim, base, L, beta_fast, beta_slow): Llama-2 with YaRN's defaults, a small
# head, a long context whose beta_slow bound leaves the head (the clamp), other betas.
_YARN_CONFIGS = ((128, 1e4, 4096, 32.0, 1.0),
                 (64, 1e4, 2048, 32.0, 1.0),
                 (16, 50.0, 65536, 32.0, 1.0),
                 (96, 1e6, 32768, 16.0, 2.0))
# Exercise 7.2: (head_dim, base, factor, L, alpha, beta): Llama-2 with the paper's alpha and beta,
# then two other configurations.
_PAPER_CONFIGS = ((128, 1e4, 8.0, 4096, 1.0, 32.0),
                  (64, 1e4, 4.0, 2048, 2.0, 16.0),
                  (96, 1e6, 16.0, 32768, 0.5, 4.0))

# Exercise 7.3: Llama-3.1 (meta-llama/Llama-3.1-8B config.json), then two made-up configurations
# (head_dim, base, factor, L, low_freq_factor, high_freq_factor).
_LLAMA3_CONFIGS = ((128, 5e5, 8.0, 8192, 1.0, 4.0),
                   (64, 1e4, 4.0, 2048, 1.0, 8.0),
                   (96, 1e6, 16.0, 32768, 2.0, 6.0))


def _yarn_bounds_by_counting(head_dim, base, length, beta_fast, beta_slow):
    """YaRN's ramp bounds by counting pairs: no inversion of rho, no floor or ceil.

    ``floor(dim(beta_fast))`` is the number of pair indices ``i`` (of ``0 .. d - 1``, the code's
    clamp) with ``rho_i >= beta_fast``, minus one; ``ceil(dim(beta_slow))`` the number with
    ``rho_i > beta_slow``; ``rho_i = L b^(-2i/d) / (2 pi)`` is evaluated at each index.
    """
    rho = [length * base ** (-2 * i / head_dim) / (2 * np.pi) for i in range(head_dim)]
    low = max(sum(r >= beta_fast for r in rho) - 1, 0)
    high = min(sum(r > beta_slow for r in rho), head_dim - 1)
    return low, high


def _dim(rho, head_dim, base, length):
    return head_dim * np.log(length / (2 * np.pi * rho)) / (2 * np.log(base))


def check_yarn_bounds(stub):
    """Exercise 7.1: ``stub(head_dim, base, L, beta_fast, beta_slow)`` must return YaRN's ramp
    bounds as the reference code draws them, ``(floor(dim(beta_fast)), ceil(dim(beta_slow)))``
    clamped to ``[0, head_dim - 1]``, with ``dim(rho)`` the fractional pair index at which a pair
    makes ``rho`` turns within ``L``.

    Graded against :func:`_yarn_bounds_by_counting`, which counts pairs instead of inverting
    ``rho`` (Llama-2 gives (20, 46), as transformers' ``_compute_yarn_parameters`` does), on
    Llama-2 and three other configurations (one whose bounds need the clamp).
    """
    configs = _YARN_CONFIGS
    expected = np.array([_yarn_bounds_by_counting(*c) for c in configs], dtype=np.float64)

    def from_dims(rounding, *, clamp=True, factor=1.0, swap=False):
        out = []
        for head_dim, base, length, fast, slow in configs:
            betas = (slow, fast) if swap else (fast, slow)
            lo, hi = (rounding[k](factor * _dim(b, head_dim, base, length))
                      for k, b in enumerate(betas))
            if clamp:
                lo, hi = max(lo, 0), min(hi, head_dim - 1)
            out.append((lo, hi))
        return np.array(out, dtype=np.float64)

    floor, ceil = np.floor, np.ceil
    hints = [
        (from_dims((np.round, np.round)),
         "rounded to the nearest pair: the code rounds outwards, floor for beta_fast, ceil for "
         "beta_slow, so every pair strictly inside the ramp is blended"),
        (from_dims((ceil, floor)),
         "rounded inwards: the code takes the floor of dim(beta_fast) and the ceiling of "
         "dim(beta_slow)"),
        (from_dims((floor, ceil), swap=True),
         "beta_fast and beta_slow are swapped: beta_fast (many turns) gives the LOW pair index, "
         "beta_slow (one turn) the high one"),
        (np.tile(expected[0], (len(configs), 1)),
         "right for Llama-2 only: use the arguments head_dim, base, L and the betas"),
        (from_dims((floor, ceil), clamp=False),
         "right until the bounds leave the head: clamp them to [0, head_dim - 1] as the code "
         "does"),
        (from_dims((floor, ceil), factor=2.0),
         "twice too large: rho_i = L b^(-2i/d) / (2 pi) gives i = d ln(L / (2 pi rho)) / (2 ln b)"),
    ]

    def compute():
        answers = []
        for config in configs:
            result = as_float64(answer_of(stub, *config))
            if result.shape != (2,):
                raise ValueError(f"return two numbers (low, high), got shape {result.shape}")
            answers.append(result)
        return np.stack(answers)

    return grade("Exercise 7.1: YaRN's ramp bounds from the turns", compute, expected,
                 hints=hints, rtol=0, atol=0)


def _paper_yarn_by_cases(theta, factor, length, alpha, beta):
    """The YaRN paper's frequencies (Peng et al. 2023, section 3.2), pair by pair, case by case."""
    out = []
    for t in theta:
        r = length * t / (2 * np.pi)  # turns within L
        gamma = 0.0 if r < alpha else 1.0 if r > beta else (r - alpha) / (beta - alpha)
        out.append((1 - gamma) * t / factor + gamma * t)
    return np.array(out)


def check_paper_yarn_frequencies(stub):
    """Exercise 7.2: ``stub(theta, factor, L, alpha, beta)`` must return the YaRN paper's scaled
    frequencies: turns ``rho_i = L theta_i / (2 pi)``, the ramp ``gamma(rho)`` (0 below
    ``alpha``, 1 above ``beta``, linear in ``rho`` between), ``(1 - gamma) theta / s + gamma theta``.

    Graded against :func:`_paper_yarn_by_cases`, a loop over the pairs with the paper's three
    cases, on Llama-2 (``alpha = 1``, ``beta = 32``) and two other configurations.
    """
    configs = []
    for head_dim, base, factor, length, alpha, beta in _PAPER_CONFIGS:
        theta = rope_inv_freq(head_dim, base=base)
        configs.append((theta, factor, length, alpha, beta))
    expected = np.concatenate([_paper_yarn_by_cases(*c) for c in configs])

    def blend(make_gamma):
        out = []
        for theta, factor, length, alpha, beta in configs:
            gamma = make_gamma(theta, length, alpha, beta)
            out.append((1 - gamma) * theta / factor + gamma * theta)
        return np.concatenate(out)

    def ramp(r, alpha, beta):
        return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)

    def code_ramp(theta, length, alpha, beta):
        head_dim = 2 * theta.size
        base = theta[1] ** (-head_dim / 2)
        lo, hi = np.floor(_dim(beta, head_dim, base, length)), np.ceil(
            _dim(alpha, head_dim, base, length))
        return 1 - np.clip((np.arange(theta.size) - lo) / (hi - lo), 0.0, 1.0)

    hints = [
        (blend(lambda th, n, a, b: 1 - ramp(n * th / (2 * np.pi), a, b)),
         "gamma is upside down: it is 1 (keep theta) for pairs with MANY turns, rho > beta, and "
         "0 (divide by s) for rho < alpha"),
        (blend(lambda th, n, a, b: ramp(n * th, a, b)),
         "turns are rho = L theta / (2 pi): one turn is 2 pi radians"),
        (blend(lambda th, n, a, b: ramp(n / th, a, b)),
         "that is the wavelength ratio upside down: rho = L / lambda = L theta / (2 pi)"),
        (blend(lambda th, n, a, b: np.clip((n * th / (2 * np.pi) - a) / b, 0.0, 1.0)),
         "divide by the width of the ramp, beta - alpha, not by beta"),
        (blend(code_ramp),
         "that is the reference code's ramp, linear in the pair index; the paper's is linear in "
         "rho"),
        (blend(lambda th, n, a, b: ramp(n * th / (2 * np.pi), 1.0, 32.0)),
         "right for alpha = 1, beta = 32 only: use the arguments alpha and beta"),
    ]

    def compute():
        answers = []
        for theta, factor, length, alpha, beta in configs:
            result = as_float64(answer_of(stub, theta.copy(), factor, length, alpha, beta))
            if result.shape != theta.shape:
                raise ValueError(f"the result must have theta's shape {theta.shape}, got "
                                 f"{result.shape}")
            answers.append(result)
        return np.concatenate(answers)

    return grade("Exercise 7.2: the YaRN paper's frequencies", compute, expected, hints=hints,
                 rtol=1e-6, atol=0)


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
         "the middle band (L/hf <= wavelength <= L/lf) came back unchanged: either it was kept "
         "instead of blended, or the two thresholds are swapped (keeping below L / low_freq_factor "
         "first leaves nothing to blend): keep below L / high_freq_factor, divide above "
         "L / low_freq_factor, blend (1 - gamma) theta / s + gamma theta between"),
        (concat(llama31_constants),
         "right for Llama-3.1 only: use the arguments factor, L, low_freq_factor and "
         "high_freq_factor instead of the numbers 8, 8192, 1 and 4"),
        (concat(lambda theta, factor, length, low_ff, high_ff, expected:
                np.where(2 * np.pi / theta < length / high_ff, theta, theta / factor)),
         "the middle band (L/hf <= wavelength <= L/lf) came back divided: either it was divided "
         "instead of blended, or the two thresholds are swapped (dividing above L / high_freq_factor "
         "leaves no middle band): keep below L / high_freq_factor, divide above "
         "L / low_freq_factor, blend (1 - gamma) theta / s + gamma theta between"),
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
