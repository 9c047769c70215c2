"""far_recall_batch against a loop over each sequence (the recall_latest rule, read directly)."""

import numpy as np
import pytest

from course_utils.lab.tasks import far_recall_batch, make_task


@pytest.mark.parametrize("length, min_distance", [(32, 16), (33, 16), (64, 16), (64, 40), (20, 18)])
def test_every_answer_lies_at_least_min_distance_back(length, min_distance):
    n_keys, n_values = 4, 8
    tokens, labels, mask = far_recall_batch(np.random.default_rng(3), 200, length,
                                            min_distance=min_distance, n_keys=n_keys,
                                            n_values=n_values)
    assert tokens.shape == labels.shape == mask.shape == (200, length)
    assert (mask.sum(axis=1) == 1).all()
    vocab = make_task("recall_latest", n_keys=n_keys, n_values=n_values).vocab_size
    assert tokens.max() < vocab and (tokens[:, 0] == 0).all()
    depths = set()
    for seq, lab, m in zip(tokens, labels, mask, strict=True):
        q = int(np.flatnonzero(m)[0])
        assert q % 2 == 1 and q + 2 > length - 1       # the last key position
        copies = [p for p in range(1, q, 2) if seq[p] == seq[q]]
        assert len(copies) == 1                         # the needle occurs once before
        assert q - copies[0] >= min_distance
        assert lab[q] == seq[copies[0] + 1]             # the value after it
        depths.add(copies[0])
    assert len(depths) > 1 or (length - 1 - min_distance) < 3   # the needle moves


def test_values_are_not_guessable_from_the_key():
    tokens, labels, mask = far_recall_batch(np.random.default_rng(0), 4000, 32, min_distance=16)
    answers = labels[mask] - 5
    counts = np.bincount(answers, minlength=8)
    assert counts.min() > 4000 / 8 * 0.8                # about uniform over the 8 values


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="min_distance"):
        far_recall_batch(np.random.default_rng(0), 2, 16, min_distance=40)
    with pytest.raises(ValueError, match="n_keys"):
        far_recall_batch(np.random.default_rng(0), 2, 16, min_distance=4, n_keys=1)
    with pytest.raises(ValueError, match="min_distance"):
        far_recall_batch(np.random.default_rng(0), 2, 16, min_distance=0)
