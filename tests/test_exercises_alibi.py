"""The checkers of notebook 06's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.alibi import (
    check_bias_row,
    check_entropy_function,
    check_overtake_distance,
    check_slopes,
)


@pytest.mark.parametrize("checker, stub", [
    (check_slopes, ...),
    (check_bias_row, ...),
    (check_entropy_function, stub_function),
    (check_overtake_distance, stub_function),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def test_slopes(capsys):
    # get_slopes(6): the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3 from the 8-head list
    assert check_slopes(2.0 ** -np.array([2, 4, 6, 8, 1, 3])) is True
    assert "PASS" in printed(capsys)
    assert check_slopes(2.0 ** (-8 * np.arange(1, 7) / 6)) is False
    assert "power of two" in printed(capsys)
    assert check_slopes(2.0 ** -np.arange(1, 7)) is False
    assert "8-head sequence" in printed(capsys)
    assert check_slopes(2.0 ** -np.array([1, 2, 3, 4, 6, 8])) is False
    assert "wrong order" in printed(capsys)


def test_bias_row(capsys):
    # head 1, slope a_1 = 1/2, query m = 4, keys n = 0..5: -(4 - n)/2, and -inf for n = 5
    assert check_bias_row([-2.0, -1.5, -1.0, -0.5, 0.0, -np.inf]) is True
    assert "PASS" in printed(capsys)
    assert check_bias_row([0.0, 0.5, 1.0, 1.5, 2.0, -np.inf]) is False
    assert "BLOOM" in printed(capsys)
    assert check_bias_row([2.0, 1.5, 1.0, 0.5, 0.0, np.inf]) is False
    assert "penalty" in printed(capsys)
    assert check_bias_row([-2.0, -1.5, -1.0, -0.5, 0.0, -0.5]) is False
    assert "symmetric" in printed(capsys)
    assert check_bias_row([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5]) is False
    assert "TRY AGAIN" in printed(capsys)


def _entropy_loop(weights):
    out = []
    for row in weights:
        out.append(-sum(p * math.log(p) for p in row if p > 0))
    return np.array(out)


def test_entropy_function(capsys):
    assert check_entropy_function(_entropy_loop) is True
    assert "PASS" in printed(capsys)

    def naive(weights):
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.sum(weights * np.log(weights), axis=-1)

    assert check_entropy_function(naive) is False
    assert "NaN" in printed(capsys)

    def in_bits(weights):
        return _entropy_loop(weights) / math.log(2)

    assert check_entropy_function(in_bits) is False
    assert "bits" in printed(capsys)
    assert check_entropy_function(lambda weights: -_entropy_loop(weights)) is False
    assert "sign" in printed(capsys)


def test_slopes_float32_and_torch_pass(torch, capsys):
    right = 2.0 ** -np.array([2.0, 4, 6, 8, 1, 3])
    assert check_slopes(right.astype(np.float32)) is True
    assert check_slopes(torch.tensor(right, dtype=torch.float32)) is True
    assert printed(capsys).count("PASS") == 2


@pytest.mark.parametrize("wrong, hint", [
    (2.0 ** -np.array([2.0, 4, 6, 8, 2, 4]), "repeat 4-head ones"),
    (2.0 ** -np.array([2.0, 4, 6, 8, 1, 2]), "not the first two"),
    (2.0 ** (-8 * np.arange(0, 6) / 6), "h starts at 1"),
    (-np.array([2.0, 4, 6, 8, 1, 3]), "logarithms"),
    (2.0 ** -np.array([2.0, 4, 6, 8, 1]), "shape"),
    (2.0 ** -np.array([2.0, 4, 6, 8, 1, 3]) * 1.001, "values differ"),
])
def test_slopes_more_wrong_answers(wrong, hint, capsys):
    assert check_slopes(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_bias_row_float32_passes(capsys):
    right = np.array([-2.0, -1.5, -1.0, -0.5, 0.0, -np.inf], dtype=np.float32)
    assert check_bias_row(right) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    ([-2.5, -2.0, -1.5, -1.0, -0.5, 0.0], "position 5"),
    ([-1.5, -1.0, -0.5, 0.0, -np.inf, -np.inf], "position 3"),
    ([-2.0, -1.5, -1.0, -0.5, 0.0, 0.0], "-inf"),
    ([-2.0, -1.5, -1.0, -0.5, -np.inf, -np.inf], "its own key"),
    ([-4.0, -3.0, -2.0, -1.0, 0.0, -np.inf], "slope of head 1"),
])
def test_bias_row_more_wrong_answers(wrong, hint, capsys):
    assert check_bias_row(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


@pytest.mark.parametrize("eps", [1e-12, 1e-10, 1e-9])
def test_entropy_with_an_epsilon_in_the_log_passes(eps, capsys):
    def with_epsilon(weights):
        return -np.sum(weights * np.log(weights + eps), axis=-1)
    assert check_entropy_function(with_epsilon) is True
    assert "PASS" in printed(capsys)


def test_entropy_float32_and_torch_pass(torch, capsys):
    assert check_entropy_function(lambda w: _entropy_loop(w).astype(np.float32)) is True

    def in_torch(weights):
        p = torch.from_numpy(weights).float()
        return -(torch.special.xlogy(p, p)).sum(dim=-1)
    assert check_entropy_function(in_torch) is True
    assert printed(capsys).count("PASS") == 2


@pytest.mark.parametrize("wrong, hint", [
    (lambda w: _entropy_loop(w.T), "last axis"),
    (lambda w: _entropy_loop(w) / math.log(10), "base 10"),
    (lambda w: np.full(w.shape[0], math.log(w.shape[1])), "uniform"),
    (lambda w: -np.sum(w * np.log(w + 1e-3), axis=-1), "values differ"),
    (lambda w: -np.sum(np.log(np.where(w > 0, w, 1.0)), axis=-1), "values differ"),
])
def test_entropy_more_wrong_answers(wrong, hint, capsys):
    assert check_entropy_function(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


# Exercise 6.4. The slopes are written out here from the authors' rule (get_slopes in
# ofirpress/attention_with_linear_biases): for H = 12, the 8-head slopes 2^-1 .. 2^-8, then
# 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 from the 16-head sequence.
def _slopes_by_rule(n_heads):
    c = 2 ** math.floor(math.log2(n_heads))
    own = [2.0 ** (-8 * h / c) for h in range(1, c + 1)]
    extra = [2.0 ** (-8 * h / (2 * c)) for h in range(1, 2 * c + 1, 2)]
    return np.array(own + extra[: n_heads - c])


def _overtake(n_heads, gap):
    # smallest whole t with mu_h t > gap, by stepping t up from 0: a loop, not the formula
    out = []
    for a in _slopes_by_rule(n_heads):
        t = 0
        while a * t <= gap:
            t += 1
        out.append(t)
    return np.array(out)


def test_overtake_distance_right_answers(torch, capsys):
    assert check_overtake_distance(_overtake) is True
    assert check_overtake_distance(lambda n, gap: _overtake(n, gap).astype(np.float32)) is True

    def in_torch(n_heads, gap):
        slopes = torch.tensor(_slopes_by_rule(n_heads), dtype=torch.float32)
        return torch.floor(gap / slopes) + 1
    assert check_overtake_distance(in_torch) is True
    assert printed(capsys).count("PASS") == 3


def test_overtake_distance_for_12_heads_by_hand():
    # gap 2, H = 12: mu_h = 2^-1 .. 2^-8 give t = 2^(h+1) + 1; then 2^-0.5 -> floor(2.83) + 1 = 3
    t = _overtake(12, 2.0)
    assert list(t[:8]) == [5, 9, 17, 33, 65, 129, 257, 513]
    assert list(t[8:]) == [3, 6, 12, 23]


def _by_rule(make):
    return lambda n, gap: make(_slopes_by_rule(n), n, gap)


@pytest.mark.parametrize("wrong, hint", [
    (_by_rule(lambda a, n, gap: np.ceil(gap / a)), "tie"),
    (_by_rule(lambda a, n, gap: np.floor(gap / a)), "one more step"),
    (_by_rule(lambda a, n, gap: gap / a), "whole distances"),
    (lambda n, gap: np.floor(gap / 2.0 ** (-8 * np.arange(1, n + 1) / n)) + 1, "power of two"),
    (_by_rule(lambda a, n, gap: np.floor(gap / np.sort(a)[::-1]) + 1), "head order"),
    (_by_rule(lambda a, n, gap: np.floor(gap * a) + 1), "not gap * mu_h"),
    (_by_rule(lambda a, n, gap: (np.floor(gap / a) + 1)[:-1]), "shape"),
    (_by_rule(lambda a, n, gap: np.floor(gap / a) + 2), "values differ"),
])
def test_overtake_distance_wrong_answers(wrong, hint, capsys):
    assert check_overtake_distance(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_overtake_distance_with_constants_for_one_case_fails(capsys):
    # the answer for 12 heads and gap 2 typed in: right for the first case only
    typed = np.array([5, 9, 17, 33, 65, 129, 257, 513, 3, 6, 12, 23])
    assert check_overtake_distance(lambda n, gap: typed) is False
    assert "TRY AGAIN" in printed(capsys)
