"""The inspector on released config files of families the course does not store.

``course_utils/data/config_corpus.json`` holds released ``config.json`` files read from public
copies (each entry names its repository, path and commit). For each, the inspector gives either a
plan equal to transformers' (layer kinds from the config class; inverse frequencies and attention
factor from the model's rotary class, to float32 rounding) or a one-line refusal naming the
reason, and never a traceback, also when its output is piped into a reader that stops early.
"""

import importlib
import json
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest
from conftest import closed_stdout, stdout_went_to_devnull
from test_reference_configs import _assert_rope_layers_match, _rotary

from course_utils.explain import position_plan
from course_utils.explain.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")

CORPUS = json.loads(resources.files("course_utils.data").joinpath("config_corpus.json").read_text())
NAMES = [entry["name"] for entry in CORPUS]


def _entry(name):
    return next(entry for entry in CORPUS if entry["name"] == name)


def _write(tmp_path, name):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_entry(name)["config"]))
    return path


def test_every_entry_names_its_source():
    assert len(set(NAMES)) == len(NAMES)
    for entry in CORPUS:
        source = entry["source"]
        assert source["repo"].count("/") == 1 and source["path"] and source["note"], entry["name"]
        assert entry["checkpoint"] and entry["config"].get("model_type"), entry["name"]


def _assert_plan_or_refusal(code, out, err):
    assert "Traceback" not in out + err, err
    if code == 0:
        assert out.strip() and not err, err
    else:
        assert code == 2 and err.startswith("error: "), err
        # one message (wrapped at 88 columns, as every refusal of the command) naming the reason
        assert err.count("error: ") == 1 and ":" in err[len("error: "):], err


# Every entry runs through the command's own entry point in this process (an exception would fail
# the test with its traceback); the command as a separate process runs once per outcome below.
@pytest.mark.parametrize("name", NAMES)
def test_plan_or_one_line_refusal_never_a_traceback(name, tmp_path, capsys):
    code = main([str(_write(tmp_path, name))])
    out, err = capsys.readouterr()
    _assert_plan_or_refusal(code, out, err)


@pytest.mark.parametrize("name", NAMES)
def test_output_into_a_closed_pipe_is_not_a_traceback(name, tmp_path, capsys, monkeypatch):
    with closed_stdout(monkeypatch) as stream:
        code = main([str(_write(tmp_path, name))])
        if code == 0:  # the plan met the closed pipe; stdout now points at the null device
            assert stdout_went_to_devnull(stream), name
    assert "Traceback" not in capsys.readouterr().err


# A plan from the file alone (with or without transformers' class defaults), and a refusal.
@pytest.mark.parametrize("name", ["Qwen2 72B Instruct", "ChatGLM 6B"])
def test_the_command_itself(name, tmp_path):
    path = _write(tmp_path, name)
    proc = subprocess.run([sys.executable, "-m", "course_utils.explain", str(path)],
                          capture_output=True, text=True, check=False)
    _assert_plan_or_refusal(proc.returncode, proc.stdout, proc.stderr)
    assert (proc.returncode == 0) == (name == "Qwen2 72B Instruct"), proc.stderr
    if proc.returncode == 0:  # a plan, into a pipe that head closes after one line
        piped = subprocess.run(f'"{sys.executable}" -m course_utils.explain "{path}" | head -1',
                               shell=True, capture_output=True, text=True, check=False)
        assert piped.stdout.strip() and "Traceback" not in piped.stderr, piped.stderr


@pytest.mark.parametrize("name", NAMES)
def test_plan_equals_transformers(name, transformers, torch):
    cfg = _entry(name)["config"]
    try:
        plan = position_plan(cfg)
    except ValueError:
        return  # refused: the test above checks the message
    config = transformers.AutoConfig.for_model(**cfg).get_text_config()
    if plan.scheme is not None:
        assert not plan.layers, name  # no RoPE layer claimed; transformers' model has no rotary class
        with pytest.raises(AssertionError, match="no rotary class"):
            _rotary(torch, config)
        return
    if getattr(config, "layer_types", None) is not None:
        assert plan.layer_types() == list(config.layer_types), name
    assert len(plan.layers) == config.num_hidden_layers, name
    if config.model_type in ("gptj", "codegen"):  # no rotary class: the module's own sin table
        _assert_rotary_dim_table(plan, config, name)
        return
    _assert_rope_layers_match(plan, _rotary(torch, config), name)


def _assert_rotary_dim_table(plan, config, name):
    """GPT-J and CodeGen rotate ``rotary_dim`` channels with the module-level table
    ``create_sinusoidal_positions``; the sine at position 1 gives the frequencies."""
    module = importlib.import_module(type(config).__module__.replace("configuration_", "modeling_"))
    layer = plan.layers[0]
    assert layer.rotary_dim == config.rotary_dim, name
    table = module.create_sinusoidal_positions(2, config.rotary_dim).double().numpy()
    np.testing.assert_allclose(layer.inv_freq, np.arcsin(table[1, :config.rotary_dim // 2]),
                               rtol=2e-6, err_msg=name)
