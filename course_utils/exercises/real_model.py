"""Checkers for the exercises of notebook 13 (positions inside a released model).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The learner's function is called on several synthetic inputs (no model file needed), built so
that each plausible mistake gives a different answer; expected answers come from
:func:`course_utils.real_model.measures.sink_share_from_attention` and
:func:`course_utils.scaling.rope_scaling`, which the tests check by explicit loops.
"""

from __future__ import annotations

import numpy as np

from .._validate import positive_int
from ..real_model.measures import sink_share_from_attention
from ..scaling import rope_scaling
from . import answer_of, grade
from ._dtypes import as_float64, grade_by_precision, is_low_precision

__all__ = ["check_sink_shares", "check_yarn_changed_pairs", "synthetic_attention"]

# Exercise 13.1: (layers in dict order, heads, T, n_sink). Layer numbers are not 0..n-1 and
# not sorted, as when a forward pass returns the layers a reader asked for.
_SINK_CASES = [((7, 2, 11), 3, 12, 1), ((0, 29), 9, 9, 4), ((5,), 2, 16, 2), ((3, 1), 4, 6, 4)]

# Exercise 13.2: (head_dim, base, factor, original_max_position_embeddings); the first is
# SmolLM2-135M's, the second Llama 2's.
_YARN_CASES = [(64, 1e5, 2.0, 8192), (128, 1e4, 4.0, 4096), (128, 5e5, 8.0, 8192),
               (96, 1e4, 16.0, 2048)]


def synthetic_attention(layers, heads, T, *, seed=0):
    """Random causal attention weights {layer: (heads, T, T)}, rows summing to 1.

    Some heads put a large weight on the first keys (sinks of different strength), so that the
    head with the strongest sink differs between one and several sink keys."""
    try:
        if isinstance(layers, (str, bytes)):
            raise TypeError
        layers = list(layers)
    except TypeError:
        raise TypeError(f"layers must be a sequence of layer numbers, got {layers!r:.60}") from None
    layers = [positive_int(layer, "layers", allow_zero=True) for layer in layers]
    heads = positive_int(heads, "heads")
    T = positive_int(T, "T")
    if heads * T * T * max(len(layers), 1) > 10**7:
        raise ValueError(f"layers, heads and T make more than 10**7 weights: "
                         f"{len(layers)} x {heads} x {T} x {T}")
    seed = positive_int(seed, "seed", allow_zero=True)
    rng = np.random.default_rng(seed)
    causal = np.tril(np.ones((T, T), dtype=bool))
    out = {}
    for layer in layers:
        logits = rng.normal(size=(heads, T, T))
        logits[:, :, 0] += rng.uniform(0.0, 4.0, size=(heads, 1))
        logits[:, :, 1:4] += rng.uniform(0.0, 3.0, size=(heads, 1, 1))
        logits = np.where(causal, logits, -np.inf)
        weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
        out[layer] = weights / weights.sum(axis=-1, keepdims=True)
    return out


def _sink_rows(share_fn):
    """Shares for every case, layers in increasing order, joined into one flat array."""
    parts = []
    for index, (layers, heads, T, n_sink) in enumerate(_SINK_CASES):
        attention = synthetic_attention(layers, heads, T, seed=index)
        parts.append(np.asarray(share_fn(attention, n_sink), dtype=np.float64).ravel())
    return np.concatenate(parts)


def _wrong_transposed(attention, n_sink):
    return sink_share_from_attention({k: np.swapaxes(v, 1, 2) for k, v in attention.items()},
                                     n_sink)[1]


def _wrong_dict_order(attention, n_sink):
    return np.array([sink_share_from_attention({k: v}, n_sink)[1][0]
                     for k, v in attention.items()])


