"""A tiny decoder-only attention model in numpy, with a hand-written backward pass.

The model, for tokens ``t_0 .. t_{n-1}`` and one of six positional schemes:

* ``x = E[t]`` (+ ``PE[0..n-1]`` for ``"sinusoidal"``, + a learned table for ``"learned"``);
* ``n_layers`` times: ``x = x + MHA(x)``, then ``x = x + W_2 relu(W_1 x + b_1) + b_2``
  (no layer norm: the backward pass stays short);
* ``logits = x U``.

Attention is causal with ``n_heads`` heads: ``softmax(q k^T / sqrt(d_head) + bias) v``, where the
bias is 0 (``"none"``, ``"sinusoidal"``, ``"learned"``, ``"rope"``), a learned T5 bucket table
shared by all layers (``"t5"``) or ALiBi's fixed ``-m_h (i - j)`` (``"alibi"``); ``"rope"``
rotates ``q`` and ``k`` by their positions. Every positional piece is computed by the course's own
modules (:mod:`course_utils.sinusoidal`, :mod:`course_utils.learned`, :mod:`course_utils.relative`,
:mod:`course_utils.rope`, :mod:`course_utils.alibi`, :func:`course_utils.attention.softmax`).

The backward pass is written out layer by layer. Two identities carry it: the softmax Jacobian
``dS = A * (dA - sum_j A dA)``, and RoPE's transpose, which is the rotation by the negative angle
(``apply_rope(dy, -positions)``), since a rotation matrix is orthogonal.

A ``"rope"`` model can read a stretched RoPE (:class:`RopeScaling`): its per-pair frequencies and
attention factor come from :func:`course_utils.scaling.rope_scaling` (Position Interpolation,
NTK-aware, dynamic NTK at the current sequence length, YaRN), called at every forward pass with
the input's length; nothing of the scaling is computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as val
from ..alibi import alibi_bias
from ..attention import causal_mask, softmax
from ..learned import LearnedPositionalEmbedding
from ..relative import relative_positions, t5_bias, t5_relative_position_bucket
from ..rope import apply_rope, rope_inv_freq
from ..scaling import rope_scaling
from ..sinusoidal import sinusoidal_encoding

__all__ = [
    "SCHEMES",
    "SCALING_METHODS",
    "RopeScaling",
    "ModelConfig",
    "rope_frequencies",
    "init_params",
    "forward",
    "backward",
    "cross_entropy",
    "loss_and_grads",
    "predict",
    "attention_to_offset",
    "attention_beyond",
    "attention_entropy",
    "gradient_check",
]

SCHEMES = ("none", "sinusoidal", "learned", "t5", "rope", "alibi")
"""Positional schemes the lab compares: no positional encoding (NoPE), sinusoidal, learned
absolute, T5 relative bias, RoPE, ALiBi."""


SCALING_METHODS = ("linear", "ntk", "dynamic", "yarn")
"""Context-extension methods a ``"rope"`` model can read, as named by
:func:`course_utils.scaling.rope_scaling`: Position Interpolation, NTK-aware, dynamic NTK, YaRN."""


@dataclass(frozen=True)
class RopeScaling:
    """A stretched RoPE: the arguments the lab passes to :func:`course_utils.scaling.rope_scaling`.

    Parameters
    ----------
    method : one of :data:`SCALING_METHODS`
    factor : float >= 1
        The scaling factor ``s``.
    original_max_position_embeddings : int
        ``L``, the length the model was trained at.
    params : tuple of ``(name, value)`` pairs
        Method-specific keywords (YaRN's ``beta_fast``, ``beta_slow``, ...).
    temperature : bool
        Multiply the attention logits by the square of the returned attention factor (YaRN's
        temperature, applied as Hugging Face applies it: both cos and sin are multiplied by the
        factor, so queries and keys each carry it once). ``False`` drops it; for the methods
        whose factor is 1 it changes nothing.
    """

    method: str
    factor: float
    original_max_position_embeddings: int
    params: tuple = ()
    temperature: bool = True

    def __post_init__(self):
        val.choice(self.method, "method", SCALING_METHODS)
        val.positive_float(self.factor, "factor", minimum=1.0)
        val.positive_int(self.original_max_position_embeddings, "original_max_position_embeddings")
        val.boolean(self.temperature, "temperature")
        if not isinstance(self.params, tuple) or not all(
                isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                for item in self.params):
            raise TypeError(f"params must be a tuple of (name, value) pairs, got {self.params!r:.60}")

    def frequencies(self, head_dim, base, seq_len):
        """``(inv_freq, logit_scale)`` at ``seq_len`` tokens, from ``rope_scaling``.

        ``logit_scale`` is the attention factor squared when ``temperature``, else 1.
        """
        inv_freq, attention_factor = rope_scaling(
            self.method, head_dim, base=base, factor=self.factor,
            original_max_position_embeddings=self.original_max_position_embeddings,
            seq_len=seq_len, **dict(self.params))
        return inv_freq, (attention_factor ** 2 if self.temperature else 1.0)


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the lab's model.

    Parameters
    ----------
    scheme : one of :data:`SCHEMES`
    vocab_size : int
        Number of input tokens; the model predicts one of the same ``vocab_size`` labels.
    d_model, n_heads, n_layers, d_mlp : int
        Width, heads (``d_model / n_heads`` must be even for RoPE), attention layers, width of
        each layer's ReLU MLP (0 for attention-only layers).
    max_len : int
        Rows of the learned position table (``scheme="learned"`` only): the longest input it reads.
    t5_num_buckets, t5_max_distance : int
        T5's causal (``bidirectional=False``) bucketing of distances ``0 .. max_distance``.
    rope_base : float
        RoPE's base ``b`` in ``theta_i = b^(-2i/d_head)``.
    rope_scaling : RopeScaling or None
        A stretched RoPE (``scheme="rope"`` only); ``None`` keeps ``theta_i``.
    """

    scheme: str
    vocab_size: int
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_mlp: int = 64
    max_len: int = 16
    t5_num_buckets: int = 16
    t5_max_distance: int = 16
    rope_base: float = 10000.0
    rope_scaling: RopeScaling | None = None

    def __post_init__(self):
        val.choice(self.scheme, "scheme", SCHEMES)
        val.positive_int(self.vocab_size, "vocab_size")
        val.positive_int(self.d_model, "d_model")
        val.positive_int(self.n_heads, "n_heads")
        val.positive_int(self.n_layers, "n_layers")
        val.positive_int(self.d_mlp, "d_mlp", allow_zero=True)
        val.positive_int(self.max_len, "max_len")
        val.positive_int(self.t5_max_distance, "t5_max_distance")
        val.positive_float(self.rope_base, "rope_base")
        if self.rope_scaling is not None:
            if not isinstance(self.rope_scaling, RopeScaling):
                raise TypeError(f"rope_scaling must be a RopeScaling or None, got "
                                f"{type(self.rope_scaling).__name__}")
            if self.scheme != "rope":
                raise ValueError(f"rope_scaling needs scheme='rope', got scheme={self.scheme!r}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model must be a multiple of n_heads with an even head size, got "
                f"d_model={self.d_model}, n_heads={self.n_heads}"
            )
        if self.scheme == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"d_model must be even for the sinusoidal scheme, got {self.d_model}")
        # Validates num_buckets against max_distance with T5's own rules.
        try:
            t5_relative_position_bucket(np.zeros(1, dtype=np.int64), bidirectional=False,
                                        num_buckets=self.t5_num_buckets,
                                        max_distance=self.t5_max_distance)
        except (TypeError, ValueError) as exc:
            raise type(exc)(
                f"t5_num_buckets={self.t5_num_buckets!r} with t5_max_distance="
                f"{self.t5_max_distance!r} is not a valid T5 bucketing: {exc}"
            ) from exc

    @property
    def head_dim(self):
        """``d_model // n_heads``."""
        return self.d_model // self.n_heads


