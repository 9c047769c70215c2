"""Checkers for the exercises of notebook 06 (ALiBi).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from :mod:`course_utils.alibi` and :mod:`course_utils.attention`
(themselves checked against the reference code's rule and BLOOM's code), never from a typed-in
number. Tolerances follow the precision of the answer, so a right answer computed in float32 or
as a torch tensor passes.
"""

from __future__ import annotations

import math

import numpy as np

from ..alibi import alibi_bias, alibi_slopes
from ..attention import attention_entropy, softmax
from . import answer_of, grade
from ._dtypes import answer_rtol, as_float64

__all__ = ["check_slopes", "check_bias_row", "check_entropy_function", "check_overtake_distance"]

# Exercise 6.1: the slopes of a model with six heads.
_N_HEADS = 6

# Exercise 6.2: head 1 of 8 (slope mu_1 = 1/2, row 0 of the arrays), the query at position 4,
# keys 0 .. 5.
_QUERY, _N_KEYS = 4, 6

# Exercise 6.4: (number of heads, content advantage Delta) pairs. Several head counts that are
# not powers of two, and gaps that make Delta / mu_h an exact integer for some heads, so that
# ceil(Delta / mu_h) (a tie, not a loss) differs from the right floor(Delta / mu_h) + 1.
_OVERTAKE_CASES = ((12, 2.0), (6, 1.5), (20, 0.75), (8, 3.0))

# Exercise 6.3: attention rows with masked keys, on which the learner's entropy is evaluated.
_ROWS_SEED = 63
_NAN_MARK = -1.0  # an entropy is never negative, so this marks "your function returned NaN"


def check_slopes(answer):
    """Exercise 6.1: ALiBi's slopes for 6 heads, in head order (a 1-D array of 6 numbers)."""
    expected = alibi_slopes(_N_HEADS)
    h = np.arange(1, _N_HEADS + 1)  # heads counted from 1
    hints = [
        (2.0 ** (-8.0 * h / _N_HEADS),
         "mu_h = 2^(-8h/H) is the rule for H a power of two only; for 6 heads take the 4-head slopes, "
         "then every other slope of the 8-head sequence"),
        (alibi_slopes(8)[:_N_HEADS],
         "the first 6 slopes of the 8-head sequence stop at 2^-6 and miss the shallowest head, "
         "2^-8; start from the 4-head slopes instead"),
        (np.sort(expected)[::-1],
         "right values, wrong order: the 4-head slopes come first, then the extra ones"),
        (np.sort(expected),
         "right values, wrong order: the 4-head slopes come first, then the extra ones"),
        (np.log2(expected), "give the slopes themselves, not their base-2 logarithms"),
        (np.concatenate([alibi_slopes(4), alibi_slopes(8)[1::2][:2]]),
         "the extra slopes repeat 4-head ones: take every other 8-head slope starting with the "
         "FIRST (2^-1, 2^-3), the ones the 4-head slopes lack"),
        (np.concatenate([alibi_slopes(4), alibi_slopes(8)[:2]]),
         "the extra two are every other 8-head slope (2^-1, 2^-3), not the first two"),
        (2.0 ** (-8.0 * (h - 1) / _N_HEADS),
         "h starts at 1: no head has slope 2^0 = 1 (for a power of two H the first is 2^(-8/H))"),
    ]
    return grade("Exercise 6.1: ALiBi slopes for 6 heads",
                 lambda: as_float64(answer_of(answer)), expected, hints=hints,
                 rtol=answer_rtol(answer), atol=0)


def check_bias_row(answer):
    """Exercise 6.2: the paper's causal bias of head 1 of 8 (slope ``mu_1 = 1/2``) for the query at
    position ``m = 4`` over the keys ``n = 0 .. 5``, with ``-inf`` for the future key."""
    full = alibi_bias(8, _N_KEYS)
    expected = full[0, _QUERY]  # head 1 is row 0
    slope = alibi_slopes(8)[0]
    keys = np.arange(_N_KEYS)
    bloom = slope * keys
    hints = [
        (np.where(keys > _QUERY, -np.inf, bloom),
         "that is BLOOM's +mu_h n: the same weights after a causal softmax, but the paper's bias "
         "is -mu_h (m - n), zero at the query itself"),
        (bloom, "that is BLOOM's +mu_h n without the mask; the paper's bias is -mu_h (m - n), and "
                "the future key gets -inf"),
        (-expected, "the bias is a penalty: past keys get negative values, growing with distance"),
        (alibi_bias(8, _N_KEYS, causal=False)[0, _QUERY],
         "that is the symmetric encoder variant; in a causal model the future key (n = 5) gets "
         "-inf"),
        (alibi_bias(8, _N_KEYS)[-1, _QUERY],
         "that row uses head 8's slope (1/256); head 1 has the steepest slope, 1/2"),
        (full[0, _QUERY + 1], "that is the row of the query at position 5; the query is at "
                              "position m = 4, so its own key (n = 4) gets 0"),
        (full[0, _QUERY - 1], "that is the row of the query at position 3; the query is at "
                              "position m = 4, so its own key (n = 4) gets 0"),
        (np.where(keys > _QUERY, 0.0, expected),
         "the future key (n = 5) must be blocked with -inf; a bias of 0 would let the query "
         "see it"),
        (np.where(keys >= _QUERY, -np.inf, expected),
         "the query sees its own key: only n > 4 gets -inf, and n = 4 gets a bias of 0"),
        (2 * expected, "the slope of head 1 of 8 is mu_1 = 2^-1 = 1/2, so the bias is "
                       "-(m - n)/2"),
    ]
    return grade("Exercise 6.2: one row of ALiBi's causal bias",
                 lambda: as_float64(answer_of(answer)), expected, hints=hints,
                 rtol=answer_rtol(answer), atol=0)


