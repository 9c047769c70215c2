"""The checkers of notebook 09's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.exercises.lab import (
    check_buckets_reached,
    check_rope_backward,
    check_softmax_backward,
)
from course_utils.rope import apply_rope


def _stub(*args):
    raise NotImplementedError


def _rope_backward_by_pairs(dy, positions):
    """R_m^T dy in the half layout, pair by pair: (a, b) -> (a cos + b sin, b cos - a sin)."""
    half = dy.shape[-1] // 2
    theta = 10000.0 ** (-np.arange(half) * 2 / dy.shape[-1])
    angle = np.asarray(positions)[:, None] * theta
    a, b = dy[..., :half], dy[..., half:]
    return np.concatenate([a * np.cos(angle) + b * np.sin(angle),
                           b * np.cos(angle) - a * np.sin(angle)], axis=-1)


def _softmax_backward_by_loop(weights, dweights):
    out = np.zeros_like(weights)
    for r in range(weights.shape[0]):
        for i in range(weights.shape[1]):
            for j in range(weights.shape[1]):
                out[r, i] += dweights[r, j] * weights[r, j] * ((i == j) - weights[r, i])
    return out


def _buckets_by_formula(train_length, num_buckets, max_distance):
    # T5's causal bucketing written out for distances 0 .. train_length - 1.
    max_exact = num_buckets // 2
    used = set()
    for d in range(train_length):
        if d < max_exact:
            used.add(d)
        else:
            log_bucket = max_exact + int(math.log(d / max_exact) / math.log(max_distance / max_exact)
                                         * (num_buckets - max_exact))
            used.add(min(log_bucket, num_buckets - 1))
    return len(used)


def _largest_bucket(train_length, num_buckets, max_distance):
    return max(_bucket_ids(train_length, num_buckets, max_distance))


def _bucket_ids(train_length, num_buckets, max_distance):
    max_exact = num_buckets // 2
    ids = []
    for d in range(train_length):
        if d < max_exact:
            ids.append(d)
        else:
            ids.append(min(num_buckets - 1, max_exact + int(
                math.log(d / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact))))
    return ids


@pytest.mark.parametrize("wrong", [
    lambda length, buckets, distance: len(set(range(min(length, buckets)))),  # distances, uncapped
    lambda length, buckets, distance: min(length, buckets // 2),  # only the exact buckets
    lambda length, buckets, distance: len(set(_bucket_ids(length, buckets, distance))) - 1,  # off by one
    lambda length, buckets, distance: len(set(_bucket_ids(length + 1, buckets, distance))),  # distance L too
    lambda length, buckets, distance: 16,  # right for the lab's own setting only
])
def test_more_wrong_bucket_counts_are_rejected(wrong, capsys):
    assert check_buckets_reached(wrong) is False
    assert capsys.readouterr().out.startswith("TRY AGAIN")


def test_float32_and_numpy_integer_answers_are_accepted(capsys):
    assert check_rope_backward(
        lambda dy, p: _rope_backward_by_pairs(dy.astype(np.float32), p).astype(np.float32)) is True
    assert check_softmax_backward(
        lambda a, da: _softmax_backward_by_loop(a.astype(np.float32), da.astype(np.float32))) is True
    assert check_buckets_reached(
        lambda length, buckets, distance: np.int32(len(set(_bucket_ids(length, buckets, distance))))) is True
    assert capsys.readouterr().out.count("PASS") == 3


@pytest.mark.parametrize("checker", [check_rope_backward, check_softmax_backward,
                                     check_buckets_reached])
def test_stub_is_not_attempted(checker, capsys):
    assert checker(_stub) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out


@pytest.mark.parametrize("checker, answer", [
    (check_rope_backward, _rope_backward_by_pairs),
    (check_softmax_backward, _softmax_backward_by_loop),
    (check_buckets_reached, _buckets_by_formula),
])
def test_right_answer_passes(checker, answer, capsys):
    assert checker(answer) is True
    assert capsys.readouterr().out.startswith("PASS")


@pytest.mark.parametrize("checker, wrong, hint", [
    (check_rope_backward, lambda dy, p: apply_rope(dy, p, layout="half"), "negative angle"),
    (check_rope_backward, lambda dy, p: dy, "not the identity"),
    (check_rope_backward, lambda dy, p: apply_rope(dy, -np.asarray(p), layout="interleaved"),
     "layout='half'"),
    (check_softmax_backward, lambda a, da: a * da, "normaliser"),
    (check_softmax_backward, lambda a, da: a * (1 - a) * da, "diagonal"),
    (check_buckets_reached, lambda length, buckets, distance: buckets, "not every bucket"),
    (check_buckets_reached, lambda length, buckets, distance: min(length, buckets),
     "count distinct"),
    (check_buckets_reached, lambda length, buckets, distance: _largest_bucket(length, buckets, distance) + 1,
     "skip ids"),
])
def test_plausible_wrong_answers_get_hints(checker, wrong, hint, capsys):
    assert checker(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith("TRY AGAIN") and hint in out


def test_a_crashing_answer_is_reported_not_raised(capsys):
    assert check_softmax_backward(lambda a, da: a @ da) is False
    assert "raised" in capsys.readouterr().out


def _base_interval_by_logs(head_dim, length, k):
    """Exercise 9.4 in logarithms: pair i turns iff ln b <= (d / 2i) ln(L / 2 pi)."""
    log_unit = math.log(length / (2 * math.pi))
    return [math.exp(head_dim * log_unit / (2 * k)), math.exp(head_dim * log_unit / (2 * (k - 1)))]


def test_base_interval_right_answers(capsys):
    from course_utils.exercises.lab import check_base_interval
    torch = pytest.importorskip("torch")
    assert check_base_interval(_base_interval_by_logs) is True
    assert check_base_interval(
        lambda *s: np.array(_base_interval_by_logs(*s), dtype=np.float32)) is True
    assert check_base_interval(
        lambda *s: torch.tensor(_base_interval_by_logs(*s), dtype=torch.float32)) is True
    assert capsys.readouterr().out.count("PASS") == 3


def test_base_interval_stub(capsys):
    from course_utils.exercises.lab import check_base_interval
    assert check_base_interval(_stub) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out


def _interval(low_exp, high_exp, unit=2 * math.pi):
    return lambda d, L, k: [(L / unit) ** low_exp(d, k), (L / unit) ** high_exp(d, k)]


@pytest.mark.parametrize("wrong, hint", [
    (_interval(lambda d, k: d / (2 * (k + 1)), lambda d, k: d / (2 * k)), "k + 1 turning"),
    (_interval(lambda d, k: d / (2 * k), lambda d, k: d / (2 * (k - 1)), unit=1.0), "2 pi"),
    (_interval(lambda d, k: d / (2 * (k - 1)), lambda d, k: d / (2 * k)), "swapped"),
    (_interval(lambda d, k: d / k, lambda d, k: d / (k - 1)), "d / (2i)"),
    (lambda d, L, k: [3.48, 6.48], None),  # the lab's own setting only
    (lambda d, L, k: [(L / (2 * math.pi)) ** (d / (2 * k))], "shape"),
])
def test_base_interval_wrong(wrong, hint, capsys):
    from course_utils.exercises.lab import check_base_interval
    assert check_base_interval(wrong) is False
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("TRY AGAIN") and (hint is None or hint in out)
