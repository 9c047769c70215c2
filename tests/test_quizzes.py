"""The self-check questions (course_utils/data/quizzes/NN.json) against the course itself.

Each question's correct answer is recomputed here, by its id, with the course's own functions, or
(for the labs' findings) found in its chapter's text, so a question cannot drift from its chapter:
change a function or a finding and the question's test fails. The shape of every question
(one correct choice, feedback on every answer, a default hint for numbers) is checked too, and
every chapter with questions ends with the cell that shows them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course_utils.alibi import alibi_bias, alibi_slopes
from course_utils.attention import causal_mask, scaled_dot_product_attention
from course_utils.learned import fairseq_position_ids
from course_utils.modern import chunked_attention_mask, no_rope_layers, partial_rotary_dim, sliding_window_mask
from course_utils.multimodal import mrope_position_ids, patch_grid_positions
from course_utils.practice import block_diagonal_mask, packed_position_ids, position_ids_from_attention_mask
from course_utils.quiz import quiz_chapters, quiz_questions, show_quiz
from course_utils.relative import shaw_clip, t5_relative_position_bucket
from course_utils.rope import apply_rope, rope_inv_freq, rope_rotation_matrix, round_to_bfloat16
from course_utils.scaling import rope_scaling, rotations_in_context, yarn_get_mscale
from course_utils.sinusoidal import sinusoidal_encoding, sinusoidal_frequencies, sinusoidal_shift_matrix

ROOT = Path(__file__).resolve().parent.parent
# SmolLM2-135M-Instruct's config (chapter 13), so its questions need no model file.
SMOLLM2 = {"head_dim": 64, "base": 100000.0, "original_max_position_embeddings": 8192}
NOTEBOOKS = {int(p.name[:2]): p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
# Chapters whose Self-check cell is inserted separately (tools/notebooks.py quiz-cell).
PENDING = ()
RNG = np.random.default_rng(0)


def _text(chapter: int) -> str:
    """The chapter's markdown, with whitespace runs folded."""
    nb = nbformat.read(NOTEBOOKS[chapter], as_version=4)
    return re.sub(r"\s+", " ", " ".join(c.source for c in nb.cells if c.cell_type == "markdown"))


def _in_text(chapter: int, phrase: str, key: str) -> str:
    assert phrase in _text(chapter), f"chapter {chapter} no longer says {phrase!r}"
    return key


def _attention_outputs():
    x = RNG.normal(size=(5, 4))
    perm = np.array([3, 0, 4, 1, 2])
    out, _ = scaled_dot_product_attention(x, x, x)
    permuted, _ = scaled_dot_product_attention(x[perm], x[perm], x[perm])
    if np.allclose(permuted, out):
        return "invariant"
    return "equivariant" if np.allclose(permuted, out[perm]) else "changes"


def _bos_output():
    v = np.zeros((6, 1))
    v[0] = 1.0
    q = k = np.zeros((6, 2))  # equal scores: uniform over the visible keys
    return float(scaled_dot_product_attention(q, k, v, causal=True)[0][3, 0])


def _shift_key():
    d, shift = 16, 10
    q, k = RNG.normal(size=(2, 8, d))
    positions = np.arange(8)

    def rope_scores(offset):
        rq = apply_rope(q, positions + offset, layout="half")
        rk = apply_rope(k, positions + offset, layout="half")
        return rq @ rk.T

    def absolute_scores(offset):
        table = sinusoidal_encoding(8 + offset, d)[offset:]
        return (q + table) @ (k + table).T

    assert not np.allclose(absolute_scores(0), absolute_scores(shift))
    return "relative" if np.allclose(rope_scores(0), rope_scores(shift)) else "absolute"


def _slowest_wavelength():
    return 2 * np.pi / sinusoidal_frequencies(512)[-1]


def _shift_kind():
    d, r = 32, 7
    table = sinusoidal_encoding(60, d)
    rotated = [np.allclose(sinusoidal_shift_matrix(r, d) @ table[p], table[p + r]) for p in (0, 11, 40)]
    differences = table[r:] - table[:-r]
    assert not np.allclose(differences, differences[0])  # not one added vector
    return "rotation" if all(rotated) else "rotation_p"


def _t5_exact():
    offsets = np.arange(-2000, 2000)
    buckets = t5_relative_position_bucket(offsets)
    counts = np.bincount(buckets)
    return int(sum(counts[buckets[offsets == r][0]] == 1 for r in range(0, 2000)))


