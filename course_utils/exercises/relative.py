"""Checkers for the exercises of notebook 04 (relative positions, Shaw, Transformer-XL, T5).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from T5's bucket formula or from :mod:`course_utils.relative`, never
from a typed-in number.
"""

from __future__ import annotations

import math

import numpy as np

from ..relative import t5_relative_position_bucket
from . import answer_of, grade

__all__ = [
    "check_offset_bucket",
    "check_causal_saturation",
    "check_decoder_step_bias",
]

_NUM_BUCKETS, _MAX_DISTANCE = 32, 128

# Exercise 4.1: a key 20 tokens before its query (Transformer-XL writes i - j = 20).
_TXL_OFFSET = 20

# Exercise 4.3: decoding steps with a cache, near (exact buckets only) and far (logarithmic
# buckets, and past max_distance), with bucket tables of three and two heads, so that neither
# "bucket = distance" nor "bucket = min(distance, 31)" fits every case.
_STEP_CASES = ((9, 3), (40, 3), (150, 2))
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
        (int(t5_relative_position_bucket(-_TXL_OFFSET)) + 1,
         "one too high: the logarithmic part is truncated toward zero (floor), not rounded: "
         "8 + floor(ln(20/8) / ln(16) * 8)"),
        (int(t5_relative_position_bucket(_TXL_OFFSET)) + 1,
         "that is the bucket of a key after the query, and rounded up: flip the sign "
         "(key - query = -20) and truncate the logarithm"),
    ]
    return grade("Exercise 4.1: T5 bucket of a Transformer-XL offset",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def _first_distance_in_last_bucket(half, max_distance):
    """Smallest distance ``n`` with ``max_exact + floor(ln(n/max_exact)/ln(max_distance/max_exact)
    * (half - max_exact)) >= half - 1``, solved for ``n`` (T5's formula, Raffel et al. 2020)."""
    max_exact = half // 2
    return math.ceil(max_exact * (max_distance / max_exact)
                     ** ((half - 1 - max_exact) / (half - max_exact)))


def check_causal_saturation(answer, *, max_distance=_MAX_DISTANCE):
    """Exercise 4.2: the smallest distance to a past key that lands in T5's last causal bucket.

    A causal decoder uses all 32 buckets for the past: ``max_exact = 16`` and the last bucket is 31,
    reached at ``ceil(16 * (max_distance / 16) ** (15/16))``: 113 for T5's ``max_distance = 128``,
    216 for ``max_distance = 256``.
    """
    if isinstance(max_distance, bool) or not isinstance(max_distance, (int, np.integer)) \
            or max_distance <= _NUM_BUCKETS // 2:
        raise ValueError(f"max_distance must be an integer above {_NUM_BUCKETS // 2}, "
                         f"got {max_distance!r}")
    max_distance = int(max_distance)
    expected = _first_distance_in_last_bucket(_NUM_BUCKETS, max_distance)
    exact = 16 * (max_distance / 16) ** (15 / 16)
    hints = [
        (max_distance,
         "max_distance is where the logarithmic formula would reach bucket 32; the cap at the last "
         "bucket (31) comes earlier"),
        (_first_distance_in_last_bucket(_NUM_BUCKETS // 2, max_distance),
         "that is the bidirectional answer (16 buckets per side); a causal decoder spends all 32 "
         "buckets on the past"),
        (expected - 1,
         "one too small: that distance still falls in the second-to-last bucket (round up, not "
         "down)"),
        (exact,
         "that is where the formula reaches 31 exactly; a distance is a whole number of tokens, "
         "so round up to the first integer distance at or beyond it"),
        (expected + 1, "one too large: that distance is in bucket 31, but so is the one before it"),
        (31, f"31 is the bucket, not the distance; solve 16 + ln(n/16)/ln({max_distance}/16) * 16 "
             ">= 31 for n"),
        (_first_distance_in_last_bucket(_NUM_BUCKETS, _MAX_DISTANCE),
         f"that is the answer for T5's max_distance = {_MAX_DISTANCE}; this decoder has "
         f"max_distance = {max_distance}"),
    ]
    return grade(f"Exercise 4.2: where T5's causal buckets saturate (max_distance {max_distance})",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)


def _step_cases():
    rng = np.random.default_rng(_TABLE_SEED)
    return [(rng.normal(size=(_NUM_BUCKETS, heads)), step) for step, heads in _STEP_CASES]


def _step_bias(table, step, bucket_of):
    """Bias of the query at position ``step`` over keys ``0 .. step`` with ``bucket_of(r)``."""
    r = np.arange(step + 1) - step                     # key - query: -step .. 0
    return table[np.asarray(bucket_of(r), dtype=np.int64)].T


def check_decoder_step_bias(func):
    """Exercise 4.3: the T5 decoder bias of one new query at position ``step`` with a cache.

    ``func(table, step)`` must return ``(n_heads, step + 1)``: the bias row of the query at position
    ``step`` over keys ``0 .. step``, causal buckets (T5's decoder passes
    ``bidirectional = not is_decoder``). Checked at steps 9, 40 and 150 with tables of three and
    two heads: the far keys need the logarithmic buckets and the cap at bucket 31.
    """
    cases = _step_cases()

    def causal(r):
        return t5_relative_position_bucket(r, bidirectional=False)

    expected = np.concatenate([_step_bias(t, s, causal).ravel() for t, s in cases])

    def compute():
        out = []
        for table, step in cases:
            try:
                answer = np.asarray(answer_of(func, table.copy(), step), dtype=np.float64)
            except IndexError as exc:
                raise ValueError(
                    f"an index went past the table ({exc}): a bucket index must be 0 .. 31, and "
                    "beyond distance 16 the decoder's buckets grow logarithmically, so the bucket "
                    "of a key is not its distance") from exc
            if answer.shape != (table.shape[1], step + 1):
                raise ValueError(f"for step {step} and {table.shape[1]} heads the answer must have "
                                 f"shape {(table.shape[1], step + 1)}, got {answer.shape}")
            out.append(answer.ravel())
        return np.concatenate(out)

    def wrong(bucket_of, *, flip=False):
        rows = [_step_bias(t, s, bucket_of) for t, s in cases]
        return np.concatenate([(row[:, ::-1] if flip else row).ravel() for row in rows])

    hints = [
        (wrong(lambda r: np.minimum(-r, _NUM_BUCKETS - 1)),
         "one bucket per token of distance holds only below 16; beyond that T5's buckets grow "
         "logarithmically up to max_distance 128 (use t5_relative_position_bucket with "
         "bidirectional=False)"),
        (wrong(lambda r: t5_relative_position_bucket(r, bidirectional=True)),
         "a decoder is causal: use bidirectional=False (T5 passes bidirectional = not is_decoder)"),
        (wrong(lambda r: np.zeros_like(r)),
         "every key landed in bucket 0, the bucket of keys at or after the query: the new query is "
         "the LAST position (step), and relative position is key - query, negative for past keys"),
        (wrong(causal, flip=True),
         "the keys are in reverse order: column n must hold key n, from the oldest cached key "
         "(n = 0) to the new token itself (n = step)"),
        (wrong(lambda r: t5_relative_position_bucket(r - 1, bidirectional=False)),
         "off by one: the new query sits at position step, not step + 1, and keys run "
         "0 .. step (the last key is the query itself, at distance 0)"),
    ]
    return grade("Exercise 4.3: T5 decoder bias for one cached step", compute, expected,
                 hints=hints, rtol=1e-6, atol=1e-6)
