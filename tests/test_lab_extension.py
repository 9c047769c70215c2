"""The lab's stretched RoPE, the recall_latest task, checkpointed fine-tuning and the
context-extension experiment."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from course_utils.lab.extension import (
    METHODS,
    extension_table,
    method_config,
    run_context_extension,
)
from course_utils.lab.model import (
    SCALING_METHODS,
    ModelConfig,
    RopeScaling,
    attention_entropy,
    forward,
    gradient_check,
    init_params,
    rope_frequencies,
)
from course_utils.lab.tasks import make_task, recall_latest_batch
from course_utils.lab.train import evaluate_by_position, fine_tune, train
from course_utils.rope import apply_rope, rope_inv_freq
from course_utils.scaling import rope_scaling

TASK = make_task("recall_latest", n_keys=3, n_values=4)


def _config(**overrides):
    settings = dict(scheme="rope", vocab_size=TASK.vocab_size, d_model=16, n_heads=2, d_mlp=16,
                    rope_base=3.8)
    return ModelConfig(**(settings | overrides))


def test_recall_latest_labels_by_hand():
    tokens, labels, mask = recall_latest_batch(np.random.default_rng(0), 20, 21, n_keys=3,
                                               n_values=4)
    for b in range(20):
        latest = {}
        for i in range(1, 21, 2):
            key = int(tokens[b, i])
            assert mask[b, i] == (key in latest)
            if key in latest:
                assert labels[b, i] == latest[key]
            if i + 1 < 21:
                latest[key] = int(tokens[b, i + 1])
        assert not mask[b, ::2].any()


def test_values_change_between_occurrences():
    tokens, _, _ = recall_latest_batch(np.random.default_rng(1), 64, 32, n_keys=2, n_values=8)
    changed = 0
    for b in range(64):
        last = {}
        for i in range(1, 31, 2):
            key, value = int(tokens[b, i]), int(tokens[b, i + 1])
            changed += key in last and last[key] != value
            last[key] = value
    assert changed > 100


@pytest.mark.parametrize("method", SCALING_METHODS)
@pytest.mark.parametrize("temperature", [True, False])
def test_stretched_rope_backward_matches_central_differences(method, temperature):
    config = _config(rope_scaling=RopeScaling(method, 2.0, 6, temperature=temperature))
    params = init_params(config, seed=3)
    batch = TASK.batch(np.random.default_rng(5), 3, 12)
    errors = gradient_check(params, config, *batch, n_directions=2)
    assert max(errors.values()) < 1e-6


@pytest.mark.parametrize("method", SCALING_METHODS)
def test_frequencies_are_the_scaling_modules(method):
    config = _config(rope_scaling=RopeScaling(method, 4.0, 8))
    for n in (8, 20, 32):
        inv_freq, scale = rope_frequencies(config, n)
        reference, factor = rope_scaling(method, 8, base=3.8, factor=4.0,
                                         original_max_position_embeddings=8, seq_len=n)
        np.testing.assert_array_equal(inv_freq, reference)
        assert scale == factor ** 2


def test_dynamic_ntk_depends_on_the_length_and_is_plain_rope_up_to_L():
    config = _config(rope_scaling=RopeScaling("dynamic", 2.0, 8))
    np.testing.assert_allclose(rope_frequencies(config, 8)[0], rope_inv_freq(8, base=3.8))
    assert not np.allclose(rope_frequencies(config, 16)[0], rope_frequencies(config, 32)[0])


def test_temperature_scales_the_scores_by_the_square_of_the_factor():
    # The first layer's scores, recomputed from the cached queries and keys by hand: HF multiplies
    # cos and sin by the factor, i.e. queries and keys each by it.
    config = _config(rope_scaling=RopeScaling("yarn", 4.0, 8))
    params = init_params(config, seed=1)
    tokens = TASK.batch(np.random.default_rng(2), 2, 16)[0]
    _, cache = forward(params, tokens, config)
    inv_freq, _ = rope_scaling("yarn", 8, base=3.8, factor=4.0, original_max_position_embeddings=8)
    factor = 0.1 * np.log(4.0) + 1
    x = params["embed"][tokens]
    q = (x @ params["l0.wq"]).reshape(2, 16, 2, 8).transpose(0, 2, 1, 3)
    k = (x @ params["l0.wk"]).reshape(2, 16, 2, 8).transpose(0, 2, 1, 3)
    pos = np.arange(16)
    q = factor * apply_rope(q, pos, layout="half", inv_freq=inv_freq)
    k = factor * apply_rope(k, pos, layout="half", inv_freq=inv_freq)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8) + np.where(np.tril(np.ones((16, 16))), 0,
                                                                  -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(cache["layers"][0]["weights"], weights, atol=1e-12)


def test_unscaled_model_is_unchanged_by_the_new_field():
    plain = _config()
    params = init_params(plain, seed=0)
    tokens = TASK.batch(np.random.default_rng(0), 2, 10)[0]
    assert plain.rope_scaling is None
    assert dataclasses.replace(plain, rope_scaling=None) == plain
    logits, _ = forward(params, tokens, plain)
    np.testing.assert_array_equal(logits, forward(params, tokens, _config())[0])


def test_bad_scaling_arguments_raise():
    with pytest.raises(ValueError, match="method"):
        RopeScaling("xpos", 2.0, 8)
    with pytest.raises(ValueError, match="factor"):
        RopeScaling("linear", 0.5, 8)
    with pytest.raises(ValueError, match="scheme='rope'"):
        ModelConfig(scheme="alibi", vocab_size=5, rope_scaling=RopeScaling("linear", 2.0, 8))
    with pytest.raises(TypeError, match="rope_scaling"):
        _config(rope_scaling=("linear", 2.0))
    with pytest.raises(ValueError, match="scheme must be 'rope'"):
        rope_frequencies(ModelConfig(scheme="none", vocab_size=5), 8)


def test_attention_entropy_against_a_loop():
    config = _config()
    params = init_params(config, seed=0)
    tokens = TASK.batch(np.random.default_rng(3), 2, 9)[0]
    entropy = attention_entropy(params, tokens, config, from_position=3)
    _, cache = forward(params, tokens, config)
    for layer in range(2):
        w = cache["layers"][layer]["weights"]
        for h in range(2):
            values = [-sum(p * np.log(p) for p in w[b, h, i, :i + 1])
                      for b in range(2) for i in range(3, 9)]
            assert entropy[layer, h] == pytest.approx(np.mean(values), rel=1e-12)
    assert (entropy <= np.log(9)).all()


def test_fine_tune_checkpoints_equal_separate_runs():
    config = _config()
    params, _ = train(TASK, config, steps=5, length=8, seed=0, progress=False)
    snapshots, losses = fine_tune(params, config, TASK, length=12, checkpoints=(2, 4), seed=1)
    alone, _ = fine_tune(params, config, TASK, length=12, checkpoints=(2,), seed=1)
    assert losses.shape == (4,) and sorted(snapshots) == [2, 4]
    for name in params:
        np.testing.assert_array_equal(snapshots[2][name], alone[2][name])
        assert not np.array_equal(snapshots[4][name], params[name]) or name == "unembed"


def test_evaluate_by_position_totals_match_the_mask():
    config = _config()
    params = init_params(config, seed=0)
    correct, total, loss = evaluate_by_position(params, config, TASK, 12, n_sequences=10)
    _, labels, mask = TASK.batch(np.random.default_rng(1234), 10, 12)
    np.testing.assert_array_equal(total, mask.sum(axis=0))
    assert (correct <= total).all() and loss > 0


def test_experiment_runs_and_does_not_depend_on_workers():
    config = _config()
    kwargs = dict(train_length=8, multipliers=(2,), methods=("rope", "pi", "yarn"),
                  checkpoints=(0, 2, 4), seeds=(0, 1), steps=6, n_test=8, progress=False)
    one = run_context_extension(TASK, config, workers=1, **kwargs)
    two = run_context_extension(TASK, config, workers=2, **kwargs)
    np.testing.assert_array_equal(one.correct, two.correct)
    np.testing.assert_array_equal(one.scratch_correct, two.scratch_correct)
    assert one.accuracy().shape == (3, 1, 3, 2)
    assert "YaRN" in extension_table(one) and "| PI |" in extension_table(one, markdown=True)
    assert one.settings["versions"]["numpy"] == np.__version__


def test_method_config_uses_the_course_names():
    config = _config()
    assert method_config(config, "rope", 4, 8) is config
    assert method_config(config, "yarn_no_t", 4, 8).rope_scaling.temperature is False
    assert {method_config(config, m, 4, 8).rope_scaling.method for m in METHODS[1:]} == set(
        SCALING_METHODS)


def test_grid_markdown_is_rendered_from_its_json():
    import importlib.util
    import json
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("lab2_grid", root / "tools" / "lab2_grid.py")
    grid = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grid)
    record = json.loads((root / "course_utils" / "data" / "records" / "lab2_grid.json").read_text())
    assert grid.render(record) == (root / "benchmarks" / "LAB2_GRID.md").read_text()
    assert record["main"]["seeds"] == list(range(10))
    assert {"python", "numpy", "platform"} <= set(record["versions"])
    assert np.isclose(record["toy_base"], grid.TOY_BASE)
