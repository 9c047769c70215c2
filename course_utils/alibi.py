"""ALiBi: attention with linear biases (Press et al. 2022).

No position vector is added to the tokens. Each head ``h`` adds ``-mu_h * (m - n)`` to the score of
query ``m`` and key ``n <= m``: a penalty that grows linearly with distance, with a head-specific
slope ``mu_h`` (the paper's ``m``): a geometric sequence when the number of heads is a power of
two, the reference code's interleaving of two such sequences otherwise. Notation as on the
course's notation page: query position ``m``, key position ``n``, relative position ``r = n - m``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate as val

__all__ = ["alibi_slopes", "alibi_bias", "alibi_bias_bloom"]


def _power_of_two_slopes(n):
    # mu_h = 2^(-8h/n), h = 1..n: start 2^(-8/n), ratio 2^(-8/n).
    return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)


def alibi_slopes(n_heads):
    """Head slopes ``a_1 .. a_H`` as the reference code computes them, shape ``(n_heads,)``.

    For ``H`` a power of two, ``mu_h = 2^(-8h/H)``, the paper's rule. The paper states that rule for
    every ``H``; the reference code departs from it otherwise: with ``c`` the largest power of two
    below ``H``, the ``c`` slopes for ``c`` heads, then every other slope of the ``2c``-head
    sequence (``2^(-0.5 * 8/c)``, ``2^(-1.5 * 8/c)``, ...) until there are ``H``.

    References
    ----------
    Press et al. 2022, section 3 (the rule); ofirpress/attention_with_linear_biases
    ``fairseq/models/transformer.py`` ``get_slopes`` (the rule for other head counts); Hugging Face
    ``models/bloom/modeling_bloom.py`` ``build_alibi_tensor`` (the same slopes in closed form).
    """
    n_heads = val.positive_int(n_heads, "n_heads")
    closest = 2 ** int(math.floor(math.log2(n_heads)))
    if closest == n_heads:
        return _power_of_two_slopes(n_heads)
    extra = _power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]
    return np.concatenate([_power_of_two_slopes(closest), extra])


def alibi_bias(n_heads, n_queries, n_keys=None, *, causal=True):
    """ALiBi bias, shape ``(n_heads, n_queries, n_keys)``, to add to the attention scores.

    The queries are the last ``n_queries`` of the ``n_keys`` positions (decoding with a cache):
    query row ``k`` sits at position ``m = n_keys - n_queries + k``.

    * ``causal=True`` (the paper, decoders): ``-mu_h (m - n)`` for key ``n <= m`` and ``-inf`` for
      ``n > m``, so the causal mask is part of the bias.
    * ``causal=False`` (a symmetric encoder variant): ``-mu_h |m - n|`` everywhere.
    """
    slopes = alibi_slopes(n_heads)
    n_queries, n_keys = val.query_key_counts(n_queries, n_keys)
    causal = val.boolean(causal, "causal")
    # One (n_queries, n_keys) table of distances m - n, shared by every head; the output is then
    # written in a single pass. Causal: a key after the query gets distance +inf, so -mu_h * inf is
    # the -inf of the mask (every slope is positive).
    query_pos = np.arange(n_keys - n_queries, n_keys, dtype=np.float64)
    distance = np.subtract.outer(query_pos, np.arange(n_keys, dtype=np.float64))  # m - n
    if causal:
        np.copyto(distance, np.inf, where=distance < 0)
    else:
        np.abs(distance, out=distance)
    return np.multiply.outer(-slopes, distance)


def alibi_bias_bloom(n_heads, n_keys, *, attention_mask=None):
    """BLOOM's form of the bias: ``+mu_h * n`` for key ``n``, the same for every query.

    Shape ``(n_heads, 1, n_keys)``, or ``(batch, n_heads, 1, n_keys)`` with an ``attention_mask``
    of shape ``(batch, n_keys)`` (1 for real tokens, 0 for padding), in which case ``n`` counts real
    tokens only: ``n = (cumsum(mask) - 1) * mask``.

    Under a causal mask this equals the paper's ``-mu_h (m - n)`` after the softmax, because the
    two differ by ``-mu_h m``, a constant across each query's row. It does not give the symmetric
    ``-mu_h |m - n|``.

    References
    ----------
    Hugging Face ``models/bloom/modeling_bloom.py`` ``build_alibi_tensor``.
    """
    slopes = alibi_slopes(n_heads)
    n_keys = val.positive_int(n_keys, "n_keys")
    if attention_mask is None:
        return (slopes[:, None] * np.arange(n_keys)[None, :])[:, None, :]
    mask = val.numeric_array(attention_mask, "attention_mask", integer=True)
    if mask.ndim != 2 or mask.shape[1] != n_keys or not np.isin(mask, (0, 1)).all():
        raise ValueError(
            f"attention_mask must be a (batch, n_keys={n_keys}) array of 0s and 1s, got shape {mask.shape}"
        )
    key_index = (np.cumsum(mask, axis=-1) - 1) * mask  # (batch, n_keys)
    return slopes[None, :, None, None] * key_index[:, None, None, :]
