"""Learned absolute position embeddings (BERT, GPT-2, RoBERTa, OPT): a table with one row per position.

The table here is initialised, not trained: N(0, std^2) with ``std = 0.02`` by default, as
Hugging Face's ``_init_weights`` initialises ``nn.Embedding`` tables (``initializer_range = 0.02``
in the GPT-2 and BERT configurations). The original releases differ: OpenAI's GPT-2 code
(``gpt-2/src/model.py``) draws ``wpe`` with standard deviation 0.01 (``wte`` with 0.02), and
Google's BERT code (``bert/modeling.py``, ``create_initializer``) uses a truncated normal with
standard deviation 0.02. It has a hard wall: a position at or beyond ``max_len`` has no row.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val

__all__ = ["LearnedPositionalEmbedding", "fairseq_position_ids"]


class LearnedPositionalEmbedding:
    """A ``(max_len, d_model)`` lookup table of position vectors.

    Parameters
    ----------
    max_len : int
        Number of positions the table covers (0 .. max_len - 1).
    d_model : int
        Width of each position vector.
    seed : int
        Seed of the initialisation, so every run of a notebook sees the same table.
    std : float
        Standard deviation of the normal initialisation (Hugging Face's ``initializer_range``).

    References
    ----------
    Hugging Face ``models/gpt2/modeling_gpt2.py`` (``wpe``, ``GPT2PreTrainedModel._init_weights``),
    ``models/bert/modeling_bert.py`` (``position_embeddings``).
    """

    def __init__(self, max_len, d_model, *, seed=0, std=0.02, weight=None):
        self.max_len = val.positive_int(max_len, "max_len")
        self.d_model = val.positive_int(d_model, "d_model")
        self.seed = val.positive_int(seed, "seed", allow_zero=True)
        self.std = val.positive_float(std, "std")
        if weight is None:
            rng = np.random.default_rng(self.seed)
            weight = rng.normal(0.0, self.std, size=(self.max_len, self.d_model))
        else:
            weight = val.numeric_array(weight, "weight").astype(np.float64)
            if weight.shape != (self.max_len, self.d_model):
                raise ValueError(
                    f"weight must have shape (max_len, d_model) = {(self.max_len, self.d_model)}, "
                    f"got {weight.shape}"
                )
        self.weight = weight

    @property
    def n_parameters(self):
        """Number of learned numbers: ``max_len * d_model``."""
        return self.max_len * self.d_model

    def __call__(self, positions):
        """Look up ``positions`` (integers, any shape ``(...)``); returns ``(..., d_model)``.

        Raises
        ------
        IndexError
            For a position outside ``0 .. max_len - 1``: the table has no row for it.
        """
        positions = val.numeric_array(positions, "positions", integer=True)
        if positions.size and (positions.min() < 0 or positions.max() >= self.max_len):
            bad = positions.max() if positions.max() >= self.max_len else positions.min()
            raise IndexError(
                f"positions must be in 0 .. {self.max_len - 1} (max_len={self.max_len}); got "
                f"{int(bad)}: a learned table has no embedding beyond the length it was built for"
            )
        return self.weight[positions]

    def resized(self, new_max_len):
        """A new table of ``new_max_len`` rows, linearly interpolated from this one.

        Row ``j`` of the new table is the old table read at the fractional position
        ``j * (max_len - 1) / (new_max_len - 1)`` (first and last rows kept), the 1-D analogue of
        how ViT resizes its position grid to fine-tune at a higher resolution
        (``interpolate_pos_encoding`` in Hugging Face ``models/vit/modeling_vit.py``, bicubic in
        2-D). Interpolation squeezes the old rows closer together; it does not invent knowledge
        of longer contexts.
        """
        new_max_len = val.positive_int(new_max_len, "new_max_len")
        if new_max_len == 1 or self.max_len == 1:
            src = np.zeros(new_max_len)
        else:
            src = np.arange(new_max_len) * (self.max_len - 1) / (new_max_len - 1)
        lo = np.floor(src).astype(np.int64)
        hi = np.minimum(lo + 1, self.max_len - 1)
        frac = (src - lo)[:, None]
        weight = (1.0 - frac) * self.weight[lo] + frac * self.weight[hi]
        return LearnedPositionalEmbedding(new_max_len, self.d_model, seed=self.seed, std=self.std,
                                          weight=weight)

    def __repr__(self):
        return (f"LearnedPositionalEmbedding(max_len={self.max_len}, d_model={self.d_model}, "
                f"parameters={self.n_parameters:,})")


def fairseq_position_ids(input_ids, *, padding_idx=1):
    """Position ids as fairseq and RoBERTa compute them: padding_idx + 1, + 2, ... for real tokens.

    ``mask = input_ids != padding_idx``; ``ids = cumsum(mask) * mask + padding_idx``. Padding
    tokens get ``padding_idx`` and the first real token ``padding_idx + 1``, which is why
    RoBERTa's table has ``512 + padding_idx + 1 = 514`` rows for 512 tokens.

    References
    ----------
    Hugging Face ``models/roberta/modeling_roberta.py``
    ``create_position_ids_from_input_ids``; fairseq ``utils.make_positions``.
    """
    input_ids = val.numeric_array(input_ids, "input_ids", integer=True, min_ndim=1)
    padding_idx = val.positive_int(padding_idx, "padding_idx", allow_zero=True)
    mask = (input_ids != padding_idx).astype(np.int64)
    return np.cumsum(mask, axis=-1) * mask + padding_idx
