"""The checkers of notebook 04's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.relative import (
    check_decoder_step_bias,
    check_offset_bucket,
    check_saturation_distance,
)
from course_utils.relative import t5_relative_position_bucket


def _loop_step_bias(table, step):
    """Bias of the query at position ``step`` over keys ``0 .. step``, one key at a time."""
    out = np.empty((table.shape[1], step + 1))
    for j in range(step + 1):
        bucket = int(t5_relative_position_bucket(j - step, bidirectional=False))
        out[:, j] = table[bucket]
    return out


@pytest.mark.parametrize("checker, stub", [
    (check_offset_bucket, ...),
    (check_saturation_distance, stub_function),
    (check_decoder_step_bias, stub_function),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def _bucket_by_formula(distance, half, max_distance=128):
    """T5's formula for a key ``distance`` tokens before the query, written from the paper and
    Hugging Face ``_relative_position_bucket`` (exact below half/2, then a truncated logarithm)."""
    max_exact = half // 2
    if distance < max_exact:
        return distance
    large = max_exact + int(math.log(distance / max_exact) / math.log(max_distance / max_exact)
                            * (half - max_exact))
    return min(large, half - 1)


def test_offset_bucket(capsys):
    # 8 + floor(ln(20/8) / ln(16) * 8) = 8 + floor(2.64) = 10 (bidirectional: 16 buckets a side)
    assert _bucket_by_formula(20, 16) == 10
    assert check_offset_bucket(10) is True
    assert "PASS" in printed(capsys)
    assert check_offset_bucket(np.int64(10)) is True


@pytest.mark.parametrize("wrong, hint", [
    (26, "flip the sign"),
    (20, "logarithmically"),
    (_bucket_by_formula(20, 32), "causal (decoder) bucket"),
    (11, "truncated toward zero"),
    (27, "flip the sign"),
    (15, "values differ"),
])
def test_offset_bucket_wrong(wrong, hint, capsys):
    assert check_offset_bucket(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def _saturation_by_formula(num_buckets, max_distance, bidirectional):
    """Where the last bucket of a side starts: n_e + ln(n/n_e)/ln(D/n_e) (G' - n_e) >= G' - 1
    solved for n, with G' = G/2 (bidirectional) or G (causal) and n_e = G'/2."""
    half = num_buckets // 2 if bidirectional else num_buckets
    n_e = half // 2
    return math.ceil(n_e * (max_distance / n_e) ** ((half - 1 - n_e) / (half - n_e)))


def _saturation_by_loop(num_buckets, max_distance, bidirectional):
    """The same, by bucketing one distance at a time until the last bucket is reached."""
    half = num_buckets // 2 if bidirectional else num_buckets
    return next(n for n in range(10 * max_distance)
                if _bucket_by_formula(n, half, max_distance) == half - 1)


def test_saturation_distance(capsys):
    assert _saturation_by_formula(32, 128, True) == 91
    assert _saturation_by_formula(32, 128, False) == 113
    assert check_saturation_distance(_saturation_by_formula) is True
    assert "PASS" in printed(capsys)
    assert check_saturation_distance(_saturation_by_loop) is True
    assert check_saturation_distance(
        lambda b, d, bi: np.float32(_saturation_by_formula(b, d, bi))) is True
    assert check_saturation_distance(
        lambda b, d, bi: np.array([_saturation_by_formula(b, d, bi)], dtype=np.float32)) is True


def test_saturation_distance_torch(torch, capsys):
    assert check_saturation_distance(
        lambda b, d, bi: torch.tensor(float(_saturation_by_formula(b, d, bi)))) is True
    assert check_saturation_distance(
        lambda b, d, bi: torch.tensor(_saturation_by_formula(b, d, bi),
                                      dtype=torch.float32)) is True
    assert "PASS" in printed(capsys)


def _start(b, d, bi):
    half = b // 2 if bi else b
    n_e = half // 2
    return n_e * (d / n_e) ** ((half - 1 - n_e) / (half - n_e))


@pytest.mark.parametrize("wrong, hint", [
    (lambda b, d, bi: d, "cap at the last bucket"),
    (lambda b, d, bi: math.floor(_start(b, d, bi)) + 1, "floor + 1 is one too large"),
    (lambda b, d, bi: math.floor(_start(b, d, bi)), "round up"),
    (lambda b, d, bi: round(_start(b, d, bi)), "nearest integer"),
    (_start, "whole number of tokens"),
    (lambda b, d, bi: _saturation_by_formula(b, d, False), "half the buckets per side"),
    (lambda b, d, bi: _saturation_by_formula(b, d, True), "all its buckets on the past"),
    (lambda b, d, bi: (b // 2 if bi else b) - 1, "index of the last bucket"),
    (lambda b, d, bi: 91, "T5's encoder only"),
    (lambda b, d, bi: np.float32(91), "T5's encoder only"),
    (lambda b, d, bi: np.array([90, 91]), "one number"),
    (lambda b, d, bi: _saturation_by_formula(b, d, bi) + 5, "values differ"),
])
def test_saturation_distance_wrong(wrong, hint, capsys):
    assert check_saturation_distance(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_saturation_distance_matches_hugging_face(torch, transformers):
    from transformers.models.t5.modeling_t5 import T5Attention

    from course_utils.exercises.relative import _SATURATION_CASES

    for num_buckets, max_distance, bidirectional in _SATURATION_CASES:
        rel = -torch.arange(0, max_distance + 1)
        buckets = T5Attention._relative_position_bucket(
            rel, bidirectional=bidirectional, num_buckets=num_buckets,
            max_distance=max_distance).numpy()
        last = (num_buckets // 2 if bidirectional else num_buckets) - 1
        assert int(np.argmax(buckets == last)) == _saturation_by_formula(
            num_buckets, max_distance, bidirectional)


def _loop_step_bias_by_formula(table, step):
    out = np.empty((table.shape[1], step + 1))
    for n in range(step + 1):
        out[:, n] = table[_bucket_by_formula(step - n, 32)]
    return out


def test_decoder_step_bias(capsys):
    assert check_decoder_step_bias(_loop_step_bias) is True
    assert "PASS" in printed(capsys)
    assert check_decoder_step_bias(_loop_step_bias_by_formula) is True
    assert check_decoder_step_bias(
        lambda table, step: _loop_step_bias(table, step).astype(np.float32)) is True


def test_decoder_step_bias_torch(torch, capsys):
    assert check_decoder_step_bias(
        lambda table, step: torch.tensor(_loop_step_bias(table, step), dtype=torch.float32)) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda table, step: np.stack(
        [table[int(t5_relative_position_bucket(n - step))] for n in range(step + 1)], axis=1),
     "bidirectional=False"),
    (lambda table, step: np.stack(
        [table[int(t5_relative_position_bucket(step - n, bidirectional=False))]
         for n in range(step + 1)], axis=1),
     "key - query"),
    (lambda table, step: _loop_step_bias(table, step)[:, ::-1], "reverse order"),
    # bucket = distance: index out of range for the far keys
    (lambda table, step: table[np.arange(step, -1, -1)].T, "not its distance"),
    (lambda table, step: table[np.minimum(np.arange(step, -1, -1), 31)].T, "logarithmically"),
    (lambda table, step: _loop_step_bias(table, step + 1)[:, :-1], "off by one"),
    (lambda table, step: _loop_step_bias(table, 9), "must have shape"),
    (lambda table, step: _loop_step_bias(table, step).T, "must have shape"),
])
def test_decoder_step_bias_wrong(wrong, hint, capsys):
    assert check_decoder_step_bias(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out
    assert hint in out
