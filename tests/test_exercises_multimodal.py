"""The checkers of notebook 10's exercises: NOT ATTEMPTED for the stub, PASS for right answers
(also in float32), TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.multimodal import (
    QWEN2_5_VL_VIDEO,
    check_channel_axes,
    check_resize_14_to_24,
    check_text_image_ids,
    check_video_resume_ids,
)


@pytest.mark.parametrize("checker", [check_text_image_ids, check_channel_axes, check_resize_14_to_24,
                                     check_video_resume_ids])
def test_stub_is_not_attempted(checker, capsys):
    assert checker(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def _ids_by_loop(n_before, h, w, n_after, *, dtype=np.int64, resume_offset=1, swap=False):
    """Token by token, as the Qwen2-VL paper describes the numbering."""
    columns, position = [], 0
    for _ in range(n_before):
        columns.append((position, position, position))
        position += 1
    start = position
    for row in range(h):
        for col in range(w):
            columns.append((start, start + (col if swap else row), start + (row if swap else col)))
    position = max(max(c) for c in columns) + resume_offset
    for _ in range(n_after):
        columns.append((position, position, position))
        position += 1
    return np.array(columns, dtype=dtype).T


def test_text_image_ids(capsys):
    assert check_text_image_ids(_ids_by_loop) is True
    assert "PASS" in printed(capsys)
    assert check_text_image_ids(lambda *a: _ids_by_loop(*a, dtype=np.float32)) is True
    assert "PASS" in printed(capsys)
    assert check_text_image_ids(lambda *a: _ids_by_loop(*a, resume_offset=0)) is False
    assert "off by one" in printed(capsys)
    assert check_text_image_ids(lambda *a: _ids_by_loop(*a, swap=True)) is False
    assert "swapped" in printed(capsys)

    def one_d(n_before, h, w, n_after):
        return np.tile(np.arange(n_before + h * w + n_after), (3, 1))

    assert check_text_image_ids(one_d) is False
    assert "1-D positions" in printed(capsys)

    def by_count(n_before, h, w, n_after):
        ids = _ids_by_loop(n_before, h, w, n_after)
        ids[:, n_before + h * w:] = np.arange(n_before + h * w, n_before + h * w + n_after)
        return ids

    assert check_text_image_ids(by_count) is False
    assert "number of tokens" in printed(capsys)
    # typed in for the first layout only
    first = _ids_by_loop(3, 2, 3, 2)
    assert check_text_image_ids(lambda *a: first) is False
    assert "should have shape" in printed(capsys)


def _axes_by_loop(head_dim, section, *, dtype=np.int64):
    axes = []
    for axis, count in enumerate(section):
        axes += [axis] * count
    return np.array(axes + axes, dtype=dtype)


def test_channel_axes(capsys):
    assert check_channel_axes(_axes_by_loop) is True
    assert "PASS" in printed(capsys)
    assert check_channel_axes(lambda d, s: _axes_by_loop(d, s, dtype=np.float32)) is True
    assert "PASS" in printed(capsys)
    assert check_channel_axes(lambda d, s: np.repeat(_axes_by_loop(d, s)[: d // 2], 2)) is False
    assert "half layout" in printed(capsys)
    assert check_channel_axes(lambda d, s: np.repeat(np.arange(3), 2 * np.asarray(s))) is False
    assert "counts pairs" in printed(capsys)
    assert check_channel_axes(lambda d, s: np.repeat(np.arange(3), s)) is False
    assert "should have shape" in printed(capsys)

    def qwen3(head_dim, section):
        pairs = np.zeros(head_dim // 2, dtype=int)
        pairs[1:3 * section[1]:3], pairs[2:3 * section[2]:3] = 1, 2
        return np.tile(pairs, 2)

    assert check_channel_axes(qwen3) is False
    assert "Qwen3-VL" in printed(capsys)
    assert check_channel_axes(lambda d, s: _axes_by_loop(d, s)[: d // 2]) is False
    assert "should have shape" in printed(capsys)
    qwen2 = _axes_by_loop(128, (16, 24, 24))
    assert check_channel_axes(lambda d, s: qwen2) is False


def _keys(t, a=-0.75):
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0


def _resize_by_loop(table, *, a=-0.75, dtype=np.float64, old=14, new=24):
    """Output pixel by output pixel, 16 taps each, indices clamped to the grid."""
    grid = table[1:].reshape(old, old, -1)
    out = np.zeros((new, new, table.shape[1]))
    for y in range(new):
        sy = (y + 0.5) * old / new - 0.5
        for x in range(new):
            sx = (x + 0.5) * old / new - 0.5
            for i in range(int(np.floor(sy)) - 1, int(np.floor(sy)) + 3):
                for j in range(int(np.floor(sx)) - 1, int(np.floor(sx)) + 3):
                    weight = _keys(sy - i, a) * _keys(sx - j, a)
                    out[y, x] += weight * grid[min(max(i, 0), old - 1), min(max(j, 0), old - 1)]
    return np.concatenate([table[:1], out.reshape(-1, table.shape[1])]).astype(dtype)


def test_resize(capsys):
    assert check_resize_14_to_24(_resize_by_loop) is True
    assert "PASS" in printed(capsys)
    assert check_resize_14_to_24(lambda t: _resize_by_loop(t, dtype=np.float32)) is True
    assert "PASS" in printed(capsys)
    assert check_resize_14_to_24(lambda t: _resize_by_loop(t, a=-0.5)) is False
    assert "a = -0.75" in printed(capsys)
    assert check_resize_14_to_24(lambda t: _resize_by_loop(t)[1:]) is False
    assert "class token" in printed(capsys)

    def corners(table):
        src = np.arange(24) * 13 / 23
        grid = table[1:].reshape(14, 14, -1)
        rows = np.stack([np.interp(src, np.arange(14), c) for c in np.eye(14)], axis=1)
        return np.concatenate([table[:1], np.einsum("ah,hwd,bw->abd", rows, grid, rows).reshape(576, -1)])

    assert check_resize_14_to_24(corners) is False
    assert "TRY AGAIN" in printed(capsys)


def _resize_by_torch(torch, table, dtype):
    """A right answer computed by torch in ``dtype``, returned as a torch tensor."""
    t = torch.tensor(table, dtype=dtype)
    grid = t[1:].reshape(14, 14, -1).permute(2, 0, 1)[None]
    out = torch.nn.functional.interpolate(grid, size=(24, 24), mode="bicubic", align_corners=False)
    return torch.cat([t[:1], out[0].permute(1, 2, 0).reshape(576, -1)])


def test_resize_tolerance_follows_the_answers_dtype(torch, capsys):
    # torch's float32 kernel sums in another order: off by a few float32 steps, also near zero
    assert check_resize_14_to_24(lambda t: _resize_by_torch(torch, t, torch.float32)) is True
    assert "PASS" in printed(capsys)
    assert check_resize_14_to_24(lambda t: _resize_by_torch(torch, t, torch.float64)) is True
    assert "PASS" in printed(capsys)
    # a float32 computation handed back as float64 is held to float64 tolerances
    assert check_resize_14_to_24(lambda t: _resize_by_torch(torch, t, torch.float32).double()) is False
    assert "TRY AGAIN" in printed(capsys)
    # a wrong kernel in float32 is still rejected with its hint
    assert check_resize_14_to_24(lambda t: _resize_by_loop(t, a=-0.5, dtype=np.float32)) is False
    assert "a = -0.75" in printed(capsys)


def test_integer_answers_as_torch_tensors(torch, capsys):
    assert check_text_image_ids(lambda *a: torch.tensor(_ids_by_loop(*a))) is True
    assert "PASS" in printed(capsys)
    assert check_channel_axes(lambda d, s: torch.tensor(_axes_by_loop(d, s, dtype=np.float32))) is True
    assert "PASS" in printed(capsys)


def _resume_by_hand(n_before, frames, fps, height_px, width_px, *, merge=True, patch_frames=2,
                    step_per_second=2, truncate_seconds=False, resume_offset=1, dtype=np.int64):
    """Exercise 10.4 worked the long way: list the video's temporal ids one patch at a time."""
    c = QWEN2_5_VL_VIDEO
    side = c["patch_size"] * (c["spatial_merge_size"] if merge else 1)
    rows, cols = height_px // side, width_px // side
    seconds = c["temporal_patch_size"] / fps
    if truncate_seconds:
        seconds = int(seconds)
    temporal = [n_before + int(k * seconds * step_per_second) for k in range(frames // patch_frames)]
    largest = max(temporal + [n_before + rows - 1, n_before + cols - 1])
    return np.array([temporal[-1], largest + resume_offset, n_before + max(rows, cols)], dtype=dtype)


def test_video_resume_ids(torch, capsys):
    assert check_video_resume_ids(_resume_by_hand) is True
    assert "PASS" in printed(capsys)
    assert check_video_resume_ids(lambda *a: _resume_by_hand(*a, dtype=np.float32)) is True
    assert "PASS" in printed(capsys)
    assert check_video_resume_ids(lambda *a: torch.tensor(_resume_by_hand(*a))) is True
    assert "PASS" in printed(capsys)
    assert check_video_resume_ids(lambda *a: list(_resume_by_hand(*a))) is True
    assert "PASS" in printed(capsys)
    wrong = [
        (dict(truncate_seconds=True), "transformers 4.x"),
        (dict(patch_frames=1), "temporal_patch_size"),
        (dict(merge=False), "merge into one token"),
        (dict(step_per_second=1), "not by the seconds alone"),
        (dict(resume_offset=0), "off by one"),
    ]
    for kwargs, hint in wrong:
        assert check_video_resume_ids(lambda *a, kw=kwargs: _resume_by_hand(*a, **kw)) is False
        assert hint in printed(capsys)

    def swapped(*a):
        return _resume_by_hand(*a)[[0, 2, 1]]

    assert check_video_resume_ids(swapped) is False
    assert "swapped" in printed(capsys)

    def rounded(n_before, frames, fps, height_px, width_px):
        answer = _resume_by_hand(n_before, frames, fps, height_px, width_px)
        step = QWEN2_5_VL_VIDEO["tokens_per_second"] * 2 / fps
        answer[0] = n_before + round((frames // 2 - 1) * step)
        answer[1] = max(answer[0], n_before + max(height_px, width_px) // 28 - 1) + 1
        return answer

    assert check_video_resume_ids(rounded) is False
    assert "rounded down" in printed(capsys)
    # typed in for the first video only
    first = _resume_by_hand(5, 16, 2.0, 336, 448)
    assert check_video_resume_ids(lambda *a: first) is False
    assert "TRY AGAIN" in printed(capsys)
    assert check_video_resume_ids(lambda *a: first[:2]) is False
    assert "three numbers" in printed(capsys)
