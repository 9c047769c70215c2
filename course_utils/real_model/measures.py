"""Position measurements on a released model: the experiments of chapter 13.

Every function takes a loaded model (:func:`course_utils.real_model.load_model`) and token ids,
runs its forward pass with one change to positions (shifted ids, a key window, frequencies
stretched by :func:`course_utils.scaling.rope_scaling`, rotation removed from some pairs) and
returns plain numpy arrays, so that a notebook can check and plot them.

The text is four Python Enhancement Proposals on docstrings (PEP 256, 257, 258 and 287, by
David Goodger, PEP 257 with Guido van Rossum; public domain), as the source archive of
``docutils==0.21.2`` ships them: ``make model`` fetches and checks them
(:mod:`course_utils.real_model.files`), and every read checks their sha256. English technical
prose in reStructuredText, the same bytes on every machine and every Python.
Pairs are numbered as in the course: pair ``i`` turns at ``theta_i = b^(-2i/d)`` and holds
channels ``i`` and ``i + d/2`` of a head (the
half layout of transformers' ``rotate_half``), so pair 0 is the fastest.

References: Xiao et al. 2024 (StreamingLLM, window + sink experiment); Barbero et al. 2025
(which frequencies a model uses); Chen et al. 2023 (PI), Peng et al. 2023 (NTK-aware, dynamic,
YaRN) and Zhu et al. 2023 (PoSE, arXiv:2309.10400: position ids with a gap).
"""

from __future__ import annotations

import copy as copy_module
import functools
import hashlib
import random
import re

import numpy as np

from .. import _validate as val
from .._validate import positive_int
from ..attention import softmax
from ..rope import _rotate_pairs
from ..scaling import rope_scaling
from . import files
from .model import next_token_nll

__all__ = [
    "corpus_text", "corpus_ids", "shuffled_sentences", "sink_share_from_attention",
    "window_nll", "shifted_nll", "pair_norms", "inv_freq_without_rotation",
    "without_pair_content",
    "scaled_frequencies", "skip_positions", "skip_nll", "rotate_by_angles",
    "attention_from_angles", "nll_from_logits", "METHODS",
]

#: Context-extension methods of :func:`scaled_frequencies`: ``"none"`` leaves the trained
#: frequencies, the others are :func:`course_utils.scaling.rope_scaling`'s.
METHODS = ("none", "linear", "ntk", "dynamic", "yarn")


def _require(obj, arg, methods=(), attributes=()):
    """Raise TypeError naming ``arg`` unless ``obj`` has these methods and attributes."""
    missing = [m for m in methods if not callable(getattr(obj, m, None))]
    missing += [a for a in attributes if not hasattr(obj, a)]
    if isinstance(obj, (str, bytes)):  # text has an encode() method, but is not a model
        missing = [*methods, *attributes]
    if missing:
        wanted = ", ".join([f"a {m}() method" for m in methods] + [f"a {a}" for a in attributes])
        raise TypeError(f"{arg} must be a loaded model (course_utils.real_model.load_model) "
                        f"with {wanted}; got {type(obj).__name__} without {', '.join(missing)}")
    return obj


def _check_config(config):
    """``(head_dim, rope_theta, max_position_embeddings)`` of a model's config, checked."""
    _require(config, "config",
             attributes=("head_dim", "rope_theta", "max_position_embeddings"))
    try:
        return (positive_int(config.head_dim, "config.head_dim", even=True),
                val.positive_float(config.rope_theta, "config.rope_theta", minimum=1.0),
                positive_int(config.max_position_embeddings, "config.max_position_embeddings"))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"config: {exc}") from None


@functools.lru_cache(maxsize=1)
def corpus_text() -> str:
    """The four docstring PEPs (91 286 bytes, :data:`~course_utils.real_model.files.TEXT_NAME` in
    the cache folder). Raises :class:`~course_utils.real_model.files.ModelNotAvailableError`
    naming ``make model`` if the text is not there, and ValueError if its sha256 is not
    :data:`~course_utils.real_model.files.TEXT_SHA256` (the stored measurements were made on
    those bytes)."""
    path = files.require_text()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != files.TEXT_SHA256:
        raise ValueError(f"{path} has sha256 {digest}, expected {files.TEXT_SHA256}: the file "
                         f"was altered; delete it and run `{files.FETCH_COMMAND}` again")
    return data.decode("utf-8")


def corpus_ids(model, n_tokens, *, start=0):
    """``n_tokens`` token ids of :func:`corpus_text`, from token ``start`` on (int64)."""
    _require(model, "model", methods=("encode",))
    n_tokens = positive_int(n_tokens, "n_tokens")
    start = positive_int(start, "start", allow_zero=True)
    ids = _all_ids(model)
    if start + n_tokens > ids.size:
        raise ValueError(f"start + n_tokens must be at most {ids.size} (the text's length in "
                         f"tokens), got {start} + {n_tokens}")
    return ids[start:start + n_tokens].copy()


