"""Checkers for the exercises of notebook 01 (why attention needs positions).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from . import answer_of, grade

__all__ = ["check_permutation_matrix", "check_position_from_output", "check_causal_swap"]


def _order(order):
    order = val.numeric_array(order, "order", integer=True, min_ndim=1)
    if order.ndim != 1 or not np.array_equal(np.sort(order), np.arange(order.size)):
        raise ValueError(
            f"order must be a permutation of 0 .. n-1 (each index once), got {order.tolist()}"
        )
    return order


def check_permutation_matrix(answer, order):
    """Exercise 1.1: the permutation matrix ``P`` with ``P @ X == X[order]``.

    Row ``r`` of ``P @ X`` is row ``order[r]`` of ``X``, so ``P[r, order[r]] = 1`` and every other
    entry is 0: ``P = I[order]``.

    Parameters
    ----------
    answer : array of shape ``(n, n)``, or ``...`` while the exercise is not attempted.
    order : permutation of ``0 .. n-1``.
    """
    order = _order(order)
    expected = np.eye(order.size)[order]
    hints = [
        (expected.T, "this matrix undoes the shuffle (it is the inverse, P transposed): row r of "
                     "P @ X must be row order[r] of X, so put the 1 of row r in column order[r]"),
        (np.eye(order.size), "the identity leaves X in its original order; row r needs its 1 in "
                             "column order[r]"),
    ]
    return grade("Exercise 1.1: the permutation matrix of a shuffle", lambda: answer_of(answer),
                 expected, hints=hints)


def check_position_from_output(stub, *, max_position=63):
    """Exercise 1.2: recover the position ``t`` from the uniform-attention output ``o = 1/(t+1)``.

    The learner's ``stub(o)`` receives the array ``o`` for ``t = 0 .. max_position`` and must return
    the positions, ``t = 1/o - 1``.
    """
    max_position = val.positive_int(max_position, "max_position")
    t = np.arange(max_position + 1, dtype=np.float64)
    outputs = 1.0 / (t + 1.0)
    hints = [
        (t + 1.0, "off by one: 1/o counts the tokens the query sees, and that count includes the "
                  "BOS token at position 0"),
        (outputs, "that returns the output itself; invert o = 1/(t + 1) for t"),
    ]
    return grade("Exercise 1.2: position from a uniform-attention output",
                 lambda: np.asarray(answer_of(stub, outputs.copy()), dtype=np.float64),
                 t, hints=hints, rtol=0.0, atol=1e-6)


def check_causal_swap(answer, *, n_tokens=6, i=2, j=4):
    """Exercise 1.3: which outputs of a causal layer change when tokens ``i < j`` swap.

    A causal layer without positions makes the output at ``t`` a function of the query token
    ``x_t`` and of the set ``{x_0 .. x_t}``. Swapping ``x_i`` and ``x_j`` changes the query at
    ``t = i`` and ``t = j``, and the set for ``i <= t < j``; for ``t > j`` both are unchanged. So
    exactly the positions ``i <= t <= j`` change.

    Parameters
    ----------
    answer : sequence of ``n_tokens`` booleans (True = the output at that position changes).
    """
    n_tokens = val.positive_int(n_tokens, "n_tokens")
    i = val.positive_int(i, "i", allow_zero=True)
    j = val.positive_int(j, "j", allow_zero=True)
    if not i < j < n_tokens:
        raise ValueError(f"i and j must satisfy 0 <= i < j < n_tokens={n_tokens}, got i={i}, j={j}")
    t = np.arange(n_tokens)
    expected = (t >= i) & (t <= j)
    hints = [
        (t >= i, "the positions after j see the same set of tokens and keep their own query, so a "
                 "causal layer without positions gives them the same output"),
        ((t == i) | (t == j), "the positions strictly between i and j also change: their prefix "
                              "now holds the token from j instead of the one from i"),
        (np.ones(n_tokens, dtype=bool), "the positions before i see exactly what they saw before"),
    ]
    return grade(f"Exercise 1.3: outputs that change when tokens {i} and {j} swap",
                 lambda: np.asarray(answer_of(answer)).astype(np.float64),
                 expected.astype(np.float64), hints=hints)
