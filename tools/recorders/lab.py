"""Recorders for the length-generalisation lab (notebook 09): T5's causal relative buckets."""

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
