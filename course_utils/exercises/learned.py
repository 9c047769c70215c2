"""Checkers for the exercises of notebook 03 (learned absolute position tables).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from the formulas in :mod:`course_utils.learned`, never from a typed-in
number.
"""

from __future__ import annotations

import math

import numpy as np

from ..learned import fairseq_position_ids
from . import answer_of, grade
from ._dtypes import answer_rtol, as_float64, flatten_answers, grade_by_precision

__all__ = [
    "check_roberta_table_parameters",
    "check_length_keeping_every_row",
    "check_position_ids_with_cache",
    "check_stretched_norms",
    "check_large_stretch_norm",
]

# RoBERTa-base: 512 tokens, width 768, padding_idx 1 (Liu et al. 2019; fairseq
# ``fairseq/modules/positional_embedding.py`` ``PositionalEmbedding`` adds padding_idx + 1 rows).
_ROBERTA_TOKENS, _ROBERTA_WIDTH, _ROBERTA_PAD = 512, 768, 1

# Exercise 3.2: an old table of 512 rows, resized to a length just under twice as long.
_OLD_LEN = 512

# Exercise 3.3: batches with right and left padding, under three padding ids and past lengths, so
# an answer that hard-codes RoBERTa's padding_idx = 1 or one past length does not pass.
_CACHE_CASES = (
    (np.array([[0, 31414, 232, 2, 1, 1],
               [1, 1, 0, 31414, 232, 2]]), 3, 1),
    (np.array([[5, 7, 0, 0], [0, 5, 6, 7], [9, 9, 9, 9]]), 6, 0),
    (np.array([[3, 3, 8, 2, 8, 3, 4]]), 0, 3),
)


