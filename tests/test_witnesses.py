"""The witness report (tools/witnesses.py): what it counts and what it fails on."""

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("witnesses", ROOT / "tools" / "witnesses.py")
witnesses = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(witnesses)


def _notebook(source, output):
    return {"cells": [{"cell_type": "code", "source": source, "metadata": {},
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": output}]}]}


LOOP = ("for r in (1, 2):\n"
        "    check_close(r, r, name='same', witness='brute force: a loop')\n")
LOOP_OUT = "PASS  same  [brute force: a loop]\nPASS  same  [brute force: a loop]\n"


def test_a_loop_prints_two_lines_from_one_call():
    nb = _notebook(LOOP, LOOP_OUT)
    assert witnesses.check_calls(nb) == 1
    lines = witnesses.pass_lines(nb)
    assert [line["kind"] for line in lines] == ["brute force", "brute force"]
    assert witnesses.calls_without_witness(nb) == []


def test_a_witness_wrapped_onto_indented_lines_is_read():
    out = ("PASS  a long name\n      [closed form: a derivation whose detail is too long\n"
           "       to fit on one line]\n")
    (line,) = witnesses.pass_lines(_notebook("", out))
    assert line["kind"] == "closed form"
    assert line["detail"] == "a derivation whose detail is too long to fit on one line"


def test_exercise_and_raises_lines_are_counted_apart():
    out = "PASS  Exercise 2.1: the table\nPASS  bad d_model  [raises ValueError]\n"
    kinds = [line["kind"] for line in witnesses.pass_lines(_notebook("", out))]
    assert kinds == ["exercise", "raises"]


def test_a_call_without_witness_and_an_untagged_line_fail_the_report(tmp_path, capsys):
    good = tmp_path / "good.ipynb"
    good.write_text(json.dumps(_notebook(LOOP, LOOP_OUT)))
    assert witnesses.main([str(good)]) == 0
    bad = tmp_path / "bad.ipynb"
    bad.write_text(json.dumps(_notebook("check_true(ok, name='ok')\n", "PASS  ok\n")))
    assert witnesses.main([str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "2 check(s) without a witness" in out
    assert "check_true(...) has no witness" in out
    assert "a PASS line names no witness" in out


def test_every_committed_notebook_passes_the_report(capsys):
    paths = sorted(str(p) for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert witnesses.main(paths) == 0
    assert "all notebooks" in capsys.readouterr().out
