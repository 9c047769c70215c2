"""Recorders for the labs: T5's causal relative buckets (notebook 09), dynamic NTK on the toy
head of the context-extension lab (notebook 12)."""

from __future__ import annotations


def record_t5_buckets_causal():
    """Causal T5 buckets of the distances 0 .. 127, with T5's defaults (32 buckets, max distance
    128) and with the lab's scaled-down setting (16 buckets, max distance 16)."""
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention

    relative = -torch.arange(128)[None]  # key minus query: distances 0 .. 127 back
    outputs = {}
    for key, buckets, distance in (("t5_defaults", 32, 128), ("lab", 16, 16)):
        outputs[key] = T5Attention._relative_position_bucket(
            relative, bidirectional=False, num_buckets=buckets, max_distance=distance)[0].numpy()
    return ("transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket",
            "src/transformers/models/t5/modeling_t5.py",
            {"relative_position": "-arange(128)", "bidirectional": False,
             "t5_defaults": [32, 128], "lab": [16, 16]}, outputs)


def record_rope_dynamic_toy_4l():
    """Dynamic NTK for the context-extension lab's toy head (notebook 12): head dimension 8,
    base (16 / 2 pi)^(1 / (ln(4096 / 2 pi) / ln 10^4)), factor 4, trained length 16, read at
    64 tokens (4L)."""
    import math

    from recorders.scaling import rope_init  # the shared helper of tools/recorders/scaling.py

    share = math.log(4096 / (2 * math.pi)) / math.log(1e4)
    base = (16 / (2 * math.pi)) ** (1 / share)
    inv, factor, inputs = rope_init("dynamic", 8, 16, seq_len=64, rope_theta=base, factor=4.0)
    return ("transformers.modeling_rope_utils._compute_dynamic_ntk_parameters",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"inv_freq": inv, "attention_factor": factor})
