"""Every stored released config: the position plan agrees with what transformers builds from it.

For each file in ``course_utils/data/configs``, transformers instantiates the config class
(``AutoConfig.for_model``; a multimodal config through ``get_text_config()``) and the model's
rotary class (``<Model>RotaryEmbedding(config)``, which calls the rope-init functions of
``modeling_rope_utils``). The plan of :func:`course_utils.explain.position_plan` must give,
per layer type, the same inverse frequencies and attention factor, and the same layer types as
the config class's ``layer_types`` where the class has that attribute.

Where transformers and the authors' code read a released config differently, the course follows
transformers (it is what the stored files are run with) and the test names the difference:

* Phi-3-mini: transformers applies ``sliding_window`` (2047 tokens in the 4k model) on every
  layer, as the authors' modeling_phi3.py on the hub did; the report does not mention it.
* Phi-3-mini 128k, in the stored revision of its file, names its scaling ``"type": "su"``.
  transformers 5.23 renames ``su`` to ``longrope`` only after the step that copies
  ``original_max_position_embeddings`` into the RoPE parameters, and then rejects the file for
  lacking it. The course reads ``su`` as ``longrope`` with the file's top-level
  ``original_max_position_embeddings`` (what the later revision of the file, ``"longrope"``,
  makes transformers do), and the test gives transformers that revision.
* DeepSeek-V3: transformers multiplies the softmax scale by ``mscale(s, mscale_all_dim)^2`` and
  puts ``attention_factor = mscale / mscale_all_dim = 1`` on cos and sin, as the authors'
  ``inference/model.py`` does (``softmax_scale *= mscale ** 2``); checked below.
* Llama 4 Scout: its file states no ``attn_temperature_tuning``. transformers'
  ``Llama4TextConfig`` defaults it to True, so the NoPE layers scale their queries (notebook 11,
  eq. 2); Meta's reference code has the same scaling off by default (``ModelArgs`` in
  ``models/llama4/args.py`` of meta-llama/llama-models), and neither states which the released
  weights were trained with. The course follows transformers, labels the value a class default,
  and the plan's temperature is checked against transformers' query scales
  (``test_reference_modern.py``).

The Phi-3-mini item is an agreement, listed because the report is silent on it.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from course_utils.data.released import released_config, released_config_names
from course_utils.explain import position_plan

NAMES = released_config_names()


def _as_transformers_reads(name, cfg):
    """The file as given to transformers: the stored one, but for the differences above."""
    if name == "phi3_mini_128k":
        return {**cfg, "rope_scaling": {**cfg["rope_scaling"], "type": "longrope"}}
    return cfg


def _hf_config(transformers, cfg):
    outer = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items()})
    return outer.get_text_config()  # itself for a text-only class; Qwen2.5-VL's file is flat


def _rotary(torch, config):
    module = importlib.import_module(type(config).__module__.replace("configuration_", "modeling_"))
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n]
    names.sort(key=lambda n: ("Text" not in n, len(n)))
    assert names, f"no rotary class in {module.__name__}"
    return getattr(module, names[0])(config)


def _reference(rotary, layer_type):
    per_type = getattr(rotary, f"{layer_type}_inv_freq", None)
    if per_type is not None:
        return per_type, getattr(rotary, f"{layer_type}_attention_scaling")
    return rotary.inv_freq, rotary.attention_scaling


def _assert_rope_layers_match(plan, reference, label):
    """Every RoPE layer kind of ``plan``: inverse frequencies to float32 rounding and the
    attention factor equal ``reference(layer_type)`` (a rotary module, or a callable giving
    ``(inv_freq, attention_factor)`` for a layer type)."""
    if hasattr(reference, "forward"):  # a rotary module, itself callable with other arguments
        rotary = reference
        reference = lambda layer_type: _reference(rotary, layer_type)  # noqa: E731
    for layer_type, layer in plan.by_layer_type().items():
        if not layer.rope:
            continue
        inv_freq, attention = reference(layer_type)
        np.testing.assert_allclose(layer.inv_freq, inv_freq.double().numpy(), rtol=2e-6,
                                   err_msg=f"{label} {layer_type}")
        assert layer.attention_factor == pytest.approx(float(attention), rel=1e-6), label


@pytest.mark.parametrize("name", NAMES)
def test_plan_matches_transformers(name, transformers, torch):
    cfg = released_config(name).config
    plan = position_plan(cfg)
    config = _hf_config(transformers, _as_transformers_reads(name, cfg))
    class_types = getattr(config, "layer_types", None)
    if class_types is not None:
        assert plan.layer_types() == list(class_types), name
    assert len(plan.layers) == config.num_hidden_layers
    _assert_rope_layers_match(plan, _rotary(torch, config), name)


def test_phi3_su_revision_is_rejected_by_transformers(transformers):
    """The difference named above is real: transformers 5.23 cannot load the stored revision."""
    with pytest.raises(KeyError, match="original_max_position_embeddings"):
        _hf_config(transformers, released_config("phi3_mini_128k").config)


def test_nope_layers_match_the_model(transformers, torch):
    """Llama 4 and SmolLM3 layers without RoPE: the plan's flags are the model's ``use_rope``."""
    for name in NAMES:
        cfg = released_config(name).config
        config = _hf_config(transformers, _as_transformers_reads(name, cfg))
        flags = getattr(config, "no_rope_layers", None)
        if flags is None:
            continue
        plan = position_plan(cfg)
        assert [int(layer.rope) for layer in plan.layers] == list(flags), name


def test_deepseek_softmax_scale_is_the_attention_module_s(transformers, torch):
    """DeepSeek-V3: the plan's softmax scale is ``DeepseekV3Attention.scaling``."""
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention

    cfg = released_config("deepseek_v3").config
    config = _hf_config(transformers, cfg)
    with torch.device("meta"):
        attention = DeepseekV3Attention(config, layer_idx=0)
    plan = position_plan(cfg)
    assert plan.layers[0].extras["softmax scale"] == pytest.approx(attention.scaling, rel=1e-7)


