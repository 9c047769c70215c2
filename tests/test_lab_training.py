"""Training, evaluation and the experiment driver of the length-generalisation lab."""

import numpy as np
import pytest

from course_utils.lab.model import SCHEMES, ModelConfig, cross_entropy, init_params, predict
from course_utils.lab.tasks import make_task
from course_utils.lab.train import adam_step, evaluate, run_experiment, train

PREVIOUS = make_task("copy_back", k=1, n_symbols=4)  # copy the previous token: a trivial task


def _config(scheme, task=PREVIOUS, max_len=8):
    return ModelConfig(scheme=scheme, vocab_size=task.vocab_size, d_model=16, n_heads=2,
                       d_mlp=16, max_len=max_len, t5_num_buckets=8, t5_max_distance=8)


def test_same_seed_gives_identical_losses_and_parameters():
    config = _config("rope")
    params_a, losses_a = train(PREVIOUS, config, steps=25, batch=8, length=8, seed=3,
                               progress=False)
    params_b, losses_b = train(PREVIOUS, config, steps=25, batch=8, length=8, seed=3,
                               progress=False)
    np.testing.assert_array_equal(losses_a, losses_b)
    for name in params_a:
        np.testing.assert_array_equal(params_a[name], params_b[name])
    _, losses_c = train(PREVIOUS, config, steps=25, batch=8, length=8, seed=4, progress=False)
    assert not np.array_equal(losses_a, losses_c)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_learns_to_copy_the_previous_token(scheme):
    config = _config(scheme)
    params, losses = train(PREVIOUS, config, steps=150, batch=16, length=8, lr=1e-2, seed=0,
                           progress=False)
    assert losses[-10:].mean() < 0.25 * losses[:10].mean()
    accuracy = evaluate(params, config, PREVIOUS, 8, n_sequences=64, scored="all")
    assert accuracy > 0.9 > 3 * PREVIOUS.chance


def test_learned_table_has_no_output_beyond_max_len():
    config = _config("learned")
    params = init_params(config, 0)
    assert np.isnan(evaluate(params, config, PREVIOUS, 9))
    assert not np.isnan(evaluate(params, config, PREVIOUS, 8))
    with pytest.raises(IndexError, match="no embedding beyond"):
        predict(params, np.zeros((1, 9), dtype=np.int64), config)
    with pytest.raises(ValueError, match="length must be <= config.max_len"):
        train(PREVIOUS, config, steps=1, length=9)


def test_other_schemes_read_any_length():
    for scheme in ("none", "sinusoidal", "t5", "rope", "alibi"):
        config = _config(scheme)
        accuracy = evaluate(init_params(config, 0), config, PREVIOUS, 64, n_sequences=4)
        assert 0.0 <= accuracy <= 1.0


def test_run_experiment_shapes_and_nan_pattern():
    experiment = run_experiment(PREVIOUS, schemes=("learned", "alibi"), train_length=8,
                                multipliers=(1, 2), seeds=(0, 1), steps=3, n_test=4,
                                progress=False, d_model=16, n_heads=2, d_mlp=16,
                                t5_num_buckets=8, t5_max_distance=8)
    accuracy = experiment.accuracy
    assert accuracy.shape == (2, 2, 2) and experiment.losses.shape == (2, 2, 3)
    assert experiment.lengths == (8, 16) and set(experiment.models) == {"learned", "alibi"}
    assert np.isnan(accuracy[0, 1]).all() and not np.isnan(accuracy[0, 0]).any()
    assert not np.isnan(accuracy[1]).any()


_SMALL = dict(train_length=8, multipliers=(1, 2), seeds=(0, 1), steps=4, n_test=4,
              progress=False, d_model=16, n_heads=2, d_mlp=16, t5_num_buckets=8,
              t5_max_distance=8)


