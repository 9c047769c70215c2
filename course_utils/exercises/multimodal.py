"""Checkers for the exercises of notebook 10 (positions for images and video).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
Each calls the learner's function on several configurations, so an answer typed in for one of them
cannot pass. Expected answers come from :mod:`course_utils.multimodal`, whose agreement with
transformers the tests check; the hints come from plausible mistakes built here.
"""

from __future__ import annotations

import numpy as np

from ..multimodal import bicubic_weights, mrope_pair_axes, mrope_position_ids, resize_pos_table
from . import answer_of, grade

__all__ = ["check_text_image_ids", "check_channel_axes", "check_resize_14_to_24"]

# Exercise 10.1: (text tokens before, merged grid rows, merged grid columns, text tokens after).
_LAYOUTS = [(3, 2, 3, 2), (1, 4, 2, 3), (2, 1, 5, 1), (4, 3, 3, 4)]

# Exercise 10.2: (head_dim, mrope_section); the first is Qwen2-VL's.
_SPLITS = [(128, (16, 24, 24)), (16, (2, 3, 3)), (16, (4, 2, 2)), (24, (2, 5, 5))]

# Exercise 10.3: two tables of a 14 x 14 grid plus a class token, resized to 24 x 24.
_OLD, _NEW, _WIDTHS, _TABLE_SEED = 14, 24, (8, 12), 103


def _ids(n_before, h, w, n_after, *, resume="largest", offset=True, swapped=False):
    """Position ids of text + image + text, built the way a learner might (right or wrong)."""
    rows, cols = np.divmod(np.arange(h * w), w)
    if swapped:
        rows, cols = cols, rows
    start = n_before if offset else 0
    image = np.stack([np.full(h * w, start), rows + start, cols + start])
    after = {"largest": image.max() + 1, "count": n_before + h * w, "equal": image.max()}[resume]
    text_before = np.broadcast_to(np.arange(n_before), (3, n_before))
    text_after = np.broadcast_to(np.arange(after, after + n_after), (3, n_after))
    return np.concatenate([text_before, image, text_after], axis=1)


def _collect(func, configs, shape_of):
    answers = []
    for config in configs:
        answer = np.asarray(answer_of(func, *config), dtype=np.float64)
        if answer.shape != shape_of(*config):
            raise ValueError(f"for arguments {config} the answer should have shape "
                             f"{shape_of(*config)}, got {answer.shape}")
        answers.append(answer.ravel())
    return np.concatenate(answers)


def check_text_image_ids(func):
    """Exercise 10.1: Qwen2-VL position ids of ``n_before`` text tokens, one image, ``n_after`` text tokens.

    ``func(n_before, h, w, n_after)`` gets the image's grid after merging (``h x w`` tokens) and
    returns the ``(3, n_before + h*w + n_after)`` ids (temporal, height, width).
    """
    expected = np.concatenate([
        mrope_position_ids([0] * b + [1] * (h * w) + [0] * a, image_grid_thw=[[1, 2 * h, 2 * w]]).ravel()
        for b, h, w, a in _LAYOUTS])

    def variant(**kw):
        return np.concatenate([_ids(*layout, **kw).ravel() for layout in _LAYOUTS])

    one_d = np.concatenate([np.broadcast_to(np.arange(b + h * w + a), (3, b + h * w + a)).ravel()
                            for b, h, w, a in _LAYOUTS])
    hints = [
        (one_d, "these are 1-D positions repeated on three axes; an image's tokens share their "
                "temporal id and take their row and column as height and width ids"),
        (variant(resume="count"), "text after the image resumes one past the image's largest id, "
                                  "not at the number of tokens so far"),
        (variant(resume="equal"), "off by one: text after the image starts one PAST the image's "
                                  "largest id"),
        (variant(offset=False), "the image's ids start at the current position (the number of "
                                "text tokens before it), not at 0"),
        (variant(swapped=True), "height and width are swapped: the height id is the patch's row "
                                "(it changes slowest), the width id its column"),
    ]
    return grade("Exercise 10.1: text + image ids",
                 lambda: _collect(func, _LAYOUTS, lambda b, h, w, a: (3, b + h * w + a)),
                 expected, hints=hints, rtol=0, atol=1e-9)