def _paper_rule(n_heads):
    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)


def check_overtake_distance(func):
    """Exercise 6.4: ``func(n_heads, gap)`` returns, for every head ``h = 1 .. H`` (row
    ``h - 1``), the smallest whole distance ``Delta`` at which a key whose content score beats the
    query's own key by ``gap`` gets LESS attention weight than that own key.

    The key at distance ``Delta`` has the score ``gap - mu_h Delta`` relative to the own key, so it
    gets less weight when ``mu_h Delta > gap``: ``Delta_h = floor(gap / mu_h) + 1``, with ``mu_h``
    the reference code's slopes (:func:`course_utils.alibi.alibi_slopes`, compared with BLOOM's ``build_alibi_tensor``
    in notebook 06). Checked on head counts 12, 6, 20 and 8 (``_OVERTAKE_CASES``); a float32 or
    torch answer passes (the values are whole numbers, compared within 1e-6).
    """
    def concat(make):
        return np.concatenate([np.asarray(make(n, gap), dtype=np.float64)
                               for n, gap in _OVERTAKE_CASES])

    expected = concat(lambda n, gap: np.floor(gap / alibi_slopes(n)) + 1)
    hints = [
        (concat(lambda n, gap: np.ceil(gap / alibi_slopes(n))),
         "at Delta = gap / mu_h exactly the two keys tie (equal weights); the key gets LESS weight "
         "only past that: the smallest whole Delta with mu_h Delta > gap is floor(gap / mu_h) + 1"),
        (concat(lambda n, gap: np.floor(gap / alibi_slopes(n))),
         "that is the last distance at which the key still wins or ties; one more step is "
         "needed: floor(gap / mu_h) + 1"),
        (concat(lambda n, gap: gap / alibi_slopes(n)),
         "give whole distances: the smallest whole Delta with mu_h Delta > gap"),
        (concat(lambda n, gap: np.floor(gap / _paper_rule(n)) + 1),
         "right for 8 heads only: for a head count that is not a power of two the slopes are "
         "not 2^(-8h/H); take the slopes of the largest power of two not above H (H_hat), then "
         "every other slope of the (2 H_hat)-head sequence"),
        (concat(lambda n, gap: np.floor(gap / np.sort(alibi_slopes(n))[::-1]) + 1),
         "right distances in the wrong head order: the reference code appends the extra slopes "
         "after the H_hat power-of-two ones, it does not sort them"),
        (concat(lambda n, gap: np.floor(gap * alibi_slopes(n)) + 1),
         "the bias is mu_h per token of distance, so the gap is used up after gap / mu_h tokens, "
         "not gap * mu_h"),
        (concat(lambda n, gap: np.floor(np.log(2) * gap / alibi_slopes(n)) + 1),
         "compare scores, not weights in bits: the weights are exp(score), so the far key loses "
         "exactly when its score gap - mu_h Delta is below 0"),
    ]

    def compute():
        answers = []
        for n, gap in _OVERTAKE_CASES:
            result = as_float64(answer_of(func, n, gap))
            if result.shape != (n,):
                raise ValueError(f"for {n} heads the answer must have shape ({n},), one distance "
                                 f"per head, got {result.shape}")
            answers.append(result)
        return np.concatenate(answers)

    return grade("Exercise 6.4: where a head's bias outweighs a content advantage", compute,
                 expected, hints=hints, rtol=0, atol=1e-6)


def _rows():
    rng = np.random.default_rng(_ROWS_SEED)
    logits = rng.normal(size=(5, 7)) * 2.0
    logits[0, 3:] = -np.inf  # a causal row: three visible keys
    logits[1, 1:] = -np.inf  # the first query sees only itself: entropy 0
    logits[2] = 0.0  # uniform over 7 keys: entropy ln 7
    logits[4, :5] = -np.inf  # a row whose visible keys are at its end
    return softmax(logits)


def check_entropy_function(func):
    """Exercise 6.3: ``func(weights)`` returns the entropy (nats) of each row of ``weights``,
    shape ``(rows, keys)`` -> ``(rows,)``, with 0 log 0 counted as 0 (masked keys give no NaN).

    Compared within ``1e-6`` nats: an answer that adds a small epsilon inside the logarithm
    (``log(p + 1e-9)``) is right to that precision and passes."""
    weights = _rows()
    expected = attention_entropy(weights)

    def compute():
        result = as_float64(answer_of(func, weights.copy()))
        if np.isnan(result).any():
            return np.full(expected.shape, _NAN_MARK)
        return result

    hints = [
        (np.full(expected.shape, _NAN_MARK),
         "NaN: masked keys have weight 0 and 0 * log(0) = 0 * -inf is NaN in floating point; count "
         "those terms as 0 (np.where on p > 0)"),
        (expected / math.log(2), "that is in bits (log base 2); use the natural log for nats"),
        (-expected, "entropy is -sum p ln p, a non-negative number; check the sign"),
        (np.full(expected.shape, math.log(weights.shape[1])),
         "ln(n_keys) is the entropy of uniform attention only; use the weights themselves"),
        (-np.sum(weights * np.log(np.where(weights > 0, weights, 1.0)), axis=0),
         "one entropy per row: sum over the keys (the last axis), not over the rows"),
        (expected / math.log(10), "that is in decimal digits (log base 10); use the natural log"),
    ]
    return grade("Exercise 6.3: entropy of attention rows with masked keys",
                 compute, expected, hints=hints, rtol=1e-6, atol=1e-6)