def _rope_relative():
    d = 16
    q, k = RNG.normal(size=(2, 1, d))

    def score(m, n):
        return apply_rope(q, np.array([m]), layout="interleaved") @ apply_rope(
            k, np.array([n]), layout="interleaved").T

    same_difference = np.allclose(score(3, 7), score(10, 14))
    same_sum = np.allclose(score(3, 7), score(4, 6))
    return "difference" if same_difference and not same_sum else "sum"


def _rope_norm():
    x = RNG.normal(size=(4, 32))
    rotated = apply_rope(x, np.array([0, 5, 500, 5000]), layout="half")
    return "kept" if np.allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1)) else "grows"


def _bfloat16_spacing():
    return float(np.min(np.diff(np.unique(round_to_bfloat16(np.arange(8192.0, 8700.0))))))


def _twelve_heads():
    slope = alibi_slopes(12)[8]
    return {2 ** -0.5: "half", 2 ** -9: "next", 2 ** -6: "paper"}.get(float(slope), "other")



def _pi_position():
    inv_freq, _ = rope_scaling("linear", 64, factor=4.0, original_max_position_embeddings=4096)
    angles = 8000 * inv_freq
    return float(angles[0] / rope_inv_freq(64)[0])


def _ntk_kind():
    d, s, b = 64, 4.0, 10000.0
    inv_freq, _ = rope_scaling("ntk", d, base=b, factor=s, original_max_position_embeddings=4096)
    if np.allclose(inv_freq, rope_inv_freq(d, base=b * s ** (d / (d - 2)))):
        return "base"
    return "divide" if np.allclose(inv_freq, rope_inv_freq(d, base=b) / s) else "keep"


def _rope_backward():
    m, d = 9, 8
    forward = rope_rotation_matrix(m, d, layout="interleaved")
    if np.allclose(forward.T, rope_rotation_matrix(-m, d, layout="interleaved")):
        return "minus"
    return "same"


def _flatten_distance():
    rows, cols = patch_grid_positions(14, 14)
    index = {(int(r), int(c)): i for i, (r, c) in enumerate(zip(rows, cols, strict=True))}
    return index[(5, 3)] - index[(4, 3)]


def _text_after_image():
    types = np.array([0, 0, 0] + [1] * 24 + [0, 0])
    ids = mrope_position_ids(types, image_grid_thw=[[1, 8, 12]])  # 4 x 6 after merging by 2
    assert np.all(ids[:, 27] == ids[0, 27])
    return int(ids[0, 27])


def _stored_window():
    stored = json.loads((ROOT / "course_utils" / "data" / "records" / "long_context.json").read_text())["window"]
    full, window, sinks = stored["full"], stored["window"], stored["window + sinks"]
    if window - full > 0.5 and window - sinks > 0.75 * (window - full):
        return _in_text(13, "four kept tokens win back nine tenths", "sinks-restore")
    return "no-change" if window - full < 0.1 else "both-fail"


def _smollm2_offset():
    q, k = RNG.normal(size=(2, 512, SMOLLM2["head_dim"]))
    positions = np.arange(512.0)

    def scores(at):
        rope = {"base": SMOLLM2["base"], "layout": "half"}
        return apply_rope(q, at, **rope) @ apply_rope(k, at, **rope).T

    if not np.allclose(scores(positions + 60000), scores(positions)):
        return "rises"
    rounded = round_to_bfloat16(positions + 60000)
    return "same-bf16" if np.allclose(scores(rounded), scores(positions)) else "same"


def _yarn_kept_pairs():
    inv_freq, _ = rope_scaling("yarn", SMOLLM2["head_dim"], base=SMOLLM2["base"], factor=2.0,
                               original_max_position_embeddings=SMOLLM2["original_max_position_embeddings"])
    unchanged = np.isclose(inv_freq, rope_inv_freq(SMOLLM2["head_dim"], base=SMOLLM2["base"]), rtol=1e-12)
    assert np.all(unchanged[:unchanged.sum()])  # the fastest pairs, in one run
    return int(unchanged.sum())


