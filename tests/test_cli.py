"""The command line: what a person sees, exit codes, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vx_eval.cli import main

from .conftest import REPO, call, quickstart_copy


@pytest.fixture
def quickstart(tmp_path: Path, shared_cache: Path) -> Path:
    """The shipped quickstart collection, keyword only (fast), copied so that runs write only into tmp."""
    return quickstart_copy(tmp_path, shared_cache)


@pytest.mark.slow
def test_the_shipped_quickstart_prints_every_method_ranked_with_picks_and_neighbours(capsys, tmp_path, shared_cache):
    config = quickstart_copy(tmp_path, shared_cache, keyword_only=False)
    # every method as shipped, cheaply: the cross-encoder reads the top 5, and 4 questions are timed end to
    # end (the others reuse the scores the models kept)
    shipped = yaml.safe_load(config.read_text())
    shipped["search"] = {"rerank_depth": 5}
    shipped["evaluation"]["timing_sample"] = 4
    config.write_text(yaml.safe_dump(shipped, sort_keys=False))
    code, out, err = call(capsys, "run", str(config))
    assert code == 0, err
    assert "quickstart: 42 questions, 12 setups" in out
    for label in (
        "Keyword (BM25)",
        "Dense — MiniLM",
        "Dense, fused — BGE + MiniLM",
        "Hybrid — BGE",
        "Hybrid, reranked by ms-marco MiniLM — BGE + MiniLM",
        "ColBERT-style (approximate)",
        "Entity graph",
    ):
        assert label in out
    for line in ("★ Finds the most:", "◆ Best for balance:", "⚡ Best for time:", "One change away from"):
        assert line in out
    report = json.loads(Path(out.split("Report: ")[1].split()[0]).read_text())
    assert all(s["error"] is None for s in report["setups"])
    by_key = {s["key"]: s for s in report["setups"]}
    dense = max((s for s in report["setups"] if s["method"] == "dense"), key=lambda s: s["summary"]["mrr"])
    assert dense["summary"]["mrr"] > by_key["local.keyword"]["summary"]["mrr"]  # paraphrases need meaning


def test_run_prints_the_ranked_table_the_picks_and_the_report_location(capsys, quickstart):
    code, out, err = call(capsys, "run", str(quickstart))
    assert code == 0, err
    assert "quickstart: 42 questions, 1 setups" in out
    assert "Keyword (BM25)" in out and "found@10" in out and "median ms" in out
    for line in (
        "★ Finds the most: Keyword (BM25) (local.keyword)",
        "◆ Best for balance:",
        "⚡ Best for time:",
    ):
        assert line in out
    report = Path(out.split("Report: ")[1].split()[0])
    assert report.parent.parent == quickstart.parent / "runs" / "retrieval" / "runs"
    assert json.loads(report.read_text())["picks"]["finds_the_most"] == "local.keyword"


def test_run_json_prints_the_report(capsys, quickstart, tmp_path):
    code, out, _ = call(capsys, "run", str(quickstart), "--json", "--save-to", str(tmp_path / "elsewhere"))
    assert code == 0
    report = json.loads(out)
    assert report["golden"]["labelled"] == 42 and report["settings"]["balance_points"] == 4
    assert (tmp_path / "elsewhere" / "retrieval" / "runs" / report["id"] / "report.json").is_file()


def test_balance_and_time_points_are_settable(capsys, quickstart):
    _, out, _ = call(capsys, "run", str(quickstart), "--json", "--no-save", "--balance", "3", "--time", "6")
    settings = json.loads(out)["settings"]
    assert (settings["balance_points"], settings["time_points"]) == (3, 6)


def test_a_bad_config_is_one_clear_error_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngolden: g.jsonl\ntargets:\n  - name: A\n    engine: sqlte\n")
    code, out, err = call(capsys, "run", str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {bad}:5: targets[0].engine: no engine named 'sqlte'; did you mean 'sqlite'?")


def test_a_missing_config_and_a_bad_option_exit_2(capsys, tmp_path):
    assert call(capsys, "run", str(tmp_path / "nope.yaml"))[2].startswith("error: config file")
    code, _, err = call(capsys, "run", "x.yaml", "--balance", "101")
    assert code == 2 and "101.0 is not in the range 0<=x<=100" in err


def test_golden_check_lists_every_defect_and_exits_2(capsys, tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"question": "a", "expected": []}\n{"question": "b", "expectd": ["x"]}\n{oops\n')
    code, _, err = call(capsys, "golden", "check", str(path))
    assert code == 2
    assert f"{path}:1: expected is empty" in err
    assert f"{path}:2: unknown field 'expectd'; did you mean 'expected'?" in err
    assert f"{path}:3:2: invalid JSON" in err
    assert "4 problems in" in err  # line 2 also has an empty expected


def test_golden_check_with_a_config_looks_every_expected_id_up_in_the_corpus_file_building_nothing(capsys, tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    quickstart = quickstart_copy(tmp_path, cache_dir, keyword_only=False)
    golden = quickstart.parent / "quickstart" / "golden.jsonl"
    code, out, err = call(capsys, "golden", "check", str(golden), "--config", str(quickstart))
    assert code == 0 and "42 questions ok" in out
    assert "(95 documents); no index built" in " ".join(err.split())
    bad = tmp_path / "g.jsonl"
    bad.write_text('{"question": "where?", "expected": ["fdic", "no-such-doc", "Deferment"]}\n')
    code, _, err = call(capsys, "golden", "check", str(bad), "--config", str(quickstart))
    text = " ".join(err.split())
    assert code == 2 and "expected document 'no-such-doc' is not in the corpus" in text
    assert "docs.jsonl; did you mean 'fdic'" not in text  # nothing near no-such-doc
    assert "'Deferment' is not in the corpus" in text and "docs.jsonl; did you mean 'deferment'?" in text
    # nothing was indexed or embedded: no index file, no vector in the cache
    assert not (tmp_path / ".vx").exists() and not (cache_dir / "embeddings.db").exists()


def test_golden_check_with_a_config_and_no_corpus_asks_the_index_that_is_there_and_builds_none(
    capsys, project, monkeypatch
):
    """With no `corpus:` the ids are looked up on each target's existing index (opened, never built); an
    index that is not there is said, with what to do, and nothing is made in its place."""
    monkeypatch.chdir(project.root)
    built = project.write_config("built.yaml")
    code, _, err = call(capsys, "run", str(built), "--no-save")  # builds .vx/tiny.db (keyword only)
    assert code == 0, err
    index = project / ".vx" / "tiny.db"
    stamp = index.stat().st_mtime_ns
    no_corpus = project.write_config("nocorpus.yaml")
    text = no_corpus.read_text().replace("corpus: docs.jsonl\n", "")
    no_corpus.write_text(text)
    bad = project / "bad.jsonl"
    bad.write_text('{"question": "wire?", "expected": ["Wire", "wire"]}\n')
    code, _, err = call(capsys, "golden", "check", str(bad), "--config", str(no_corpus))
    said = " ".join(err.split())
    assert code == 2 and "expected document 'Wire' is not in Local; did you mean 'wire'?" in said
    assert index.stat().st_mtime_ns == stamp  # opened as it was, not rebuilt
    elsewhere = project.write_config("elsewhere.yaml")
    elsewhere.write_text(text.replace(".vx/tiny.db", ".vx/none.db"))
    code, _, err = call(capsys, "golden", "check", str(bad), "--config", str(elsewhere))
    assert code == 2 and "no index at" in err and "declares no corpus" in " ".join(err.split())
    assert not (project / ".vx" / "none.db").exists()


def test_golden_check_reads_a_beir_folder_and_says_which_queries_it_leaves_out(capsys, tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "first?"}\n{"_id": "2", "text": "second?"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    code, out, err = call(capsys, "golden", "check", str(tmp_path))
    assert code == 0 and f"{tmp_path}: 1 questions ok" in out
    assert "left out 1 query with no judgement in qrels/test.tsv" in " ".join(err.split())
    code, _, err = call(capsys, "golden", "check", str(tmp_path), "--split", "dev")
    assert code == 2 and "this BEIR folder has splits: test" in " ".join(err.split())


def test_golden_template_is_seeded_and_never_overwrites(capsys, quickstart, tmp_path):
    out_file = tmp_path / "template.jsonl"
    code, out, _ = call(capsys, "golden", "template", str(quickstart), "--out", str(out_file), "-n", "5")
    assert code == 0 and "Wrote 5 rows" in out
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["question"] for r in rows] == [""] * 5
    assert all(len(r["expected"]) == 1 and r["hint"] for r in rows)
    first = out_file.read_bytes()
    code, _, err = call(capsys, "golden", "template", str(quickstart), "--out", str(out_file), "-n", "5")
    assert code == 2 and "exists; choose another --out, or pass --force" in err
    call(capsys, "golden", "template", str(quickstart), "--out", str(out_file), "-n", "5", "--force")
    assert out_file.read_bytes() == first  # same seed, same collection: same rows
    call(
        capsys,
        "golden",
        "template",
        str(quickstart),
        "--out",
        str(out_file),
        "-n",
        "5",
        "--force",
        "--seed",
        "1",
    )
    assert out_file.read_bytes() != first
    call(capsys, "golden", "template", str(quickstart), "--out", str(out_file), "-n", "500", "--force")
    assert len(out_file.read_text().splitlines()) == 95  # every document once
    code, out, _ = call(capsys, "golden", "check", str(out_file))
    assert code == 0 and "0 questions ok, 95 rows still to fill" in out


def test_golden_import_from_beir(capsys, scifact, tmp_path):
    out_file = tmp_path / "scifact.jsonl"
    code, out, _ = call(capsys, "golden", "import", "--from", "beir", str(scifact), "--out", str(out_file))
    assert code == 0 and "Wrote 300 questions" in out
    assert call(capsys, "golden", "check", str(out_file))[0] == 0


def test_plugins_lists_what_is_installed(capsys):
    code, out, _ = call(capsys, "plugins", "--json")
    listing = json.loads(out)
    assert {"sqlite", "qdrant"} <= set(listing["roles"]["engines"]) and "keyword" in listing["roles"]["setups"]
    assert {p["name"]: p["package"] for p in listing["plugins"]}["sqlite"] == "vx-eval"
    code, out, _ = call(capsys, "plugins")
    assert code == 0 and "vx_eval.plugins.engines.sqlite" in out


def test_plugins_can_be_disabled_by_name(capsys, monkeypatch, quickstart):
    monkeypatch.setenv("VX_EVAL_DISABLE_PLUGINS", "sqlite")
    code, out, _ = call(capsys, "plugins", "--json")
    assert "sqlite" not in json.loads(out)["roles"]["engines"]
    code, _, err = call(capsys, "run", str(quickstart))
    assert code == 2 and "no engine named 'sqlite' (installed: " in err
    monkeypatch.setenv("VX_EVAL_DISABLE_PLUGINS", "sqlte")
    code, _, err = call(capsys, "plugins")
    assert (
        code == 2
        and "VX_EVAL_DISABLE_PLUGINS names 'sqlte', which is not an installed plugin; did you mean 'sqlite'?" in err
    )


def test_anything_but_a_user_error_is_a_bug_and_keeps_its_traceback(monkeypatch):
    def broken():
        raise RuntimeError("a bug")

    import vx_eval.cli.plugins

    monkeypatch.setattr(vx_eval.cli.plugins, "load_plugins", broken)  # the name the command calls
    with pytest.raises(RuntimeError, match="a bug"):
        main(["plugins"])


def test_prose_is_wrapped_between_words_at_the_terminals_width(quickstart, capsys, monkeypatch):
    """At 80 columns the picks' reasons and the notes are wrapped (they ran to 120-183 characters once);
    piped output keeps each on one line."""
    from vx_eval.cli.common import out_console

    monkeypatch.setenv("COLUMNS", "80")
    out_console.cache_clear()
    try:
        code, out, err = call(capsys, "run", str(quickstart), "--no-save")
    finally:
        out_console.cache_clear()
    assert code == 0, err
    assert "Finds the most" in out and max(len(line) for line in out.splitlines()) <= 80
    monkeypatch.delenv("COLUMNS")
    code, out, err = call(capsys, "run", str(quickstart), "--no-save")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) > 80  # piped: one line a note, at 150 columns


@pytest.mark.slow
def test_golden_check_of_scifact_with_its_config_builds_no_index(capsys, scifact):
    """The shipped SciFact config and its BEIR folder: every judged id looked up in the 5,183-document corpus
    file; the config's index and embeddings cache are left as they were (`benchmarks/golden_check.py` times it)."""
    config = REPO / "configs" / "scifact.yaml"
    made = [REPO / ".vx" / "scifact.db", REPO / ".vx" / "embeddings.db"]
    before = {p: p.stat().st_mtime_ns if p.exists() else None for p in made}
    code, out, err = call(capsys, "golden", "check", str(scifact), "--config", str(config))
    assert code == 0, err
    assert "(5,183 documents); no index built" in " ".join(err.split())
    assert out.strip().endswith("300 questions ok")
    assert {p: p.stat().st_mtime_ns if p.exists() else None for p in made} == before
