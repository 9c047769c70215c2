"""Checkers for the exercises of notebook 09 (the length-generalisation lab).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers are computed by a route other than the one the exercise asks for: RoPE's
transpose from the explicit rotation matrix, the softmax gradient from the full Jacobian, the
T5 buckets from :func:`course_utils.relative.t5_relative_position_bucket`, the interval of RoPE
bases by bisection on a direct count of the wavelengths (not the closed form the exercise asks
for).
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax
from ..relative import t5_relative_position_bucket
from ..rope import apply_rope, rope_inv_freq, rope_rotation_matrix
from . import answer_of, grade
from ._dtypes import as_float64, flatten_answers, grade_by_precision, is_low_precision

__all__ = ["check_rope_backward", "check_softmax_backward", "check_buckets_reached",
           "check_base_interval"]

# Exercise 9.4: (head_dim, L, k) settings: the lab's head, Llama 2's, and three others.
BASE_INTERVAL_SETTINGS = ((8, 16, 3), (128, 4096, 46), (64, 2048, 20), (16, 100, 5),
                          (128, 8192, 40))

# Exercise 9.1: the gradient through RoPE for a (heads, seq, head_dim) array.
_ROPE_SHAPE, _ROPE_SEED = (2, 5, 8), 91

# Exercise 9.2: the gradient through a softmax over rows of 6 scores.
_SOFTMAX_SHAPE, _SOFTMAX_SEED = (3, 6), 92

# Exercise 9.3: (train_length, num_buckets, max_distance) settings to count trained buckets at.
# The last three have logarithmic buckets that skip ids (12 distinct ids up to 14 in the first), so
# "the largest bucket + 1" is not the count there.
_BUCKET_SETTINGS = ((16, 32, 128), (16, 16, 16), (64, 32, 128), (512, 32, 128), (40, 8, 20),
                    (12, 16, 12), (24, 32, 24), (20, 12, 10))


def check_rope_backward(func):
    """Exercise 9.1: ``func(dy, positions)`` returns ``dL/dx`` for ``y = apply_rope(x, positions)``.

    With ``layout="half"`` and base 10^4. Expected: ``R_m^T dy`` at every position ``m``, with
    ``R_m`` from :func:`course_utils.rope.rope_rotation_matrix`.
    """
    rng = np.random.default_rng(_ROPE_SEED)
    dy = rng.normal(size=_ROPE_SHAPE)
    positions = np.arange(3, 3 + _ROPE_SHAPE[1])
    head_dim = _ROPE_SHAPE[-1]
    rotations = np.stack([rope_rotation_matrix(m, head_dim, layout="half") for m in positions])
    expected = np.einsum("sji,hsj->hsi", rotations, dy)  # R_m^T dy
    hints = [
        (apply_rope(dy, positions, layout="half"),
         "that rotates the gradient forward by +m theta again; the transpose of a rotation is the "
         "rotation by the negative angle"),
        (dy, "RoPE is not the identity: the gradient has to be rotated back to x's frame"),
        (apply_rope(dy, -positions, layout="interleaved"),
         "right idea, wrong channel pairs: the forward pass used layout='half'"),
    ]
    return grade_by_precision("Exercise 9.1: the gradient through RoPE",
                              lambda: _with_precision(answer_of(func, dy.copy(), positions.copy())),
                              expected, hints=hints)


def check_softmax_backward(func):
    """Exercise 9.2: ``func(weights, dweights)`` returns ``dL/dscores`` for ``weights = softmax(scores)``.

    Expected: ``J^T dweights`` row by row with the full Jacobian ``J = diag(a) - a a^T``.
    """
    rng = np.random.default_rng(_SOFTMAX_SEED)
    scores = rng.normal(size=_SOFTMAX_SHAPE)
    dweights = rng.normal(size=_SOFTMAX_SHAPE)
    weights = softmax(scores, axis=-1)
    jacobians = np.stack([np.diag(a) - np.outer(a, a) for a in weights])
    expected = np.einsum("rji,rj->ri", jacobians, dweights)
    hints = [
        (weights * dweights,
         "that keeps only the direct path; every score also changes every weight through the "
         "normaliser sum_j exp(e_j), which subtracts sum_n' a_n' dA_n'"),
        (weights * (1 - weights) * dweights,
         "that is only the diagonal of the Jacobian (da_j/de_j); the off-diagonal terms "
         "-a_n a_n' matter too"),
        (dweights - np.sum(weights * dweights, axis=-1, keepdims=True),
         "almost: multiply by the weights a_i as well"),
    ]
    return grade_by_precision("Exercise 9.2: the gradient through a softmax",
                              lambda: _with_precision(answer_of(func, weights.copy(),
                                                                dweights.copy())),
                              expected, hints=hints)


def _with_precision(answer):
    """``(low_precision, float64 array)``: float32 answers are graded at float32 tolerances."""
    return is_low_precision(answer), as_float64(answer)


def _buckets(train_length, num_buckets, max_distance):
    distances = np.arange(train_length)
    return t5_relative_position_bucket(-distances, bidirectional=False,
                                       num_buckets=num_buckets, max_distance=max_distance)


def _reached(train_length, num_buckets, max_distance):
    return len(np.unique(_buckets(train_length, num_buckets, max_distance)))


def _largest(train_length, num_buckets, max_distance):
    return int(_buckets(train_length, num_buckets, max_distance).max())


def check_buckets_reached(func):
    """Exercise 9.3: ``func(train_length, num_buckets, max_distance)`` counts the causal T5 buckets
    that training at ``train_length`` ever uses (and so ever updates).

    A causal sequence of ``L`` tokens has distances ``0 .. L - 1``. Expected: the number of distinct
    :func:`course_utils.relative.t5_relative_position_bucket` values over those distances
    (``bidirectional=False``), at several settings.
    """
    expected = np.array([_reached(*s) for s in _BUCKET_SETTINGS], dtype=np.float64)
    all_buckets = np.array([s[1] for s in _BUCKET_SETTINGS], dtype=np.float64)
    lengths = np.array([min(s[0], s[1]) for s in _BUCKET_SETTINGS], dtype=np.float64)
    largest_plus_one = np.array([_largest(*s) + 1 for s in _BUCKET_SETTINGS], dtype=np.float64)
    hints = [
        (largest_plus_one,
         "the largest bucket + 1 counts ids that no distance reaches: where logarithmic buckets "
         "are wider than one distance apart they skip ids; count the distinct ids"),
        (all_buckets,
         "not every bucket is reached: a length-L sequence has distances 0 .. L-1 only, and the "
         "larger buckets start far beyond that"),
        (lengths,
         "distances beyond num_buckets/2 share logarithmically wider buckets: count distinct "
         "bucket ids, not distances"),
    ]

    def answers():
        return np.array([answer_of(func, *s) for s in _BUCKET_SETTINGS], dtype=np.float64)

    return grade("Exercise 9.3: T5 buckets that training ever reaches", answers, expected,
                 hints=hints, rtol=0.0, atol=1e-9)


def _pairs_turning(base, head_dim, length):
    """Pairs whose wavelength 2 pi b^(2i/d) is at most ``length``, counted one by one."""
    return int(np.sum(2 * np.pi / rope_inv_freq(head_dim, base=base) <= length))


def _base_interval_by_search(head_dim, length, k):
    """(low, high]: the bases at which exactly ``k`` pairs turn within ``length`` tokens, found by
    bisection on the count (a route other than the closed form the exercise asks for)."""

    def edge(count):  # the largest base at which at least `count` pairs turn
        lo, hi = 1.0 + 1e-12, 1e30
        for _ in range(400):
            mid = np.sqrt(lo * hi)
            lo, hi = (mid, hi) if _pairs_turning(mid, head_dim, length) >= count else (lo, mid)
        return lo

    return np.array([edge(k + 1), edge(k)])


def check_base_interval(func):
    """Exercise 9.4: ``func(head_dim, L, k)`` returns ``(low, high)``: exactly ``k`` of the
    ``head_dim / 2`` RoPE pairs complete a turn within ``L`` tokens (``lambda_i <= L``) if and only
    if ``low < b <= high``.

    Expected: the interval found by bisection on a direct count of the wavelengths, at the
    settings of :data:`BASE_INTERVAL_SETTINGS` (``2 <= k <= head_dim / 2 - 1``).
    """
    settings = BASE_INTERVAL_SETTINGS
    expected = np.concatenate([_base_interval_by_search(*s) for s in settings])

    def closed(exponent_low, exponent_high, unit=2 * np.pi):
        return np.concatenate([[(L / unit) ** exponent_low(d, k), (L / unit) ** exponent_high(d, k)]
                               for d, L, k in settings])

    hints = [
        (closed(lambda d, k: d / (2 * (k + 1)), lambda d, k: d / (2 * k)),
         "that interval gives k + 1 turning pairs: pairs are counted from i = 0, so exactly k "
         "turn when pair k - 1 turns and pair k does not"),
        (closed(lambda d, k: d / (2 * k), lambda d, k: d / (2 * (k - 1)), unit=1.0),
         "the wavelength is 2 pi / theta_i = 2 pi b^(2i/d), not b^(2i/d): compare with L / 2 pi"),
        (closed(lambda d, k: d / (2 * (k - 1)), lambda d, k: d / (2 * k)),
         "low and high are swapped: a larger base slows every pair, so fewer pairs turn"),
        (closed(lambda d, k: d / k, lambda d, k: d / (k - 1)),
         "theta_i = b^(-2i/d): the exponent of the bound is d / (2i), not d / i"),
    ]

    def compute():
        answers = [answer_of(func, *s) for s in settings]
        return flatten_answers(answers, [(2,)] * len(settings))

    return grade_by_precision("Exercise 9.4: the bases at which n_turn pairs turn", compute,
                              expected, hints=hints, tol64=(1e-7, 0.0), tol32=(1e-5, 0.0))
