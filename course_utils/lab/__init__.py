"""The length-generalisation lab: a tiny attention model in numpy, trained short and tested long.

- :mod:`course_utils.lab.tasks`: synthetic tasks (``copy_back``, ``recall``) with known answers.
- :mod:`course_utils.lab.model`: a two-layer decoder with six positional schemes, its
  hand-written backward pass, a finite-difference gradient check and attention probes.
- :mod:`course_utils.lab.train`: Adam, training, evaluation at longer lengths, the experiment.
- :mod:`course_utils.lab.report`: the results table and figure (``n/a`` where there is no output).

Everything is numpy and seeded; positions enter only through the course's own modules.
"""
