"""Recorders for RoPE (notebook 05): transformers' rotary embeddings in the half layout (Llama),
the interleaved layout (GPT-J) and partial rotary (GPT-NeoX)."""

from __future__ import annotations

import numpy as np

# One head of 8 channels, six positions, fixed inputs kept in the record.
HEAD_DIM, POSITIONS, X_SEED = 8, [0, 1, 2, 3, 7, 100], 2021


def _x():
    return np.round(np.random.default_rng(X_SEED).normal(size=(len(POSITIONS), HEAD_DIM)), 3)


def _as_torch(x):
    import torch

    return torch.tensor(x, dtype=torch.float32)[None, None]  # (batch 1, heads 1, seq, dim)


def record_rope_llama_half():
    """Llama's RoPE (half layout): LlamaRotaryEmbedding's cos/sin and apply_rotary_pos_emb."""
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    config = LlamaConfig(hidden_size=2 * HEAD_DIM, num_attention_heads=2, head_dim=HEAD_DIM,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    rotary = LlamaRotaryEmbedding(config)
    x = _as_torch(_x())
    cos, sin = rotary(x, torch.tensor([POSITIONS]))
    y, _ = apply_rotary_pos_emb(x, x, cos, sin)
    inputs = {"x": _x(), "positions": POSITIONS, "head_dim": HEAD_DIM, "rope_theta": 10000.0}
    return ("transformers.models.llama.modeling_llama.apply_rotary_pos_emb",
            "src/transformers/models/llama/modeling_llama.py", inputs,
            {"y": y.double().numpy()[0, 0]})


def record_rope_llama_inv_freq():
    """Llama's frequencies theta_i (inv_freq) for head_dim 8 and 128, base 10^4."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    outputs = {}
    for head_dim in (8, 128):
        config = LlamaConfig(hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        outputs[f"inv_freq_{head_dim}"] = LlamaRotaryEmbedding(config).inv_freq.double().numpy()
    return ("transformers.models.llama.modeling_llama.LlamaRotaryEmbedding",
            "src/transformers/models/llama/modeling_llama.py",
            {"head_dim": [8, 128], "rope_theta": 10000.0}, outputs)


def record_rope_gptj_interleaved():
    """GPT-J's RoPE (interleaved layout): create_sinusoidal_positions, then
    apply_rotary_pos_emb with rotate_every_two, as GPTJAttention calls them."""
    import torch
    from transformers.models.gptj.modeling_gptj import (
        apply_rotary_pos_emb,
        create_sinusoidal_positions,
    )

    table = create_sinusoidal_positions(max(POSITIONS) + 1, HEAD_DIM)  # (pos, [sin | cos])
    sin, cos = torch.split(table[torch.tensor(POSITIONS)][None], HEAD_DIM // 2, dim=-1)
    x = torch.tensor(_x(), dtype=torch.float32)[None, :, None, :]  # (batch, seq, heads, dim)
    y = apply_rotary_pos_emb(x, sin, cos)
    inputs = {"x": _x(), "positions": POSITIONS, "rotary_dim": HEAD_DIM}
    return ("transformers.models.gptj.modeling_gptj.apply_rotary_pos_emb",
            "src/transformers/models/gptj/modeling_gptj.py", inputs,
            {"y": y.double().numpy()[0, :, 0, :]})


def record_rope_neox_partial():
    """GPT-NeoX's partial rotary (half layout, partial_rotary_factor 0.5: 4 of 8 channels)."""
    import torch
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox.modeling_gpt_neox import (
        GPTNeoXRotaryEmbedding,
        apply_rotary_pos_emb,
    )

    config = GPTNeoXConfig(hidden_size=2 * HEAD_DIM, num_attention_heads=2,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                            "partial_rotary_factor": 0.5})
    rotary = GPTNeoXRotaryEmbedding(config)
    x = _as_torch(_x())
    cos, sin = rotary(x, torch.tensor([POSITIONS]))
    y, _ = apply_rotary_pos_emb(x, x, cos, sin)
    inputs = {"x": _x(), "positions": POSITIONS, "head_dim": HEAD_DIM,
              "partial_rotary_factor": 0.5, "rope_theta": 10000.0}
    return ("transformers.models.gpt_neox.modeling_gpt_neox.apply_rotary_pos_emb",
            "src/transformers/models/gpt_neox/modeling_gpt_neox.py", inputs,
            {"y": y.double().numpy()[0, 0]})
