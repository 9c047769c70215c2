"""The notebook 01 checkers: NOT ATTEMPTED for the stub, PASS for the right answer (also computed
in float32), TRY AGAIN with a hint a learner can act on for plausible wrong answers. Right answers
are derived here from the definitions (and, for 1.3, confirmed on a real causal attention layer),
not from the checkers."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.attention import scaled_dot_product_attention
from course_utils.exercises import require_pass
from course_utils.exercises.position_problem import (
    check_best_bos_score,
    check_bos_output,
    check_causal_swap,
    check_permutation_matrix,
    check_position_from_output,
)

ORDER = [2, 0, 3, 1]
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _right_permutation(order):
    p = np.zeros((len(order), len(order)))
    for r, c in enumerate(order):  # row r takes its 1 in column order[r]
        p[r, c] = 1.0
    return p


def test_permutation_matrix_stub_and_right(capsys):
    assert check_permutation_matrix(..., ORDER) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    right = _right_permutation(ORDER)
    x = np.arange(12.0).reshape(4, 3)
    assert np.array_equal(right @ x, x[ORDER])
    assert check_permutation_matrix(right, ORDER) is True
    assert printed(capsys).startswith("PASS")
    assert check_permutation_matrix(right.astype(np.float32), ORDER) is True
    assert check_permutation_matrix(right.astype(int).tolist(), ORDER) is True


@pytest.mark.parametrize("wrong, hint", [
    (_right_permutation(ORDER).T, "inverse"),
    (np.eye(4), "identity"),
    # for this order the reversed order is also the inverse one, so the inverse hint answers
    (_right_permutation(ORDER[::-1]), "inverse"),
    (np.roll(_right_permutation(ORDER), 1, axis=1), "too far right"),
    (np.roll(_right_permutation(ORDER), -1, axis=1), "too far left"),
    (np.eye(3), "expected shape"),
    (np.ones((4, 4)), "values differ"),
])
def test_permutation_matrix_wrong(wrong, hint, capsys):
    assert check_permutation_matrix(wrong, ORDER) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_permutation_matrix_rejects_a_non_permutation():
    with pytest.raises(ValueError, match="order must be a permutation"):
        check_permutation_matrix(np.eye(3), [0, 0, 1])


def test_position_from_output_stub_and_right(capsys):
    assert check_position_from_output(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    assert check_position_from_output(lambda o: 1.0 / o - 1.0) is True
    assert "PASS" in printed(capsys)
    assert check_position_from_output(lambda o: (1.0 - o) / o) is True
    # the same answer computed in float32: a few float32 roundings away from float64
    assert check_position_from_output(lambda o: 1 / o.astype(np.float32) - np.float32(1)) is True
    assert "PASS" in printed(capsys)


def test_position_from_output_accepts_torch_float32(torch, capsys):
    assert check_position_from_output(lambda o: 1 / torch.from_numpy(o).float() - 1) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda o: np.arange(len(o)), "does not depend on o"),
    (lambda o: np.arange(len(o), dtype=np.float32), "does not depend on o"),
    (lambda o: 1.0 / o, "off by one"),
    (lambda o: 1.0 / o + 1.0, "subtract 1"),
    (lambda o: o, "output itself"),
    (lambda o: 1.0 / (o + 1.0), "solve for p"),
    (lambda o: -np.log(o), "values differ"),
    (lambda o: np.round(1.0 / o - 1.0)[:-1], "must have shape"),
    (lambda o: np.float32(1.0) / o.astype(np.float16) - 1, "values differ"),
])
def test_position_from_output_wrong(wrong, hint, capsys):
    assert check_position_from_output(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_position_from_output_reports_a_crash_without_raising(capsys):
    def broken(o):
        return o.not_a_method()

    assert check_position_from_output(broken) is False
    assert "raised AttributeError" in printed(capsys)


def _changed_positions_by_attention(n, i, j, seed=0):
    """Which outputs of a random causal attention layer change when tokens i and j swap."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8))
    wq, wk, wv = (rng.normal(size=(8, 8)) for _ in range(3))
    swapped = x.copy()
    swapped[[i, j]] = x[[j, i]]
    before, _ = scaled_dot_product_attention(x @ wq, x @ wk, x @ wv, causal=True)
    after, _ = scaled_dot_product_attention(swapped @ wq, swapped @ wk, swapped @ wv, causal=True)
    return np.abs(after - before).max(axis=1) > 1e-9


