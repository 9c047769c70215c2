"""Argument validation shared by every public function.

Every error names the argument, the value received and what is accepted, so a learner never
has to read a traceback from deep inside numpy.
"""

from __future__ import annotations

import numbers
import os
import pathlib

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


def _all_finite(array: np.ndarray, *, allow_neginf: bool = False) -> bool:
    """True when no entry is NaN or +inf, nor -inf unless ``allow_neginf``.

    A NaN or an infinity makes the sum NaN or infinite, so a finite sum proves every entry finite
    in one read-only pass, about twice as fast as ``np.isfinite(array).all()`` on the large arrays
    of ``make bench``. Only a sum that is not finite (an infinity, a NaN, or an overflow) leads to
    the entry-by-entry check.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(array)
    if np.isfinite(total):
        return True
    finite = np.isfinite(array)
    if allow_neginf:
        finite |= np.isneginf(array)
    return bool(finite.all())


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
        if not _all_finite(array, allow_neginf=allow_neginf):
            allowed = "NaN or +inf; -inf marks a masked entry" if allow_neginf else "NaN or inf"
            raise ValueError(f"{arg} must be finite (no {allowed})")
        if integer:
            if not np.all(array == np.round(array)):
                raise ValueError(
                    f"{arg} must hold whole numbers (integer positions), got fractional values"
                )
            if array.size and np.max(np.abs(array)) >= 2.0**63:
                raise ValueError(f"{arg} must hold integers of magnitude below 2**63 (int64)")
            array = array.astype(np.int64)
    elif integer and array.size and array.dtype.itemsize == 8 and (
            int(array.max()) > _INT64_MAX or int(array.min()) < -_INT64_MAX):
        raise ValueError(f"{arg} must hold integers of magnitude below 2**63 (int64)")
    return array


_INT64_MAX = 2**63 - 1  # -2**63 is excluded too: its absolute value does not fit in int64


def query_key_counts(n_queries: object, n_keys: object) -> tuple[int, int]:
    """Validate ``(n_queries, n_keys)`` where the queries are the last ``n_queries`` of the keys.

    ``n_keys=None`` means ``n_keys = n_queries`` (no cache).
    """
    n_queries = positive_int(n_queries, "n_queries")
    n_keys = n_queries if n_keys is None else positive_int(n_keys, "n_keys")
    if n_keys < n_queries:
        raise ValueError(
            f"n_keys must be >= n_queries (queries are the last n_queries of the keys), got "
            f"n_keys={n_keys}, n_queries={n_queries}"
        )
    return n_queries, n_keys


def path(value: object, arg: str) -> pathlib.Path:
    """``value`` as a path, or an error naming ``arg`` (an int would open a file descriptor)."""
    if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes):
        raise TypeError(f"{arg} must be a path (str or os.PathLike), got {_describe(value)}")
    if not str(value) or "\0" in str(value):
        raise ValueError(f"{arg} must be a non-empty path without NUL characters, got {value!r:.60}")
    return pathlib.Path(value)
