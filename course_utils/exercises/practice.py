"""Checkers for the exercises of notebook 08 (positions in practice).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from :mod:`course_utils.practice`, and for Exercise 8.4 from the
dynamic NTK frequencies of :func:`course_utils.scaling.rope_scaling`. Function exercises are
checked on several inputs (left and right padding, several document lists, keys cached before and
after the original length), so that an answer right for one case only fails.
"""

from __future__ import annotations

import numpy as np

from ..practice import packed_position_ids, position_ids_from_attention_mask
from ..scaling import rope_scaling
from . import answer_of, grade
from ._dtypes import as_float64, flatten_answers, grade_by_precision

__all__ = ["check_position_ids", "check_packed_position_ids", "check_next_positions",
           "check_stale_rotation"]

# Left-padded rows of different lengths, a row without padding, a single real token, and
# right-padded rows (where subtracting the number of pads is wrong).
_MASKS = (
    np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]]),
    np.array([[0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1]]),
    np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]),
)
_LENGTHS = ((3, 2), (1, 4, 2, 5), (6,), (2, 2, 1))

# Exercise 8.4: (m, n, head_dim, L, factor) cases: both tokens past L, a key cached before L, both
# within L (no error), a key just past L (n + 1 = L + 1: lengths off by one miss it), other sizes.
STALE_CASES = ((40, 35, 64, 32, 2.0), (95, 10, 64, 32, 2.0), (20, 5, 16, 32, 2.0),
               (60, 32, 8, 32, 8.0), (300, 200, 128, 256, 4.0))

# The batch of the next-position exercise: left-padded prompts already in the cache.
NEXT_POSITION_MASK = np.array([[0, 0, 0, 1, 1, 1],
                               [1, 1, 1, 1, 1, 1],
                               [0, 1, 1, 1, 1, 1]])


def check_position_ids(stub):
    """Exercise 8.1: ``stub(attention_mask)`` must number the real tokens of each row 0, 1, 2, ...

    Compared on the real tokens only (mask 1): what a pad gets never matters. The masks include
    right-padded rows, on which ``arange(seq) - n_pads`` (right for left padding only) fails.
    """

    def real_tokens(ids_per_mask):
        return np.concatenate([np.asarray(ids, dtype=np.float64)[m == 1]
                               for ids, m in zip(ids_per_mask, _MASKS, strict=True)])

    def compute():
        answers = []
        for m in _MASKS:
            ids = as_float64(answer_of(stub, m.copy()))
            if ids.shape != m.shape:
                raise ValueError(f"expected position ids of shape {m.shape}, got {ids.shape}")
            answers.append(ids)
        return real_tokens(answers)

    expected = real_tokens([position_ids_from_attention_mask(m) for m in _MASKS])
    hints = [
        (real_tokens([np.broadcast_to(np.arange(m.shape[1]), m.shape) for m in _MASKS]),
         "that is the naive arange: with left padding the first real token must get position 0, "
         "so count real tokens only (cumsum of the mask)"),
        (real_tokens([np.cumsum(m, axis=-1) for m in _MASKS]),
         "off by one: cumsum(mask) gives 1 for the first real token; subtract 1"),
        (real_tokens([np.arange(m.shape[1]) - (m.shape[1] - m.sum(axis=-1, keepdims=True))
                      for m in _MASKS]),
         "subtracting the number of pads is right for left padding only; in a right-padded row "
         "(1, 1, 1, 0, 0, 0) it shifts the real tokens too. Count the real tokens up to each "
         "position instead: cumsum(mask) - 1"),
        (real_tokens([np.cumsum(m, axis=0) - 1 for m in _MASKS]),
         "the cumulative sum runs along each row (axis=-1), not down the batch (axis=0)"),
    ]
    return grade("Exercise 8.1: position ids from an attention mask", compute, expected,
                 hints=hints, rtol=0, atol=0)


def check_packed_position_ids(stub):
    """Exercise 8.2: ``stub(lengths)`` must return position ids restarting at 0 per document."""

    def compute():
        answers = []
        for lengths in _LENGTHS:
            ids = as_float64(answer_of(stub, list(lengths))).ravel()
            if ids.size != sum(lengths):
                raise ValueError(f"for lengths {list(lengths)} expected {sum(lengths)} position "
                                 f"ids, got {ids.size}")
            answers.append(ids)
        return np.concatenate(answers)

    expected = np.concatenate([packed_position_ids(lengths) for lengths in _LENGTHS])
    hints = [
        (np.concatenate([np.arange(sum(lengths)) for lengths in _LENGTHS]),
         "the position ids run on across documents; each document must restart at 0"),
        (expected + 1, "off by one: each document starts at position 0, not 1"),
        (np.concatenate([np.repeat(np.arange(len(lengths)), lengths) for lengths in _LENGTHS]),
         "those are document ids (0 for the first document, 1 for the second, ...); the position "
         "ids count the tokens within each document"),
        (np.concatenate([np.concatenate([np.arange(n)[::-1] for n in lengths])
                         for lengths in _LENGTHS]),
         "each document counts down; its positions count up from 0"),
    ]
    return grade("Exercise 8.2: position ids for packed documents", compute, expected,
                 hints=hints, rtol=0, atol=0)


