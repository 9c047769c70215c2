"""course_utils.modern: known answers from the formulas in the config classes and papers, brute-force
loops, and one test per input error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.modern import (
    attention_with_sinks,
    chunked_attention_mask,
    deepseek_rope,
    deepseek_softmax_scale,
    llama4_attn_scales,
    llama4_layer_types,
    mla_scores,
    no_rope_layers,
    partial_rotary_dim,
    sliding_window_layer_types,
    sliding_window_mask,
    streaming_cache,
    turns_within,
)


def test_partial_rotary_dim_known_answers():
    # GPT-NeoX-20B 96 x 0.25, Phi-1 64 x 0.5, Qwen3-Next 256 x 0.25, 80 x 0.4
    assert [partial_rotary_dim(d, f) for d, f in [(96, 0.25), (64, 0.5), (256, 0.25), (80, 0.4)]] \
        == [24, 32, 64, 32]


def test_llama4_scales_known_answers():
    m = np.array([0, 8190, 8191, 16383, 131071])
    expected = [1, 1, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(3), 1 + 0.1 * math.log(17)]
    np.testing.assert_allclose(llama4_attn_scales(m), expected, rtol=1e-15)


def test_sliding_window_mask_by_loop():
    mask = sliding_window_mask(4, 3, n_keys=9)
    for row, m in enumerate(range(5, 9)):
        for n in range(9):
            assert mask[row, n] == (0 <= m - n < 3)


@pytest.mark.parametrize("n_queries, chunk, n_keys", [(9, 3, None), (4, 4, 11), (7, 1, 7),
                                                      (5, 16, 12)])
def test_chunked_attention_mask_by_loop(n_queries, chunk, n_keys):
    mask = chunked_attention_mask(n_queries, chunk, n_keys=n_keys)
    keys = n_queries if n_keys is None else n_keys
    assert mask.shape == (n_queries, keys)
    for row, m in enumerate(range(keys - n_queries, keys)):
        start = m  # the first position of m's chunk, found by walking back
        while start % chunk:
            start -= 1
        for n in range(keys):
            assert mask[row, n] == (start <= n <= m)


def test_layer_patterns_known_answers():
    assert np.flatnonzero(no_rope_layers(12, 4) == 0).tolist() == [3, 7, 11]
    assert llama4_layer_types([1, 0]) == ["chunked_attention", "full_attention"]
    types = sliding_window_layer_types(12, 6)
    assert [i for i, t in enumerate(types) if t == "full_attention"] == [5, 11]


def test_turns_within_and_streaming_cache():
    np.testing.assert_allclose(turns_within(100, [2 * np.pi, np.pi]), [100, 50])
    kept, pos = streaming_cache(20, n_sink=4, window=5, reassign=False)
    assert kept.tolist() == [0, 1, 2, 3, 15, 16, 17, 18, 19] == pos.tolist()
    assert streaming_cache(6, n_sink=4, window=5)[0].tolist() == list(range(6))


def test_deepseek_softmax_scale_default_and_yarn():
    assert deepseek_softmax_scale(192) == 192 ** -0.5
    params = {"rope_type": "yarn", "factor": 40.0, "mscale_all_dim": 0.707}
    assert deepseek_softmax_scale(192, params) == pytest.approx(
        192 ** -0.5 * (0.1 * 0.707 * math.log(40) + 1) ** 2)


def test_sinks_with_very_negative_logit_are_plain_attention():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 1, 5, 4))
    _, w = attention_with_sinks(q, k, v, np.array([-1e4]))
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda: partial_rotary_dim(90, 0.1), ValueError, "not even"),
    (lambda: partial_rotary_dim(64, 1.5), ValueError, "partial_rotary_factor"),
    (lambda: partial_rotary_dim(64, 0.0), ValueError, "partial_rotary_factor"),
    (lambda: partial_rotary_dim(64.0, 0.5), TypeError, "head_dim"),
    (lambda: no_rope_layers(0), ValueError, "num_hidden_layers"),
    (lambda: no_rope_layers(8, 0), ValueError, "no_rope_layer_interval"),
    (lambda: llama4_layer_types([1, 2]), ValueError, "no_rope_layers_list"),
    (lambda: sliding_window_layer_types(8, 0), ValueError, "sliding_window_pattern"),
    (lambda: llama4_attn_scales([-1]), ValueError, "positions"),
    (lambda: llama4_attn_scales([1.5]), ValueError, "positions"),
    (lambda: llama4_attn_scales([1], floor_scale=0), ValueError, "floor_scale"),
    (lambda: sliding_window_mask(3, 0), ValueError, "window"),
    (lambda: chunked_attention_mask(3, 0), ValueError, "chunk_size"),
    (lambda: chunked_attention_mask(3, 2.5), TypeError, "chunk_size"),
    (lambda: chunked_attention_mask(5, 2, n_keys=3), ValueError, "n_keys"),
    (lambda: turns_within(10, [1.0, -1.0]), ValueError, "inv_freq"),
    (lambda: turns_within(0, [1.0]), ValueError, "span"),
    (lambda: deepseek_rope(np.ones((2, 4)), [0, 1], inv_freq=[1.0, 0.1], rope_interleave=1),
     TypeError, "rope_interleave"),
    (lambda: deepseek_softmax_scale(192, "yarn"), TypeError, "rope_parameters"),
    (lambda: deepseek_softmax_scale(192, {"rope_type": "yarn", "mscale_all_dim": 1.0}), ValueError,
     "factor"),
    (lambda: mla_scores(np.ones((2, 3, 4)), np.ones((2, 3, 2)), np.ones((2, 3, 4)), np.ones((3, 4)),
                        [0, 1, 2], inv_freq=[1.0]), ValueError, "k_rope"),
    (lambda: attention_with_sinks(np.ones((2, 3, 4)), np.ones((2, 3, 4)), np.ones((2, 3, 4)),
                                  np.ones(3)), ValueError, "sink_logits"),
    (lambda: streaming_cache(10, n_sink=-1, window=4), ValueError, "n_sink"),
    (lambda: streaming_cache(10, n_sink=1, window=0), ValueError, "window"),
])
def test_bad_inputs_raise_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
