"""Softmax and scaled dot-product attention, in numpy.

Attention here has no position information of its own: positions enter only through what the
caller adds to ``q``/``k`` (absolute encodings, RoPE) or through ``bias`` (relative biases, ALiBi).
"""

from __future__ import annotations

import numpy as np

from . import _validate as val

__all__ = ["softmax", "causal_mask", "scaled_dot_product_attention", "attention_entropy"]


def softmax(x, axis=-1):
    """Numerically stable softmax along ``axis``.

    ``softmax(x)_j = exp(x_j - max x) / sum_k exp(x_k - max x)``. Entries equal to ``-inf``
    get weight 0; a slice that is entirely ``-inf`` raises rather than returning NaN.

    Parameters
    ----------
    x : array_like of real numbers, any shape (``-inf`` allowed, NaN and ``+inf`` not).
    axis : int
        Axis to normalise over.
    """
    x = np.asarray(x)
    if x.dtype == np.bool_ or not (
        np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)
    ):
        raise TypeError(f"x must be an array of real numbers, got dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis must be an integer in [{-x.ndim}, {x.ndim - 1}], got {axis!r}")
    x = x.astype(np.result_type(x.dtype, np.float64) if np.issubdtype(x.dtype, np.integer) else x.dtype)
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("x must not contain NaN or +inf")
    x_max = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(x_max).any():
        raise ValueError("softmax over a slice that is entirely -inf (every key masked) is undefined")
    e = np.exp(x - x_max)
    return e / np.sum(e, axis=axis, keepdims=True)


def causal_mask(n_queries, n_keys=None):
    """Boolean ``(n_queries, n_keys)`` mask, True where the query at position ``m`` may attend to
    the key at position ``n``, i.e. where ``n <= m``.

    The queries are the last ``n_queries`` of the ``n_keys`` positions (as when decoding with a
    cache), so query row ``k`` sits at position ``m = n_keys - n_queries + k`` and sees the keys
    ``n = 0 .. m``.
    """
    n_queries, n_keys = val.query_key_counts(n_queries, n_keys)
    query_pos = np.arange(n_keys - n_queries, n_keys)[:, None]
    return np.arange(n_keys)[None, :] <= query_pos


def scaled_dot_product_attention(q, k, v, *, bias=None, causal=False):
    """Attention ``softmax(q k^T / sqrt(d) + bias) v``.

    Parameters
    ----------
    q : array, shape ``(..., n_queries, d)``
    k : array, shape ``(..., n_keys, d)``
    v : array, shape ``(..., n_keys, d_v)``
    bias : array broadcastable to ``(..., n_queries, n_keys)``, optional
        Added to the scaled scores before the softmax (relative biases, ALiBi).
    causal : bool
        Mask keys after each query; queries are the last ``n_queries`` key positions.

    Returns
    -------
    output : array, shape ``(..., n_queries, d_v)``
    weights : array, shape ``(..., n_queries, n_keys)``, rows summing to 1.
    """
    q = val.numeric_array(q, "q", min_ndim=2)
    k = val.numeric_array(k, "k", min_ndim=2)
    values = val.numeric_array(v, "v", min_ndim=2)
    causal = val.boolean(causal, "causal")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the last dimension d, got q {q.shape} and k {k.shape}")
    if k.shape[-2] != values.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys, got k {k.shape} and v {values.shape}")
    if q.shape[-1] == 0:
        raise ValueError("q and k must have a positive last dimension d")
    try:
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    except ValueError as exc:
        raise ValueError(
            f"leading dimensions of q {q.shape} and k {k.shape} do not broadcast"
        ) from exc
    if bias is not None:
        bias = val.numeric_array(bias, "bias", allow_neginf=True)
        try:
            scores = scores + bias
        except ValueError as exc:
            raise ValueError(
                f"bias of shape {bias.shape} does not broadcast to the scores' shape {scores.shape}"
            ) from exc
    if causal:
        mask = causal_mask(q.shape[-2], k.shape[-2])
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    try:
        output = np.matmul(weights, values)
    except ValueError as exc:
        raise ValueError(
            f"leading dimensions of the weights {weights.shape} and v {values.shape} do not broadcast"
        ) from exc
    return output, weights


def attention_entropy(weights, axis=-1):
    """Shannon entropy (in nats) of attention distributions: ``H = -sum_j p_j ln p_j``.

    Zero weights (masked keys) contribute 0, the limit of ``p ln p`` as ``p -> 0``, so a row with
    masked keys gives a number, not NaN. ``H`` is 0 for attention on one key and ``ln n`` for
    uniform attention over ``n`` keys; ``exp(H)`` reads as "how many keys the row effectively uses".

    Parameters
    ----------
    weights : array, shape ``(..., n_keys)`` (or normalised along ``axis``)
        Non-negative, summing to 1 along ``axis`` (within 1e-6), as returned by :func:`softmax`.
    axis : int
        The key axis.

    Returns
    -------
    array of ``weights``' shape without ``axis``, float64.

    References
    ----------
    Shannon 1948; Chiang & Cholak 2022, "Overcoming a Theoretical Limitation of Self-Attention"
    (attention spreads out as the sequence grows; they scale the logits by ``ln n``).
    """
    p = val.numeric_array(weights, "weights", min_ndim=1).astype(np.float64)
    is_int = isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)
    if not is_int or not -p.ndim <= axis < p.ndim:
        raise ValueError(f"axis must be an integer in [{-p.ndim}, {p.ndim - 1}], got {axis!r}")
    if np.any(p < 0):
        raise ValueError(f"weights must be non-negative, got a minimum of {float(p.min()):g}")
    totals = np.sum(p, axis=axis)
    if not np.allclose(totals, 1.0, rtol=0.0, atol=1e-6):
        worst = float(totals.flat[np.argmax(np.abs(totals - 1.0))])
        raise ValueError(f"weights must sum to 1 along axis {axis}, got a sum of {worst:g}")
    positive = p > 0
    p_log_p = np.where(positive, p * np.log(np.where(positive, p, 1.0)), 0.0)
    return -np.sum(p_log_p, axis=axis)
