"""Synthetic tasks for the length-generalisation lab, where position matters in different ways.

Every sequence starts with a beginning-of-sequence token ``BOS = 0`` at position 0. A task returns
``(tokens, labels, mask)``, each of shape ``(batch, length)``: the model reads ``tokens[:, :i+1]``
and must output ``labels[:, i]`` wherever ``mask[:, i]`` is true.

* :func:`copy_back_batch`: output the token ``k`` positions back. Where to look is purely
  relative (always ``k`` steps back), what to output is the content found there.
* :func:`recall_batch`: a sequence of key-value pairs from a per-sequence dictionary; at a key
  that appeared before, output its value. Where to look is decided by content (an earlier copy
  of the same key), and position matters only locally (the value sits right after its key).
* :func:`recall_latest_batch`: the same layout, but a key gets a fresh value at every
  occurrence; at a key seen before, output the value that followed its *latest* earlier
  occurrence. Content finds the candidates; distance picks the nearest of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as val

__all__ = ["BOS", "Task", "copy_back_batch", "recall_batch", "recall_latest_batch",
           "far_recall_batch", "make_task", "TASK_NAMES"]

BOS = 0
TASK_NAMES = ("copy_back", "recall", "recall_latest")


def _rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def copy_back_batch(rng, batch, length, *, k=3, n_symbols=16):
    """Random symbols; at position ``i`` the label is the token at ``i - k``.

    ``tokens[:, 0] = BOS``; ``tokens[:, 1:]`` uniform in ``1 .. n_symbols``;
    ``labels[:, i] = tokens[:, i - k]`` and ``mask[:, i] = (i - k >= 1)`` (the BOS token is never
    a label). Chance accuracy is ``1 / n_symbols``.

    Returns
    -------
    tokens, labels : int64 arrays ``(batch, length)``; mask : bool array ``(batch, length)``
    """
    rng = _rng(rng)
    batch = val.positive_int(batch, "batch")
    length = val.positive_int(length, "length")
    k = val.positive_int(k, "k")
    n_symbols = val.positive_int(n_symbols, "n_symbols")
    if length < k + 2:
        raise ValueError(f"length must be >= k + 2 = {k + 2} so that some position has a label, "
                         f"got {length}")
    tokens = np.empty((batch, length), dtype=np.int64)
    tokens[:, 0] = BOS
    tokens[:, 1:] = rng.integers(1, n_symbols + 1, size=(batch, length - 1))
    labels = np.zeros_like(tokens)
    labels[:, k:] = tokens[:, :-k]
    mask = np.zeros((batch, length), dtype=bool)
    mask[:, k + 1:] = True
    return tokens, labels, mask


def _recall_arguments(rng, batch, length, n_keys, n_values):
    """The validated arguments of the recall tasks (a generator for ``rng``)."""
    rng = _rng(rng)
    batch = val.positive_int(batch, "batch")
    length = val.positive_int(length, "length")
    n_keys = val.positive_int(n_keys, "n_keys")
    n_values = val.positive_int(n_values, "n_values")
    if length < 4:
        raise ValueError(f"length must be >= 4 (BOS and at least a pair and a key), got {length}")
    if batch * length > 10**8:
        raise ValueError(f"batch * length must be at most 10**8 tokens, got batch={batch}, "
                         f"length={length}")
    return rng, batch, length, n_keys, n_values


def _recall_tokens(keys, values, n_keys, length):
    """``BOS k_1 v_1 k_2 v_2 ...`` cut to ``length``: keys ``1 .. n_keys``, values after them."""
    batch, n_pairs = keys.shape
    pairs = np.stack([keys + 1, values + n_keys + 1], axis=-1).reshape(batch, 2 * n_pairs)
    return np.concatenate([np.full((batch, 1), BOS, dtype=np.int64), pairs], axis=1)[:, :length]


def recall_batch(rng, batch, length, *, n_keys=8, n_values=8):
    """Key-value pairs; at a key seen before, the label is that key's value.

    Each sequence draws its own dictionary ``value_of[key]`` (uniform over the ``n_values``
    values, independently per key) and a run of keys uniform over ``n_keys``. Layout:
    ``BOS k_1 v_1 k_2 v_2 ...`` with keys at odd positions (tokens ``1 .. n_keys``) and values
    at even positions (tokens ``n_keys + 1 .. n_keys + n_values``), ``v_t = value_of[k_t]``.
    At each key position ``i`` whose key already appeared at an earlier key position, the label
    is its value (the next token) and the mask is true. Chance accuracy is ``1 / n_values``.

    Returns
    -------
    tokens, labels : int64 arrays ``(batch, length)``; mask : bool array ``(batch, length)``

    References
    ----------
    An associative-recall task; two attention layers solve it with an "induction head" (a
    previous-token head feeding a content-matching head), Olsson et al. 2022, "In-context
    Learning and Induction Heads".
    """
    rng, batch, length, n_keys, n_values = _recall_arguments(rng, batch, length, n_keys, n_values)
    n_pairs = length // 2  # keys at 1, 3, ..., 2 n_pairs - 1 (the last one may lack its value)
    value_of = rng.integers(0, n_values, size=(batch, n_keys))
    keys = rng.integers(0, n_keys, size=(batch, n_pairs))
    values = np.take_along_axis(value_of, keys, axis=1)
    tokens = _recall_tokens(keys, values, n_keys, length)
    # seen[b, t]: key t occurred among keys 0 .. t-1 of sequence b.
    same = keys[:, :, None] == keys[:, None, :]
    seen = np.tril(same, k=-1).any(axis=-1)
    labels = np.zeros((batch, length), dtype=np.int64)
    mask = np.zeros((batch, length), dtype=bool)
    key_positions = 2 * np.arange(n_pairs) + 1
    labels[:, key_positions] = values + n_keys + 1
    mask[:, key_positions] = seen
    return tokens, labels, mask


def recall_latest_batch(rng, batch, length, *, n_keys=4, n_values=8):
    """Key-value pairs whose values change; at a key seen before, the label is its latest value.

    Layout as :func:`recall_batch` (``BOS k_1 v_1 k_2 v_2 ...``, keys ``1 .. n_keys`` at odd
    positions, values ``n_keys + 1 .. n_keys + n_values`` at even positions), but every
    occurrence of a key draws a fresh value, uniform and independent. At each key position
    whose key already appeared, the label is the value that followed the most recent earlier
    occurrence of that key, and the mask is true. Every earlier occurrence matches the key by
    content; only their distances tell the latest one apart, so the answer depends on distance.
    Chance accuracy is ``1 / n_values``.

    Returns
    -------
    tokens, labels : int64 arrays ``(batch, length)``; mask : bool array ``(batch, length)``
    """
    rng, batch, length, n_keys, n_values = _recall_arguments(rng, batch, length, n_keys, n_values)
    n_pairs = length // 2
    keys = rng.integers(0, n_keys, size=(batch, n_pairs))
    values = rng.integers(0, n_values, size=(batch, n_pairs))
    tokens = _recall_tokens(keys, values, n_keys, length)
    # latest[b, t]: index of the latest pair before t with the same key, -1 if none.
    same = np.tril(keys[:, :, None] == keys[:, None, :], k=-1)
    latest = np.where(same.any(axis=-1), n_pairs - 1 - np.argmax(same[:, :, ::-1], axis=-1), -1)
    labels = np.zeros((batch, length), dtype=np.int64)
    mask = np.zeros((batch, length), dtype=bool)
    key_positions = 2 * np.arange(n_pairs) + 1
    found = latest >= 0
    labels[:, key_positions] = np.where(
        found, np.take_along_axis(values, np.maximum(latest, 0), axis=1) + n_keys + 1, 0)
    mask[:, key_positions] = found
    return tokens, labels, mask


@dataclass(frozen=True)
class Task:
    """A task with fixed settings: its name, vocabulary size, chance accuracy and generator.

    ``task.batch(rng, batch, length)`` returns ``(tokens, labels, mask)``.
    """

    name: str
    vocab_size: int
    chance: float
    settings: tuple

    def __post_init__(self):
        val.choice(self.name, "name", TASK_NAMES)
        val.positive_int(self.vocab_size, "vocab_size")
        if not 0.0 < val.real_float(self.chance, "chance") <= 1.0:
            raise ValueError(f"chance must be in (0, 1], got {self.chance!r}")
        if not isinstance(self.settings, tuple) or not all(
                isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                for item in self.settings):
            raise TypeError("settings must be a tuple of (name, value) pairs, as make_task "
                            f"builds it, got {self.settings!r:.60}")

    def batch(self, rng, batch, length):
        """``(tokens, labels, mask)`` for ``batch`` sequences of ``length`` tokens."""
        kwargs = dict(self.settings)
        if self.name == "copy_back":
            return copy_back_batch(rng, batch, length, **kwargs)
        if self.name == "recall_latest":
            return recall_latest_batch(rng, batch, length, **kwargs)
        return recall_batch(rng, batch, length, **kwargs)


def make_task(name, **settings):
    """The task ``name`` (one of :data:`TASK_NAMES`) with keyword ``settings`` for its generator.

    ``make_task("copy_back", k=3, n_symbols=16)``: vocabulary ``n_symbols + 1`` (with BOS),
    chance ``1 / n_symbols``. ``make_task("recall", n_keys=8, n_values=8)``: vocabulary
    ``1 + n_keys + n_values``, chance ``1 / n_values``. ``make_task("recall_latest", n_keys=4,
    n_values=8)``: the same vocabulary and chance.
    """
    name = val.choice(name, "name", TASK_NAMES)
    if name == "copy_back":
        allowed = {"k": 3, "n_symbols": 16}
    elif name == "recall_latest":
        allowed = {"n_keys": 4, "n_values": 8}
    else:
        allowed = {"n_keys": 8, "n_values": 8}
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValueError(f"settings for {name!r} must be among {sorted(allowed)}, got {unknown}")
    merged = {**allowed, **settings}
    for key, value in merged.items():
        val.positive_int(value, key)
    if name == "copy_back":
        vocab, chance = merged["n_symbols"] + 1, 1.0 / merged["n_symbols"]
    else:
        vocab, chance = 1 + merged["n_keys"] + merged["n_values"], 1.0 / merged["n_values"]
    return Task(name=name, vocab_size=vocab, chance=chance, settings=tuple(sorted(merged.items())))


def far_recall_batch(rng, batch, length, *, min_distance, n_keys=4, n_values=8):
    """One query whose key's only earlier copy lies at least ``min_distance`` tokens back (a
    passkey-style probe; the answer is the value after it, one token closer).

    The vocabulary and layout of :func:`recall_latest_batch` (``BOS k_1 v_1 k_2 v_2 ...``), so a
    model trained on that task reads it unchanged. Each sequence picks a needle key and a pair
    ``j`` uniform among those at least ``min_distance`` tokens before the last key position; the
    needle key occurs at pair ``j`` and at the last key position only, every other pair draws
    its key among the other ``n_keys - 1`` keys, and every value is fresh (uniform). Only the
    last key position is scored: its label is the value after the needle; the needle lies
    ``min_distance`` or more tokens back (the value one closer), so with ``min_distance >= L``
    every scored query must find a key beyond a training length ``L``. Chance accuracy is ``1 / n_values``.

    Returns
    -------
    tokens, labels : int64 arrays ``(batch, length)``; mask : bool array ``(batch, length)``
    """
    rng, batch, length, n_keys, n_values = _recall_arguments(rng, batch, length, n_keys, n_values)
    min_distance = val.positive_int(min_distance, "min_distance")
    if n_keys < 2:
        raise ValueError(f"n_keys must be >= 2 (a needle and at least one other key), got {n_keys}")
    n_pairs = length // 2
    last = n_pairs - 1                                      # the last key's pair index
    latest_pair = last - (min_distance + 1) // 2            # distance 2 (last - j) >= min_distance
    if latest_pair < 0:
        raise ValueError(f"min_distance must leave room for a needle: at most {2 * last} for "
                         f"length {length}, got {min_distance}")
    needle = rng.integers(0, n_keys, size=batch)
    other = rng.integers(0, n_keys - 1, size=(batch, n_pairs))
    keys = other + (other >= needle[:, None])                   # every key but the needle
    where = rng.integers(0, latest_pair + 1, size=batch)
    rows = np.arange(batch)
    keys[rows, where] = needle
    keys[:, last] = needle
    values = rng.integers(0, n_values, size=(batch, n_pairs))
    tokens = _recall_tokens(keys, values, n_keys, length)
    labels = np.zeros((batch, length), dtype=np.int64)
    mask = np.zeros((batch, length), dtype=bool)
    labels[:, 2 * last + 1] = values[rows, where] + n_keys + 1
    mask[:, 2 * last + 1] = True
    return tokens, labels, mask
