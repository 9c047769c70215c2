"""Tolerances that follow the precision of a learner's answer.

A right answer computed in float32 (or as a torch tensor) differs from the float64 expected
value by a few float32 roundings; a checker must accept it, and still reject answers that are
wrong by far more than that. Checkers of single arrays use :func:`answer_rtol`; checkers that
call a learner's function on several cases use :func:`flatten_answers` and
:func:`grade_by_precision`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["answer_rtol", "as_float64", "is_low_precision", "flatten_answers",
           "grade_by_precision"]

# Relative spacing (machine epsilon) of the formats an answer may come in.
_EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def answer_rtol(answer, *, floor=1e-9, ulps=16):
    """A relative tolerance of ``ulps`` units of the answer's own precision, at least ``floor``.

    ``answer`` may be a number, a list, a NumPy array or a torch tensor. Integers and Python
    floats count as float64.
    """
    return max(floor, ulps * _EPS.get(_dtype_name(answer), _EPS["float64"]))


def _dtype_name(answer):
    """``"float32"`` for a NumPy float32 array or a torch.float32 tensor; ``"float64"`` for
    Python numbers and lists."""
    dtype = getattr(answer, "dtype", None)
    return str(dtype).removeprefix("torch.") if dtype is not None else "float64"


def as_float64(answer):
    """The answer as a float64 NumPy array; torch tensors (any device, any float dtype) too."""
    if hasattr(answer, "detach") and hasattr(answer, "cpu"):
        answer = answer.detach().cpu().double().numpy()
    return np.asarray(answer, dtype=np.float64)


def is_low_precision(answer):
    """True when ``answer`` (or every array in a list of answers) is float32 or narrower.

    NumPy arrays and torch tensors carry a ``dtype``; Python numbers and lists count as float64.
    """
    if isinstance(answer, (list, tuple)) and answer and all(hasattr(a, "dtype") for a in answer):
        return any(is_low_precision(a) for a in answer)
    return _dtype_name(answer) in ("float32", "float16", "bfloat16")


def flatten_answers(answers, shapes):
    """``(low_precision, flat float64 array)`` from one answer per case, each of its case's shape.

    Raises ``ValueError`` naming the case when an answer has the wrong shape, so the learner reads
    which input went wrong rather than a mismatch between concatenated arrays.
    """
    flat = []
    for answer, shape in zip(answers, shapes, strict=True):
        values = as_float64(answer)
        if values.shape != tuple(shape):
            raise ValueError(f"for an input of shape {tuple(shape)} the answer must have shape "
                             f"{tuple(shape)}, got {values.shape}")
        flat.append(values.reshape(-1))
    return any(is_low_precision(a) for a in answers), np.concatenate(flat)


def grade_by_precision(name, compute, expected, *, hints=(), tol64=(1e-9, 1e-12),
                       tol32=(1e-5, 1e-6)):
    """:func:`~course_utils.exercises.grade` with ``(rtol, atol)`` chosen by the answer's precision.

    ``compute()`` returns ``(low_precision, answer)``. A float32 (or narrower) answer is compared
    with ``tol32``, any other with ``tol64``; hints are matched with the same tolerances.
    """
    from . import grade

    try:
        low, answer = compute()
    except Exception:  # not attempted, or a learner's bug: grade reports it
        return grade(name, lambda: compute()[1], expected, hints=hints, rtol=tol64[0],
                     atol=tol64[1])
    rtol, atol = tol32 if low else tol64
    return grade(name, lambda: answer, expected, hints=hints, rtol=rtol, atol=atol)
