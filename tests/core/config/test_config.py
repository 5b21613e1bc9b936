"""Config: validation errors name the file, line and YAML path and say what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from vx_eval.core.config.experiment import SecretRef, load_config
from vx_eval.core.errors import ConfigError


def errors_of(text: str, plugins, tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, plugins)
    return str(info.value)


BASE = "name: x\ngolden: g.jsonl\ntargets:\n  - name: Local\n    engine: sqlite\n"


def test_a_valid_config_resolves_relative_paths_against_its_folder(plugins, tmp_path):
    path = tmp_path / "sub" / "config.yaml"
    path.parent.mkdir()
    path.write_text(BASE + "    options: {path: idx/a.db}\ncorpus: ../docs.jsonl\nsave_to: s3://bucket/evals\n")
    experiment = load_config(path, plugins)
    assert experiment.config.golden == str(tmp_path / "sub" / "g.jsonl")
    assert experiment.config.corpus == str(tmp_path / "docs.jsonl")
    assert experiment.config.save_to == "s3://bucket/evals"  # URIs are left alone
    assert experiment.options[0].path == tmp_path / "sub" / "idx" / "a.db"
    assert len(experiment.sha256) == 64


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "targts: []\n", "config.yaml:6: targts: unknown key; did you mean 'targets'?"),
        (
            "name: x\ngolden: g.jsonl\ntargets:\n  - name: Local\n    engin: sqlite\n",
            "config.yaml:5: targets[0].engin: unknown key; did you mean 'engine'?",
        ),
        (
            "name: x\ngolden: g.jsonl\ntargets:\n  - name: Local\n    engin: sqlite\n",
            "config.yaml:4: targets[0].engine: required but missing",
        ),
        (
            BASE.replace("sqlite", "sqlit"),
            "config.yaml:5: targets[0].engine: no engine named 'sqlit'; did you mean 'sqlite'?",
        ),
        (
            BASE + "    options: {chunk_word: 3}\n",
            "config.yaml:6: targets[0].options.chunk_word: unknown key; did you mean 'chunk_words'?",
        ),
        (
            BASE + "    options: {chunk_words: 10, chunk_overlap: 10}\n",
            "targets[0].options: chunk_overlap (10) must be below chunk_words (10)",
        ),
        (
            BASE + "    options: {password: hunter2}\n",
            "targets[0].options.password: a secret is written into the config; write `password: {env: VARIABLE}`",
        ),
        (
            BASE + "evaluation: {depth: twenty}\n",
            "config.yaml:6: evaluation.depth: Input should be a valid integer",
        ),
        (
            BASE + "evaluation:\n  metrics: [ndgc@10]\n",
            "config.yaml:7: evaluation.metrics[0]: unknown measure 'ndgc@10'; did you mean 'ndcg'?",
        ),
        (
            BASE + "evaluation:\n  metrics: [recall@100]\n",
            "evaluation.metrics[0]: recall@100 reads 100 results but evaluation.depth is 20; set depth: 100",
        ),
        (
            BASE + "evaluation: {balance: 400}\n",
            "evaluation.balance: Input should be less than or equal to 100",
        ),
        (BASE + "  - name: Local\n    engine: sqlite\n", "two targets are named 'Local'"),
        (
            "name: x\ngolden: {path: g.jsonl, formt: beir}\ntargets: [{name: A, engine: sqlite}]\n",
            "config.yaml:2: golden.formt: unknown key; did you mean 'format'?",
        ),
        ("name: x\ntargets: []\n", "golden: required but missing"),
        ("name: x\ngolden: [\n", "config.yaml:3:1: not valid YAML"),
        ("- just\n- a list\n", "a config is a YAML mapping with name, golden, targets"),
    ],
)
def test_bad_configs_are_named_by_file_line_and_path(plugins, tmp_path, text, message):
    assert message in errors_of(text, plugins, tmp_path)


def test_every_problem_is_reported_at_once_in_line_order(plugins, tmp_path):
    text = (
        "name: x\ngolden: g.jsonl\ntargts: []\ntargets:\n  - name: A\n    engine: sqlite\n"
        "    options: {chunk_word: 3}\nevaluation:\n  metrics: [ndgc@10]\n  depht: 3\n"
    )
    lines = errors_of(text, plugins, tmp_path).splitlines()
    assert [line.split(":")[1] for line in lines] == ["3", "7", "9", "10"]


def test_a_missing_config_file_says_so(plugins, tmp_path):
    with pytest.raises(ConfigError, match="config file .*nope.yaml does not exist"):
        load_config(tmp_path / "nope.yaml", plugins)


def test_secrets_are_references_to_environment_variables(monkeypatch):
    ref = SecretRef(env="VX_TEST_SECRET")
    monkeypatch.delenv("VX_TEST_SECRET", raising=False)
    with pytest.raises(ConfigError, match="environment variable VX_TEST_SECRET is not set"):
        ref.value()
    monkeypatch.setenv("VX_TEST_SECRET", "s3cr3t")
    assert ref.value() == "s3cr3t"
    assert "s3cr3t" not in repr(ref)


def test_a_secret_reference_passes_the_secret_check():
    from vx_eval.core.config.experiment import _check_secrets

    assert _check_secrets({"api_key": {"env": "AZURE_SEARCH_KEY"}}, ("options",)) == []
    assert _check_secrets({"auth": {"token": "abc"}}, ("options",))[0][0] == ("options", "auth", "token")
