"""The checkers of notebook 07's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.scaling import (
    check_llama3_frequencies,
    check_paper_yarn_frequencies,
    check_yarn_bounds,
)
from course_utils.rope import rope_inv_freq
from course_utils.scaling import rope_scaling, yarn_correction_range


@pytest.mark.parametrize("checker, stub", [
    (check_yarn_bounds, stub_function),
    (check_paper_yarn_frequencies, stub_function),
    (check_llama3_frequencies, stub_function),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def _dim(rho, head_dim, base, length, k=1.0):
    return k * head_dim * math.log(length / (2 * math.pi * rho)) / (2 * math.log(base))


def _bounds(head_dim, base, length, fast, slow, rounding=(math.floor, math.ceil), clamp=True,
            k=1.0):
    # Written from transformers' _compute_yarn_parameters (find_correction_range).
    low = rounding[0](_dim(fast, head_dim, base, length, k))
    high = rounding[1](_dim(slow, head_dim, base, length, k))
    return (max(low, 0), min(high, head_dim - 1)) if clamp else (low, high)


def test_yarn_bounds(capsys):
    # Llama-2: dim(32) = 20.94 and dim(1) = 45.03, rounded outwards (notebook 07).
    assert _bounds(128, 1e4, 4096, 32.0, 1.0) == (20, 46)
    assert check_yarn_bounds(_bounds) is True
    assert "PASS" in printed(capsys)


def test_yarn_bounds_agree_with_the_course_function():
    from course_utils.exercises.scaling import _YARN_CONFIGS
    for head_dim, base, length, fast, slow in _YARN_CONFIGS:
        assert _bounds(head_dim, base, length, fast, slow) == yarn_correction_range(
            head_dim, base=base, original_max_position_embeddings=length, beta_fast=fast,
            beta_slow=slow)


@pytest.mark.parametrize("wrong, hint", [
    (lambda d, b, n, f, s: _bounds(d, b, n, f, s, rounding=(round, round)), "nearest pair"),
    (lambda d, b, n, f, s: _bounds(d, b, n, f, s, rounding=(math.ceil, math.floor)),
     "rounded inwards"),
    (lambda d, b, n, f, s: _bounds(d, b, n, s, f), "swapped"),
    (lambda d, b, n, f, s: (20, 46), "Llama-2 only"),
    (lambda d, b, n, f, s: _bounds(d, b, n, f, s, clamp=False), "clamp"),
    (lambda d, b, n, f, s: _bounds(d, b, n, f, s, k=2.0), "twice too large"),
    (lambda d, b, n, f, s: _bounds(d, b, n, f, s)[0], "two numbers"),
    (lambda d, b, n, f, s: (0, 1), "values differ"),
])
def test_yarn_bounds_wrong(wrong, hint, capsys):
    assert check_yarn_bounds(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def _paper(theta, factor, length, alpha, beta, turns=None, gamma=None):
    # Peng et al. 2023, section 3.2: rho = L / lambda, gamma(rho), h(theta).
    rho = length * theta / (2 * np.pi) if turns is None else turns
    g = np.clip((rho - alpha) / (beta - alpha), 0.0, 1.0) if gamma is None else gamma
    return (1 - g) * theta / factor + g * theta


def test_paper_yarn_frequencies(capsys):
    assert check_paper_yarn_frequencies(_paper) is True
    assert "PASS" in printed(capsys)


def test_paper_yarn_frequencies_in_float32_and_torch(torch, capsys):
    assert check_paper_yarn_frequencies(
        lambda t, s, n, a, b: _paper(t, s, n, a, b).astype(np.float32)) is True

    def in_torch(theta, factor, length, alpha, beta):
        t = torch.from_numpy(theta)
        g = torch.clamp((length * t / (2 * math.pi) - alpha) / (beta - alpha), 0.0, 1.0)
        return ((1 - g) * t / factor + g * t).float()
    assert check_paper_yarn_frequencies(in_torch) is True
    assert printed(capsys).count("PASS") == 2


def _code(theta, factor, length, alpha, beta):
    head_dim = 2 * theta.size
    base = theta[1] ** (-head_dim / 2)
    return rope_scaling("yarn", head_dim, base=base, factor=factor,
                        original_max_position_embeddings=length, beta_fast=beta,
                        beta_slow=alpha)[0]


@pytest.mark.parametrize("wrong, hint", [
    (lambda t, s, n, a, b: _paper(t, s, n, a, b, gamma=1 - np.clip(
        (n * t / (2 * np.pi) - a) / (b - a), 0, 1)), "upside down"),
    (lambda t, s, n, a, b: _paper(t, s, n, a, b, turns=n * t), "2 pi radians"),
    (lambda t, s, n, a, b: _paper(t, s, n, a, b, turns=n / t), "wavelength ratio"),
    (lambda t, s, n, a, b: _paper(t, s, n, a, b, gamma=np.clip(
        (n * t / (2 * np.pi) - a) / b, 0, 1)), "width of the ramp"),
    (_code, "reference code's ramp"),
    (lambda t, s, n, a, b: _paper(t, s, n, 1.0, 32.0), "the arguments alpha and beta"),
    (lambda t, s, n, a, b: t / s, "values differ"),
    (lambda t, s, n, a, b: np.ones(3), "shape"),
])
def test_paper_yarn_frequencies_wrong(wrong, hint, capsys):
    assert check_paper_yarn_frequencies(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_paper_yarn_frequencies_llama2_keeps_and_divides():
    # Outside the ramp the paper keeps (rho > 32) or divides (rho < 1): Llama-2, s = 8.
    theta = rope_inv_freq(128)
    got = _paper(theta, 8.0, 4096, 1.0, 32.0)
    assert np.allclose(got[:21], theta[:21]) and np.allclose(got[46:], theta[46:] / 8)


def _llama3(omega, factor, L, lf, hf):
    # Written from Meta's apply_scaling (llama-models, models/llama3/reference_impl/model.py).
    wavelength = 2 * np.pi / omega
    new = np.where(wavelength > L / lf, omega / factor, omega)
    smooth = (L / wavelength - lf) / (hf - lf)
    middle = (wavelength >= L / hf) & (wavelength <= L / lf)
    return np.where(middle, (1 - smooth) * new / factor + smooth * new, new)


def test_llama3_frequencies(capsys):
    assert check_llama3_frequencies(_llama3) is True
    assert "PASS" in printed(capsys)


def _reversed_blend(omega, factor, L, lf, hf):
    wavelength = 2 * np.pi / omega
    g = (L / wavelength - lf) / (hf - lf)
    middle = (wavelength >= L / hf) & (wavelength <= L / lf)
    return np.where(middle, g * omega / factor + (1 - g) * omega, _llama3(omega, factor, L, lf, hf))


@pytest.mark.parametrize("wrong, hint", [
    (lambda omega, s, L, lf, hf: omega / s, "Position Interpolation"),
    (_reversed_blend, "reversed"),
    (lambda omega, s, L, lf, hf: np.where(2 * np.pi / omega > L / lf, omega / s, omega), "blended"),
])
def test_llama3_frequencies_wrong(wrong, hint, capsys):
    assert check_llama3_frequencies(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_llama3_frequencies_float32_and_torch_pass(torch, capsys):
    assert check_llama3_frequencies(lambda *a: _llama3(*a).astype(np.float32)) is True
    assert check_llama3_frequencies(lambda *a: torch.from_numpy(_llama3(*a)).float()) is True
    assert printed(capsys).count("PASS") == 2


def _llama31_typed_in(omega, factor, L, lf, hf):
    # Right formula, Llama-3.1's numbers typed in instead of the arguments.
    return _llama3(omega, 8.0, 8192, 1.0, 4.0)


def _off_by_band_edge(omega, factor, L, lf, hf):
    # Wavelengths compared with L * hf and L * lf instead of L / hf and L / lf.
    wavelength = 2 * np.pi / omega
    new = np.where(wavelength > L * lf, omega / factor, omega)
    smooth = (L / wavelength - lf) / (hf - lf)
    middle = (wavelength >= L * hf) & (wavelength <= L * lf)
    return np.where(middle, (1 - smooth) * new / factor + smooth * new, new)


@pytest.mark.parametrize("wrong, hint", [
    (_llama31_typed_in, "Llama-3.1 only"),
    (lambda omega, s, L, lf, hf: np.where(2 * np.pi / omega < L / hf, omega, omega / s),
     "divided instead of blended"),
    (_off_by_band_edge, "TRY AGAIN"),
    (lambda omega, s, L, lf, hf: omega, "values differ"),
    (lambda omega, s, L, lf, hf: omega[:-1], "shape"),
])
def test_llama3_frequencies_more_wrong_answers(wrong, hint, capsys):
    assert check_llama3_frequencies(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def _thresholds_swapped_if_first(omega, factor, L, lf, hf):
    # Meta's if/elif order with L / lf and L / hf exchanged: keep, else divide, else blend.
    wavelength = 2 * np.pi / omega
    smooth = (L / wavelength - lf) / (hf - lf)
    blended = (1 - smooth) * omega / factor + smooth * omega
    return np.where(wavelength < L / lf, omega,
                    np.where(wavelength > L / hf, omega / factor, blended))


def _thresholds_swapped_divide_first(omega, factor, L, lf, hf):
    # transformers' order (divide, then blend a medium mask) with L / lf and L / hf exchanged.
    wavelength = 2 * np.pi / omega
    new = np.where(wavelength > L / hf, omega / factor, omega)
    smooth = (L / wavelength - lf) / (hf - lf)
    middle = (wavelength >= L / lf) & (wavelength <= L / hf)
    return np.where(middle, (1 - smooth) * new / factor + smooth * new, new)


@pytest.mark.parametrize("wrong", [_thresholds_swapped_if_first, _thresholds_swapped_divide_first])
def test_llama3_frequencies_swapped_thresholds(wrong, capsys):
    # Either order of the branches, the hint names the swap and says which threshold goes where.
    assert check_llama3_frequencies(wrong) is False
    out = " ".join(printed(capsys).split())
    assert "TRY AGAIN" in out and "thresholds are swapped" in out
    assert "keep below L / high_freq_factor, divide above L / low_freq_factor" in out


def test_llama31_typed_in_is_right_for_llama31():
    # The hard-coded answer above is right on Llama-3.1's configuration: only the other
    # configurations of the checker expose it.
    omega = 5e5 ** (-np.arange(0, 128, 2) / 128)
    np.testing.assert_allclose(_llama31_typed_in(omega, 8.0, 8192, 1.0, 4.0),
                               _llama3(omega, 8.0, 8192, 1.0, 4.0))
