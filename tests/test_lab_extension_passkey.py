"""The passkey test of the context-extension lab, the long-trained ceiling and YaRN's betas moved
to the toy: against loops over single sequences, transformers' ramp and Llama 2's own values."""

from __future__ import annotations

import copy
import importlib.util
import json
import pathlib

import numpy as np
import pytest

from course_utils.lab.extension import (
    PASSKEY_SEED,
    claim_table,
    evaluate_passkey,
    method_config,
    run_context_extension,
    summarise,
)
from course_utils.lab.model import ModelConfig, forward, init_params
from course_utils.lab.tasks import far_recall_batch, make_task
from course_utils.rope import rope_inv_freq
from course_utils.scaling import rope_scaling

TASK = make_task("recall_latest", n_keys=4, n_values=8)
ROOT = pathlib.Path(__file__).resolve().parents[1]


def _grid_tool():
    spec = importlib.util.spec_from_file_location("lab2_grid", ROOT / "tools" / "lab2_grid.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(base=3.8):
    return ModelConfig(scheme="rope", vocab_size=TASK.vocab_size, d_model=16, n_heads=2,
                       d_mlp=16, rope_base=base)


def _passkey_by_loops(params, config, length, n_sequences, batch):
    # One sequence at a time: find the only earlier copy of the last key by scanning, read the
    # model's answer there, and the weight each head puts on the token after that copy.
    rng = np.random.default_rng(PASSKEY_SEED)
    hits, needle = 0, np.zeros((config.n_layers, config.n_heads))
    for start in range(0, n_sequences, batch):
        tokens, labels, mask = far_recall_batch(rng, min(batch, n_sequences - start), length,
                                                min_distance=16)
        for seq, lab, m in zip(tokens, labels, mask, strict=True):
            q = int(np.flatnonzero(m)[0])
            copy = [p for p in range(1, q, 2) if seq[p] == seq[q]][0]
            logits, cache = forward(params, seq[None, :], config)
            hits += int(np.argmax(logits[0, q]) == lab[q])
            for layer, c in enumerate(cache["layers"]):
                needle[layer] += c["weights"][0, :, q, copy + 1]
    return hits, needle / n_sequences


@pytest.mark.parametrize("length", [32, 48])
def test_passkey_accuracy_and_attention_match_a_loop(length):
    config = _config()
    params = init_params(config, 5)
    stretched = method_config(config, "yarn", 2, 16)      # a temperature and stretched angles
    for cfg in (config, stretched):
        hits, total, needle, blind, window = evaluate_passkey(params, cfg, TASK, length,
                                                              min_distance=16, n_sequences=20,
                                                              batch=8)
        want_hits, want_needle = _passkey_by_loops(params, cfg, length, 20, 8)
        assert (hits, total) == (want_hits, 20)
        np.testing.assert_allclose(needle, want_needle, rtol=1e-12)
        assert blind == 20.0 and window == pytest.approx(20 * TASK.chance)


def test_passkey_refuses_other_tasks_and_bad_distances():
    params = init_params(_config(), 0)
    with pytest.raises(TypeError, match="recall_latest"):
        evaluate_passkey(params, _config(), make_task("recall"), 32, min_distance=16)
    with pytest.raises(ValueError, match="min_distance"):
        evaluate_passkey(params, _config(), TASK, 32, min_distance=40)


def test_run_with_passkey_and_a_ceiling_curve():
    kwargs = dict(train_length=16, multipliers=(2, 4), checkpoints=(0, 2), seeds=(0, 1),
                  steps=4, n_test=8, progress=False, workers=1, methods=("rope", "pi"))
    run = run_context_extension(TASK, _config(), passkey=True, scratch_steps=3, scratch_lr=3e-3,
                                ceiling_steps=(2, 5), **kwargs)
    assert run.passkey["correct"].shape == (2, 2, 2, 2) and (run.passkey["total"] == 8).all()
    assert run.passkey["needle"].shape == (2, 2, 2, 2, 2, 2)
    assert set(run.ceiling_curve) == {2, 5}
    record = summarise(run)
    assert set(record["accuracy"]) == {"all", "near", "far", "passkey"}
    assert record["baselines"]["blind"]["passkey"] == [1.0, 1.0]
    # the passkey scores one query per sequence: its accuracy is a count over 8
    acc = np.array(record["accuracy"]["passkey"]["per_seed"])
    np.testing.assert_allclose(acc * 8, np.round(acc * 8), atol=1e-3)
    # the first model of the ceiling curve with the ceiling's own steps is the ceiling
    same = run_context_extension(TASK, _config(), passkey=True, scratch_steps=5,
                                 scratch_lr=3e-3, **kwargs)
    np.testing.assert_allclose(run.ceiling_curve[5][1],
                               summarise(same)["scratch_accuracy"]["passkey"]["per_seed"][1],
                               atol=1e-4)
    names = [row[0] for row in claim_table(record, "passkey", n_resamples=100)]
    assert "extrapolation fails (4L, 0 steps)" in names


def test_yarn_betas_moved_to_the_toy():
    grid = _grid_tool()
    # Llama 2's own values come back: the shares are taken from it
    np.testing.assert_allclose(grid.yarn_betas_rescaled(128, 1e4, 4096), (32.0, 1.0), rtol=1e-12)
    fast, slow = grid.yarn_betas_rescaled(8, grid.TOY_BASE, 16)
    # the toy's base turns Llama 2's share of the exponent range within L, so beta_slow stays 1
    assert slow == pytest.approx(1.0, rel=1e-12) and 1.0 < fast < 16 / (2 * np.pi)
    # transformers' ramp then runs from pair floor(1.31) = 1 to ceil(2.81) = 3 of the four
    scaled, _ = rope_scaling("yarn", 8, base=grid.TOY_BASE, factor=4.0,
                             original_max_position_embeddings=16, beta_fast=fast, beta_slow=slow)
    theta = rope_inv_freq(8, base=grid.TOY_BASE)
    gamma = (scaled - theta / 4) / (theta - theta / 4)
    np.testing.assert_allclose(gamma, [1.0, 1.0, 0.5, 0.0], atol=1e-12)


def test_t_interval_against_the_textbook_case():
    from course_utils.lab.extension import t_interval

    # n = 3, mean 2, sd 1: half-width t(0.975, 2) / sqrt(3) = 4.302653 / 1.732051 = 2.484138
    mean, low, high = t_interval(np.array([1.0, 2.0, 3.0]))
    assert mean == 2.0 and high - mean == pytest.approx(2.484138, rel=1e-6)
    assert mean - low == pytest.approx(high - mean, rel=1e-12)
    with pytest.raises(ValueError, match="diff"):
        t_interval(np.array([1.0]))


def test_a_rerun_is_compared_verdict_by_verdict():
    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    same = grid.compare(record, copy.deepcopy(record))
    assert same["cells_that_differ"] == 0 and same["largest_accuracy_difference"] == 0
    assert same["far"]["verdicts"] > 50 and same["far"]["changed"] == []
    # A rerun in which PI reads far queries worse at 4L after 100 steps on every seed:
    # "PI: fine-tune recovers (4L, 0 -> 100)" no longer agrees in the main grid.
    other = copy.deepcopy(record)
    run = other["main"]
    pi, k, c = run["methods"].index("pi"), run["multipliers"].index(4), \
        run["checkpoints"].index(100)
    cells = run["accuracy"]["far"]["per_seed"][pi][k]
    cells[c] = list(cells[0])
    changed = grid.compare(record, other)
    before = np.array(record["main"]["accuracy"]["far"]["per_seed"][pi][k])
    assert changed["cells_that_differ"] == len(run["seeds"])
    assert changed["largest_accuracy_difference"] == np.abs(before[c] - before[0]).max()
    for key in ("changed", "t_changed"):
        assert {"claim": "PI: fine-tune recovers (4L, 0 -> 100)", "run": list(grid.runs_of(
            record))[0], "from": "agrees", "to": "unclear"} in changed["far"][key]
    record["reruns"] = {"other CPU": changed | {"command": "test"}}
    assert "unclear (+0.31); here: agrees, other CPU: unclear" in grid.render(record)
    # a rerun of some parts is compared on those alone; other seeds are refused
    other["parts_run"] = ["lr"]
    assert grid.compare(record, other)["cells_that_differ"] == 0
    other["parts_run"] = ["main"]
    other["main"]["seeds"] = other["main"]["seeds"][:-1]
    with pytest.raises(ValueError, match="seeds"):
        grid.compare(record, other)


def test_a_verdict_is_stated_only_when_every_path_gives_it():
    from course_utils.lab.extension import rerun_test, stated_verdicts

    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    record.pop("reruns")
    labels = list(grid.runs_of(record))
    main, lr3 = labels[0], "lr 0.003"
    alone = stated_verdicts(record)
    assert all(c["stated"] == c["here"] and c["paths"] == {}
               for cells in alone.values() for c in cells.values())
    recovers = "PI: fine-tune recovers (4L, 0 -> 100)"
    run = record["main"]
    pi, k = run["methods"].index("pi"), run["multipliers"].index(4)
    c0, c100 = run["checkpoints"].index(0), run["checkpoints"].index(100)
    by_hand = np.array(run["accuracy"]["far"]["per_seed"][pi][k][c100]) - np.array(
        run["accuracy"]["far"]["per_seed"][pi][k][c0])
    assert alone[recovers][main]["mean"] == pytest.approx(by_hand.mean(), abs=1e-12)
    assert alone[recovers][main]["stated"] == alone[recovers][lr3]["stated"] == "agrees"

    def decided(names):   # measurements stated agrees or disagrees by the record alone
        return sum(c["stated"] != "unclear" and not c["same_as"] for cells in alone.values()
                   for label, c in cells.items() if label in names)

    def pi_back(r):       # PI at 4L after 100 steps back where it was before, every seed
        cells = r["accuracy"]["far"]["per_seed"][pi][k]
        cells[c100] = list(cells[c0])

    def rerun(parts, *runs_of_other):
        other = copy.deepcopy(record)
        other["parts_run"] = parts
        for pick in runs_of_other:
            pi_back(pick(other))
        return grid.compare(record, other) | {"command": "test"}

    # first: the main grid alone, where PI does not recover
    record["reruns"] = {"first": rerun(["main"], lambda o: o["main"])}
    both = stated_verdicts(record)
    assert both[recovers][main]["stated"] == "unclear"
    assert both[recovers][main]["paths"] == {"first": "unclear"}
    assert both[recovers][lr3]["paths"] == {} and both[recovers][lr3]["stated"] == "agrees"
    # the YaRN-beta run's PI is the main grid's (same fine-tunes): one measurement, one verdict
    assert both[recovers]["YaRN beta rescaled"]["same_as"] == main
    assert both[recovers]["YaRN beta rescaled"]["stated"] == "unclear"
    assert all(both[c][lab]["stated"] == alone[c][lab]["stated"] for c in alone
               for lab in alone[c] if c != recovers or lab in ("lr 0.0003", lr3))
    n_main = decided({main})
    first = (n_main - 1, n_main, [(recovers, main, "agrees", "unclear")])
    assert rerun_test(record, "first") == first
    # second: main and the learning rates, PI not recovering in main and at 3e-3. Tested after
    # the first: main's "recovers" is no longer stated, 3e-3's changes; the first's own test
    # does not see the second
    record["reruns"]["second"] = rerun(["main", "lr"], lambda o: o["main"],
                                       lambda o: o["lr_variants"]["0.003"])
    n_both = decided({main, "lr 0.0003", lr3})
    assert rerun_test(record, "second") == (n_both - 2, n_both - 1,
                                            [(recovers, lr3, "agrees", "unclear")])
    assert rerun_test(record, "first") == first
    assert stated_verdicts(record)[recovers][lr3]["stated"] == "unclear"
    with pytest.raises(ValueError, match="where"):
        rerun_test(record, "third")
    with pytest.raises(ValueError, match="split"):
        rerun_test(record, "first", "near")
    with pytest.raises(TypeError, match="record"):
        rerun_test(None, "first")
    stale = copy.deepcopy(record)
    stale["main"]["accuracy"]["far"]["per_seed"][pi][k][c100][0] += 0.01
    with pytest.raises(ValueError, match="compare it again"):
        stated_verdicts(stale)
    del stale["reruns"]["first"]["far"]["theirs"]
    with pytest.raises(ValueError, match="theirs"):
        stated_verdicts(stale)


def test_the_stored_rerun_verdicts_are_those_of_the_stored_reruns():
    from course_utils.lab.extension import path_verdicts, verdict_matrix

    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    reruns = json.loads(grid.RERUNS.read_text())
    assert list(reruns) == list(record["reruns"])          # the same reruns, in order
    for where, runs in reruns.items():
        assert sorted(runs) == record["reruns"][where]["runs"]
        for split in ("far", "passkey"):
            theirs = {claim: {label: cell[3] for label, cell in cells.items()}
                      for claim, cells in verdict_matrix(runs, split).items()}
            assert theirs == record["reruns"][where][split]["theirs"], (where, split)
    # path_verdicts: "here" is the record's own interval, then each rerun that ran the run
    main = list(grid.runs_of(record))[0]
    paths = path_verdicts(record, reruns, main, ("pi", 4, 100), ("pi", 4, 0))
    assert list(paths) == ["here"] + [w for w, r in reruns.items() if main in r]
    assert paths["here"][3] == "agrees" and paths["here"][0] == pytest.approx(0.31, abs=0.005)
    with pytest.raises(ValueError, match="label"):
        path_verdicts(record, reruns, "main", ("pi", 4, 100), ("pi", 4, 0))


def test_a_rerun_with_other_settings_is_refused_and_stale_reruns_are_dropped(tmp_path,
                                                                           monkeypatch):
    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    other = copy.deepcopy(record)
    other["parts_run"] = ["lr"]
    other["lr_variants"]["0.003"]["settings"]["tune_warmup"] = 20
    with pytest.raises(ValueError, match="settings differ.*tune_warmup"):
        grid.compare(record, other)
    # a part rerun here since a rerun was compared: that rerun's comparison is dropped
    reruns = tmp_path / "lab2_reruns.json"
    reruns.write_text(grid.RERUNS.read_text())
    monkeypatch.setattr(grid, "RERUNS", reruns)
    monkeypatch.setattr(grid, "TEST_SET", tmp_path / "lab2_test_set.json")
    covering = {w for w, d in record["reruns"].items() if "lr 0.003" in d["runs"]}
    assert covering and covering != set(record["reruns"])
    record["lr_variants"]["0.003"]["accuracy"]["far"]["per_seed"][0][0][0][0] += 0.01
    grid._drop_stale_reruns(record)
    assert set(record["reruns"]) == set(json.loads(reruns.read_text())) != set()
    assert not covering & set(record["reruns"])


def test_own_ceiling_pairs_each_seed_with_its_own_frequencies_model():
    # A long_methods part built from the stored grid: each seed's ceiling is that seed's PI
    # after 200 steps at 4L plus a known shift, so the gap is minus the mean shift exactly; a
    # wrong length, checkpoint or seed order would read other per-seed numbers.
    from course_utils.lab.extension import cell_values, own_ceiling

    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    reruns = json.loads(grid.RERUNS.read_text())
    label, main = next(iter(grid.runs_of(record).items()))
    shift = np.linspace(0.01, 0.10, len(main["seeds"]))
    far = cell_values(main, "pi", 4, 200) + shift
    key = cell_values(main, "pi", 4, 200, "passkey") + 0.2
    cpu = [w for w, r in reruns.items() if label in r][-1]
    other = cell_values(reruns[cpu][label], "pi", 4, 200)
    record["long_methods"] = {"seeds": main["seeds"], "settings": {
        k: main["settings"][k] for k in ("train_length", "multipliers", "n_test")},
        "curves": {"pi": {"2000": {
        "far": far.tolist(), "passkey": key.tolist()}}}, "reruns": {
        cpu.rsplit(", ", 1)[0] + ", long_methods": {"pi": {"2000": {
            "far": (other - 0.3).tolist(), "passkey": key.tolist()}}}}}
    paths = own_ceiling(record, reruns, "pi")
    assert paths["here"][0] == pytest.approx(-shift.mean(), abs=1e-12)
    assert paths["here"][3] == "disagrees"
    assert list(paths.values())[1][:3] == pytest.approx((0.3, 0.3, 0.3), abs=1e-12)
    assert own_ceiling(record, reruns, "pi", split="passkey")["here"][0] == \
        pytest.approx(-0.2, abs=1e-12)
    # a second main grid rerun from that CPU, compared later: the pairing takes the latest
    later = copy.deepcopy(reruns[cpu])
    later[label]["accuracy"]["far"]["per_seed"] = (np.array(
        later[label]["accuracy"]["far"]["per_seed"]) + 0.1).tolist()
    both = reruns | {cpu.rsplit(", ", 1)[0] + ", again": later}
    assert list(own_ceiling(record, both, "pi").values())[1][0] == pytest.approx(0.4, abs=1e-12)
    record["long_methods"]["reruns"] = {"another CPU, long_methods": {}}
    with pytest.raises(ValueError, match="a main grid run from the CPU"):
        own_ceiling(record, reruns, "pi")
    with pytest.raises(ValueError, match="ceiling_steps"):
        own_ceiling(record, reruns, "pi", ceiling_steps=500)
    with pytest.raises(ValueError, match="method"):
        own_ceiling(record, reruns, "ntk")
    record["long_methods"]["reruns"] = {}
    record["long_methods"]["settings"] = {k: main["settings"][k]
                                          for k in ("train_length", "multipliers", "n_test")}
    own_ceiling(record, reruns, "pi")
    for key, value in (("n_test", 64), ("test_seed", 5678)):
        record["long_methods"]["settings"][key] = value
        with pytest.raises(ValueError, match=f"other settings than the main grid.*{key}"):
            own_ceiling(record, reruns, "pi")
        record["long_methods"]["settings"].pop(key)
        record["long_methods"]["settings"]["n_test"] = main["settings"]["n_test"]
    record["long_methods"]["seeds"] = main["seeds"][::-1]
    with pytest.raises(ValueError, match="other seeds"):
        own_ceiling(record, reruns, "pi")


def test_a_fresh_test_set_is_counted_against_the_stated_verdicts(tmp_path, monkeypatch):
    # A stand-in for a --test-seed rerun: the record's own runs with a test seed. Every stated
    # verdict is then kept; one flipped verdict is counted once, under its claim and run.
    from course_utils.lab.extension import rerun_test, stated_verdicts, test_set_check

    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    other = copy.deepcopy(record)
    other["parts_run"] = ["main", "lr", "base", "beta"]
    for run in grid.runs_of(other).values():
        run["settings"]["test_seed"] = 99
    with pytest.raises(ValueError, match="settings differ.*test_seed"):
        grid.compare(record, other)
    other_warmup = copy.deepcopy(other)          # a setting outside allow is still refused
    next(iter(grid.runs_of(other_warmup).values()))["settings"]["tune_warmup"] = 20
    with pytest.raises(ValueError, match="settings differ.*tune_warmup"):
        grid.compare(record, other_warmup, allow=("test_seed",))
    record["test_set"] = grid.compare(record, other, allow=("test_seed",)) | {
        "test_seed": 99, "command": "stand-in"}
    held, stated, changed = test_set_check(record, "far")
    # the held-out rerun ran every run too: the same measurements are stated before it
    assert (held, stated, changed) == (rerun_test(record, list(record["reruns"])[-1])[1],) * 2 \
        + ([],)
    claim, cells = next((c, cells) for c, cells in stated_verdicts(record, "far").items()
                        if any(v["stated"] == "agrees" for v in cells.values()))
    label = next(lab for lab, v in cells.items() if v["stated"] == "agrees" and not v["same_as"])
    record["test_set"]["far"]["theirs"][claim][label] = "unclear"
    assert test_set_check(record, "far") == (held - 1, stated,
                                             [(claim, label, "agrees", "unclear")])
    assert "Rerun on a fresh test set" in grid.render(record)
    # a part rerun since: the comparison is stale, refused, and dropped by the tool
    grid.runs_of(record)[label]["accuracy"]["far"]["per_seed"][0][0][0][0] += 0.01
    with pytest.raises(ValueError, match="other runs"):
        test_set_check(record, "far")
    stored = tmp_path / "lab2_test_set.json"
    monkeypatch.setattr(grid, "TEST_SET", stored)
    for lost in (False, True):     # a run changed, or a run no longer held (other variants)
        stored.write_text("{}")
        monkey = copy.deepcopy(record)
        monkey.pop("reruns")
        if lost:
            grid.runs_of(record)[label]["accuracy"]["far"]["per_seed"][0][0][0][0] -= 0.01
            monkey = copy.deepcopy(record)
            monkey.pop("reruns")
            monkey["test_set"]["fingerprints"]["lr 0.01"] = "0" * 12
        grid._drop_stale_reruns(monkey)
        assert "test_set" not in monkey and not stored.exists()


def test_a_long_methods_rerun_needs_a_main_grid_rerun_from_its_cpu():
    grid = _grid_tool()
    record = json.loads(grid.RECORD.read_text())
    other = {"long_methods": copy.deepcopy(record["long_methods"])}
    other["long_methods"].pop("reruns")
    with pytest.raises(ValueError, match="where must name the CPU"):
        grid._compare_long_base(record, other, "another CPU, long_methods", "long_methods")
    where = next(iter(record["long_methods"]["reruns"]))
    grid._compare_long_base(record, other, where, "long_methods")
    assert record["long_methods"]["reruns"][where] == record["long_methods"]["curves"]