def test_worker_processes_give_the_same_results_as_one_process():
    # Each (model, seed) is seeded on its own: the pool changes where it runs, not what it computes.
    one = run_experiment(PREVIOUS, schemes=("t5", "rope"), workers=1, **_SMALL)
    two = run_experiment(PREVIOUS, schemes=("t5", "rope"), workers=2, **_SMALL)
    np.testing.assert_array_equal(one.accuracy, two.accuracy)
    np.testing.assert_array_equal(one.losses, two.losses)
    for name in one.schemes:
        for (_, a), (_, b) in zip(one.trained[name], two.trained[name], strict=True):
            for key in a:
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"{name} {key}")


def test_variants_are_extra_rows_with_their_own_config():
    experiment = run_experiment(PREVIOUS, schemes=("rope",), workers=1,
                                variants={"RoPE, base 3": {"scheme": "rope", "rope_base": 3.0}},
                                **_SMALL)
    assert experiment.schemes == ("rope", "RoPE, base 3")
    assert experiment.models["RoPE, base 3"][0].rope_base == 3.0
    assert experiment.models["rope"][0].rope_base == 10000.0
    assert len(experiment.trained["RoPE, base 3"]) == 2  # one model per seed
    # Different frequencies, different training: the variant is not a copy of the plain row.
    assert not np.array_equal(experiment.losses[0], experiment.losses[1])
    from course_utils.lab.report import row_style

    assert row_style(experiment, "RoPE, base 3")["linestyle"] == "--"
    assert row_style(experiment, "RoPE, base 3")["color"] == row_style(experiment, "rope")["color"]


@pytest.mark.parametrize("variants, match", [
    ({"x": {"rope_base": 3.0}}, "including 'scheme'"),
    ({"rope": {"scheme": "rope"}}, "reuse a scheme's name"),
    ("rope", "must be a dict"),
])
def test_bad_variants_are_refused(variants, match):
    with pytest.raises((TypeError, ValueError), match=match):
        run_experiment(PREVIOUS, schemes=("rope",), variants=variants, **_SMALL)


def test_first_adam_step_moves_every_weight_by_lr_against_the_gradient_sign():
    # m_hat = g and v_hat = g^2 at t = 1, so the step is lr * g / (|g| + eps).
    params = {"w": np.array([1.0, -2.0, 3.0])}
    grads = {"w": np.array([0.5, -4.0, 1e-3])}
    state = adam_step(params, grads, None, lr=0.1)
    np.testing.assert_allclose(params["w"], [0.9, -1.9, 2.9], rtol=1e-6)
    assert state["t"] == 1


def test_cross_entropy_of_uniform_logits_is_log_vocab():
    logits = np.zeros((2, 3, 5))
    labels = np.array([[0, 1, 2], [3, 4, 0]])
    mask = np.array([[True, False, True], [True, True, False]])
    loss, dlogits = cross_entropy(logits, labels, mask)
    assert loss == pytest.approx(np.log(5))
    # d loss / d logits = (1/5 - onehot) / 4 on the 4 counted positions, 0 elsewhere
    assert dlogits[0, 0, 0] == pytest.approx((0.2 - 1) / 4) and dlogits[0, 0, 1] == pytest.approx(0.05)
    assert np.all(dlogits[0, 1] == 0)


def test_config_validation_names_the_argument():
    with pytest.raises(ValueError, match="scheme must be one of"):
        ModelConfig(scheme="xpos", vocab_size=5)
    with pytest.raises(ValueError, match="even head size"):
        ModelConfig(scheme="rope", vocab_size=5, d_model=12, n_heads=4)
    with pytest.raises(ValueError, match="tokens must be in 0 .. 4"):
        config = ModelConfig(scheme="none", vocab_size=5, d_model=8, n_heads=2)
        predict(init_params(config), np.array([[0, 5]]), config)
    with pytest.raises(ValueError, match="vocab_size"):
        train(PREVIOUS, ModelConfig(scheme="none", vocab_size=3), steps=1)


def test_progress_bar_writes_to_stderr_only_when_asked(capsys):
    config = _config("none")
    train(PREVIOUS, config, steps=3, batch=4, length=8, progress=False)
    assert capsys.readouterr().err == ""
    train(PREVIOUS, config, steps=3, batch=4, length=8, progress=True)
    captured = capsys.readouterr()
    assert "copy_back, none, seed 0" in captured.err and captured.out == ""
