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
from ._dtypes import as_float64, grade_by_precision, is_low_precision

__all__ = [
    "check_offset_bucket",
    "check_saturation_distance",
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
         "that is the bucket of a key 20 tokens AFTER the query: Transformer-XL's i - j (the paper's letters) is query "
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
    """Smallest distance ``Delta`` with ``max_exact + ln(Delta/max_exact)/ln(max_distance/max_exact)
    * (half - max_exact) >= half - 1``, ``max_exact = half // 2``, solved for ``Delta`` (T5's
    formula, Raffel et al. 2020)."""
    max_exact = half // 2
    return math.ceil(max_exact * (max_distance / max_exact)
                     ** ((half - 1 - max_exact) / (half - max_exact)))


def _saturation_by_search(num_buckets, max_distance, bidirectional):
    """The first distance back whose bucket is its side's last, found by running the bucket
    function on every distance up to ``max_distance`` (the last bucket starts before it)."""
    last = (num_buckets // 2 if bidirectional else num_buckets) - 1
    buckets = t5_relative_position_bucket(-np.arange(max_distance + 1),
                                          bidirectional=bidirectional, num_buckets=num_buckets,
                                          max_distance=max_distance)
    return int(np.argmax(buckets == last))


# Exercise 4.2: (num_buckets, max_distance, bidirectional): T5's encoder and decoder, wider and
# narrower variants, and (16, 64, True), where the last bucket starts at 4 * 16^(3/4) = 32
# exactly, so that "floor + 1" and "ceil" give different answers there.
_SATURATION_CASES = ((32, 128, True), (32, 128, False), (32, 256, False), (64, 256, True),
                     (16, 64, True), (16, 50, False), (128, 1024, True))


def _half(num_buckets, bidirectional):
    return num_buckets // 2 if bidirectional else num_buckets


def _start_of_last(num_buckets, max_distance, bidirectional):
    """Where the logarithmic formula reaches the last bucket, before rounding."""
    half = _half(num_buckets, bidirectional)
    exact = half // 2
    return exact * (max_distance / exact) ** ((half - 1 - exact) / (half - exact))


def check_saturation_distance(func):
    """Exercise 4.2: ``func(num_buckets, max_distance, bidirectional)`` returns the smallest
    distance ``|r|`` of a key before the query that lands in the last bucket of its side.

    The answer is ``ceil(n_e (D / n_e) ** ((G' - 1 - n_e) / (G' - n_e)))`` with ``G' = G / 2``
    (bidirectional) or ``G`` (causal) and ``n_e = G' / 2``: 91 and 113 for T5's encoder and
    decoder. Checked on seven settings; the expected values come from running
    :func:`course_utils.relative.t5_relative_position_bucket` on every distance (the tests compare
    them with Hugging Face's ``T5Attention._relative_position_bucket``). Integer, float32 and
    torch answers are accepted; a distance is a whole number, so the tolerance is zero.
    """
    cases = _SATURATION_CASES
    expected = np.array([_saturation_by_search(*case) for case in cases], dtype=np.float64)

    def per_case(rule):
        return np.array([rule(*case) for case in cases], dtype=np.float64)

    def compute():
        out, low = [], False
        for b, d, bi in cases:
            answer = answer_of(func, b, d, bi)
            value = as_float64(answer)
            if value.size != 1:
                raise ValueError(f"for num_buckets={b}, max_distance={d}, bidirectional={bi} "
                                 f"the answer must be one number (a distance), got shape "
                                 f"{value.shape}")
            low = low or is_low_precision(answer)
            out.append(float(value.reshape(())))
        return low, np.array(out)

    start = per_case(_start_of_last)
    hints = [
        (per_case(lambda b, d, bi: d),
         "max_distance is where the logarithmic formula would reach the bucket AFTER the last "
         "one; the cap at the last bucket comes earlier (T5's 'up to 128' is 91 in the code)"),
        (np.floor(start) + 1,
         "right except where the start is a whole number: with 16 buckets, max_distance 64, "
         "bidirectional, 4 * 16^(3/4) = 32 exactly and distance 32 is already in the last "
         "bucket, so floor + 1 is one too large: round up with ceil"),
        (np.floor(start),
         "one too small: that distance is still in the second-to-last bucket; round up"),
        (np.round(start),
         "rounding to the nearest integer can land below the start; round up"),
        (start,
         "that is where the formula reaches the last bucket exactly; a distance is a whole "
         "number of tokens, so round up"),
        (per_case(lambda b, d, bi: _first_distance_in_last_bucket(b, d)),
         "a bidirectional layer has only half the buckets per side: G' = num_buckets // 2 "
         "when bidirectional is True"),
        (per_case(lambda b, d, bi: _first_distance_in_last_bucket(b // 2, d)),
         "a causal (decoder) layer spends all its buckets on the past: G' = num_buckets when "
         "bidirectional is False"),
        (per_case(lambda b, d, bi: _half(b, bi) - 1),
         "that is the index of the last bucket; the question asks for the distance where it "
         "starts"),
        (per_case(lambda b, d, bi: math.ceil(_half(b, bi) // 2 * (d / (_half(b, bi) // 2))
                                             ** ((_half(b, bi) - 1) / _half(b, bi)))),
         "the logarithmic buckets are the G' - n_e buckets after the n_e exact ones: the "
         "exponent is (G' - 1 - n_e) / (G' - n_e)"),
        (np.full(len(cases), 91.0),
         "91 is T5's encoder only; the answer depends on num_buckets, max_distance and "
         "bidirectional"),
    ]
    return grade_by_precision("Exercise 4.2: where T5's buckets saturate, for any setting",
                              compute, expected, hints=hints, tol64=(0.0, 0.0),
                              tol32=(0.0, 0.0))


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
