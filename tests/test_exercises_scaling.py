"""The checkers of notebook 07's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.scaling import (
    check_full_turn_count,
    check_llama3_frequencies,
    check_paper_ramp,
)


@pytest.mark.parametrize("checker, stub", [
    (check_full_turn_count, ...),
    (check_paper_ramp, stub_function),
    (check_llama3_frequencies, stub_function),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def test_full_turn_count(capsys):
    # Mistral 7B v0.2: lambda_i <= L  <=>  i <= 64 ln(32768 / 2 pi) / ln(1e6) = 39.65, so 40 pairs.
    right = math.floor(64 * math.log(32768 / (2 * math.pi)) / math.log(1e6)) + 1
    assert right == 40
    assert check_full_turn_count(right) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (24, "do NOT complete"),
    (39, "one short"),
    (80, "channels"),
    (41, "values differ"),
])
def test_full_turn_count_wrong(wrong, hint, capsys):
    assert check_full_turn_count(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def _ramp(r, alpha, beta):
    return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)


def test_paper_ramp(capsys):
    assert check_paper_ramp(_ramp) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda r, a, b: 1 - _ramp(r, a, b), "upside down"),
    (lambda r, a, b: (r - a) / (b - a), "clipped"),
    (lambda r, a, b: np.clip(r / b, 0, 1), "starts at alpha"),
    (lambda r, a, b: np.ones(3), "shape"),
    (lambda r, a, b: r.undefined, "raised AttributeError"),
])
def test_paper_ramp_wrong(wrong, hint, capsys):
    assert check_paper_ramp(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


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


def test_full_turn_count_float_and_numpy_int_pass(capsys):
    assert check_full_turn_count(np.int64(40)) is True
    assert check_full_turn_count(40.0) is True
    assert printed(capsys).count("PASS") == 2


def test_paper_ramp_float32_and_torch_pass(torch, capsys):
    assert check_paper_ramp(lambda r, a, b: _ramp(r, a, b).astype(np.float32)) is True

    def in_torch(r, alpha, beta):
        return torch.clamp((torch.from_numpy(r) - alpha) / (beta - alpha), 0.0, 1.0).float()
    assert check_paper_ramp(in_torch) is True
    assert printed(capsys).count("PASS") == 2


@pytest.mark.parametrize("wrong, hint", [
    (lambda r, a, b: _ramp(r, 1.0, 32.0), "the arguments alpha and beta"),
    (lambda r, a, b: np.clip((r - a) / b, 0, 1), "width of the ramp"),
    (lambda r, a, b: _ramp(r, a + 1, b + 1), "values differ"),
    (lambda r, a, b: (r > b).astype(float), "values differ"),
])
def test_paper_ramp_more_wrong_answers(wrong, hint, capsys):
    assert check_paper_ramp(wrong) is False
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
     "blended, not divided"),
    (_off_by_band_edge, "TRY AGAIN"),
    (lambda omega, s, L, lf, hf: omega, "values differ"),
    (lambda omega, s, L, lf, hf: omega[:-1], "shape"),
])
def test_llama3_frequencies_more_wrong_answers(wrong, hint, capsys):
    assert check_llama3_frequencies(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_llama31_typed_in_is_right_for_llama31():
    # The hard-coded answer above is right on Llama-3.1's configuration: only the other
    # configurations of the checker expose it.
    omega = 5e5 ** (-np.arange(0, 128, 2) / 128)
    np.testing.assert_allclose(_llama31_typed_in(omega, 8.0, 8192, 1.0, 4.0),
                               _llama3(omega, 8.0, 8192, 1.0, 4.0))
