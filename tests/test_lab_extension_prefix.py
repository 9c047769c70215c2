"""YaRN's section 3.3 dynamic rule read prefix by prefix, and the from-scratch curve extended on
its own: against NTK-aware's closed-form base, the one-pass grid, and the grid's own ceiling."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.lab.extension import (
    _test_batches,
    answer_distance,
    ceiling_curve,
    cell_values,
    claim_differences,
    evaluate_by_distance,
    evaluate_passkey,
    method_config,
    prefix_dynamic,
    prefix_forward,
    run_context_extension,
    summarise,
    verdict_matrix,
)
from course_utils.lab.model import ModelConfig, forward, init_params
from course_utils.lab.tasks import make_task

TASK = make_task("recall_latest", n_keys=4, n_values=8)
BASE = 3.8


def _config(base=BASE):
    return ModelConfig(scheme="rope", vocab_size=TASK.vocab_size, d_model=16, n_heads=2,
                       d_mlp=16, rope_base=base)


def _tokens(length, batch=3, seed=5):
    return TASK.batch(np.random.default_rng(seed), batch, length)[0]


def test_each_position_reads_ntk_aware_for_its_own_prefix_length():
    # The witness: NTK-aware is the unscaled RoPE with base b s^(d/(d-2)) (bloc97 2023; the
    # "ntk" rule of transformers' modeling_rope_utils), a model built with that base and no
    # scaling at all. Position t of the prefix rule must equal that model, for s = (t+1)/L,
    # run on tokens[:, :t+1]; positions before L the unscaled model.
    config, length, L = _config(), 40, 16
    params = init_params(config, seed=1)
    tokens = _tokens(length)
    got = prefix_forward(params, tokens, config, L)
    d = config.head_dim
    for t in range(length):
        s = max(1.0, (t + 1) / L)
        alone = ModelConfig(**{**config.__dict__, "rope_base": BASE * s ** (d / (d - 2))})
        want = forward(params, tokens[:, :t + 1], alone)[0][:, t]
        np.testing.assert_allclose(got[:, t], want, rtol=1e-10, atol=1e-12,
                                   err_msg=f"position {t}")


def test_the_last_position_of_s_L_tokens_is_ntk_aware_with_factor_s():
    config, L = _config(), 16
    params = init_params(config, seed=2)
    for s in (2, 4):
        tokens = _tokens(s * L)
        one_pass = forward(params, tokens, method_config(config, "ntk", s, L))[0]
        np.testing.assert_allclose(prefix_forward(params, tokens, config, L)[:, -1],
                                   one_pass[:, -1], rtol=1e-12, atol=1e-12)
        # and not at the position before: there the factor is (s L - 1)/L
        assert not np.allclose(prefix_forward(params, tokens, config, L)[:, -2],
                               one_pass[:, -2], atol=1e-9)


def test_scores_within_L_are_the_unscaled_models_and_the_passkey_is_ntk_awares():
    config, L = _config(), 16
    params = init_params(config, seed=3)
    plain = evaluate_by_distance(params, config, TASK, L, from_position=4, n_sequences=8)
    rule = evaluate_by_distance(params, config, TASK, L, from_position=4, n_sequences=8,
                                dynamic_prefix=L)
    for a, b in zip(plain, rule, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # the passkey's query is the last token: its prefix is the whole sequence
    for s in (2, 4):
        ntk = evaluate_passkey(params, method_config(config, "ntk", s, L), TASK, s * L,
                               min_distance=L, n_sequences=16)
        rule = evaluate_passkey(params, config, TASK, s * L, min_distance=L, n_sequences=16,
                                dynamic_prefix=L)
        assert ntk[0] == rule[0]
        np.testing.assert_allclose(ntk[2], rule[2], rtol=1e-12)


def test_scores_past_L_count_the_prefix_rules_answers_by_distance():
    # Past L the counts must be those of prefix_forward's argmax, binned by hand by the
    # distance to the answer (an evaluation that ignored the rule would count other hits).
    config, L, n = _config(), 16, 48
    params = init_params(config, seed=3)
    got = evaluate_by_distance(params, config, TASK, n, from_position=L, n_sequences=8, batch=8,
                               dynamic_prefix=L)
    plain = evaluate_by_distance(params, config, TASK, n, from_position=L, n_sequences=8,
                                 batch=8)
    (tokens, labels, mask), = _test_batches(TASK, n, 8, 1234, 8)
    right = (np.argmax(prefix_forward(params, tokens, config, L), -1) == labels) & mask
    np.testing.assert_array_equal(got[0], right.sum(axis=0))
    distance = answer_distance(TASK, tokens, mask)
    hits = np.zeros(n, dtype=np.int64)
    for b, t in zip(*np.nonzero(mask), strict=True):
        if t >= L and distance[b, t] >= 0:
            hits[distance[b, t]] += right[b, t]
    np.testing.assert_array_equal(got[3], hits)
    assert not np.array_equal(got[0], plain[0])   # the rule changes some answers here


def test_the_rule_refuses_a_scaled_config_and_bad_lengths():
    config = _config()
    params = init_params(config, seed=0)
    scaled = method_config(config, "pi", 2, 16)
    with pytest.raises(ValueError, match="config"):
        evaluate_by_distance(params, scaled, TASK, 32, from_position=16, dynamic_prefix=16)
    with pytest.raises(ValueError, match="dynamic_prefix"):
        evaluate_passkey(params, config, TASK, 32, min_distance=16, dynamic_prefix=0)
    with pytest.raises(ValueError, match="train_length"):
        prefix_forward(params, _tokens(32), config, -3)
    with pytest.raises(ValueError, match="config"):
        prefix_forward(params, _tokens(32), scaled, 16)
    with pytest.raises(TypeError, match="task"):
        prefix_dynamic(make_task("copy_back"), config)
    with pytest.raises(ValueError, match="multipliers"):
        prefix_dynamic(TASK, config, multipliers=(1,))
    with pytest.raises(ValueError, match="workers"):
        prefix_dynamic(TASK, config, workers=0)


SMALL = dict(train_length=16, multipliers=(2, 4), seeds=(0, 1), steps=4, n_test=8)


def test_prefix_dynamic_retrains_the_grids_models():
    # The grid's NTK-aware row at 0 steps, from run_context_extension, is what prefix_dynamic
    # scores in one pass after retraining from the same seeds: the same weights.
    run = summarise(run_context_extension(TASK, _config(), methods=("ntk",), checkpoints=(0, 2),
                                          passkey=True, scratch=False, progress=False,
                                          workers=1, **SMALL))
    scores = prefix_dynamic(TASK, _config(), workers=1, **SMALL)
    for split, values in scores["ntk"].items():
        np.testing.assert_allclose(np.round(values, 4),
                                   np.array(run["accuracy"][split]["per_seed"])[0, :, 0])
    # NTK-aware set for 2L is the grid's NTK-aware row at 2L, and another model at 4L
    np.testing.assert_allclose(scores["ntk_short"]["far"][0], scores["ntk"]["far"][0])
    run["prefix_dynamic"] = {key: {k: np.round(v, 4).tolist() for k, v in scores[key].items()}
                             for key in ("prefix", "ntk_short")}
    for who, key in (("dynamic_prefix", "prefix"), ("ntk_short", "ntk_short")):
        for k, mult in enumerate((2, 4)):      # each multiplier's own row
            np.testing.assert_allclose(cell_values(run, who, mult, 0),
                                       np.round(scores[key]["far"][k], 4))
    with pytest.raises(ValueError, match="steps 0"):
        cell_values(run, "dynamic_prefix", 4, 2)
    diffs = claim_differences(run)
    np.testing.assert_allclose(diffs["3.3 dynamic over NTK set for 4L (4L, 0)"],
                               scores["prefix"]["far"][1] - scores["ntk"]["far"][1], atol=2e-4)
    np.testing.assert_allclose(diffs["3.3 dynamic over NTK set for 2L (4L, 0)"],
                               scores["prefix"]["far"][1] - scores["ntk_short"]["far"][1],
                               atol=2e-4)
    # on the passkey the rule and NTK-aware for 4L agree by construction: left out there
    passkey = verdict_matrix({"r": run}, "passkey")
    assert "3.3 dynamic over NTK set for 4L (4L, 0)" not in passkey
    assert "3.3 dynamic over NTK set for 2L (4L, 0)" in passkey
    np.testing.assert_allclose(scores["prefix"]["passkey"], scores["ntk"]["passkey"])


def test_ceiling_curve_is_the_grids_curve():
    kwargs = dict(train_length=16, multipliers=(2, 4), seeds=(0, 1), n_test=8)
    run = run_context_extension(TASK, _config(), methods=("rope",), checkpoints=(0, 2), steps=3,
                                passkey=True, scratch_batch=4, scratch_lr=3e-3,
                                ceiling_steps=(2, 5), progress=False, workers=1, **kwargs)
    alone = ceiling_curve(TASK, _config(), ceiling_steps=(5, 2), batch=4, lr=3e-3, workers=1,
                          progress=False, **kwargs)
    for n in (2, 5):
        for a, b in zip(run.ceiling_curve[n], alone[n], strict=True):
            np.testing.assert_array_equal(a, b)
    # the curve's point at the ceiling's own steps is the ceiling, read by another route
    same = run_context_extension(TASK, _config(), methods=("rope",), checkpoints=(0, 2), steps=3,
                                 passkey=True, scratch_batch=4, scratch_lr=3e-3, scratch_steps=5,
                                 progress=False, workers=1, **kwargs)
    np.testing.assert_allclose(alone[5][0], same.scratch_split_accuracy("far")[1], rtol=1e-12)
    with pytest.raises(TypeError, match="ceiling_steps"):
        ceiling_curve(TASK, _config(), ceiling_steps=())


def test_ceiling_curve_trains_with_a_methods_frequencies(monkeypatch):
    # The ceiling of a method itself: trained from scratch at 4L with its stretched RoPE. The
    # witness is the direct route (train with that config, score the far split); a curve that
    # dropped the stretch would train the unchanged RoPE, which the spy sees.
    import course_utils.lab.extension as ext
    from course_utils.lab.train import train

    pi = method_config(_config(), "pi", 4, 16)
    trained, scored = [], []
    real, real_score, real_key = ext.train, ext.evaluate_by_distance, ext.evaluate_passkey

    def spy(task, config, **kwargs):
        trained.append(config)
        return real(task, config, **kwargs)

    def spy_score(params, config, *args, **kwargs):
        scored.append(config)
        return real_score(params, config, *args, **kwargs)

    def spy_key(params, config, *args, **kwargs):
        scored.append(config)
        return real_key(params, config, *args, **kwargs)

    monkeypatch.setattr(ext, "train", spy)
    monkeypatch.setattr(ext, "evaluate_by_distance", spy_score)
    monkeypatch.setattr(ext, "evaluate_passkey", spy_key)
    curve = ceiling_curve(TASK, pi, ceiling_steps=(3,), train_length=16, multipliers=(2, 4),
                          seeds=(1,), batch=4, lr=3e-3, n_test=8, workers=1, progress=False)
    assert trained == [pi] and scored and all(config == pi for config in scored)
    params, _ = train(TASK, pi, steps=3, batch=4, length=64, lr=3e-3, seed=1, progress=False)
    *_, hits, counted = evaluate_by_distance(params, pi, TASK, 64, from_position=16,
                                             n_sequences=8)
    np.testing.assert_allclose(curve[3][0], [hits[16:].sum() / counted[16:].sum()], rtol=1e-12)
    for wrong in (method_config(_config(), "pi", 2, 16), method_config(_config(), "pi", 4, 8)):
        with pytest.raises(ValueError, match="rope_scaling must stretch train_length"):
            ceiling_curve(TASK, wrong, ceiling_steps=(3,), train_length=16, multipliers=(2, 4))
    with pytest.raises(ValueError, match="rope_scaling must be a static rule"):
        ceiling_curve(TASK, method_config(_config(), "dynamic", 4, 16), ceiling_steps=(3,))


def test_every_method_of_a_seed_fine_tunes_on_the_same_data(monkeypatch):
    # Paired comparisons need one fine-tune data stream per (seed, length), shared by every
    # method: record the seed each fine-tune receives.
    import course_utils.lab.extension as ext

    seen = {}
    real = ext.fine_tune

    def spy(params, config, task, **kwargs):
        scaling = config.rope_scaling
        seen[(kwargs["length"], scaling.method if scaling else "rope",
              scaling.temperature if scaling else None)] = kwargs["seed"]
        return real(params, config, task, **kwargs)

    monkeypatch.setattr(ext, "fine_tune", spy)
    run_context_extension(TASK, _config(), methods=("rope", "pi", "yarn", "yarn_no_t"),
                          checkpoints=(0, 1), seeds=(3,), steps=2, n_test=4, scratch=False,
                          progress=False, workers=1)
    by_length = {}
    for (length, *_), seed in seen.items():
        by_length.setdefault(length, set()).add(seed)
    assert len(seen) == 8 and all(len(s) == 1 for s in by_length.values())
    assert by_length[32] != by_length[64]    # another length, other data


def test_a_fresh_test_set_scores_the_same_models_on_other_sequences():
    # test_seed changes the sequences, not the models: the fine-tune losses are the default
    # run's, and the fresh scores are those of evaluate_by_distance, baselines_by_distance and
    # evaluate_passkey called with seeds 7 and 8 on the run's own pre-trained model.
    from course_utils.lab.extension import baselines_by_distance

    kwargs = dict(train_length=16, multipliers=(2,), seeds=(0, 1), n_test=8, steps=3,
                  checkpoints=(0, 2), methods=("rope", "pi"), passkey=True, scratch=False,
                  progress=False, workers=1)
    usual = run_context_extension(TASK, _config(), **kwargs)
    fresh = run_context_extension(TASK, _config(), test_seed=7, **kwargs)
    np.testing.assert_array_equal(fresh.tune_losses, usual.tune_losses)
    assert fresh.settings["test_seed"] == 7 and "test_seed" not in usual.settings
    config, params = fresh.base_models[1]
    _, _, _, hits, counted = evaluate_by_distance(params, config, TASK, 32, from_position=16,
                                                  n_sequences=8, seed=7)
    np.testing.assert_array_equal(fresh.correct_dist[0, 0, 0, 1, :32], hits)
    np.testing.assert_array_equal(fresh.total_dist[0, :32], counted)
    assert not np.array_equal(fresh.total_dist, usual.total_dist)
    blind = baselines_by_distance(TASK, 32, from_position=16, window=16, n_sequences=8,
                                  seed=7)["blind"]
    np.testing.assert_allclose(fresh.baseline_dist["blind"][0], blind, rtol=1e-12)
    from course_utils.lab.train import evaluate_by_position
    at_l, counted_l, _ = evaluate_by_position(params, config, TASK, 16, n_sequences=8, seed=7)
    assert fresh.base_accuracy[1] == at_l.sum() / counted_l.sum()
    key = evaluate_passkey(params, config, TASK, 32, min_distance=16, n_sequences=8, seed=8)
    assert fresh.passkey["correct"][0, 0, 0, 1] == key[0]
    # the attention on the answer, a mean over the sequences, tells the sequence sets apart
    np.testing.assert_allclose(fresh.passkey["needle"][0, 0, 0, 1], key[2], rtol=1e-12)
    assert not np.allclose(fresh.passkey["needle"][0, 0, 0, 1], usual.passkey["needle"][0, 0, 0, 1])
    # prefix_dynamic's one-pass NTK-aware row reads the same fresh sequences
    scores = prefix_dynamic(TASK, _config(), seeds=(0, 1), train_length=16, multipliers=(2,),
                            steps=3, n_test=8, test_seed=7, workers=1)
    ntk = run_context_extension(TASK, _config(), test_seed=7, **kwargs | {"methods": ("ntk",)})
    np.testing.assert_allclose(scores["ntk"]["far"][0], ntk.split_accuracy("far")[0, 0, 0],
                               rtol=1e-12)
    np.testing.assert_allclose(scores["ntk"]["passkey"][0],
                               ntk.passkey["correct"][0, 0, 0] / ntk.passkey["total"][0],
                               rtol=1e-12)
    for default in (1234, 4320):       # the default recall or passkey sequences: not fresh
        with pytest.raises(ValueError, match="test_seed must draw a fresh test set"):
            run_context_extension(TASK, _config(), test_seed=default, **kwargs)
    for taken in (1, 2, 1000, 999):    # a seed's initialisation, data or fine-tune stream
        with pytest.raises(ValueError, match="test_seed must not draw a stream training reads"):
            run_context_extension(TASK, _config(), test_seed=taken, **kwargs)
    with pytest.raises(ValueError, match="test_seed must not draw a stream pre-training reads"):
        prefix_dynamic(TASK, _config(), seeds=(0, 1), multipliers=(2,), test_seed=2)
    with pytest.raises(TypeError, match="no rope_scaling"):
        prefix_dynamic(TASK, method_config(_config(), "pi", 2, 16), multipliers=(2,))
