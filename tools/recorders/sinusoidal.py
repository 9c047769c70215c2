"""Recorders for the sinusoidal table (notebooks 00 and 02): the paper's interleaved layout as
DistilBERT builds it, and the tensor2tensor/fairseq ``[sin | cos]`` layout as M2M100 (a fairseq
port) builds it."""

from __future__ import annotations


def record_sinusoidal_distilbert_d16():
    """DistilBERT's ``_create_sinusoidal_embeddings``: 64 positions, width 16 (interleaved,
    angles in float64, stored in a float32 tensor)."""
    import torch
    from transformers.models.distilbert.modeling_distilbert import _create_sinusoidal_embeddings

    n_pos, dim = 64, 16
    out = _create_sinusoidal_embeddings(n_pos=n_pos, dim=dim, out=torch.empty(n_pos, dim))
    return ("transformers.models.distilbert.modeling_distilbert._create_sinusoidal_embeddings",
            "src/transformers/models/distilbert/modeling_distilbert.py",
            {"n_pos": n_pos, "dim": dim}, {"table": out.double().numpy()})


def record_sinusoidal_fairseq_d64():
    """M2M100's ``get_embedding`` (fairseq's tensor2tensor-style table): 50 positions, width 64,
    no padding row (computed in float32)."""
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding

    n_pos, dim = 50, 64
    table = M2M100SinusoidalPositionalEmbedding.get_embedding(n_pos, dim, None)
    return ("transformers.models.m2m_100.modeling_m2m_100."
            "M2M100SinusoidalPositionalEmbedding.get_embedding",
            "src/transformers/models/m2m_100/modeling_m2m_100.py",
            {"num_embeddings": n_pos, "embedding_dim": dim, "padding_idx": None},
            {"table": table.double().numpy()})
