"""Recorders for relative positions (notebook 04): transformers' T5 bucket function and bias."""

from __future__ import annotations

import numpy as np

T5_SOURCE = "src/transformers/models/t5/modeling_t5.py"
# (bidirectional, num_buckets, max_distance): T5's encoder and decoder settings, and variants
BUCKET_SETTINGS = ((True, 32, 128), (False, 32, 128), (False, 32, 256), (True, 64, 256),
                   (True, 16, 64), (False, 16, 50))
TABLE_SEED, N_HEADS = 2020, 4


def bucket_key(bidirectional, num_buckets, max_distance):
    """The output name of one setting, e.g. ``encoder_32_128`` or ``decoder_32_256``."""
    return f"{'encoder' if bidirectional else 'decoder'}_{num_buckets}_{max_distance}"


def record_t5_buckets():
    """T5Attention._relative_position_bucket for r = n - m = -300 .. 300 in six settings."""
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-300, 301)
    outputs = {bucket_key(*s): T5Attention._relative_position_bucket(
        rel, bidirectional=s[0], num_buckets=s[1], max_distance=s[2]).numpy()
        for s in BUCKET_SETTINGS}
    inputs = {"relative_position": "arange(-300, 301)",
              "settings (bidirectional, num_buckets, max_distance)": [list(s) for s in
                                                                      BUCKET_SETTINGS]}
    return ("transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket",
            T5_SOURCE, inputs, outputs)


def _table():
    return np.round(np.random.default_rng(TABLE_SEED).normal(size=(32, N_HEADS)), 3)


def _t5_attention(is_decoder):
    import torch
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(d_model=16, d_kv=4, num_heads=N_HEADS, relative_attention_num_buckets=32,
                      relative_attention_max_distance=128, is_decoder=is_decoder)
    attention = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    with torch.no_grad():
        attention.relative_attention_bias.weight.copy_(torch.tensor(_table()))
    return attention


def record_t5_compute_bias():
    """T5Attention.compute_bias, (1, heads, queries, keys), with a fixed (32, 4) bucket table:
    the encoder's first and last 3 of 150 queries, and the decoder's cached query at steps 40
    and 150 (``past_seen_tokens``)."""
    import torch

    encoder, decoder = _t5_attention(False), _t5_attention(True)
    with torch.no_grad():
        outputs = {
            "encoder_first": encoder.compute_bias(3, 150, past_seen_tokens=0),
            "encoder_last": encoder.compute_bias(3, 150, past_seen_tokens=147),
            "decoder_step_40": decoder.compute_bias(1, 41, past_seen_tokens=40),
            "decoder_step_150": decoder.compute_bias(1, 151, past_seen_tokens=150),
        }
    inputs = {"relative_attention_bias.weight": _table(), "num_buckets": 32,
              "max_distance": 128,
              "calls": "encoder (3, 150) past 0 and 147; decoder (1, 41) past 40, "
                       "(1, 151) past 150"}
    return ("transformers.models.t5.modeling_t5.T5Attention.compute_bias", T5_SOURCE, inputs,
            {k: v.double().numpy()[0] for k, v in outputs.items()})


def record_gptj_sinusoid_table():
    """GPT-J's create_sinusoidal_positions(8, 8): [sin | cos] halves with frequencies
    10000^(-2i/d), the table Transformer-XL's PositionalEmbedding also builds."""
    from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions

    return ("transformers.models.gptj.modeling_gptj.create_sinusoidal_positions",
            "src/transformers/models/gptj/modeling_gptj.py", {"num_pos": 8, "dim": 8},
            {"table": create_sinusoidal_positions(8, 8).double().numpy()})
