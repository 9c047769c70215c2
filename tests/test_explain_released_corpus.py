"""The inspector on released configs of families the course does not store, read from public copies.

``tests/data/config_corpus`` holds config files of released checkpoints as found in public
repositories (test fixtures of intel-extension-for-pytorch, the model presets of mlc-llm), each
stored byte for byte; ``SOURCES.json`` names the checkpoint, the repository, path and commit,
and whether the copy is verbatim, converted (a Python dict literal of the file) or modified (a
test fixture with fewer layers, a runtime key added), saying how that is known.

For every file the inspector must give either a plan equal to transformers' own (layer kinds
from the config class; inverse frequencies and attention factor from the model's rotary class,
to float32 rounding) or a one-line refusal naming the reason, and never a traceback, also from
the command line with its output going to a closed pipe. A refusal of a file that transformers
reads is allowed only where listed below with its reason; where transformers refuses the file
too, the test says so by checking that it does.
"""

import ast
import contextlib
import importlib
import io
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from test_reference_configs import _assert_rope_layers_match, _rotary

from course_utils.data.released import released_config, released_config_names
from course_utils.explain import main, position_plan

pytestmark = pytest.mark.filterwarnings("ignore")

CORPUS = pathlib.Path(__file__).parent / "data" / "config_corpus"
SOURCES = json.loads((CORPUS / "SOURCES.json").read_text())["files"]
NAMES = sorted(SOURCES)

# Files transformers reads that the inspector refuses, with the words its refusal must contain.
REFUSED_BUT_READ_BY_TRANSFORMERS = {
    "ipex_whisper": "no rule read for this family",  # fixed sinusoids, then learned positions
    "ipex_llava": "no rule read for this family",  # flat LLaVA 1.5 file: transformers ignores its
    "ipex_mllama": "no rule read for this family",  # keys and builds a default Llama text config
    "mlc_ministral3_3b_reasoning_2512": "no rule read for this family",
    # mlc-llm adds rope_scaling {"rope_type": "gptj"} (SOURCES.json); GPT-J's model never reads it
    "mlc_gpt_j": "rope_scaling: unknown scaling type 'gptj'",
}


def load(name):
    """The config dict of a corpus file (a .pydict file is read with ast.literal_eval)."""
    text = (CORPUS / SOURCES[name]["file"]).read_text()
    return json.loads(text) if SOURCES[name]["file"].endswith(".json") else ast.literal_eval(text)


def _transformers_config(transformers, cfg):
    """transformers' text config for ``cfg``, or the exception it raises reading it. A file whose
    outer type transformers does not know but whose text_config it does is read through that."""
    try:
        return transformers.AutoConfig.for_model(**cfg).get_text_config()
    except Exception as exc:  # noqa: BLE001 - what transformers raises is the point
        inner = cfg.get("text_config")
        if isinstance(inner, dict) and "Unrecognized model" in str(exc):
            return _transformers_config(transformers, inner)
        return exc


def _module_of(config):
    return importlib.import_module(type(config).__module__.replace("configuration_",
                                                                   "modeling_"))


def _reference(torch, config):
    """The rotary reference of ``config``: its model's rotary class, or for GPT-J and CodeGen
    the module-level table create_sinusoidal_positions (sin of position 1 gives the
    frequencies)."""
    module = _module_of(config)
    table = getattr(module, "create_sinusoidal_positions", None)
    if table is None:
        return _rotary(torch, config)
    sin = table(2, config.rotary_dim).double().numpy()[1, :config.rotary_dim // 2]
    return lambda layer_type: (torch.from_numpy(np.arcsin(sin)), 1.0)


def test_sources_name_every_file_and_its_copy():
    stored = {p.name for p in CORPUS.iterdir() if p.name != "SOURCES.json"}
    assert stored == {s["file"] for s in SOURCES.values()}
    for name, s in SOURCES.items():
        assert s["copy"] in ("verbatim", "converted", "modified"), name
        assert s["model"] and s["identified_by"] and s["how_known"], name
        assert len(s["source"]["commit"]) == 40 and s["source"]["repo"] and s["source"]["path"]
    assert len(SOURCES) >= 40


def test_corpus_families_are_mostly_ones_the_course_does_not_store():
    stored = {released_config(n).config.get("model_type") for n in released_config_names()}
    families = {load(n).get("model_type") for n in NAMES if _readable(n)}
    assert len(families - stored) >= 25, sorted(families - stored)


def _readable(name):
    try:
        load(name)
    except ValueError:
        return False
    return True


UNREADABLE = [n for n in NAMES if not _readable(n)]  # a fixture version cut short, kept as found


@pytest.mark.parametrize("name", UNREADABLE)
def test_a_file_that_is_not_json_is_refused_naming_that(name):
    with pytest.raises(ValueError, match=r"is not JSON \(Expecting"):
        position_plan(str(CORPUS / SOURCES[name]["file"]))


@pytest.mark.parametrize("name", sorted(set(NAMES) - set(UNREADABLE)))
def test_plan_equals_transformers_or_a_one_line_refusal(name, transformers, torch):
    cfg = load(name)
    config = _transformers_config(transformers, cfg)
    try:
        plan = position_plan(cfg)
    except ValueError as exc:
        text = str(exc)
        assert "\n" not in text and ":" in text, text
        if isinstance(config, Exception):
            assert "Unrecognized model" in str(config) and "to transformers" in text, text
        else:
            assert REFUSED_BUT_READ_BY_TRANSFORMERS[name] in text, text
        return
    assert name not in REFUSED_BUT_READ_BY_TRANSFORMERS, "refused before: update the list"
    assert not isinstance(config, Exception), f"planned, but transformers refuses: {config}"
    rotary_classes = [n for n in dir(_module_of(config)) if n.endswith("RotaryEmbedding")]
    if plan.scheme is not None:  # a model without RoPE: its modeling module has no rotary class
        assert not rotary_classes, (plan.scheme, rotary_classes)
        return
    if getattr(config, "layer_types", None) is not None:
        assert plan.layer_types() == list(config.layer_types), name
    assert len(plan.layers) == config.num_hidden_layers, name
    _assert_rope_layers_match(plan, _reference(torch, config), name)


def test_outcomes_cover_plans_schemes_and_refusals():
    planned, schemes, refused = [], [], []
    for name in sorted(set(NAMES) - set(UNREADABLE)):
        try:
            plan = position_plan(load(name))
        except ValueError:
            refused.append(name)
            continue
        (planned if plan.scheme is None else schemes).append(name)
    assert len(planned) >= 50 and len(schemes) >= 8 and len(refused) >= 15, (
        len(planned), len(schemes), len(refused))


def _as_file(name, tmp_path):
    if SOURCES[name]["file"].endswith(".json"):
        return CORPUS / SOURCES[name]["file"]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(load(name)))
    return path


