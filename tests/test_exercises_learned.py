"""The checkers of notebook 03's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import stub_function

from course_utils.exercises.learned import (
    check_length_keeping_every_row,
    check_position_ids_with_cache,
    check_roberta_table_parameters,
)


def _loop_position_ids(input_ids, past_length, padding_idx):
    """The rule of fairseq ``make_positions`` written as a loop: real tokens count up from
    ``padding_idx + 1 + past_length``; padding keeps ``padding_idx``."""
    out = np.empty_like(input_ids)
    for row in range(input_ids.shape[0]):
        counter = padding_idx + past_length
        for col in range(input_ids.shape[1]):
            if input_ids[row, col] == padding_idx:
                out[row, col] = padding_idx
            else:
                counter += 1
                out[row, col] = counter
    return out


@pytest.mark.parametrize("checker, stub", [
    (check_roberta_table_parameters, ...),
    (check_length_keeping_every_row, ...),
    (check_position_ids_with_cache, stub_function),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out


def test_roberta_parameters(capsys):
    # roberta-base config.json: max_position_embeddings 514, hidden_size 768
    assert check_roberta_table_parameters(514 * 768) is True
    assert "PASS" in capsys.readouterr().out
    assert check_roberta_table_parameters(512 * 768) is False
    assert "padding_idx + 1" in capsys.readouterr().out
    assert check_roberta_table_parameters(514) is False
    assert "number of rows" in capsys.readouterr().out


def test_length_keeping_every_row(capsys):
    # 511 gaps between 512 rows; twice the gaps is 1022, so 1023 rows
    assert check_length_keeping_every_row(1023) is True
    assert "PASS" in capsys.readouterr().out
    assert check_length_keeping_every_row(1024) is False
    assert "multiple of 511" in capsys.readouterr().out
    assert check_length_keeping_every_row(1000) is False
    assert "TRY AGAIN" in capsys.readouterr().out


def test_position_ids_with_cache(capsys):
    assert check_position_ids_with_cache(_loop_position_ids) is True
    assert "PASS" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda ids, past, pad: _loop_position_ids(ids, 0, pad), "moves up by past_length"),
    (lambda ids, past, pad: _loop_position_ids(ids, 0, pad) + past, "not padding"),
    (lambda ids, past, pad: _loop_position_ids(ids, past, pad) - pad * 1, "add padding_idx"),
    (lambda ids, past, pad: np.broadcast_to(np.arange(ids.shape[1]) + past + pad + 1, ids.shape),
     "skip padding"),
])
def test_position_ids_with_cache_wrong(wrong, hint, capsys):
    assert check_position_ids_with_cache(wrong) is False
    out = capsys.readouterr().out
    assert "TRY AGAIN" in out
    assert hint in out


def test_position_ids_loop_matches_hugging_face(torch, transformers):
    """The right answer used above agrees with Hugging Face's RoBERTa formula."""
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    ids = np.array([[0, 31414, 232, 2, 1, 1], [1, 1, 0, 31414, 232, 2]])
    for past in (0, 3):
        hf = RobertaEmbeddings.create_position_ids_from_input_ids(
            torch.tensor(ids), padding_idx=1, past_key_values_length=past)
        np.testing.assert_array_equal(_loop_position_ids(ids, past, 1), hf.numpy())
