import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.alibi import alibi_bias, alibi_bias_bloom, alibi_slopes
from course_utils.attention import scaled_dot_product_attention, softmax


@pytest.mark.parametrize("n, exponents", [
    (8, np.arange(1, 9)),                               # 2^-1 .. 2^-8
    (16, np.arange(1, 17) / 2),                         # 2^-0.5 .. 2^-8 in steps of 0.5
    (12, np.array([1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5])),
    (1, np.array([8.0])),
    (3, np.array([4.0, 8.0, 2.0])),                     # c = 2: 2^-4, 2^-8, then 2^-2 from the 4-head list
])
def test_slopes_from_reference_sheet(n, exponents):
    np.testing.assert_allclose(alibi_slopes(n), 2.0 ** -exponents, rtol=1e-14)


def test_causal_bias_values_and_mask():
    bias = alibi_bias(8, 3)
    m = 0.5
    expected = np.array([[0, -np.inf, -np.inf], [-m, 0, -np.inf], [-2 * m, -m, 0]])
    np.testing.assert_array_equal(bias[0], expected)


def test_symmetric_variant():
    bias = alibi_bias(2, 3, causal=False)
    m = 2.0 ** -4
    np.testing.assert_allclose(bias[0], -m * np.abs(np.arange(3)[:, None] - np.arange(3)[None]))


def test_incremental_row_equals_last_row_of_full_matrix():
    full = alibi_bias(12, 40)
    np.testing.assert_array_equal(alibi_bias(12, 1, 40)[:, 0], full[:, -1])
    np.testing.assert_array_equal(alibi_bias(12, 5, 40), full[:, -5:])


@given(st.integers(1, 20), st.integers(1, 12), st.integers(0, 1000))
def test_bloom_form_equals_paper_after_causal_softmax(n, heads, seed):
    scores = np.random.default_rng(seed).normal(size=(heads, n, n))
    paper = softmax(scores + alibi_bias(heads, n))
    mask = np.tril(np.ones((n, n), dtype=bool))
    bloom = softmax(np.where(mask, scores + alibi_bias_bloom(heads, n), -np.inf))
    np.testing.assert_allclose(bloom, paper, atol=1e-12)


def test_bloom_form_cannot_express_symmetric_bias():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(4, 6, 6))
    symmetric = softmax(scores + alibi_bias(4, 6, causal=False))
    bloom = softmax(scores + alibi_bias_bloom(4, 6))
    assert np.abs(symmetric - bloom).max() > 1e-2


def test_bloom_with_left_padding_counts_real_tokens():
    mask = np.array([[0, 0, 1, 1, 1]])
    bias = alibi_bias_bloom(8, 5, attention_mask=mask)
    assert bias.shape == (1, 8, 1, 5)
    np.testing.assert_allclose(bias[0, 0, 0], 0.5 * np.array([0, 0, 0, 1, 2]))


def test_attention_with_alibi_bias_only_sees_the_past():
    q, k, v = np.random.default_rng(1).normal(size=(3, 4, 5, 8))
    _, w = scaled_dot_product_attention(q, k, v, bias=alibi_bias(4, 5))
    assert np.all(np.triu(w, 1) == 0)


@pytest.mark.parametrize("call, error, match", [
    (lambda: alibi_slopes(0), ValueError, "n_heads must be a positive integer, got 0"),
    (lambda: alibi_slopes(2.5), TypeError, "n_heads"),
    (lambda: alibi_slopes(True), TypeError, "n_heads"),
    (lambda: alibi_bias(4, 3, 2), ValueError, "n_keys must be >= n_queries"),
    (lambda: alibi_bias(4, 3, causal="no"), TypeError, "causal"),
    (lambda: alibi_bias_bloom(4, 3, attention_mask=np.array([[1, 2, 1]])), ValueError, "attention_mask"),
    (lambda: alibi_bias_bloom(4, 3, attention_mask=np.ones((1, 4))), ValueError, "attention_mask"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
