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

__all__ = [
    "check_roberta_table_parameters",
    "check_length_keeping_every_row",
    "check_position_ids_with_cache",
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
