"""Recorders for learned position tables (notebook 03): RoBERTa's fairseq-style position ids."""

from __future__ import annotations

import numpy as np


def record_roberta_position_ids():
    """``RobertaEmbeddings.create_position_ids_from_input_ids`` on a batch with padding (id 1)
    on either side, on random ids (about a quarter padding) with 0 and 7 cached tokens, and on
    512 real tokens (RoBERTa's longest input)."""
    import torch
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    make = RobertaEmbeddings.create_position_ids_from_input_ids
    padded = np.array([[0, 31414, 232, 2, 1, 1], [1, 1, 0, 31414, 232, 2]])
    random_ids = np.random.default_rng(0).integers(0, 4, size=(8, 20))
    full = np.full((1, 512), 5)
    outputs = {
        "padded": make(torch.tensor(padded), 1).numpy(),
        "random": make(torch.tensor(random_ids), 1).numpy(),
        "random_past_7": make(torch.tensor(random_ids), 1, past_key_values_length=7).numpy(),
        "full_512": make(torch.tensor(full), 1).numpy(),
    }
    inputs = {"padding_idx": 1, "padded": padded.tolist(), "random": random_ids.tolist(),
              "full_512": "512 tokens of id 5", "past_key_values_length": [0, 0, 7, 0]}
    return ("transformers.models.roberta.modeling_roberta."
            "RobertaEmbeddings.create_position_ids_from_input_ids",
            "src/transformers/models/roberta/modeling_roberta.py", inputs, outputs)
