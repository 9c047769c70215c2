"""Positions for images and video: 2-D tables, resizing, 2-D RoPE and Qwen2-VL's M-RoPE.

A vision transformer cuts an image into a grid of ``H x W`` patches and reads them as a sequence,
row by row. This module gives the patches their positions the ways production models do:

* a fixed 2-D sine-cosine table, half of the channels for the row, half for the column (MAE;
  Hugging Face ``models/vit_mae/modeling_vit_mae.py`` ``build_2d_sinusoidal_position_embedding``);
* a learned table resized to a new grid by bicubic interpolation, the class token kept apart
  (ViT; ``models/vit/modeling_vit.py`` ``ViTEmbeddings.interpolate_pos_encoding``, timm
  ``timm/layers/pos_embed.py`` ``resample_abs_pos_embed``);
* 2-D rotary embeddings, axial (some pairs turn with the row, the others with the column) or
  mixed (every pair turns with a learned direction in the plane; Heo et al. 2024);
* M-RoPE (Qwen2-VL): three position ids per token (temporal, height, width) and the rotary pairs
  split between them by ``mrope_section`` (``models/qwen2_vl/modeling_qwen2_vl.py``).

Rows are counted from the top and columns from the left, both from 0. All rotary functions reuse
:func:`course_utils.rope.apply_rope`.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val
from .rope import LAYOUTS, apply_rope, interleaved_to_half_permutation, rope_inv_freq
from .sinusoidal import sinusoidal_encoding_at

__all__ = [
    "patch_grid_positions",
    "sincos_2d_table",
    "bicubic_weights",
    "bicubic_resize",
    "resize_weights",
    "RESIZE_METHODS",
    "resize_pos_table",
    "axial_rope_frequencies",
    "mixed_rope_frequencies",
    "apply_rope_2d",
    "mrope_pair_axes",
    "apply_mrope",
    "mrope_position_ids",
    "TEXT",
    "IMAGE",
    "VIDEO",
    "TEXT_RESUMES_AT",
]

TEXT, IMAGE, VIDEO = 0, 1, 2  # token types, as transformers' ``mm_token_type_ids``
TEXT_RESUMES_AT = ("max_height_width", "largest_id")
#: How a position table is resized: transformers' ViT, timm's default, the original ViT code.
RESIZE_METHODS = ("bicubic", "bicubic_antialias", "linear_corners")
_AXES = ("row", "col")


def _grid(value, arg):
    """A ``(height, width)`` pair of positive integers."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError(f"{arg} must be a pair (height, width) of positive integers, got {value!r:.60}")
    return (val.positive_int(value[0], f"{arg}[0] (height)"),
            val.positive_int(value[1], f"{arg}[1] (width)"))


def patch_grid_positions(height, width):
    """Row and column of each patch of an ``height x width`` grid read row by row.

    Patch ``p`` of the flattened sequence sits at row ``p // width`` and column ``p % width``;
    the patch above it is ``p - width``. This is the order of ``flatten(2)`` in Hugging Face
    ``ViTPatchEmbeddings.forward`` (``models/vit/modeling_vit.py``).

    Returns
    -------
    rows, cols : int64 arrays, shape ``(height * width,)``
    """
    height = val.positive_int(height, "height")
    width = val.positive_int(width, "width")
    p = np.arange(height * width, dtype=np.int64)
    return p // width, p % width


