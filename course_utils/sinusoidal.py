"""Sinusoidal absolute position encodings (Vaswani et al. 2017) and their rotation structure.

Notation (the course's notation page): ``p`` a position, ``i`` the pair index, ``d = d_model``,
``b = base``, ``theta_i`` the angular frequency of pair ``i`` in radians per position.

Two layouts are in use:

* ``"interleaved"`` (the paper): ``PE[p, 2i] = sin(p theta_i)``, ``PE[p, 2i+1] = cos(p theta_i)``
  with ``theta_i = b^(-2i/d)``. Hugging Face ``models/distilbert/modeling_distilbert.py``
  ``_create_sinusoidal_embeddings`` computes exactly this (DistilBERT uses it only with
  ``sinusoidal_pos_embds=True``; its released checkpoints learn their positions).
* ``"concat"`` (tensor2tensor ``get_timing_signal_1d``, fairseq ``SinusoidalPositionalEmbedding``):
  ``PE[p] = [sin(p theta_0) .. sin(p theta_{h-1}) | cos(p theta_0) .. cos(p theta_{h-1})]`` with
  ``h = d/2`` and ``theta_i = exp(-i ln(b) / (h - 1))``, so the lowest frequency is exactly ``1/b``.

Pair index ``i = 0`` is the HIGHEST frequency (wavelength ``2 pi``); the last pair is the lowest.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val

__all__ = [
    "LAYOUTS",
    "sinusoidal_frequencies",
    "sinusoidal_encoding",
    "sinusoidal_encoding_at",
    "pair_channels",
    "sinusoidal_shift_matrix",
    "sinusoidal_similarity",
    "sinusoidal_angles",
]

LAYOUTS = ("interleaved", "concat")
_BLOCK_ANGLES = 2**16  # float64 angles formed at once by sinusoidal_encoding_at (0.5 MB)


def _check_d_model(d_model, layout):
    d_model = val.positive_int(d_model, "d_model", even=True)
    if layout == "concat" and d_model < 4:
        raise ValueError(
            f"d_model must be an even integer >= 4 for layout='concat' (its spacing divides by "
            f"d_model/2 - 1), got {d_model}"
        )
    return d_model


def sinusoidal_frequencies(d_model, *, base=10000.0, layout="interleaved"):
    """Angular frequencies ``theta_i`` (radians per position), shape ``(d_model // 2,)``.

    ``layout="interleaved"``: ``theta_i = base^(-2i/d)``; ``layout="concat"``:
    ``theta_i = exp(-i ln(base) / (d/2 - 1))``. Both decrease with ``i``: pair 0 turns fastest.
    """
    layout = val.choice(layout, "layout", LAYOUTS)
    d_model = _check_d_model(d_model, layout)
    base = val.positive_float(base, "base", minimum=1.0)
    i = np.arange(d_model // 2, dtype=np.float64)
    if layout == "interleaved":
        return base ** (-2.0 * i / d_model)
    return np.exp(-i * np.log(base) / (d_model // 2 - 1))


def pair_channels(d_model, *, layout="interleaved"):
    """Channel indices ``(sin_channels, cos_channels)`` of each frequency pair, each ``(d/2,)``."""
    layout = val.choice(layout, "layout", LAYOUTS)
    d_model = _check_d_model(d_model, layout)
    half = d_model // 2
    if layout == "interleaved":
        return np.arange(0, d_model, 2), np.arange(1, d_model, 2)
    return np.arange(half), np.arange(half, d_model)


def sinusoidal_encoding_at(positions, d_model, *, base=10000.0, layout="interleaved", dtype=np.float64):
    """Encodings of arbitrary (possibly fractional or negative) ``positions``.

    Parameters
    ----------
    positions : array_like of real numbers, shape ``(...)``
    d_model : int, even
    base : float
    layout : {"interleaved", "concat"}
    dtype : float dtype of the result. Angles are always formed in float64 and only the
        result is rounded, so a float32 table is as accurate as float32 allows.

    Returns
    -------
    array, shape ``(..., d_model)``

    Notes
    -----
    Precision: the angle ``p theta_i`` is formed in float64, so its error is about ``|p| 2^-52``
    radians (``2e-10`` at ``p = 10^6``) and entries stay within ``1e-9`` of the exact values there
    (``tests/test_precision.py``). Angles formed in float32 instead (:func:`sinusoidal_angles`,
    which gives the bound) err by up to about ``|p| theta_i 2^-23`` radians.

    Memory: the angles are formed for a block of rows at a time (a loop over blocks, not over
    positions), so the peak is the output plus about 0.5 MB; a 131072 x 1024 float64 table peaks
    at its own 1 GiB instead of 1.5 GiB, a float32 table at 0.5 GiB instead of 1 GiB.
    """
    positions = val.numeric_array(positions, "positions")
    dtype = val.float_dtype(dtype)
    freqs = sinusoidal_frequencies(d_model, base=base, layout=layout)
    out = np.empty(positions.shape + (d_model,), dtype=dtype)
    rows, flat = positions.reshape(-1).astype(np.float64), out.reshape(-1, d_model)
    # Writing straight into the strided output views avoids building sin and cos tables and
    # interleaving them afterwards (the benchmark measures this against one np.sin pass).
    if layout == "interleaved":
        sin_view, cos_view = flat[:, 0::2], flat[:, 1::2]
    else:
        sin_view, cos_view = flat[:, : d_model // 2], flat[:, d_model // 2 :]
    # A block of rows at a time, so the float64 angles never exist for the whole table at once.
    step = max(1, _BLOCK_ANGLES // (d_model // 2))
    for first in range(0, rows.size, step):
        block = slice(first, first + step)
        angles = np.multiply.outer(rows[block], freqs)
        np.sin(angles, out=sin_view[block], casting="same_kind")
        np.cos(angles, out=cos_view[block], casting="same_kind")
    return out


def sinusoidal_encoding(n_positions, d_model, *, base=10000.0, layout="interleaved", start=0,
                        dtype=np.float64):
    """Table of encodings for positions ``start .. start + n_positions - 1``.

    ``PE[p, 2i] = sin(p theta_i)``, ``PE[p, 2i+1] = cos(p theta_i)`` (``layout="interleaved"``,
    the paper),
    or ``[sin | cos]`` halves with tensor2tensor/fairseq spacing (``layout="concat"``).

    Returns
    -------
    array, shape ``(n_positions, d_model)``

    Raises
    ------
    ValueError
        Also when ``start + n_positions > 2**53``: positions are formed in float64, which holds
        every integer only up to ``2**53``.

    References
    ----------
    Vaswani et al. 2017, section 3.5. Hugging Face ``models/distilbert/modeling_distilbert.py``
    ``_create_sinusoidal_embeddings`` (interleaved); fairseq
    ``fairseq/modules/sinusoidal_positional_embedding.py`` ``get_embedding`` (concat).
    """
    n_positions = val.positive_int(n_positions, "n_positions", allow_zero=True)
    start = val.positive_int(start, "start", allow_zero=True)
    if start + n_positions > 2**53:
        raise ValueError(
            f"start + n_positions must be at most 2**53 = {2**53} (beyond it float64 cannot hold "
            f"every integer position), got {start + n_positions}"
        )
    positions = np.arange(start, start + n_positions, dtype=np.float64)
    return sinusoidal_encoding_at(positions, d_model, base=base, layout=layout, dtype=dtype)


def sinusoidal_shift_matrix(k, d_model, *, base=10000.0, layout="interleaved"):
    """The linear map ``T_r`` with ``PE[p + r] = T_r @ PE[p]`` for every ``p`` (the offset ``r``
    is the argument ``k``, the letter of Vaswani et al., section 3.5).

    For each frequency pair, with ``t = theta_i``,
    ``[sin((p+r)t), cos((p+r)t)] = [[cos rt, sin rt], [-sin rt, cos rt]] @ [sin pt, cos pt]``
    (angle addition), so ``T_r`` is block-diagonal with 2x2 rotations: it is orthogonal, has
    determinant 1, and ``T_a @ T_b = T_{a+b}``. ``r`` may be any real offset, also negative.
    Each block turns its pair by ``-r theta_i`` (clockwise), because a pair stores
    ``(sin, cos)``: in the interleaved layout ``T_r`` is the transpose of RoPE's ``R_r``
    (:func:`course_utils.rope.rope_rotation_matrix`), ``T_r = R_{-r}``.

    Returns
    -------
    array, shape ``(d_model, d_model)``
    """
    k = val.real_float(k, "k")
    freqs = sinusoidal_frequencies(d_model, base=base, layout=layout)
    sin_ch, cos_ch = pair_channels(d_model, layout=layout)
    c, s = np.cos(k * freqs), np.sin(k * freqs)
    m = np.zeros((d_model, d_model))
    m[sin_ch, sin_ch] = c
    m[sin_ch, cos_ch] = s
    m[cos_ch, sin_ch] = -s
    m[cos_ch, cos_ch] = c
    return m


def sinusoidal_similarity(offsets, d_model, *, base=10000.0, layout="interleaved"):
    """Dot product of two encodings ``r`` positions apart: ``PE[m] . PE[m + r] = sum_i cos(r theta_i)``.

    Each pair contributes ``sin(m t) sin((m+r) t) + cos(m t) cos((m+r) t) = cos(r t)`` with
    ``t = theta_i``, so the result does not depend on ``m``. It equals ``d_model / 2`` at ``r = 0``
    and is even in ``r``.

    Parameters
    ----------
    offsets : array_like of real numbers, shape ``(...)``
        The offsets ``r = n - m`` (fractional and negative offsets allowed).
    d_model : int, even
    base : float
    layout : {"interleaved", "concat"}
        Chooses the frequency spacing (paper or tensor2tensor/fairseq); the channel order does not
        change a dot product.

    Returns
    -------
    array, shape ``offsets.shape``, float64

    References
    ----------
    Vaswani et al. 2017, section 3.5 (the encoding); the identity is the cosine angle-difference
    formula. Hugging Face ``models/distilbert/modeling_distilbert.py``
    ``_create_sinusoidal_embeddings`` builds the table whose rows it multiplies.
    """
    offsets = val.numeric_array(offsets, "offsets").astype(np.float64)
    freqs = sinusoidal_frequencies(d_model, base=base, layout=layout)
    return np.cos(np.multiply.outer(offsets, freqs)).sum(axis=-1)


def sinusoidal_angles(positions, d_model, *, base=10000.0, layout="interleaved", dtype=np.float64):
    """Angles ``p * theta_i`` formed in ``dtype``, shape ``(..., d_model // 2)``.

    The float64 frequencies and the positions are each rounded once to ``dtype`` and multiplied in
    ``dtype``: the best a table whose angles are formed in that precision can do. In float32 each
    rounding has relative error at most ``2^-24`` (a position below ``2^24`` is exact), so the angle
    is off by at most about ``p theta_i 2^-23``. This is not a model of a particular library:
    fairseq's ``SinusoidalPositionalEmbedding.get_embedding`` forms
    ``theta_i = exp(i * -emb)``, ``emb = ln(b) / (d/2 - 1)``, in float32, rounding both ``-emb``
    and the product, so ``theta_i`` is off by up to about ``(2 |ln theta_i| + 1) 2^-24`` relative
    (about 16 times ``2^-24`` at ``d = 2048``). Neither is the best float32 allows:
    :func:`sinusoidal_encoding_at` forms angles in float64 and rounds only the result.

    Parameters
    ----------
    positions : array_like of real numbers, shape ``(...)``
        Must be representable in ``dtype`` without overflow.
    d_model : int, even
    base : float
    layout : {"interleaved", "concat"}
    dtype : float16, float32 or float64

    Returns
    -------
    array of ``dtype``, shape ``(..., d_model // 2)``

    References
    ----------
    Vaswani et al. 2017, section 3.5; fairseq ``fairseq/modules/sinusoidal_positional_embedding.py``
    ``get_embedding`` (float32 frequencies and angles); Hugging Face
    ``models/distilbert/modeling_distilbert.py`` ``_create_sinusoidal_embeddings`` (float64 angles,
    cast to float32 afterwards).
    """
    positions = val.numeric_array(positions, "positions")
    dtype = val.float_dtype(dtype)
    largest = float(np.max(np.abs(positions))) if positions.size else 0.0
    if largest > float(np.finfo(dtype).max):
        raise ValueError(
            f"positions must fit in {dtype} (|p| <= {float(np.finfo(dtype).max):g}), got a largest "
            f"|position| of {largest:g}"
        )
    freqs = sinusoidal_frequencies(d_model, base=base, layout=layout).astype(dtype)
    return np.multiply.outer(positions.astype(dtype), freqs)
