import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.relative import (
    relative_positions,
    shaw_clip,
    t5_bias,
    t5_relative_position_bucket,
    transformer_xl_terms,
)


def test_relative_positions_key_minus_query():
    np.testing.assert_array_equal(relative_positions(3), [[0, 1, 2], [-1, 0, 1], [-2, -1, 0]])
    # one query at position 4 of 5 keys (decoding with a cache)
    np.testing.assert_array_equal(relative_positions(1, 5), [[-4, -3, -2, -1, 0]])


def test_shaw_clip():
    np.testing.assert_array_equal(shaw_clip(np.arange(-5, 6), 2), [-2, -2, -2, -2, -1, 0, 1, 2, 2, 2, 2])


# 32 buckets, max_distance 128, bidirectional, key - query <= 0: bucket 8 + k starts at distance
# ceil(8 * 16 ** (k / 8)) (Hugging Face models/t5/modeling_t5.py, _relative_position_bucket).
T5_RANGES = [((-7, -1), None), ((-11, -8), 8), ((-15, -12), 9), ((-22, -16), 10), ((-31, -23), 11),
             ((-45, -32), 12), ((-63, -46), 13), ((-90, -64), 14), ((-400, -91), 15)]


@pytest.mark.parametrize("span, bucket", T5_RANGES)
def test_t5_buckets_match_the_bucket_formula(span, bucket):
    rel = np.arange(span[0], span[1] + 1)
    buckets = t5_relative_position_bucket(rel)
    expected = -rel if bucket is None else np.full_like(rel, bucket)
    np.testing.assert_array_equal(buckets, expected)


def test_t5_future_keys_use_upper_half_and_causal_folds_them_to_zero():
    rel = np.arange(1, 8)
    np.testing.assert_array_equal(t5_relative_position_bucket(rel), rel + 16)
    np.testing.assert_array_equal(t5_relative_position_bucket(rel, bidirectional=False), 0)
    # causal: 32 buckets all for the past, exact up to 15
    np.testing.assert_array_equal(t5_relative_position_bucket(-np.arange(16), bidirectional=False), np.arange(16))
    assert t5_relative_position_bucket(np.array([-10_000]), bidirectional=False)[0] == 31


@given(st.booleans(), st.sampled_from([8, 16, 32, 64]), st.sampled_from([20, 64, 128, 256]))
def test_t5_buckets_monotone_in_distance_and_saturate(bidirectional, num_buckets, max_distance):
    half = num_buckets // 2 if bidirectional else num_buckets
    if max_distance <= half // 2:
        return
    distance = np.arange(0, 3 * max_distance)
    past = t5_relative_position_bucket(-distance, bidirectional=bidirectional, num_buckets=num_buckets,
                                       max_distance=max_distance)
    assert np.all(np.diff(past) >= 0)
    assert past[0] == 0 and past.max() == half - 1
    assert np.all(past[distance >= max_distance] == half - 1)


def test_t5_bias_looks_up_the_table():
    table = np.arange(32 * 2, dtype=float).reshape(32, 2)
    bias = t5_bias(table, 4, 6)
    assert bias.shape == (2, 4, 6)
    rel = relative_positions(4, 6)
    buckets = t5_relative_position_bucket(rel)
    np.testing.assert_array_equal(bias[1], table[buckets, 1])
    # translation invariance: equal offsets get equal bias
    assert bias[0, 0, 2] == bias[0, 3, 5]


def test_transformer_xl_terms_sum_to_full_score():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 3, 5, 4))
    r = rng.normal(size=(3, 5, 5, 4))
    u, v = rng.normal(size=(2, 4))
    t = transformer_xl_terms(q, k, r, u, v)
    full = np.einsum("bid,bjd->bij", q + u, k) + np.einsum("bid,bijd->bij", q + v, r)
    np.testing.assert_allclose(t["a"] + t["b"] + t["c"] + t["d"], full, rtol=1e-12)
    # (c) does not depend on the query
    np.testing.assert_array_equal(t["c"][:, 0], t["c"][:, 4])
    assert t["a"][1, 2, 3] == pytest.approx(q[1, 2] @ k[1, 3])


@pytest.mark.parametrize("call, error, match", [
    (lambda: relative_positions(0), ValueError, "n_queries"),
    (lambda: relative_positions(3, 2), ValueError, "n_keys must be >= n_queries"),
    (lambda: shaw_clip(np.array([0.5]), 2), ValueError, "relative_position"),
    (lambda: shaw_clip(np.array([1]), -1), ValueError, "max_distance"),
    (lambda: t5_relative_position_bucket(np.array([1]), num_buckets=2), ValueError, "num_buckets"),
    (lambda: t5_relative_position_bucket(np.array([1]), max_distance=4), ValueError, "max_distance"),
    (lambda: t5_relative_position_bucket(np.array([1]), bidirectional="yes"), TypeError, "bidirectional"),
    (lambda: t5_relative_position_bucket(np.array([np.nan])), ValueError, "finite"),
    (lambda: t5_bias(np.zeros(5), 2), ValueError, "table"),
    (lambda: transformer_xl_terms(np.zeros((2, 4)), np.zeros((3, 4)), np.zeros((2, 2, 4)), np.zeros(4),
                                  np.zeros(4)), ValueError, "g must have shape"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
