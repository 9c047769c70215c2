"""The position-plan inspector on configs it has never seen, on broken files, and its command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils.data import library_record, library_record_names
from course_utils.data.released import released_config, released_config_names
from course_utils.explain import fold_layers, format_plan, main, plan_summary, position_plan
from course_utils.explain.rotary import LINEAR_SOURCE
from course_utils.rope import rope_inv_freq
from course_utils.scaling import rope_scaling

LLAMA_STYLE = {  # a plain Llama-style file, every position key given
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
    "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 6,
    "max_position_embeddings": 8192, "rope_theta": 250000.0, "rope_scaling": None,
    "vocab_size": 32000, "rms_norm_eps": 1e-5,
}
MULTIMODAL = {  # a vision-language file whose text part has two bases and a window
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "mm_tokens_per_image": 256,
    "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 8, "head_dim": 64,
                    "hidden_size": 512, "num_attention_heads": 8, "sliding_window": 256,
                    "sliding_window_pattern": 4, "rope_theta": 1000000.0,
                    "rope_local_base_freq": 10000.0, "max_position_embeddings": 4096,
                    "rope_scaling": {"rope_type": "linear", "factor": 4.0}},
    "vision_config": {"hidden_size": 1152},
}


def _write(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


def test_fold_layers_runs_and_singletons():
    assert fold_layers([0, 1, 2, 4]) == "0-2, 4"
    assert fold_layers([5]) == "5"
    assert fold_layers([i for i in range(26) if (i + 1) % 6]) == "0-4, 6-10, 12-16, 18-22, 24-25"
    assert fold_layers(range(0, 40, 2)) == "0, 2, 4, 6, ..., 38"


def test_unseen_llama_style_file(tmp_path):
    plan = position_plan(_write(tmp_path, LLAMA_STYLE), class_defaults=False)
    assert plan.layer_types() == ["full_attention"] * 6
    layer = plan.layers[0]
    assert (layer.rope, layer.head_dim, layer.rotary_dim, layer.base) == (True, 128, 128, 250000.0)
    np.testing.assert_allclose(layer.inv_freq, rope_inv_freq(128, base=250000.0))
    # pairs completing a turn within 8192 positions, counted by brute force over the ladder
    turning = sum(1 for i in range(64) if 2 * np.pi * 250000.0 ** (2 * i / 128) <= 8192)
    assert layer.turning_pairs == turning
    assert plan.values["head_dim"].source.startswith("derived")
    assert plan.values["rope_theta"].source == "file"
    assert {"vocab_size", "rms_norm_eps", "num_key_value_heads"} <= set(plan.not_interpreted)
    text = format_plan(plan)
    assert "layers 0-5: full attention, RoPE base 250 000, head dim 128" in text
    assert "not interpreted:" in text


def test_unseen_multimodal_file_read_through_text_config(tmp_path):
    plan = position_plan(_write(tmp_path, MULTIMODAL), class_defaults=False)
    assert plan.text_config
    assert plan.layer_types() == ["sliding_attention"] * 3 + ["full_attention"] + \
        ["sliding_attention"] * 3 + ["full_attention"]
    local, globl = plan.layers[0], plan.layers[3]
    assert (local.span, local.base, local.scaling) == (256, 10000.0, None)
    assert (globl.span, globl.base, globl.scaling) == (None, 1000000.0, "linear")
    np.testing.assert_allclose(globl.inv_freq, rope_inv_freq(64, base=1e6) / 4.0)
    assert "(outside text_config) mm_tokens_per_image" in plan.not_interpreted
    assert "(outside text_config) vision_config" in plan.not_interpreted
    text = format_plan(plan)
    assert "layers 0-2, 4-6: sliding 256, RoPE base 10 000" in text
    assert "layers 3, 7: full attention, RoPE base 1 000 000, head dim 64, linear (factor 4.0)" in text


def test_yarn_layer_uses_the_course_scaling_function():
    cfg = {**LLAMA_STYLE, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                           "original_max_position_embeddings": 2048}}
    layer = position_plan(cfg, class_defaults=False).layers[0]
    inv, attn = rope_scaling("yarn", 128, base=250000.0, factor=4.0,
                             original_max_position_embeddings=2048)
    np.testing.assert_allclose(layer.inv_freq, inv)
    assert layer.attention_factor == pytest.approx(attn)
    assert layer.context == 2048


def test_nope_layers_and_chunks():
    cfg = {"model_type": "llama4_text", "num_hidden_layers": 8, "head_dim": 64,
           "attention_chunk_size": 1024, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0],
           "rope_theta": 500000.0, "attn_temperature_tuning": True, "floor_scale": 8192,
           "attn_scale": 0.1, "max_position_embeddings": 4096}
    plan = position_plan(cfg, class_defaults=False)
    assert plan.layer_types()[3] == "full_attention" and plan.layers[3].rope is False
    assert plan.layers[0].attention == "chunked" and plan.layers[0].span == 1024
    assert "temperature" in plan.layers[3].extras
    assert "layers 3, 7: full attention, NoPE" in format_plan(plan)


@pytest.mark.parametrize("config, field", [
    ({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64}, "head_dim"),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}, "num_hidden_layers"),
    ({**LLAMA_STYLE, "rope_scaling": {"rope_type": "stretchy", "factor": 2.0}}, "rope_scaling"),
    ({**LLAMA_STYLE, "rope_scaling": {"type": "linear"}}, "rope_scaling.factor"),
    ({**LLAMA_STYLE, "layer_types": ["full_attention"] * 5}, "layer_types"),
    ({**LLAMA_STYLE, "layer_types": ["full_attention"] * 5 + ["global"]}, "layer_types"),
    ({**LLAMA_STYLE, "model_type": "smollm3", "no_rope_layers": [1, 0]}, "no_rope_layers"),
    ({**LLAMA_STYLE, "rope_theta": "big"}, "rope_theta"),
    ({**LLAMA_STYLE, "rope_theta": -1.0}, "rope_theta"),
    ({**LLAMA_STYLE, "hidden_size": 2050}, "hidden_size"),
    ({**LLAMA_STYLE, "partial_rotary_factor": 1.5}, "partial_rotary_factor"),
    ({**LLAMA_STYLE, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                      "original_max_position_embeddings": 1024}},
     "rope_scaling"),
    ({**LLAMA_STYLE, "rope_scaling": [1, 2]}, "rope_scaling"),
    ({**LLAMA_STYLE, "text_config": "llama"}, "text_config"),
])
def test_broken_configs_name_the_field(config, field):
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace(".", r"\.")):
        position_plan(config, class_defaults=False)


def test_not_json_and_not_a_config(tmp_path):
    with pytest.raises(ValueError, match=r"config\.json is not JSON \(.*line 1"):
        position_plan(_write(tmp_path, "{'model_type': llama}"))
    with pytest.raises(ValueError, match="cannot read"):
        position_plan(tmp_path / "missing.json")
    with pytest.raises(TypeError, match="config must be"):
        position_plan(["model_type", "llama"])


def test_command_prints_the_plan_and_rejects_broken_files(tmp_path, capsys):
    assert main([str(_write(tmp_path, LLAMA_STYLE)), "--no-class-defaults"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("model_type llama, 6 layers")
    assert main([str(_write(tmp_path, "not json", "bad.json"))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: config: bad.json is not JSON")
    assert main([str(_write(tmp_path, {**LLAMA_STYLE, "layer_types": []}, "b2.json")),
                 "--no-class-defaults"]) == 2
    assert "layer_types" in capsys.readouterr().err


def test_command_plot(tmp_path, capsys):
    png = tmp_path / "plan.png"
    assert main([str(_write(tmp_path, MULTIMODAL)), "--no-class-defaults", "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000
    assert "figure saved" in capsys.readouterr().out


def test_class_default_is_labelled_with_the_version(transformers):
    """Without rope_theta, the Llama class default applies and says so."""
    cfg = {k: v for k, v in LLAMA_STYLE.items() if k != "rope_theta"}
    plan = position_plan(cfg)
    version = ".".join(transformers.__version__.split(".")[:2])
    assert plan.values["rope_theta"].source == f"class default (transformers {version})"
    assert plan.layers[0].base == transformers.LlamaConfig.default_theta
    text = format_plan(plan)
    assert f"class default (transformers {version}): rope_theta" in text
    with pytest.raises(ValueError, match="rope_theta: not in the file"):
        position_plan(cfg, class_defaults=False)


@pytest.mark.parametrize("name", ["gemma3_4b", "deepseek_v3", "phi3_mini_128k", "gemma4_26b",
                                  "qwen3_next_80b_a3b", "gpt_oss_20b"])
def test_mangled_released_files_fail_with_a_named_field(name):
    """Every key of a released file, deleted or set to a wrong value: the plan is made or a
    ValueError/TypeError is raised, never an error from deeper down (or a huge allocation)."""
    import copy

    from course_utils.data.released import released_config

    base = released_config(name).config
    keys = list(base.get("text_config", base))
    for key in keys:
        for bad in (None, "x", -3, 0, 1.5, [], {}, True, 10**30, float("nan"), "<deleted>"):
            cfg = copy.deepcopy(base)
            text = cfg.get("text_config", cfg)
            if bad == "<deleted>":
                del text[key]
            else:
                text[key] = bad
            try:
                format_plan(position_plan(cfg, class_defaults=False))
            except (TypeError, ValueError) as exc:
                assert str(exc)


def test_plan_summary_counts_layers_and_rope_settings():
    cfg = {**MULTIMODAL["text_config"]}
    summary = plan_summary(position_plan(cfg, class_defaults=False))
    # 8 layers, every 4th global: 6 sliding, 2 full; local base 1e4, global 1e6 scaled by 4
    assert summary == {"attention": "6 sliding 256, 2 full",
                       "rope": "10k (sliding) / 1M, linear x4 (full)"}
    nope = {"model_type": "llama4_text", "num_hidden_layers": 8, "head_dim": 64,
            "attention_chunk_size": 1024, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0],
            "rope_theta": 500000.0, "max_position_embeddings": 4096}
    assert plan_summary(position_plan(nope, class_defaults=False)) == {
        "attention": "6 chunked 1024, 2 full", "rope": "500k; NoPE in 2"}


def test_draw_plan_leaves_nope_layers_blank():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils.explain import draw_plan
    cfg = {"model_type": "llama4_text", "num_hidden_layers": 4, "head_dim": 8,
           "attention_chunk_size": 16, "no_rope_layers": [1, 1, 1, 0], "rope_theta": 100.0,
           "max_position_embeddings": 64}
    fig, ax = plt.subplots()
    grid = draw_plan(position_plan(cfg, class_defaults=False), ax).get_array()
    plt.close(fig)
    assert grid.shape == (4, 4) and grid.mask[3].all() and not grid.mask[:3].any()
    # pair i of a RoPE layer: log10 of 2 pi b^(2i/d), brute force per pair
    assert all(abs(grid[0, i] - np.log10(2 * np.pi * 100.0 ** (2 * i / 8))) < 1e-12
               for i in range(4))


def test_printed_plans_of_stored_files_fit_88_columns():
    import re

    from course_utils.data.released import released_config, released_config_names
    for name in released_config_names():
        try:
            text = format_plan(position_plan(released_config(name), class_defaults=False))
        except ValueError:
            continue
        assert max(len(line) for line in text.splitlines()) <= 88, name
        assert not re.search(r"= \d{1,3}\n", text), name  # no "L = 32\n 768"


def test_linear_scaling_counts_once_within_the_file_s_context():
    """Linear scaling divides the frequencies by s and states no pre-scaling length: L is the
    file's max_position_embeddings, said so, and the count uses the divided frequencies once
    (dividing L by s as well would count pairs within L / s^2 of the original ladder); a file
    that gives original_max_position_embeddings keeps it."""
    plan = position_plan(MULTIMODAL, class_defaults=False)
    globl = plan.layers[3]
    assert (globl.context, globl.context_source) == (4096, LINEAR_SOURCE)
    assert "before or after the factor" in LINEAR_SOURCE  # not "the scaled context": unknown
    assert plan.layers[0].context_source == "max_position_embeddings"
    # turning pairs counted by brute force over the scaled ladder: 4 * 2 pi 1e6^(2i/64) <= 4096
    assert globl.turning_pairs == sum(
        1 for i in range(32) if 4.0 * 2 * np.pi * 1e6 ** (2 * i / 64) <= 4096)
    text = " ".join(format_plan(plan).split())  # lines joined where they wrap
    assert f"L = 4 096 ({LINEAR_SOURCE})" in text
    stated = {**LLAMA_STYLE, "rope_scaling": {"rope_type": "linear", "factor": 2.0,
                                              "original_max_position_embeddings": 3000}}
    layer = position_plan(stated, class_defaults=False).layers[0]
    assert (layer.context, layer.context_source) == (
        3000, "rope_scaling.original_max_position_embeddings")


@pytest.mark.parametrize("name, head_dim, pairs", [
    # Hand count: a global pair turns within 131 072 positions when
    # 8 * 2 pi * 1e6^(2i/d) <= 131072, i.e. i <= (d/2) ln(16384 / 2 pi) / ln(1e6)
    # = (d/2) * 0.5694: i <= 72.9 for d = 256 (73 pairs), i <= 36.4 for d = 128 (37 pairs).
    ("gemma3_4b", 256, 73), ("gemma3_27b", 128, 37)])
def test_gemma3_global_layers_count_pairs_once(name, head_dim, pairs, transformers):
    """Gemma 3's global layers: base 1e6, linear factor 8, L = 131 072 (the scaled context
    here; the report's 32K pre-training length is not in the file)."""
    plan = position_plan(released_config(name))
    by_type = plan.by_layer_type()
    globl = by_type["full_attention"]
    assert (globl.head_dim, globl.context) == (head_dim, 131072)
    assert globl.turning_pairs == pairs
    assert by_type["sliding_attention"].context == 131072
    assert f"L = 131 072 ({LINEAR_SOURCE})" in " ".join(format_plan(plan).split())