def check_sink_shares(func):
    """Exercise 13.1: the mean weight each head puts on the first ``n_sink`` keys.

    ``func(attention, n_sink)`` receives ``{layer: (heads, T, T)}`` (rows are queries) and
    returns an array (n_layers, heads): for layers in increasing order, the weight on keys
    ``0 .. n_sink-1`` summed, then averaged over the queries ``n_sink .. T-1``.
    """
    def right(attention, n_sink):
        return sink_share_from_attention(attention, n_sink)[1]

    expected = _sink_rows(right)
    hints = [
        (_sink_rows(lambda a, n: sink_share_from_attention(a, n, first_query=0)[1]),
         "the first n_sink queries can see only the sink keys, so their weight there is 1 "
         "whatever the head does: average over the queries n_sink .. T-1"),
        (_sink_rows(lambda a, n: sink_share_from_attention(a, 1, first_query=n)[1]),
         "that is the weight on key 0 alone: sum the weights on all of the first n_sink keys"),
        (_sink_rows(_wrong_transposed),
         "rows are queries and columns keys: the sink is the first COLUMNS of each (T, T) "
         "matrix (axis -1), averaged over the rows"),
        (_sink_rows(_wrong_dict_order),
         "give the layers in increasing order (sorted(attention)), not in the dict's order"),
        (_sink_rows(lambda a, n: np.array(
            [a[k][:, n:, :n].sum(-1).max(-1) for k in sorted(a)])),
         "that is the largest weight over queries: the share is the MEAN over queries"),
    ]

    def compute():
        answers, low = [], False
        for index, (layers, heads, T, n_sink) in enumerate(_SINK_CASES):
            attention = synthetic_attention(layers, heads, T, seed=index)
            answer = answer_of(func, attention, n_sink)
            values = as_float64(answer)
            if values.shape != (len(layers), heads):
                raise ValueError(f"for {len(layers)} layers of {heads} heads the answer should "
                                 f"have shape ({len(layers)}, {heads}), got {values.shape}")
            low = low or is_low_precision(answer)
            answers.append(values.ravel())
        return low, np.concatenate(answers)

    return grade_by_precision("Exercise 13.1: attention on the sink", compute, expected,
                              hints=hints, tol32=(1e-5, 1e-6))


def _changed(inv_a, inv_b):
    return np.flatnonzero(~np.isclose(inv_a, inv_b, rtol=1e-12, atol=0.0))


def _yarn_rows(pairs_fn):
    parts = []
    for d, base, factor, L in _YARN_CASES:
        parts += [np.asarray(pairs_fn(d, base, factor, L), dtype=np.float64).ravel(), [-1.0]]
    return np.concatenate(parts)


def _code_changed(d, base, factor, L):
    inv = base ** (-np.arange(0, d, 2) / d)
    yarn, _ = rope_scaling("yarn", d, base=base, factor=factor,
                           original_max_position_embeddings=L)
    return _changed(inv, yarn)


def check_yarn_changed_pairs(func):
    """Exercise 13.2: which pairs YaRN (transformers' code, ``beta_fast`` 32, ``beta_slow`` 1)
    gives another frequency.

    ``func(head_dim, base, factor, original_max_position_embeddings)`` returns the pair indices
    ``i`` (0-based, pair 0 the fastest) whose ``inv_freq`` changes, in increasing order.
    """
    expected = _yarn_rows(_code_changed)

    def divided_only(d, base, factor, L):  # the pairs whose frequency is divided by s in full
        inv = base ** (-np.arange(0, d, 2) / d)
        yarn, _ = rope_scaling("yarn", d, base=base, factor=factor,
                               original_max_position_embeddings=L)
        return np.flatnonzero(np.isclose(yarn, inv / factor, rtol=1e-12, atol=0.0))

    hints = [
        (_yarn_rows(lambda d, b, s, L: np.arange(d // 2)),
         "YaRN leaves the fastest pairs alone: only pairs past the low end of its ramp change"),
        (_yarn_rows(lambda d, b, s, L: _code_changed(d, b, s, L) - 1),
         "off by one: at the low end of the ramp (pair floor(dim(beta_fast))) the ramp is 0, so "
         "that pair keeps its frequency"),
        (_yarn_rows(divided_only),
         "those are only the pairs divided by the factor in full; the pairs on the ramp between "
         "the two ends change too (a blend of the two frequencies)"),
        (_yarn_rows(lambda d, b, s, L: (d // 2 - 1) - _code_changed(d, b, s, L)[::-1]),
         "pairs are counted from the fastest (pair 0, theta = 1) to the slowest, not backwards"),
    ]

    def compute():
        parts = []
        for d, base, factor, L in _YARN_CASES:
            answer = as_float64(answer_of(func, d, base, factor, L))
            if answer.ndim != 1:
                raise ValueError(f"for head_dim={d} the answer should be a 1-D list of pair "
                                 f"indices, got shape {answer.shape}")
            parts += [answer, np.array([-1.0])]
        return np.concatenate(parts)

    return grade("Exercise 13.2: pairs YaRN changes", compute, expected, hints=hints,
                 rtol=0, atol=1e-9)
