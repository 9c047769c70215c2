"""Recorders for ALiBi (notebook 06): BLOOM's ``build_alibi_tensor`` in transformers."""

from __future__ import annotations

SOURCE = "src/transformers/models/bloom/modeling_bloom.py"
FUNCTION = "transformers.models.bloom.modeling_bloom.build_alibi_tensor"


def _alibi(attention_mask, num_heads):
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.tensor(attention_mask, dtype=torch.int64)
    return build_alibi_tensor(mask, num_heads, torch.float32).double().numpy()


def record_alibi_bloom_slopes():
    """The slope of every head for 1 to 64 heads: BLOOM's bias for a two-token input is
    ``+mu_h n``, so its value at key n = 1 is the slope mu_h. ``slopes_<H>`` holds heads 1 .. H."""
    outputs = {f"slopes_{n}": _alibi([[1, 1]], n)[:, 0, 1] for n in range(1, 65)}
    return FUNCTION, SOURCE, {"attention_mask": [[1, 1]], "num_heads": "1 .. 64",
                              "dtype": "float32"}, outputs


def record_alibi_bloom_padded():
    """BLOOM's bias for 4 heads and a batch of two rows of 6 tokens, the second left-padded with
    two padding tokens; shape (batch * heads, 1, 6)."""
    mask = [[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]]
    return FUNCTION, SOURCE, {"attention_mask": mask, "num_heads": 4, "dtype": "float32"}, {
        "alibi": _alibi(mask, 4)}