STORED = __import__("course_utils.data.released", fromlist=["x"]).released_config_names()


@pytest.mark.parametrize("name", STORED)
def test_command_plots_every_stored_config(name, tmp_path, capsys):
    """--plot on every stored file, with class defaults and, where the file alone suffices,
    without; the figure has one column per entry of the widest inv_freq (Gemma 4's global
    layers list 256 pairs, 192 of which do not turn, beside 128 rotated pairs locally)."""
    for flags in ([], ["--no-class-defaults"]):
        png = tmp_path / f"plan{len(flags)}.png"
        status = main([name, *flags, "--plot", str(png)])
        out, err = capsys.readouterr()
        if status == 2:  # the file lacks a key only a class default gives: named, no figure
            assert flags and "not in the file" in err and not png.exists()
            continue
        assert status == 0 and "figure saved" in out and png.stat().st_size > 1000


def test_draw_plan_is_as_wide_as_the_widest_frequency_ladder():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils.data.released import released_config
    from course_utils.explain import draw_plan

    plan = position_plan(released_config("gemma4_26b"), class_defaults=False)
    fig, ax = plt.subplots()
    grid = draw_plan(plan, ax).get_array()
    plt.close(fig)
    glob = plan.by_layer_type()["full_attention"]
    assert grid.shape == (30, glob.inv_freq.size) == (30, 256)
    # a local row: its 128 pairs, then blank; a global row: 64 turning pairs, then blank
    assert not grid.mask[0, :128].any() and grid.mask[0, 128:].all()
    assert not grid.mask[glob.index, :64].any() and grid.mask[glob.index, 64:].all()


