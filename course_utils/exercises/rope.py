"""Checkers for the exercises of notebook 05 (rotary position embeddings).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from RoPE's frequency formula, from floating-point arithmetic rules or
from :mod:`course_utils.rope`, never from a typed-in number. Tolerances follow the precision of
the answer, so a right answer computed in float32 or as a torch tensor passes.
"""

from __future__ import annotations

import math

import numpy as np

from ..rope import interleaved_to_half_permutation, permute_qk_weight_for_half_layout, rope_inv_freq
from . import answer_of, grade
from ._dtypes import answer_rtol, as_float64

__all__ = ["check_angles", "check_half_layout_weight", "check_bfloat16_spacing"]

# Exercise 5.1: the angles of every pair at one position.
_HEAD_DIM, _POSITION, _BASE = 16, 100, 10000.0

# Exercise 5.2: query projections (n_heads, head_dim, d_model). Three shapes, so that a head_dim
# typed in for one of them fails on the others; with head_dim 4 alone the permutation would be
# its own inverse, and the inverse could not be told apart.
_WEIGHT_SHAPES = ((3, 6, 5), (2, 12, 4), (1, 18, 3))
_WEIGHT_SEED = 52

# Exercise 5.3: the spacing of bfloat16 numbers near a position.
_NEAR = 40000


def check_angles(answer):
    """Exercise 5.1: the angle ``m * theta_i`` of every pair at ``m = 100``, ``head_dim = 16``.

    Expected: ``100 * base^(-2i/16)`` for ``i = 0 .. 7``, in radians. A float32 or torch answer
    is compared at float32's precision.
    """
    expected = _POSITION * rope_inv_freq(_HEAD_DIM, base=_BASE)
    i = np.arange(_HEAD_DIM // 2)
    hints = [
        (_POSITION * _BASE ** (-i / _HEAD_DIM),
         "the exponent is 2i/d (pair i sits at channel 2i), not i/d"),
        (_POSITION * _BASE ** (2 * i / _HEAD_DIM),
         "theta_i = base^(-2i/d) shrinks with i: the first pair turns fastest (1 radian per "
         "position)"),
        (np.degrees(expected), "angles in radians, please, not degrees"),
        (expected[::-1], "right angles in reverse order: pair 0 comes first, and it has turned "
                         "the most (theta_0 = 1 radian per position)"),
        (np.concatenate([expected, expected]),
         "one angle per pair (8 numbers); Hugging Face's cat(freqs, freqs) repeats them for the "
         "half layout's channels"),
        (_POSITION * _BASE ** (-2 * (i + 1) / _HEAD_DIM),
         "pair indices start at 0: pair 0 has theta_0 = 1 and has turned by exactly 100 radians"),
        ((_POSITION - 1) * rope_inv_freq(_HEAD_DIM, base=_BASE),
         "that is position 99; the angle at position m = 100 is 100 * theta_i"),
        (np.mod(expected, 2 * np.pi),
         "those are the angles reduced modulo 2 pi: the same rotation, but the exercise asks for "
         "the angle m * theta_i itself"),
    ]
    return grade("Exercise 5.1: RoPE angles at position 100",
                 lambda: as_float64(answer_of(answer)), expected, hints=hints,
                 rtol=answer_rtol(answer), atol=1e-12)


def _reorder_blocks(weight, block, order):
    """Reorder the rows of ``weight`` within consecutive blocks of ``block`` rows by ``order``."""
    starts = np.arange(weight.shape[0] // block)[:, None] * block
    return weight[(starts + order[None, :]).reshape(-1)]


def _weights():
    rng = np.random.default_rng(_WEIGHT_SEED)
    return [(rng.normal(size=(n_heads * head_dim, d_model)), n_heads, head_dim)
            for n_heads, head_dim, d_model in _WEIGHT_SHAPES]


def check_half_layout_weight(func):
    """Exercise 5.2: reorder a query/key projection's rows from the interleaved to the half layout.

    ``func(weight, n_heads)`` receives a ``(n_heads * head_dim, d_model)`` weight and must return it
    with the rows of each head in the order even channels, then odd channels (as
    ``convert_llama_weights_to_hf.py`` ``permute`` does). Checked on three shapes:
    ``(n_heads, head_dim, d_model)`` = (3, 6, 5), (2, 12, 4), (1, 18, 3).
    """
    weights = _weights()

    def concat(make):
        return np.concatenate([np.ravel(make(w, h, hd)) for w, h, hd in weights])

    expected = concat(lambda w, h, hd: permute_qk_weight_for_half_layout(w, h))
    first_head_dim = _WEIGHT_SHAPES[0][1]

    def half(hd):
        return interleaved_to_half_permutation(hd)

    hints = [
        (concat(lambda w, h, hd: w[half(w.shape[0])]),
         "that reorders all rows at once; each head has its own rotary channels, so reorder "
         "within each head (block of head_dim rows)"),
        (concat(lambda w, h, hd: _reorder_blocks(w, hd, np.argsort(half(hd)))),
         "that is the inverse permutation (half layout back to interleaved): row j of the result "
         "should be the head's row perm[j], with perm = even channels then odd channels"),
        (concat(lambda w, h, hd: _reorder_blocks(w, hd, np.roll(half(hd), hd // 2))),
         "odd channels come first in your answer; the half layout takes the even channels "
         "(0, 2, 4, ...) first, then the odd ones"),
        (concat(lambda w, h, hd: _reorder_blocks(w, first_head_dim, half(first_head_dim))),
         f"right for the first weight (head_dim {first_head_dim}) but not for the others: "
         "compute head_dim = weight.shape[0] // n_heads instead of typing a number in"),
        (concat(lambda w, h, hd: w),
         "the rows are unchanged; the half layout needs even channels first, then odd"),
    ]

    def compute():
        answers = []
        for w, h, _ in weights:
            result = as_float64(answer_of(func, w.copy(), h))
            if result.shape != w.shape:
                raise ValueError(f"for a weight of shape {w.shape} and n_heads={h} the result "
                                 f"must have the same shape, got {result.shape}")
            answers.append(result.ravel())
        return np.concatenate(answers)

    return grade("Exercise 5.2: convert a query projection to the half layout",
                 compute, expected, hints=hints, rtol=1e-6, atol=0)


def check_bfloat16_spacing(answer):
    """Exercise 5.3: the gap between consecutive bfloat16 numbers near position 40000.

    A format with ``n_bit`` significant bits spaces numbers in ``[2^j, 2^(j+1))`` by
    ``2^(j - n_bit + 1)``; bfloat16 has ``n_bit = 8`` (7 stored bits plus the implicit leading 1).
    """
    j = math.floor(math.log2(_NEAR))
    expected = 2.0 ** (j - 8 + 1)
    hints = [
        (2.0 ** (j - 8), "bfloat16 stores 7 mantissa bits; with the implicit leading 1 that makes "
                         "8 significant bits, so the gap is 2^(j-7)"),
        (2.0 ** (j - 11 + 1), "that is float16's gap (11 significant bits); bfloat16 has only 8"),
        (2.0 ** (j - 24 + 1), "that is float32's gap (24 significant bits); bfloat16 has only 8"),
        (2.0 ** (j + 1 - 8 + 1), "40000 lies in [2^15, 2^16): use j = 15"),
        (2.0 ** (-8 + 1), "that is the relative gap 2^(1-n_bit); near 40000 multiply it by 2^15, the "
                          "power of two at or below 40000"),
    ]
    return grade("Exercise 5.3: bfloat16 spacing near position 40000",
                 lambda: as_float64(answer_of(answer)), expected, hints=hints, rtol=0, atol=0)
