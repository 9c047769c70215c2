"""The lab's attention probes, result table and figure, against hand-computed answers."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_utils.alibi import alibi_slopes
from course_utils.lab.model import (
    ModelConfig,
    attention_beyond,
    attention_to_offset,
    init_params,
)
from course_utils.lab.report import plot_accuracy, results_table
from course_utils.lab.tasks import make_task
from course_utils.lab.train import Experiment

TASK = make_task("copy_back", k=2, n_symbols=5)


def _alibi_without_content(n_layers=1):
    # W_q = W_k = 0: every score is ALiBi's bias alone, so head h gives key j of query i the weight
    # exp(-m_h (i - j)) / sum_{l <= i} exp(-m_h (i - l)).
    config = ModelConfig(scheme="alibi", vocab_size=TASK.vocab_size, d_model=8, n_heads=2,
                         n_layers=n_layers, d_mlp=0)
    params = init_params(config, seed=0)
    for layer in range(n_layers):
        params[f"l{layer}.wq"][:] = 0.0
        params[f"l{layer}.wk"][:] = 0.0
    return config, params


def _geometric_weight(m, query, distance):
    return np.exp(-m * distance) / np.exp(-m * np.arange(query + 1)).sum()


def test_attention_to_offset_with_bias_only_attention():
    config, params = _alibi_without_content(n_layers=2)
    tokens = TASK.batch(np.random.default_rng(0), 3, 10)[0]
    measured = attention_to_offset(params, tokens, config, 2, from_position=5)
    expected = [np.mean([_geometric_weight(m, i, 2) for i in range(5, 10)]) for m in alibi_slopes(2)]
    assert measured.shape == (2, 2)
    np.testing.assert_allclose(measured, [expected, expected], rtol=1e-12)


def test_attention_beyond_with_bias_only_attention():
    config, params = _alibi_without_content()
    tokens = TASK.batch(np.random.default_rng(1), 2, 12)[0]
    measured = attention_beyond(params, tokens, config, 4, from_position=6)
    expected = [np.mean([sum(_geometric_weight(m, i, d) for d in range(4, i + 1))
                         for i in range(6, 12)]) for m in alibi_slopes(2)]
    np.testing.assert_allclose(measured[0], expected, rtol=1e-12)
    # distance 0 and up covers every key: all the attention
    np.testing.assert_allclose(attention_beyond(params, tokens, config, 0), 1.0, rtol=1e-12)


def _experiment(accuracy):
    accuracy = np.asarray(accuracy, dtype=float)
    n_seeds = accuracy.shape[-1]
    return Experiment(task=TASK, schemes=("learned", "rope"), lengths=(16, 32),
                      seeds=tuple(range(n_seeds)), train_length=16, accuracy=accuracy,
                      losses=np.zeros((2, n_seeds, 3)), models={})


def test_table_prints_na_not_zero():
    table = results_table(_experiment([[[1.0], [np.nan]], [[0.5], [0.25]]]))
    lines = table.splitlines()
    assert lines[0].split() == ["scheme", "1x", "=", "16", "2x", "=", "32"]
    assert lines[2].split() == ["learned", "absolute", "1.00", "n/a"]
    assert lines[3].split() == ["RoPE", "0.50", "0.25"]


def test_table_with_seeds_gives_mean_and_range():
    table = results_table(_experiment([[[1.0, 1.0, 1.0], [np.nan] * 3],
                                       [[0.4, 0.6, 0.8], [0.2, 0.2, 0.2]]]))
    assert "0.60 [0.40-0.80]" in table and "0.20 [0.20-0.20]" in table and "n/a" in table


def test_table_refuses_nan_for_some_seeds_only():
    with pytest.raises(ValueError, match="some seeds"):
        results_table(_experiment([[[1.0, 1.0], [np.nan, 0.3]], [[0.4, 0.6], [0.2, 0.2]]]))


def test_figure_draws_no_point_where_there_is_no_output():
    ax = plot_accuracy(_experiment([[[1.0], [np.nan]], [[0.5], [0.25]]]), title="t")
    learned, rope = ax.get_lines()[:2]
    assert "n/a beyond 16" in learned.get_label()
    assert np.isnan(learned.get_ydata()[1]) and learned.get_ydata()[0] == 1.0
    np.testing.assert_array_equal(rope.get_ydata(), [0.5, 0.25])
    plt.close(ax.figure)
