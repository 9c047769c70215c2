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

# Exercise 3.3: a batch with right padding (row 0) and left padding (row 1); padding id 1.
_CACHE_IDS = np.array([[0, 31414, 232, 2, 1, 1],
                       [1, 1, 0, 31414, 232, 2]])
_CACHE_PAST = 3
_CACHE_PAD = 1


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
    ]
    return grade("Exercise 3.2: a new length that keeps every old row",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def check_position_ids_with_cache(func):
    """Exercise 3.3: RoBERTa position ids for new tokens after ``past_length`` cached tokens.

    ``func(input_ids, past_length, padding_idx)`` must return
    ``(cumsum(mask) + past_length) * mask + padding_idx`` with ``mask = input_ids != padding_idx``,
    the formula of Hugging Face ``create_position_ids_from_input_ids`` in
    ``models/roberta/modeling_roberta.py``.
    """
    ids, past, pad = _CACHE_IDS, _CACHE_PAST, _CACHE_PAD
    mask = (ids != pad).astype(np.int64)
    no_cache = fairseq_position_ids(ids, padding_idx=pad)
    expected = no_cache + past * mask
    counted = np.cumsum(mask, axis=-1)
    hints = [
        (no_cache + past,
         "padding tokens must keep position padding_idx: add past_length only where the token is "
         "not padding"),
        (no_cache,
         "the cached tokens come first: every real token's position moves up by past_length"),
        ((counted + past) * mask,
         "add padding_idx: the first real token of an uncached sequence is padding_idx + 1"),
        (np.broadcast_to(np.arange(past, past + ids.shape[-1]) + pad + 1, ids.shape),
         "positions must skip padding: count only the real tokens (a cumulative sum of the mask)"),
    ]
    return grade("Exercise 3.3: RoBERTa position ids with a cache",
                 lambda: answer_of(func, ids.copy(), past, pad), expected, hints=hints,
                 rtol=0, atol=0)
