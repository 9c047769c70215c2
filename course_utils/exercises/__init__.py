"""Exercise checkers: one module per topic, built on :func:`grade`.

A learner's stub either is ``...`` (an answer not yet given) or is a function whose body raises
``NotImplementedError``. A checker reports one of three verdicts and returns whether it passed:

- ``NOT ATTEMPTED  <exercise>``: the stub is untouched;
- ``PASS  <exercise>``: the answer is right;
- ``TRY AGAIN  <exercise>: <hint>``: the answer is wrong, with a hint that points at the likely mistake.

Every printed line fits :data:`LINE_WIDTH` characters (the notebooks' line length): a verdict
too long for one line continues on indented lines.

Checkers never raise for a wrong answer, so "Run all" goes on past an unfinished exercise. Solution
cells wrap the checker in :func:`require_pass`, which does raise: a wrong solution stops the
notebook, ``require_pass(check_relative_score(relative_score_solution))``.
"""

from __future__ import annotations

import textwrap

import numpy as np

__all__ = ["grade", "answer_of", "require_pass", "LINE_WIDTH"]

LINE_WIDTH = 88


def _say(verdict, name, detail=None):
    """Print ``VERDICT  name: detail`` within LINE_WIDTH columns, wrapping onto indented lines."""
    head = f"{verdict}  {name}"
    if detail is None:
        text = head
    elif len(head) + 2 + len(detail) <= LINE_WIDTH:
        text = f"{head}: {detail}"
    else:
        text = f"{head}:\n" + textwrap.fill(detail, LINE_WIDTH, initial_indent="    ",
                                            subsequent_indent="    ", break_long_words=False,
                                            break_on_hyphens=False)
    if len(head) > LINE_WIDTH:
        text = textwrap.fill(head, LINE_WIDTH, subsequent_indent="    ") + text[len(head):]
    print(text)


def require_pass(verdict):
    """Raise unless a checker's verdict is PASS: solution cells call ``require_pass(check_x(answer))``.

    A checker returns True for PASS and False for NOT ATTEMPTED or TRY AGAIN (it has printed which,
    with its hint); anything else is not a checker's verdict and raises ``TypeError``.
    """
    if not isinstance(verdict, (bool, np.bool_)):
        raise TypeError(f"verdict must be a checker's return value (True or False), got {verdict!r:.60}")
    if not verdict:
        raise AssertionError("the solution did not pass its checker: see the verdict printed above")
    return None


class _NotAttempted(Exception):
    pass


def answer_of(stub, *args, **kwargs):
    """The learner's answer: ``stub`` itself, or ``stub(*args, **kwargs)`` if it is callable.

    Raises an internal "not attempted" signal for ``...``, ``None`` or a stub that raises
    ``NotImplementedError``; :func:`grade` turns that into the NOT ATTEMPTED verdict.
    """
    if stub is ... or stub is None:
        raise _NotAttempted
    if callable(stub):
        try:
            result = stub(*args, **kwargs)
        except NotImplementedError as exc:
            raise _NotAttempted from exc
        if result is ... or result is None:
            raise _NotAttempted
        return result
    return stub


def grade(name, compute_answer, expected, *, hints=(), rtol=1e-6, atol=1e-9):
    """Compare a learner's answer with ``expected`` and print one verdict line.

    Parameters
    ----------
    name : str
        The exercise, e.g. ``"Exercise 2.1: wavelength of pair i"``.
    compute_answer : callable
        No arguments; returns the learner's answer (use :func:`answer_of` inside it).
    expected : array_like
        The right answer, computed from a formula (never typed in).
    hints : sequence of (wrong_answer, hint) pairs
        Plausible wrong answers with the hint to give when the learner's answer matches one.
        Checked in order; the first match wins. A wrong answer that matches none gets a generic
        hint with the shapes and the largest error.
    rtol, atol : float
        Tolerances for "matches".

    Returns
    -------
    bool : True for PASS.
    """
    _check_grade_arguments(name, compute_answer, hints, rtol, atol)
    try:
        answer = compute_answer()
    except _NotAttempted:
        _say("NOT ATTEMPTED", name, "replace the stub with your answer, then run this cell again")
        return False
    except Exception as exc:  # a learner's bug: report it as a hint, do not crash the notebook
        _say("TRY AGAIN", name, f"your code raised {type(exc).__name__}: {exc}")
        return False
    if _matches(answer, expected, rtol, atol):
        _say("PASS", name)
        return True
    for wrong, hint in hints:
        if _matches(answer, wrong, rtol, atol):
            _say("TRY AGAIN", name, hint)
            return False
    try:
        a = np.asarray(answer, dtype=np.float64)
        e = np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        _say("TRY AGAIN", name, f"expected numbers, got {type(answer).__name__}")
        return False
    if a.shape != e.shape:
        _say("TRY AGAIN", name, f"expected shape {e.shape}, got {a.shape}")
    else:
        err = float(np.max(np.abs(a - e))) if a.size else 0.0
        _say("TRY AGAIN", name, f"right shape {a.shape}, but values differ (max error {err:.3g})")
    return False


def _check_grade_arguments(name, compute_answer, hints, rtol, atol):
    """Errors in a checker's own call (not in a learner's answer) raise, naming the argument."""
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a non-empty string naming the exercise, got {name!r:.60}")
    if not callable(compute_answer):
        raise TypeError(f"compute_answer must be callable with no arguments, got {compute_answer!r:.60}")
    if not isinstance(hints, (list, tuple)) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[1], str)
            for pair in hints):
        raise TypeError(f"hints must be a sequence of (wrong_answer, hint text) pairs, got {hints!r:.60}")
    for arg, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value < 0:
            raise ValueError(f"{arg} must be a non-negative finite number, got {value!r:.60}")


def _matches(answer, expected, rtol, atol):
    try:
        a = np.asarray(answer, dtype=np.float64)
        e = np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == e.shape and bool(np.all(np.isclose(a, e, rtol=rtol, atol=atol)))