def check_roberta_table_parameters(answer):
    """Exercise 3.1: the number of learned numbers in RoBERTa-base's position table.

    Expected: ``(512 + padding_idx + 1) * 768`` (fairseq adds ``padding_idx + 1`` rows).
    """
    rows = _ROBERTA_TOKENS + _ROBERTA_PAD + 1
    expected = rows * _ROBERTA_WIDTH
    hints = [
        (_ROBERTA_TOKENS * _ROBERTA_WIDTH,
         "that is BERT-base's table (512 rows); RoBERTa's fairseq offset adds padding_idx + 1 = 2 "
         "rows"),
        ((_ROBERTA_TOKENS + 1) * _ROBERTA_WIDTH,
         "one row short: fairseq adds padding_idx + 1 rows, and RoBERTa's padding_idx is 1"),
        (rows, "that is the number of rows; each row holds d_model = 768 learned numbers"),
        ((_ROBERTA_TOKENS + _ROBERTA_PAD + 2) * _ROBERTA_WIDTH,
         "one row too many: fairseq adds padding_idx + 1 = 2 rows, positions 0 and 1"),
        (rows * _ROBERTA_WIDTH * 4,
         "that is the size in bytes (float32); the question asks for the number of learned "
         "numbers"),
    ]
    return grade("Exercise 3.1: parameters of RoBERTa-base's position table",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def check_length_keeping_every_row(answer):
    """Exercise 3.2: the smallest ``new_max_len > 512`` whose resize keeps every old row.

    Old row ``k`` survives exactly when ``k (new - 1) / (old - 1)`` is a whole number for it, i.e.
    for every ``k`` when ``old - 1`` divides ``new - 1``. The smallest such ``new > old`` is
    ``2 (old - 1) + 1``.
    """
    # a resize from ``old`` to ``new`` rows keeps ``gcd(old - 1, new - 1) + 1`` old rows exactly
    expected = next(n for n in range(_OLD_LEN + 1, 4 * _OLD_LEN)
                    if math.gcd(_OLD_LEN - 1, n - 1) + 1 == _OLD_LEN)
    hints = [
        (2 * _OLD_LEN,
         "doubling the rows does not double the gaps: 512 rows have 511 gaps, so new_max_len - 1 "
         "must be a multiple of 511"),
        (2 * (_OLD_LEN - 1),
         "that many gaps is right, but new_max_len counts rows, which is one more than the gaps"),
        (_OLD_LEN,
         "new_max_len must be larger than the old 512"),
        *[(k * (_OLD_LEN - 1) + 1,
           f"{k * (_OLD_LEN - 1) + 1} rows keep every old row, but a smaller length does too: "
           "new_max_len - 1 must be a multiple of 511, and the smallest multiple above 511 is "
           "1022") for k in (3, 4, 5, 6, 7)],
        (_OLD_LEN + 1,
         "513 rows have 512 gaps; the old 511 gaps must divide them evenly, which 512 does not"),
    ]
    return grade("Exercise 3.2: a new length that keeps every old row",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def _ids_with_cache(ids, past, pad, *, hard_pad=None):
    """Hugging Face's formula, ``(cumsum(mask) + past) * mask + pad``; ``hard_pad`` builds the
    wrong answer that uses a fixed padding id instead of the argument."""
    use = pad if hard_pad is None else hard_pad
    mask = (ids != use).astype(np.int64)
    return (np.cumsum(mask, axis=-1) + past) * mask + use


def check_position_ids_with_cache(func):
    """Exercise 3.3: RoBERTa position ids for new tokens after ``past_length`` cached tokens.

    ``func(input_ids, past_length, padding_idx)`` must return
    ``(cumsum(mask) + past_length) * mask + padding_idx`` with ``mask = input_ids != padding_idx``,
    the formula of Hugging Face ``create_position_ids_from_input_ids`` in
    ``models/roberta/modeling_roberta.py``. It is called on three batches, with padding ids 1, 0
    and 3 and past lengths 3, 6 and 0.
    """
    cases = _CACHE_CASES
    expected = np.concatenate([_ids_with_cache(*c).ravel() for c in cases])

    def compute():
        answers = [answer_of(func, ids.copy(), past, pad) for ids, past, pad in cases]
        return np.concatenate([
            _shaped(np.asarray(a), ids.shape).ravel() for a, (ids, _, _) in zip(answers, cases, strict=True)
        ])

    def wrong(f):
        return np.concatenate([np.asarray(f(ids, past, pad)).ravel() for ids, past, pad in cases])

    hints = [
        (wrong(lambda ids, past, pad: _ids_with_cache(ids, past, pad, hard_pad=1)),
         "use the padding_idx argument: the checker also tries padding ids 0 and 3, not only "
         "RoBERTa's 1"),
        (wrong(lambda ids, past, pad: fairseq_position_ids(ids, padding_idx=pad) + past),
         "padding tokens must keep position padding_idx: add past_length only where the token is "
         "not padding"),
        (wrong(lambda ids, past, pad: fairseq_position_ids(ids, padding_idx=pad)),
         "the cached tokens come first: every real token's position moves up by past_length"),
        (wrong(lambda ids, past, pad: (np.cumsum(ids != pad, axis=-1) + past) * (ids != pad)),
         "add padding_idx: the first real token of an uncached sequence is padding_idx + 1"),
        (wrong(lambda ids, past, pad: np.broadcast_to(
            np.arange(past, past + ids.shape[-1]) + pad + 1, ids.shape)),
         "positions must skip padding: count only the real tokens (a cumulative sum of the mask)"),
        (wrong(lambda ids, past, pad: _ids_with_cache(ids, past, pad) - 1 * (ids != pad)),
         "off by one: the first real token after past_length cached ones has position "
         "padding_idx + past_length + 1"),
    ]
    return grade("Exercise 3.3: RoBERTa position ids with a cache", compute, expected,
                 hints=hints, rtol=0, atol=0)


def _shaped(answer, shape):
    if answer.shape != shape:
        raise ValueError(f"for input_ids of shape {shape} the answer must have the same shape, "
                         f"got {answer.shape}")
    return answer


# Exercise 3.4: stretches by a whole factor, by a fraction, shrinking and a short table, so that
# an answer tuned to 512 -> 1024 (or to whole factors) cannot pass.
_STRETCH_CASES = ((512, 1024), (32, 100), (10, 80), (7, 13), (40, 25))


def _stretched_norms(old_len, new_len, source):
    c = source(np.arange(new_len, dtype=np.float64), old_len, new_len)
    f = c - np.floor(c)
    return np.sqrt((1.0 - f) ** 2 + f**2)


def _aligned_corners(j, old_len, new_len):
    return j * (old_len - 1) / (new_len - 1)


def _by_lengths(j, old_len, new_len):
    return j * old_len / new_len


def _half_pixel(j, old_len, new_len):  # align_corners=False, clamped as torch clamps it
    return np.clip((j + 0.5) * old_len / new_len - 0.5, 0.0, old_len - 1)


def check_stretched_norms(stub):
    """Exercise 3.4 (a): the norm of each stretched row, for orthogonal old rows of equal norm.

    New row ``j`` reads the old table at ``c_j = j (L - 1) / (L' - 1)``; with ``l = floor(c_j)``
    and ``f = c_j - l`` it is ``(1 - f) P[l] + f P[l + 1]``, and for orthogonal rows of norm ``nu`` its
    norm is ``nu sqrt((1 - f)^2 + f^2)``. ``stub(old_len, new_len)`` returns the ratios (shape
    ``(new_len,)``); it is tried on five stretches, one of them a shrink.
    """
    expected = np.concatenate([_stretched_norms(o, n, _aligned_corners)
                               for o, n in _STRETCH_CASES])

    def compute():
        answers = [answer_of(stub, o, n) for o, n in _STRETCH_CASES]
        return flatten_answers(answers, [(n,) for _, n in _STRETCH_CASES])

    def wrong(f):
        return np.concatenate([f(o, n) for o, n in _STRETCH_CASES])

    def squared(o, n):
        return _stretched_norms(o, n, _aligned_corners) ** 2

    def by_weights(o, n):
        c = _aligned_corners(np.arange(n, dtype=np.float64), o, n)
        f = c - np.floor(c)
        return (1.0 - f) + f

    hints = [
        (wrong(squared), "that is the squared norm: for orthogonal rows the squares of the "
                         "weights add, (1 - f)^2 + f^2; take its square root"),
        (wrong(by_weights), "the weights sum to 1, but the rows are orthogonal, not parallel: "
                            "the norm of (1 - f) P[l] + f P[l + 1] is nu sqrt((1 - f)^2 + f^2)"),
        (wrong(lambda o, n: _stretched_norms(o, n, _by_lengths)),
         "the stretch maps the first row to the first and the last to the last: new row j reads "
         "old position j (L - 1) / (L' - 1), gaps over gaps, not j L / L'"),
        (wrong(lambda o, n: _stretched_norms(o, n, _half_pixel)),
         "that is the align_corners=False placement of transformers' ViT; resized() maps the first and "
         "last rows onto each other, c_j = j (L - 1) / (L' - 1)"),
        (wrong(lambda o, n: np.abs(1.0 - 2.0 * (_aligned_corners(np.arange(n, dtype=float), o, n)
                                                 % 1.0))),
         "|1 - 2f| is the difference of the weights; the norm of the blend is "
         "sqrt((1 - f)^2 + f^2)"),
    ]
    # In float32, c_j up to 511 carries an absolute error of a few 511 * 2^-24 = 3e-5, and so
    # does its fractional part f; the norm moves by at most as much.
    return grade_by_precision("Exercise 3.4 (a): norms of the stretched rows", compute,
                              expected, hints=hints, tol64=(1e-9, 1e-12), tol32=(2e-4, 2e-4))


def check_large_stretch_norm(answer):
    """Exercise 3.4 (b): the mean norm ratio of a very long stretch, in closed form.

    For a long stretch the fractions ``f`` fill ``[0, 1)`` evenly, so the mean ratio tends to
    ``integral_0^1 sqrt((1 - f)^2 + f^2) df = 1/2 + (sqrt(2)/4) ln(1 + sqrt(2)) = 0.81161``
    (substitute ``u = f - 1/2``: ``sqrt(2) sqrt(u^2 + 1/4)``, a standard integral).
    """
    expected = 0.5 + math.sqrt(2.0) / 4.0 * math.log(1.0 + math.sqrt(2.0))
    factor_two = float(np.mean(_stretched_norms(512, 1024, _aligned_corners)))
    hints = [
        (math.sqrt(2.0 / 3.0), "that is the root of the mean square, sqrt(2/3): the mean of the "
                               "norms is the integral of sqrt((1 - f)^2 + f^2), not the root of "
                               "the integral of its square"),
        (2.0 / 3.0, "2/3 is the mean squared norm; the mean norm integrates the square root"),
        (math.sqrt(0.5), "sqrt(1/2) is the norm at the midpoint f = 1/2 only, the shortest "
                         "blend; average over f in [0, 1)"),
        (1.0, "blends of orthogonal rows are shorter than the rows; average "
              "sqrt((1 - f)^2 + f^2) over f in [0, 1)"),
        (factor_two, "that is the mean for the stretch 512 -> 1024 (factor 2), where f takes "
                     "only a few values; the question asks for the limit of a very long stretch"),
    ]
    try:
        rtol = max(1e-6, answer_rtol(answer))
    except Exception:  # not attempted or malformed: grade reports it
        rtol = 1e-6
    return grade("Exercise 3.4 (b): mean norm ratio of a very long stretch",
                 lambda: as_float64(answer_of(answer)), expected, hints=hints, rtol=rtol, atol=0)