RULED = [  # files without layer_types: the pattern comes from a rule of the model's code
    ({"model_type": "gemma2", "num_hidden_layers": 6, "head_dim": 16, "rope_theta": 1e4,
      "sliding_window": 64, "max_position_embeddings": 256},
     "models/gemma2/configuration_gemma2.py (Gemma2Config.__post_init__)"),
    ({"model_type": "olmo3", "num_hidden_layers": 8, "head_dim": 16, "rope_theta": 5e5,
      "sliding_window": 64, "max_position_embeddings": 256},
     "models/olmo3/configuration_olmo3.py (Olmo3Config.__post_init__)"),
    ({"model_type": "gpt_oss", "num_hidden_layers": 4, "head_dim": 16, "rope_theta": 1.5e5,
      "sliding_window": 128, "max_position_embeddings": 256},
     "models/gpt_oss/configuration_gpt_oss.py (GptOssConfig.__post_init__)"),
    ({"model_type": "gemma4_text", "num_hidden_layers": 7, "head_dim": 16, "global_head_dim": 32,
      "sliding_window": 64, "max_position_embeddings": 256,
      "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                          "full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                                             "partial_rotary_factor": 0.25}}},
     "models/gemma4/configuration_gemma4.py (Gemma4TextConfig.__post_init__)"),
    ({"model_type": "mistral", "num_hidden_layers": 3, "head_dim": 16, "rope_theta": 1e4,
      "sliding_window": 64, "max_position_embeddings": 256},
     "models/mistral/modeling_mistral.py (MistralModel.forward)"),
]


