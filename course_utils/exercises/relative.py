"""Checkers for the exercises of notebook 04 (relative positions, Shaw, Transformer-XL, T5).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from T5's bucket formula or from :mod:`course_utils.relative`, never
from a typed-in number.
"""

from __future__ import annotations

import math

import numpy as np

from ..relative import t5_bias, t5_relative_position_bucket
from . import answer_of, grade

__all__ = [
    "check_offset_bucket",
    "check_causal_saturation",
    "check_decoder_step_bias",
]

_NUM_BUCKETS, _MAX_DISTANCE = 32, 128

# Exercise 4.1: a key 20 tokens before its query (Transformer-XL writes i - j = 20).
_TXL_OFFSET = 20

# Exercise 4.3: a decoding step with a cache, and a bucket table with three heads.
_STEP = 9
_N_HEADS = 3
_TABLE_SEED = 4


def check_offset_bucket(answer):
    """Exercise 4.1: T5's bucket for a key 20 tokens before the query (bidirectional, 32, 128).

    Transformer-XL's offset ``i - j = 20`` is ``key - query = -20`` in T5's convention.
    """
    expected = int(t5_relative_position_bucket(-_TXL_OFFSET))
    hints = [
        (int(t5_relative_position_bucket(_TXL_OFFSET)),
         "that is the bucket of a key 20 tokens AFTER the query: Transformer-XL's i - j is query "
         "minus key, T5 wants key minus query, so flip the sign"),
        (_TXL_OFFSET,
         "only distances below max_exact = 8 get a bucket each; beyond that the buckets grow "
         "logarithmically"),
        (int(t5_relative_position_bucket(-_TXL_OFFSET, bidirectional=False)),
         "that is the causal (decoder) bucket; an encoder's buckets are bidirectional, 16 per "
         "side"),
    ]
    return grade("Exercise 4.1: T5 bucket of a Transformer-XL offset",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def _first_distance_in_last_bucket(half, max_distance):
    """Smallest distance ``n`` with ``max_exact + floor(ln(n/max_exact)/ln(max_distance/max_exact)
    * (half - max_exact)) >= half - 1``, solved for ``n`` (T5's formula, Raffel et al. 2020)."""
    max_exact = half // 2
    return math.ceil(max_exact * (max_distance / max_exact)
                     ** ((half - 1 - max_exact) / (half - max_exact)))


def check_causal_saturation(answer):
    """Exercise 4.2: the smallest distance to a past key that lands in T5's last causal bucket.

    A causal decoder uses all 32 buckets for the past: ``max_exact = 16`` and the last bucket is 31,
    reached at ``ceil(16 * 8 ** (15/16))``.
    """
    expected = _first_distance_in_last_bucket(_NUM_BUCKETS, _MAX_DISTANCE)
    hints = [
        (_MAX_DISTANCE,
         "max_distance is where the logarithmic formula would reach bucket 32; the cap at the last "
         "bucket (31) comes earlier"),
        (_first_distance_in_last_bucket(_NUM_BUCKETS // 2, _MAX_DISTANCE),
         "that is the bidirectional answer (16 buckets per side); a causal decoder spends all 32 "
         "buckets on the past"),
        (expected - 1,
         "one too small: that distance still falls in the second-to-last bucket (round up, not "
         "down)"),
    ]
    return grade("Exercise 4.2: where T5's causal buckets saturate",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def check_decoder_step_bias(func):
    """Exercise 4.3: the T5 decoder bias of one new query at position ``step`` with a cache.

    ``func(table, step)`` must return ``(n_heads, step + 1)``: the bias row of the query at position
    ``step`` over keys ``0 .. step``, causal buckets (T5's decoder passes
    ``bidirectional = not is_decoder``).
    """
    table = np.random.default_rng(_TABLE_SEED).normal(size=(_NUM_BUCKETS, _N_HEADS))
    n_keys = _STEP + 1
    expected = t5_bias(table, 1, n_keys, bidirectional=False)[:, 0, :]
    all_bucket_zero = np.repeat(table[0][:, None], n_keys, axis=1)
    hints = [
        (t5_bias(table, 1, n_keys, bidirectional=True)[:, 0, :],
         "a decoder is causal: use bidirectional=False (T5 passes bidirectional = not is_decoder)"),
        (all_bucket_zero,
         "every key landed in bucket 0, the bucket of keys at or after the query: the new query is "
         "the LAST position (step), and relative position is key - query, negative for past keys"),
    ]
    return grade("Exercise 4.3: T5 decoder bias for one cached step",
                 lambda: answer_of(func, table.copy(), _STEP), expected, hints=hints)
