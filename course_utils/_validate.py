"""Argument validation shared by every public function.

Every error names the argument, the value received and what is accepted, so a learner never
has to read a traceback from deep inside numpy.
"""

from __future__ import annotations

import numbers

import numpy as np


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def positive_int(value: object, arg: str, *, even: bool = False, allow_zero: bool = False) -> int:
    """Return ``value`` as an int, or raise naming ``arg``."""
    kind = "even " if even else ""
    lower = "non-negative" if allow_zero else "positive"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral,)):
        raise TypeError(f"{arg} must be a {lower} {kind}integer, got {_describe(value)}")
    value = int(value)
    if value < 0 or (value == 0 and not allow_zero) or (even and value % 2):
        raise ValueError(f"{arg} must be a {lower} {kind}integer, got {value}")
    return value


def positive_float(value: object, arg: str, *, minimum: float | None = None) -> float:
    """Return ``value`` as a finite positive float (>= ``minimum`` if given)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{arg} must be a positive real number, got {_describe(value)}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{arg} must be a positive finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{arg} must be >= {minimum:g}, got {value!r}")
    return value


def real_float(value: object, arg: str) -> float:
    """Return ``value`` as a finite float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{arg} must be a real number, got {_describe(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{arg} must be finite, got {value!r}")
    return value


def choice(value: object, arg: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        listed = ", ".join(repr(o) for o in options)
        raise ValueError(f"{arg} must be one of {listed}; got {_describe(value)}")
    return value


def boolean(value: object, arg: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{arg} must be True or False, got {_describe(value)}")
    return bool(value)


def float_dtype(value: object, arg: str = "dtype") -> np.dtype:
    try:
        dtype = np.dtype(value)
    except TypeError as exc:
        raise TypeError(f"{arg} must be a floating dtype such as np.float64, got {value!r}") from exc
    if dtype not in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{arg} must be float16, float32 or float64, got {dtype}")
    return dtype


def numeric_array(value: object, arg: str, *, integer: bool = False, min_ndim: int = 0,
                  allow_neginf: bool = False) -> np.ndarray:
    """Convert to an array of real numbers with no NaN/inf; integers only if ``integer``.

    ``allow_neginf`` admits ``-inf`` (a masked attention bias) but still rejects NaN and ``+inf``.
    """
    try:
        array = np.asarray(value)
    except Exception as exc:
        raise TypeError(f"{arg} must be an array of numbers, got {_describe(value)}") from exc
    if array.dtype == np.bool_ or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        kind = "integers" if integer else "real numbers"
        raise TypeError(f"{arg} must be an array of {kind}, got dtype {array.dtype}")
    if array.ndim < min_ndim:
        raise ValueError(f"{arg} must have at least {min_ndim} dimension(s), got shape {array.shape}")
    if np.issubdtype(array.dtype, np.floating):
        finite = np.isfinite(array) | (allow_neginf & np.isneginf(array))
        if not np.all(finite):
            allowed = "NaN or +inf; -inf marks a masked entry" if allow_neginf else "NaN or inf"
            raise ValueError(f"{arg} must be finite (no {allowed})")
        if integer:
            if not np.all(array == np.round(array)):
                raise ValueError(
                    f"{arg} must hold whole numbers (integer positions), got fractional values"
                )
            array = array.astype(np.int64)
    return array
