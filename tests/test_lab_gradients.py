"""The lab model's hand-written backward pass against finite differences, for every scheme."""

import numpy as np
import pytest

import course_utils.lab.model as lab_model
from course_utils.attention import softmax
from course_utils.lab.model import SCHEMES, ModelConfig, gradient_check, init_params
from course_utils.lab.tasks import make_task
from course_utils.rope import apply_rope, rope_rotation_matrix

TASK = make_task("recall", n_keys=4, n_values=4)


def _small(scheme, **overrides):
    settings = dict(scheme=scheme, vocab_size=TASK.vocab_size, d_model=16, n_heads=2, d_mlp=16,
                    max_len=10, t5_num_buckets=8, t5_max_distance=8)
    settings.update(overrides)
    config = ModelConfig(**settings)
    params = init_params(config, seed=3)
    if scheme == "t5":  # a zero table would hide a wrong bucket gradient behind symmetric scores
        params["t5_table"] = np.random.default_rng(4).normal(size=params["t5_table"].shape)
    return config, params


def _batch(length=10, batch=3):
    return TASK.batch(np.random.default_rng(5), batch, length)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_backward_matches_central_differences(scheme):
    config, params = _small(scheme)
    errors = gradient_check(params, config, *_batch(), n_directions=3, eps=1e-5)
    assert list(errors) == list(params)
    worst = max(errors, key=errors.get)
    assert errors[worst] < 1e-6, f"{scheme}: {worst} relative error {errors[worst]:.2e}"


@pytest.mark.parametrize("scheme", ["none", "rope", "t5"])
def test_backward_without_mlp_and_with_one_layer(scheme):
    config, params = _small(scheme, d_mlp=0, n_layers=1)
    errors = gradient_check(params, config, *_batch(length=7), n_directions=2)
    assert max(errors.values()) < 1e-6


def test_gradient_check_catches_a_wrong_backward(monkeypatch):
    config, params = _small("rope")
    right = lab_model.backward

    def off_by_one_percent(*args, **kwargs):
        grads = right(*args, **kwargs)
        grads["l0.wq"] = grads["l0.wq"] * 1.01
        return grads

    monkeypatch.setattr(lab_model, "backward", off_by_one_percent)
    errors = gradient_check(params, config, *_batch(), n_directions=1)
    assert errors["l0.wq"] == pytest.approx(0.01 / 1.01, rel=1e-3)
    assert max(e for name, e in errors.items() if name != "l0.wq") < 1e-6


def test_rope_transpose_is_rotation_by_negative_angle():
    # <R_m x, y> = <x, R_m^T y>, and R_m^T = R_{-m} (a rotation matrix is orthogonal).
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 6, 8))
    positions = np.arange(6) * 7
    lhs = np.sum(apply_rope(x, positions, layout="half") * y)
    rhs = np.sum(x * apply_rope(y, -positions, layout="half"))
    assert lhs == pytest.approx(rhs, rel=1e-12)
    for m in (1, 5, 40):
        np.testing.assert_allclose(rope_rotation_matrix(-m, 8, layout="half"),
                                   rope_rotation_matrix(m, 8, layout="half").T, atol=1e-15)


def test_softmax_backward_formula_equals_jacobian():
    # The model's dS = A * (dA - sum A dA) against the explicit Jacobian diag(a) - a a^T.
    rng = np.random.default_rng(1)
    scores, dweights = rng.normal(size=(2, 4, 5))
    weights = softmax(scores, axis=-1)
    formula = weights * (dweights - np.sum(weights * dweights, axis=-1, keepdims=True))
    jacobian = np.stack([np.diag(a) - np.outer(a, a) for a in weights])
    np.testing.assert_allclose(formula, np.einsum("rji,rj->ri", jacobian, dweights), atol=1e-14)


def test_t5_gradient_reaches_only_used_buckets():
    config, params = _small("t5")
    tokens, labels, _ = _batch(length=5)  # distances 0..4: exact buckets 0..3 and bucket 4
    mask = np.ones(tokens.shape, dtype=bool)  # a loss at every position, so every distance counts
    _, grads = lab_model.loss_and_grads(params, config, tokens, labels, mask)
    used = np.unique(lab_model.t5_relative_position_bucket(-np.arange(5), bidirectional=False,
                                                           num_buckets=8, max_distance=8))
    unused = np.setdiff1d(np.arange(8), used)
    assert np.all(grads["t5_table"][unused] == 0)
    assert np.all(np.abs(grads["t5_table"][used]) > 0)