@pytest.mark.parametrize("config, rule", RULED, ids=[c["model_type"] for c, _ in RULED])
def test_rule_derived_patterns_are_labelled_without_class_defaults(config, rule):
    plan = position_plan(config, class_defaults=False)
    value = plan.values["layer_types"]
    assert value.source == f"rule of transformers 5.23 {rule}"
    assert value.value == plan.layer_types()
    assert f"rule of transformers 5.23 {rule}" in " ".join(format_plan(plan).split())


def test_every_value_of_a_stored_plan_is_labelled():
    """Without class defaults, every value a stored file's plan uses says where it came from:
    the file, a rule of the transformers code (named), a derivation, an absence, or unknown."""
    known = ("file", "rule of transformers 5.23 ", "derived: ", "absent ", "unknown")
    for name in STORED:
        try:
            plan = position_plan(released_config_for(name), class_defaults=False)
        except ValueError:
            continue
        assert "layer_types" in plan.values, name
        for key, value in plan.values.items():
            assert value.source.startswith(known), (name, key, value.source)


def released_config_for(name):
    from course_utils.data.released import released_config
    return released_config(name)


def test_rule_labels_name_code_that_exists(transformers):
    """Each rule label names a file of the installed transformers and a function in it."""
    import importlib
    import pathlib
    import re

    root = pathlib.Path(transformers.__file__).parent
    labels = {plan_value.source for config, _ in RULED
              for plan_value in position_plan(config, class_defaults=False).values.values()
              if plan_value.source.startswith("rule of")}
    for name in STORED:
        try:
            plan = position_plan(released_config_for(name), class_defaults=False)
        except ValueError:
            continue
        labels |= {v.source for v in plan.values.values() if "rule of" in v.source}
    assert labels
    for label in labels:
        path, cls, func = re.search(
            r"rule of transformers 5\.23 (\S+) \((?:(\w+)\.)?(\w+)\)", label).groups()
        assert (root / path).is_file(), label
        module = importlib.import_module("transformers." + path[:-3].replace("/", "."))
        assert hasattr(getattr(module, cls) if cls else module, func), label


