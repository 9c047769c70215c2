"""The checkers of notebook 04's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.relative import (
    check_causal_saturation,
    check_decoder_step_bias,
    check_offset_bucket,
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
    (check_causal_saturation, ...),
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


def test_causal_saturation(capsys):
    # 16 * 8 ** (15 / 16) = 112.40..., so distance 113 is the first in bucket 31
    first = next(n for n in range(1, 300) if _bucket_by_formula(n, 32) == 31)
    assert first == 113
    assert check_causal_saturation(first) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (128, "cap"),
    (91, "bidirectional"),
    (112, "round up"),
    (114, "one too large"),
    (16 * 8 ** (15 / 16), "whole number of tokens"),
    (31, "is the bucket"),
    (100, "values differ"),
])
def test_causal_saturation_wrong(wrong, hint, capsys):
    assert check_causal_saturation(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_causal_saturation_other_max_distance(capsys):
    first = next(n for n in range(1, 600) if _bucket_by_formula(n, 32, 256) == 31)
    assert first == 216  # ceil(16 * 16 ** (15 / 16)) = ceil(215.27)
    assert check_causal_saturation(first, max_distance=256) is True
    assert "PASS" in printed(capsys)
    assert check_causal_saturation(113, max_distance=256) is False
    assert "max_distance = 128" in printed(capsys)
    assert check_causal_saturation(256, max_distance=256) is False
    assert "cap" in printed(capsys)
    assert check_causal_saturation(215, max_distance=256) is False
    assert "round up" in printed(capsys)
    with pytest.raises(ValueError, match="max_distance"):
        check_causal_saturation(1, max_distance=8)


def test_causal_saturation_matches_hugging_face(torch, transformers):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = -torch.arange(0, 300)
    buckets = T5Attention._relative_position_bucket(rel, bidirectional=False, num_buckets=32,
                                                    max_distance=128).numpy()
    assert int(np.argmax(buckets == 31)) == 113
    bidirectional = T5Attention._relative_position_bucket(rel, bidirectional=True, num_buckets=32,
                                                          max_distance=128).numpy()
    assert int(np.argmax(bidirectional == 15)) == 91
    wide = T5Attention._relative_position_bucket(rel, bidirectional=False, num_buckets=32,
                                                 max_distance=256).numpy()
    assert int(np.argmax(wide == 31)) == 216


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
