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
from ._dtypes import as_float64, grade_by_precision, is_low_precision

__all__ = ["check_text_image_ids", "check_channel_axes", "check_resize_14_to_24",
           "check_video_resume_ids", "QWEN2_5_VL_VIDEO"]

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
        answer = as_float64(answer_of(func, *config))
        if answer.shape != shape_of(*config):
            raise ValueError(f"for arguments {config} the answer should have shape "
                             f"{shape_of(*config)}, got {answer.shape}")
        answers.append(answer.ravel())
    return np.concatenate(answers)


def check_text_image_ids(func):
    """Exercise 10.1: Qwen2-VL position ids of ``n_before`` text tokens, one image, ``n_after`` text tokens.

    ``func(n_before, h, w, n_after)`` gets the image's grid after merging, ``N_row x N_col``
    tokens (``h`` rows, ``w`` columns), and
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
    pairs and the layout is Hugging Face's half layout (channel ``l`` pairs with ``l + head_dim/2``).
    """
    def tiled(make):
        return np.concatenate([make(d, s) for d, s in _SPLITS]).astype(np.float64)

    expected = tiled(lambda d, s: np.tile(mrope_pair_axes(d, s), 2))
    hints = [
        (tiled(lambda d, s: np.repeat(mrope_pair_axes(d, s), 2)),
         "mrope_section counts pairs, and Qwen2-VL pairs channel l with channel l + head_dim/2 "
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
         "that is the cubic kernel with kappa = -0.5; torch's bicubic uses kappa = -0.75"),
        (by_matrix(_matrix_variant(_OLD, _NEW, kind="zero_padding")),
         "near the border a tap falls outside the grid: torch repeats the edge row or column "
         "(clamps the index) instead of reading zeros"),
        (by_matrix(bicubic_weights(_OLD, _NEW), resize_cls=True),
         "the class token's row is kept as it is, not recomputed"),
    ]

    def compute():
        """(low precision, answers): float32 or torch.float32 answers are graded at float32
        tolerances, float64 ones at float64 tolerances."""
        answers, low = [], False
        for table in tables:
            raw = answer_of(func, table.copy())
            low = low or is_low_precision(raw)
            answer = as_float64(raw)
            if answer.shape != (1 + _NEW * _NEW, table.shape[1]):
                raise ValueError(f"the answer should have shape {(1 + _NEW * _NEW, table.shape[1])} "
                                 f"(class token + 24 x 24 patches), got {answer.shape}")
            answers.append(answer.ravel())
        return low, np.concatenate(answers)

    # float32 arithmetic in another order (torch's kernel) errs by a few float32 steps of the
    # largest entry, also on entries near zero: the absolute tolerance scales with the table.
    scale = float(np.abs(expected).max())
    return grade_by_precision("Exercise 10.3: resize 14x14 to 24x24", compute, expected,
                              hints=hints, tol64=(1e-9, 1e-12 * scale),
                              tol32=(1e-5, 1e-5 * scale))


