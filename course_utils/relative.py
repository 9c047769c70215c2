"""Relative positions: Shaw et al. clipping, Transformer-XL's decomposition, T5's buckets.

Sign convention of this course (its notation page): for a query at position ``m`` and a key at
position ``n``, the relative position is ``r = n - m``, key minus query (T5's
``memory_position - query_position``, Shaw et al.'s ``j - i`` with ``i`` the query). A key in the
past has ``r < 0``. Transformer-XL, DeBERTa and ALiBi write query minus key, ``m - n = -r``;
multiply by -1 to convert.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate as val

__all__ = [
    "relative_positions",
    "shaw_clip",
    "transformer_xl_terms",
    "t5_relative_position_bucket",
    "t5_bias",
]


def relative_positions(n_queries, n_keys=None):
    """Matrix of ``r = n - m`` (key position minus query position), shape ``(n_queries, n_keys)``.

    The queries are the last ``n_queries`` of the ``n_keys`` positions (with ``n_keys=None``,
    ``n_keys = n_queries``), as when the queries of a decoding step attend to a cache: query row ``k``
    sits at position ``m = n_keys - n_queries + k``.
    """
    n_queries, n_keys = val.query_key_counts(n_queries, n_keys)
    query_pos = np.arange(n_keys - n_queries, n_keys)
    return np.arange(n_keys)[None, :] - query_pos[:, None]


def shaw_clip(relative_position, max_distance):
    """Clip relative positions to ``[-max_distance, max_distance]`` (Shaw et al. 2018, eq. 5).

    Each of the ``2 * max_distance + 1`` clipped values indexes one learned vector (add
    ``max_distance`` for a 0-based row index). Returns an int64 array of the input's shape.
    """
    rel = val.numeric_array(relative_position, "relative_position", integer=True)
    max_distance = val.positive_int(max_distance, "max_distance", allow_zero=True)
    return np.clip(rel, -max_distance, max_distance).astype(np.int64)


def transformer_xl_terms(q, k, g, u, v):
    """Transformer-XL's four score terms (Dai et al. 2019, section 3.3).

    ``A[m, n] = (a) q_m.k_n + (b) q_m.g_mn + (c) u.k_n + (d) v.g_mn`` where ``g_mn`` is the
    projected relative encoding ``W_R R_{m-n}`` (Transformer-XL indexes ``R`` by query minus key,
    ``m - n = -r``) and ``u``, ``v`` are learned vectors shared by all positions. The sum equals
    ``(q_m + u).k_n + (q_m + v).g_mn``; divided by ``sqrt(d)`` it is the score ``e_mn``.

    Parameters
    ----------
    q : ``(..., n_queries, d)``; k : ``(..., n_keys, d)``; g : ``(..., n_queries, n_keys, d)``;
    u, v : ``(d,)``.

    Returns
    -------
    dict with keys ``"a"``, ``"b"``, ``"c"``, ``"d"``, each ``(..., n_queries, n_keys)``.
    """
    q = val.numeric_array(q, "q", min_ndim=2)
    k = val.numeric_array(k, "k", min_ndim=2)
    g = val.numeric_array(g, "g", min_ndim=3)
    u = val.numeric_array(u, "u")
    v = val.numeric_array(v, "v")
    d = q.shape[-1]
    if k.shape[-1] != d or g.shape[-1] != d or u.shape != (d,) or v.shape != (d,):
        raise ValueError(
            f"q, k, g must share the last dimension d and u, v must have shape (d,); got q {q.shape}, "
            f"k {k.shape}, g {g.shape}, u {u.shape}, v {v.shape}"
        )
    if g.shape[-3:-1] != (q.shape[-2], k.shape[-2]):
        raise ValueError(
            f"g must have shape (..., n_queries, n_keys, d) = (..., {q.shape[-2]}, {k.shape[-2]}, {d}), "
            f"got {g.shape}"
        )
    a = q @ np.swapaxes(k, -1, -2)
    return {
        "a": a,
        "b": np.einsum("...id,...ijd->...ij", q, g),
        "c": np.broadcast_to((k @ u)[..., None, :], a.shape).copy(),
        "d": g @ v,
    }


def t5_relative_position_bucket(relative_position, *, bidirectional=True, num_buckets=32,
                                max_distance=128):
    """T5's bucket index for each relative position ``r = n - m`` (key minus query).

    Distances below ``max_exact = num_buckets' // 2`` get a bucket each; larger ones share
    logarithmically wider buckets up to ``max_distance``; beyond that the last bucket. With
    ``bidirectional=True`` half the buckets are for keys after the query (``+num_buckets/2``);
    with ``bidirectional=False`` keys after the query all fall in bucket 0.

    The logarithm is taken in float32 and truncated toward zero, as T5 does, so the integers are
    identical to T5's. With the defaults the last bucket starts at distance 91, not 128.

    Returns an int64 array of the input's shape.

    References
    ----------
    Raffel et al. 2020; Hugging Face ``models/t5/modeling_t5.py``
    ``T5Attention._relative_position_bucket``; Mesh TensorFlow ``_relative_position_bucket``.
    """
    rel = val.numeric_array(relative_position, "relative_position", integer=True)
    rel = rel.astype(np.int64, copy=False)
    bidirectional = val.boolean(bidirectional, "bidirectional")
    num_buckets = val.positive_int(num_buckets, "num_buckets")
    max_distance = val.positive_int(max_distance, "max_distance")
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    if max_exact < 1:
        raise ValueError(
            f"num_buckets must be >= {4 if bidirectional else 2} (bidirectional={bidirectional}), "
            f"got {num_buckets}"
        )
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must exceed the exact range ({max_exact}) for num_buckets={num_buckets}, "
            f"got {max_distance}"
        )
    # A matrix of relative positions repeats a few values many times (an n x n matrix holds 2n - 1
    # distinct ones), so bucket each value in its range once and look the matrix up in that table.
    if rel.size > 64:
        lowest, highest = int(rel.min()), int(rel.max())
        if highest - lowest < rel.size // 4:
            table = _t5_bucket(np.arange(lowest, highest + 1), bidirectional, half, max_exact,
                               max_distance)
            return table[rel - lowest]
    return _t5_bucket(rel, bidirectional, half, max_exact, max_distance)


def _t5_bucket(rel, bidirectional, half, max_exact, max_distance):
    """The bucket formula of :func:`t5_relative_position_bucket`, elementwise on int64 ``rel``."""
    buckets = np.zeros(rel.shape, dtype=np.int64)
    if bidirectional:
        buckets += (rel > 0).astype(np.int64) * half
        distance = np.abs(rel)
    else:
        distance = -np.minimum(rel, 0)
    is_small = distance < max_exact
    # float32 throughout, like torch's .float() in the reference; max(.., 1) only avoids log(0)
    # in entries that the np.where below discards.
    ratio = np.maximum(distance, 1).astype(np.float32) / np.float32(max_exact)
    scaled = (np.log(ratio) / np.float32(math.log(max_distance / max_exact))
              * np.float32(half - max_exact))
    if_large = max_exact + scaled.astype(np.int64)
    if_large = np.minimum(if_large, half - 1)
    return buckets + np.where(is_small, distance, if_large)


def t5_bias(table, n_queries, n_keys=None, *, bidirectional=True, max_distance=128):
    """Per-head attention bias from a T5 bucket table.

    ``bias[h, m, n] = table[bucket(n - m), h]`` with ``table`` of shape ``(num_buckets, n_heads)``
    (T5's ``relative_attention_bias.weight``). Returns ``(n_heads, n_queries, n_keys)``. T5 adds it
    to the raw ``q.k`` scores (no ``1/sqrt(d)`` scaling in T5). One table serves every layer of a
    stack (only block 0 holds it), so each layer sees the same flat bias beyond ``max_distance``;
    later layers can still respond to longer offsets by combining what earlier layers gathered
    locally (Raffel et al. 2020, section 2.1).
    """
    table = val.numeric_array(table, "table")
    bidirectional = val.boolean(bidirectional, "bidirectional")
    min_buckets = 4 if bidirectional else 2  # at least one exact bucket per direction
    if table.ndim != 2 or table.shape[0] < min_buckets or table.shape[1] < 1:
        raise ValueError(
            f"table must have shape (num_buckets, n_heads) with num_buckets >= {min_buckets} "
            f"(bidirectional={bidirectional}) and n_heads >= 1, got {table.shape}"
        )
    rel = relative_positions(n_queries, n_keys)
    buckets = t5_relative_position_bucket(rel, bidirectional=bidirectional,
                                          num_buckets=table.shape[0], max_distance=max_distance)
    return np.moveaxis(table[buckets], -1, 0)
