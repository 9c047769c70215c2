"""Rotary position embedding (RoPE, Su et al. 2021).

RoPE rotates each pair ``i`` of channels of a query or key by the angle ``m * theta_i`` where ``m``
is the position and ``theta_i = base^(-2i/d)`` (notation as on the course's notation page: query
position ``m``, key position ``n``, relative position ``r = n - m``). Which channels form a pair
is a convention:

* ``layout="half"``: pairs ``(x_i, x_{i + d/2})``; Hugging Face ``rotate_half`` and
  ``apply_rotary_pos_emb`` in ``models/llama/modeling_llama.py`` (also called the "NeoX" layout).
* ``layout="interleaved"``: pairs ``(x_{2i}, x_{2i+1})``; the paper, Meta's LLaMA code, GPT-J
  (``rotate_every_two`` in ``models/gptj/modeling_gptj.py``), RoFormer.

Both are the same rotation after a fixed permutation of the channels
(:func:`interleaved_to_half_permutation`).
"""

from __future__ import annotations

import numpy as np

from . import _validate as val

__all__ = [
    "LAYOUTS",
    "rope_inv_freq",
    "apply_rope",
    "rope_rotation_matrix",
    "interleaved_to_half_permutation",
    "permute_qk_weight_for_half_layout",
    "roformer_decay_bound",
    "PRECISIONS",
    "round_to_bfloat16",
    "rope_angles",
]

LAYOUTS = ("half", "interleaved")


