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


def _stale_by_rotation(m, n, head_dim, original, factor):
    """Exercise 8.4 by rotating a unit vector per pair: the cached key's angle minus a fresh one."""
    from course_utils.scaling import rope_scaling

    def theta(length):
        return rope_scaling("dynamic", head_dim, factor=factor,
                            original_max_position_embeddings=original, seq_len=length)[0]

    cached = np.exp(1j * n * theta(n + 1))  # the key as the cache holds it
    fresh = np.exp(1j * n * theta(m + 1))   # the key as a full pass at m + 1 tokens rotates it
    angle = np.angle(cached * np.conj(fresh))
    # unwrap: the errors here stay below pi except where n * delta theta is larger
    return angle + 2 * np.pi * np.round((n * (theta(n + 1) - theta(m + 1)) - angle) / (2 * np.pi))


def test_stale_rotation_right_answers(capsys):
    from course_utils.exercises.practice import check_stale_rotation
    torch = pytest.importorskip("torch")
    assert check_stale_rotation(_stale_by_rotation) is True
    assert check_stale_rotation(lambda *c: _stale_by_rotation(*c).astype(np.float32)) is True
    assert check_stale_rotation(lambda *c: torch.tensor(_stale_by_rotation(*c),
                                                        dtype=torch.float32)) is True
    assert printed(capsys).count("PASS") == 3


def test_stale_rotation_stub(capsys):
    from course_utils.exercises.practice import check_stale_rotation
    assert check_stale_rotation(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def _theta(head_dim, length, original, factor):
    from course_utils.scaling import rope_scaling
    return rope_scaling("dynamic", head_dim, factor=factor,
                        original_max_position_embeddings=original, seq_len=length)[0]


@pytest.mark.parametrize("wrong, hint", [
    (lambda m, n, d, L, s: np.zeros(d // 2), "nothing is stale only while"),
    (lambda m, n, d, L, s: n * (_theta(d, m + 1, L, s) - _theta(d, n + 1, L, s)), "sign"),
    (lambda m, n, d, L, s: m * (_theta(d, n + 1, L, s) - _theta(d, m + 1, L, s)),
     "own position n"),
    (lambda m, n, d, L, s: (n - m) * (_theta(d, n + 1, L, s) - _theta(d, m + 1, L, s)),
     "relative angle"),
    (lambda m, n, d, L, s: n * (_theta(d, n, L, s) - _theta(d, m, L, s)), "off by one"),
    (lambda m, n, d, L, s: n * (_theta(d, None, L, s) - _theta(d, m + 1, L, s)),
     "already rotated with a scaled base"),
    (lambda m, n, d, L, s: n * (_theta(d, n + 1, L, s) - _theta(d, m + 1, L, s))[:2],
     "shape"),
])
def test_stale_rotation_wrong(wrong, hint, capsys):
    from course_utils.exercises.practice import check_stale_rotation
    assert check_stale_rotation(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out
