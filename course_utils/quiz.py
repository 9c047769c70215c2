"""Self-check questions at the end of each chapter, shown with jupyterquiz.

The questions are data: ``course_utils/data/quizzes/NN.json`` (NN = the chapter's number), a list
in jupyterquiz's format (``multiple_choice`` with ``answers`` that carry ``correct`` and
``feedback``, or ``numeric`` with a ``value`` answer, a ``precision`` and a ``default``
feedback), plus an ``id`` per question. ``tests/test_quizzes.py`` recomputes every correct answer
by that id with the course's own functions, or finds it in the chapter's text, so a question
cannot drift from its chapter.

:func:`show_quiz` renders them with ``jupyterquiz.display_quiz``: the questions, their script
and styles are in the cell's output, so they answer in Jupyter and on the static site alike,
without a kernel and without loading anything from elsewhere. The container's id comes from a
seeded random generator, so re-running a notebook gives the same output.

References
----------
jupyterquiz (J. M. Shea), ``jupyterquiz/dynamic/display.py``, ``display_quiz``.
"""

from __future__ import annotations

import json
import random

from course_utils.data import DATA_DIR

__all__ = ["QUIZ_DIR", "quiz_chapters", "quiz_questions", "show_quiz"]

QUIZ_DIR = DATA_DIR / "quizzes"
_SHOWN_KEYS = ("question", "type", "answers", "precision", "answer_cols", "code")


def quiz_chapters() -> list[int]:
    """The chapter numbers that have self-check questions."""
    return sorted(int(path.stem) for path in QUIZ_DIR.glob("[0-9][0-9].json"))


def quiz_questions(chapter: int) -> list[dict]:
    """The questions of one chapter, as stored (with their ``id``).

    Parameters
    ----------
    chapter : int
        The chapter's number, one of :func:`quiz_chapters`.
    """
    if isinstance(chapter, bool) or not isinstance(chapter, int):
        raise TypeError(f"chapter must be an int, got {type(chapter).__name__}")
    available = quiz_chapters()
    if chapter not in available:
        raise ValueError(f"chapter must be one of {available} (chapters with self-check "
                         f"questions), got {chapter}")
    return json.loads((QUIZ_DIR / f"{chapter:02d}.json").read_text(encoding="utf-8"))


def show_quiz(chapter: int) -> None:
    """Display chapter ``chapter``'s self-check questions (click or type an answer to check it)."""
    questions = []
    for item in quiz_questions(chapter):
        shown = {key: item[key] for key in _SHOWN_KEYS if key in item}
        # "key" and "id" name an answer and a question for the tests; the reader does not see them.
        shown["answers"] = [{k: v for k, v in answer.items() if k != "key"}
                            for answer in item["answers"]]
        questions.append(shown)
    from jupyterquiz import display_quiz

    state = random.getstate()
    random.seed(f"course-quiz-{chapter:02d}")  # display_quiz names its container at random
    try:
        display_quiz(questions, shuffle_answers=False, max_width=560)
    finally:
        random.setstate(state)
