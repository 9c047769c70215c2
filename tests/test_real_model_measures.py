"""The measurements of chapter 13 without the model file: each function against a loop or a
closed form, on synthetic inputs, and a stand-in model that records what it was asked."""

from __future__ import annotations

import types

import numpy as np
import pytest
from test_real_model import require_model_file  # skip or, under CI, fail without the file

from course_utils.real_model import files, measures
from course_utils.rope import apply_rope
from course_utils.scaling import rope_scaling

CONFIG = types.SimpleNamespace(head_dim=64, rope_theta=1e5, max_position_embeddings=8192)


class RecordingModel:
    """Encodes one id per character; ``loss`` returns the position ids it was given (as
    floats), so a test can see which positions each predicted token had."""

    config = CONFIG

    def __init__(self):
        self.calls = []

    def encode(self, text):
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

    def loss(self, ids, **kwargs):
        self.calls.append(kwargs)
        positions = kwargs.get("position_ids")
        positions = np.arange(len(ids)) if positions is None else np.asarray(positions)
        return positions[:-1].astype(np.float64)


def test_corpus_is_the_four_peps_in_order():
    require_model_file()
    text = measures.corpus_text()
    starts = [text.index(f"PEP: {n}\nTitle: ") for n in (256, 257, 258, 287)]
    assert starts[0] == 0 and starts == sorted(starts)
    assert text.count("This document has been placed in the public domain.") == 4
    assert len(text.encode("utf-8")) == files.TEXT_SIZE


def test_corpus_refuses_a_missing_or_altered_text(tmp_path, monkeypatch):
    require_model_file()
    original = files.text_path().read_bytes()
    monkeypatch.setenv("COURSE_MODEL_DIR", str(tmp_path))
    measures.corpus_text.cache_clear()
    try:
        with pytest.raises(files.ModelNotAvailableError, match="make model"):
            measures.corpus_text()
        # Same size and stamp, one byte changed: only the sha256 read on every call sees it.
        (tmp_path / files.TEXT_NAME).write_bytes(original.replace(b"Goodger", b"Goodgar", 1))
        (tmp_path / (files.TEXT_NAME + ".sha256")).write_text(files.TEXT_SHA256 + "\n")
        assert files.text_available()
        with pytest.raises(ValueError, match="altered"):
            measures.corpus_text()
    finally:
        measures.corpus_text.cache_clear()


def test_corpus_ids_slices_and_refuses_past_the_end(monkeypatch):
    # A slicing test: any text will do, so it runs without the fetched PEPs.
    monkeypatch.setattr(measures, "corpus_text", lambda: "Positions in a released model.")
    model = RecordingModel()
    ids = measures.corpus_ids(model, 10, start=5)
    whole = model.encode(measures.corpus_text())
    np.testing.assert_array_equal(ids, whole[5:15])
    with pytest.raises(ValueError, match="start \\+ n_tokens"):
        measures.corpus_ids(model, whole.size, start=1)
    with pytest.raises(TypeError, match="n_tokens"):
        measures.corpus_ids(model, 2.5)


def test_shuffled_sentences_keeps_the_sentences():
    text = "One two. Three four! Five six? Seven eight. Nine ten."
    out = measures.shuffled_sentences(text, seed=1)
    split = sorted(s for s in out.split(" ") if s)
    assert split == sorted(text.split(" "))
    assert sorted(out.replace("? ", "?|").replace(". ", ".|").replace("! ", "!|").split("|")) \
        == sorted(["One two.", "Three four!", "Five six?", "Seven eight.", "Nine ten."])
    assert measures.shuffled_sentences(text, seed=1) == out
    assert any(measures.shuffled_sentences(text, seed=s) != text for s in range(5))
    with pytest.raises(ValueError, match="text"):
        measures.shuffled_sentences("   ")


