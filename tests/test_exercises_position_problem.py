"""The notebook 01 checkers: NOT ATTEMPTED for the stub, PASS for the right answer, TRY AGAIN for
plausible wrong ones. Right answers are derived here from the definitions (and, for 1.3, confirmed
on a real causal attention layer), not from the checkers."""

import numpy as np
import pytest

from course_utils.attention import scaled_dot_product_attention
from course_utils.exercises.position_problem import (
    check_causal_swap,
    check_permutation_matrix,
    check_position_from_output,
)

ORDER = [2, 0, 3, 1]


def _stub(*_args):
    raise NotImplementedError


def test_permutation_matrix_stub_right_and_wrong(capsys):
    assert check_permutation_matrix(..., ORDER) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    x = np.arange(12.0).reshape(4, 3)
    right = np.zeros((4, 4))
    right[np.arange(4), ORDER] = 1.0
    assert np.array_equal(right @ x, x[ORDER])
    assert check_permutation_matrix(right, ORDER) is True
    assert capsys.readouterr().out.startswith("PASS")
    assert check_permutation_matrix(right.T, ORDER) is False
    out = capsys.readouterr().out
    assert "TRY AGAIN" in out and "inverse" in out
    assert check_permutation_matrix(np.eye(4), ORDER) is False
    assert "identity" in capsys.readouterr().out


def test_permutation_matrix_rejects_a_non_permutation():
    with pytest.raises(ValueError, match="order must be a permutation"):
        check_permutation_matrix(np.eye(3), [0, 0, 1])


def test_position_from_output(capsys):
    assert check_position_from_output(_stub) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    assert check_position_from_output(lambda o: 1.0 / o - 1.0) is True
    assert "PASS" in capsys.readouterr().out
    assert check_position_from_output(lambda o: 1.0 / o) is False
    out = capsys.readouterr().out
    assert "TRY AGAIN" in out and "off by one" in out
    assert check_position_from_output(lambda o: o) is False
    assert "TRY AGAIN" in capsys.readouterr().out


def test_position_from_output_reports_a_crash_without_raising(capsys):
    def broken(o):
        return o.not_a_method()

    assert check_position_from_output(broken) is False
    assert "raised AttributeError" in capsys.readouterr().out


def _changed_positions_by_attention(n, i, j, seed=0):
    """Which outputs of a random causal attention layer change when tokens i and j swap."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8))
    wq, wk, wv = (rng.normal(size=(8, 8)) for _ in range(3))
    swapped = x.copy()
    swapped[[i, j]] = x[[j, i]]
    before, _ = scaled_dot_product_attention(x @ wq, x @ wk, x @ wv, causal=True)
    after, _ = scaled_dot_product_attention(swapped @ wq, swapped @ wk, swapped @ wv, causal=True)
    return np.abs(after - before).max(axis=1) > 1e-9


def test_causal_swap(capsys):
    assert check_causal_swap(...) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    right = [False, False, True, True, True, False]
    assert np.array_equal(_changed_positions_by_attention(6, 2, 4), right)
    assert check_causal_swap(right) is True
    assert "PASS" in capsys.readouterr().out
    assert check_causal_swap([False, False, True, True, True, True]) is False
    out = capsys.readouterr().out
    assert "TRY AGAIN" in out and "after j" in out
    assert check_causal_swap([False, False, True, False, True, False]) is False
    assert "strictly between" in capsys.readouterr().out


def test_causal_swap_other_indices_agree_with_attention():
    changed = _changed_positions_by_attention(7, 1, 5, seed=3)
    assert check_causal_swap(changed.tolist(), n_tokens=7, i=1, j=5) is True
    with pytest.raises(ValueError, match="0 <= i < j < n_tokens"):
        check_causal_swap([True] * 4, n_tokens=4, i=3, j=1)