CLASS_DEFAULT_RECORDS = [name for name in library_record_names()
                         if name.startswith("class_defaults_")]


def test_stored_class_defaults_cover_every_file_that_needs_them():
    """A stored file whose plan needs a class default has a record of them (the notebook reads
    the record, not transformers)."""
    needs = []
    for key in released_config_names():
        try:
            position_plan(released_config(key), class_defaults=False)
        except ValueError:
            needs.append(key)
    assert needs and sorted(f"class_defaults_{k}" for k in needs) == CLASS_DEFAULT_RECORDS


@pytest.mark.parametrize("name", CLASS_DEFAULT_RECORDS)
def test_stored_class_defaults_give_the_plan_transformers_gives(name, transformers):
    rec = released_config(name.removeprefix("class_defaults_"))
    stored = position_plan(rec, class_defaults=library_record(name))
    live = position_plan(rec, class_defaults=True)
    assert format_plan(stored) == format_plan(live)
    assert any(v.source.startswith("class default (transformers ")
               for v in stored.values.values())


def test_stored_class_defaults_refuse_another_model_and_bad_types():
    gemma = library_record("class_defaults_gemma3_4b")
    with pytest.raises(ValueError, match="class_defaults"):
        position_plan(released_config("llama4_scout_17b_16e"), class_defaults=gemma)
    with pytest.raises(TypeError, match="class_defaults"):
        position_plan(released_config("gemma3_4b"), class_defaults="yes")


def test_flat_qwen2_5_vl_file_opens_its_window_where_transformers_does(transformers):
    cfg = dict(released_config("qwen2_5_vl_7b").config, use_sliding_window=True,
               max_window_layers=20)
    plan = position_plan(cfg)
    expected = transformers.Qwen2_5_VLConfig(**cfg).text_config.layer_types
    assert [layer.layer_type for layer in plan.layers] == list(expected)
    assert [layer.attention for layer in plan.layers].count("sliding") == 8


def test_file_without_model_type_is_refused_naming_the_field(tmp_path, capsys):
    """Without a model_type no family's rules apply: a plan would be a guess."""
    path = _write(tmp_path, {"text_config": {"num_hidden_layers": 4, "hidden_size": 256,
                                             "num_attention_heads": 4, "rope_theta": 1e4}})
    with pytest.raises(ValueError, match="model_type: not in the file"):
        position_plan(path)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model_type") and "Traceback" not in err


