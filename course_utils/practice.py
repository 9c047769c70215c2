"""Position bookkeeping in practice: position ids from masks, packed sequences, and a KV cache.

A model never sees "positions" directly; it sees the ``position_ids`` and the attention mask the
calling code builds. This module builds them the way production code does:

* :func:`position_ids_from_attention_mask`: left-padded batches, as Hugging Face ``generate`` does.
* :func:`packed_position_ids`, :func:`packed_document_ids`, :func:`block_diagonal_mask`,
  :func:`document_starts_from_position_ids`: several documents packed into one row.
* :func:`padding_causal_mask`, :func:`mask_to_bias`: boolean masks and the additive bias form.
* :class:`KVCache`: keys and values kept from earlier steps of generation.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val

__all__ = [
    "position_ids_from_attention_mask",
    "packed_position_ids",
    "packed_document_ids",
    "block_diagonal_mask",
    "document_starts_from_position_ids",
    "padding_causal_mask",
    "mask_to_bias",
    "KVCache",
]


def _binary_mask(attention_mask, arg="attention_mask"):
    mask = val.numeric_array(attention_mask, arg, integer=True)
    if mask.ndim != 2 or mask.shape[1] == 0 or not np.isin(mask, (0, 1)).all():
        raise ValueError(
            f"{arg} must be a (batch, seq) array of 0s and 1s (1 = real token), got shape "
            f"{mask.shape}"
        )
    return mask.astype(np.int64)


def position_ids_from_attention_mask(attention_mask, *, pad_position=0):
    """Position ids that count real tokens only: ``cumsum(mask) - 1``, pads set to ``pad_position``.

    For a left-padded row ``[0, 0, 1, 1, 1]`` this gives ``[p, p, 0, 1, 2]`` (``p = pad_position``),
    so the first real token is at position 0 whatever the padding. The value at a pad never
    matters when the pad is masked out as a key and its output is discarded.

    Parameters
    ----------
    attention_mask : array_like of 0/1, shape ``(batch, seq)``
        1 for a real token, 0 for padding.
    pad_position : int >= 0
        Value written at pads. Hugging Face ``generate`` writes 0 in
        ``GenerationMixin._prepare_position_ids_for_generation`` (``generation/utils.py``); the
        ``prepare_inputs_for_generation`` methods of earlier versions wrote 1.

    Returns
    -------
    int64 array, shape ``(batch, seq)``.

    References
    ----------
    Hugging Face ``generation/utils.py``: ``position_ids = attention_mask.long().cumsum(-1) - 1``
    then ``masked_fill(attention_mask == 0, 0)``.
    """
    mask = _binary_mask(attention_mask)
    pad_position = val.positive_int(pad_position, "pad_position", allow_zero=True)
    return np.where(mask == 1, np.cumsum(mask, axis=-1) - 1, pad_position)


def _lengths(lengths):
    lengths = val.numeric_array(lengths, "lengths", integer=True)
    if lengths.ndim != 1 or lengths.size == 0 or np.any(lengths <= 0):
        raise ValueError(
            f"lengths must be a non-empty 1-D list of positive integers (one per document), got "
            f"{lengths.tolist() if lengths.size < 20 else lengths.shape}"
        )
    # numpy's index type (int32 on 32-bit and WebAssembly builds): np.repeat takes no other.
    return lengths.astype(np.intp)


def packed_position_ids(lengths):
    """Position ids for documents packed into one row: ``0 .. n_k - 1`` for each document ``k``.

    ``[3, 2]`` gives ``[0, 1, 2, 0, 1]``: token ``t`` gets ``t - start(t)``, where ``start`` is the
    offset of the document it belongs to.

    Parameters
    ----------
    lengths : 1-D array_like of positive ints, the document lengths in packing order.

    Returns
    -------
    int64 array, shape ``(sum(lengths),)``.

    References
    ----------
    Hugging Face ``data/data_collator.py`` ``DataCollatorWithFlattening`` (``return_position_ids``).
    """
    lengths = _lengths(lengths)
    starts = np.cumsum(lengths) - lengths
    positions = np.arange(int(lengths.sum()), dtype=np.int64)
    return positions - np.repeat(starts, lengths)


def packed_document_ids(lengths):
    """Which document each packed token belongs to: ``[3, 2]`` gives ``[0, 0, 0, 1, 1]``.

    Returns an int64 array of shape ``(sum(lengths),)``.
    """
    lengths = _lengths(lengths)
    return np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)


def block_diagonal_mask(lengths, *, causal=True):
    """Boolean ``(n, n)`` mask for packed documents: a query sees keys of its own document only.

    ``allowed[i, j] = doc(i) == doc(j)`` and, if ``causal``, ``j <= i``. Each document then attends
    exactly as it would alone.

    Parameters
    ----------
    lengths : 1-D array_like of positive ints
    causal : bool

    Returns
    -------
    bool array, shape ``(sum(lengths), sum(lengths))``.

    References
    ----------
    Hugging Face ``modeling_flash_attention_utils.py`` (variable-length attention over
    ``cu_seq_lens``); Krell et al. 2021, "Efficient Sequence Packing without Cross-contamination".
    """
    causal = val.boolean(causal, "causal")
    doc = packed_document_ids(lengths)
    allowed = doc[:, None] == doc[None, :]
    if causal:
        allowed &= np.arange(doc.size)[None, :] <= np.arange(doc.size)[:, None]
    return allowed


def document_starts_from_position_ids(position_ids):
    """Recover document boundaries from packed position ids, as transformers 5.23's flash path does.

    A document starts wherever the position id equals the row's smallest id (0 for position ids
    that restart per document; RoBERTa-like ids restart at ``padding_idx + 1``). transformers 5.23
    compares with ``position_ids.min()``; earlier versions compared with 0. Returns the cumulative
    boundaries ``[start_0, start_1, ..., n]`` (``cu_seq_lens``). Position ids that never restart
    give a single document ``[0, n]``.

    Parameters
    ----------
    position_ids : 1-D array_like of ints, shape ``(n,)``

    Returns
    -------
    int64 array, shape ``(n_documents + 1,)``.

    References
    ----------
    Hugging Face ``modeling_flash_attention_utils.py`` ``prepare_fa_kwargs_from_position_ids``.
    """
    ids = val.numeric_array(position_ids, "position_ids", integer=True)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(f"position_ids must be a non-empty 1-D array, got shape {ids.shape}")
    starts = np.flatnonzero(ids == ids.min())
    return np.append(starts, ids.size).astype(np.int64)


def padding_causal_mask(attention_mask, *, n_queries=None):
    """Boolean ``(batch, n_queries, n_keys)`` mask combining causality with key padding.

    ``allowed[b, r, j] = mask[b, j] == 1 and j <= i`` where query row ``r`` sits at key index
    ``i = n_keys - n_queries + r`` (the queries are the last ``n_queries`` columns, as when
    decoding with a cache). A query at a pad that precedes every real token would see no key at
    all; such rows are allowed their own position only, so the softmax stays defined. Their
    outputs are meaningless and must be discarded.

    Parameters
    ----------
    attention_mask : array_like of 0/1, shape ``(batch, n_keys)``
    n_queries : int, optional
        Default ``n_keys``.

    Returns
    -------
    bool array, shape ``(batch, n_queries, n_keys)``.
    """
    mask = _binary_mask(attention_mask).astype(bool)
    n_keys = mask.shape[1]
    n_queries = n_keys if n_queries is None else val.positive_int(n_queries, "n_queries")
    if n_queries > n_keys:
        raise ValueError(
            f"n_queries must be <= the mask's length n_keys={n_keys}, got {n_queries}"
        )
    query_index = np.arange(n_keys - n_queries, n_keys)
    causal = np.arange(n_keys)[None, :] <= query_index[:, None]
    allowed = causal[None] & mask[:, None, :]
    empty = ~allowed.any(axis=-1, keepdims=True)
    own = np.arange(n_keys)[None, :] == query_index[:, None]
    return allowed | (empty & own[None])


def mask_to_bias(allowed):
    """Additive attention bias from a boolean mask: 0 where allowed, ``-inf`` elsewhere.

    Pass it as ``bias=`` to :func:`course_utils.attention.scaled_dot_product_attention` (with
    ``causal=False``: the mask already says what each query may see). Returns float64 of
    ``allowed``'s shape.
    """
    allowed = np.asarray(allowed)
    if allowed.dtype != np.bool_:
        raise TypeError(f"allowed must be a boolean array, got dtype {allowed.dtype}")
    return np.where(allowed, 0.0, -np.inf)


class KVCache:
    """The keys and values of the tokens processed so far, for one attention layer.

    :meth:`append` adds new keys and values along the sequence axis (``-2``) and returns all of
    them, so a new query attends to every earlier token without recomputing it. What is cached is
    whatever the caller passes: Hugging Face caches keys after RoPE has rotated them
    (``models/llama/modeling_llama.py``: ``apply_rotary_pos_emb`` runs before
    ``past_key_values.update``), so a cached key keeps the rotation it was given when cached.

    Attributes
    ----------
    keys, values : array of shape ``(..., length, d)`` or None before the first append.

    References
    ----------
    Hugging Face ``cache_utils.py`` ``DynamicCache.update``.
    """

    def __init__(self):
        self.keys = None
        self.values = None

    @property
    def length(self):
        """Number of cached tokens (0 before the first append)."""
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, keys, values):
        """Add ``keys`` ``(..., n_new, d)`` and ``values`` ``(..., n_new, d_v)``; return all cached.

        Returns
        -------
        (keys, values) : all cached keys ``(..., length, d)`` and values ``(..., length, d_v)``.
        """
        keys = val.numeric_array(keys, "keys", min_ndim=2).astype(np.float64)
        values = val.numeric_array(values, "values", min_ndim=2).astype(np.float64)
        if keys.shape[:-1] != values.shape[:-1]:
            raise ValueError(
                f"keys and values must share their leading and sequence axes, got keys "
                f"{keys.shape} and values {values.shape}"
            )
        if self.keys is not None and (keys.shape[:-2] != self.keys.shape[:-2]
                                      or keys.shape[-1] != self.keys.shape[-1]
                                      or values.shape[-1] != self.values.shape[-1]):
            raise ValueError(
                f"new keys {keys.shape} / values {values.shape} do not match the cached "
                f"{self.keys.shape} / {self.values.shape} outside the sequence axis"
            )
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = np.concatenate([self.keys, keys], axis=-2)
            self.values = np.concatenate([self.values, values], axis=-2)
        return self.keys, self.values
