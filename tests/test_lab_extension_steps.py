"""Steps-to-threshold on a summarise record built by hand (expected values read off the
table below, not from the code)."""

import numpy as np
import pytest

from course_utils.lab.extension import steps_claim, steps_to_threshold


def _record():
    # far accuracy per (method, multiplier, checkpoint, seed); checkpoints 0, 25, 50, 100
    fast = [[0.1, 0.2, 0.3], [0.6, 0.2, 0.3], [0.7, 0.5, 0.3], [0.8, 0.9, 0.4]]
    slow = [[0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.5, 0.6, 0.4]]
    per_seed = [[fast], [slow]]
    return {"methods": ["yarn", "pi"], "multipliers": [2], "checkpoints": [0, 25, 50, 100],
            "seeds": [0, 1, 2], "accuracy": {"far": {"per_seed": per_seed}},
            "baselines": {"blind": {"far": [0.5]}, "window": {"far": [0.1]}}}


def test_first_checkpoint_at_or_above_the_blind_reader():
    run = _record()
    # seed 0 reaches 0.5 at 25 steps (0.6), seed 1 at 50 (0.5, equal counts), seed 2 never
    np.testing.assert_array_equal(steps_to_threshold(run, "yarn", 2), [25, 50, np.inf])
    np.testing.assert_array_equal(steps_to_threshold(run, "pi", 2), [100, 100, np.inf])
    np.testing.assert_array_equal(steps_to_threshold(run, "pi", 2, threshold=0.55),
                                  [np.inf, 100, np.inf])


def test_paired_claim_caps_never_at_twice_the_last_checkpoint():
    mean, low, high, word, never = steps_claim(_record(), "yarn", "pi", 2, n_resamples=2000)
    # differences pi - yarn: 75, 50, 200 - 200 = 0
    assert mean == pytest.approx(125 / 3)
    assert never == (1, 1)
    assert 0 <= low <= high <= 75
    assert word in ("agrees", "unclear")


def test_bad_threshold_is_named():
    with pytest.raises(ValueError, match="threshold"):
        steps_to_threshold(_record(), "pi", 2, threshold=1.5)
    with pytest.raises(ValueError, match="multiplier"):
        steps_to_threshold(_record(), "pi", 3)
