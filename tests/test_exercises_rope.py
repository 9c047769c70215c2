"""The checkers of notebook 05's exercises: NOT ATTEMPTED for the stub, PASS for the right answer,
TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.rope import (
    check_half_layout_weight,
    check_merged_pairs,
    check_relative_score,
)
from course_utils.rope import apply_rope


def _score(q, k, r, base=10000.0):
    """Eq. (score-sum) of notebook 05: Re sum_i conj(z_q,i) z_k,i exp(i r theta_i)."""
    d = len(q)
    theta = base ** (-np.arange(0, d, 2) / d)
    eta = np.conj(q[0::2] + 1j * q[1::2]) * (k[0::2] + 1j * k[1::2])
    return float(np.real(np.sum(eta * np.exp(1j * r * theta))))


def _merged(start, count):
    """One pair in every bfloat16 spacing 2^(j-7) stays apart; the others merge."""
    j = int(np.floor(np.log2(start)))
    return count - count // 2 ** (j - 7)


def _half_layout_by_loop(weight, n_heads):
    """Rows of each head in the order 0, 2, 4, ..., 1, 3, 5, ... built one head at a time."""
    head_dim = weight.shape[0] // n_heads
    blocks = []
    for h in range(n_heads):
        block = weight[h * head_dim:(h + 1) * head_dim]
        blocks.append(np.concatenate([block[0::2], block[1::2]]))
    return np.concatenate(blocks)


def _conversion_script_permute(weight, n_heads):
    # convert_llama_weights_to_hf.py: w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2)
    rows, cols = weight.shape
    per_head = weight.reshape(n_heads, rows // n_heads // 2, 2, cols)
    return per_head.transpose(0, 2, 1, 3).reshape(rows, cols)


@pytest.mark.parametrize("checker, stub", [
    (check_relative_score, stub_function),
    (check_half_layout_weight, stub_function),
    (check_merged_pairs, stub_function),
])
def test_stub_is_not_attempted(checker, stub, capsys):
    assert checker(stub) is False
    assert "NOT ATTEMPTED" in printed(capsys)


def test_relative_score(capsys):
    assert check_relative_score(_score) is True
    assert "PASS" in printed(capsys)
    assert check_relative_score(lambda q, k, r: _score(q, k, -r)) is False
    assert "score at -r" in printed(capsys)
    assert check_relative_score(lambda q, k, r: q @ k) is False
    assert "without RoPE" in printed(capsys)


def test_relative_score_agrees_with_rotating_both_vectors():
    # The formula graded right is what apply_rope's rotations give, at any query position.
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 32))
    for m, n in ((0, 9), (40, 3), (1000, 1000)):
        rotated = apply_rope(np.stack([q, k]), [m, n], layout="interleaved")
        assert np.isclose(rotated[0] @ rotated[1], _score(q, k, n - m), rtol=1e-9, atol=1e-9)


def test_half_layout_weight(capsys):
    assert check_half_layout_weight(_half_layout_by_loop) is True
    assert "PASS" in printed(capsys)
    assert check_half_layout_weight(_conversion_script_permute) is True
    assert "PASS" in printed(capsys)

    def whole_matrix(weight, n_heads):
        return np.concatenate([weight[0::2], weight[1::2]])

    assert check_half_layout_weight(whole_matrix) is False
    assert "within each head" in printed(capsys)

    def inverse(weight, n_heads):
        # half -> interleaved: row 2i takes row i, row 2i+1 takes row i + head_dim/2
        head_dim = weight.shape[0] // n_heads
        out = np.empty_like(weight)
        for h in range(n_heads):
            block = weight[h * head_dim:(h + 1) * head_dim]
            out[h * head_dim:(h + 1) * head_dim][0::2] = block[:head_dim // 2]
            out[h * head_dim:(h + 1) * head_dim][1::2] = block[head_dim // 2:]
        return out

    assert check_half_layout_weight(inverse) is False
    assert "inverse permutation" in printed(capsys)
    assert check_half_layout_weight(lambda weight, n_heads: weight) is False
    assert "unchanged" in printed(capsys)


def test_merged_pairs(capsys):
    assert check_merged_pairs(_merged) is True
    assert "PASS" in printed(capsys)
    assert check_merged_pairs(lambda start, count: count - count / 2 ** (np.floor(
        np.log2(start)) - 8)) is False
    assert "implicit leading 1" in printed(capsys)
    assert check_merged_pairs(lambda start, count: count / 2 ** (np.floor(
        np.log2(start)) - 7)) is False
    assert "stay apart" in printed(capsys)


def test_merged_pairs_agree_with_torch(torch):
    # The counts the checker expects are those torch's bfloat16 conversion gives.
    for start, count in ((512, 512), (6144, 256), (8192, 1024), (40960, 1024)):
        m = torch.arange(start - 1, start + count, dtype=torch.float32).to(torch.bfloat16)
        assert int((m[1:] == m[:-1]).sum()) == _merged(start, count)


def test_relative_score_float32_and_torch_answers_pass(torch, capsys):
    assert check_relative_score(
        lambda q, k, r: np.float32(_score(q.astype(np.float32), k.astype(np.float32), r))) is True
    assert check_relative_score(lambda q, k, r: torch.tensor(_score(q, k, r))) is True
    assert printed(capsys).count("PASS") == 2


def _rotated_score(q, k, r, *, pairs="interleaved", exponent=2.0):
    d = len(q)
    theta = 10000.0 ** (-exponent * np.arange(d // 2) / d)
    if pairs == "half":
        zq, zk = q[:d // 2] + 1j * q[d // 2:], k[:d // 2] + 1j * k[d // 2:]
    else:
        zq, zk = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    return float(np.real(np.sum(np.conj(zq) * zk * np.exp(1j * r * theta))))


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k, r: _rotated_score(q, k, r, exponent=1.0), "2i/d"),
    (lambda q, k, r: _rotated_score(q, k, r, pairs="half"), "half layout"),
    (lambda q, k, r: abs(np.sum(np.conj(q[0::2] + 1j * q[1::2]) * (k[0::2] + 1j * k[1::2])
                                * np.exp(1j * r * 10000.0 ** (-np.arange(0, len(q), 2)
                                                              / len(q))))), "real part"),
    (lambda q, k, r: _score(q, k, r, base=10000.0 ** (64 / len(q))) if len(q) != 64
     else _score(q, k, r), "values differ"),  # a width of 64 typed in
    (lambda q, k, r: np.array([_score(q, k, r)]), "one number"),
])
def test_relative_score_wrong(wrong, hint, capsys):
    assert check_relative_score(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_half_layout_weight_float32_and_torch(torch, capsys):
    assert check_half_layout_weight(
        lambda w, h: _half_layout_by_loop(w, h).astype(np.float32)) is True
    assert check_half_layout_weight(
        lambda w, h: torch.from_numpy(_conversion_script_permute(w, h)).float()) is True
    assert printed(capsys).count("PASS") == 2


def _hard_coded_head_dim(weight, n_heads):
    head_dim = 6  # read off the first test weight instead of weight.shape[0] // n_heads
    per_head = weight.reshape(-1, head_dim // 2, 2, weight.shape[1])
    return per_head.transpose(0, 2, 1, 3).reshape(weight.shape)


def _odd_first(weight, n_heads):
    head_dim = weight.shape[0] // n_heads
    return np.concatenate([np.concatenate([b[1::2], b[0::2]])
                           for b in np.split(weight, weight.shape[0] // head_dim)])


@pytest.mark.parametrize("wrong, hint", [
    (_hard_coded_head_dim, "typing a number in"),
    (_odd_first, "odd channels come first"),
    (lambda w, h: w[:-1], "same shape"),
    (lambda w, h: w.T, "same shape"),
    (lambda w, h: w[::-1], "values differ"),
])
def test_half_layout_weight_more_wrong_answers(wrong, hint, capsys):
    assert check_half_layout_weight(wrong) is False
    out = printed(capsys)
    assert "TRY AGAIN" in out and hint in out


def test_hard_coded_head_dim_is_right_on_the_first_shape_only():
    # The wrong answer above is the right one for the (3, 6, 5) weight: only the other two
    # shapes expose it.
    w = np.arange(18.0 * 5).reshape(18, 5)
    assert np.array_equal(_hard_coded_head_dim(w, 3), _half_layout_by_loop(w, 3))


def test_merged_pairs_float32_torch_and_hard_coded(torch, capsys):
    assert check_merged_pairs(lambda start, count: np.float32(_merged(start, count))) is True
    assert check_merged_pairs(lambda start, count: torch.tensor(_merged(start, count))) is True
    assert printed(capsys).count("PASS") == 2
    assert check_merged_pairs(lambda start, count: 1020) is False  # right for one window only
    assert "TRY AGAIN" in printed(capsys)
    assert check_merged_pairs(lambda start, count: count) is False
    assert "rounding boundary" in printed(capsys)