def rope_frequencies(config, seq_len):
    """The frequencies and logit scale a ``"rope"`` model uses for an input of ``seq_len`` tokens.

    Returns
    -------
    inv_freq : array ``(head_dim // 2,)``
        ``rope_inv_freq(head_dim, base=rope_base)``, or, with ``rope_scaling``, the output of
        :func:`course_utils.scaling.rope_scaling` at ``seq_len`` (dynamic NTK depends on it).
    logit_scale : float
        1, or the square of YaRN's attention factor when its temperature is on.
    """
    config = _config(config)
    if config.scheme != "rope":
        raise ValueError(f"config.scheme must be 'rope', got {config.scheme!r}")
    seq_len = val.positive_int(seq_len, "seq_len")
    if config.rope_scaling is None:
        return rope_inv_freq(config.head_dim, base=config.rope_base), 1.0
    return config.rope_scaling.frequencies(config.head_dim, config.rope_base, seq_len)


def _rope_kwargs(config, n):
    """Keywords for ``apply_rope`` and the logit scale; without scaling, exactly the old call."""
    if config.scheme != "rope" or config.rope_scaling is None:
        return {"base": config.rope_base}, 1.0
    inv_freq, logit_scale = rope_frequencies(config, n)
    return {"inv_freq": inv_freq}, logit_scale


