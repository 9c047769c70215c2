"""The stored released configurations: complete records, sources, and only the files' own keys."""

from __future__ import annotations

import json

import pytest

from course_utils.data.released import CONFIG_DIR, ReleasedConfig, released_config, released_config_names
from course_utils.explain import position_plan

NAMES = released_config_names()
# The position-related keys a stored excerpt may hold (values copied from the source file).
POSITION_KEYS = {
    "_name_or_path", "architectures", "model_type", "hidden_size", "num_attention_heads",
    "num_key_value_heads", "head_dim", "num_hidden_layers", "max_position_embeddings",
    "original_max_position_embeddings", "rope_theta", "rope_scaling", "rope_parameters",
    "partial_rotary_factor", "rotary_pct", "rotary_emb_base", "sliding_window",
    "use_sliding_window", "max_window_layers", "layer_types", "sliding_window_pattern",
    "no_rope_layers", "no_rope_layer_interval", "attention_chunk_size",
    "attn_temperature_tuning", "floor_scale", "attn_scale", "rope_local_base_freq",
    "qk_rope_head_dim", "qk_nope_head_dim", "kv_lora_rank", "q_lora_rank", "v_head_dim",
    "rope_interleave", "full_attention_interval", "text_config", "global_rope_theta",
    "local_rope_theta", "global_attn_every_n_layers", "local_attention", "global_head_dim",
    "initial_context_length", "use_mrope", "interleaved_sliding_window", "sliding_window_size",
    "query_pre_attn_scalar",
}


def test_at_least_twenty_checkpoints():
    assert len(NAMES) >= 20
    assert len({released_config(n).checkpoint for n in NAMES}) == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_record_is_complete(name):
    rec = released_config(name)
    assert isinstance(rec, ReleasedConfig)
    assert rec.source["repo"].count("/") == 1
    assert len(rec.source["commit"]) == 40 or rec.source["url"].startswith("https://huggingface.co/")
    assert rec.witness == f"config: {rec.checkpoint}, data/configs/{name}.json"
    text = rec.config.get("text_config", rec.config)
    assert set(rec.config) <= POSITION_KEYS and set(text) <= POSITION_KEYS
    assert "model_type" in text or "text_config" not in rec.config


@pytest.mark.parametrize("name", NAMES)
def test_values_labelled_file_are_the_file_s(name):
    """Every value the plan says it read from the file is in the stored file, unchanged; the
    plan without class defaults either stands on the file alone or names what it lacks."""
    cfg = released_config(name).config
    text = cfg.get("text_config", cfg)
    try:
        plan = position_plan(cfg, class_defaults=False)
    except ValueError as exc:
        assert "not in the file" in str(exc)
        return
    for key, value in plan.values.items():
        if value.source == "file" and key in text:
            assert value.value == text[key]
        assert value.source != "file" or "." in key or key in text, key


def test_both_layouts_and_a_text_config_are_stored():
    configs = [released_config(n).config for n in NAMES]
    texts = [c.get("text_config", c) for c in configs]
    assert any("rope_theta" in t and "rope_parameters" not in t for t in texts)
    assert any(isinstance(t.get("rope_parameters"), dict) and "full_attention" in t["rope_parameters"]
               for t in texts)
    assert any("text_config" in c for c in configs)


def test_loader_rejects_unknown_names_and_broken_records(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="one of the stored configurations"):
        released_config("gpt-5")
    with pytest.raises(TypeError, match="key must be"):
        released_config(3)
    import course_utils.data.released as released
    bad = json.loads((CONFIG_DIR / f"{NAMES[0]}.json").read_text())
    del bad["source"]["commit"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    monkeypatch.setattr(released, "CONFIG_DIR", tmp_path)
    with pytest.raises(ValueError, match="source must give repo, path and commit"):
        released.released_config("bad")
