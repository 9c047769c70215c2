"""The checkers of notebook 04's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import stub_function

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
    assert "NOT ATTEMPTED" in capsys.readouterr().out


def test_offset_bucket(capsys):
    # REFERENCE.md: -16..-22 -> bucket 10 (bidirectional, 32 buckets, max_distance 128)
    assert check_offset_bucket(10) is True
    assert "PASS" in capsys.readouterr().out
    assert check_offset_bucket(26) is False  # 10 + 16: the key-after-query half
    assert "flip the sign" in capsys.readouterr().out
    assert check_offset_bucket(20) is False
    assert "logarithmically" in capsys.readouterr().out


def test_causal_saturation(capsys):
    # 16 * 8 ** (15 / 16) = 112.40..., so distance 113 is the first in bucket 31
    assert check_causal_saturation(113) is True
    assert "PASS" in capsys.readouterr().out
    assert check_causal_saturation(128) is False
    assert "cap" in capsys.readouterr().out
    assert check_causal_saturation(91) is False
    assert "bidirectional" in capsys.readouterr().out
    assert check_causal_saturation(112) is False
    assert "round up" in capsys.readouterr().out


def test_causal_saturation_matches_hugging_face(torch, transformers):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = -torch.arange(0, 300)
    buckets = T5Attention._relative_position_bucket(rel, bidirectional=False, num_buckets=32,
                                                    max_distance=128).numpy()
    assert int(np.argmax(buckets == 31)) == 113


def test_decoder_step_bias(capsys):
    assert check_decoder_step_bias(_loop_step_bias) is True
    assert "PASS" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda table, step: np.stack(
        [table[int(t5_relative_position_bucket(j - step))] for j in range(step + 1)], axis=1),
     "bidirectional=False"),
    (lambda table, step: np.stack(
        [table[int(t5_relative_position_bucket(step - j, bidirectional=False))]
         for j in range(step + 1)], axis=1),
     "key - query"),
    (lambda table, step: _loop_step_bias(table, step)[:, ::-1], "differ"),
])
def test_decoder_step_bias_wrong(wrong, hint, capsys):
    assert check_decoder_step_bias(wrong) is False
    out = capsys.readouterr().out
    assert "TRY AGAIN" in out
    assert hint in out