def sincos_2d_table(height, width, dim, *, base=10000.0, first_axis="row", cls_token=False,
                    dtype=np.float64):
    """Fixed 2-D sine-cosine position table of an ``height x width`` patch grid.

    Each patch at ``(h, w)`` gets ``[sin(h theta) | cos(h theta) | sin(w theta) | cos(w theta)]``
    with ``theta_i = base^(-2i/(dim/2))``, ``i = 0 .. dim/4 - 1``: the first half of the channels
    is notebook 02's 1-D table of width ``dim/2`` for the row (sines first, then cosines), the
    second half the same table for the column.

    Parameters
    ----------
    height, width : int
        Grid size in patches; rows of the result are the patches in row-major order.
    dim : int
        Width of the table, a positive multiple of 4.
    base : float
    first_axis : {"row", "col"}
        Which coordinate the first half encodes. ``"row"`` is transformers'
        ``build_2d_sinusoidal_position_embedding``; ``"col"`` is facebookresearch/mae
        ``util/pos_embed.py`` ``get_2d_sincos_pos_embed`` (its ``meshgrid(grid_w, grid_h)`` puts
        the column first), which ``ViTMAEEmbeddings.initialize_weights`` reproduces by swapping the
        halves.
    cls_token : bool
        Prepend a row of zeros for a class token (as both references do).
    dtype : float dtype of the result (angles are formed in float64).

    Returns
    -------
    array, shape ``(cls_token + height * width, dim)``

    References
    ----------
    He et al. 2022 (MAE); facebookresearch/mae ``util/pos_embed.py``; Hugging Face
    ``models/vit_mae/modeling_vit_mae.py`` ``build_2d_sinusoidal_position_embedding``.
    """
    dim = val.positive_int(dim, "dim")
    if dim % 4:
        raise ValueError(f"dim must be a positive multiple of 4 (sin and cos for two axes), got {dim}")
    first_axis = val.choice(first_axis, "first_axis", _AXES)
    cls_token = val.boolean(cls_token, "cls_token")
    dtype = val.float_dtype(dtype)
    rows, cols = patch_grid_positions(height, width)
    # notebook 02's interleaved table of width dim/2, channels reordered to [sin ... | cos ...]
    sines_first = interleaved_to_half_permutation(dim // 2)
    by_row = sinusoidal_encoding_at(rows, dim // 2, base=base)[:, sines_first]
    by_col = sinusoidal_encoding_at(cols, dim // 2, base=base)[:, sines_first]
    halves = [by_row, by_col] if first_axis == "row" else [by_col, by_row]
    table = np.concatenate(halves, axis=1)
    if cls_token:
        table = np.concatenate([np.zeros((1, dim)), table], axis=0)
    return table.astype(dtype, copy=False)


def _cubic_kernel(t, a):
    """Keys' cubic convolution kernel ``k(t)`` with parameter ``a`` (torch: ``A = -0.75``)."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1          # |t| <= 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a      # 1 < |t| < 2
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def bicubic_weights(in_size, out_size, *, a=-0.75):
    """The ``(out_size, in_size)`` matrix of 1-D bicubic resampling, ``align_corners=False``.

    Output sample ``j`` reads the input at ``s_j = (j + 1/2) in/out - 1/2``; with ``f = floor(s_j)``
    and ``t = s_j - f`` it takes ``k(t+1), k(t), k(1-t), k(2-t)`` (Keys' kernel ``k`` with
    parameter ``a``) times the inputs ``f-1, f, f+1, f+2``, an index outside ``0 .. in-1`` being
    clamped to the nearest edge. Each row sums to 1.

    References
    ----------
    Keys 1981; PyTorch ``aten/src/ATen/native/UpSample.h`` (``cubic_convolution1``,
    ``cubic_convolution2``, ``upsample_get_value_bounded``), used by
    ``torch.nn.functional.interpolate(mode="bicubic", align_corners=False)``.
    """
    in_size = val.positive_int(in_size, "in_size")
    out_size = val.positive_int(out_size, "out_size")
    a = val.real_float(a, "a")
    src = (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5
    floor = np.floor(src)
    t = src - floor
    taps = floor.astype(np.int64)[:, None] + np.arange(-1, 3)          # (out, 4)
    weights = _cubic_kernel(t[:, None] - np.arange(-1, 3), a)          # k(t+1), k(t), k(t-1), k(t-2)
    matrix = np.zeros((out_size, in_size))
    rows = np.repeat(np.arange(out_size), 4)
    np.add.at(matrix, (rows, np.clip(taps, 0, in_size - 1).ravel()), weights.ravel())
    return matrix


def bicubic_resize(grid, new_height, new_width, *, a=-0.75):
    """Resize a grid of vectors ``(..., H, W, D)`` to ``(..., new_height, new_width, D)``.

    ``out = M_h grid M_w^T`` channel by channel, with ``M_h, M_w`` from :func:`bicubic_weights`:
    torch's ``F.interpolate(mode="bicubic", align_corners=False)`` on the ``(D, H, W)`` image,
    computed in float64.
    """
    grid = val.numeric_array(grid, "grid", min_ndim=3).astype(np.float64)
    new_height = val.positive_int(new_height, "new_height")
    new_width = val.positive_int(new_width, "new_width")
    m_h = bicubic_weights(grid.shape[-3], new_height, a=a)
    m_w = bicubic_weights(grid.shape[-2], new_width, a=a)
    return np.einsum("ah,...hwd,bw->...abd", m_h, grid, m_w)


def resize_weights(in_size, out_size, *, method="bicubic"):
    """The ``(out_size, in_size)`` matrix of one 1-D table resize, by one of three rules.

    - ``"bicubic"``: :func:`bicubic_weights` (Keys' kernel with ``a = -0.75``, sample ``j`` read
      at ``(j + 1/2) in/out - 1/2``, edge taps clamped): ``torch.nn.functional.interpolate(mode=
      "bicubic", align_corners=False)``, which transformers' ``ViTEmbeddings.
      interpolate_pos_encoding`` calls.
    - ``"bicubic_antialias"``: the same call with ``antialias=True``, timm's default in
      ``resample_abs_pos_embed`` (``timm/layers/pos_embed.py``). Sample ``j`` is centred at
      ``c_j = (j + 1/2) in/out`` and weighs input ``k`` by ``k_{-1/2}((k + 1/2 - c_j) / f)`` with
      ``f = max(in/out, 1)``: Keys' kernel with ``a = -1/2``, widened by ``f`` when the table
      shrinks (so every input row contributes), taps outside the grid dropped and the weights
      renormalised to sum 1. When enlarging, ``f = 1`` and only ``a`` and the edges differ from
      ``"bicubic"``.
    - ``"linear_corners"``: linear interpolation with the corners aligned, sample ``j`` read at
      ``j (in - 1)/(out - 1)``: ``scipy.ndimage.zoom(order=1)`` (its default ``grid_mode=False``),
      which the original ViT code calls (google-research/vision_transformer
      ``vit_jax/checkpoint.py``, ``interpolate_posembed``).

    References
    ----------
    PyTorch ``aten/src/ATen/native/cpu/UpSampleKernel.cpp`` (``HelperInterpCubic::aa_filter``:
    ``a = -0.5`` with antialiasing, "compatibility with PIL", ``-0.75`` without);
    scipy ``scipy/ndimage/_interpolation.py`` ``zoom``.
    """
    in_size = val.positive_int(in_size, "in_size")
    out_size = val.positive_int(out_size, "out_size")
    method = val.choice(method, "method", RESIZE_METHODS)
    if method == "bicubic":
        return bicubic_weights(in_size, out_size)
    k = np.arange(in_size)
    if method == "linear_corners":
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = np.arange(out_size) * ratio
        return np.maximum(0.0, 1.0 - np.abs(src[:, None] - k))   # hat function: two taps
    scale = in_size / out_size
    widen = max(scale, 1.0)
    centre = (np.arange(out_size) + 0.5) * scale
    low = np.maximum((centre - 2.0 * widen + 0.5).astype(np.int64), 0)
    high = np.minimum((centre + 2.0 * widen + 0.5).astype(np.int64), in_size)
    weights = _cubic_kernel((k - centre[:, None] + 0.5) / widen, -0.5)
    weights = np.where((k >= low[:, None]) & (k < high[:, None]), weights, 0.0)
    return weights / weights.sum(axis=1, keepdims=True)


def resize_pos_table(table, new_grid, *, old_grid=None, num_prefix_tokens=1, a=-0.75,
                     method="bicubic"):
    """Resize a ViT position table to a new patch grid; the prefix (class) rows are kept as they are.

    Parameters
    ----------
    table : array, shape ``(num_prefix_tokens + H * W, D)``
        Rows: the prefix tokens, then the patches in row-major order.
    new_grid : (int, int)
        The new ``(height, width)`` in patches.
    old_grid : (int, int), optional
        The table's grid; default a square grid (``H = W = sqrt(rows - num_prefix_tokens)``), as
        both references assume.
    num_prefix_tokens : int
        1 for ViT's class token, 0 for a table without one.
    a : float
        Keys' kernel parameter of ``method="bicubic"`` (-0.75 as in torch).
    method : {"bicubic", "bicubic_antialias", "linear_corners"}
        The resize rule (:func:`resize_weights`): transformers' ViT, timm's default, the original
        ViT code.

    Returns
    -------
    array, shape ``(num_prefix_tokens + new_height * new_width, D)``

    References
    ----------
    Dosovitskiy et al. 2021, section 3.2; Hugging Face ``models/vit/modeling_vit.py``
    ``ViTEmbeddings.interpolate_pos_encoding`` (bicubic, ``align_corners=False``); timm
    ``timm/layers/pos_embed.py`` ``resample_abs_pos_embed`` (bicubic, ``antialias=True`` by
    default); google-research/vision_transformer ``vit_jax/checkpoint.py``
    ``interpolate_posembed`` (``scipy.ndimage.zoom(order=1)``).
    """
    table = val.numeric_array(table, "table").astype(np.float64)
    if table.ndim != 2:
        raise ValueError(f"table must have shape (num_prefix_tokens + H * W, D), got {table.shape}")
    num_prefix_tokens = val.positive_int(num_prefix_tokens, "num_prefix_tokens", allow_zero=True)
    n_patches = table.shape[0] - num_prefix_tokens
    if n_patches <= 0:
        raise ValueError(f"table has {table.shape[0]} rows, no patches after {num_prefix_tokens} "
                         "prefix token(s)")
    if old_grid is None:
        side = int(round(np.sqrt(n_patches)))
        if side * side != n_patches:
            raise ValueError(f"table has {n_patches} patch rows, not a square grid; pass old_grid")
        old_grid = (side, side)
    height, width = _grid(old_grid, "old_grid")
    if height * width != n_patches:
        raise ValueError(f"old_grid {(height, width)} has {height * width} patches but table has "
                         f"{n_patches} patch rows ({table.shape[0]} - {num_prefix_tokens} prefix)")
    new_height, new_width = _grid(new_grid, "new_grid")
    method = val.choice(method, "method", RESIZE_METHODS)
    patches = table[num_prefix_tokens:].reshape(height, width, -1)
    if method == "bicubic":
        resized = bicubic_resize(patches, new_height, new_width, a=a)
    else:
        m_h = resize_weights(height, new_height, method=method)
        m_w = resize_weights(width, new_width, method=method)
        resized = np.einsum("ah,hwd,bw->abd", m_h, patches, m_w)
    resized = resized.reshape(-1, table.shape[1])
    return np.concatenate([table[:num_prefix_tokens], resized], axis=0)


def axial_rope_frequencies(head_dim, *, base=100.0, first_axis="row"):
    """Per-pair frequencies of axial 2-D RoPE: half of the pairs turn with the row, half with the column.

    Each axis gets ``head_dim / 4`` pairs with ``theta_j = base^(-4j/head_dim)``,
    ``j = 0 .. head_dim/4 - 1`` (RoPE's frequencies for a head of width ``head_dim / 2``).

    Returns
    -------
    freq_row, freq_col : arrays, shape ``(head_dim // 2,)``
        Pair ``i`` turns by ``row * freq_row[i] + col * freq_col[i]``; each pair has one of the
        two nonzero.

    References
    ----------
    Heo et al. 2024 (RoPE-Axial); naver-ai/rope-vit ``models/vit_rope.py`` ``compute_axial_cis``
    (column first, ``base = 100``); Hugging Face ``models/qwen2_vl/modeling_qwen2_vl.py``
    ``Qwen2VLVisionRotaryEmbedding`` (row first, half layout).
    """
    head_dim = val.positive_int(head_dim, "head_dim")
    if head_dim % 4:
        raise ValueError(f"head_dim must be a positive multiple of 4 (two axes of pairs), got {head_dim}")
    first_axis = val.choice(first_axis, "first_axis", _AXES)
    theta = rope_inv_freq(head_dim // 2, base=base)
    zeros = np.zeros_like(theta)
    first, second = np.concatenate([theta, zeros]), np.concatenate([zeros, theta])
    return (first, second) if first_axis == "row" else (second, first)


def mixed_rope_frequencies(head_dim, angle, *, base=10.0):
    """RoPE-Mixed's initial frequencies: every pair turns along a direction in the image plane.

    Pair ``j`` and pair ``j + head_dim/4`` have magnitude ``base^(-4j/head_dim)`` and directions
    ``angle`` and ``angle + pi/2``: ``freq_col = mag cos(dir)``, ``freq_row = mag sin(dir)``. The
    model then learns them. ``angle = 0`` gives the axial frequencies (column first).

    References
    ----------
    Heo et al. 2024 (RoPE-Mixed); naver-ai/rope-vit ``models/vit_rope.py``
    ``init_random_2d_freqs`` (``angle`` is drawn uniformly in ``[0, 2 pi)`` per head there).
    """
    head_dim = val.positive_int(head_dim, "head_dim")
    if head_dim % 4:
        raise ValueError(f"head_dim must be a positive multiple of 4, got {head_dim}")
    angle = val.real_float(angle, "angle")
    mag = rope_inv_freq(head_dim // 2, base=base)
    direction = np.repeat([angle, angle + np.pi / 2], head_dim // 4)
    mag = np.tile(mag, 2)
    return mag * np.sin(direction), mag * np.cos(direction)


def apply_rope_2d(x, rows, cols, freq_row, freq_col, *, layout):
    """Rotate pair ``i`` of ``x`` by ``row * freq_row[i] + col * freq_col[i]``.

    Two rotations of the same pair add their angles, so this is :func:`course_utils.rope.apply_rope`
    by the rows, then by the columns.

    Parameters
    ----------
    x : array, shape ``(..., seq, head_dim)``
    rows, cols : array_like, broadcastable to ``(..., seq)``
    freq_row, freq_col : arrays, shape ``(head_dim // 2,)``
        From :func:`axial_rope_frequencies` or :func:`mixed_rope_frequencies`.
    layout : {"half", "interleaved"}

    References
    ----------
    Heo et al. 2024, eqs. for RoPE-Axial and RoPE-Mixed; naver-ai/rope-vit ``models/vit_rope.py``
    ``compute_mixed_cis`` (angle ``t_x f_x + t_y f_y``).
    """
    layout = val.choice(layout, "layout", LAYOUTS)
    rows = val.numeric_array(rows, "rows")
    cols = val.numeric_array(cols, "cols")
    freq_row = val.numeric_array(freq_row, "freq_row")
    freq_col = val.numeric_array(freq_col, "freq_col")
    n_pairs = np.shape(x)[-1] // 2 if np.ndim(x) else None
    for name, freq in (("freq_row", freq_row), ("freq_col", freq_col)):
        if n_pairs is not None and freq.shape != (n_pairs,):
            raise ValueError(f"{name} must have shape (head_dim // 2,) = ({n_pairs},), "
                             f"got {freq.shape}")
    by_row = apply_rope(x, rows, layout=layout, inv_freq=freq_row)
    return apply_rope(by_row, cols, layout=layout, inv_freq=freq_col)


def _mrope_section(mrope_section, n_pairs, interleaved):
    if isinstance(mrope_section, (str, bytes)) or not hasattr(mrope_section, "__len__") \
            or np.ndim(mrope_section) != 1 or len(mrope_section) != 3:
        raise TypeError("mrope_section must be three integers (temporal, height, width), got "
                        f"{mrope_section!r:.60}")
    section = [val.positive_int(s, f"mrope_section[{k}]") for k, s in enumerate(mrope_section)]
    if sum(section) != n_pairs:
        raise ValueError(f"mrope_section must sum to head_dim/2 = {n_pairs}, got {section} "
                         f"(sum {sum(section)})")
    if interleaved and (3 * section[1] > n_pairs + 1 or 3 * section[2] > n_pairs):
        raise ValueError(f"mrope_section {section} is too unequal for the interleaved layout: "
                         f"height and width need 3 * mrope_section[k] <= {n_pairs} pairs")
    return section


def mrope_pair_axes(head_dim, mrope_section, *, interleaved=False):
    """Which position id (0 temporal, 1 height, 2 width) turns each rotary pair, shape ``(head_dim // 2,)``.

    Qwen2-VL (``interleaved=False``): consecutive blocks, the first ``mrope_section[0]`` pairs
    temporal, the next ``mrope_section[1]`` height, the last ``mrope_section[2]`` width. Qwen3-VL
    (``interleaved=True``): pairs 1, 4, 7, ... up to ``3 * mrope_section[1]`` height, pairs 2, 5,
    8, ... up to ``3 * mrope_section[2]`` width, every other pair temporal. In both, channel ``c``
    and ``c + head_dim/2`` form pair ``c`` (the half layout).

    References
    ----------
    Hugging Face ``models/qwen2_vl/modeling_qwen2_vl.py``
    ``Qwen2VLRotaryEmbedding.recomposition_frequencies`` (older releases:
    ``apply_multimodal_rotary_pos_emb``); ``models/qwen3_vl/modeling_qwen3_vl.py``
    ``Qwen3VLTextRotaryEmbedding.recomposition_frequencies``.
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    n_pairs = head_dim // 2
    interleaved = val.boolean(interleaved, "interleaved")
    section = _mrope_section(mrope_section, n_pairs, interleaved)
    if not interleaved:
        return np.repeat(np.arange(3), section)
    axes = np.zeros(n_pairs, dtype=np.int64)
    axes[1:3 * section[1]:3] = 1
    axes[2:3 * section[2]:3] = 2
    return axes


def apply_mrope(x, position_ids, mrope_section, *, base=10000.0, interleaved=False):
    """M-RoPE: rotate pair ``i`` of ``x`` by ``position_ids[axis_i] * theta_i`` (half layout).

    Parameters
    ----------
    x : array, shape ``(..., seq, head_dim)``
    position_ids : array_like, shape ``(3, ...)`` broadcastable to ``(3, ..., seq)``
        Temporal, height and width ids of each token (:func:`mrope_position_ids`).
    mrope_section : three ints summing to ``head_dim // 2``
    base : float
        ``rope_theta``.
    interleaved : bool
        Qwen3-VL's interleaved assignment of pairs (see :func:`mrope_pair_axes`).

    Returns
    -------
    array of ``x``'s shape. A text token, whose three ids are equal, is rotated exactly as
    :func:`course_utils.rope.apply_rope` (``layout="half"``) rotates it.

    References
    ----------
    Wang et al. 2024 (Qwen2-VL), section 2.1; Hugging Face ``models/qwen2_vl/modeling_qwen2_vl.py``
    ``Qwen2VLRotaryEmbedding`` and ``apply_rotary_pos_emb``.
    """
    x = val.numeric_array(x, "x", min_ndim=2)
    head_dim = x.shape[-1]
    if head_dim % 2 or head_dim == 0:
        raise ValueError(f"x's last dimension (head_dim) must be a positive even integer, got {head_dim}")
    axes = mrope_pair_axes(head_dim, mrope_section, interleaved=interleaved)
    position_ids = val.numeric_array(position_ids, "position_ids", min_ndim=1)
    if position_ids.shape[0] != 3:
        raise ValueError("position_ids must have a first axis of length 3 (temporal, height, width), "
                         f"got shape {position_ids.shape}")
    inv_freq = rope_inv_freq(head_dim, base=base)
    out_shape = np.broadcast_shapes(x.shape[:-1], position_ids.shape[1:]) + (head_dim,)
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    out = np.empty(out_shape, dtype=dtype)
    for axis in range(3):  # three groups of pairs, each rotated by one row of position ids
        pairs = np.flatnonzero(axes == axis)
        channels = np.concatenate([pairs, pairs + head_dim // 2])
        out[..., channels] = apply_rope(x[..., channels], position_ids[axis], layout="half",
                                        inv_freq=inv_freq[pairs])
    return out


def _grids(value, arg, merge):
    if value is None:
        return np.zeros((0, 3), dtype=np.int64)
    grids = val.numeric_array(value, arg, integer=True).astype(np.int64)
    if grids.ndim != 2 or grids.shape[1] != 3:
        raise ValueError(f"{arg} must have shape (n, 3): (t, h, w) in patches per item, got "
                         f"{grids.shape}")
    if grids.size and grids.min() <= 0:
        raise ValueError(f"{arg} must hold positive sizes, got {grids.tolist()}")
    if np.any(grids[:, 1:] % merge):
        raise ValueError(f"{arg}: heights and widths must be multiples of spatial_merge_size={merge}, "
                         f"got {grids.tolist()}")
    return grids


def mrope_position_ids(token_types, *, image_grid_thw=None, video_grid_thw=None, spatial_merge_size=2,
                       video_time_interval=None, text_resumes_at="max_height_width"):
    """Qwen2-VL's three position ids (temporal, height, width) for a sequence of text and vision tokens.

    A run of text tokens counts on from the current position ``s`` on all three axes. An image or
    video with LLM grid ``(T, H', W') = (t, h / merge, w / merge)`` numbers its ``T H' W'`` tokens
    (time, then rows, then columns) with ids ``(s + floor(k * interval), s + row, s + col)``. The
    next run starts at ``s + max(H', W')`` (``text_resumes_at="max_height_width"``, transformers
    5.x) or at the largest id so far plus one (``"largest_id"``, transformers 4.x); the two agree
    for images and for videos with ``floor((T-1) interval) < max(H', W')``.

    Parameters
    ----------
    token_types : array_like of int, shape ``(seq,)``
        0 text, 1 image, 2 video (transformers' ``mm_token_type_ids``). Each run of 1s (or 2s) is
        one image (one video); a run's length must equal its grid's token count.
    image_grid_thw, video_grid_thw : array_like of int, shape ``(n, 3)``
        ``(t, h, w)`` in patches before merging, in order of appearance.
    spatial_merge_size : int
        ``vision_config.spatial_merge_size`` (2 in Qwen2-VL): ``merge x merge`` patches become one
        token.
    video_time_interval : sequence of float, one per video, optional
        Temporal id step per temporal patch (Qwen2.5-VL: ``tokens_per_second * second_per_grid``).
        Default 1 (Qwen2-VL).
    text_resumes_at : {"max_height_width", "largest_id"}

    Returns
    -------
    int64 array, shape ``(3, seq)``. ``ids.max() + 1 - seq`` is transformers' ``rope_deltas``.

    References
    ----------
    Wang et al. 2024 (Qwen2-VL), section 2.1; Hugging Face ``models/qwen2_vl/modeling_qwen2_vl.py``
    ``Qwen2VLModel.get_rope_index`` and ``get_vision_position_ids``;
    ``models/qwen2_5_vl/modeling_qwen2_5_vl.py`` ``Qwen2_5_VLModel.get_rope_index``.
    """
    types = val.numeric_array(token_types, "token_types", integer=True).astype(np.int64)
    if types.ndim != 1 or types.size == 0:
        raise ValueError(f"token_types must be a non-empty 1-D sequence, got shape {types.shape}")
    if not np.isin(types, (TEXT, IMAGE, VIDEO)).all():
        raise ValueError(f"token_types must hold 0 (text), 1 (image) or 2 (video), got "
                         f"{sorted(set(types.tolist()))}")
    merge = val.positive_int(spatial_merge_size, "spatial_merge_size")
    text_resumes_at = val.choice(text_resumes_at, "text_resumes_at", TEXT_RESUMES_AT)
    grids = {IMAGE: _grids(image_grid_thw, "image_grid_thw", merge),
             VIDEO: _grids(video_grid_thw, "video_grid_thw", merge)}
    n_videos = len(grids[VIDEO])
    if video_time_interval is None:
        intervals = np.ones(n_videos)
    else:
        intervals = val.numeric_array(video_time_interval, "video_time_interval").astype(np.float64)
        if intervals.shape != (n_videos,) or (intervals.size and intervals.min() < 0):
            raise ValueError(f"video_time_interval must hold one non-negative number per video "
                             f"({n_videos}), got {intervals.tolist()}")
    starts = np.flatnonzero(np.diff(types, prepend=-1))
    ends = np.append(starts[1:], types.size)
    kinds = types[starts]
    for kind, name in ((IMAGE, "image_grid_thw"), (VIDEO, "video_grid_thw")):
        if int(np.sum(kinds == kind)) != len(grids[kind]):
            raise ValueError(f"{name} has {len(grids[kind])} grid(s) but token_types has "
                             f"{int(np.sum(kinds == kind))} run(s) of type {kind}")
    ids, current, used = [], 0, {IMAGE: 0, VIDEO: 0}
    for kind, start, end in zip(kinds, starts, ends, strict=True):  # one step per run, not per token
        if kind == TEXT:
            ids.append(np.broadcast_to(np.arange(current, current + end - start), (3, end - start)))
            current += end - start
            continue
        k = used[kind]
        used[kind] += 1
        t, h, w = grids[kind][k] // (1, merge, merge)
        name = "image_grid_thw" if kind == IMAGE else "video_grid_thw"
        if t * h * w != end - start:
            raise ValueError(f"{name}[{k}] = {grids[kind][k].tolist()} gives {t}x{h}x{w} = {t * h * w} "
                             f"tokens after {merge}x{merge} merging, but the run of type {kind} at "
                             f"index {start} has {end - start}")
        step = intervals[k] if kind == VIDEO else 1.0
        temporal = np.floor(np.arange(t) * step).astype(np.int64)
        grid_t, grid_h, grid_w = np.meshgrid(temporal, np.arange(h), np.arange(w), indexing="ij")
        block = np.stack([grid_t, grid_h, grid_w]).reshape(3, -1) + current
        ids.append(block)
        current = current + max(h, w) if text_resumes_at == "max_height_width" else int(block.max()) + 1
    return np.concatenate(ids, axis=1).astype(np.int64)
