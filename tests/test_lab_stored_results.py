"""The stored experiment of the length-generalisation lab: write, read back, refuse a mismatch."""

import json
import pathlib

import numpy as np
import pytest

from course_utils.lab.tasks import make_task
from course_utils.lab.train import (
    LENGTH_LAB,
    read_experiment,
    run_experiment,
    write_experiments,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
COPY = make_task("copy_back", k=1, n_symbols=4)
RECALL = make_task("recall", n_keys=4, n_values=4)
SETTINGS = {"schemes": ("learned", "rope"), "train_length": 8, "multipliers": (1, 2),
            "seeds": (0, 1), "steps": 6, "variants": {"RoPE, base 3.5": {
                "scheme": "rope", "rope_base": 3.5}}, "d_model": 16, "n_heads": 2, "d_mlp": 16}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("lab1") / "results.json"
    runs = {task.name: (run_experiment(task, **SETTINGS, workers=1, progress=False), SETTINGS)
            for task in (COPY, RECALL)}
    write_experiments(path, runs, meta={"command": "test"}, params_of=("copy_back",))
    return path, runs


def test_round_trip_keeps_every_number_bit_for_bit(stored):
    path, runs = stored
    for task in (COPY, RECALL):
        original, back = runs[task.name][0], read_experiment(path, task, SETTINGS)
        assert back.schemes == original.schemes == ("learned", "rope", "RoPE, base 3.5")
        assert (back.lengths, back.seeds, back.train_length) == (
            original.lengths, original.seeds, original.train_length)
        np.testing.assert_array_equal(back.accuracy, original.accuracy)  # NaN where learned
        assert np.isnan(back.accuracy[0, 1]).all() and not np.isnan(back.accuracy[1]).any()
        np.testing.assert_array_equal(back.losses, original.losses)
        for name in original.schemes:
            assert back.models[name][0] == original.models[name][0]  # the ModelConfig
    copy_back, original = read_experiment(path, COPY), runs["copy_back"][0]
    assert copy_back.models["RoPE, base 3.5"][0].rope_base == 3.5
    for name in original.schemes:
        for (_, params), (_, kept) in zip(original.trained[name], copy_back.trained[name],
                                          strict=True):
            assert set(params) == set(kept)
            for key in params:
                np.testing.assert_array_equal(kept[key], params[key])
    recall = read_experiment(path, RECALL)  # parameters not stored for this task
    assert all(params is None for _, params in recall.trained["rope"])


@pytest.mark.parametrize("change", [{"steps": 7}, {"seeds": (0, 2)}, {"multipliers": (1, 4)},
                                    {"variants": {"RoPE, base 3.5": {"scheme": "rope",
                                                                      "rope_base": 3.6}}}])
def test_a_record_made_with_other_settings_is_refused(stored, change):
    path, _ = stored
    key = next(iter(change))
    with pytest.raises(ValueError, match=rf"settings\['{key}'\]"):
        read_experiment(path, COPY, SETTINGS | change)


def test_another_task_is_refused(stored):
    path, _ = stored
    with pytest.raises(ValueError, match="task"):
        read_experiment(path, make_task("copy_back", k=2, n_symbols=4))
    with pytest.raises(ValueError, match="recall_latest"):
        read_experiment(path, make_task("recall_latest"))


def test_the_repository_record_matches_the_lab_settings():
    """course_utils/data/records/lab1_results.json was made from LENGTH_LAB, the settings notebook 09 uses."""
    record = json.loads((ROOT / "course_utils" / "data" / "records" / "lab1_results.json").read_text())
    assert record["command"].startswith("python tools/lab1_results.py")
    assert record["seeds"] == list(LENGTH_LAB["seeds"])
    for name, task_settings in LENGTH_LAB["tasks"].items():
        task = make_task(name, **task_settings)
        settings = {key: LENGTH_LAB[key] for key in ("train_length", "multipliers", "seeds",
                                                     "steps", "variants")}
        experiment = read_experiment(ROOT / "course_utils" / "data" / "records" / "lab1_results.json", task, settings)
        assert experiment.accuracy.shape == (7, 4, 3)
        assert experiment.losses.shape == (7, 3, LENGTH_LAB["steps"])
