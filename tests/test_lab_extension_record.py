"""The stored core run of the context-extension lab: write, read back, refuse a mismatch."""

import dataclasses
import json

import numpy as np
import pytest

from course_utils.data import experiment_record_path
from course_utils.lab.extension import (
    CONTEXT_LAB,
    ContextExtension,
    read_extension,
    run_context_extension,
    write_extension,
)
from course_utils.lab.model import ModelConfig
from course_utils.lab.tasks import make_task

TASK = make_task("recall_latest", n_keys=3, n_values=4)
CONFIG = ModelConfig(scheme="rope", vocab_size=TASK.vocab_size, d_model=16, n_heads=2, d_mlp=16,
                     rope_base=3.5)
SETTINGS = {"train_length": 8, "multipliers": (2,), "methods": ("rope", "yarn"),
            "checkpoints": (0, 2), "seeds": (0, 1), "steps": 4, "n_test": 8,
            "yarn_params": (("beta_fast", 8.0),)}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("lab2") / "core.json"
    run = run_context_extension(TASK, CONFIG, **SETTINGS, workers=1, progress=False)
    write_extension(path, run, SETTINGS, meta={"command": "test"})
    return path, run


def test_round_trip_keeps_every_field_bit_for_bit(stored):
    path, run = stored
    back = read_extension(path, TASK, CONFIG, SETTINGS)
    for field in dataclasses.fields(ContextExtension):
        mine, theirs = getattr(run, field.name), getattr(back, field.name)
        if isinstance(mine, np.ndarray):
            assert mine.dtype == theirs.dtype, field.name
            np.testing.assert_array_equal(theirs, mine, err_msg=field.name)
        elif field.name == "baseline_dist":
            assert set(mine) == set(theirs)
            for key in mine:
                np.testing.assert_array_equal(theirs[key], mine[key])
        elif field.name == "base_models":
            for (config, params), (kept_config, kept) in zip(mine, theirs, strict=True):
                assert kept_config == config and set(kept) == set(params)
                for key in params:
                    np.testing.assert_array_equal(kept[key], params[key])
        else:
            assert theirs == mine, field.name
    assert back.settings["yarn_params"] == (("beta_fast", 8.0),)
    assert json.loads(path.read_text())["command"] == "test"


@pytest.mark.parametrize("change", [{"steps": 5}, {"seeds": (0, 2)}, {"checkpoints": (0, 3)},
                                    {"methods": ("rope", "pi")}, {"tune_lr": 2e-3}])
def test_a_record_made_with_other_settings_is_refused(stored, change):
    path, _ = stored
    key = next(iter(change))
    with pytest.raises(ValueError, match=rf"settings\['{key}'\]"):
        read_extension(path, TASK, CONFIG, SETTINGS | change)


def test_another_task_or_config_is_refused(stored):
    path, _ = stored
    with pytest.raises(ValueError, match="^task"):
        read_extension(path, make_task("recall_latest", n_keys=4, n_values=4))
    with pytest.raises(ValueError, match="^config"):
        read_extension(path, TASK, dataclasses.replace(CONFIG, rope_base=3.6))


def test_bad_arguments_are_named(stored, tmp_path):
    path, run = stored
    with pytest.raises(TypeError, match="run must be"):
        write_extension(tmp_path / "x.json", "run", SETTINGS)
    with pytest.raises(TypeError, match="settings must be"):
        write_extension(tmp_path / "x.json", run, None)
    with pytest.raises(ValueError, match="path"):
        read_extension(tmp_path / "missing.json", TASK)
    with pytest.raises(TypeError, match="task must be"):
        read_extension(path, "recall_latest")


def test_the_repository_record_matches_the_lab_settings():
    """records/lab2_core.json was made from CONTEXT_LAB, the settings notebook 12 passes."""
    path = experiment_record_path("lab2_core.json")
    record = json.loads(path.read_text())
    assert record["command"].startswith("python tools/lab2_core.py")
    task = make_task(**CONTEXT_LAB["task"])
    config = ModelConfig(scheme="rope", vocab_size=task.vocab_size,
                         rope_base=CONTEXT_LAB["rope_base"])
    run = read_extension(path, task, config, CONTEXT_LAB["settings"])
    assert run.correct.shape == (6, 2, 4, 3, 64) and run.tune_losses.shape == (6, 2, 3, 100)
    assert len(run.base_models) == 3 and run.settings["scratch"]
