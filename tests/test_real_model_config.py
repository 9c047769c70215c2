"""The configuration the course reads from the GGUF file agrees with the released config.json.

Witness: SmolLM2-135M's ``config.json`` as released (``course_utils/data/configs/smollm2_135m.json``,
its source and the three public copies that agree with it named there). The file the course runs
is the -Instruct fine-tune of that checkpoint, converted by llama.cpp; the architecture and the
position settings are the base model's, so every key compared here must be equal. Token ids are
not compared (an instruction-tuned model has its own special tokens).

The stored record keeps the position keys only; the three other values compared (RMSNorm epsilon,
vocabulary size, tied embeddings) are read from the same released file, whose record names them
in its source note (checked below, so the two cannot drift apart).

Tests that need the model file skip without it (``make model`` fetches it) and fail under CI=true.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_real_model import require_model_file  # skip or, under CI, fail without the file

from course_utils.data.released import released_config
from course_utils.explain import position_plan
from course_utils.explain.cli import main
from course_utils.real_model import files, read_config
from course_utils.real_model.model import _open_gguf

KEY = "smollm2_135m"
# Keys of the released config.json outside the stored position keys (same source as the record).
RELEASED_OTHER = {"rms_norm_eps": 1e-05, "vocab_size": 49152, "tie_word_embeddings": True,
                  "rope_interleaved": False}


@pytest.fixture(scope="module")
def reader():
    require_model_file()
    import gguf

    return gguf.GGUFReader(str(files.model_path()))


@pytest.fixture(scope="module")
def released():
    return released_config(KEY)


def test_record_names_the_other_released_values(released):
    note = released.source["note"]
    for key, value in RELEASED_OTHER.items():
        text = {True: "true", False: "false"}.get(value, value)
        assert f"{key} {text}" in note, key


def test_the_course_s_reader_reads_what_gguf_s_reader_reads(reader):
    """``_open_gguf`` parses over plain arrays instead of ``np.memmap`` ones (for speed): every
    metadata field and every tensor's type, shape and bytes must be the library reader's."""
    plain = _open_gguf(files.model_path())
    assert list(plain.fields) == list(reader.fields)
    for name, field in reader.fields.items():
        mine = plain.fields[name]
        assert mine.types == field.types and mine.data == field.data, name
        assert all(np.array_equal(a, b) for a, b in zip(mine.parts, field.parts, strict=True)), name
    assert [(t.name, t.tensor_type, t.shape.tolist()) for t in plain.tensors] == [
        (t.name, t.tensor_type, t.shape.tolist()) for t in reader.tensors]
    assert all(np.array_equal(a.data, b.data) for a, b in zip(plain.tensors, reader.tensors, strict=True))
    assert type(plain.tensors[0].data) is np.ndarray  # not a memmap: the point of the class


def test_gguf_metadata_agrees_with_released_config(reader, released):
    cfg = read_config(reader)
    rel = released.config
    assert rel["model_type"] == "llama" and rel["architectures"] == ["LlamaForCausalLM"]
    assert cfg.n_layers == rel["num_hidden_layers"] == 30
    assert cfg.n_heads == rel["num_attention_heads"]
    assert cfg.n_kv_heads == rel["num_key_value_heads"]
    assert cfg.d_model == rel["hidden_size"]
    # the released file states no head_dim: Llama's is hidden_size // num_attention_heads
    assert "head_dim" not in rel and cfg.head_dim == rel["hidden_size"] // rel["num_attention_heads"]
    assert cfg.rope_theta == rel["rope_theta"]
    assert cfg.max_position_embeddings == rel["max_position_embeddings"]
    # GGUF stores the epsilon as float32
    assert cfg.rms_norm_eps == np.float32(RELEASED_OTHER["rms_norm_eps"])
    assert cfg.vocab_size == RELEASED_OTHER["vocab_size"]


def test_gguf_has_no_rope_scaling_and_tied_output(reader, released):
    assert released.config["rope_scaling"] is None
    assert not [k for k in reader.fields if k.startswith("llama.rope.scaling")]
    # tied embeddings: llama.cpp writes no separate output matrix, the logits use token_embd
    names = {t.name for t in reader.tensors}
    assert RELEASED_OTHER["tie_word_embeddings"] and "token_embd.weight" in names
    assert "output.weight" not in names


def test_position_plan_of_released_file_is_the_model_s_rope(reader, released):
    cfg = read_config(reader)
    plan = position_plan(released, class_defaults=False)
    assert plan.layer_types() == ["full_attention"] * cfg.n_layers
    (layer,) = plan.by_layer_type().values()
    assert layer.rope and layer.scaling is None and layer.attention == "full"
    assert (layer.base, layer.context, layer.rotary_dim) == (
        cfg.rope_theta, cfg.max_position_embeddings, cfg.head_dim)
    np.testing.assert_allclose(layer.inv_freq, cfg.inv_freq, rtol=1e-15)


def test_explain_command_prints_the_plan(capsys):
    code = main([KEY])
    out, err = capsys.readouterr()
    assert code == 0, err
    text = " ".join(out.split())
    assert "model_type llama, 30 layers" in text
    assert "layers 0-29: full attention, RoPE base 100 000, head dim 64" in text
    assert "L = 8 192 (max_position_embeddings)" in text
