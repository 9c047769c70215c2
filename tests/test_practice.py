"""course_utils.practice: position ids from masks, packed sequences, masks and the key-value cache.

Known answers are written out from the definitions (cumsum(mask) - 1; ids restarting per document);
reference tests compare with the torch expressions Hugging Face uses.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.alibi import alibi_bias
from course_utils.attention import causal_mask, scaled_dot_product_attention
from course_utils.practice import (
    KVCache,
    block_diagonal_mask,
    document_starts_from_position_ids,
    mask_to_bias,
    packed_document_ids,
    packed_position_ids,
    padding_causal_mask,
    position_ids_from_attention_mask,
)
from course_utils.rope import apply_rope

MASK = np.array([[0, 0, 1, 1, 1],
                 [1, 1, 1, 1, 1],
                 [0, 0, 0, 0, 1]])


# --- position ids from an attention mask -----------------------------------------------------

def test_position_ids_known_values():
    expected = np.array([[0, 0, 0, 1, 2],
                         [0, 1, 2, 3, 4],
                         [0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(position_ids_from_attention_mask(MASK), expected)
    ones = position_ids_from_attention_mask(MASK, pad_position=1)
    np.testing.assert_array_equal(ones[0], [1, 1, 0, 1, 2])
    assert position_ids_from_attention_mask(MASK).dtype == np.int64


def test_position_ids_right_padding_counts_from_zero():
    np.testing.assert_array_equal(position_ids_from_attention_mask([[1, 1, 1, 0]]), [[0, 1, 2, 0]])


def test_position_ids_match_transformers_expression(torch):
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 9, size=6)
    mask = (np.arange(8)[None, :] >= 8 - lengths[:, None]).astype(np.int64)   # left padding
    t = torch.from_numpy(mask)
    # generation/utils.py, GenerationMixin._prepare_position_ids_for_generation
    expected = (t.long().cumsum(-1) - 1).masked_fill(t == 0, 0).numpy()
    np.testing.assert_array_equal(position_ids_from_attention_mask(mask), expected)


def test_position_ids_match_generation_mixin(transformers, torch):
    from transformers.generation.utils import GenerationMixin

    method = getattr(GenerationMixin, "_prepare_position_ids_for_generation", None)
    if method is None:
        pytest.skip("this transformers version builds position ids inside each model")
    mask = torch.from_numpy(MASK)
    expected = method(None, torch.zeros_like(mask), {"attention_mask": mask}).numpy()
    np.testing.assert_array_equal(position_ids_from_attention_mask(MASK), expected)


@pytest.mark.parametrize("bad", [[[0, 2, 1]], [0, 1, 1], [[]], [[0.5, 1.0]]])
def test_position_ids_validation(bad):
    with pytest.raises((ValueError, TypeError), match="attention_mask"):
        position_ids_from_attention_mask(bad)


def test_pad_position_validation():
    with pytest.raises(ValueError, match="pad_position"):
        position_ids_from_attention_mask(MASK, pad_position=-1)


# --- packed sequences ---------------------------------------------------------------------------

def test_packed_ids_known_values():
    np.testing.assert_array_equal(packed_position_ids([3, 2]), [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(packed_position_ids([1, 1, 2]), [0, 0, 0, 1])
    np.testing.assert_array_equal(packed_document_ids([3, 2]), [0, 0, 0, 1, 1])


@given(st.lists(st.integers(1, 20), min_size=1, max_size=8))
def test_packed_ids_equal_concatenated_aranges(lengths):
    expected = np.concatenate([np.arange(n) for n in lengths])
    np.testing.assert_array_equal(packed_position_ids(lengths), expected)
    starts = document_starts_from_position_ids(packed_position_ids(lengths))
    np.testing.assert_array_equal(starts, np.cumsum([0] + lengths))


@pytest.mark.parametrize("bad", [[], [3, 0], [2, -1], [[1, 2]], [1.5]])
def test_lengths_validation(bad):
    with pytest.raises(ValueError, match="lengths"):
        packed_position_ids(bad)


def test_block_diagonal_mask_known_values():
    expected = np.array([[1, 0, 0],
                         [1, 1, 0],
                         [0, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(block_diagonal_mask([2, 1]), expected)
    bidirectional = np.array([[1, 1, 0],
                              [1, 1, 0],
                              [0, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(block_diagonal_mask([2, 1], causal=False), bidirectional)
    np.testing.assert_array_equal(block_diagonal_mask([5]), causal_mask(5))


def test_document_starts_of_running_ids_is_one_document():
    np.testing.assert_array_equal(document_starts_from_position_ids(np.arange(7)), [0, 7])
    # RoBERTa-style ids start at padding_idx + 1 = 2: boundaries are where the minimum recurs.
    np.testing.assert_array_equal(document_starts_from_position_ids([2, 3, 4, 2, 3]), [0, 3, 5])


def test_document_starts_match_transformers(transformers, torch):
    from transformers.modeling_flash_attention_utils import prepare_fa_kwargs_from_position_ids

    ids = packed_position_ids([4, 1, 6, 2])
    (cu_q, _), _ = prepare_fa_kwargs_from_position_ids(torch.from_numpy(ids)[None])
    np.testing.assert_array_equal(document_starts_from_position_ids(ids), cu_q.numpy())


def test_packed_rope_attention_equals_documents_alone():
    rng = np.random.default_rng(2)
    lengths = [3, 5, 2]
    q, k, v = rng.normal(size=(3, sum(lengths), 8))
    ids = packed_position_ids(lengths)
    out, _ = scaled_dot_product_attention(apply_rope(q, ids, layout="half"),
                                          apply_rope(k, ids, layout="half"), v,
                                          bias=mask_to_bias(block_diagonal_mask(lengths)))
    start = 0
    for n in lengths:
        sl = slice(start, start + n)
        alone, _ = scaled_dot_product_attention(apply_rope(q[sl], np.arange(n), layout="half"),
                                                apply_rope(k[sl], np.arange(n), layout="half"),
                                                v[sl], causal=True)
        np.testing.assert_allclose(out[sl], alone, atol=1e-12)
        start += n


# --- masks ---------------------------------------------------------------------------------------

def test_padding_causal_mask_known_values():
    allowed = padding_causal_mask([[0, 1, 1]])
    expected = np.array([[[1, 0, 0],     # the pad query sees only itself
                          [0, 1, 0],
                          [0, 1, 1]]], dtype=bool)
    np.testing.assert_array_equal(allowed, expected)


def test_padding_causal_mask_without_pads_is_causal():
    np.testing.assert_array_equal(padding_causal_mask(np.ones((2, 6), dtype=int)),
                                  np.broadcast_to(causal_mask(6), (2, 6, 6)))


def test_padding_causal_mask_decoding_rows_are_the_last_rows():
    full = padding_causal_mask(MASK)
    np.testing.assert_array_equal(padding_causal_mask(MASK, n_queries=2), full[:, -2:])
    with pytest.raises(ValueError, match="n_queries"):
        padding_causal_mask(MASK, n_queries=6)


def test_mask_to_bias():
    bias = mask_to_bias(np.array([True, False]))
    assert bias[0] == 0.0 and bias[1] == -np.inf
    with pytest.raises(TypeError, match="boolean"):
        mask_to_bias(np.array([1, 0]))


# --- the key-value cache -------------------------------------------------------------------------

def test_cache_appends_along_the_sequence_axis():
    cache = KVCache()
    assert cache.length == 0
    k1, v1 = np.ones((2, 3, 4)), np.zeros((2, 3, 5))
    cache.append(k1, v1)
    keys, values = cache.append(2 * np.ones((2, 1, 4)), np.ones((2, 1, 5)))
    assert cache.length == 4 and keys.shape == (2, 4, 4) and values.shape == (2, 4, 5)
    np.testing.assert_array_equal(keys[:, 3], 2.0)


def test_cache_validation():
    cache = KVCache()
    with pytest.raises(ValueError, match="share"):
        cache.append(np.ones((3, 4)), np.ones((2, 4)))
    cache.append(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="do not match"):
        cache.append(np.ones((1, 5)), np.ones((1, 4)))
    with pytest.raises(ValueError, match="at least 2"):
        cache.append(np.ones(4), np.ones(4))


@pytest.mark.parametrize("prefix", [1, 4, 9])
def test_cached_rope_generation_equals_the_full_pass(prefix):
    rng = np.random.default_rng(prefix)
    n = 10
    q, k, v = rng.normal(size=(3, n, 8))
    rq, rk = apply_rope(q, np.arange(n), layout="half"), apply_rope(k, np.arange(n), layout="half")
    full, _ = scaled_dot_product_attention(rq, rk, v, causal=True)
    cache = KVCache()
    outs = [scaled_dot_product_attention(rq[:prefix], *cache.append(rk[:prefix], v[:prefix]),
                                         causal=True)[0]]
    for t in range(prefix, n):
        qt = apply_rope(q[t:t + 1], [cache.length], layout="half")
        kt = apply_rope(k[t:t + 1], [cache.length], layout="half")
        outs.append(scaled_dot_product_attention(qt, *cache.append(kt, v[t:t + 1]), causal=True)[0])
    np.testing.assert_allclose(np.concatenate(outs), full, atol=1e-12)


def test_cached_alibi_generation_equals_the_full_pass():
    rng = np.random.default_rng(5)
    h, n = 6, 9
    q, k, v = rng.normal(size=(3, h, n, 4))
    full, _ = scaled_dot_product_attention(q, k, v, bias=alibi_bias(h, n))
    cache = KVCache()
    outs = []
    for t in range(n):
        keys, values = cache.append(k[:, t:t + 1], v[:, t:t + 1])
        outs.append(scaled_dot_product_attention(q[:, t:t + 1], keys, values,
                                                 bias=alibi_bias(h, 1, t + 1))[0])
    np.testing.assert_allclose(np.concatenate(outs, axis=1), full, atol=1e-12)
