"""Stubs as a learner receives them, shared by the exercise-checker tests."""


def stub_function(*args, **kwargs):
    """An exercise function the learner has not filled in yet."""
    raise NotImplementedError
