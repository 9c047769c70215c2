"""The checkers of notebook 05's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.rope import (
    check_angles,
    check_bfloat16_spacing,
    check_half_layout_weight,
)


def _half_layout_by_loop(weight, n_heads):
    """Rows of each head in the order 0, 2, 4, ..., 1, 3, 5, ... built one head at a time."""
    head_dim = weight.shape[0] // n_heads
    blocks = []
    for h in range(n_heads):
        block = weight[h * head_dim:(h + 1) * head_dim]
        blocks.append(np.concatenate([block[0::2], block[1::2]]))
    return np.concatenate(blocks)


def _conversion_script_permute(weight, n_heads):
    # convert_llama_weights_to_hf.py: w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2)
    rows, cols = weight.shape
    per_head = weight.reshape(n_heads, rows // n_heads // 2, 2, cols)
    return per_head.transpose(0, 2, 1, 3).reshape(rows, cols)


@pytest.mark.parametrize("checker, stub", [
    (check_angles, ...),
    (check_half_layout_weight, stub_function),
    (check_bfloat16_spacing, ...),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def test_angles(capsys):
    i = np.arange(8)
    assert check_angles(100 * 10000.0 ** (-2 * i / 16)) is True
    assert "PASS" in printed(capsys)
    assert check_angles(100 * 10000.0 ** (-i / 16)) is False
    assert "2i/d" in printed(capsys)
    assert check_angles(np.degrees(100 * 10000.0 ** (-2 * i / 16))) is False
    assert "radians" in printed(capsys)
    assert check_angles(100 * 10000.0 ** (2 * i / 16)) is False
    assert "shrinks" in printed(capsys)


def test_half_layout_weight(capsys):
    assert check_half_layout_weight(_half_layout_by_loop) is True
    assert "PASS" in printed(capsys)
    assert check_half_layout_weight(_conversion_script_permute) is True
    assert "PASS" in printed(capsys)

    def whole_matrix(weight, n_heads):
        return np.concatenate([weight[0::2], weight[1::2]])

    assert check_half_layout_weight(whole_matrix) is False
    assert "within each head" in printed(capsys)

    def inverse(weight, n_heads):
        # half -> interleaved: row 2i takes row i, row 2i+1 takes row i + head_dim/2
        head_dim = weight.shape[0] // n_heads
        out = np.empty_like(weight)
        for h in range(n_heads):
            block = weight[h * head_dim:(h + 1) * head_dim]
            out[h * head_dim:(h + 1) * head_dim][0::2] = block[:head_dim // 2]
            out[h * head_dim:(h + 1) * head_dim][1::2] = block[head_dim // 2:]
        return out

    assert check_half_layout_weight(inverse) is False
    assert "inverse permutation" in printed(capsys)
    assert check_half_layout_weight(lambda weight, n_heads: weight) is False
    assert "unchanged" in printed(capsys)


def test_bfloat16_spacing(capsys):
    # 40000 is in [2^15, 2^16); bfloat16 has 8 significant bits: gap 2^(15-7) = 256
    assert check_bfloat16_spacing(256) is True
    assert "PASS" in printed(capsys)
    assert check_bfloat16_spacing(128) is False
    assert "implicit leading 1" in printed(capsys)
    assert check_bfloat16_spacing(32) is False
    assert "float16" in printed(capsys)
    assert check_bfloat16_spacing(512) is False
    assert "j = 15" in printed(capsys)


def test_bfloat16_spacing_agrees_with_torch(torch):
    # The gap the checker expects is the gap torch's bfloat16 has between 40000's neighbours.
    value = torch.tensor(40000.0).to(torch.bfloat16)
    step = float(torch.nextafter(value, torch.tensor(1e9, dtype=torch.bfloat16)) - value)
    assert check_bfloat16_spacing(step) is True


def _angles(dtype=np.float64):
    return (100 * 10000.0 ** (-2 * np.arange(8) / 16)).astype(dtype)


def test_angles_float32_and_torch_answers_pass(torch, capsys):
    assert check_angles(_angles(np.float32)) is True
    assert check_angles(torch.tensor(_angles(), dtype=torch.float32)) is True
    assert check_angles(list(_angles())) is True
    assert printed(capsys).count("PASS") == 3


@pytest.mark.parametrize("wrong, hint", [
    (_angles()[::-1], "reverse order"),
    (100 * 10000.0 ** (-2 * np.arange(1, 9) / 16), "start at 0"),
    (99 * 10000.0 ** (-2 * np.arange(8) / 16), "position 99"),
    (np.mod(_angles(), 2 * np.pi), "modulo 2 pi"),
    (_angles() * (1 + 1e-4), "values differ"),
    (_angles(np.float32)[:7], "shape"),
])
def test_angles_wrong(wrong, hint, capsys):
    assert check_angles(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_half_layout_weight_float32_and_torch(torch, capsys):
    assert check_half_layout_weight(
        lambda w, h: _half_layout_by_loop(w, h).astype(np.float32)) is True
    assert check_half_layout_weight(
        lambda w, h: torch.from_numpy(_conversion_script_permute(w, h)).float()) is True
    assert printed(capsys).count("PASS") == 2


def _hard_coded_head_dim(weight, n_heads):
    head_dim = 6  # read off the first test weight instead of weight.shape[0] // n_heads
    per_head = weight.reshape(-1, head_dim // 2, 2, weight.shape[1])
    return per_head.transpose(0, 2, 1, 3).reshape(weight.shape)


def _odd_first(weight, n_heads):
    head_dim = weight.shape[0] // n_heads
    return np.concatenate([np.concatenate([b[1::2], b[0::2]])
                           for b in np.split(weight, weight.shape[0] // head_dim)])


@pytest.mark.parametrize("wrong, hint", [
    (_hard_coded_head_dim, "typing a number in"),
    (_odd_first, "odd channels come first"),
    (lambda w, h: w[:-1], "same shape"),
    (lambda w, h: w.T, "same shape"),
    (lambda w, h: w[::-1], "values differ"),
])
def test_half_layout_weight_more_wrong_answers(wrong, hint, capsys):
    assert check_half_layout_weight(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_hard_coded_head_dim_is_right_on_the_first_shape_only():
    # The wrong answer above is the right one for the (3, 6, 5) weight: only the other two
    # shapes expose it.
    w = np.arange(18.0 * 5).reshape(18, 5)
    assert np.array_equal(_hard_coded_head_dim(w, 3), _half_layout_by_loop(w, 3))


def test_bfloat16_spacing_float32_and_relative_gap(capsys):
    assert check_bfloat16_spacing(np.float32(256)) is True
    assert "PASS" in printed(capsys)
    assert check_bfloat16_spacing(2.0 ** -7) is False
    assert "relative gap" in printed(capsys)