def check_next_positions(answer):
    """Exercise 8.3: the position id of the next generated token in each row of
    :data:`NEXT_POSITION_MASK` (left-padded prompts already in the cache).

    The new token follows the row's real tokens, so its position is the number of real tokens.
    """
    mask = NEXT_POSITION_MASK
    extended = np.concatenate([mask, np.ones((mask.shape[0], 1), dtype=mask.dtype)], axis=1)
    expected = position_ids_from_attention_mask(extended)[:, -1]
    hints = [
        (np.full(mask.shape[0], mask.shape[1]), "that is the column index of the new token; "
                                                "pads must not be counted"),
        (mask.sum(axis=-1) - 1, "that is the position of the LAST PROMPT token; the new token "
                                "comes one after it"),
        (mask.shape[1] - mask.sum(axis=-1), "that is the number of pads in each row; the new "
                                            "token's position counts the real tokens"),
        (mask.sum(axis=-1) + 1, "one too many: with 3 real tokens at positions 0, 1, 2 the next "
                                "token is at position 3"),
    ]
    return grade("Exercise 8.3: position of the next generated token",
                 lambda: as_float64(answer_of(answer)),
                 expected.astype(np.float64), hints=hints, rtol=0, atol=0)


def _dynamic_theta(head_dim, length, original, factor):
    """Dynamic NTK frequencies once the sequence holds ``length`` tokens."""
    return rope_scaling("dynamic", head_dim, factor=factor,
                        original_max_position_embeddings=original, seq_len=length)[0]


def _stale(m, n, head_dim, original, factor, *, key_length=None, query_length=None,
           multiplier=None):
    """``multiplier * (theta(key_length) - theta(query_length))`` per pair; by default the right
    answer ``n * (theta(n + 1) - theta(m + 1))``."""
    key_length = n + 1 if key_length is None else key_length
    query_length = m + 1 if query_length is None else query_length
    multiplier = n if multiplier is None else multiplier
    return multiplier * (_dynamic_theta(head_dim, key_length, original, factor)
                         - _dynamic_theta(head_dim, query_length, original, factor))


def check_stale_rotation(func):
    """Exercise 8.4: ``func(m, n, head_dim, L, factor)`` returns, per pair ``i``, the angle by which
    the cached key of position ``n`` is rotated minus the angle a fresh pass at the query's step
    would rotate it by, under dynamic NTK (base 10^4) while generating token ``m >= n``.

    The key was rotated when the sequence held ``n + 1`` tokens, by ``n theta_i(n + 1)``; a full
    pass at ``m + 1`` tokens rotates it by ``n theta_i(m + 1)``. Expected: their difference, with
    ``theta_i(l)`` from :func:`course_utils.scaling.rope_scaling` (``"dynamic"``, ``seq_len=l``),
    on the cases of :data:`STALE_CASES`.
    """
    cases = STALE_CASES
    shapes = [(c[2] // 2,) for c in cases]
    expected = np.concatenate([_stale(*c) for c in cases])

    def wrong(**kw):
        return np.concatenate([_stale(*c, **{k: f(*c) for k, f in kw.items()}) for c in cases])

    original_theta = np.concatenate([
        n * (_dynamic_theta(d, None, L, s) - _dynamic_theta(d, m + 1, L, s))
        for m, n, d, L, s in cases])
    hints = [
        (np.zeros_like(expected),
         "nothing is stale only while the sequence is within L tokens; past L the base grows "
         "at every step, and a key keeps the rotation of the step that cached it"),
        (-expected, "the sign is reversed: take the cached key's angle minus the fresh one"),
        (wrong(multiplier=lambda m, n, d, L, s: m),
         "the key's angle is its own position n times the frequency, not the query's m"),
        (wrong(multiplier=lambda m, n, d, L, s: n - m),
         "that is an error in the relative angle (n - m) theta; the stale part is the key's own "
         "rotation, n theta at the step that cached it, against n theta now"),
        (wrong(key_length=lambda m, n, d, L, s: n, query_length=lambda m, n, d, L, s: m),
         "off by one: when token p is new the sequence holds p + 1 tokens (seq_len is the "
         "largest position id + 1)"),
        (original_theta,
         "a key cached past L was already rotated with a scaled base: use theta at length n + 1, "
         "not the original theta"),
    ]

    def compute():
        answers = [answer_of(func, *case) for case in cases]
        return flatten_answers(answers, shapes)

    return grade_by_precision("Exercise 8.4: how stale is a cached key", compute, expected,
                              hints=hints, tol64=(1e-9, 1e-12), tol32=(1e-5, 1e-6))