def _config(config):
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    return config


def _param_names(config):
    names = ["embed"]
    if config.scheme == "learned":
        names.append("pos")
    if config.scheme == "t5":
        names.append("t5_table")
    for layer in range(config.n_layers):
        names += [f"l{layer}.{w}" for w in ("wq", "wk", "wv", "wo")]
        if config.d_mlp:
            names += [f"l{layer}.{w}" for w in ("w1", "b1", "w2", "b2")]
    names.append("unembed")
    return names


def init_params(config, seed=0):
    """Random initial parameters, a dict of float64 arrays in a fixed order.

    Token embeddings ``N(0, 1)``; projections ``N(0, 1/fan_in)``; the output projections of
    attention and MLP scaled by ``1/sqrt(2 n_layers)`` (GPT-2's residual scaling); biases and the
    T5 table zero; the learned table as :class:`course_utils.learned.LearnedPositionalEmbedding`
    initialises it (``N(0, 0.02^2)``, GPT-2's ``initializer_range``), from a random stream of its
    own, so that every scheme starts from the same non-positional weights.

    Shapes: ``embed (vocab, d)``, ``pos (max_len, d)``, ``t5_table (num_buckets, n_heads)``,
    ``l{k}.wq/wk/wv/wo (d, d)``, ``l{k}.w1 (d, d_mlp)``, ``l{k}.b1 (d_mlp,)``,
    ``l{k}.w2 (d_mlp, d)``, ``l{k}.b2 (d,)``, ``unembed (d, vocab)``.
    """
    config = _config(config)
    seed = val.positive_int(seed, "seed", allow_zero=True)
    rng = np.random.default_rng(seed)
    d, m = config.d_model, config.d_mlp
    residual = 1.0 / np.sqrt(2 * config.n_layers)
    params = {}
    for name in _param_names(config):
        kind = name.split(".")[-1]
        if name == "embed":
            params[name] = rng.normal(0.0, 1.0, (config.vocab_size, d))
        elif name == "pos":
            # Its own random stream: with ``seed`` itself the table would repeat the normals
            # that start the token embeddings.
            table_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
            params[name] = LearnedPositionalEmbedding(config.max_len, d, seed=table_seed).weight.copy()
        elif name == "t5_table":
            params[name] = np.zeros((config.t5_num_buckets, config.n_heads))
        elif name == "unembed":
            params[name] = rng.normal(0.0, d ** -0.5, (d, config.vocab_size))
        elif kind in ("wq", "wk", "wv"):
            params[name] = rng.normal(0.0, d ** -0.5, (d, d))
        elif kind == "wo":
            params[name] = rng.normal(0.0, d ** -0.5 * residual, (d, d))
        elif kind == "w1":
            params[name] = rng.normal(0.0, d ** -0.5, (d, m))
        elif kind == "w2":
            params[name] = rng.normal(0.0, m ** -0.5 * residual, (m, d))
        else:  # b1, b2
            params[name] = np.zeros(m if kind == "b1" else d)
    return params


def _check_params(params, config):
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of arrays from init_params, got {type(params).__name__}")
    expected = _param_names(config)
    if list(params) != expected:
        raise ValueError(
            f"params must have the keys {expected} for scheme {config.scheme!r}, got {list(params)}"
        )


def _check_tokens(tokens, config):
    tokens = val.numeric_array(tokens, "tokens", integer=True)
    if tokens.ndim != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens must have shape (batch, seq) with seq >= 1, got {tokens.shape}")
    if tokens.min() < 0 or tokens.max() >= config.vocab_size:
        raise ValueError(
            f"tokens must be in 0 .. {config.vocab_size - 1} (vocab_size), got values "
            f"{int(tokens.min())} .. {int(tokens.max())}"
        )
    return tokens


