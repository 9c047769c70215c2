"""Scores by distance, the baselines and the paired intervals of the context-extension lab,
against brute-force counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from course_utils.lab.extension import (
    answer_distance,
    baselines_by_distance,
    claim_table,
    evaluate_by_distance,
    paired_bootstrap,
    position_blind_expected,
    run_context_extension,
    summarise,
    verdict,
)
from course_utils.lab.model import ModelConfig, init_params, predict
from course_utils.lab.tasks import make_task
from course_utils.lab.train import evaluate_by_position

TASK = make_task("recall_latest", n_keys=3, n_values=4)


def _config():
    return ModelConfig(scheme="rope", vocab_size=TASK.vocab_size, d_model=16, n_heads=2,
                       d_mlp=16, rope_base=3.8)


def _brute(tokens, labels, mask):
    # For every labelled position: the distance to the latest earlier copy of its token, and the
    # share of earlier copies whose next token is the label (a loop over all earlier positions).
    batch, n = tokens.shape
    distance = np.full((batch, n), -1)
    blind = np.zeros((batch, n))
    for b in range(batch):
        for i in range(n):
            if not mask[b, i]:
                continue
            copies = [j for j in range(i) if tokens[b, j] == tokens[b, i]]
            distance[b, i] = i - copies[-1]
            blind[b, i] = np.mean([tokens[b, j + 1] == labels[b, i] for j in copies])
    return distance, blind


@pytest.mark.parametrize("length", [7, 16, 33])
def test_distance_and_position_blind_against_a_loop(length):
    tokens, labels, mask = TASK.batch(np.random.default_rng(length), 12, length)
    distance, blind = _brute(tokens, labels, mask)
    np.testing.assert_array_equal(answer_distance(TASK, tokens, mask), distance)
    np.testing.assert_allclose(position_blind_expected(TASK, tokens, labels, mask), blind,
                               rtol=0, atol=1e-15)


def test_distance_of_copy_back_is_k():
    task = make_task("copy_back", k=3, n_symbols=5)
    tokens, _, mask = task.batch(np.random.default_rng(0), 2, 10)
    assert set(answer_distance(task, tokens, mask)[mask].tolist()) == {3}


def test_position_blind_is_exact_on_a_hand_example():
    # BOS k1 v5 k1 v6 k1: two earlier copies of key 1, values 5 and 6, label 6 (the latest):
    # a uniformly random copy is right half the time; the distance is 2.
    tokens = np.array([[0, 1, 5, 1, 6, 1]])
    labels = np.array([[0, 0, 0, 5, 0, 6]])
    mask = np.array([[False, False, False, True, False, True]])
    assert answer_distance(TASK, tokens, mask)[0].tolist() == [-1, -1, -1, 2, -1, 2]
    assert position_blind_expected(TASK, tokens, labels, mask)[0, 5] == 0.5


def test_evaluate_by_distance_counts_the_same_predictions():
    config = _config()
    params = init_params(config, seed=0)
    by_position = evaluate_by_position(params, config, TASK, 24, n_sequences=20, batch=8)
    correct, total, loss, hits, counted = evaluate_by_distance(params, config, TASK, 24,
                                                               from_position=8, n_sequences=20,
                                                               batch=8)
    np.testing.assert_array_equal(correct, by_position[0])
    np.testing.assert_array_equal(total, by_position[1])
    assert loss == by_position[2]
    assert counted.sum() == total[8:].sum() and hits.sum() == correct[8:].sum()
    rng = np.random.default_rng(1234)  # the test sequences, batch by batch, counted by hand
    want_hits, want_counted = np.zeros(24), np.zeros(24)
    for size in (8, 8, 4):
        tokens, labels, mask = TASK.batch(rng, size, 24)
        right = (predict(params, tokens, config) == labels) & mask
        distance, _ = _brute(tokens, labels, mask)
        for b, i in zip(*np.nonzero(mask[:, 8:]), strict=True):
            want_counted[distance[b, i + 8]] += 1
            want_hits[distance[b, i + 8]] += right[b, i + 8]
    np.testing.assert_array_equal(hits, want_hits)
    np.testing.assert_array_equal(counted, want_counted)


def test_baselines_window_and_blind_by_distance():
    base = baselines_by_distance(TASK, 32, from_position=8, window=8, n_sequences=16, batch=8)
    near = np.arange(32) < 8
    # The window reader is right on every near query and at chance on every far one.
    np.testing.assert_allclose(base["window"][near], base["total"][near])
    np.testing.assert_allclose(base["window"][~near], base["total"][~near] * TASK.chance)
    assert (base["blind"] <= base["total"] + 1e-12).all() and base["total"][~near].sum() > 0
    with pytest.raises(ValueError, match="window"):
        baselines_by_distance(TASK, 32, from_position=8, window=0)


def test_paired_bootstrap_against_exact_enumeration():
    diff = np.array([0.3, -0.1, 0.05, 0.2])
    exact = np.sort([np.mean(diff[list(idx)])
                     for idx in itertools.product(range(4), repeat=4)])  # all 256 resamples
    mean, low, high = paired_bootstrap(diff, n_resamples=20_000, level=0.9)
    assert mean == pytest.approx(diff.mean())
    assert np.quantile(exact, 0.04) <= low <= np.quantile(exact, 0.06)
    assert np.quantile(exact, 0.94) <= high <= np.quantile(exact, 0.96)
    assert paired_bootstrap(np.full(5, 0.02))[1:] == pytest.approx((0.02, 0.02))


def test_verdict_reads_the_interval():
    assert verdict(0.01, 0.2) == "agrees"
    assert verdict(-0.3, -0.01) == "disagrees"
    assert verdict(-0.01, 0.2) == "unclear" and verdict(0.0, 0.1) == "unclear"
    with pytest.raises(ValueError, match="low"):
        verdict(0.2, 0.1)
    with pytest.raises(ValueError, match="diff"):
        paired_bootstrap(np.array([0.1]))


def test_every_method_fine_tunes_on_the_same_data():
    # Paired: a method's results do not depend on which other methods run beside it (the
    # fine-tune seed holds no method index).
    kwargs = dict(train_length=8, multipliers=(2,), checkpoints=(0, 2), seeds=(0,), steps=4,
                  n_test=8, progress=False, workers=1, scratch=False)
    both = run_context_extension(TASK, _config(), methods=("rope", "pi"), **kwargs)
    alone = run_context_extension(TASK, _config(), methods=("pi",), **kwargs)
    np.testing.assert_array_equal(both.correct_dist[1], alone.correct_dist[0])
    np.testing.assert_array_equal(both.tune_losses[1], alone.tune_losses[0])
    np.testing.assert_allclose(both.split_accuracy("all"), both.accuracy())


def test_claim_table_on_a_record():
    kwargs = dict(train_length=8, multipliers=(2, 4), checkpoints=(0, 2), seeds=(0, 1),
                  steps=4, n_test=8, progress=False, workers=1, methods=("rope", "ntk", "pi"))
    record = summarise(run_context_extension(TASK, _config(), **kwargs))
    rows = {row[0]: row for row in claim_table(record, n_resamples=200)}
    assert "extrapolation fails (4L, 0 steps)" in rows and "NTK-aware over PI (4L, 0 steps)" in rows
    assert all(row[2] <= row[1] <= row[3] and row[4] in ("agrees", "disagrees", "unclear")
               for row in rows.values())
