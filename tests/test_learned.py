import numpy as np
import pytest

from course_utils.learned import LearnedPositionalEmbedding, fairseq_position_ids


def test_parameter_count_and_lookup():
    table = LearnedPositionalEmbedding(4096, 4096)
    assert table.n_parameters == 16_777_216
    small = LearnedPositionalEmbedding(10, 4, seed=3)
    np.testing.assert_array_equal(small(np.array([[2, 7]])), small.weight[[2, 7]][None])
    assert small(np.array([1, 2])).shape == (2, 4)


def test_initialisation_is_seeded_normal_with_std():
    a = LearnedPositionalEmbedding(512, 256, seed=1, std=0.02)
    b = LearnedPositionalEmbedding(512, 256, seed=1, std=0.02)
    np.testing.assert_array_equal(a.weight, b.weight)
    # 131072 draws: the sample std is within 1% of 0.02 with overwhelming probability.
    assert abs(a.weight.std() - 0.02) < 2e-4


@pytest.mark.parametrize("position", [10, 11, -1])
def test_hard_wall(position):
    table = LearnedPositionalEmbedding(10, 4)
    with pytest.raises(IndexError, match=r"0 \.\. 9"):
        table(np.array([0, position]))


def test_float_positions_must_be_whole():
    table = LearnedPositionalEmbedding(10, 4)
    np.testing.assert_array_equal(table(np.array([2.0])), table.weight[[2]])
    with pytest.raises(ValueError, match="whole numbers"):
        table(np.array([2.5]))


def test_resize_interpolates_linearly_and_keeps_ends():
    weight = np.arange(5, dtype=float)[:, None] * np.array([[1.0, -2.0]])
    table = LearnedPositionalEmbedding(5, 2, weight=weight)
    bigger = table.resized(9)  # new row r reads old position r * 4 / 8 = r / 2
    np.testing.assert_allclose(bigger.weight[:, 0], np.arange(9) / 2)
    np.testing.assert_allclose(bigger.weight[:, 1], -np.arange(9))
    np.testing.assert_array_equal(bigger.weight[[0, -1]], table.weight[[0, -1]])
    assert bigger.max_len == 9 and bigger(np.array([8])).shape == (1, 2)


def test_roberta_position_ids():
    # Hugging Face create_position_ids_from_input_ids with padding_idx=1: pads keep 1, tokens count from 2.
    ids = np.array([[0, 31414, 232, 2, 1, 1]])
    np.testing.assert_array_equal(fairseq_position_ids(ids, padding_idx=1), [[2, 3, 4, 5, 1, 1]])
    full = fairseq_position_ids(np.full((1, 512), 7), padding_idx=1)
    assert full.max() == 513  # so the table needs 514 rows
    # The default is RoBERTa's and fairseq's pad id, 1, not 0.
    np.testing.assert_array_equal(fairseq_position_ids(ids), [[2, 3, 4, 5, 1, 1]])


@pytest.mark.parametrize("call, error, match", [
    (lambda: LearnedPositionalEmbedding(0, 4), ValueError, "max_len"),
    (lambda: LearnedPositionalEmbedding(4, 2.5), TypeError, "d_model"),
    (lambda: LearnedPositionalEmbedding(4, 2, std=0.0), ValueError, "std"),
    (lambda: LearnedPositionalEmbedding(4, 2, weight=np.zeros((3, 2))), ValueError, "weight must have shape"),
    (lambda: LearnedPositionalEmbedding(4, 2).resized(0), ValueError, "new_max_len"),
    (lambda: LearnedPositionalEmbedding(4, 2)(np.array(["x"])), TypeError, "positions"),
    (lambda: fairseq_position_ids(np.array([1.5]), padding_idx=1), ValueError, "input_ids"),
    (lambda: fairseq_position_ids(np.array([1]), padding_idx=-1), ValueError, "padding_idx"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