@pytest.mark.parametrize("name", NAMES)
def test_command_prints_a_plan_or_one_error(name, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(_as_file(name, tmp_path))])
    assert "Traceback" not in out.getvalue() + err.getvalue()
    if code == 0:
        assert out.getvalue() and not err.getvalue(), err.getvalue()
    else:
        assert code == 2 and err.getvalue().startswith("error: ")
        assert err.getvalue().count("error: ") == 1 and not out.getvalue()


def test_command_into_a_closed_pipe(tmp_path):
    """A plan, a one-line scheme, a refusal transformers shares and one it does not: the reader
    of the output is gone before the first line, and nothing but the exit code is left."""
    procs = {}
    for name in ("mlc_aya_23", "ipex_bloom", "mlc_internlm2", "mlc_gpt_j"):
        proc = subprocess.Popen([sys.executable, "-m", "course_utils.explain",
                                 str(_as_file(name, tmp_path))],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()  # the pipe is closed before the command writes
        procs[name] = proc
    for name, proc in procs.items():
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=300)
        proc.stderr.close()
        assert code in (0, 2) and "Traceback" not in err and "Exception ignored" not in err, (
            name, code, err)


def _same_shape(stored, copy, where):
    """Every key of ``stored`` is in ``copy``, recursively, with the same JSON type (an integer
    stays an integer, no key is added)."""
    assert type(stored) is type(copy), f"{where}: {stored!r} in the stored file, {copy!r} in the copy"
    if isinstance(stored, dict):
        extra = sorted(set(stored) - set(copy))
        assert not extra, f"{where}: keys the copy does not have: {extra}"
        for key, value in stored.items():
            _same_shape(value, copy[key], f"{where}.{key}")


STORED_CHECKED = [n for n in released_config_names()
                  if released_config(n).source.get("checked_against")]


@pytest.mark.parametrize("name", STORED_CHECKED)
def test_stored_config_has_the_keys_and_types_of_its_recorded_copy(name):
    """A stored config whose values were read from a re-serialized copy is checked against a
    copy of the released file kept in the corpus: DeepSeek-V3's conversion script wrote
    beta_fast, beta_slow and factor as floats and an inner rope_theta the release lacks."""
    check = released_config(name).source["checked_against"]
    copy = json.loads((CORPUS.parent.parent.parent / check["corpus"]).read_text())
    entry = SOURCES[pathlib.Path(check["corpus"]).stem]["source"]
    assert (entry["repo"], entry["path"], entry["commit"]) == (
        check["repo"], check["path"], check["commit"])
    stored = released_config(name).config
    _same_shape(stored, copy, name)
    for key in check["same_values"]:
        assert stored[key] == copy[key], key


def test_stored_configs_say_which_copy_they_were_read_from():
    """Every stored file read from a re-serialized copy names a copy of the release it was
    checked against, or says that none was found."""
    assert STORED_CHECKED
    for name in released_config_names():
        source = released_config(name).source
        if source.get("copy") == "re-serialized":
            assert source.get("checked_against") or "none stored" in source.get(
                "released_copy", ""), name
