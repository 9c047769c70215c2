"""The checkers of notebook 12's exercises: NOT ATTEMPTED for the stub, PASS for the right answer
(also in float32 and as torch tensors), TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.exercises.context_extension import check_angle_overshoot, check_yarn_untouched


def _stub(*args):
    raise NotImplementedError


def _untouched_by_formula(head_dim, base, train_length):
    # floor(dim(32)) clamped at 0, as find_correction_range does; pairs at or below it are kept.
    low = math.floor(head_dim * math.log(train_length / (32 * 2 * math.pi)) / (2 * math.log(base)))
    return np.arange(head_dim // 2) <= max(low, 0)


def _overshoot_by_formula(theta, theta_new, train_length, test_length):
    out = []
    for old, new in zip(theta, theta_new, strict=True):
        seen = (train_length - 1) * old
        out.append(0.0 if seen >= 2 * np.pi else max(0.0, (test_length - 1) * new - seen))
    return np.array(out)


def test_stubs_are_not_attempted(capsys):
    assert check_yarn_untouched(_stub) is False
    assert check_angle_overshoot(_stub) is False
    assert capsys.readouterr().out.count("NOT ATTEMPTED") == 2


def test_right_answers_pass(capsys):
    assert check_yarn_untouched(_untouched_by_formula) is True
    assert check_angle_overshoot(_overshoot_by_formula) is True
    assert capsys.readouterr().out.count("PASS") == 2


def test_float32_answers_pass(capsys):
    assert check_yarn_untouched(
        lambda d, b, L: _untouched_by_formula(d, b, L).astype(np.float32)) is True
    assert check_angle_overshoot(
        lambda t, tn, L, N: _overshoot_by_formula(t.astype(np.float32), tn.astype(np.float32),
                                                  L, N).astype(np.float32)) is True
    assert capsys.readouterr().out.count("PASS") == 2


def test_torch_answers_pass(capsys):
    torch = pytest.importorskip("torch")
    assert check_yarn_untouched(
        lambda d, b, L: torch.from_numpy(_untouched_by_formula(d, b, L))) is True
    assert check_angle_overshoot(
        lambda t, tn, L, N: torch.tensor(_overshoot_by_formula(t, tn, L, N),
                                         dtype=torch.float32)) is True
    assert capsys.readouterr().out.count("PASS") == 2


def _paper(d, b, L):
    rho = L / (2 * np.pi * b ** (np.arange(0, d, 2) / d))
    return rho > 32


@pytest.mark.parametrize("wrong, hint", [
    (_paper, "paper's ramp"),
    (lambda d, b, L: L / (2 * np.pi * b ** (np.arange(0, d, 2) / d)) >= 1, "at least one turn"),
    (lambda d, b, L: np.arange(d // 2) <= math.floor(
        d * math.log(L / (64 * math.pi)) / (2 * math.log(b))), "clamped to 0"),
    (lambda d, b, L: ~_untouched_by_formula(d, b, L), "not the changed ones"),
])
def test_wrong_yarn_answers_get_hints(wrong, hint, capsys):
    assert check_yarn_untouched(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith("TRY AGAIN") and hint in out


@pytest.mark.parametrize("wrong, hint", [
    (lambda t, tn, L, N: np.where(L * t < 2 * np.pi, np.maximum(0, N * tn - L * t), 0), "L - 1"),
    (lambda t, tn, L, N: np.maximum(0, (N - 1) * tn - (L - 1) * t), "all the way round"),
    (lambda t, tn, L, N: np.where((L - 1) * t < 2 * np.pi, (N - 1) * tn - (L - 1) * t, 0),
     "not negative"),
    (lambda t, tn, L, N: np.where((L - 1) * t < 2 * np.pi,
                                  np.maximum(0, (N - 1) * tn - (L - 1) * tn), 0), "original theta"),
])
def test_wrong_overshoots_get_hints(wrong, hint, capsys):
    assert check_angle_overshoot(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith("TRY AGAIN") and hint in out


def test_the_turn_rule_with_l_in_place_of_l_minus_1_is_rejected(capsys):
    # rho < 1 (L theta < 2 pi) differs from (L - 1) theta < 2 pi on the setting with base 3.393.
    def rho_rule(t, tn, L, N):
        return np.where(L * t < 2 * np.pi, np.maximum(0, (N - 1) * tn - (L - 1) * t), 0)

    assert check_angle_overshoot(rho_rule) is False
    assert capsys.readouterr().out.startswith("TRY AGAIN")


def test_wrong_shape_and_crash_are_reported(capsys):
    assert check_yarn_untouched(lambda d, b, L: np.ones(d, dtype=bool)) is False
    assert check_angle_overshoot(lambda t, tn, L, N: t @ np.ones((2, 2))) is False
    out = capsys.readouterr().out
    assert out.count("TRY AGAIN") == 2