def _causal_rows(rng, heads, T):
    logits = np.where(np.tri(T, dtype=bool), rng.normal(size=(heads, T, T)), -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


@pytest.mark.parametrize("n_sink", [1, 3])
def test_sink_share_by_loop(n_sink):
    rng = np.random.default_rng(0)
    attention = {4: _causal_rows(rng, 2, 9), 1: _causal_rows(rng, 2, 9)}
    layers, share = measures.sink_share_from_attention(attention, n_sink)
    assert layers == [1, 4]
    for row, layer in enumerate(layers):
        for head in range(2):
            by_loop = np.mean([sum(attention[layer][head, q, k] for k in range(n_sink))
                               for q in range(n_sink, 9)])
            assert share[row, head] == pytest.approx(by_loop, rel=1e-12)


def test_sink_share_refuses_bad_input():
    with pytest.raises(TypeError, match="attention"):
        measures.sink_share_from_attention([], 1)
    with pytest.raises(ValueError, match="heads, T, T"):
        measures.sink_share_from_attention({0: np.zeros((2, 3, 4))}, 1)
    with pytest.raises(ValueError, match="first_query"):
        measures.sink_share_from_attention({0: np.zeros((2, 3, 3))}, 3)


def test_pair_norms_by_loop_and_unchanged_by_rope():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 7, 8))
    norms = measures.pair_norms(x)
    for h in range(3):
        for i in range(4):
            expected = np.mean([np.hypot(x[h, t, i], x[h, t, i + 4]) for t in range(7)])
            assert norms[h, i] == pytest.approx(expected, rel=1e-12)
    rotated = apply_rope(x, np.arange(7) * 13, layout="half", base=100.0)
    np.testing.assert_allclose(measures.pair_norms(rotated), norms, rtol=1e-12)
    with pytest.raises(ValueError, match="d even"):
        measures.pair_norms(np.zeros((2, 3, 5)))


def test_inv_freq_without_rotation_stops_those_pairs_only():
    inv = 1e4 ** (-np.arange(0, 8, 2) / 8)
    # pairs 0 and 1 (not symmetric under reversal: a reversed pair order would stop 2 and 3)
    out = measures.inv_freq_without_rotation(inv, [0, 1])
    np.testing.assert_array_equal(out, [0.0, 0.0, inv[2], inv[3]])
    x = np.random.default_rng(2).normal(size=(5, 8))
    turned = apply_rope(x, np.arange(5), layout="half", inv_freq=out)
    np.testing.assert_allclose(turned[:, [0, 4, 1, 5]], x[:, [0, 4, 1, 5]], rtol=1e-12)
    assert not np.allclose(turned[:, [2, 6]], x[:, [2, 6]])
    assert not np.allclose(turned[:, [3, 7]], x[:, [3, 7]])
    with pytest.raises(ValueError, match="pairs"):
        measures.inv_freq_without_rotation(inv, [4])


def test_scaled_frequencies():
    inv, factor = measures.scaled_frequencies(CONFIG, "none")
    np.testing.assert_allclose(inv, [1e5 ** (-2 * i / 64) for i in range(32)], rtol=1e-14)
    assert factor == 1.0
    inv, factor = measures.scaled_frequencies(CONFIG, "yarn", 4.0)
    expected = rope_scaling("yarn", 64, base=1e5, factor=4.0,
                            original_max_position_embeddings=8192)
    np.testing.assert_allclose(inv, expected[0], rtol=1e-14)
    assert factor == pytest.approx(0.1 * np.log(4.0) + 1)
    linear, _ = measures.scaled_frequencies(CONFIG, "linear", 2.0)
    np.testing.assert_allclose(linear, measures.scaled_frequencies(CONFIG, "none")[0] / 2)
    with pytest.raises(ValueError, match="seq_len"):
        measures.scaled_frequencies(CONFIG, "dynamic", 2.0)
    with pytest.raises(ValueError, match="method"):
        measures.scaled_frequencies(CONFIG, "rope", 2.0)


