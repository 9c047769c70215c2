"""The inspector on configs no other test uses: every config class transformers registers.

Each class's defaults, serialised as a ``config.json`` (``cls().to_dict()``), is a config of a
family the course may never have read (Cohere2, EXAONE 4, Falcon, GPT-J, CodeGen, GPT-2, BERT,
T5, Jamba, Mixtral, StableLM, Starcoder2, ...). The inspector must give either a plan equal to
transformers' own (layer types from the config class; inverse frequencies and attention factor
from the model's rotary class, to float32 rounding) or a refusal naming the reason, and never a
traceback.
"""

import contextlib
import io
import json
import logging
import warnings

import pytest
from conftest import closed_stdout, stdout_went_to_devnull
from test_reference_configs import _assert_rope_layers_match, _rotary

from course_utils.explain import main, position_plan

pytestmark = pytest.mark.filterwarnings("ignore")


def _class_default_configs(transformers):
    """``{model_type: config dict}`` for every registered class that builds without arguments."""
    out = {}
    logging.disable(logging.WARNING)
    try:
        for model_type in sorted(transformers.CONFIG_MAPPING.keys()):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cfg = transformers.CONFIG_MAPPING[model_type]().to_dict()
                out[model_type] = json.loads(json.dumps(cfg, default=str))
            except Exception:  # a class that needs arguments, or values JSON cannot hold
                continue
    finally:
        logging.disable(logging.NOTSET)
    return out


@pytest.fixture(scope="module")
def corpus(transformers):
    configs = _class_default_configs(transformers)
    assert len(configs) > 300  # transformers 5.23 registers about 800 types
    return configs


def test_every_config_gets_a_plan_or_a_refusal_never_a_traceback(corpus, tmp_path):
    path = tmp_path / "config.json"
    planned, refused = 0, 0
    for model_type, cfg in corpus.items():
        path.write_text(json.dumps(cfg))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(path)])
        if code == 0:
            planned += 1
            assert out.getvalue() and not err.getvalue(), model_type
        else:
            refused += 1
            text = err.getvalue()
            assert code == 2 and text.startswith("error: ") and text.count("error: ") == 1, (
                model_type, text)
            assert ":" in text[len("error: "):], model_type  # the field or reason is named
        assert "Traceback" not in out.getvalue() + err.getvalue(), model_type
    assert planned >= 100 and refused >= 100, (planned, refused)


def test_planned_configs_equal_transformers(corpus, transformers, torch):
    """Layer kinds, frequencies and attention factor of every RoPE plan are transformers'."""
    compared = []
    for model_type, cfg in corpus.items():
        try:
            plan = position_plan(cfg)
        except ValueError:
            continue  # refused: the test above checks the message
        if plan.scheme is not None:
            continue  # a one-line plan of a scheme without RoPE
        config = transformers.AutoConfig.for_model(**cfg).get_text_config()
        if getattr(config, "layer_types", None) is not None:
            assert plan.layer_types() == list(config.layer_types), model_type
        assert len(plan.layers) == config.num_hidden_layers, model_type
        if model_type in ("gptj", "codegen"):  # a module-level table, compared in test_explain
            continue
        _assert_rope_layers_match(plan, _rotary(torch, config), model_type)
        compared.append(model_type)
    assert len(compared) >= 80, len(compared)
    assert {"cohere2", "exaone4", "mixtral", "stablelm", "starcoder2", "phi3"} <= set(compared)


@pytest.mark.parametrize("model_type", ["gpt2", "bert", "t5", "jamba", "falcon", "cohere2"])
def test_piped_output_of_unseen_families_is_not_a_traceback(model_type, transformers, tmp_path,
                                                            capsys, monkeypatch):
    cfg = json.loads(json.dumps(transformers.CONFIG_MAPPING[model_type]().to_dict(),
                                default=str))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with closed_stdout(monkeypatch) as stream:
        code = main([str(path)])
        assert code == 0 and stdout_went_to_devnull(stream), model_type
    assert "Traceback" not in capsys.readouterr().err
