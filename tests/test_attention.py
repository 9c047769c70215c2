import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.attention import attention_entropy, causal_mask, scaled_dot_product_attention, softmax


def test_softmax_known_values():
    # softmax([0, ln 2]) = [1, 2] / 3
    np.testing.assert_allclose(softmax(np.array([0.0, math.log(2.0)])), [1 / 3, 2 / 3], rtol=1e-15)


def test_softmax_is_stable_for_large_logits():
    out = softmax(np.array([1000.0, 1000.0 + math.log(3.0)]))
    np.testing.assert_allclose(out, [0.25, 0.75], rtol=1e-12)


def test_softmax_masked_entries_get_zero_and_all_masked_raises():
    out = softmax(np.array([[0.0, -np.inf, 0.0]]))
    np.testing.assert_array_equal(out, [[0.5, 0.0, 0.5]])
    with pytest.raises(ValueError, match="entirely -inf"):
        softmax(np.array([-np.inf, -np.inf]))


@pytest.mark.parametrize("bad, error", [(np.array([np.nan]), ValueError), (np.array(["a"]), TypeError),
                                        (np.float64(1.0), ValueError)])
def test_softmax_rejects_bad_input(bad, error):
    with pytest.raises(error):
        softmax(bad)


def test_softmax_rejects_bad_axis():
    with pytest.raises(ValueError, match="axis"):
        softmax(np.zeros((2, 3)), axis=2)


def test_causal_mask_with_cache():
    # 2 queries at positions 2, 3 of 4 keys.
    expected = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(causal_mask(2, 4), expected)
    with pytest.raises(ValueError, match="n_keys must be >= n_queries"):
        causal_mask(3, 2)


def test_attention_matches_the_formula_on_a_hand_example():
    q = np.array([[1.0, 0.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([[10.0], [20.0]])
    out, w = scaled_dot_product_attention(q, k, v)
    s = 1 / math.sqrt(2)
    w0 = math.exp(s) / (math.exp(s) + 1.0)
    np.testing.assert_allclose(w, [[w0, 1 - w0]], rtol=1e-14)
    np.testing.assert_allclose(out, [[10 * w0 + 20 * (1 - w0)]], rtol=1e-14)


def test_attention_causal_first_query_sees_only_itself_and_bias_is_added():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4, 8))
    out, w = scaled_dot_product_attention(q, k, v, causal=True)
    np.testing.assert_allclose(out[0], v[0], rtol=1e-14)
    assert np.all(np.triu(w, 1) == 0)
    bias = np.zeros((4, 4))
    bias[:, 0] = 1e9  # a huge bias on key 0 sends all attention there
    out_b, w_b = scaled_dot_product_attention(q, k, v, bias=bias)
    np.testing.assert_allclose(w_b[:, 0], 1.0)


@given(st.integers(1, 6), st.integers(0, 10_000))
def test_attention_without_positions_is_permutation_equivariant(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    wq, wk, wv = rng.normal(size=(3, 4, 4))
    perm = rng.permutation(n)
    out, _ = scaled_dot_product_attention(x @ wq, x @ wk, x @ wv)
    out_p, _ = scaled_dot_product_attention(x[perm] @ wq, x[perm] @ wk, x[perm] @ wv)
    np.testing.assert_allclose(out_p, out[perm], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("q, k, v, kwargs, match", [
    (np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((2, 1)), {}, "last dimension"),
    (np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((5, 1)), {}, "same number of keys"),
    (np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 1)), {"bias": np.zeros((3, 3))}, "bias of shape"),
    (np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 1)), {"causal": 1}, "causal"),
    (np.zeros(3), np.zeros((2, 3)), np.zeros((2, 1)), {}, "q must have at least 2"),
    (np.zeros((3, 2, 3)), np.zeros((2, 2, 3)), np.zeros((2, 2, 1)), {}, "do not broadcast"),
])
def test_attention_validation(q, k, v, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        scaled_dot_product_attention(q, k, v, **kwargs)


# attention_entropy: entropy of attention rows, with masked (zero) weights.


def test_uniform_and_one_hot():
    for n in (1, 2, 7, 1000):
        assert attention_entropy(np.full(n, 1.0 / n)) == pytest.approx(math.log(n), rel=1e-12)
    assert attention_entropy(np.eye(5)[2]) == 0.0


def test_zero_weights_give_no_nan():
    weights = softmax(np.array([[0.0, 0.0, -np.inf, -np.inf], [1.0, -np.inf, -np.inf, -np.inf]]))
    out = attention_entropy(weights)
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, [math.log(2), 0.0], atol=1e-15)


def test_two_point_formula_and_axis():
    p = 0.2
    expected = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    weights = np.array([[p, 1 - p], [0.5, 0.5]])
    np.testing.assert_allclose(attention_entropy(weights), [expected, math.log(2)], rtol=1e-12)
    np.testing.assert_allclose(attention_entropy(weights.T, axis=0), [expected, math.log(2)],
                               rtol=1e-12)
    assert attention_entropy(np.ones((3, 4, 5)) / 5).shape == (3, 4)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: attention_entropy([0.5, 0.6]), ValueError, "must sum to 1"),
        (lambda: attention_entropy([1.5, -0.5]), ValueError, "non-negative"),
        (lambda: attention_entropy([0.5, 0.5], axis=1), ValueError, "axis must be"),
        (lambda: attention_entropy(0.5), ValueError, "at least 1 dimension"),
        (lambda: attention_entropy(["a"]), TypeError, "weights must be an array"),
    ],
)
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
