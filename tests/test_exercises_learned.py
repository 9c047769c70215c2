"""The checkers of notebook 03's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.learned import (
    check_large_stretch_norm,
    check_length_keeping_every_row,
    check_position_ids_with_cache,
    check_roberta_table_parameters,
    check_stretched_norms,
)
from course_utils.learned import LearnedPositionalEmbedding


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
    assert "NOT ATTEMPTED" in printed(capsys)


def test_roberta_parameters(capsys):
    # roberta-base config.json: max_position_embeddings 514, hidden_size 768
    assert check_roberta_table_parameters(514 * 768) is True
    assert "PASS" in printed(capsys)
    assert check_roberta_table_parameters(np.int64(514 * 768)) is True


@pytest.mark.parametrize("wrong, hint", [
    (512 * 768, "padding_idx + 1"),
    (513 * 768, "one row short"),
    (515 * 768, "one row too many"),
    (514, "number of rows"),
    (514 * 768 * 4, "bytes"),
    (512 * 1024, "values differ"),
])
def test_roberta_parameters_wrong(wrong, hint, capsys):
    assert check_roberta_table_parameters(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def _keeps_every_row(old, new):
    """Brute force: does resizing old -> new rows read every old row at a whole position?"""
    reads = [k * (old - 1) / (new - 1) for k in range(new)]
    return all(any(abs(r - j) < 1e-9 for r in reads) for j in range(old))


def test_length_keeping_every_row(capsys):
    smallest = next(n for n in range(513, 2048) if _keeps_every_row(512, n))
    assert smallest == 1023
    assert check_length_keeping_every_row(smallest) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (1024, "multiple of 511"),
    (1022, "one more than the gaps"),
    (512, "larger than the old 512"),
    (1534, "smaller length does too"),
    (2045, "smaller length does too"),
    (513, "512 gaps"),
    (1000, "values differ"),
])
def test_length_keeping_every_row_wrong(wrong, hint, capsys):
    assert check_length_keeping_every_row(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_position_ids_with_cache(capsys):
    assert check_position_ids_with_cache(_loop_position_ids) is True
    assert "PASS" in printed(capsys)
    assert check_position_ids_with_cache(
        lambda ids, past, pad: _loop_position_ids(ids, past, pad).astype(np.float32)) is True


def test_position_ids_with_cache_torch(torch, capsys):
    def in_torch(ids, past, pad):
        mask = torch.from_numpy(ids).ne(pad).int()
        return (torch.cumsum(mask, dim=1) + past) * mask + pad

    assert check_position_ids_with_cache(in_torch) is True
    assert "PASS" in printed(capsys)


def _hard_coded_pad(ids, past, pad):
    return _loop_position_ids(ids, past, 1)  # RoBERTa's padding id, whatever the argument


@pytest.mark.parametrize("wrong, hint", [
    (_hard_coded_pad, "use the padding_idx argument"),
    (lambda ids, past, pad: _loop_position_ids(ids, 0, pad), "moves up by past_length"),
    (lambda ids, past, pad: _loop_position_ids(ids, 0, pad) + past, "not padding"),
    (lambda ids, past, pad: _loop_position_ids(ids, past, pad) - pad * (ids == ids),
     "add padding_idx"),
    (lambda ids, past, pad: (np.cumsum(ids != pad, axis=1) + past) * (ids != pad),
     "add padding_idx"),
    (lambda ids, past, pad: np.broadcast_to(np.arange(ids.shape[1]) + past + pad + 1, ids.shape),
     "skip padding"),
    (lambda ids, past, pad: _loop_position_ids(ids, past, pad) - (ids != pad), "off by one"),
    (lambda ids, past, pad: _loop_position_ids(ids, 3, pad), "values differ"),
    (lambda ids, past, pad: _loop_position_ids(ids, past, pad).T, "same shape"),
])
def test_position_ids_with_cache_wrong(wrong, hint, capsys):
    assert check_position_ids_with_cache(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN")
    assert hint in out


def test_position_ids_loop_matches_hugging_face(torch, transformers):
    """The right answer used above agrees with Hugging Face's RoBERTa formula."""
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    ids = np.array([[0, 31414, 232, 2, 1, 1], [1, 1, 0, 31414, 232, 2]])
    for past in (0, 3):
        hf = RobertaEmbeddings.create_position_ids_from_input_ids(
            torch.tensor(ids), padding_idx=1, past_key_values_length=past)
        np.testing.assert_array_equal(_loop_position_ids(ids, past, 1), hf.numpy())