def _bias(params, config, n):
    """Score bias ``(n_heads or 1, n, n)`` with ``-inf`` above the diagonal, and T5's buckets."""
    if config.scheme == "alibi":
        return alibi_bias(config.n_heads, n), None  # causal: -inf for keys after the query
    masked = np.where(causal_mask(n), 0.0, -np.inf)[None]
    if config.scheme == "t5":
        buckets = t5_relative_position_bucket(relative_positions(n), bidirectional=False,
                                              num_buckets=config.t5_num_buckets,
                                              max_distance=config.t5_max_distance)
        table_bias = t5_bias(params["t5_table"], n, bidirectional=False,
                             max_distance=config.t5_max_distance)
        return table_bias + masked, buckets
    return masked, None


def _split_heads(x, n_heads):
    b, n, d = x.shape
    return x.reshape(b, n, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def _merge_heads(x):
    b, h, n, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, n, h * dh)


def forward(params, tokens, config):
    """Logits for every position, and the cache the backward pass needs.

    Parameters
    ----------
    params : dict from :func:`init_params`
    tokens : int array, shape ``(batch, seq)``
    config : ModelConfig

    Returns
    -------
    logits : array, shape ``(batch, seq, vocab_size)``
    cache : dict of intermediate arrays

    Raises
    ------
    IndexError
        For ``scheme="learned"`` when ``seq > max_len``: the table has no row for those positions,
        so the model cannot produce any output for such an input.

    References
    ----------
    Vaswani et al. 2017 (attention, sinusoidal encoding); Press et al. 2022 (ALiBi); Raffel et al.
    2020 (T5 bias); Su et al. 2021 (RoPE). The layer follows GPT-2's decoder block without layer
    norm, Hugging Face ``models/gpt2/modeling_gpt2.py`` (``GPT2Attention``, ``GPT2MLP``).
    """
    config = _config(config)
    _check_params(params, config)
    tokens = _check_tokens(tokens, config)
    n = tokens.shape[1]
    positions = np.arange(n)
    x = params["embed"][tokens]
    if config.scheme == "sinusoidal":
        x = x + sinusoidal_encoding(n, config.d_model)
    elif config.scheme == "learned":
        table = LearnedPositionalEmbedding(config.max_len, config.d_model, weight=params["pos"])
        x = x + table(positions)  # IndexError beyond max_len
    bias, buckets = _bias(params, config, n)
    rope_kwargs, logit_scale = _rope_kwargs(config, n)
    scale = 1.0 / np.sqrt(config.head_dim)
    if logit_scale != 1.0:
        scale = scale * logit_scale
    layers = []
    for layer in range(config.n_layers):
        p = f"l{layer}."
        c = {"x_in": x}
        q = _split_heads(_linear(x, params[p + "wq"]), config.n_heads)
        k = _split_heads(_linear(x, params[p + "wk"]), config.n_heads)
        v = _split_heads(_linear(x, params[p + "wv"]), config.n_heads)
        if config.scheme == "rope":
            # Queries and keys rotated in one call: the same angles for both.
            q, k = apply_rope(np.stack([q, k]), positions, layout="half", **rope_kwargs)
        weights = softmax(q @ k.transpose(0, 1, 3, 2) * scale + bias, axis=-1)
        heads = _merge_heads(weights @ v)
        x = x + _linear(heads, params[p + "wo"])
        c.update(q=q, k=k, v=v, weights=weights, heads=heads, x_mid=x)
        if config.d_mlp:
            pre = _linear(x, params[p + "w1"]) + params[p + "b1"]
            hidden = np.maximum(pre, 0.0)
            x = x + _linear(hidden, params[p + "w2"]) + params[p + "b2"]
            c.update(pre=pre, hidden=hidden)
        layers.append(c)
    logits = _linear(x, params["unembed"])
    cache = {"config": config, "tokens": tokens, "positions": positions, "buckets": buckets,
             "layers": layers, "x_out": x}
    return logits, cache


