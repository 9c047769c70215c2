"""Index arrays work where numpy's index type is 32-bit (32-bit and WebAssembly builds of numpy).

There, ``np.intp`` is ``int32`` and ``np.repeat`` / ``np.bincount`` refuse int64 index arrays
(``TypeError: Cannot cast array data from dtype('int64') to dtype('int32') according to the
rule 'safe'``). On a 64-bit machine both types are int64 and such a bug cannot show, so these
tests run the functions against a numpy whose ``intp`` is ``int32`` and whose ``repeat`` and
``bincount`` cast their index arguments with numpy's 'safe' rule, as a 32-bit numpy does.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import course_utils.lab.model as lab_model
import course_utils.practice as practice
from course_utils.lab.model import ModelConfig, init_params, loss_and_grads


def _as_index(values, name):
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return values.astype(np.int32, casting="safe")  # raises TypeError for int64, as on 32-bit
    raise TypeError(f"{name} must be an integer array, got {values.dtype}")


class _Numpy32(types.ModuleType):
    """numpy, except that its index type is int32."""

    intp = np.int32

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def repeat(a, repeats, axis=None):
        return np.repeat(a, _as_index(repeats, "repeats"), axis=axis)

    @staticmethod
    def bincount(x, weights=None, minlength=0):
        return np.bincount(_as_index(x, "x"), weights=weights, minlength=minlength)


@pytest.fixture
def numpy32(monkeypatch):
    fake = _Numpy32("numpy")
    monkeypatch.setattr(practice, "np", fake)
    monkeypatch.setattr(lab_model, "np", fake)
    return fake


def test_the_emulation_rejects_int64_indices(numpy32):
    with pytest.raises(TypeError, match="Cannot cast"):
        numpy32.repeat(np.arange(3), np.array([1, 2, 3], dtype=np.int64))
    with pytest.raises(TypeError, match="Cannot cast"):
        numpy32.bincount(np.array([0, 1, 1], dtype=np.int64))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16])
def test_packed_ids_with_a_32_bit_index_type(numpy32, dtype):
    lengths = np.array([3, 2, 1], dtype=dtype)
    assert practice.packed_position_ids(lengths).tolist() == [0, 1, 2, 0, 1, 0]
    assert practice.packed_document_ids(lengths).tolist() == [0, 0, 0, 1, 1, 2]
    assert practice.packed_position_ids([4]).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("scheme", ["t5", "learned"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_lab_gradients_with_a_32_bit_index_type(monkeypatch, scheme, dtype):
    # Both _row_sums (token embedding) and _bucket_sums (T5 table) scatter-add with np.bincount.
    config = ModelConfig(scheme=scheme, vocab_size=5, d_model=8, n_heads=2, d_mlp=8, max_len=6,
                         t5_num_buckets=4, t5_max_distance=4)
    params = init_params(config, seed=0)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 5, size=(2, 6)).astype(dtype)
    labels = rng.integers(0, 5, size=(2, 6)).astype(dtype)
    mask = np.ones((2, 6), dtype=bool)
    expected_loss, expected = loss_and_grads(params, config, tokens, labels, mask)
    fake = _Numpy32("numpy")
    monkeypatch.setattr(lab_model, "np", fake)
    loss, grads = loss_and_grads(params, config, tokens, labels, mask)
    assert loss == expected_loss
    for name, grad in expected.items():
        np.testing.assert_array_equal(grads[name], grad, err_msg=name)
