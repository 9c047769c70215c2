"""Recorders for RoPE context scaling (notebook 07): transformers' ROPE_INIT_FUNCTIONS."""

from __future__ import annotations


def _llama_config(head_dim, rope_parameters, max_position):
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                       max_position_embeddings=max_position, rope_parameters=rope_parameters)


def rope_init(rope_type, head_dim, max_position, seq_len=None, **rope_parameters):
    """(inv_freq, attention factor, inputs) from transformers' ROPE_INIT_FUNCTIONS[rope_type]
    for a Llama config with these rope parameters."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = _llama_config(head_dim, {"rope_type": rope_type, **rope_parameters}, max_position)
    inv, factor = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=seq_len)
    inputs = {"rope_type": rope_type, "head_dim": head_dim, "max_position_embeddings": max_position,
              "seq_len": seq_len, **rope_parameters}
    return inv.double().numpy(), float(factor), inputs


def record_rope_yarn_llama2_s8():
    """YaRN frequencies for Llama-2 7B (d = 128, b = 10^4, L = 4096) stretched by s = 8."""
    inv, factor, inputs = rope_init("yarn", 128, 4096 * 8, rope_theta=1e4, factor=8.0,
                                    original_max_position_embeddings=4096)
    return ("transformers.modeling_rope_utils._compute_yarn_parameters",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"inv_freq": inv, "attention_factor": factor})


def record_rope_linear_llama2_s8():
    """Position Interpolation ("linear") for Llama-2 7B stretched by s = 8."""
    inv, factor, inputs = rope_init("linear", 128, 4096 * 8, rope_theta=1e4, factor=8.0)
    return ("transformers.modeling_rope_utils._compute_linear_scaling_rope_parameters",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"inv_freq": inv, "attention_factor": factor})


def record_rope_dynamic_llama2_s4():
    """Dynamic NTK for Llama-2 7B (L = 4096, configured s = 4) at the current lengths l = L/2,
    l = L and l = 2L. transformers reads L from ``max_position_embeddings`` for this method."""
    outputs, lengths = {}, (2048, 4096, 8192)
    for seq_len in lengths:
        inv, factor, inputs = rope_init("dynamic", 128, 4096, seq_len=seq_len, rope_theta=1e4,
                                        factor=4.0)
        outputs[f"inv_freq_at_{seq_len}"] = inv
    inputs["seq_len"] = list(lengths)
    outputs["attention_factor"] = factor
    return ("transformers.modeling_rope_utils._compute_dynamic_ntk_parameters",
            "src/transformers/modeling_rope_utils.py", inputs, outputs)


def record_rope_dynamic_llama2_s8_8l():
    """Dynamic NTK for Llama-2 7B with s = 8 at the length it was configured for, l = 8L."""
    inv, factor, inputs = rope_init("dynamic", 128, 4096, seq_len=8 * 4096, rope_theta=1e4,
                                    factor=8.0)
    return ("transformers.modeling_rope_utils._compute_dynamic_ntk_parameters",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"inv_freq": inv, "attention_factor": factor})


def record_rope_llama3_llama31():
    """Llama-3.1 8B's frequency scaling (meta-llama/Llama-3.1-8B config.json: rope_theta 5e5,
    head_dim 128, factor 8, low_freq_factor 1, high_freq_factor 4, original length 8192)."""
    inv, factor, inputs = rope_init("llama3", 128, 131072, rope_theta=5e5, factor=8.0,
                                    low_freq_factor=1.0, high_freq_factor=4.0,
                                    original_max_position_embeddings=8192)
    return ("transformers.modeling_rope_utils._compute_llama3_parameters",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"inv_freq": inv, "attention_factor": factor})


def record_rope_longrope_llama2_s8():
    """LongRoPE on Llama-2 7B's frequencies (L = 4096, s = 8) with illustrative factor lists:
    short_factor all 1, long_factor ext_i = 8^((i/63)^2). Recorded at l = L (short list) and
    l = 8L (long list)."""
    short = [1.0] * 64
    long_ = [8.0 ** ((i / 63) ** 2) for i in range(64)]
    outputs = {}
    for seq_len in (4096, 8 * 4096):
        inv, factor, inputs = rope_init("longrope", 128, 8 * 4096, seq_len=seq_len, rope_theta=1e4,
                                        factor=8.0, original_max_position_embeddings=4096,
                                        short_factor=short, long_factor=long_)
        outputs[f"inv_freq_at_{seq_len}"] = inv
    inputs["seq_len"] = [4096, 8 * 4096]
    outputs["attention_factor"] = factor
    return ("transformers.modeling_rope_utils._compute_longrope_parameters",
            "src/transformers/modeling_rope_utils.py", inputs, outputs)
