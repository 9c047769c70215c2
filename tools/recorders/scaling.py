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