def _all_ids(model):
    cached = getattr(model, "_course_corpus_ids", None)
    if cached is None:
        cached = np.asarray(model.encode(corpus_text()), dtype=np.int64)
        try:
            model._course_corpus_ids = cached
        except AttributeError:  # a model that refuses attributes: encode each time
            pass
    return cached


def shuffled_sentences(text, *, seed=0):
    """``text`` with its whitespace collapsed to single spaces and its sentences (split after
    ``.``, ``!`` or ``?`` and a space) in a random order: the same words and sentences, a text
    the model cannot have memorised. Compare it with ``" ".join(text.split())``, the same text
    collapsed in order: the line breaks go in both."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text must be a non-empty string")
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]
    random.Random(seed).shuffle(sentences)
    return " ".join(sentences)


def sink_share_from_attention(attention, n_sink=1, *, first_query=None):
    """Mean attention weight on the first ``n_sink`` keys, per layer and head.

    Parameters
    ----------
    attention : dict {layer: array (heads, T, T)}
        Attention weights, rows are queries (``forward(..., return_attention=...)``).
    n_sink : int
        How many leading keys count as the sink.
    first_query : int, optional
        Average over queries ``first_query .. T-1`` (default ``n_sink``: the first queries
        can see nothing but the sink, so they would count 1 by construction).

    Returns
    -------
    layers : list of int, share : array (len(layers), heads)
    """
    n_sink = positive_int(n_sink, "n_sink")
    first = n_sink if first_query is None else positive_int(first_query, "first_query",
                                                            allow_zero=True)
    if not isinstance(attention, dict) or not attention:
        raise TypeError("attention must be a non-empty dict {layer: (heads, T, T) array}")
    layers = sorted(attention)
    shares = []
    for layer in layers:
        weights = np.asarray(attention[layer])
        if weights.ndim != 3 or weights.shape[1] != weights.shape[2]:
            raise ValueError(f"attention[{layer}] must have shape (heads, T, T), got "
                             f"{weights.shape}")
        if first >= weights.shape[1]:
            raise ValueError(f"first_query must be below T = {weights.shape[1]}, got {first}")
        shares.append(weights[:, first:, :n_sink].sum(axis=-1, dtype=np.float64).mean(axis=-1))
    return layers, np.array(shares)


def window_nll(model, ids, *, window=None, n_sink=0, chunk=512):
    """Per-token loss (T-1,) with each query seeing its last ``window`` keys (itself included)
    and the first ``n_sink`` tokens; ``window=None`` is full causal attention.

    One forward pass with a banded mask equals StreamingLLM's rolling cache (Xiao et al. 2024,
    ``streaming_llm/kv_cache.py``: ``start_size`` + ``recent_size``) with original positions:
    a key's value at layer l depends only on what its own query saw at layer l - 1."""
    _require(model, "model", methods=("loss",))
    window = None if window is None else positive_int(window, "window")
    n_sink = positive_int(n_sink, "n_sink", allow_zero=True)
    chunk = positive_int(chunk, "chunk")
    return np.asarray(model.loss(ids, window=window, n_sink=n_sink, chunk=chunk))


def shifted_nll(model, ids, shift, **forward_kwargs):
    """Per-token loss with every position id moved by ``shift`` (``arange(T) + shift``)."""
    _require(model, "model", methods=("loss",))
    shift = positive_int(shift, "shift", allow_zero=True)
    ids = val.numeric_array(ids, "ids", integer=True)
    if ids.ndim != 1:
        raise ValueError(f"ids must be a 1-D array of token ids, got shape {ids.shape}")
    positions = np.arange(len(ids), dtype=np.int64) + shift
    return np.asarray(model.loss(ids, position_ids=positions, **forward_kwargs))