#: Qwen2.5-VL's video constants: pixels per patch side, patches merged per token side, frames
#: per temporal patch (transformers ``Qwen2_5_VLVisionConfig`` defaults), temporal ids per second
#: (2: the released models' ``vision_config.tokens_per_second``, and the authors'
#: ``get_rope_index_25``, which multiplies by 2; the config class's default is 4).
QWEN2_5_VL_VIDEO = {"patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                    "tokens_per_second": 2}

# Exercise 10.4: (text tokens before, frames, frames per second, height and width in pixels).
_VIDEOS = [(5, 16, 2.0, 336, 448), (3, 32, 1.0, 224, 224), (10, 12, 4.0, 280, 560),
           (2, 22, 1.5, 392, 196), (0, 8, 0.5, 448, 448)]


def _video_ids(n_before, frames, fps, height_px, width_px, *, merge=2, frames_per_patch=2,
               per_second=2, cast_seconds=False, rounding=np.floor, resume="largest",
               swap_rules=False):
    """(last temporal id, text id after the video by the trained rule, by transformers 5.x),
    computed the way a learner might, right or wrong."""
    side = QWEN2_5_VL_VIDEO["patch_size"] * merge
    t, h, w = frames // frames_per_patch, height_px // side, width_px // side
    seconds = QWEN2_5_VL_VIDEO["temporal_patch_size"] / fps
    if cast_seconds:
        seconds = float(int(seconds))
    last = n_before + int(rounding((t - 1) * seconds * per_second))
    largest = max(last, n_before + h - 1, n_before + w - 1)
    trained = {"largest": largest + 1, "equal": largest, "count": n_before + t * h * w}[resume]
    newer = n_before + max(h, w)
    return (last, newer, trained) if swap_rules else (last, trained, newer)


def _video_ids_from_course(n_before, frames, fps, height_px, width_px):
    """The three answers of Exercise 10.4 read off :func:`mrope_position_ids` (whose agreement
    with Qwen2_5_VLModel.get_rope_index the tests check)."""
    c = QWEN2_5_VL_VIDEO
    grid = [frames // c["temporal_patch_size"], height_px // c["patch_size"],
            width_px // c["patch_size"]]
    n_video = grid[0] * (grid[1] // c["spatial_merge_size"]) * (grid[2] // c["spatial_merge_size"])
    interval = c["tokens_per_second"] * c["temporal_patch_size"] / fps
    ids = {rule: mrope_position_ids([0] * n_before + [2] * n_video + [0], video_grid_thw=[grid],
                                    video_time_interval=[interval], text_resumes_at=rule)
           for rule in ("largest_id", "max_height_width")}
    return (int(ids["largest_id"][0, n_before + n_video - 1]), int(ids["largest_id"][0, -1]),
            int(ids["max_height_width"][0, -1]))


def check_video_resume_ids(func):
    """Exercise 10.4: where Qwen2.5-VL's text resumes after a video, under both rules.

    ``func(n_before, frames, fps, height_px, width_px)`` returns three integers: the temporal id
    of the video's last temporal patch, the id of the first text token after the video by the
    trained rule (largest id so far + 1: the authors' code, QwenLM/Qwen3-VL
    ``qwen-vl-finetune/qwenvl/data/rope2d.py`` ``get_rope_index_25``, and transformers 4.x) and by
    transformers 5.x (``p_start + max(N_row, N_col)``, the merged grid's rows and columns).
    Constants: :data:`QWEN2_5_VL_VIDEO`.
    """
    def table(**kw):
        return np.array([_video_ids(*video, **kw) for video in _VIDEOS], dtype=np.float64)

    expected = np.array([_video_ids_from_course(*video) for video in _VIDEOS], dtype=np.float64)
    hints = [
        (table(swap_rules=True), "the two rules are swapped: the trained rule starts one past the "
                                 "largest id so far, transformers 5.x at p_start + max(N_row, N_col)"),
        (table(cast_seconds=True),
         "that truncates the seconds per temporal patch to an integer first, as transformers "
         "4.x did: 2/fps is 0.5 s at 4 fps, and the ids step by tokens_per_second * 0.5 = 1"),
        (table(frames_per_patch=1), "two frames make one temporal patch (temporal_patch_size = "
                                    "2): a video of N_frame frames has N_frame/2 temporal patches"),
        (table(merge=1), "an image side in pixels, divided by 14, gives its patches, and 2 x 2 "
                         "patches merge into one token: the grid is side / 28 tokens per side"),
        (table(per_second=1), "the temporal id steps by tokens_per_second (2) times the seconds "
                              "per temporal patch (2/fps), not by the seconds alone"),
        (table(rounding=np.round), "the temporal ids are rounded down (.long() after "
                                   "multiplying), not to the nearest integer"),
        (table(resume="count"), "text resumes one past the largest id so far, not after the "
                                "number of tokens"),
        (table(resume="equal"), "off by one: the trained rule starts one PAST the largest id"),
    ]

    def compute():
        answers = []
        for video in _VIDEOS:
            answer = as_float64(answer_of(func, *video)).ravel()
            if answer.shape != (3,):
                raise ValueError(f"for arguments {video} the answer should be three numbers "
                                 f"(last temporal id, trained rule, 5.x rule), got shape "
                                 f"{answer.shape}")
            answers.append(answer)
        return np.stack(answers)

    return grade("Exercise 10.4: text after a video", compute, expected, hints=hints,
                 rtol=0, atol=1e-6)