def backward(params, cache, dlogits, config):
    """Gradients of a scalar loss with respect to every parameter.

    Parameters
    ----------
    params : dict from :func:`init_params`
    cache : dict returned by :func:`forward` for the same ``params``
    dlogits : array, shape ``(batch, seq, vocab_size)``: d loss / d logits
    config : ModelConfig

    Returns
    -------
    dict with the keys and shapes of ``params``.

    References
    ----------
    The same chain rule, written out in C for GPT-2: karpathy/llm.c ``train_gpt2.c``
    (``attention_backward``, ``matmul_backward``, ``encoder_backward``). RoPE's transpose:
    Su et al. 2021, eq. (34) (``R`` is orthogonal).
    """
    config = _config(config)
    _check_params(params, config)
    if not (isinstance(cache, dict) and {"tokens", "positions", "layers", "x_out"} <= set(cache)
            and isinstance(cache["layers"], list) and len(cache["layers"]) == config.n_layers
            and cache["x_out"].shape[-1] == config.d_model
            and (config.scheme != "t5" or cache.get("buckets") is not None)):
        raise TypeError("cache must be the dict forward() returned for these params and config, "
                        f"got {type(cache).__name__}")
    if cache.get("config") != config:
        raise ValueError(f"cache was made by forward() with a different config "
                         f"({cache.get('config')!r}); pass the config used for forward")
    dlogits = val.numeric_array(dlogits, "dlogits")
    if dlogits.shape != cache["x_out"].shape[:-1] + (config.vocab_size,):
        raise ValueError(f"dlogits must have the logits' shape "
                         f"{cache['x_out'].shape[:-1] + (config.vocab_size,)}, got {dlogits.shape}")
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    tokens, positions = cache["tokens"], cache["positions"]
    d, h = config.d_model, config.n_heads
    rope_kwargs, logit_scale = _rope_kwargs(config, tokens.shape[1])
    scale = 1.0 / np.sqrt(config.head_dim)
    if logit_scale != 1.0:
        scale = scale * logit_scale
    grads["unembed"] = _weight_grad(cache["x_out"], dlogits)
    dx = _linear(dlogits, params["unembed"].T)
    for layer in reversed(range(config.n_layers)):
        p, c = f"l{layer}.", cache["layers"][layer]
        if config.d_mlp:
            grads[p + "b2"] = dx.sum(axis=(0, 1))
            grads[p + "w2"] = _weight_grad(c["hidden"], dx)
            dpre = _linear(dx, params[p + "w2"].T) * (c["pre"] > 0)
            grads[p + "b1"] = dpre.sum(axis=(0, 1))
            grads[p + "w1"] = _weight_grad(c["x_mid"], dpre)
            dx = dx + _linear(dpre, params[p + "w1"].T)
        grads[p + "wo"] = _weight_grad(c["heads"], dx)
        dheads = _split_heads(_linear(dx, params[p + "wo"].T), h)
        weights, q, k, v = c["weights"], c["q"], c["k"], c["v"]
        dv = weights.transpose(0, 1, 3, 2) @ dheads
        dweights = dheads @ v.transpose(0, 1, 3, 2)
        # Softmax Jacobian: dS_ij = A_ij (dA_ij - sum_l A_il dA_il); zero where A is zero (masked).
        dscores = weights * (dweights - np.sum(weights * dweights, axis=-1, keepdims=True))
        if config.scheme == "t5":
            grads["t5_table"] += _bucket_sums(dscores, cache["buckets"], config.t5_num_buckets)
        dq = dscores @ k * scale
        dk = dscores.transpose(0, 1, 3, 2) @ q * scale
        if config.scheme == "rope":
            # R_m is orthogonal, so R_m^T = R_{-m}: the gradient is rotated back by -m.
            dq, dk = apply_rope(np.stack([dq, dk]), -positions, layout="half", **rope_kwargs)
        dq, dk, dv = (_merge_heads(g) for g in (dq, dk, dv))
        grads[p + "wq"] = _weight_grad(c["x_in"], dq)
        grads[p + "wk"] = _weight_grad(c["x_in"], dk)
        grads[p + "wv"] = _weight_grad(c["x_in"], dv)
        dx = (dx + _linear(dq, params[p + "wq"].T) + _linear(dk, params[p + "wk"].T)
              + _linear(dv, params[p + "wv"].T))
    if config.scheme == "learned":
        grads["pos"][: tokens.shape[1]] = dx.sum(axis=0)
    grads["embed"] = _row_sums(dx.reshape(-1, d), tokens.reshape(-1), config.vocab_size)
    return grads


