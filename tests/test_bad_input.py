"""Each kind of bad input found by fuzzing ends in exit 2 and one clear, brief message naming what is wrong,
never a traceback, and before any indexing (no index file is made)."""

from __future__ import annotations

import json

import pytest

from .test_cli import call

HUGE = "9" * 4301
BASE = """name: bad
golden: golden.jsonl
corpus: docs.jsonl
targets:
  - name: Local
    engine: sqlite
    options: {dense_models: [], path: .vx/x.db}
"""


def config(project, text: str) -> str:
    path = project / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def refused(capsys, project, *argv: str) -> str:
    code, out, err = call(capsys, *argv)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "\x1b" not in err + out
    assert not (project / ".vx" / "x.db").exists(), "refused only after indexing"
    return err + out


CONFIGS = [
    (BASE + f"evaluation: {{seed: {HUGE}}}\n", "bad.yaml:8:20: not valid YAML: cannot read the value '9999"),
    (BASE + "evaluation: {depth: !!float xyz}\n", "bad.yaml:8:21: not valid YAML: cannot read the value 'xyz'"),
    (BASE + "evaluation: {depth: !!int abc}\n", "bad.yaml:8:21: not valid YAML: cannot read the value 'abc'"),
    (BASE + "extra: " + "[" * 1000 + "]" * 1000 + "\n", "nested more than 64 levels deep"),
    (BASE.replace("{dense_models: [], path: .vx/x.db}", "&a {x: *a}"), "an alias refers to the value it is part of"),
    (BASE + "evaluation: {metrics: 5}\n", "bad.yaml:8: evaluation.metrics: Input should be a valid list (got 5)"),
    (BASE + "Name: x\n", "bad.yaml:8: Name: unknown key; did you mean 'name'?"),
    (BASE + "evaluation: {Depth: 5}\n", "bad.yaml:8: evaluation.Depth: unknown key; did you mean 'depth'?"),
    (BASE + "judges: {cross-encodr: {model: x}}\n", "judges.cross-encodr: no judge named 'cross-encodr'; did you mean"),
    (BASE + "writers: {chta: {model: x}}\n", "bad.yaml:8: writers.chta: no question writer named 'chta'; did you mean"),
    (BASE + "stores: {s3: {bogus: 1}}\n", "bad.yaml:8: stores.s3.bogus: unknown key; known keys: endpoint_url"),
    (
        BASE.replace("dense_models: []", "dense_models: [minilmm]"),
        "no dense model named 'minilmm'; did you mean 'minilm'?",
    ),
    (BASE.replace("dense_models: []", "dense_models: [], reranker: minilm"), "'minilm' is a dense model; a reranker"),
    (BASE + "judges: {cross-encoder: {model: colbert-smal}}\n", "no reranker model named 'colbert-smal'"),
    (
        "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
        + "name: *a8\n",
        "expand to more than 100,000; write the config out",
    ),
    (BASE.replace("name: bad", "name: bad\x01"), "a control character (U+0001) YAML does not allow"),
]


@pytest.mark.parametrize(("text", "message"), CONFIGS, ids=range(len(CONFIGS)))
def test_a_bad_config_is_one_clear_line_before_any_indexing(project, capsys, text, message):
    shown = refused(capsys, project, "run", config(project, text))
    assert message in shown and len(shown) < 600, shown


def test_dates_and_times_in_yaml_are_text_not_a_crash(project, plugins):
    from vx_eval.core.config.experiment import load_config

    for name in ("2001-13-45", "25:61:61", "2001-01-01"):
        assert load_config(config(project, BASE.replace("name: bad", f"name: {name}")), plugins).config.name == name


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": ' + HUGE + ', "question": "x", "expected": ["d"]}', "golden.jsonl:1: invalid JSON: a number too long"),
        ('{"id": "q", "question": ' + "[" * 1000 + "]" * 1000 + "}", "golden.jsonl:1: invalid JSON: nested too deeply"),
        (
            json.dumps({"id": "q", "question": "x", "expected": ["d"], "\x1b[2Jbad\x1b]0;t\x07": 1}),
            r"unknown field '\x1b[2Jbad\x1b]0;t\x07'",
        ),
    ],
)
def test_golden_check_names_the_line_and_quotes_safely(project, capsys, line, message):
    (project / "golden.jsonl").write_text(line + "\n", encoding="utf-8")
    shown = refused(capsys, project, "golden", "check", str(project / "golden.jsonl"))
    assert message in shown


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"id": ' + HUGE + ', "text": "x"}', "docs.jsonl:1: invalid JSON: a number too long to be one"),
        ('{"id": "a", "text": "x", "metadata": ' + '{"a":' * 1000 + "1" + "}" * 1000 + "}", "nested too deeply"),
        ('{"id": "a", "text": 5}', "docs.jsonl:1: text must be a string and pages a list of strings"),
    ],
)
def test_a_bad_corpus_line_is_named(project, capsys, doc, message):
    (project / "docs.jsonl").write_text(doc + "\n", encoding="utf-8")
    assert message in refused(capsys, project, "run", config(project, BASE))


