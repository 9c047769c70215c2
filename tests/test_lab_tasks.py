"""The lab's task generators, against answers worked out position by position."""

import numpy as np
import pytest

from course_utils.lab.tasks import BOS, copy_back_batch, make_task, recall_batch


@pytest.mark.parametrize("k", [1, 3, 5])
def test_copy_back_labels_are_the_token_k_back(k):
    tokens, labels, mask = copy_back_batch(np.random.default_rng(0), 4, 12, k=k, n_symbols=6)
    assert tokens.shape == labels.shape == mask.shape == (4, 12)
    assert np.all(tokens[:, 0] == BOS) and tokens[:, 1:].min() >= 1 and tokens.max() <= 6
    for b in range(4):
        for i in range(12):
            assert mask[b, i] == (i - k >= 1)
            if mask[b, i]:
                assert labels[b, i] == tokens[b, i - k]


def test_copy_back_hand_example():
    # With k = 2 the labelled positions are 3, 4, ...: labels there are tokens 1, 2, ...
    tokens, labels, mask = copy_back_batch(np.random.default_rng(1), 1, 6, k=2, n_symbols=9)
    assert mask[0].tolist() == [False, False, False, True, True, True]
    assert labels[0, 3:].tolist() == tokens[0, 1:4].tolist()


def test_recall_layout_dictionary_and_labels():
    n_keys, n_values = 5, 3
    tokens, labels, mask = recall_batch(np.random.default_rng(2), 6, 21, n_keys=n_keys,
                                        n_values=n_values)
    assert tokens.shape == (6, 21) and np.all(tokens[:, 0] == BOS)
    for b in range(6):
        value_of = {}
        for i in range(1, 21):
            token = int(tokens[b, i])
            if i % 2:  # a key
                assert 1 <= token <= n_keys
                seen_before = token in value_of
                assert mask[b, i] == seen_before
                if i + 1 < 21:
                    value = int(tokens[b, i + 1])
                    assert n_keys + 1 <= value <= n_keys + n_values
                    # one dictionary per sequence: a key always comes with the same value
                    assert value_of.setdefault(token, value) == value
                if seen_before:
                    assert labels[b, i] == value_of[token]
            else:
                assert not mask[b, i]


def test_recall_label_of_last_key_without_its_value():
    # Odd lengths end on a value; even lengths end on a key whose value is not in the input,
    # but is still its dictionary value.
    tokens, labels, mask = recall_batch(np.random.default_rng(3), 50, 8, n_keys=2, n_values=4)
    last_key = tokens[:, 7]
    earlier = tokens[:, 1:7:2]
    for b in range(50):
        hits = np.nonzero(earlier[b] == last_key[b])[0]
        assert mask[b, 7] == (len(hits) > 0)
        if len(hits):
            assert labels[b, 7] == tokens[b, 2 + 2 * hits[0]]


def test_generators_are_seeded():
    a = recall_batch(np.random.default_rng(7), 3, 16)
    b = recall_batch(np.random.default_rng(7), 3, 16)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_make_task_vocabulary_and_chance():
    copy = make_task("copy_back", k=2, n_symbols=10)
    assert copy.vocab_size == 11 and copy.chance == pytest.approx(0.1)
    recall = make_task("recall", n_keys=6, n_values=5)
    assert recall.vocab_size == 12 and recall.chance == pytest.approx(0.2)
    tokens, _, _ = recall.batch(np.random.default_rng(0), 2, 30)
    assert tokens.max() < recall.vocab_size


def test_bad_arguments_name_themselves():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="length must be >= k \\+ 2"):
        copy_back_batch(rng, 2, 4, k=3)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        recall_batch(0, 2, 8)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        recall_batch(rng, 0, 8)
    with pytest.raises(ValueError, match="name must be one of"):
        make_task("reverse")
    with pytest.raises(ValueError, match="settings for 'recall' must be among"):
        make_task("recall", k=3)