def _weight_grad(inputs, doutputs):
    """``sum over batch and positions of inputs^T @ doutputs`` for ``(batch, seq, .)`` arrays.

    Written as one matrix product over the flattened ``batch * seq`` rows: a single BLAS call
    instead of one per sequence.
    """
    return _flat(inputs).T @ _flat(doutputs)


def _flat(x):
    """``(..., d)`` to ``(rows, d)``, a view for the contiguous arrays used here."""
    return x.reshape(-1, x.shape[-1])


def _linear(x, weight):
    """``x @ weight`` for ``x`` of shape ``(..., d_in)``, as one matrix product over all rows."""
    return (_flat(x) @ weight).reshape(x.shape[:-1] + (weight.shape[-1],))


def _row_sums(values, index, n_rows):
    """``out[r] = sum of values[i] with index[i] == r`` (a scatter-add in a fixed order)."""
    out = np.zeros((n_rows, values.shape[1]))
    index = np.asarray(index).astype(np.intp, copy=False)  # np.bincount takes numpy's index type
    for column in range(values.shape[1]):
        out[:, column] = np.bincount(index, weights=values[:, column], minlength=n_rows)
    return out


def _bucket_sums(dscores, buckets, n_buckets):
    """``dtable[b, h] = sum over batch, i, j with bucket(i, j) == b of dscores[., h, i, j]``."""
    per_head = dscores.sum(axis=0).reshape(dscores.shape[1], -1)  # (heads, n*n)
    flat = buckets.reshape(-1).astype(np.intp, copy=False)  # np.bincount takes numpy's index type
    return np.stack([np.bincount(flat, weights=row, minlength=n_buckets) for row in per_head],
                    axis=1)


def cross_entropy(logits, labels, mask):
    """Mean cross-entropy over the positions where ``mask`` is true, and its gradient.

    ``loss = -(1/N) sum_{mask} log softmax(logits)[label]``, ``N = mask.sum()``;
    ``dlogits = (softmax(logits) - onehot(label)) * mask / N``.

    Parameters
    ----------
    logits : array ``(batch, seq, vocab)``; labels : int array ``(batch, seq)``;
    mask : bool array ``(batch, seq)`` with at least one true entry.

    Returns
    -------
    loss : float; dlogits : array ``(batch, seq, vocab)``
    """
    logits = val.numeric_array(logits, "logits").astype(np.float64)
    labels = val.numeric_array(labels, "labels", integer=True)
    mask = np.asarray(mask)
    if logits.ndim != 3 or labels.shape != logits.shape[:2] or mask.shape != labels.shape:
        raise ValueError(
            f"logits must be (batch, seq, vocab) and labels, mask (batch, seq); got logits "
            f"{logits.shape}, labels {labels.shape}, mask {mask.shape}"
        )
    if mask.dtype != np.bool_ or not mask.any():
        raise ValueError("mask must be a boolean array with at least one True entry")
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    count = int(mask.sum())
    picked = np.take_along_axis(log_probs, np.where(mask, labels, 0)[..., None], axis=-1)[..., 0]
    loss = -float(np.sum(picked[mask])) / count
    dlogits = np.exp(log_probs)
    b, s = np.nonzero(mask)
    dlogits[b, s, labels[b, s]] -= 1.0
    dlogits *= mask[..., None] / count
    return loss, dlogits


def loss_and_grads(params, config, tokens, labels, mask):
    """Cross-entropy loss of the model on a batch and its gradient for every parameter."""
    logits, cache = forward(params, tokens, config)
    loss, dlogits = cross_entropy(logits, labels, mask)
    return loss, backward(params, cache, dlogits, config)


def predict(params, tokens, config):
    """Most likely label at every position, int array ``(batch, seq)``."""
    logits, _ = forward(params, tokens, config)
    return np.argmax(logits, axis=-1)


def attention_to_offset(params, tokens, config, offset, *, from_position=0):
    """Mean attention weight each head puts on the key exactly ``offset`` positions back.

    Averages ``weights[b, h, i, i - offset]`` over the batch and over query positions
    ``i >= max(offset, from_position)``, for every layer.

    Returns
    -------
    array, shape ``(n_layers, n_heads)``, each entry in ``[0, 1]``.
    """
    offset = val.positive_int(offset, "offset", allow_zero=True)
    from_position = val.positive_int(from_position, "from_position", allow_zero=True)
    _, cache = forward(params, tokens, config)
    n = cache["tokens"].shape[1]
    queries = np.arange(max(offset, from_position), n)
    if queries.size == 0:
        raise ValueError(f"no query position >= max(offset, from_position) in a sequence of {n}")
    return np.stack([c["weights"][:, :, queries, queries - offset].mean(axis=(0, 2))
                     for c in cache["layers"]])


