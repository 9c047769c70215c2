"""attention_entropy: entropy of attention rows, with masked (zero) weights."""

import math

import numpy as np
import pytest

from course_utils.attention import attention_entropy, softmax


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