def test_command_names_unreadable_files_and_unwritable_figures(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe{")
    assert main([str(path)]) == 2
    assert "config.json is not a UTF-8 text file" in capsys.readouterr().err
    assert main(["gemma3_1b", "--plot", str(tmp_path / "missing" / "x.png")]) == 2
    assert "--plot" in capsys.readouterr().err


def test_command_reads_stored_class_defaults_without_transformers(monkeypatch, capsys):
    import course_utils.explain.defaults as explain_module

    monkeypatch.setattr(explain_module, "_transformers", lambda: None)
    assert main(["llama4_scout_17b_16e"]) == 0
    assert "class default (transformers 5.23): no_rope_layer_interval 4" in " ".join(
        capsys.readouterr().out.split())


COHERE2 = {"model_type": "cohere2", "num_hidden_layers": 8, "hidden_size": 256,
           "num_attention_heads": 4, "num_key_value_heads": 4, "sliding_window": 64,
           "sliding_window_pattern": 4,
           "rope_theta": 50000.0, "max_position_embeddings": 1024}
EXAONE4 = {"model_type": "exaone4", "num_hidden_layers": 8, "hidden_size": 256, "head_dim": 64,
           "num_attention_heads": 4, "num_key_value_heads": 4, "sliding_window": 64,
           "layer_types": ["sliding_attention"] * 3 + ["full_attention"]
           + ["sliding_attention"] * 3 + ["full_attention"],
           "rope_theta": 1e6, "max_position_embeddings": 1024}


@pytest.mark.parametrize("cfg, attention", [(COHERE2, "Cohere2Attention"),
                                            (EXAONE4, "Exaone4Attention")])
def test_global_layers_without_rope_as_the_model_builds_them(cfg, attention, transformers, torch):
    """Cohere2 and EXAONE 4: three sliding layers to one global, and RoPE only in the sliding
    layers. The witness: the attention module's own decision, read by running it on a query
    that RoPE would move (a layer that rotates changes the output when the distances change)."""
    import importlib

    plan = position_plan(cfg)
    config = transformers.AutoConfig.for_model(**cfg)
    assert plan.layer_types() == list(config.layer_types)
    module = importlib.import_module(
        f"transformers.models.{cfg['model_type']}.modeling_{cfg['model_type']}")
    rotary = [n for n in dir(module) if n.endswith("RotaryEmbedding")][0]
    rope = getattr(module, rotary)(config)
    torch.manual_seed(0)
    x = torch.randn(1, 3, config.hidden_size)
    rotates = []
    for i in range(config.num_hidden_layers):
        layer = getattr(module, attention)(config, layer_idx=i).eval()
        outs = []
        for step in (5, 9):  # same tokens, other distances, no mask: only RoPE sees it
            pos = torch.arange(3)[None] * step
            cos, sin = rope(x, pos)
            outs.append(layer(x, position_embeddings=(cos, sin), attention_mask=None)[0])
        rotates.append(not torch.allclose(outs[0], outs[1], atol=1e-6))
    assert [layer.rope for layer in plan.layers] == rotates
    assert [layer.rope for layer in plan.layers] == [t == "sliding_attention"
                                                      for t in config.layer_types]


@pytest.mark.parametrize("cfg, words", [
    ({"model_type": "falcon", "alibi": True, "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4}, ("ALiBi", "06_alibi")),
    ({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12}, ("learned", "03_")),
    ({"model_type": "bert", "num_hidden_layers": 12}, ("learned", "03_")),
    ({"model_type": "t5", "num_layers": 6, "relative_attention_num_buckets": 32},
     ("buckets", "04_relative")),
    ({"model_type": "jamba", "num_hidden_layers": 4}, ("no position signal", "01_")),
    ({"model_type": "bloom", "n_layer": 4}, ("ALiBi", "06_alibi")),
])
def test_models_without_rope_get_one_line_naming_the_scheme(cfg, words, capsys, tmp_path):
    text = format_plan(position_plan(cfg))
    assert "no RoPE" in text and all(w in text for w in words)
    assert main([str(_write(tmp_path, cfg))]) == 0
    out = capsys.readouterr().out
    assert len(" ".join(out.split())) < 176 and "Traceback" not in out


def test_rotary_dim_models_rotate_that_many_channels(transformers, torch):
    """GPT-J: rotary_dim 64 of a 256-wide head rotate, base 10 000; the witness is the model's
    own table create_sinusoidal_positions (sin of position 1 gives the frequencies)."""
    from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions

    plan = position_plan({"model_type": "gptj", "n_layer": 28, "n_embd": 4096, "n_head": 16,
                          "rotary_dim": 64, "n_positions": 2048})
    layer = plan.layers[0]
    assert (len(plan.layers), layer.head_dim, layer.rotary_dim) == (28, 256, 64)
    table = create_sinusoidal_positions(2, 64).double().numpy()
    np.testing.assert_allclose(layer.inv_freq, np.arcsin(table[1, :32]), rtol=2e-6)


@pytest.mark.parametrize("argv, words", [
    (["google/gemma-3-4b-it"], ("close stored names", "gemma3_4b")),
    (["gemma3-4b"], ("gemma3_4b",)),
    (["gemma3_1b", "--plot", "plan.xyz"], ("unknown figure format", "png")),
])
def test_command_refusals_are_one_line_with_a_way_on(argv, words, capsys, tmp_path,
                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and all(w in err for w in words)
    assert not (tmp_path / "plan.xyz").exists()


def test_command_reads_a_model_folder_and_names_the_figure_it_wrote(tmp_path, capsys):
    folder = tmp_path / "my model"
    folder.mkdir()
    _write(folder, LLAMA_STYLE)
    assert main([str(folder), "--plot", str(tmp_path / "fig")]) == 0
    out = capsys.readouterr().out
    assert f"figure saved to {tmp_path / 'fig.png'}" in out and (tmp_path / "fig.png").exists()
    assert main([str(tmp_path)]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_piped_output_closed_early_is_not_a_traceback():
    import subprocess
    import sys

    proc = subprocess.run(
        f"{sys.executable} -m course_utils.explain gemma3_4b | head -1", shell=True,
        capture_output=True, text=True, check=False)
    assert proc.stdout.startswith("Gemma 3 4B") and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("theta", [1.0, 0.5, float("inf")])
def test_theta_out_of_range_is_refused_naming_rope_theta(theta):
    with pytest.raises(ValueError, match="rope_theta: must be a finite number above 1"):
        position_plan({**LLAMA_STYLE, "rope_theta": theta}, class_defaults=False)


def test_huge_theta_is_printed_in_a_few_characters():
    text = format_plan(position_plan({**LLAMA_STYLE, "rope_theta": 1e308}, class_defaults=False))
    assert "RoPE base 1e+308," in text


@pytest.mark.parametrize("name", STORED)
def test_stored_files_from_re_serialized_copies_say_so(name, capsys):
    """A stored file read from a conversion script's copy (not the released config.json) is
    marked in its source and in the command's output; the others are not."""
    source = released_config(name).source
    assert main([name, "--no-class-defaults"]) in (0, 2)
    out = capsys.readouterr().out
    marked = source.get("copy") == "re-serialized"
    assert ("re-serialized copy" in out) == marked
    if marked:  # the note names what the copy changed
        assert "rope_theta inside rope_scaling" in source["note"]
    # An early revision says so, and that transformers refuses it (phi3_mini_128k: type 'su').
    early = source.get("copy") == "early revision"
    assert ("early revision" in " ".join(out.split()) and "refuses" in out) == early
    assert early == (name == "phi3_mini_128k")


def test_plot_tells_no_rope_from_pairs_that_do_not_turn_and_marks_l(transformers):
    """A NoPE layer's row is light grey, a proportional layer's still pairs dark grey, and a
    bar stands after the last pair that turns within L (the plan's turning_pairs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils.explain import draw_plan

    plan = position_plan(COHERE2)
    fig, ax = plt.subplots()
    draw_plan(plan, ax)
    overlay = ax.images[1].get_array()
    nope = [layer.index for layer in plan.layers if not layer.rope]
    assert nope == [3, 7]
    assert np.allclose(overlay[nope, :, :3], 0.85) and overlay[0, :, 3].max() == 0
    bars = ax.collections[0].get_offsets()
    assert [round(x + 0.5) for x, _ in bars] == [
        layer.turning_pairs for layer in plan.layers if layer.rope]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "no RoPE" in labels and any("does not turn" in t for t in labels)
    plt.close(fig)


def test_missing_key_without_transformers_says_to_install_it(monkeypatch, tmp_path, capsys):
    """A downloaded file that relies on its class's defaults (Gemma 3 4B omits head_dim and
    max_position_embeddings) is refused without transformers, with the way to get them."""
    import course_utils.explain.defaults as explain_module

    monkeypatch.setattr(explain_module, "_transformers", lambda: None)
    cfg = {**released_config("gemma3_4b").config["text_config"], "model_type": "gemma3_text"}
    cfg.pop("hidden_size", None)
    assert main([str(_write(tmp_path, cfg))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "pip install" in " ".join(err.split())


def test_plot_of_a_model_without_rope_is_a_one_line_refusal(tmp_path, capsys):
    """ALiBi (Falcon with alibi: true): the plan prints, then --plot says there are no rotary
    pairs to draw (exit 2, no file), not an error from inside numpy or matplotlib."""
    falcon = _write(tmp_path, {"model_type": "falcon", "alibi": True, "num_hidden_layers": 2,
                               "hidden_size": 64, "num_attention_heads": 2})
    png = tmp_path / "plan.png"
    assert main([str(falcon), "--no-class-defaults", "--plot", str(png)]) == 2
    out, err = capsys.readouterr()
    assert "ALiBi" in out and not png.exists()
    assert "has no rotary pairs to draw" in err and "array" not in err


def test_rotary_pct_is_read_only_where_transformers_reads_it(transformers):
    """GPTNeoXConfig pops rotary_pct into partial_rotary_factor; LlamaConfig ignores the key.
    Witness: the rotary embedding each config builds, by transformers."""
    neox = {"model_type": "gpt_neox", "num_hidden_layers": 2, "hidden_size": 256,
            "num_attention_heads": 2, "max_position_embeddings": 2048, "rotary_pct": 0.25,
            "rotary_emb_base": 10000}
    llama = {**LLAMA_STYLE, "rotary_pct": 0.25}
    for cfg, module in ((neox, "gpt_neox"), (llama, "llama")):
        plan = position_plan(cfg)
        config = transformers.AutoConfig.for_model(**cfg)
        models = __import__(f"transformers.models.{module}.modeling_{module}", fromlist=["x"])
        rotary = [n for n in dir(models) if n.endswith("RotaryEmbedding")][0]
        theirs = getattr(models, rotary)(config).inv_freq.numpy()
        assert plan.layers[0].inv_freq.size == theirs.size, module
        np.testing.assert_allclose(plan.layers[0].inv_freq, theirs, rtol=1e-6)
    assert "rotary_pct" in position_plan(llama).not_interpreted


def test_exaone4_without_a_window_says_every_layer_rotates():
    plan = position_plan({**EXAONE4, "sliding_window": None}, class_defaults=False)
    text = " ".join(format_plan(plan).split())
    assert all(layer.rope for layer in plan.layers)
    assert "RoPE in every layer (the file gives no sliding window)" in text
    assert "NoPE" not in text


def test_without_max_position_embeddings_the_count_is_unknown_not_none():
    cfg = {k: v for k, v in LLAMA_STYLE.items() if k != "max_position_embeddings"}
    text = " ".join(format_plan(position_plan(cfg, class_defaults=False)).split())
    assert "None" not in text and "L = ?" not in text
    assert "how many turn within the context is unknown (no max_position_embeddings)" in text


def test_yarn_needs_its_factor_key_as_transformers_does():
    """transformers reads rope_parameters["factor"] for yarn (a KeyError without it) and
    derives it from max_position_embeddings / original_max_position_embeddings when null."""
    yarn = {"rope_type": "yarn", "original_max_position_embeddings": 2048}
    with pytest.raises(ValueError, match=r"rope_scaling.factor: missing; transformers requires"):
        position_plan({**LLAMA_STYLE, "rope_scaling": yarn}, class_defaults=False)
    plan = position_plan({**LLAMA_STYLE, "rope_scaling": {**yarn, "factor": None}},
                         class_defaults=False)
    assert plan.layers[0].scaling_params["factor"] == 8192 / 2048


def test_mrope_sections_must_share_out_the_pairs():
    """Qwen2-VL splits the frequencies by mrope_section (torch.split): counts that do not add
    up to the pairs are refused, naming the key."""
    qwen = {"model_type": "qwen2_vl", "num_hidden_layers": 2, "hidden_size": 256,
            "num_attention_heads": 2, "max_position_embeddings": 4096, "rope_theta": 1e6,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
    assert position_plan(qwen, class_defaults=False).layers[0].scaling_params[
        "mrope_section"] == [16, 24, 24]
    with pytest.raises(ValueError, match=r"mrope_section: \[16, 24, 20\] sums to 60 pairs, but "
                                         r"the head rotates 64 pairs"):
        position_plan({**qwen, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 20]}},
                      class_defaults=False)


def test_nan_is_not_a_positive_number_but_not_a_number_at_all():
    with pytest.raises(ValueError, match="rope_theta: must be a finite number, got nan"):
        position_plan({**LLAMA_STYLE, "rope_theta": float("nan")}, class_defaults=False)