def test_skip_positions():
    pos = measures.skip_positions(3, 2, 10)
    np.testing.assert_array_equal(pos, [0, 1, 2, 8, 9])
    np.testing.assert_array_equal(measures.skip_positions(3, 2, 5), np.arange(5))
    with pytest.raises(ValueError, match="end"):
        measures.skip_positions(3, 2, 4)


def test_skip_nll_scores_the_second_chunk_at_its_positions():
    model = RecordingModel()
    ids = np.arange(8)
    # end past the trained 8192: dynamic NTK must adapt to end, not to 8192
    value = measures.skip_nll(model, ids, 4, 20000, method="dynamic", factor=2.0)
    # the stand-in's loss at token t is its position: queries 4..6 sit at 19996..19998
    assert value == pytest.approx(np.mean([19996, 19997, 19998]))
    call = model.calls[-1]
    np.testing.assert_array_equal(call["position_ids"],
                                  [0, 1, 2, 3, 19996, 19997, 19998, 19999])
    expected, _ = rope_scaling("dynamic", 64, base=1e5, factor=2.0,
                               original_max_position_embeddings=8192, seq_len=20000)
    at_trained, _ = rope_scaling("dynamic", 64, base=1e5, factor=2.0,
                                 original_max_position_embeddings=8192, seq_len=8192)
    assert not np.allclose(expected, at_trained)  # the test can tell the two apart
    np.testing.assert_allclose(call["inv_freq"], expected)
    # YaRN scales the logits too: its attention factor 0.1 ln s + 1 (Peng et al. 2023, eq. 22)
    # must reach the forward pass, squared there as in transformers' cos and sin
    measures.skip_nll(model, ids, 4, 20000, method="yarn", factor=4.0)
    assert model.calls[-1]["attention_factor"] == pytest.approx(0.1 * np.log(4.0) + 1)
    with pytest.raises(ValueError, match="n_first"):
        measures.skip_nll(model, ids, 7, 100)


def test_shifted_nll_moves_every_position():
    model = RecordingModel()
    out = measures.shifted_nll(model, np.arange(6), 1000)
    np.testing.assert_array_equal(out, 1000 + np.arange(5))
    with pytest.raises(ValueError, match="shift"):
        measures.shifted_nll(model, np.arange(6), -1)


@pytest.mark.skipif(not hasattr(measures, "attention_from_angles"),
                    reason="attention from an angle table not in this version")
def test_attention_from_float64_angles_matches_apply_rope():
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(4, 6, 8)), rng.normal(size=(2, 6, 8))
    pos = np.arange(6) + 50
    inv = 1e4 ** (-np.arange(0, 8, 2) / 8)
    weights = measures.attention_from_angles(q, k, pos[:, None] * inv)
    qr = apply_rope(q, pos, layout="half", base=1e4)
    kr = np.repeat(apply_rope(k, pos, layout="half", base=1e4), 2, axis=0)
    for h in range(4):
        for m in range(6):
            scores = np.array([qr[h, m] @ kr[h, n] / np.sqrt(8) for n in range(m + 1)])
            row = np.exp(scores - scores.max())
            np.testing.assert_allclose(weights[h, m, :m + 1], row / row.sum(), rtol=1e-10)
            assert np.all(weights[h, m, m + 1:] == 0)