def test_class_defaults_are_the_class_s(transformers):
    """A value the file omits is labelled with the class's default, read from the class."""
    for name in NAMES:
        cfg = released_config(name).config
        plan = position_plan(cfg)
        config = _hf_config(transformers, _as_transformers_reads(name, cfg))
        for key, value in plan.values.items():
            assert key not in cfg.get("text_config", cfg) or value.source.startswith("file"), key
            if value.source.startswith("class default"):
                assert value.source == "class default (transformers " + ".".join(
                    transformers.__version__.split(".")[:2]) + ")"
                if key in ("head_dim", "max_position_embeddings", "sliding_window"):
                    assert getattr(config, key) == value.value, (name, key)


def test_unseen_llama4_style_config_matches_transformers(transformers, torch):
    """A Llama 4 Scout-Instruct-like text config (10M positions, not stored): NoPE every 4th
    layer, chunked attention elsewhere, llama3 scaling with equal low and high factors."""
    cfg = {"model_type": "llama4_text", "num_hidden_layers": 8, "hidden_size": 512,
           "num_attention_heads": 4, "head_dim": 128, "attention_chunk_size": 8192,
           "no_rope_layers": [], "rope_theta": 500000.0, "max_position_embeddings": 10485760,
           "attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1,
           "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
    plan = position_plan(cfg)
    config = transformers.AutoConfig.for_model(**cfg)
    assert plan.layer_types() == list(config.layer_types)
    assert [int(layer.rope) for layer in plan.layers] == list(config.no_rope_layers)
    rotary = _rotary(torch, config)
    layer = plan.by_layer_type()["chunked_attention"]
    np.testing.assert_allclose(layer.inv_freq, rotary.inv_freq.double().numpy(), rtol=2e-6)
    assert layer.attention_factor == pytest.approx(float(rotary.attention_scaling))


UNSEEN = [  # files without layer_types, whose pattern the plan takes from a rule of the code
    {"model_type": "gemma2", "num_hidden_layers": 6, "head_dim": 16, "hidden_size": 64,
     "num_attention_heads": 4, "sliding_window": 64, "max_position_embeddings": 256},
    {"model_type": "olmo3", "num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4,
     "rope_theta": 5e5, "max_position_embeddings": 256,
     "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}},
    {"model_type": "gemma4_text", "num_hidden_layers": 7, "head_dim": 16, "hidden_size": 64,
     "num_attention_heads": 4, "max_position_embeddings": 256},
    {"model_type": "qwen2_moe", "num_hidden_layers": 6, "hidden_size": 64,
     "num_attention_heads": 4, "use_sliding_window": True, "sliding_window": 32,
     "max_window_layers": 4, "max_position_embeddings": 256},
    {"model_type": "qwen2", "num_hidden_layers": 6, "hidden_size": 64, "num_attention_heads": 4,
     "use_sliding_window": True, "sliding_window": 32, "max_window_layers": 2,
     "max_position_embeddings": 256},
    {"model_type": "qwen3_moe", "num_hidden_layers": 3, "hidden_size": 64, "head_dim": 16,
     "num_attention_heads": 4, "use_sliding_window": True, "sliding_window": 32,
     "max_position_embeddings": 256},
    {"model_type": "mistral", "num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
     "sliding_window": 32, "max_position_embeddings": 256},
]


@pytest.mark.parametrize("cfg", UNSEEN, ids=[c["model_type"] for c in UNSEEN])
def test_rule_derived_layers_match_transformers(cfg, transformers, torch):
    """The rules the plan applies where a file lists no layer_types give the layer types the
    config class builds (or, for models without layer_types, a window on every layer exactly
    when the config keeps a sliding_window), and the frequencies of its rotary class."""
    plan = position_plan(cfg)
    config = transformers.AutoConfig.for_model(**cfg)
    class_types = getattr(config, "layer_types", None)
    if class_types is not None:
        assert plan.layer_types() == list(class_types)
    else:
        window = getattr(config, "sliding_window", None)
        assert plan.layer_types() == [
            "sliding_attention" if window else "full_attention"] * config.num_hidden_layers
    assert plan.values["layer_types"].source.startswith("rule of transformers 5.23 ")
    assert all(layer.rope for layer in plan.layers)
    _assert_rope_layers_match(plan, _rotary(torch, config), cfg["model_type"])


def test_gemma4_global_head_dim_class_default(transformers):
    """Gemma 4's full layers take global_head_dim; a file without it gets the keyword default
    of Gemma4TextConfig.__post_init__, labelled a class default (or an error naming the key)."""
    cfg = UNSEEN[2]
    plan = position_plan(cfg)
    config = transformers.AutoConfig.for_model(**cfg)
    assert plan.by_layer_type()["full_attention"].head_dim == \
        config.per_layer_config["full_attention"].head_dim
    assert plan.values["global_head_dim"].source.startswith("class default")
    assert plan.values["rope_parameters"].source.startswith("class default")
    with pytest.raises(ValueError, match="rope_parameters: not in the file"):
        position_plan(cfg, class_defaults=False)
    stated = {**cfg, "rope_parameters": config.rope_parameters}  # the file states them now
    with pytest.raises(ValueError, match="global_head_dim: not in the file"):
        position_plan(stated, class_defaults=False)


def test_deepseek_v3_rope_scaling_as_the_released_file_has_it():
    """The released config.json writes beta_fast 32, beta_slow 1 and factor 40 as integers and
    has no rope_theta inside rope_scaling (the copy named in the file's checked_against); the
    conversion script's re-serialized copy it was first read from had floats and an inner theta."""
    stored = released_config("deepseek_v3")
    scaling = stored.config["rope_scaling"]
    assert {k: (v, type(v)) for k, v in scaling.items() if k in ("beta_fast", "beta_slow",
                                                                "factor")} == {
        "beta_fast": (32, int), "beta_slow": (1, int), "factor": (40, int)}
    assert "rope_theta" not in scaling
    assert "rope_scaling" in stored.source["checked_against"]["same_values"]