def _norms_by_resizing(old_len, new_len):
    """Row norms of an orthonormal table stretched by resized(): measured, not derived."""
    width = old_len + 8
    q, _ = np.linalg.qr(np.random.default_rng(old_len).normal(size=(width, old_len)))
    table = LearnedPositionalEmbedding(old_len, width, weight=q.T)  # orthonormal rows
    return np.linalg.norm(table.resized(new_len).weight, axis=1)


def _right_norms(old_len, new_len):
    c = np.arange(new_len) * (old_len - 1) / (new_len - 1)
    f = c - np.floor(c)
    return np.hypot(1.0 - f, f)


@pytest.mark.parametrize("old_len, new_len", [(512, 1024), (32, 100), (40, 25), (7, 13)])
def test_right_norms_match_a_resized_orthonormal_table(old_len, new_len):
    assert np.allclose(_right_norms(old_len, new_len), _norms_by_resizing(old_len, new_len),
                       rtol=1e-12)


def test_stretched_norms_stub_right_float32(capsys):
    assert check_stretched_norms(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    assert check_stretched_norms(_right_norms) is True
    assert "PASS" in printed(capsys)
    assert check_stretched_norms(lambda o, n: _right_norms(o, n).astype(np.float32)) is True
    assert "PASS" in printed(capsys)


def test_stretched_norms_accepts_torch_float32(torch, capsys):
    def in_torch(old_len, new_len):
        c = torch.arange(new_len, dtype=torch.float32) * (old_len - 1) / (new_len - 1)
        f = c - torch.floor(c)
        return torch.sqrt((1 - f) ** 2 + f**2)

    assert check_stretched_norms(in_torch) is True
    assert "PASS" in printed(capsys)


def _norms_from(source):
    def answer(old_len, new_len):
        c = source(np.arange(new_len, dtype=float), old_len, new_len)
        f = c - np.floor(c)
        return np.hypot(1.0 - f, f)
    return answer


@pytest.mark.parametrize("wrong, hint", [
    (lambda o, n: _right_norms(o, n) ** 2, "square root"),
    (lambda o, n: np.ones(n), "orthogonal, not parallel"),
    (_norms_from(lambda j, o, n: j * o / n), "gaps over gaps"),
    (_norms_from(lambda j, o, n: np.clip((j + 0.5) * o / n - 0.5, 0, o - 1)), "align_corners"),
    (lambda o, n: np.abs(1 - 2 * ((np.arange(n) * (o - 1) / (n - 1)) % 1.0)), "difference of"),
    (lambda o, n: _right_norms(o, n)[:-1], "must have shape"),
    (lambda o, n: _right_norms(512, 1024)[:n] if n <= 1024 else _right_norms(o, n),
     "values differ"),
])
def test_stretched_norms_wrong(wrong, hint, capsys):
    assert check_stretched_norms(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_large_stretch_norm_right_and_float32(capsys):
    f = (np.arange(1_000_000) + 0.5) / 1_000_000  # midpoint rule for the integral
    numeric = float(np.mean(np.hypot(1 - f, f)))
    assert check_large_stretch_norm(numeric) is True
    assert "PASS" in printed(capsys)
    assert check_large_stretch_norm(np.float32(numeric)) is True
    assert check_large_stretch_norm(..., ) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def test_large_stretch_norm_accepts_torch(torch, capsys):
    f = (torch.arange(1_000_000, dtype=torch.float64) + 0.5) / 1_000_000
    assert check_large_stretch_norm(torch.hypot(1 - f, f).mean().float()) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (np.sqrt(2 / 3), "root of the mean square"),
    (2 / 3, "mean squared norm"),
    (np.sqrt(0.5), "midpoint"),
    (1.0, "shorter than the rows"),
    (float(np.mean(_right_norms(512, 1024))), "512 -> 1024"),
    (0.8, "values differ"),
])
def test_large_stretch_norm_wrong(wrong, hint, capsys):
    assert check_large_stretch_norm(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out