def rope_inv_freq(head_dim, *, base=10000.0):
    """Inverse frequencies ``theta_i = 1 / base^(2i / head_dim)``, ``i = 0 .. head_dim/2 - 1``.

    Shape ``(head_dim // 2,)``, float64. Hugging Face computes the same values in float32
    (``_compute_default_rope_parameters`` in ``modeling_rope_utils.py``).
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    base = val.positive_float(base, "base", minimum=1.0)
    return 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def _check_inv_freq(inv_freq, n_pairs):
    inv_freq = val.numeric_array(inv_freq, "inv_freq").astype(np.float64)
    if inv_freq.shape != (n_pairs,):
        raise ValueError(
            f"inv_freq must have shape (rotary_dim // 2,) = ({n_pairs},), got {inv_freq.shape}"
        )
    return inv_freq


def _rotate_pairs(x, cos, sin, out, layout):
    """Write the rotated ``x`` into ``out``: ``(a, b) -> (a cos - b sin, b cos + a sin)`` per pair.

    ``x`` and ``out`` are ``(..., rotary_dim)``; ``cos`` and ``sin`` are ``(..., rotary_dim // 2)``.
    Both layouts compute the same two products and one sum per channel, in the order that is
    fastest for their memory layout (so the two layouts agree to the last bit after the channel
    permutation).
    """
    n_pairs = cos.shape[-1]
    if layout == "half":
        # Hugging Face's formula on whole rows: x * cat(cos, cos) + rotate_half(x) * cat(sin, sin),
        # with rotate_half(x) = cat(-x2, x1). Viewing the channels as (2, n_pairs), rotate_half is
        # a flip of the first axis and the sign moves into the sin table: (-sin, +sin).
        xp = x.reshape(x.shape[:-1] + (2, n_pairs))  # splitting the last axis is a view, not a copy
        outp = out.reshape(out.shape[:-1] + (2, n_pairs))
        np.multiply(xp, np.stack([cos, cos], axis=-2), out=outp)
        outp += np.flip(xp, axis=-2) * np.stack([-sin, sin], axis=-2)
    else:
        # Adjacent pairs: multiply every channel by its pair's cos in one pass, then add the cross
        # terms to the even and odd channels (GPT-J's rotate_every_two, written without a copy).
        np.multiply(x, np.repeat(cos, 2, axis=-1), out=out)
        out[..., 0::2] -= x[..., 1::2] * sin
        out[..., 1::2] += x[..., 0::2] * sin


def apply_rope(x, positions, *, base=10000.0, layout, inv_freq=None, rotary_dim=None):
    """Rotate queries or keys ``x`` by their positions.

    ``y = x * cos(m theta) + rotate(x) * sin(m theta)`` pair by pair, where ``rotate`` maps each
    pair ``(a, b)`` to ``(-b, a)``.

    Parameters
    ----------
    x : array, shape ``(..., seq, head_dim)``
    positions : array_like, broadcastable to ``(..., seq)``
        Integer or fractional positions ``m`` (fractional ones arise in Position Interpolation).
    base : float
        ``theta_i = base^(-2i/rotary_dim)``; ignored when ``inv_freq`` is given.
    layout : {"half", "interleaved"}
        Required: which channels form a pair (see the module docstring).
    inv_freq : array, shape ``(rotary_dim // 2,)``, optional
        Frequencies to use instead of ``base`` (for example from :func:`course_utils.scaling.rope_scaling`).
    rotary_dim : int, optional
        Rotate only the first ``rotary_dim`` channels and pass the rest through (partial rotary,
        Hugging Face ``partial_rotary_factor``, GPT-NeoX ``rotary_pct``). Default: all of them.

    Returns
    -------
    array of ``x``'s shape (broadcast with ``positions``), float64, or float32/float16 if ``x`` is.
    Angles and their cos/sin are formed in float64 whatever the dtype of ``x``.

    Notes
    -----
    Speed: cos and sin are computed once per entry of ``positions`` (not per element of ``x``),
    and the rotation is a multiply pass into a preallocated output plus a multiply-add of the
    cross terms (one temporary), about 3x the time of a single ``x * c`` pass over the array
    (``make bench``). Where clarity won over speed: a compiled kernel would fuse the two passes,
    and viewing interleaved pairs as complex numbers (as Meta's LLaMA ``apply_rotary_emb`` does)
    is faster but rounds differently (a fused multiply-add), so the two layouts would no longer
    agree to the last bit.

    Precision: angles ``m * theta_i`` are formed in float64, whose spacing near ``m = 10^6`` is
    about ``1e-10``, so rotations stay accurate to about ``1e-9`` there. A float32 ``x`` gets
    float64 angles rounded to float32 cos/sin (error about ``6e-8`` each, at any position); forming
    the angle itself in float32 (:func:`rope_angles` with ``precision="float32"``) rounds the
    position, the frequency and their product, an error of up to ``3 m theta_i 2^-24`` radians:
    0.05 rad for ``head_dim = 128`` at ``m = 10^6`` (``tests/test_precision.py`` checks both).

    References
    ----------
    Su et al. 2021, eq. (34); Hugging Face ``models/llama/modeling_llama.py`` ``rotate_half``,
    ``apply_rotary_pos_emb``; ``models/gptj/modeling_gptj.py`` ``rotate_every_two``.
    """
    x = val.numeric_array(x, "x", min_ndim=2)
    layout = val.choice(layout, "layout", LAYOUTS)
    head_dim = x.shape[-1]
    if rotary_dim is None:
        if head_dim % 2 or head_dim == 0:
            raise ValueError(f"x's last dimension (head_dim) must be a positive even integer, got {head_dim}")
        rotary_dim = head_dim
    else:
        rotary_dim = val.positive_int(rotary_dim, "rotary_dim", even=True)
        if rotary_dim > head_dim:
            raise ValueError(f"rotary_dim must be <= head_dim ({head_dim}), got {rotary_dim}")
    n_pairs = rotary_dim // 2
    if inv_freq is None:
        inv_freq = rope_inv_freq(rotary_dim, base=base)
    else:
        inv_freq = _check_inv_freq(inv_freq, n_pairs)
    positions = val.numeric_array(positions, "positions").astype(np.float64)
    try:
        pos_shape = np.broadcast_shapes(positions.shape, x.shape[:-1])
    except ValueError as exc:
        raise ValueError(
            f"positions of shape {positions.shape} do not broadcast to x's (..., seq) = {x.shape[:-1]}"
        ) from exc

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    angles = positions[..., None] * inv_freq  # (..., seq, n_pairs)
    cos = np.cos(angles).astype(dtype, copy=False)
    sin = np.sin(angles).astype(dtype, copy=False)

    out = np.empty(pos_shape + (head_dim,), dtype=dtype)
    _rotate_pairs(x[..., :rotary_dim], cos, sin, out[..., :rotary_dim], layout)
    out[..., rotary_dim:] = x[..., rotary_dim:]
    return out


def rope_rotation_matrix(position, head_dim, *, base=10000.0, layout, inv_freq=None):
    """The ``(head_dim, head_dim)`` orthogonal matrix ``R_m`` with ``apply_rope(x, m) = R_m @ x``."""
    position = val.real_float(position, "position")
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    layout = val.choice(layout, "layout", LAYOUTS)
    eye = np.eye(head_dim)
    # Column j of R_m is R_m e_j: rotate the identity's rows (each a basis vector) and transpose.
    return apply_rope(eye, np.full(head_dim, position), base=base, layout=layout,
                      inv_freq=inv_freq).T


def interleaved_to_half_permutation(head_dim):
    """Channel order ``perm`` with ``x_half = x_interleaved[..., perm]``: even channels, then odd.

    ``apply_rope(x[..., perm], m, layout="half") == apply_rope(x, m, layout="interleaved")[..., perm]``.
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    return np.concatenate([np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)])


def permute_qk_weight_for_half_layout(weight, n_heads):
    """Reorder the output rows of a query/key projection from the interleaved to the half layout.

    ``weight`` has shape ``(n_heads * head_dim, d_model)``; within each head the rows are
    reordered by :func:`interleaved_to_half_permutation`. This is what Hugging Face's
    ``models/llama/convert_llama_weights_to_hf.py`` ``permute`` does to ``wq`` and ``wk`` (and not
    to ``wv`` or ``wo``, which RoPE never touches).
    """
    weight = val.numeric_array(weight, "weight")
    n_heads = val.positive_int(n_heads, "n_heads")
    if weight.ndim != 2 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(
            f"weight must have shape (n_heads * head_dim, d_model) with an even head_dim; got "
            f"{weight.shape} with n_heads={n_heads}"
        )
    head_dim = weight.shape[0] // n_heads
    perm = interleaved_to_half_permutation(head_dim)
    rows = (np.arange(n_heads)[:, None] * head_dim + perm[None, :]).reshape(-1)
    return weight[rows]


def roformer_decay_bound(relative_distance, head_dim, *, base=10000.0):
    """RoFormer's long-term decay curve: ``(1/(d/2)) sum_j |S_j|``, ``S_j = sum_{l<j} exp(i r theta_l)``.

    Su et al. 2021, section 3.4.3: with ``eta_i = conj(z_q,i) z_k,i`` the content of pair ``i``
    (the paper's ``h_i``), ``|<R_m q, R_n k>| <= max_i |eta_(i+1) - eta_i| * sum_j |S_j|``, that is
    this quantity times ``(d/2) max_i |eta_(i+1) - eta_i|``; it shrinks (not monotonically) as the
    distance ``|r| = |n - m|`` grows. At distance 0 it is ``(d/2 + 1) / 2``, e.g. 32.5 for
    ``d = 128``.

    Returns an array of ``relative_distance``'s shape.
    """
    dist = val.numeric_array(relative_distance, "relative_distance").astype(np.float64)
    theta = rope_inv_freq(head_dim, base=base)
    phases = np.exp(1j * dist[..., None] * theta)
    partial_sums = np.cumsum(phases, axis=-1)
    return np.mean(np.abs(partial_sums), axis=-1)


PRECISIONS = ("float64", "float32", "float16", "bfloat16")


def round_to_bfloat16(x):
    """Round to the nearest bfloat16 value (ties to even), returned as float32.

    NumPy has no bfloat16 type, so this emulates one: bfloat16 is float32 with the low 16 bits of
    the 32-bit pattern dropped, which keeps 8 significant bits (7 stored plus the implicit leading
    1) and float32's exponent range. Adding ``0x7FFF + lsb`` before truncating rounds to nearest
    with ties to even, as a conversion ``x.to(torch.bfloat16)`` does. Near ``2^k`` the spacing of
    bfloat16 numbers is ``2^(k-7)``: 64 at 8192, 512 at 65536.

    Parameters
    ----------
    x : array_like of finite real numbers, any shape.

    Returns
    -------
    float32 array of ``x``'s shape, every entry exactly representable in bfloat16.

    References
    ----------
    Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep Learning Training"; PyTorch
    ``c10/util/BFloat16.h`` ``round_to_nearest_even``.
    """
    x = val.numeric_array(x, "x")
    rounded = _round_bits_to_bfloat16(x)
    if not np.isfinite(rounded).all():
        raise ValueError(
            f"x must lie within bfloat16's range (|x| < {_BFLOAT16_OVERFLOW:.7g}, which rounds to "
            f"inf), got a largest |x| of {float(np.max(np.abs(x))):g}"
        )
    return rounded


_BFLOAT16_OVERFLOW = float.fromhex("0x1.ffp+127")  # halfway past the largest bfloat16, 0x1.fep+127


def _round_bits_to_bfloat16(x):
    """The rounding of :func:`round_to_bfloat16`, unchecked: values out of range become +-inf."""
    with np.errstate(over="ignore"):
        bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)
    return rounded.view(np.float32)


def _round_to(values, precision):
    if precision == "bfloat16":
        return _round_bits_to_bfloat16(values).astype(np.float64)
    return np.asarray(values).astype(precision).astype(np.float64)


def rope_angles(positions, head_dim, *, base=10000.0, precision="float64"):
    """Rotation angles ``m * theta_i`` formed in a given floating-point precision.

    Shape ``positions.shape + (head_dim // 2,)``, returned as float64 holding the values the chosen
    precision produced. With ``precision="float64"`` this is ``positions[..., None] * inv_freq``.
    With a lower precision the position, the inverse frequencies and their product are each
    rounded to it, as when ``position_ids.float() @ inv_freq.float()`` runs under a bfloat16 or
    float16 autocast: distinct positions can then share one angle.

    Parameters
    ----------
    positions : array_like of real numbers
    head_dim : int
        Rotary dimension (even); ``theta_i = base^(-2i/head_dim)``.
    base : float
    precision : {"float64", "float32", "float16", "bfloat16"}
        "bfloat16" is emulated with :func:`round_to_bfloat16`.

    Raises
    ------
    ValueError
        For float16 when a position or angle exceeds float16's largest finite value, 65504.

    References
    ----------
    Hugging Face transformers pull request 29285 ("RoPE loses precision for Llama / Gemma"), after
    which ``LlamaRotaryEmbedding.forward`` in ``models/llama/modeling_llama.py`` forms the angles in
    float32 with autocast disabled.
    """
    precision = val.choice(precision, "precision", PRECISIONS)
    positions = val.numeric_array(positions, "positions").astype(np.float64)
    inv_freq = rope_inv_freq(head_dim, base=base)
    if precision == "float64":
        return positions[..., None] * inv_freq
    largest = float(np.finfo(np.float16).max)
    if precision == "float16" and positions.size and np.max(np.abs(positions)) > largest:
        raise ValueError(
            f"positions must be at most {largest:g} in magnitude for precision='float16' (its "
            f"largest finite value), got {np.max(np.abs(positions)):g}"
        )
    product = _round_to(positions, precision)[..., None] * _round_to(inv_freq, precision)
    with np.errstate(over="ignore"):
        angles = _round_to(product, precision)
    if not np.all(np.isfinite(angles)):
        raise ValueError(
            f"angles overflow precision={precision!r} (largest finite value {largest:g} for "
            "float16); use smaller positions or a higher precision"
        )
    return angles
