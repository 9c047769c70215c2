"""Checkers for the exercises of notebook 05 (rotary position embeddings).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
Every exercise is graded against a route written here, independent of :mod:`course_utils.rope`
(a rotation loop; the reshape of ``convert_llama_weights_to_hf.py``'s ``permute``; bfloat16
rounding by a grid search), so a bug in the course's functions cannot make a right answer fail or
a copy of the bug pass. Never a typed-in number. Tolerances follow the precision of
the answer, so a right answer computed in float32 or as a torch tensor passes.
"""

from __future__ import annotations

import math

import numpy as np

from . import answer_of, grade
from ._dtypes import as_float64

__all__ = ["check_relative_score", "check_half_layout_weight", "check_merged_pairs"]

# Exercise 5.1: the score of a query and a key from their relative position alone. Cases
# (head width, relative position r = n - m, query position m used by the independent route):
# several widths, so a typed-in width fails, and negative r, so r and -r are told apart.
_SCORE_CASES = ((4, 3, 11), (8, -5, 0), (16, 100, 7), (64, -1000, 2000), (64, 7, 123))
_SCORE_SEED, _BASE = 51, 10000.0

# Exercise 5.2: query projections (n_heads, head_dim, d_model). Three shapes, so that a head_dim
# typed in for one of them fails on the others; with head_dim 4 alone the permutation would be
# its own inverse, and the inverse could not be told apart.
_WEIGHT_SHAPES = ((3, 6, 5), (2, 12, 4), (1, 18, 3))
_WEIGHT_SEED = 52

# Exercise 5.3: windows (start, count) of positions, each inside one binade [2^j, 2^(j+1)) with
# j >= 9, starting at a multiple of the bfloat16 spacing 2^(j-7) and spanning whole spacings.
_MERGE_WINDOWS = ((512, 512), (6144, 256), (8192, 1024), (40960, 1024))