def _long_context_tool():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "tools" / "long_context.py"
    spec = importlib.util.spec_from_file_location("long_context", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_long_context_scores_the_right_tokens_and_renders(tmp_path):
    tool = _long_context_tool()
    model = RecordingModel()
    model.config = types.SimpleNamespace(**vars(CONFIG), n_layers=2)
    ids = np.arange(40)
    window = tool.run_window(model, ids, 24, 8, 4)
    # the stand-in's loss at index j is j: queries 8 .. 22 predict tokens 9 .. 23
    assert window == {k: pytest.approx(np.mean(np.arange(8, 23))) for k in
                      ("full", "window", "window + sinks")}
    assert model.calls[1] == {"window": 8, "n_sink": 0, "chunk": 512}
    assert model.calls[2] == {"window": 8, "n_sink": 4, "chunk": 512}
    skip = tool.run_skip(model, ids, 4, 4, [8, 100], [["none", 1.0], ["yarn", 2.0]])
    assert skip["no scaling"] == [pytest.approx(np.mean([4, 5, 6])),
                                  pytest.approx(np.mean([96, 97, 98]))]
    assert set(skip) == {"no scaling", "YaRN x2"}
    result = {"command": "test", "seed": None, "seconds": 60, "versions": {"numpy": "x"},
              "settings": {"window": {"length": 24, "window": 8, "n_sink": 4},
                           "skip": {"n_first": 4, "n_second": 4, "ends": [8, 100]},
                           "true_long": {"length": 16, "bins": [0, 8, 16]},
                           "nope": {"length": 8}},
              "window": window, "skip": skip,
              "true_long": {"by_bin": {"no scaling": [1.0, 2.0]},
                            "last_chunk": {"no scaling": 2.0},
                            "skip_last_chunk": {"no scaling": 2.5}, "last_chunk_alone": 3.0},
              "nope": {"base": 2.0, "delta": {"0": 0.5, "1": -0.01}},
              "sinks": {"4": [[0.1, 0.2], [0.3, 0.4], [0.9, 0.5]]},
              "partial_runs": [{"parts": ["sinks"], "command": "rerun", "seconds": 5,
                                "versions": {"numpy": "y"}}]}
    tool.render(result, tmp_path / "out.md")
    text = (tmp_path / "out.md").read_text()
    assert "| no scaling | 5.000 | 97.000 |" in text
    assert "| change | +0.500 | -0.010 |" in text
    # layers 0-1: mean of 0.1..0.4; layer 2: (0.9 + 0.5) / 2; strongest: layer 2 head 0
    assert "| 4 | 0.250 | 0.700 | layer 2 head 0 (0.900) | 1 of 6 |" in text
    assert "Rerun later by `rerun` (5 s): sinks; versions: numpy y" in text


def test_long_context_familiarity_compares_shuffled_with_collapsed_text(tmp_path):
    """The stand-in scores a text by the weighted sum of its byte codes (loss j * code[j + 1]),
    so the loss depends on the order of the characters: shuffling changes it, and each of the
    three strings (as written, collapsed in order, shuffled) is scored on its own tokens."""
    tool = _long_context_tool()

    class Stub:
        def encode(self, text):
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

        def decode(self, ids):
            return bytes(np.asarray(ids, dtype=np.uint8)).decode("utf-8")

        def loss(self, ids):
            ids = np.asarray(ids)
            return np.arange(ids.size - 1) * ids[1:] / 1000.0

    def score(text):
        ids = Stub().encode(text)
        return float(np.mean(np.arange(ids.size - 1) * ids[1:] / 1000.0))

    peps = "PEP: 1\nTitle: One.\n\nFirst sentence here.  Second one!  Third?\n"
    control = "# 01\n\nA course.\nIt is ours.  Truly."
    out = tool.run_familiarity(Stub(), Stub().encode(peps), len(peps), [0, 1], control=control)
    for key, text in (("peps", peps), ("course", control)):
        assert out[key]["as_written"] == pytest.approx(score(text))
        assert out[key]["collapsed"] == pytest.approx(score(" ".join(text.split())))
        assert out[key]["shuffled"] == [pytest.approx(score(measures.shuffled_sentences(
            text, seed=seed))) for seed in (0, 1)]
    assert out["course"]["collapsed"] != out["course"]["as_written"]  # the line breaks count
    settings = {"window": {"length": 24, "window": 8, "n_sink": 4},
                "skip": {"n_first": 4, "n_second": 4, "ends": [8]},
                "true_long": {"length": 16, "bins": [0, 16]}, "nope": {"length": 8},
                "familiarity": {"length": len(peps), "seeds": [0, 1]}}
    result = {"command": "test", "seconds": 60, "versions": {}, "settings": settings,
              "window": {"full": 1.0}, "skip": {"no scaling": [1.0]},
              "true_long": {"by_bin": {"no scaling": [1.0]}, "last_chunk": {"no scaling": 1.0},
                            "skip_last_chunk": {"no scaling": 1.0}, "last_chunk_alone": 1.0},
              "nope": {"base": 1.0, "delta": {"0": 0.0}}, "familiarity": out}
    tool.render(result, tmp_path / "out.md")
    row = out["peps"]
    gain = np.mean(row["shuffled"]) - row["collapsed"]
    assert (f"| the PEPs | {row['as_written']:.3f} | {row['collapsed']:.3f} | "
            f"{row['shuffled'][0]:.3f}, {row['shuffled'][1]:.3f} | {gain:+.3f} |"
            in (tmp_path / "out.md").read_text())


def test_long_context_sinks_read_the_forward_pass_per_length():
    tool = _long_context_tool()
    seen = []

    class Stub:
        def forward(self, ids, sink_keys):
            seen.append((len(ids), sink_keys))
            return types.SimpleNamespace(sink_share=np.full((3, 2), len(ids) / 100))

    out = tool.run_sinks(Stub(), np.arange(50), [10, 40])
    assert seen == [(10, 1), (40, 1)]
    assert out == {"10": [[0.1, 0.1]] * 3, "40": [[0.4, 0.4]] * 3}


def test_nll_from_logits_by_loop():
    rng = np.random.default_rng(4)
    logits, ids = rng.normal(size=(5, 7)), np.array([1, 6, 0, 3, 2])
    nll = measures.nll_from_logits(logits, ids)
    for t in range(4):
        p = np.exp(logits[t]) / np.exp(logits[t]).sum()
        assert nll[t] == pytest.approx(-np.log(p[ids[t + 1]]), rel=1e-12)
    with pytest.raises(ValueError, match="logits"):
        measures.nll_from_logits(logits, ids[:4])


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("side", ["query", "key"])
def test_without_pair_content_zeroes_exactly_those_channels(layout, side):
    """A loop over heads and channels names the weight columns of pairs 1 and 3 (d = 8: two
    query heads, one key/value head); every other column, and the original, is untouched."""
    d, H, G = 8, 2, 1
    rng = np.random.default_rng(5)
    qkv = rng.normal(size=(6, (H + 2 * G) * d))
    model = types.SimpleNamespace(
        config=types.SimpleNamespace(head_dim=d, n_heads=H, n_kv_heads=G), layout=layout,
        layers=[{"qkv": qkv, "o": "kept"}], loss=lambda ids: ids)
    out = measures.without_pair_content(model, [1, 3], side=side)
    expected = []
    for head in range(H if side == "query" else G):
        start = head * d + (0 if side == "query" else H * d)
        for pair in (1, 3):
            partner = pair + d // 2 if layout == "half" else None
            expected += ([start + pair, start + partner] if layout == "half"
                         else [start + 2 * pair, start + 2 * pair + 1])
    zero = np.all(out.layers[0]["qkv"] == 0, axis=0)
    assert sorted(np.nonzero(zero)[0].tolist()) == sorted(expected)
    keep = np.setdiff1d(np.arange(qkv.shape[1]), expected)
    np.testing.assert_array_equal(out.layers[0]["qkv"][:, keep], qkv[:, keep])
    assert out.layers[0]["o"] == "kept" and not np.all(qkv == 0, axis=0).any()
    assert model.layers[0]["qkv"] is qkv and out is not model
    with pytest.raises(ValueError, match="pairs"):
        measures.without_pair_content(model, [4])
    with pytest.raises(ValueError, match="side"):
        measures.without_pair_content(model, [0], side="value")
    with pytest.raises(TypeError, match="model"):
        measures.without_pair_content("model", [0])
