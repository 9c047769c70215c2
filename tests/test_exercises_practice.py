"""The checkers of notebook 08's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.practice import (
    NEXT_POSITION_MASK,
    check_next_positions,
    check_packed_position_ids,
    check_position_ids,
)


@pytest.mark.parametrize("checker, stub", [
    (check_position_ids, stub_function),
    (check_packed_position_ids, stub_function),
    (check_next_positions, ...),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


@pytest.mark.parametrize("pad_value", [0, 1, 99])
def test_position_ids_right_whatever_the_pads_get(pad_value, capsys):
    def answer(mask):
        return np.where(mask == 1, np.cumsum(mask, axis=-1) - 1, pad_value)
    assert check_position_ids(answer) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda mask: np.broadcast_to(np.arange(mask.shape[1]), mask.shape), "naive arange"),
    (lambda mask: np.cumsum(mask, axis=-1), "off by one"),
    (lambda mask: np.arange(mask.shape[1]), "shape"),
])
def test_position_ids_wrong(wrong, hint, capsys):
    assert check_position_ids(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_packed_position_ids(capsys):
    def answer(lengths):
        return np.concatenate([np.arange(n) for n in lengths])
    assert check_packed_position_ids(answer) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda lengths: np.arange(sum(lengths)), "run on"),
    (lambda lengths: np.concatenate([np.arange(1, n + 1) for n in lengths]), "off by one"),
])
def test_packed_position_ids_wrong(wrong, hint, capsys):
    assert check_packed_position_ids(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_next_positions(capsys):
    # Each row's new token follows its real tokens: rows with 3, 6 and 5 real tokens.
    assert NEXT_POSITION_MASK.sum(axis=-1).tolist() == [3, 6, 5]
    assert check_next_positions([3, 6, 5]) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    ([6, 6, 6], "column index"),
    ([2, 5, 4], "LAST PROMPT token"),
    ([3, 6], "shape"),
])
def test_next_positions_wrong(wrong, hint, capsys):
    assert check_next_positions(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_position_ids_float32_and_torch_pass(torch, capsys):
    assert check_position_ids(
        lambda m: (np.cumsum(m, axis=-1) - 1).astype(np.float32)) is True
    assert check_position_ids(
        lambda m: torch.from_numpy(m).cumsum(dim=-1) - 1) is True
    assert printed(capsys).count("PASS") == 2


def _minus_pads(mask):
    # Right for left padding only: arange(seq) minus the number of pads in the row.
    n_pads = mask.shape[1] - mask.sum(axis=-1, keepdims=True)
    return np.arange(mask.shape[1]) - n_pads


@pytest.mark.parametrize("wrong, hint", [
    (_minus_pads, "left padding only"),
    (lambda mask: np.cumsum(mask, axis=0) - 1, "axis=-1"),
    (lambda mask: np.broadcast_to(np.arange(mask.shape[1]), mask.shape) * mask, "naive arange"),
    (lambda mask: np.cumsum(mask, axis=-1) - 2, "values differ"),
])
def test_position_ids_more_wrong_answers(wrong, hint, capsys):
    assert check_position_ids(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_minus_pads_is_right_for_left_padding():
    # Why the checker needs right-padded rows: on left padding the wrong answer is right.
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    real = mask == 1
    assert np.array_equal(_minus_pads(mask)[real], (np.cumsum(mask, axis=-1) - 1)[real])


def test_packed_position_ids_float32_passes(capsys):
    assert check_packed_position_ids(
        lambda lengths: np.concatenate([np.arange(n) for n in lengths]).astype(np.float32))
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda lengths: np.repeat(np.arange(len(lengths)), lengths), "document ids"),
    (lambda lengths: np.concatenate([np.arange(n)[::-1] for n in lengths]), "counts down"),
    (lambda lengths: np.arange(lengths[0]), "position ids, got"),
    (lambda lengths: np.concatenate([np.arange(n) for n in lengths[:1]] * len(lengths)),
     "TRY AGAIN"),
])
def test_packed_position_ids_more_wrong_answers(wrong, hint, capsys):
    assert check_packed_position_ids(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


@pytest.mark.parametrize("wrong, hint", [
    ([3, 0, 1], "number of pads"),
    ([4, 7, 6], "one too many"),
])
def test_next_positions_more_wrong_answers(wrong, hint, capsys):
    assert check_next_positions(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_next_positions_float32_passes(capsys):
    assert check_next_positions(np.array([3, 6, 5], dtype=np.float32)) is True
    assert "PASS" in printed(capsys)