def attention_beyond(params, tokens, config, min_distance, *, from_position=0):
    """Mean attention mass each head puts on keys at least ``min_distance`` positions back.

    ``sum_{j <= i - min_distance} weights[b, h, i, j]``, averaged over the batch and over query
    positions ``i >= from_position``, for every layer. With ``min_distance`` equal to the
    training length, this is the attention that goes to distances never seen in training.

    Returns
    -------
    array, shape ``(n_layers, n_heads)``, each entry in ``[0, 1]``.
    """
    min_distance = val.positive_int(min_distance, "min_distance", allow_zero=True)
    from_position = val.positive_int(from_position, "from_position", allow_zero=True)
    _, cache = forward(params, tokens, config)
    n = cache["tokens"].shape[1]
    if from_position >= n:
        raise ValueError(f"from_position must be < the sequence length {n}, got {from_position}")
    queries = np.arange(from_position, n)
    far = np.arange(n)[None, :] <= queries[:, None] - min_distance  # (queries, keys)
    return np.stack([(c["weights"][:, :, queries, :] * far).sum(axis=-1).mean(axis=(0, 2))
                     for c in cache["layers"]])


def attention_entropy(params, tokens, config, *, from_position=0):
    """Mean entropy (in nats) of each head's attention distribution.

    ``-sum_j weights[b, h, i, j] ln weights[b, h, i, j]``, averaged over the batch and over query
    positions ``i >= from_position``, for every layer. Query ``i`` of a causal model attends to
    ``i + 1`` keys, so its entropy is at most ``ln(i + 1)`` (uniform attention).

    Returns
    -------
    array, shape ``(n_layers, n_heads)``.

    References
    ----------
    Peng et al. 2023 (YaRN), section 3.4: the temperature is motivated by the attention
    softmax's entropy, which grows with the number of keys.
    """
    from_position = val.positive_int(from_position, "from_position", allow_zero=True)
    _, cache = forward(params, tokens, config)
    n = cache["tokens"].shape[1]
    if from_position >= n:
        raise ValueError(f"from_position must be < the sequence length {n}, got {from_position}")
    out = []
    for c in cache["layers"]:
        w = c["weights"][:, :, from_position:, :]
        terms = np.where(w > 0, -w * np.log(np.where(w > 0, w, 1.0)), 0.0)
        out.append(terms.sum(axis=-1).mean(axis=(0, 2)))
    return np.stack(out)


def gradient_check(params, config, tokens, labels, mask, *, n_directions=2, eps=1e-5, seed=0):
    """Compare :func:`backward` with central finite differences, parameter by parameter.

    For each parameter array ``W`` and random unit directions ``u`` (``n_directions`` of them),
    compares the analytic directional derivative ``<dL/dW, u>`` with
    ``(L(W + eps u) - L(W - eps u)) / (2 eps)``. Central differences have error ``O(eps^2)``.

    Returns
    -------
    dict mapping each parameter name to the largest relative error
    ``|analytic - numeric| / max(|analytic|, |numeric|, 1e-12)`` over its directions.
    """
    config = _config(config)
    n_directions = val.positive_int(n_directions, "n_directions")
    eps = val.positive_float(eps, "eps")
    rng = np.random.default_rng(val.positive_int(seed, "seed", allow_zero=True))
    _, grads = loss_and_grads(params, config, tokens, labels, mask)
    errors = {}
    for name in params:
        worst = 0.0
        for _ in range(n_directions):
            u = rng.normal(size=params[name].shape)
            u /= np.linalg.norm(u)
            analytic = float(np.sum(grads[name] * u))
            losses = []
            for sign in (1.0, -1.0):
                shifted = dict(params)
                shifted[name] = params[name] + sign * eps * u
                logits, _ = forward(shifted, tokens, config)
                losses.append(cross_entropy(logits, labels, mask)[0])
            numeric = (losses[0] - losses[1]) / (2 * eps)
            denominator = max(abs(analytic), abs(numeric), 1e-12)
            worst = max(worst, abs(analytic - numeric) / denominator)
        errors[name] = worst
    return errors
