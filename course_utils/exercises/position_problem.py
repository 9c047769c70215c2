"""Checkers for the exercises of notebook 01 (why attention needs positions).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from . import answer_of, grade
from ._dtypes import flatten_answers, grade_by_precision

__all__ = ["check_permutation_matrix", "check_position_from_output", "check_causal_swap",
           "check_bos_output", "check_best_bos_score"]


def _order(order):
    order = val.numeric_array(order, "order", integer=True, min_ndim=1)
    if order.ndim != 1 or not np.array_equal(np.sort(order), np.arange(order.size)):
        raise ValueError(
            f"order must be a permutation of 0 .. n-1 (each index once), got {order.tolist()}"
        )
    return order


def check_permutation_matrix(answer, order):
    """Exercise 1.1: the permutation matrix ``P`` with ``P @ X == X[order]``.

    Row ``j`` of ``P @ X`` is row ``order[j]`` of ``X``, so ``P[j, order[j]] = 1`` and every other
    entry is 0: ``P = I[order]``.

    Parameters
    ----------
    answer : array of shape ``(n, n)``, or ``...`` while the exercise is not attempted.
    order : permutation of ``0 .. n-1``.
    """
    order = _order(order)
    expected = np.eye(order.size)[order]
    hints = [
        (expected.T, "this matrix undoes the shuffle (it is the inverse, P transposed): row j of "
                     "P @ X must be row order[j] of X, so put the 1 of row j in column order[j]"),
        (np.eye(order.size), "the identity leaves X in its original order; row j needs its 1 in "
                             "column order[j]"),
        (np.eye(order.size)[order[::-1]], "the rows are in reverse: row j of P takes its 1 from "
                                          "order[j], read order from the start"),
        (np.roll(expected, 1, axis=1), "each 1 is one column too far right: use order[j] as "
                                       "the column index directly (indices start at 0)"),
        (np.roll(expected, -1, axis=1), "each 1 is one column too far left: use order[j] as "
                                        "the column index directly (indices start at 0)"),
    ]
    return grade("Exercise 1.1: the permutation matrix of a shuffle", lambda: answer_of(answer),
                 expected, hints=hints)


# Exercise 1.2: positions in no particular order, with repeats, in two calls of different lengths,
# so that an answer which ignores its input (such as np.arange(len(o))) cannot pass.
_POSITION_CASES = ((7, 0, 31, 2, 500, 13, 1, 4095), (3, 3, 100, 0, 64))


def check_position_from_output(stub):
    """Exercise 1.2: recover the position ``p`` from the uniform-attention output ``o = 1/(p+1)``.

    ``stub(o)`` receives an array of outputs and must return the positions, ``p = 1/o - 1``,
    elementwise. It is called on two arrays whose positions are out of order and repeat, so the
    answer must come from ``o``. A float32 (or torch float32) answer is compared with a float32
    tolerance (relative 1e-5), a float64 one with 1e-9.
    """
    cases = [np.asarray(c, dtype=np.float64) for c in _POSITION_CASES]
    expected = np.concatenate(cases)

    def compute():
        answers = [answer_of(stub, 1.0 / (p + 1.0)) for p in cases]
        return flatten_answers(answers, [p.shape for p in cases])

    def wrong(f):
        return np.concatenate([f(p, 1.0 / (p + 1.0)) for p in cases])

    hints = [
        (wrong(lambda p, o: np.arange(p.size, dtype=np.float64)),
         "your answer does not depend on o: the outputs are not given in position order (and "
         "positions repeat), so compute each position from its own output"),
        (wrong(lambda p, o: 1.0 / o), "off by one: 1/o counts the tokens the query sees, and that "
                                      "count includes the BOS token at position 0"),
        (wrong(lambda p, o: 1.0 / o + 1.0), "the wrong way round: o = 1/(p + 1) gives "
                                            "p + 1 = 1/o, so subtract 1"),
        (wrong(lambda p, o: o), "that returns the output itself; invert o = 1/(p + 1) for p"),
        (wrong(lambda p, o: 1.0 / (o + 1.0)), "1/(o + 1) is not the inverse of o = 1/(p + 1): "
                                              "solve for p, which gives 1/o - 1"),
    ]
    return grade_by_precision("Exercise 1.2: position from a uniform-attention output", compute,
                              expected, hints=hints, tol64=(1e-9, 1e-9), tol32=(1e-5, 1e-5))


def check_causal_swap(answer, *, n_tokens=6, i=2, j=4):
    """Exercise 1.3: which outputs of a causal layer change when tokens ``i < j`` swap.

    A causal layer without positions makes the output at position ``p`` a function of the query
    token ``x_p`` and of the set ``{x_0 .. x_p}``. Swapping the tokens at positions ``i`` and
    ``j`` changes the query at ``p = i`` and ``p = j``, and the set for ``i <= p < j``; for
    ``p > j`` both are unchanged. So exactly the positions ``i <= p <= j`` change. (Here ``i`` and
    ``j`` are the two swapped positions, not a pair index.)

    Parameters
    ----------
    answer : sequence of ``n_tokens`` booleans (True = the output at that position changes).
    """
    n_tokens = val.positive_int(n_tokens, "n_tokens")
    i = val.positive_int(i, "i", allow_zero=True)
    j = val.positive_int(j, "j", allow_zero=True)
    if not i < j < n_tokens:
        raise ValueError(f"i and j must satisfy 0 <= i < j < n_tokens={n_tokens}, got i={i}, j={j}")
    p = np.arange(n_tokens)
    expected = (p >= i) & (p <= j)
    hints = [
        (p >= i, f"the positions after {j} see the same set of tokens and keep their own query, "
                 "so a causal layer without positions gives them the same output"),
        ((p == i) | (p == j), f"the positions strictly between {i} and {j} also change: their "
                              f"prefix now holds the token from {j} instead of the one from {i}"),
        (np.ones(n_tokens, dtype=bool), f"the positions before {i} see exactly what they saw "
                                        "before"),
        ((p >= i) & (p < j), f"position {j} changes too: its query token is now the one that sat "
                             f"at {i}"),
        ((p > i) & (p <= j), f"position {i} changes too: its query token is now the one that sat "
                             f"at {j}"),
        (np.zeros(n_tokens, dtype=bool), f"a causal layer does see some change: the query at {i} "
                                         f"and at {j} is a different token after the swap"),
    ]
    return grade(f"Exercise 1.3: outputs that change when tokens {i} and {j} swap",
                 lambda: np.asarray(answer_of(answer)).astype(np.float64),
                 expected.astype(np.float64), hints=hints)


# Exercise 1.4: several (positions, BOS score) configurations, out of order and with repeats, so
# that an answer tuned to one case (or one that ignores ell) cannot pass.
_BOS_CASES = (
    ((0, 1, 5, 31, 1000, 4095), 0.75),
    ((3, 3, 700, 12, 1), 2.5),
    ((64, 1, 9, 250), -1.25),
)
_BEST_CASES = ((1, 2, 10, 100, 1000, 4095), (7, 3, 64, 3, 500))


def _bos_cases():
    return [(np.asarray(p, dtype=np.float64), float(ell)) for p, ell in _BOS_CASES]


def check_bos_output(stub):
    """Exercise 1.4 (a): the output ``o_p(ell)`` of uniform attention with a BOS bonus.

    The query at position ``p`` sees the BOS key (score ``ell``) and ``p`` other keys (score 0);
    only the BOS value carries the flag 1. The softmax gives the BOS key the weight
    ``e^ell / (e^ell + p)``, which is the output. ``stub(p, ell)`` receives an array of
    positions and a number, and is tried on three configurations (two positive scores, one negative).
    """
    cases = _bos_cases()
    expected = np.concatenate([np.exp(b) / (np.exp(b) + p) for p, b in cases])

    def compute():
        answers = [answer_of(stub, p, b) for p, b in cases]
        return flatten_answers(answers, [p.shape for p, _ in cases])

    def wrong(f):
        return np.concatenate([f(p, b) for p, b in cases])

    hints = [
        (wrong(lambda p, b: 1.0 / (p + 1.0)),
         "that is the output for ell = 0 only: the BOS key's score ell changes its softmax "
         "weight, so the answer must depend on ell"),
        (wrong(lambda p, b: np.exp(b) / (np.exp(b) + p + 1.0)),
         "off by one: the query at p sees p + 1 keys, the BOS key and p others, so the "
         "denominator is e^ell + p"),
        (wrong(lambda p, b: b / (b + p)),
         "a softmax weight uses e^score, not the score: the BOS key's weight is e^ell over "
         "the sum of e^score over the visible keys"),
        (wrong(lambda p, b: np.exp(-b) / (np.exp(-b) + p)),
         "the sign of ell is reversed: a larger BOS score gives the BOS key more weight"),
        (wrong(lambda p, b: np.exp(b) / (p + 1.0)),
         "the weights must sum to 1: divide e^ell by e^ell + p, the sum over all visible "
         "keys, not by the number of keys"),
    ]
    return grade_by_precision("Exercise 1.4 (a): the output with a BOS score ell", compute,
                              expected, hints=hints, tol64=(1e-9, 1e-12), tol32=(1e-5, 1e-7))


def check_best_bos_score(stub):
    """Exercise 1.4 (b): the BOS score that best separates positions ``p`` and ``p + 1``.

    With ``z = e^ell`` the gap is ``o_p - o_{p+1} = z / ((z + p)(z + p + 1))``; setting its
    derivative in ``z`` to zero gives ``z^2 = p (p + 1)``, so ``ell* = ln(p (p + 1)) / 2``
    (positions ``p >= 1``; at ``p = 0`` the gap grows without bound as ``ell -> -infinity``).
    ``stub(p)`` receives an array of positions and is tried on two of them.
    """
    cases = [np.asarray(p, dtype=np.float64) for p in _BEST_CASES]
    expected = np.concatenate([0.5 * np.log(p * (p + 1.0)) for p in cases])

    def compute():
        answers = [answer_of(stub, p) for p in cases]
        return flatten_answers(answers, [p.shape for p in cases])

    def wrong(f):
        return np.concatenate([f(p) for p in cases])

    hints = [
        (wrong(lambda p: np.zeros_like(p)),
         "ell = 0 is the plain count of the chapter, not the best score: write the gap "
         "o_p - o_(p+1) as a function of z = e^ell and set its derivative to zero"),
        (wrong(lambda p: np.log(p * (p + 1.0))),
         "the optimum is z^2 = p (p + 1) with z = e^ell, so ell is half of ln(p (p + 1))"),
        (wrong(lambda p: 0.5 * np.log((p + 1.0) * (p + 2.0))),
         "this is the optimum for the denominator e^ell + p + 1: the query at p sees p keys "
         "besides the BOS key, so o_p = e^ell / (e^ell + p)"),
        (wrong(lambda p: np.log(p)),
         "close, but not the optimum: z = p balances only one factor of the denominator; "
         "the derivative of z / ((z + p)(z + p + 1)) vanishes at z^2 = p (p + 1)"),
        (wrong(lambda p: np.log(p + 1.0)),
         "close, but not the optimum: the derivative of z / ((z + p)(z + p + 1)) vanishes at "
         "z^2 = p (p + 1), between p and p + 1"),
        (wrong(lambda p: np.log(p + 0.5)),
         "close (the arithmetic mean of p and p + 1), but the optimum is the geometric mean: "
         "z^2 = p (p + 1)"),
    ]
    return grade_by_precision("Exercise 1.4 (b): the BOS score that best separates p and p + 1",
                              compute, expected, hints=hints, tol64=(1e-9, 1e-12),
                              tol32=(1e-5, 1e-6))