def test_golden_write_refuses_an_unknown_kind_before_indexing(project, capsys):
    shown = refused(
        capsys,
        project,
        "golden",
        "write",
        config(project, BASE),
        "--mix",
        "bogus=1",
        "--writer",
        "template",
        "--out",
        str(project / "d.jsonl"),
    )
    assert "no question kind 'bogus' (kinds: fact, why, keyword, persona, two-passage)" in shown


@pytest.mark.parametrize(
    ("qrels", "argv", "message"),
    [
        (b"q1 0 d1 \xff\nq1 0 d2 1\n", (), r"qrels.txt:1: grade '\xff' is not a number"),
        (b"q1 0 d1 x\n", (), "qrels.txt:1: grade 'x' is not a number"),
        (b"q1 0 d1 1\n", ("-m", "ndcg@" + HUGE), "the cut-off is beyond any search depth (at most 10,000,000)"),
        (b"q1 0 d1 1\nq1 0 d1 0\n", (), "judged twice"),
    ],
)
def test_bad_trec_files_and_measures_are_named(project, capsys, qrels, argv, message):
    (project / "qrels.txt").write_bytes(qrels)
    (project / "run.txt").write_bytes(b"q1 Q0 d1 1 1.0 x\n")
    shown = refused(capsys, project, "eval", str(project / "qrels.txt"), str(project / "run.txt"), *argv)
    assert message in shown and len(shown) < 400


def test_a_non_utf8_id_tied_with_another_is_scored(project, capsys):
    (project / "qrels.txt").write_bytes(b"q1 0 d\xff 1\nq1 0 d2 1\n")
    (project / "run.txt").write_bytes(b"q1 Q0 d\xff 1 1.0 x\nq1 Q0 d2 2 1.0 x\n")
    code, out, _ = call(capsys, "eval", str(project / "qrels.txt"), str(project / "run.txt"), "-m", "map")
    assert code == 0 and "1.0000" in out


def test_a_file_that_is_not_yaml_is_not_quoted_back(project, capsys, tmp_path):
    secretish = tmp_path / "passwd"
    secretish.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    shown = refused(capsys, project, "runs", "list", "--config", str(secretish))
    assert "a config is a YAML mapping" in shown and "/bin/bash" not in shown


def test_runs_show_of_a_300_character_id_is_refused_briefly(project, capsys):
    shown = refused(capsys, project, "runs", "show", "x" * 300, str(project / "runs"))
    assert "a run id is at most 100 letters" in shown and len(shown) < 300


def test_a_path_too_long_to_be_a_file_is_a_clear_line_or_an_empty_store(project, capsys):
    """Found by benchmarks/fuzz.py's CLI reader: names past the file system's limit raised OSError."""
    long = "x" * 300
    qrels = project / "q.txt"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    shown = refused(capsys, project, "eval", str(qrels), long)
    assert "cannot be read: File name too long" in shown and "(300 characters)" in shown
    assert "cannot be read" in refused(capsys, project, "eval", long, str(qrels))
    code, out, err = call(capsys, "runs", "list", long)
    assert code == 0 and "Traceback" not in err and "none of 0" in out
    assert "a run id is at most 100 letters" in refused(capsys, project, "compare", long, long)


def test_a_long_question_id_in_qrels_is_read(project, capsys):
    long_id = "q" * 20_000
    (project / "qrels.txt").write_text(f"{long_id} 0 d1 1\n", encoding="utf-8")
    (project / "run.txt").write_text(f"{long_id} Q0 d1 1 1.0 x\n", encoding="utf-8")
    code, out, _ = call(capsys, "eval", str(project / "qrels.txt"), str(project / "run.txt"), "-m", "map")
    assert code == 0 and "1.0000" in out