def test_causal_swap_stub_and_right(capsys):
    assert check_causal_swap(...) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    right = [False, False, True, True, True, False]
    assert np.array_equal(_changed_positions_by_attention(6, 2, 4), right)
    assert check_causal_swap(right) is True
    assert "PASS" in printed(capsys)
    assert check_causal_swap(np.array(right)) is True


@pytest.mark.parametrize("wrong, hint", [
    ([False, False, True, True, True, True], "after 4"),
    ([False, False, True, False, True, False], "strictly between"),
    ([True] * 6, "before 2"),
    ([False, False, True, True, False, False], "position 4 changes too"),
    ([False, False, False, True, True, False], "position 2 changes too"),
    ([False] * 6, "does see some change"),
    ([False, False, True, True, True], "expected shape"),
    ([False, True, True, True, False, False], "values differ"),
])
def test_causal_swap_wrong(wrong, hint, capsys):
    assert check_causal_swap(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_causal_swap_other_indices_agree_with_attention():
    changed = _changed_positions_by_attention(7, 1, 5, seed=3)
    assert check_causal_swap(changed.tolist(), n_tokens=7, i=1, j=5) is True
    with pytest.raises(ValueError, match="0 <= i < j < n_tokens"):
        check_causal_swap([True] * 4, n_tokens=4, i=3, j=1)


def _bos_output_by_attention(p, ell):
    """The BOS-flag output of a causal head whose scores are ell for the BOS key and 0 for the
    rest, by a dense softmax over the p + 1 visible keys (not from the checker's formula)."""
    out = []
    for position in np.asarray(p, dtype=int):
        scores = np.zeros(position + 1)
        scores[0] = ell
        weights = np.exp(scores - scores.max())
        weights /= weights.sum()
        out.append(weights[0])  # only the BOS value carries the flag 1
    return np.array(out)


def _right_bos_output(p, ell):
    return 1.0 / (1.0 + p * np.exp(-ell))


def test_bos_output_stub_and_right(capsys):
    assert check_bos_output(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    p = np.array([0, 1, 7, 300])
    for ell in (0.0, 2.5, -1.25):
        assert np.allclose(_right_bos_output(p, ell), _bos_output_by_attention(p, ell),
                           rtol=1e-12)
    assert check_bos_output(_right_bos_output) is True
    assert "PASS" in printed(capsys)
    assert check_bos_output(
        lambda p, b: (np.float32(np.exp(b)) / (np.float32(np.exp(b)) + p.astype(np.float32)))
    ) is True
    assert "PASS" in printed(capsys)


def test_bos_output_accepts_torch_float32(torch, capsys):
    def in_torch(p, ell):
        z = torch.exp(torch.tensor(ell, dtype=torch.float32))
        return z / (z + torch.from_numpy(p).float())

    assert check_bos_output(in_torch) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda p, b: 1.0 / (p + 1.0), "must depend on ell"),
    (lambda p, b: np.exp(b) / (np.exp(b) + p + 1.0), "off by one"),
    (lambda p, b: b / (b + p), "e^score"),
    (lambda p, b: np.exp(-b) / (np.exp(-b) + p), "sign of ell"),
    (lambda p, b: np.exp(b) / (p + 1.0), "sum to 1"),
    (lambda p, b: (np.exp(b) / (np.exp(b) + p)).astype(np.float16), "values differ"),
    (lambda p, b: np.exp(b) / (np.exp(b) + p[:-1]), "must have shape"),
])
def test_bos_output_wrong(wrong, hint, capsys):
    assert check_bos_output(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def _best_score_by_search(p):
    """The ell that maximises o_p - o_(p+1), by a fine grid search over ell."""
    ells = np.linspace(-5.0, 20.0, 250_001)
    best = []
    for position in np.asarray(p, dtype=float):
        z = np.exp(ells)
        gap = z / (z + position) - z / (z + position + 1.0)
        best.append(ells[np.argmax(gap)])
    return np.array(best)


def test_best_bos_score_stub_and_right(capsys):
    assert check_best_bos_score(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    right = lambda p: 0.5 * (np.log(p) + np.log(p + 1.0))  # noqa: E731
    p = np.array([1.0, 3.0, 64.0, 1000.0])
    assert np.allclose(right(p), _best_score_by_search(p), atol=2e-4)
    assert check_best_bos_score(right) is True
    assert "PASS" in printed(capsys)
    assert check_best_bos_score(lambda p: np.log(np.sqrt(p * (p + 1))).astype(np.float32))
    assert "PASS" in printed(capsys)


def test_best_bos_score_accepts_torch_float32(torch, capsys):
    def in_torch(p):
        t = torch.from_numpy(p).float()
        return 0.5 * torch.log(t * (t + 1))

    assert check_best_bos_score(in_torch) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (lambda p: np.zeros_like(p), "plain count"),
    (lambda p: np.log(p * (p + 1.0)), "half of"),
    (lambda p: 0.5 * np.log((p + 1.0) * (p + 2.0)), "e^ell + p + 1"),
    (lambda p: np.log(p), "balances only one factor"),
    (lambda p: np.log(p + 1.0), "between p and p + 1"),
    (lambda p: np.log(p + 0.5), "geometric mean"),
    (lambda p: np.log(p + 0.5).astype(np.float32), "geometric mean"),
    (lambda p: np.full_like(p, 3.0), "values differ"),
])
def test_best_bos_score_wrong(wrong, hint, capsys):
    assert check_best_bos_score(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_require_pass_raises_for_a_wrong_solution_and_not_for_a_right_one(capsys):
    wrong = _right_permutation(ORDER).T  # the inverse permutation, a plausible slip
    with pytest.raises(AssertionError, match="did not pass its checker"):
        require_pass(check_permutation_matrix(wrong, ORDER))
    assert "TRY AGAIN" in printed(capsys)
    with pytest.raises(AssertionError, match="did not pass its checker"):
        require_pass(check_causal_swap(..., n_tokens=6, i=2, j=4))
    assert "NOT ATTEMPTED" in printed(capsys)
    assert require_pass(check_permutation_matrix(_right_permutation(ORDER), ORDER)) is None
    assert printed(capsys).startswith("PASS")
    with pytest.raises(TypeError, match="verdict must be"):
        require_pass("PASS")


def _code_cells(stem):
    notebook = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


@pytest.mark.parametrize("stem", ["01_position_problem", "02_sinusoidal", "03_learned",
                                  "04_relative", "05_rope", "06_alibi"])
def test_solution_cells_raise_on_a_wrong_answer_and_stub_cells_do_not(stem):
    """A solution cell wraps every checker call in require_pass (a wrong solution stops the
    notebook); a learner's stub cell calls the checker bare (Run all goes on past it)."""
    cells = _code_cells(stem)
    solutions = [src for src in cells if src.startswith("# Solution to Exercise")]
    assert solutions, f"{stem} has no solution cells"
    for src in solutions:
        calls = re.findall(r"^.*\bcheck_(?!close|true|raises)\w+\(", src, flags=re.M)
        assert calls, f"{stem}: a solution cell calls no checker:\n{src[:200]}"
        bare = [line for line in calls if not line.startswith("require_pass(check_")]
        assert not bare, f"{stem}: checker called without require_pass: {bare}"
    stubs = [src for src in cells if not src.startswith("# Solution to Exercise")
             and re.search(r"^_ = check_\w+\(", src, flags=re.M)]
    assert all("require_pass" not in src for src in stubs)
