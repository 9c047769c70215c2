"""Tolerances that follow the precision of a learner's answer.

A right answer computed in float32 (or as a torch tensor) differs from the float64 expected
value by a few float32 roundings; a checker must accept it, and still reject answers that are
wrong by far more than that.
"""

from __future__ import annotations

import numpy as np

__all__ = ["answer_rtol", "as_float64"]

# Relative spacing (machine epsilon) of the formats an answer may come in.
_EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def answer_rtol(answer, *, floor=1e-9, ulps=16):
    """A relative tolerance of ``ulps`` units of the answer's own precision, at least ``floor``.

    ``answer`` may be a number, a list, a NumPy array or a torch tensor. Integers and Python
    floats count as float64.
    """
    dtype = getattr(answer, "dtype", None)
    name = str(dtype).removeprefix("torch.") if dtype is not None else "float64"
    return max(floor, ulps * _EPS.get(name, _EPS["float64"]))


def as_float64(answer):
    """The answer as a float64 NumPy array; torch tensors (any device, any float dtype) too."""
    if hasattr(answer, "detach") and hasattr(answer, "cpu"):
        answer = answer.detach().cpu().double().numpy()
    return np.asarray(answer, dtype=np.float64)
