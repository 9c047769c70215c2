"""The checkers of notebook 13's exercises: NOT ATTEMPTED for the stub, PASS for right answers
(also in float32), TRY AGAIN with a hint for plausible wrong answers. No model file needed."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.real_model import (
    check_sink_shares,
    check_yarn_changed_pairs,
    synthetic_attention,
)


@pytest.mark.parametrize("checker", [check_sink_shares, check_yarn_changed_pairs])
def test_stub_is_not_attempted(checker, capsys):
    assert checker(stub_function) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out


def _shares_by_loop(attention, n_sink, *, dtype=np.float64, first=None, keys=None, order=None):
    """Query by query and key by key; the keyword arguments plant the mistakes."""
    first = n_sink if first is None else first
    keys = n_sink if keys is None else keys
    layers = sorted(attention) if order is None else order(attention)
    out = np.zeros((len(layers), next(iter(attention.values())).shape[0]))
    for row, layer in enumerate(layers):
        weights = attention[layer]
        for head in range(weights.shape[0]):
            T = weights.shape[1]
            total = sum(weights[head, q, k] for q in range(first, T) for k in range(keys))
            out[row, head] = total / (T - first)
    return out.astype(dtype)


def test_sink_shares_right_answers(capsys):
    assert check_sink_shares(_shares_by_loop) is True
    assert check_sink_shares(lambda a, n: _shares_by_loop(a, n, dtype=np.float32)) is True
    assert printed(capsys).count("PASS") == 2


@pytest.mark.parametrize("wrong, hint", [
    (lambda a, n: _shares_by_loop(a, n, first=0), "average over the queries n_sink"),
    (lambda a, n: _shares_by_loop(a, n, keys=1), "weight on key 0 alone"),
    (lambda a, n: _shares_by_loop({k: np.swapaxes(v, 1, 2) for k, v in a.items()}, n),
     "rows are queries"),
    (lambda a, n: _shares_by_loop(a, n, order=list), "increasing order"),
    (lambda a, n: np.array([a[k][:, n:, :n].sum(-1).max(-1) for k in sorted(a)]),
     "MEAN over queries"),
    (lambda a, n: _shares_by_loop(a, n)[:, :1], "should have shape"),
    (lambda a, n: _shares_by_loop(a, n) * 1.001, "values differ"),
])
def test_sink_shares_wrong_answers(wrong, hint, capsys):
    assert check_sink_shares(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_sink_share_hard_coded_first_case_fails(capsys):
    first = _shares_by_loop(synthetic_attention((7, 2, 11), 3, 12, seed=0), 1)
    assert check_sink_shares(lambda a, n: first) is False
    assert "TRY AGAIN" in printed(capsys)


def test_synthetic_attention_rows_are_causal_distributions():
    attention = synthetic_attention((4, 1), 3, 7, seed=3)
    for weights in attention.values():
        np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
        assert np.all(np.triu(weights, 1) == 0)


def _yarn_pairs_by_formula(d, base, factor, L, *, shift=0, dtype=np.int64):
    """From the ramp's low end: dim(r) = d ln(L / (2 pi r)) / (2 ln b), floored at r = 32."""
    low = int(np.floor(d * np.log(L / (2 * np.pi * 32)) / (2 * np.log(base))))
    return (np.arange(max(low, 0) + 1, d // 2) + shift).astype(dtype)


def test_yarn_changed_pairs(capsys):
    assert check_yarn_changed_pairs(_yarn_pairs_by_formula) is True
    assert check_yarn_changed_pairs(
        lambda *a: _yarn_pairs_by_formula(*a, dtype=np.float32)) is True
    assert printed(capsys).count("PASS") == 2


@pytest.mark.parametrize("wrong, hint", [
    (lambda *a: _yarn_pairs_by_formula(*a, shift=-1), "off by one"),
    (lambda d, b, s, L: np.arange(d // 2), "leaves the fastest pairs alone"),
    (lambda d, b, s, L: (d // 2 - 1) - _yarn_pairs_by_formula(d, b, s, L)[::-1],
     "counted from the fastest"),
    (lambda d, b, s, L: _yarn_pairs_by_formula(d, b, s, L)[_yarn_pairs_by_formula(d, b, s, L)
                                                          >= _high(d, b, L)],
     "divided by the factor in full"),
    (lambda d, b, s, L: np.arange(11, 32), "TRY AGAIN"),  # SmolLM2's answer, typed in
])
def test_yarn_changed_pairs_wrong_answers(wrong, hint, capsys):
    assert check_yarn_changed_pairs(wrong) is False
    assert hint in printed(capsys)


def _high(d, base, L):
    return int(np.ceil(d * np.log(L / (2 * np.pi)) / (2 * np.log(base))))