ANSWERS = {
    "01-permutation": _attention_outputs,
    "01-bos-output": _bos_output,
    "01-causal-keys": lambda: int(causal_mask(8)[5].sum()),
    "01-shift": _shift_key,
    "02-fastest-wavelength": lambda: 2 * np.pi / sinusoidal_frequencies(512)[0],
    "02-slowest-wavelength": lambda: {True: "slowest"}.get(
        abs(_slowest_wavelength() - 60600) / 60600 < 0.005, "none"),
    "02-shift": _shift_kind,
    "02-norm": lambda: float(np.unique(np.round(np.linalg.norm(sinusoidal_encoding(300, 64), axis=-1), 9))[0]),
    "03-bert-parameters": lambda: int(re.search(r"([\d,]+) for BERT-base", _text(3)).group(1)
                                      .replace(",", "")),
    "03-fairseq-rows": lambda: int(fairseq_position_ids(np.full((1, 512), 7)).max()) + 1,
    "03-left-padding": lambda: int(fairseq_position_ids(np.array([[1, 1, 5, 6]]))[0, 2]),
    "03-wall": lambda: _in_text(3, "position $L$ has no row and the lookup fails", "fails"),
    "04-shaw-clip": lambda: int(shaw_clip(np.array(-10), 4)),
    "04-shaw-count": lambda: len(np.unique(shaw_clip(np.arange(-50, 51), 4))),
    "04-t5-far": lambda: "same" if len(set(t5_relative_position_bucket(np.array([200, 1000])).tolist())) == 1
    else "different",
    "04-t5-exact": _t5_exact,
    "05-relative": _rope_relative,
    "05-norm": _rope_norm,
    "05-theta1": lambda: float(rope_inv_freq(128)[1]),
    "05-bfloat16-spacing": _bfloat16_spacing,
    "06-first-slope": lambda: float(alibi_slopes(8)[0]),
    "06-bias": lambda: float(alibi_bias(8, 11)[0, 10, 4]),
    "06-twelve-heads": _twelve_heads,
    "07-pi": _pi_position,
    "07-yarn-factor": lambda: yarn_get_mscale(4.0),
    "07-llama2-pairs": lambda: int((rotations_in_context(
        128, base=10000.0, original_max_position_embeddings=4096) < 1).sum()),
    "07-ntk": _ntk_kind,
    "08-left-padding": lambda: int(position_ids_from_attention_mask(np.array([[0, 0, 1, 1, 1]]))[0, -1]),
    "08-packed": lambda: int(packed_position_ids([3, 2])[4]),
    "08-block-mask": lambda: int(block_diagonal_mask([3, 2]).sum(-1)[4]),
    "08-cache": lambda: int(position_ids_from_attention_mask(np.ones((1, 8), dtype=int))[0, -1]),
    "09-recall": lambda: _in_text(9, "On recall ALiBi holds at 8x", "alibi"),
    "09-learned": lambda: _in_text(9, "A learned table: `n/a` past its rows, not zero", "no-rows"),
    "09-rope-backward": _rope_backward,
    "10-patches": lambda: len(patch_grid_positions(224 // 16, 224 // 16)[0]),
    "10-flatten": _flatten_distance,
    "10-mrope-text": _text_after_image,
    "11-partial": lambda: int(partial_rotary_dim(128, 0.25)),
    "11-no-rope-flag": lambda: "keeps" if list(no_rope_layers(8)) == [1, 1, 1, 0, 1, 1, 1, 0] and _in_text(
        11, "flags with 1 the layers **keeping** RoPE", "keeps") else "nope",
    "11-sliding": lambda: int(sliding_window_mask(6, 3)[5].sum()),
    "11-chunked": lambda: int(chunked_attention_mask(10, 4)[9].sum()),
    "12-llama2-turning": lambda: int((rotations_in_context(
        128, base=10000.0, original_max_position_embeddings=4096) >= 1).sum()),
    "12-temperature": lambda: _in_text(
        12, "the temperature lowers the entropy, raises the loss, and is not shown to "
        "move far accuracy at $4L$", "as-designed"),
    "12-fine-tune": lambda: _in_text(
        12, "NTK-aware and YaRN dip on the mean in the first 25 steps before climbing (−0.05 each; "
        "each dip is unclear on one of the three floating-point paths and on a fresh test set), "
        "and the unchanged RoPE "
        "gains least on the mean",
        "unchanged"),
    "13-window-sinks": _stored_window,
    "13-offset": _smollm2_offset,
    "13-pair28": lambda: 511 * float(rope_inv_freq(SMOLLM2["head_dim"], base=SMOLLM2["base"])[28]),
    "13-yarn-kept": _yarn_kept_pairs,
}

QUESTIONS = [(chapter, q) for chapter in quiz_chapters() for q in quiz_questions(chapter)]


def _rounded(value: float, digits: int) -> float:
    return float(f"{value:.{digits}g}")


@pytest.mark.parametrize("chapter, question", QUESTIONS, ids=[q["id"] for _, q in QUESTIONS])
def test_each_answer_is_what_the_course_computes_or_says(chapter, question):
    assert question["id"].startswith(f"{chapter:02d}-")
    expected = ANSWERS[question["id"]]()
    answers = question["answers"]
    if question["type"] == "numeric":
        value = next(a["value"] for a in answers if a.get("type") == "value" and a["correct"])
        digits = question.get("precision")
        if digits:  # jupyterquiz compares the reader's number at this many significant digits
            assert _rounded(expected, digits) == _rounded(value, digits), (expected, value)
        else:
            assert math.isclose(expected, value, rel_tol=0, abs_tol=1e-9), (expected, value)
    else:
        correct = [a["key"] for a in answers if a["correct"]]
        assert correct == [expected], (correct, expected)


@pytest.mark.parametrize("chapter, question", QUESTIONS, ids=[q["id"] for _, q in QUESTIONS])
def test_each_question_explains_every_answer(chapter, question):
    assert question["type"] in ("multiple_choice", "numeric") and question["question"].strip()
    answers = question["answers"]
    assert all(a.get("feedback", "").strip() for a in answers)
    if question["type"] == "numeric":
        assert [a["type"] for a in answers] == ["value", "default"]
    else:
        assert sum(a["correct"] for a in answers) == 1 and len(answers) >= 2
        assert len({a["key"] for a in answers}) == len(answers)
    assert "$" not in question["question"]  # plain text: no TeX to typeset in Jupyter


def test_every_chapter_has_three_to_five_questions_and_ends_with_them():
    assert set(ANSWERS) == {q["id"] for _, q in QUESTIONS}
    for chapter, path in sorted(NOTEBOOKS.items()):
        if chapter == 0 or chapter in PENDING:
            continue
        assert chapter in quiz_chapters(), f"chapter {chapter} has no questions"
        assert 3 <= len(quiz_questions(chapter)) <= 5
        cells = nbformat.read(path, as_version=4).cells
        assert cells[-2].source.startswith("## Self-check")
        assert cells[-1].source.endswith(f"show_quiz({chapter})")
        html = "".join(o.get("data", {}).get("text/html", "") for o in cells[-1].outputs)
        script = "".join(o.get("data", {}).get("application/javascript", "") for o in cells[-1].outputs)
        assert "<div id=" in html and "show_questions" in script, "run the notebook (make execute)"
        first = quiz_questions(chapter)[0]["question"]
        assert first in script  # the stored questions, as they are now
        assert "https://" not in script.replace("https://cdn.jsdelivr.net/npm/mathjax", "")


def test_show_quiz_is_deterministic_and_refuses_a_chapter_without_questions():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()  # display() publishes outputs only inside a shell
    runs = []
    for _ in range(2):
        with capture_output() as captured:
            show_quiz(5)
        runs.append([output.data for output in captured.outputs])
    assert runs[0] == runs[1]
    html, script = runs[0][0]["text/html"], runs[0][1]["application/javascript"]
    assert html.startswith("<div id=") and "show_questions" in script
    for question in quiz_questions(5):
        assert json.dumps(question["question"]) in script and json.dumps(question["id"]) not in script
    assert '"key"' not in script
    with pytest.raises(ValueError, match="chapter must be one of"):
        quiz_questions(0)
    with pytest.raises(TypeError, match="chapter must be an int"):
        quiz_questions("5")


def test_t5_far_feedback_names_where_the_last_bucket_really_starts():
    """The feedback on 04-t5-far states the distance at which an encoder's offsets stop getting
    new buckets (computed, 91) and that bucket (31), not max_distance 128."""
    offsets = np.arange(0, 300)
    buckets = t5_relative_position_bucket(offsets)
    last = int(buckets.max())
    start = int(offsets[np.argmax(buckets == last)])
    question = next(q for q in quiz_questions(4) if q["id"] == "04-t5-far")
    for answer in question["answers"]:
        numbers = set(re.findall(r"\d+", answer["feedback"]))
        assert {str(start), str(last)} <= numbers, answer["feedback"]
