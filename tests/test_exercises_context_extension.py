"""The checkers of notebook 12's exercises: NOT ATTEMPTED for the stub, PASS for the right answer
(also in float32 and as torch tensors), TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.exercises.context_extension import check_angle_overshoot, check_yarn_untouched


def _stub(*args):
    raise NotImplementedError


def _untouched_by_formula(head_dim, base, train_length):
    # floor(dim(32)) clamped at 0, as find_correction_range does; pairs at or below it are kept.
    low = math.floor(head_dim * math.log(train_length / (32 * 2 * math.pi)) / (2 * math.log(base)))
    return np.arange(head_dim // 2) <= max(low, 0)


def _overshoot_by_formula(theta, theta_new, train_length, test_length):
    out = []
    for old, new in zip(theta, theta_new, strict=True):
        seen = (train_length - 1) * old
        out.append(0.0 if seen >= 2 * np.pi else max(0.0, (test_length - 1) * new - seen))
    return np.array(out)


def test_stubs_are_not_attempted(capsys):
    assert check_yarn_untouched(_stub) is False
    assert check_angle_overshoot(_stub) is False
    assert capsys.readouterr().out.count("NOT ATTEMPTED") == 2


def test_right_answers_pass(capsys):
    assert check_yarn_untouched(_untouched_by_formula) is True
    assert check_angle_overshoot(_overshoot_by_formula) is True
    assert capsys.readouterr().out.count("PASS") == 2


def test_float32_answers_pass(capsys):
    assert check_yarn_untouched(
        lambda d, b, L: _untouched_by_formula(d, b, L).astype(np.float32)) is True
    assert check_angle_overshoot(
        lambda t, tn, L, N: _overshoot_by_formula(t.astype(np.float32), tn.astype(np.float32),
                                                  L, N).astype(np.float32)) is True
    assert capsys.readouterr().out.count("PASS") == 2


def test_torch_answers_pass(capsys):
    torch = pytest.importorskip("torch")
    assert check_yarn_untouched(
        lambda d, b, L: torch.from_numpy(_untouched_by_formula(d, b, L))) is True
    assert check_angle_overshoot(
        lambda t, tn, L, N: torch.tensor(_overshoot_by_formula(t, tn, L, N),
                                         dtype=torch.float32)) is True
    assert capsys.readouterr().out.count("PASS") == 2


def _paper(d, b, L):
    rho = L / (2 * np.pi * b ** (np.arange(0, d, 2) / d))
    return rho > 32


@pytest.mark.parametrize("wrong, hint", [
    (_paper, "paper's ramp"),
    (lambda d, b, L: L / (2 * np.pi * b ** (np.arange(0, d, 2) / d)) >= 1, "at least one turn"),
    (lambda d, b, L: np.arange(d // 2) <= math.floor(
        d * math.log(L / (64 * math.pi)) / (2 * math.log(b))), "clamped to 0"),
    (lambda d, b, L: ~_untouched_by_formula(d, b, L), "not the changed ones"),
])
def test_wrong_yarn_answers_get_hints(wrong, hint, capsys):
    assert check_yarn_untouched(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith("TRY AGAIN") and hint in out


@pytest.mark.parametrize("wrong, hint", [
    (lambda t, tn, L, N: np.where(L * t < 2 * np.pi, np.maximum(0, N * tn - L * t), 0), "L - 1"),
    (lambda t, tn, L, N: np.maximum(0, (N - 1) * tn - (L - 1) * t), "all the way round"),
    (lambda t, tn, L, N: np.where((L - 1) * t < 2 * np.pi, (N - 1) * tn - (L - 1) * t, 0),
     "not negative"),
    (lambda t, tn, L, N: np.where((L - 1) * t < 2 * np.pi,
                                  np.maximum(0, (N - 1) * tn - (L - 1) * tn), 0), "original theta"),
])
def test_wrong_overshoots_get_hints(wrong, hint, capsys):
    assert check_angle_overshoot(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith("TRY AGAIN") and hint in out


def test_the_turn_rule_with_l_in_place_of_l_minus_1_is_rejected(capsys):
    # rho < 1 (L theta < 2 pi) differs from (L - 1) theta < 2 pi on the setting with base 3.393.
    def rho_rule(t, tn, L, N):
        return np.where(L * t < 2 * np.pi, np.maximum(0, (N - 1) * tn - (L - 1) * t), 0)

    assert check_angle_overshoot(rho_rule) is False
    assert capsys.readouterr().out.startswith("TRY AGAIN")


def test_wrong_shape_and_crash_are_reported(capsys):
    assert check_yarn_untouched(lambda d, b, L: np.ones(d, dtype=bool)) is False
    assert check_angle_overshoot(lambda t, tn, L, N: t @ np.ones((2, 2))) is False
    out = capsys.readouterr().out
    assert out.count("TRY AGAIN") == 2


@pytest.fixture(scope="module")
def small_core():
    from course_utils.lab.extension import run_context_extension
    from course_utils.lab.model import ModelConfig
    from course_utils.lab.tasks import make_task

    task = make_task("recall_latest", n_keys=4, n_values=8)
    config = ModelConfig(scheme="rope", vocab_size=task.vocab_size, rope_base=3.78)
    return run_context_extension(task, config, train_length=16, multipliers=(4,),
                                 methods=("pi",), checkpoints=(0, 1), seeds=(0, 1), steps=30,
                                 n_test=8, scratch=False, workers=1, progress=False)


def _far_by_loop(core, method, lr):
    # Far-split accuracy counted from predict() one sequence at a time, after the fine-tune.
    from course_utils.lab.extension import _test_batches, method_config
    from course_utils.lab.model import predict
    from course_utils.lab.train import fine_tune

    far, every = [], []
    for seed, (config, params) in zip(core.seeds, core.base_models, strict=True):
        tuned = method_config(config, method, 4, 16)
        weights = fine_tune(params, tuned, core.task, length=64, checkpoints=(50,), batch=8,
                            lr=lr, warmup=10, seed=1000 * seed)[0][50]
        hits = [0, 0, 0, 0]
        for tokens, labels, mask in _test_batches(core.task, 64, 128, 1234, 32):
            guess = predict(weights, tokens, tuned)
            for b, i in zip(*np.nonzero(mask), strict=True):
                if i < 16:
                    continue
                j = max(p for p in range(1, i, 2) if tokens[b, p] == tokens[b, i])
                hits[0 if i - j >= 16 else 2] += int(guess[b, i] == labels[b, i])
                hits[1 if i - j >= 16 else 3] += 1
        far.append(hits[0] / hits[1])
        every.append((hits[0] + hits[2]) / (hits[1] + hits[3]))
    return np.array(far), np.array(every)


def test_the_experiment_checker(small_core, capsys, monkeypatch):
    import course_utils.exercises.context_extension as ex
    from course_utils.lab.extension import paired_bootstrap, verdict

    assert ex.check_variant_experiment(..., small_core, lr=3e-3, verdict=...) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    numbers = {m: _far_by_loop(small_core, m, 3e-3) for m in ("pi", "yarn")}
    far = {m: value[0] for m, value in numbers.items()}
    right = verdict(*paired_bootstrap(far["yarn"] - far["pi"])[1:])
    assert ex.check_variant_experiment(far, small_core, lr=3e-3, verdict=right) is True
    # the checker's own fine-tunes, once: the wrong answers below need no new ones
    kept = {m: ex._variant_accuracy(small_core, m, 3e-3) for m in ("pi", "yarn")}
    monkeypatch.setattr(ex, "_variant_accuracy", lambda core, m, lr: kept[m])
    wrong_word = next(w for w in ("agrees", "disagrees", "unclear") if w != right)
    capsys.readouterr()
    assert ex.check_variant_experiment(far, small_core, lr=3e-3, verdict=wrong_word) is False
    assert "paired interval" in capsys.readouterr().out
    every = {m: value[1] for m, value in numbers.items()}
    word = verdict(*paired_bootstrap(every["yarn"] - every["pi"])[1:])
    assert ex.check_variant_experiment(every, small_core, lr=3e-3, verdict=word) is False
    assert "every scored query" in capsys.readouterr().out
    with pytest.raises(ValueError, match="lr"):
        ex.check_variant_experiment(far, small_core, lr=0.5, verdict=right)
    with pytest.raises(ValueError, match="verdict"):
        ex.check_variant_experiment(far, small_core, lr=3e-3, verdict="yes")