def _interleaved_pairs(head_dim, section):
    """Qwen3-VL's interleaved pair axes, sliced as its code slices (even where it truncates)."""
    pairs = np.zeros(head_dim // 2, dtype=np.int64)
    pairs[1:3 * section[1]:3] = 1
    pairs[2:3 * section[2]:3] = 2
    return pairs


def check_channel_axes(func):
    """Exercise 10.2: which position id (0, 1, 2) rotates each of the ``head_dim`` channels in Qwen2-VL.

    ``func(head_dim, mrope_section)`` returns ``head_dim`` integers. ``mrope_section`` counts rotary
    pairs and the layout is Hugging Face's half layout (channel ``c`` pairs with ``c + head_dim/2``).
    """
    def tiled(make):
        return np.concatenate([make(d, s) for d, s in _SPLITS]).astype(np.float64)

    expected = tiled(lambda d, s: np.tile(mrope_pair_axes(d, s), 2))
    hints = [
        (tiled(lambda d, s: np.repeat(mrope_pair_axes(d, s), 2)),
         "mrope_section counts pairs, and Qwen2-VL pairs channel c with channel c + head_dim/2 "
         "(half layout), not with its neighbour: the head_dim/2 pair axes appear twice, as a "
         "block"),
        (tiled(lambda d, s: np.tile(_interleaved_pairs(d, s), 2)),
         "that is Qwen3-VL's interleaved split; Qwen2-VL gives each axis one consecutive block"),
    ]
    return grade("Exercise 10.2: channel split",
                 lambda: _collect(func, _SPLITS, lambda d, s: (d,)), expected, hints=hints,
                 rtol=0, atol=1e-9)


def _matrix_variant(in_size, out_size, *, kind):
    """Resampling matrices of plausible wrong resizes."""
    j = np.arange(out_size)
    if kind == "align_corners":
        src = j * (in_size - 1) / (out_size - 1)
    else:
        src = (j + 0.5) * in_size / out_size - 0.5
    if kind == "bilinear":
        src = np.maximum(src, 0.0)                     # torch's linear modes clamp at 0
        low = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
        high = np.minimum(low + 1, in_size - 1)
        matrix = np.zeros((out_size, in_size))
        np.add.at(matrix, (j, low), 1 - (src - low))
        np.add.at(matrix, (j, high), src - low)
        return matrix
    floor = np.floor(src)
    taps = floor.astype(np.int64)[:, None] + np.arange(-1, 3)
    t = np.abs((src - floor)[:, None] - np.arange(-1, 3))
    a = -0.75
    weights = np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                       np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))
    inside = (taps >= 0) & (taps < in_size)
    if kind == "zero_padding":
        weights = np.where(inside, weights, 0.0)
    matrix = np.zeros((out_size, in_size))
    np.add.at(matrix, (np.repeat(j, 4), np.clip(taps, 0, in_size - 1).ravel()), weights.ravel())
    return matrix


def check_resize_14_to_24(func):
    """Exercise 10.3: resize a ViT table from a 14 x 14 grid (plus a class token) to 24 x 24.

    ``func(table)`` receives a ``(1 + 196, D)`` table and returns the ``(1 + 576, D)`` table that
    ViT's ``interpolate_pos_encoding`` makes (bicubic, ``align_corners=False``, class token kept).
    """
    rng = np.random.default_rng(_TABLE_SEED)
    tables = [rng.normal(size=(1 + _OLD * _OLD, width)) for width in _WIDTHS]
    expected = np.concatenate([resize_pos_table(t, (_NEW, _NEW)).ravel() for t in tables])

    def by_matrix(matrix, *, resize_cls=False):
        out = []
        for table in tables:
            grid = table[1:].reshape(_OLD, _OLD, -1)
            patches = np.einsum("ah,hwd,bw->abd", matrix, grid, matrix).reshape(-1, table.shape[1])
            cls = table[:1] if not resize_cls else patches.mean(axis=0, keepdims=True)
            out.append(np.concatenate([cls, patches]).ravel())
        return np.concatenate(out)

    hints = [
        (by_matrix(_matrix_variant(_OLD, _NEW, kind="align_corners")),
         "that is align_corners=True (corners mapped onto corners); ViT uses align_corners=False: "
         "new sample j reads the old grid at (j + 0.5) * 14/24 - 0.5"),
        (by_matrix(_matrix_variant(_OLD, _NEW, kind="bilinear")),
         "that is bilinear interpolation; ViT's interpolate_pos_encoding is bicubic"),
        (by_matrix(bicubic_weights(_OLD, _NEW, a=-0.5)),
         "that is the cubic kernel with a = -0.5; torch's bicubic uses a = -0.75"),
        (by_matrix(_matrix_variant(_OLD, _NEW, kind="zero_padding")),
         "near the border a tap falls outside the grid: torch repeats the edge row or column "
         "(clamps the index) instead of reading zeros"),
        (by_matrix(bicubic_weights(_OLD, _NEW), resize_cls=True),
         "the class token's row is kept as it is, not recomputed"),
    ]

    def compute():
        answers = []
        for table in tables:
            answer = np.asarray(answer_of(func, table.copy()), dtype=np.float64)
            if answer.shape != (1 + _NEW * _NEW, table.shape[1]):
                raise ValueError(f"the answer should have shape {(1 + _NEW * _NEW, table.shape[1])} "
                                 f"(class token + 24 x 24 patches), got {answer.shape}")
            answers.append(answer.ravel())
        return np.concatenate(answers)

    return grade("Exercise 10.3: resize 14x14 to 24x24", compute, expected,
                 hints=hints, rtol=1e-5, atol=1e-6)