def pair_norms(x):
    """Norm of each rotary pair, averaged over positions.

    ``x``: queries or keys before rotation, shape (heads, T, d) in the half layout (pair ``i``
    = channels ``i`` and ``i + d/2``). Returns (heads, d/2): ``mean_t sqrt(x_i^2 + x_{i+d/2}^2)``.
    The rotation leaves these norms unchanged, so pre- or post-rotation inputs give the same.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3 or x.shape[-1] % 2:
        raise ValueError(f"x must have shape (heads, T, d) with d even, got {x.shape}")
    half = x.shape[-1] // 2
    return np.sqrt(x[..., :half] ** 2 + x[..., half:] ** 2).mean(axis=1)


def inv_freq_without_rotation(inv_freq, pairs):
    """``inv_freq`` with the frequency of each pair in ``pairs`` set to 0: those pairs no
    longer turn with position (their content stays; the rest of RoPE is untouched)."""
    out = val.numeric_array(inv_freq, "inv_freq").astype(np.float64)
    if out.ndim != 1:
        raise ValueError(f"inv_freq must be a 1-D array (head_dim/2,), got shape {out.shape}")
    pairs = val.numeric_array(pairs, "pairs", integer=True).astype(np.int64).ravel()
    if pairs.size and (pairs.min() < 0 or pairs.max() >= out.size):
        raise ValueError(f"pairs must be indices in 0..{out.size - 1}, got {pairs.tolist()}")
    out[pairs] = 0.0
    return out


def without_pair_content(model, pairs, *, side="query"):
    """A copy of ``model`` whose queries (``side="query"``) or keys (``"key"``) are zero on the
    rotary pairs ``pairs``, in every head of every layer: those pairs add nothing to any
    attention score, at any distance (their content is gone, rotation or not).

    Pair ``i`` is channels ``(i, i + d/2)`` of a head in the half layout and ``(2i, 2i + 1)``
    in the interleaved one (``model.layout``). Only the projection weights are copied.
    """
    _require(model, "model", methods=("loss",), attributes=("config", "layers", "layout"))
    side = val.choice(side, "side", ("query", "key"))
    cfg = model.config
    d = cfg.head_dim
    pairs = val.numeric_array(pairs, "pairs", integer=True).astype(np.int64).ravel()
    if pairs.size and (pairs.min() < 0 or pairs.max() >= d // 2):
        raise ValueError(f"pairs must be indices in 0..{d // 2 - 1}, got {pairs.tolist()}")
    channels = (np.concatenate([pairs, pairs + d // 2]) if model.layout == "half"
                else np.concatenate([2 * pairs, 2 * pairs + 1]))
    heads, offset = ((cfg.n_heads, 0) if side == "query"
                     else (cfg.n_kv_heads, cfg.n_heads * d))
    columns = (offset + d * np.arange(heads)[:, None] + channels[None, :]).ravel()
    copy = copy_module.copy(model)
    copy.layers = []
    for layer in model.layers:
        qkv = layer["qkv"].copy()
        qkv[:, columns] = 0.0
        copy.layers.append({**layer, "qkv": qkv})
    return copy


def scaled_frequencies(config, method, factor=1.0, *, seq_len=None):
    """``(inv_freq, attention_factor)`` of a context-extension ``method`` for ``config``.

    ``method`` is one of :data:`METHODS`; the others call
    :func:`course_utils.scaling.rope_scaling` with the model's head dimension, base and
    ``original_max_position_embeddings = max_position_embeddings`` (8192 for SmolLM2).
    ``"dynamic"`` needs ``seq_len``, the length it adapts to.
    """
    method = val.choice(method, "method", METHODS)
    d, base, max_positions = _check_config(config)
    factor = val.positive_float(factor, "factor")
    if seq_len is not None:
        seq_len = positive_int(seq_len, "seq_len")
    if method == "none":
        return base ** (-np.arange(0, d, 2) / d), 1.0
    if method == "dynamic" and seq_len is None:
        raise ValueError("method 'dynamic' needs seq_len, the length the base adapts to")
    kwargs = {"seq_len": seq_len} if method == "dynamic" else {}
    inv_freq, attention_factor = rope_scaling(
        method, d, base=base, factor=float(factor),
        original_max_position_embeddings=max_positions, **kwargs)
    return np.asarray(inv_freq, dtype=np.float64), float(attention_factor)


def skip_positions(n_first, n_second, end):
    """Position ids of a skip evaluation: ``n_first`` tokens at ``0 .. n_first-1``, then
    ``n_second`` tokens ending at ``end - 1`` (a gap of ``end - n_first - n_second``).

    The second chunk's queries then see keys up to ``end - 1`` positions back, as the last
    tokens of a text ``end`` tokens long do, from ``n_first + n_second`` forward passes' worth
    of tokens (the idea of PoSE's skipped position ids, Zhu et al. 2023, used for evaluation)."""
    n_first = positive_int(n_first, "n_first")
    n_second = positive_int(n_second, "n_second")
    end = positive_int(end, "end")
    if end < n_first + n_second:
        raise ValueError(f"end must be at least n_first + n_second = {n_first + n_second}, "
                         f"got {end}")
    return np.concatenate([np.arange(n_first), np.arange(end - n_second, end)]).astype(np.int64)


def skip_nll(model, ids, n_first, end, *, method="none", factor=1.0, chunk=512):
    """Mean loss on the second chunk of a skip evaluation (:func:`skip_positions`), with the
    frequencies of ``method`` (``dynamic`` adapts to ``end``).

    ``ids``: the ``n_first + n_second`` tokens, contiguous in the text. Returns the mean loss
    of predicting tokens ``n_first + 1 ..`` (the second chunk, given everything before it)."""
    _require(model, "model", methods=("loss",), attributes=("config",))
    ids = val.numeric_array(ids, "ids", integer=True).astype(np.int64)
    if ids.ndim != 1:
        raise ValueError(f"ids must be a 1-D array of token ids, got shape {ids.shape}")
    n_first = positive_int(n_first, "n_first")
    end = positive_int(end, "end")
    chunk = positive_int(chunk, "chunk")
    if not 0 < n_first < ids.size - 1:
        raise ValueError(f"n_first must be between 1 and len(ids) - 2 = {ids.size - 2}, "
                         f"got {n_first}")
    positions = skip_positions(n_first, ids.size - n_first, end)
    inv_freq, factor_attn = scaled_frequencies(model.config, method, factor, seq_len=end)
    nll = np.asarray(model.loss(ids, position_ids=positions, inv_freq=inv_freq,
                                attention_factor=factor_attn, chunk=chunk))
    return float(nll[n_first:].mean(dtype=np.float64))


def rotate_by_angles(x, angles):
    """Rotate ``x`` (..., T, d), half layout, pair ``i`` of token ``t`` by ``angles[t, i]``.

    The rotation of :func:`course_utils.rope.apply_rope` with the angle table given instead of
    formed from positions, so that a table rounded to float32 or bfloat16
    (:func:`course_utils.rope.rope_angles`) can be applied. float64 result.
    """
    x = val.numeric_array(x, "x", min_ndim=2).astype(np.float64)
    angles = val.numeric_array(angles, "angles").astype(np.float64)
    if x.shape[-1] % 2 or angles.shape != (x.shape[-2], x.shape[-1] // 2):
        raise ValueError(f"angles must have shape (T, d/2) = ({x.shape[-2]}, {x.shape[-1] // 2})"
                         f" for x of shape {x.shape}, got {angles.shape}")
    out = np.empty(x.shape, dtype=np.float64)
    _rotate_pairs(x, np.cos(angles), np.sin(angles), out, "half")
    return out


def attention_from_angles(q, k, angles):
    """Causal attention weights of one layer from its queries and keys before rotation.

    Parameters
    ----------
    q : array (heads, T, d); k : array (kv_heads, T, d)
        Queries and keys before RoPE, half layout (a forward pass's ``.qk[layer]``); each key
        head serves ``heads // kv_heads`` consecutive query heads (grouped-query attention).
    angles : array (T, d/2)
        Rotation angles, e.g. ``rope_angles(positions, d, base=b, precision="bfloat16")``.

    Returns
    -------
    array (heads, T, T), float64: ``softmax(q_rot k_rot^T / sqrt(d))`` under a causal mask.
    """
    q = val.numeric_array(q, "q").astype(np.float64)
    k = val.numeric_array(k, "k").astype(np.float64)
    if q.ndim != 3 or k.ndim != 3 or q.shape[1:] != k.shape[1:] or q.shape[0] % k.shape[0]:
        raise ValueError(f"q must be (heads, T, d) and k (kv_heads, T, d) with kv_heads "
                         f"dividing heads, got {q.shape} and {k.shape}")
    group = q.shape[0] // k.shape[0]
    qr = rotate_by_angles(q, angles)
    kr = np.repeat(rotate_by_angles(k, angles), group, axis=0)
    scores = qr @ kr.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    scores[:, ~np.tri(q.shape[1], dtype=bool)] = -np.inf
    return softmax(scores, axis=-1)


def nll_from_logits(logits, ids):
    """Next-token loss (T-1,) in nats from a forward pass's logits (T, vocab), in float64:
    entry ``t`` is ``-log softmax(logits[t])[ids[t + 1]]`` (what ``model.loss`` returns, without
    a second forward pass when the logits are at hand)."""
    logits = val.numeric_array(logits, "logits")
    ids = val.numeric_array(ids, "ids", integer=True).astype(np.int64)
    if logits.ndim != 2 or ids.shape != (logits.shape[0],) or ids.size < 2:
        raise ValueError(f"logits must be (T, vocab) and ids (T,) with T >= 2, got "
                         f"{logits.shape} and {ids.shape}")
    if ids.min() < 0 or ids.max() >= logits.shape[1]:
        raise ValueError(f"ids must be token ids in 0..{logits.shape[1] - 1}")
    return next_token_nll(logits[:-1], ids[1:])
