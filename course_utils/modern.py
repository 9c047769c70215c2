"""Position schemes of current models: partial RoPE, NoPE layers, two bases, MLA, attention sinks.

Models released from 2022 to 2025 mix schemes inside one network, and their configs carry the
switches:

* ``partial_rotary_factor`` (GPT-NeoX ``rotary_pct``, Phi, Qwen3-Next): only the first
  ``int(head_dim * factor)`` channels of a head are rotated (:func:`partial_rotary_dim`;
  rotate them with :func:`course_utils.rope.apply_rope` and ``rotary_dim``).
* ``no_rope_layers`` (Llama 4, SmolLM3): some layers skip RoPE (:func:`no_rope_layers`,
  :func:`llama4_layer_types`), and Llama 4 scales the queries of those layers by a factor that
  grows with the position (:func:`llama4_attn_scales`).
* ``layer_types`` with two RoPE bases (Gemma 3): sliding-window layers and global layers
  (:func:`sliding_window_layer_types`, :func:`sliding_window_mask`, :func:`turns_within`);
  Llama 4's RoPE layers attend within fixed chunks instead (:func:`chunked_attention_mask`).
* Multi-head latent attention (DeepSeek-V2/V3): a separate rotary part of width
  ``qk_rope_head_dim`` whose key is shared by all heads (:func:`deepseek_rope`,
  :func:`mla_scores`, :func:`deepseek_softmax_scale`).
* Attention sinks: GPT-OSS's learned sink logit per head (:func:`attention_with_sinks`) and
  StreamingLLM's rolling cache (:func:`streaming_cache`).

Notation as on the course's notation page: query position ``m``, key position ``n``,
``r = n - m``, pair index ``i``, ``theta_i = b^(-2i/d)`` with ``d`` the rotated width.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate as val
from .attention import softmax
from .rope import apply_rope, interleaved_to_half_permutation

__all__ = [
    "partial_rotary_dim",
    "no_rope_layers",
    "llama4_layer_types",
    "smollm3_layer_types",
    "sliding_window_layer_types",
    "llama4_attn_scales",
    "sliding_window_mask",
    "chunked_attention_mask",
    "turns_within",
    "deepseek_rope",
    "deepseek_softmax_scale",
    "mla_scores",
    "attention_with_sinks",
    "streaming_cache",
]


def partial_rotary_dim(head_dim, partial_rotary_factor):
    """Number of channels of a head that RoPE rotates: ``int(head_dim * partial_rotary_factor)``.

    Parameters
    ----------
    head_dim : int
        Width of one attention head.
    partial_rotary_factor : float in ``(0, 1]``
        The config's ``partial_rotary_factor`` (GPT-NeoX's ``rotary_pct``).

    Returns
    -------
    int, even: the rotated width ``d``; the other ``head_dim - d`` channels pass unchanged, and
    the frequencies are ``theta_i = b^(-2i/d)`` over the rotated width, not over ``head_dim``.

    Raises
    ------
    ValueError
        If the factor is outside ``(0, 1]`` or the product truncates to an odd or zero width.

    References
    ----------
    Hugging Face ``models/gpt_neox/modeling_gpt_neox.py``
    ``GPTNeoXRotaryEmbedding.compute_default_rope_parameters``
    (``dim = int(head_dim * partial_rotary_factor)``, the same line in Phi's and Qwen3-Next's
    rotary embeddings) and ``apply_rotary_pos_emb`` (``q_rot``, ``q_pass``);
    ``models/phi/modeling_phi.py`` (``query_rot``, ``query_pass``).
    """
    head_dim = val.positive_int(head_dim, "head_dim")
    factor = val.positive_float(partial_rotary_factor, "partial_rotary_factor")
    if factor > 1:
        raise ValueError(f"partial_rotary_factor must lie in (0, 1], got {factor!r}")
    rotary = int(head_dim * factor)
    if rotary == 0 or rotary % 2:
        raise ValueError(  # RoPE rotates pairs of channels
            f"partial_rotary_factor={factor!r} rotates int({head_dim} * {factor!r}) = {rotary} "
            "channels, not even"
        )
    return rotary


def no_rope_layers(num_hidden_layers, no_rope_layer_interval=4):
    """The config list ``no_rope_layers``: 1 where a layer **uses** RoPE, 0 where it does not.

    ``flag[l] = int((l + 1) % interval != 0)``: with ``interval = 4`` the layers
    ``3, 7, 11, ...`` (0-based) are NoPE layers. Despite its name, the list marks the layers
    that keep RoPE (``self.use_rope = config.no_rope_layers[layer_idx]``).

    Parameters
    ----------
    num_hidden_layers : int
    no_rope_layer_interval : int
        Every ``interval``-th layer skips RoPE.

    Returns
    -------
    int64 array, shape ``(num_hidden_layers,)``, of 0 and 1.

    References
    ----------
    Hugging Face ``models/llama4/configuration_llama4.py`` ``Llama4TextConfig.__post_init__``
    and ``models/smollm3/configuration_smollm3.py`` ``SmolLM3Config.__post_init__`` (the same
    formula); ``Llama4TextAttention.use_rope`` in ``models/llama4/modeling_llama4.py``.
    """
    n = val.positive_int(num_hidden_layers, "num_hidden_layers")
    interval = val.positive_int(no_rope_layer_interval, "no_rope_layer_interval")
    return ((np.arange(n) + 1) % interval != 0).astype(np.int64)


def _flags(flags, arg):
    flags = val.numeric_array(flags, arg, integer=True)
    if flags.ndim != 1 or flags.size == 0 or not np.isin(flags, (0, 1)).all():
        raise ValueError(f"{arg} must be a non-empty 1-D list of 0 and 1 (1 = the layer uses RoPE)")
    return flags


def llama4_layer_types(no_rope_layers_list):
    """Llama 4's ``layer_types``: RoPE layers attend within chunks, NoPE layers to everything.

    ``"chunked_attention"`` where ``no_rope_layers[l] == 1`` (RoPE, local chunks of
    ``attention_chunk_size`` tokens), ``"full_attention"`` where it is 0 (NoPE, global).

    Returns
    -------
    list of str, one per layer.

    References
    ----------
    Hugging Face ``models/llama4/configuration_llama4.py`` ``Llama4TextConfig.__post_init__``.
    """
    flags = _flags(no_rope_layers_list, "no_rope_layers_list")
    return ["chunked_attention" if f else "full_attention" for f in flags.tolist()]


def smollm3_layer_types(no_rope_layers_list, *, use_sliding_window=False, sliding_window=None):
    """SmolLM3's ``layer_types``: ``"sliding_attention"`` only for NoPE layers, and only when
    ``use_sliding_window`` is set with a ``sliding_window``; otherwise ``"full_attention"``.

    References
    ----------
    Hugging Face ``models/smollm3/configuration_smollm3.py`` ``SmolLM3Config.__post_init__``.
    """
    flags = _flags(no_rope_layers_list, "no_rope_layers_list")
    use = val.boolean(use_sliding_window, "use_sliding_window")
    if sliding_window is not None:
        sliding_window = val.positive_int(sliding_window, "sliding_window")
    sliding = use and sliding_window is not None
    return ["sliding_attention" if sliding and not f else "full_attention" for f in flags.tolist()]


def sliding_window_layer_types(num_hidden_layers, sliding_window_pattern):
    """Layer types of the local/global pattern: every ``pattern``-th layer is global.

    ``"sliding_attention"`` where ``(l + 1) % pattern != 0``, else ``"full_attention"``:
    Gemma 3 uses 6 (five local layers, then one global), Gemma 2 and GPT-OSS 2.

    Returns
    -------
    list of str, one per layer.

    References
    ----------
    Hugging Face ``models/gemma3/configuration_gemma3.py`` ``Gemma3TextConfig.__post_init__``
    (``sliding_window_pattern``, default 6); ``models/gpt_oss/configuration_gpt_oss.py``
    (``(i + 1) % 2``).
    """
    n = val.positive_int(num_hidden_layers, "num_hidden_layers")
    pattern = val.positive_int(sliding_window_pattern, "sliding_window_pattern")
    return ["sliding_attention" if (layer + 1) % pattern else "full_attention" for layer in range(n)]


def llama4_attn_scales(positions, *, floor_scale=8192, attn_scale=0.1):
    """Llama 4's query scale in NoPE layers: ``1 + attn_scale * ln(1 + floor((m + 1) / floor_scale))``.

    The factor multiplies the query (not cos and sin), so the scores of query ``m`` grow by the
    same factor: 1 for the first ``floor_scale - 1`` positions, then a step up every
    ``floor_scale`` positions, growing like the logarithm of the position.

    Parameters
    ----------
    positions : array_like of non-negative integers, any shape
        Absolute query positions ``m`` (with a cache: ``arange(n_new) + past_seen_tokens``).
    floor_scale : int
        ``floor_scale`` (8192 in ``Llama4TextConfig``).
    attn_scale : float
        ``attn_scale`` (0.1).

    Returns
    -------
    float64 array of ``positions``' shape.

    References
    ----------
    Hugging Face ``models/llama4/modeling_llama4.py`` ``Llama4TextAttention.forward``
    (``attn_temperature_tuning``); Meta ``meta-llama/llama-models`` ``models/llama4/args.py``
    (``floor_scale``, ``attn_scale``). The code comment cites Nakanishi 2025, arXiv:2501.19399.
    """
    m = val.numeric_array(positions, "positions", integer=True)
    if m.size and m.min() < 0:
        raise ValueError(f"positions must be non-negative, got a minimum of {int(m.min())}")
    floor_scale = val.positive_int(floor_scale, "floor_scale")
    attn_scale = val.real_float(attn_scale, "attn_scale")
    return 1.0 + attn_scale * np.log1p(np.floor((m + 1.0) / floor_scale))


def sliding_window_mask(n_queries, window, n_keys=None):
    """Boolean ``(n_queries, n_keys)`` mask of causal sliding-window attention.

    True where ``0 <= m - n < window``: each query sees itself and the ``window - 1`` keys before
    it. Queries are the last ``n_queries`` of the ``n_keys`` positions, as in
    :func:`course_utils.attention.causal_mask`.

    References
    ----------
    Hugging Face ``masking_utils.py`` ``sliding_window_overlay`` (``kv_idx > q_idx - sliding_window``);
    openai/gpt-oss ``gpt_oss/torch/model.py`` ``sdpa`` (``tril(..., diagonal=-sliding_window)``).
    """
    n_queries, n_keys = val.query_key_counts(n_queries, n_keys)
    window = val.positive_int(window, "window")
    m = np.arange(n_keys - n_queries, n_keys)[:, None]
    distance = m - np.arange(n_keys)[None, :]
    return (distance >= 0) & (distance < window)


def chunked_attention_mask(n_queries, chunk_size, n_keys=None):
    """Boolean ``(n_queries, n_keys)`` mask of causal chunked attention (Llama 4's RoPE layers).

    True where ``n <= m`` and ``n // C == m // C``: the positions are cut into fixed blocks of
    ``C = chunk_size`` tokens, and each query sees only the earlier keys of its own block. Unlike
    a sliding window, what a query sees depends on where it sits in its chunk: the first query
    of a chunk sees only itself, the last one ``C`` keys. Queries are the last ``n_queries`` of
    the ``n_keys`` positions, as in :func:`sliding_window_mask` (no left padding).

    Parameters
    ----------
    n_queries : int
    chunk_size : int
        The config's ``attention_chunk_size`` (8192 for Llama 4).
    n_keys : int, optional
        Defaults to ``n_queries``; at least ``n_queries``.

    Returns
    -------
    bool array, shape ``(n_queries, n_keys)``.

    References
    ----------
    Hugging Face ``masking_utils.py`` ``chunked_overlay`` (``kv_idx // chunk_size ==
    q_idx // chunk_size``, on top of the causal mask) and ``create_chunked_causal_mask``, used
    for the ``"chunked_attention"`` layers in ``models/llama4/modeling_llama4.py``
    (``Llama4TextModel.forward``).
    """
    n_queries, n_keys = val.query_key_counts(n_queries, n_keys)
    chunk_size = val.positive_int(chunk_size, "chunk_size")
    m = np.arange(n_keys - n_queries, n_keys)[:, None]
    n = np.arange(n_keys)[None, :]
    return (n <= m) & (n // chunk_size == m // chunk_size)


def turns_within(span, inv_freq):
    """Full turns each pair makes over ``span`` positions: ``span * theta_i / (2 pi)``.

    :func:`course_utils.scaling.rotations_in_context` for any frequencies (scaled ones too) and
    any span: a sliding window, a chunk, or the whole context.

    Parameters
    ----------
    span : int
        Number of positions (``W`` for a window, ``L`` for a context).
    inv_freq : array_like, shape ``(n_pairs,)``, positive

    Returns
    -------
    float64 array, shape ``(n_pairs,)``.

    References
    ----------
    Peng et al. 2023 (YaRN), section 3.2, ``r = L / lambda``.
    """
    span = val.positive_int(span, "span")
    inv_freq = val.numeric_array(inv_freq, "inv_freq").astype(np.float64)
    if inv_freq.ndim != 1 or inv_freq.size == 0 or np.any(inv_freq <= 0):
        raise ValueError(f"inv_freq must be a non-empty 1-D array of positive numbers, got shape "
                         f"{inv_freq.shape}")
    return span * inv_freq / (2 * np.pi)


def deepseek_rope(x, positions, *, inv_freq, rope_interleave=True):
    """DeepSeek-V3's rotation of the rotary part of queries and keys, as transformers runs it.

    * ``rope_interleave=True``: the input holds pairs ``(x_{2i}, x_{2i+1})`` (the layout of the
      released weights); the output puts every pair's first element first, then every pair's
      second: ``apply_rope(x, layout="interleaved")[..., perm]`` with ``perm`` =
      :func:`course_utils.rope.interleaved_to_half_permutation`. Queries and keys get the same
      permutation, so the scores are those of the interleaved rotation.
    * ``rope_interleave=False``: the half layout, ``apply_rope(x, layout="half")``.

    Parameters
    ----------
    x : array, shape ``(..., seq, qk_rope_head_dim)``
    positions : array_like broadcastable to ``(..., seq)``
    inv_freq : array, shape ``(qk_rope_head_dim // 2,)``
        For example :func:`course_utils.scaling.rope_scaling` ``("yarn", ...)``.
    rope_interleave : bool

    Returns
    -------
    array of ``x``'s shape.

    References
    ----------
    Hugging Face ``models/deepseek_v3/modeling_deepseek_v3.py``
    ``apply_rotary_pos_emb_interleave`` and ``apply_rotary_pos_emb``; deepseek-ai/DeepSeek-V3
    ``inference/model.py`` ``apply_rotary_emb`` (complex pairs of adjacent channels).
    """
    interleave = val.boolean(rope_interleave, "rope_interleave")
    if not interleave:
        return apply_rope(x, positions, layout="half", inv_freq=inv_freq)
    out = apply_rope(x, positions, layout="interleaved", inv_freq=inv_freq)
    return out[..., interleaved_to_half_permutation(out.shape[-1])]


def _yarn_mscale(scale, mscale):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def deepseek_softmax_scale(qk_head_dim, rope_parameters=None):
    """DeepSeek-V3's softmax scale: ``qk_head_dim^-1/2``, times ``mscale(s, mscale_all_dim)^2``.

    With YaRN (``rope_type`` other than ``"default"``) and a non-zero ``mscale_all_dim``, the
    scale is multiplied by ``(0.1 mscale_all_dim ln s + 1)^2``. ``mscale_all_dim`` is a key of
    ``rope_scaling`` in DeepSeek-V3's ``config.json`` (``rope_parameters`` in transformers);
    DeepSeek's own ``ModelArgs`` has only ``mscale``, which its ``MLA`` uses the same way. This factor acts on the whole
    score, the rotary and the non-rotary channels alike; the YaRN ``attention_factor`` on cos
    and sin is then ``mscale(s, mscale) / mscale(s, mscale_all_dim)``, which is 1 when both
    are equal (as in DeepSeek-V3, both 1.0).

    Parameters
    ----------
    qk_head_dim : int
        ``qk_nope_head_dim + qk_rope_head_dim``.
    rope_parameters : dict, optional
        The config's ``rope_parameters`` (keys ``rope_type``, ``factor``, ``mscale_all_dim``).

    Returns
    -------
    float

    References
    ----------
    Hugging Face ``models/deepseek_v3/modeling_deepseek_v3.py`` ``yarn_apply_mscale`` and
    ``DeepseekV3Attention.__init__``; deepseek-ai/DeepSeek-V3 ``inference/model.py``
    ``MLA.__init__`` (``softmax_scale = softmax_scale * mscale * mscale``, with
    ``mscale = 0.1 * args.mscale * math.log(args.rope_factor) + 1.0``).
    """
    qk_head_dim = val.positive_int(qk_head_dim, "qk_head_dim")
    scale = qk_head_dim ** -0.5
    if rope_parameters is None:
        return scale
    if not isinstance(rope_parameters, dict):
        raise TypeError(f"rope_parameters must be a dict or None, got {type(rope_parameters).__name__}")
    if rope_parameters.get("rope_type", "default") == "default":
        return scale
    mscale_all_dim = rope_parameters.get("mscale_all_dim", 0) or 0
    if not mscale_all_dim:
        return scale
    if "factor" not in rope_parameters:
        raise ValueError("rope_parameters with mscale_all_dim must give the YaRN 'factor'")
    factor = val.positive_float(rope_parameters["factor"], "rope_parameters['factor']")
    mscale = _yarn_mscale(factor, val.real_float(mscale_all_dim, "rope_parameters['mscale_all_dim']"))
    return scale * mscale * mscale


def mla_scores(q_nope, q_rope, k_nope, k_rope, positions, *, inv_freq, rope_interleave=True,
               scale=None):
    """Attention scores of multi-head latent attention with decoupled RoPE.

    ``s_h[m, n] = scale * (q_nope_h[m] . k_nope_h[n] + R_m q_rope_h[m] . R_n k_rope[n])``: the
    content part carries no position; the rotary part uses a key ``k_rope`` shared by all heads
    (one per token, cached next to the compressed latent).

    Parameters
    ----------
    q_nope : array, shape ``(heads, seq, qk_nope_head_dim)``
    q_rope : array, shape ``(heads, seq, qk_rope_head_dim)``
    k_nope : array, shape ``(heads, seq, qk_nope_head_dim)``
        The per-head keys decompressed from the latent (``kv_b_proj``).
    k_rope : array, shape ``(seq, qk_rope_head_dim)``
        The shared rotary key (``kv_a_proj_with_mqa``'s last ``qk_rope_head_dim`` outputs).
    positions : array_like, shape ``(seq,)``
    inv_freq : array, shape ``(qk_rope_head_dim // 2,)``
    rope_interleave : bool
        See :func:`deepseek_rope`.
    scale : float, optional
        Default ``(qk_nope_head_dim + qk_rope_head_dim)^-1/2``; see :func:`deepseek_softmax_scale`.

    Returns
    -------
    float64 array, shape ``(heads, seq, seq)``, before any mask.

    References
    ----------
    DeepSeek-AI 2024, DeepSeek-V2, section 2.1.3 (decoupled rotary position embedding);
    Hugging Face ``models/deepseek_v3/modeling_deepseek_v3.py`` ``DeepseekV3Attention.forward``
    and ``expand_kv``.
    """
    q_nope = val.numeric_array(q_nope, "q_nope").astype(np.float64)
    q_rope = val.numeric_array(q_rope, "q_rope").astype(np.float64)
    k_nope = val.numeric_array(k_nope, "k_nope").astype(np.float64)
    k_rope = val.numeric_array(k_rope, "k_rope").astype(np.float64)
    if q_nope.ndim != 3 or q_rope.ndim != 3 or k_nope.ndim != 3 or k_rope.ndim != 2:
        raise ValueError(
            "q_nope, q_rope and k_nope must be (heads, seq, dim) and k_rope (seq, dim); got shapes "
            f"{q_nope.shape}, {q_rope.shape}, {k_nope.shape}, {k_rope.shape}"
        )
    heads, seq, d_nope = q_nope.shape
    if k_nope.shape != (heads, seq, d_nope) or q_rope.shape[:2] != (heads, seq) \
            or k_rope.shape != (seq, q_rope.shape[2]):
        raise ValueError(
            f"shapes do not match: q_nope {q_nope.shape}, k_nope {k_nope.shape} must be equal; "
            f"q_rope {q_rope.shape} must be (heads, seq, d_rope) and k_rope {k_rope.shape} "
            "(seq, d_rope)"
        )
    qk_head_dim = d_nope + q_rope.shape[2]
    scale = qk_head_dim ** -0.5 if scale is None else val.positive_float(scale, "scale")
    q_rot = deepseek_rope(q_rope, positions, inv_freq=inv_freq, rope_interleave=rope_interleave)
    k_rot = deepseek_rope(k_rope, positions, inv_freq=inv_freq, rope_interleave=rope_interleave)
    content = q_nope @ np.swapaxes(k_nope, -1, -2)
    position = q_rot @ k_rot.T  # the same rotated key for every head
    return scale * (content + position)


def attention_with_sinks(q, k, v, sink_logits, *, causal=True, window=None):
    """Attention with one learned sink logit per head, as GPT-OSS computes it.

    ``a[m, :] = softmax([s_m1, ..., s_mN, z_h])[:N]``: the sink ``z_h`` joins every row's
    softmax and is then dropped, so each row's weights sum to less than 1, as if a key with
    logit ``z_h`` and a zero value were always present.

    Parameters
    ----------
    q : array, shape ``(heads, n_queries, d)``
    k, v : arrays, shape ``(heads, n_keys, d)`` and ``(heads, n_keys, d_v)``
    sink_logits : array, shape ``(heads,)``
    causal : bool
    window : int, optional
        Sliding window (:func:`sliding_window_mask`); implies ``causal``.

    Returns
    -------
    output : array, shape ``(heads, n_queries, d_v)``
    weights : array, shape ``(heads, n_queries, n_keys)``, rows summing to less than 1.

    References
    ----------
    Hugging Face ``models/gpt_oss/modeling_gpt_oss.py`` ``eager_attention_forward``
    (``combined_logits``, ``probs[..., :-1]``); openai/gpt-oss ``gpt_oss/torch/model.py`` ``sdpa``.
    """
    q = val.numeric_array(q, "q").astype(np.float64)
    k = val.numeric_array(k, "k").astype(np.float64)
    v = val.numeric_array(v, "v").astype(np.float64)
    sinks = val.numeric_array(sink_logits, "sink_logits").astype(np.float64)
    causal = val.boolean(causal, "causal")
    if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
        raise ValueError(f"q, k and v must be (heads, seq, dim); got {q.shape}, {k.shape}, {v.shape}")
    heads = q.shape[0]
    if k.shape[0] != heads or v.shape[0] != heads or q.shape[2] != k.shape[2] \
            or k.shape[1] != v.shape[1]:
        raise ValueError(f"q {q.shape}, k {k.shape} and v {v.shape} do not fit together")
    if sinks.shape != (heads,):
        raise ValueError(f"sink_logits must have shape (heads,) = ({heads},), got {sinks.shape}")
    n_queries, n_keys = q.shape[1], k.shape[1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[2])
    if window is not None:
        allowed = sliding_window_mask(n_queries, window, n_keys)
    elif causal:
        allowed = sliding_window_mask(n_queries, n_keys, n_keys)
    else:
        allowed = np.ones((n_queries, n_keys), dtype=bool)
    scores = np.where(allowed, scores, -np.inf)
    column = np.broadcast_to(sinks[:, None, None], (heads, n_queries, 1))
    weights = softmax(np.concatenate([scores, column], axis=-1), axis=-1)[..., :-1]
    return weights @ v, weights


def streaming_cache(n_tokens, *, n_sink, window, reassign=True):
    """StreamingLLM's cache after ``n_tokens`` tokens: the first ``n_sink`` and the last ``window``.

    Parameters
    ----------
    n_tokens : int
        Tokens seen so far (the newest is token ``n_tokens - 1``).
    n_sink : int, >= 0
        Initial tokens kept for good: 4 by default in the paper (section 4) and in the authors'
        code (``start_size=4``, mit-han-lab/streaming-llm ``streaming_llm/kv_cache.py``).
    window : int
        Most recent tokens kept.
    reassign : bool
        True: positions are the slots in the cache, ``0, 1, ..., len(kept) - 1`` (the paper's
        choice); False: the tokens keep their original positions.

    Returns
    -------
    kept : int64 array, the token indices held in the cache, in order.
    positions : int64 array of the same shape, the positions RoPE uses for them.

    References
    ----------
    Xiao et al. 2024 (StreamingLLM), section 3.2: positions are assigned "within the cache"
    rather than "in the original text" (tokens 0-3 and 6-9 cached get positions 0..7);
    mit-han-lab/streaming-llm ``streaming_llm/kv_cache.py`` (``StartRecentKVCache``).
    """
    n_tokens = val.positive_int(n_tokens, "n_tokens")
    n_sink = val.positive_int(n_sink, "n_sink", allow_zero=True)
    window = val.positive_int(window, "window")
    reassign = val.boolean(reassign, "reassign")
    if n_tokens <= n_sink + window:
        kept = np.arange(n_tokens)
    else:
        kept = np.concatenate([np.arange(n_sink), np.arange(n_tokens - window, n_tokens)])
    positions = np.arange(kept.size) if reassign else kept.copy()
    return kept.astype(np.int64), positions.astype(np.int64)
