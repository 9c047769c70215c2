"""Stubs as a learner receives them, and the printed verdict, shared by the exercise-checker tests."""


def stub_function(*args, **kwargs):
    """An exercise function the learner has not filled in yet."""
    raise NotImplementedError


def printed(capsys):
    """What the checker printed, with line breaks and runs of spaces joined into single spaces
    (verdicts wrap at 88 characters, hints are matched across the wrap)."""
    return " ".join(capsys.readouterr().out.split())
