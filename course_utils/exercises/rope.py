"""Checkers for the exercises of notebook 05 (rotary position embeddings).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from RoPE's frequency formula, from floating-point arithmetic rules or
from :mod:`course_utils.rope`, never from a typed-in number.
"""

from __future__ import annotations

import math

import numpy as np

from ..rope import interleaved_to_half_permutation, permute_qk_weight_for_half_layout, rope_inv_freq
from . import answer_of, grade

__all__ = ["check_angles", "check_half_layout_weight", "check_bfloat16_spacing"]

# Exercise 5.1: the angles of every pair at one position.
_HEAD_DIM, _POSITION, _BASE = 16, 100, 10000.0

# Exercise 5.2: a query projection with three heads of head_dim 6, d_model 5 (with head_dim 4 the
# permutation would be its own inverse, and the inverse could not be told apart).
_N_HEADS, _HEAD_DIM_W, _D_MODEL, _WEIGHT_SEED = 3, 6, 5, 52

# Exercise 5.3: the spacing of bfloat16 numbers near a position.
_NEAR = 40000


def check_angles(answer):
    """Exercise 5.1: the angle ``m * theta_i`` of every pair at ``m = 100``, ``head_dim = 16``.

    Expected: ``100 * base^(-2i/16)`` for ``i = 0 .. 7``, in radians.
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
        (np.concatenate([expected, expected]),
         "one angle per pair (8 numbers); Hugging Face's cat(freqs, freqs) repeats them for the "
         "half layout's channels"),
    ]
    return grade("Exercise 5.1: RoPE angles at position 100",
                 lambda: answer_of(answer), expected, hints=hints, rtol=1e-9, atol=1e-12)


def check_half_layout_weight(func):
    """Exercise 5.2: reorder a query/key projection's rows from the interleaved to the half layout.

    ``func(weight, n_heads)`` receives a ``(n_heads * head_dim, d_model)`` weight and must return it
    with the rows of each head in the order even channels, then odd channels (as
    ``convert_llama_weights_to_hf.py`` ``permute`` does).
    """
    rng = np.random.default_rng(_WEIGHT_SEED)
    weight = rng.normal(size=(_N_HEADS * _HEAD_DIM_W, _D_MODEL))
    expected = permute_qk_weight_for_half_layout(weight, _N_HEADS)
    perm = interleaved_to_half_permutation(_HEAD_DIM_W)
    heads = np.arange(_N_HEADS)[:, None] * _HEAD_DIM_W
    inverse_rows = (heads + np.argsort(perm)[None, :]).reshape(-1)
    hints = [
        (weight[interleaved_to_half_permutation(_N_HEADS * _HEAD_DIM_W)],
         "that reorders all rows at once; each head has its own rotary channels, so reorder "
         "within each head (block of head_dim rows)"),
        (weight[inverse_rows],
         "that is the inverse permutation (half layout back to interleaved): row r of the result "
         "should be the head's row perm[r], with perm = even channels then odd channels"),
        (weight, "the rows are unchanged; the half layout needs even channels first, then odd"),
    ]
    return grade("Exercise 5.2: convert a query projection to the half layout",
                 lambda: answer_of(func, weight.copy(), _N_HEADS), expected, hints=hints)


def check_bfloat16_spacing(answer):
    """Exercise 5.3: the gap between consecutive bfloat16 numbers near position 40000.

    A format with ``p`` significant bits spaces numbers in ``[2^k, 2^(k+1))`` by ``2^(k - p + 1)``;
    bfloat16 has ``p = 8`` (7 stored bits plus the implicit leading 1).
    """
    k = math.floor(math.log2(_NEAR))
    expected = 2.0 ** (k - 8 + 1)
    hints = [
        (2.0 ** (k - 8), "bfloat16 stores 7 mantissa bits; with the implicit leading 1 that makes "
                         "8 significant bits, so the gap is 2^(k-7)"),
        (2.0 ** (k - 11 + 1), "that is float16's gap (11 significant bits); bfloat16 has only 8"),
        (2.0 ** (k - 24 + 1), "that is float32's gap (24 significant bits); bfloat16 has only 8"),
        (2.0 ** (k + 1 - 8 + 1), "40000 lies in [2^15, 2^16): use k = 15"),
    ]
    return grade("Exercise 5.3: bfloat16 spacing near position 40000",
                 lambda: answer_of(answer), expected, hints=hints, rtol=0, atol=0)