def _rotate_by_loop(x, position, *, base=_BASE, exponent=2.0, pair_offset=0, layout="interleaved"):
    """RoPE by hand, one 2x2 rotation per pair: the checkers' route, independent of course_utils.rope.

    ``exponent``, ``pair_offset`` and ``layout`` let the hints build plausible wrong answers.
    """
    d = len(x)
    out = np.array(x, dtype=np.float64)
    for i in range(d // 2):
        a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d // 2)
        angle = position * base ** (-exponent * (i + pair_offset) / d)
        out[a] = x[a] * math.cos(angle) - x[b] * math.sin(angle)
        out[b] = x[a] * math.sin(angle) + x[b] * math.cos(angle)
    return out


def _score_inputs():
    rng = np.random.default_rng(_SCORE_SEED)
    return [(rng.normal(size=d), rng.normal(size=d), r, m) for d, r, m in _SCORE_CASES]


def check_relative_score(func):
    """Exercise 5.1: ``func(q, k, r)``, the RoPE score of a query and a key ``r = n - m`` apart.

    Interleaved layout, base ``10^4``, head width ``len(q)``, computed without rotating: the
    expected value comes from rotating ``q`` to a position ``m`` and ``k`` to ``m + r`` pair by
    pair (a loop over 2x2 rotations written here, not :mod:`course_utils.rope`), on five cases of
    widths 4 to 64 and relative positions -1000 to 100.
    """
    cases = _score_inputs()

    def scores(**wrong):
        return np.array([_rotate_by_loop(q, m, **wrong) @ _rotate_by_loop(k, m + r, **wrong)
                         for q, k, r, m in cases])

    def complex_sum(transform):
        out = []
        for q, k, r, _ in cases:
            d = len(q)
            eta = np.conj(q[0::2] + 1j * q[1::2]) * (k[0::2] + 1j * k[1::2])
            out.append(transform(eta * np.exp(1j * r * _BASE ** (-2 * np.arange(d // 2) / d))))
        return np.array(out)

    expected = scores()
    hints = [
        (np.array([_rotate_by_loop(q, m + r) @ _rotate_by_loop(k, m) for q, k, r, m in cases]),
         "that is the score at -r: the key is r = n - m positions after the query, so with "
         "z = x_2i + i x_2i+1 the score is Re sum_i conj(z_q,i) z_k,i exp(+i r theta_i)"),
        (scores(exponent=1.0), "the exponent is 2i/d (pair i sits at channel 2i), not i/d"),
        (scores(exponent=-2.0),
         "theta_i = base^(-2i/d) shrinks with i: the first pair turns fastest (1 radian per "
         "position)"),
        (scores(pair_offset=1),
         "pair indices start at 0: pair 0 has theta_0 = 1 radian per position"),
        (scores(layout="half"),
         "those pairs are channels i and i + d/2 (the half layout); in the interleaved layout "
         "pair i is the neighbouring channels 2i and 2i + 1"),
        (complex_sum(lambda terms: np.abs(terms.sum())),
         "that is the size of the complex sum; the score is its real part"),
        (complex_sum(lambda terms: np.abs(terms).sum()),
         "that sums the sizes of the pairs' terms (a bound on the score); the score is the real "
         "part of the sum"),
        (np.array([q @ k for q, k, _, _ in cases]),
         "that is q.k without RoPE: the score must change with r"),
    ]

    def compute():
        answers = [answer_of(func, q.copy(), k.copy(), r) for q, k, r, _ in cases]
        values = [as_float64(a) for a in answers]
        for value, (q, _, r, _) in zip(values, cases, strict=True):
            if value.shape != ():
                raise ValueError(f"for q of length {len(q)} and r = {r} the answer must be one "
                                 f"number, got shape {value.shape}")
        return np.array([float(v) for v in values])

    return grade("Exercise 5.1: the RoPE score from r = n - m alone", compute, expected,
                 hints=hints, rtol=1e-5, atol=1e-6)


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

    # convert_llama_weights_to_hf.py's permute, written here: view(n_heads, head_dim // 2, 2,
    # dim).transpose(1, 2), independent of course_utils.rope.
    expected = concat(lambda w, h, hd: w.reshape(h, hd // 2, 2, -1).transpose(0, 2, 1, 3)
                      .reshape(w.shape))
    first_head_dim = _WEIGHT_SHAPES[0][1]

    def half(hd):
        return np.concatenate([np.arange(0, hd, 2), np.arange(1, hd, 2)])

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


def _bfloat16_by_grid(values):
    """Round each value to the nearest bfloat16 number, ties to the even one, by searching its
    binade's 129 grid points 2^j (1 + l/128): the checker's route, independent of the bit trick in
    :func:`course_utils.rope.round_to_bfloat16`."""
    values = np.asarray(values, dtype=np.float64)
    low = 2.0 ** np.floor(np.log2(values))
    grid = low[:, None] * (1 + np.arange(129) / 128)
    distance = np.abs(grid - values[:, None])
    nearest = distance == distance.min(axis=1, keepdims=True)
    # At a tie two grid points are nearest: keep the one with even l.
    even = nearest & (np.arange(129) % 2 == 0)
    pick = np.where(nearest.sum(axis=1) > 1, np.argmax(even, axis=1), np.argmax(nearest, axis=1))
    return grid[np.arange(len(values)), pick]


def _merged_by_rounding(start, count):
    """How many pairs (m - 1, m), m = start .. start + count - 1, round to the same bfloat16."""
    rounded = _bfloat16_by_grid(np.arange(start - 1, start + count, dtype=np.float64))
    return int(np.sum(rounded[1:] == rounded[:-1]))


def check_merged_pairs(func):
    """Exercise 5.3: ``func(start, count)``, the neighbour pairs pair 0 merges in bfloat16.

    Expected: the number of ``m = start .. start + count - 1`` whose angle ``m theta_0 = m``,
    rounded to bfloat16, equals that of ``m - 1``, counted by rounding every position to its
    nearest bfloat16 number by a grid search (ties to even). Four windows, each inside one binade
    ``[2^j, 2^(j+1))`` (j = 9, 12, 13, 15), starting at a multiple of the spacing ``2^(j-7)``.
    """
    windows = _MERGE_WINDOWS
    expected = np.array([_merged_by_rounding(start, count) for start, count in windows],
                        dtype=np.float64)

    def by_spacing(n_bit, *, j_shift=0, separated=False):
        out = []
        for start, count in windows:
            spacing = 2.0 ** (math.floor(math.log2(start)) + j_shift - n_bit + 1)
            out.append(count / spacing if separated else count - count / spacing)
        return np.array(out)

    hints = [
        (by_spacing(9), "bfloat16 stores 7 mantissa bits; with the implicit leading 1 that makes "
                        "8 significant bits, so the spacing is 2^(j-7)"),
        (by_spacing(11), "that uses float16's spacing (11 significant bits); bfloat16 has only 8"),
        (by_spacing(24), "that uses float32's spacing (24 significant bits); bfloat16 has only 8"),
        (by_spacing(8, j_shift=1),
         "each window lies in [2^j, 2^(j+1)) with j = floor(log2(start)), not the next power"),
        (by_spacing(8, separated=True),
         "that counts the pairs that stay apart (one per spacing); the exercise asks for the "
         "pairs that merge"),
        (np.array([float(count) for _, count in windows]),
         "not every pair merges: where a rounding boundary falls between m - 1 and m, once per "
         "spacing, the two stay apart"),
    ]

    def compute():
        answers = [as_float64(answer_of(func, start, count)) for start, count in windows]
        for answer, (start, count) in zip(answers, windows, strict=True):
            if answer.shape != ():
                raise ValueError(f"for start={start}, count={count} the answer must be one "
                                 f"number, got shape {answer.shape}")
        return np.array([float(a) for a in answers])

    return grade("Exercise 5.3: neighbours merged by bfloat16 angles", compute, expected,
                 hints=hints, rtol=0, atol=1e-9)
