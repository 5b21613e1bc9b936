"""The chat judge and the question writers against a real OpenAI-compatible server: transformers' own
(`transformers serve`) running SmolLM2-135M-Instruct from its PyPI package, started on 127.0.0.1 and stopped
by its PID (and when the test process dies). Nothing is mocked: the answers are a real small model's, so the
tests assert what the plugins do with them (strict reading, unreadable answers counted, checks on every
accepted draft), not their wit."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.llm.chat import ChatOptions
from vx_eval.llm.checks import check
from vx_eval.llm.local import smollm2_folder
from vx_eval.plugins.judges.chat import ChatJudge, read_grade
from vx_eval.testing.processes import free_port, start_server

from ..conftest import REPO
from ..test_cli import call

MODEL = "smollm2-135m"


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("chat")
    (folder / MODEL).symlink_to(smollm2_folder())  # the server answers to the name it was started with
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    argv = [Path(sys.executable).with_name("transformers"), "serve", MODEL, "--device", "cpu"]
    with start_server(
        [*argv, "--host", "127.0.0.1", "--port", str(port)],
        port=port,
        what="transformers serve",
        env=env,
        cwd=folder,
        seconds=180,
    ) as server:
        yield f"{server.url}/v1"


def test_the_chat_judge_reads_grades_strictly_and_counts_what_it_cannot_read(chat_server):
    judge = ChatJudge(ChatOptions(url=chat_server, model=MODEL))
    pairs = [
        ("What does a wire abroad cost?", "Send money abroad by wire in forty currencies for a fee of 35 dollars."),
        ("What does a wire abroad cost?", "Branches run on renewable electricity since March."),
        ("Can I freeze a lost card?", "Freeze a lost or stolen card instantly in the app."),
    ]
    verdicts = judge.grade(pairs)
    assert len(verdicts) == 3
    for v in verdicts:
        assert v.grade == read_grade(v.raw)  # a grade only where the answer is one digit 0-3, else None
        assert v.grade is None or 0 <= v.grade <= 3


@pytest.mark.slow
def test_a_run_with_the_chat_judge_reports_unreadable_answers_and_never_grades_with_them(project, chat_server):
    # named as a team with an API key names theirs: a chat endpoint of models.endpoints as the run's judge
    smol = {"provider": "openai", "kind": "chat", "model": MODEL, "base_url": chat_server, "concurrency": 2}
    config = project.write_config(
        evaluation={"metrics": ["found@10", "ndcg@10"], "depth": 20, "judge": "smol", "judge_depth": 3},
        models={"threads": 1, "scores": str(project / "scores.db"), "endpoints": {"smol": smol}},
    )
    from vx_eval.core.plugins import load_plugins

    plugins = load_plugins()
    typed = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    report = typed.model_dump(mode="json")
    judge = report["judge"]
    assert judge["judge"] == "chat" and judge["model"] == MODEL and "##final score" in judge["rubric"]
    assert judge["details"]["url"] == chat_server
    assert judge["details"]["rubric_name"] == "umbrela"
    assert judge["pairs"] == judge["asked"] > 0
    assert judge["grades_from"]["judge"] + judge["unparsable"] >= judge["pairs"] - judge["grades_from"]["human"]
    from vx_eval.html.render import render_page

    assert f"from the chat judge ({MODEL})" in render_page(typed)
    again = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report.model_dump(
        mode="json"
    )["judge"]
    assert again["asked"] == judge["unparsable"]  # readable grades come from the cache; unreadable are asked again


def _write_config(tmp_path: Path, chat_server: str, critic) -> Path:
    import shutil

    import yaml

    if not (tmp_path / "quickstart").exists():
        shutil.copytree(REPO / "configs" / "quickstart", tmp_path / "quickstart")
    config = tmp_path / "write.yaml"
    writer = {"model": {"url": chat_server, "model": MODEL}, **({"critic": critic} if critic else {})}
    config.write_text(
        yaml.safe_dump(
            {
                "name": "quickstart",
                "golden": "quickstart/golden.jsonl",
                "corpus": "quickstart/docs.jsonl",
                "targets": [{"name": "Local", "engine": "sqlite", "options": {"path": ".vx/w.db", "dense_models": []}}],
                "writers": {"chat": writer},
                "models": {"scores": str(tmp_path / ".vx" / "scores.db")},
            }
        )
    )
    return config


@pytest.mark.slow
def test_the_chat_writer_writes_only_drafts_that_pass_every_check(tmp_path, chat_server, capsys):
    config = _write_config(tmp_path, chat_server, "cross-encoder")
    out = tmp_path / "drafts.jsonl"
    code, _, err = call(capsys, "golden", "write", str(config), "--out", str(out), "-n", "3", "--writer", "chat")
    assert code == 0, err
    docs = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "quickstart" / "docs.jsonl").open()}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3
    accepted = []
    for row in rows:
        assert row["draft"] is True and row["evidence"] and row["expected"]
        passages = [docs[u]["text"] for u in row["expected"]]
        assert check(_draft(row), passages, accepted, row["metadata"]["kind"]) == []
        assert row["metadata"]["critic"]["answered"] >= 3
        assert row["metadata"]["drafted_by"] == MODEL  # its family is circular in the runs it drafts for
        accepted.append(row["question"])
    code, _, err = call(capsys, "golden", "write", str(config), "--out", str(out), "-n", "3", "--writer", "chat")
    assert code == 2 and "never overwritten" in err
    again = tmp_path / "again.jsonl"
    code, _, err = call(capsys, "golden", "write", str(config), "--out", str(again), "-n", "3", "--writer", "chat")
    assert code == 0 and "model calls 0" in err  # every answer came from the cache: a rerun is free
    assert again.read_bytes() == out.read_bytes()


def _draft(row):
    from vx_eval.llm.checks import Draft

    return Draft(row["question"], row["evidence"])


def test_golden_write_refuses_a_template_writer_and_an_unknown_one(project, capsys):
    config = project.write_config()
    code, _, err = call(
        capsys, "golden", "write", str(config), "--out", str(project / "x.jsonl"), "--writer", "template"
    )
    assert code == 2 and "golden template" in err
    code, _, err = call(capsys, "golden", "write", str(config), "--out", str(project / "x.jsonl"), "--writer", "gpt")
    assert code == 2 and "no writer named 'gpt'" in err
    assert not Path(project / "x.jsonl").exists()


@pytest.mark.slow
def test_the_local_writer_drafts_offline_and_every_row_passes_the_checks(tmp_path, capsys):
    import shutil

    import yaml

    shutil.copytree(REPO / "configs" / "quickstart", tmp_path / "quickstart")
    config = tmp_path / "local.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "quickstart",
                "golden": "quickstart/golden.jsonl",
                "corpus": "quickstart/docs.jsonl",
                "targets": [{"name": "Local", "engine": "sqlite", "options": {"path": ".vx/l.db", "dense_models": []}}],
                "writers": {"local": {"threads": 1}},
                "models": {"scores": str(tmp_path / ".vx" / "scores.db")},
            }
        )
    )
    out = tmp_path / "drafts.jsonl"
    code, _, err = call(
        capsys, "golden", "write", str(config), "--out", str(out), "-n", "4", "--writer", "local", "--seed", "1"
    )
    assert code == 0, err
    docs = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "quickstart" / "docs.jsonl").open()}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4
    accepted = []
    for row in rows:
        passages = [docs[u]["text"] for u in row["expected"]]
        assert check(_draft(row), passages, accepted, row["metadata"]["kind"]) == []
        assert all(e in " ".join(" ".join(p.split()) for p in passages) for e in row["evidence"])
        accepted.append(row["question"])
    from vx_eval.core.golden.files import parse_golden

    written = parse_golden(out.read_bytes(), str(out))  # a valid golden file, every row counted as a draft
    assert written.drafts == 4 and written.labelled == 4
    assert {q.drafted_by for q in written.questions} == {"SmolLM2-135M-Instruct"}
    from vx_eval.core.golden.files import question_row

    assert question_row(written.questions[0])["metadata"]["drafted_by"] == "SmolLM2-135M-Instruct"


def test_the_chat_judge_grades_by_umbrela_unless_told_plain_and_reads_its_final_score_line():
    """UMBRELA's steps and final-score line by default; the plain rubric on asking; a grade is read from one
    digit alone or exactly one ``##final score: N`` line, never from an answer that gives two."""
    from vx_eval.plugins.judges.chat import PLAIN, UMBRELA, JudgeOptions

    default = ChatJudge(JudgeOptions(url="http://127.0.0.1:9/v1", model="m"))
    plain = ChatJudge(JudgeOptions(url="http://127.0.0.1:9/v1", model="m", rubric="plain"))
    assert default.describe()["rubric_name"] == "umbrela" and default.describe()["rubric"] == UMBRELA
    assert plain.describe()["rubric"] == PLAIN and plain.fingerprint() != default.fingerprint()
    assert "##final score: N" in UMBRELA and "(M)" in UMBRELA and "(T)" in UMBRELA
    assert [read_grade(a) for a in ("##final score: 2", "M: 2\nT: 1\n##final score: 3", "## Final Score: 0")] == [
        2,
        3,
        0,
    ]
    assert [
        read_grade(a) for a in ("##final score: 4", "##final score: 2\n##final score: 3", "##final score: 2.5")
    ] == [
        None,
        None,
        None,
    ]


def _endpoints_config(project, **more):
    endpoints = {
        "gpt": {"provider": "openai", "kind": "chat", "model": "gpt-4o-mini", "api_key": {"env": "VX_TEST_CHAT_KEY"}},
        "te3": {"provider": "openai", "model": "text-embedding-3-small"},
    }
    return project.write_config(models={"endpoints": endpoints}, **more)


def test_a_chat_endpoint_named_as_the_judge_or_the_writers_model_is_asked_with_its_settings(project):
    """`evaluation.judge: gpt` (a chat endpoint) is the chat judge asking it, its rubric still set under
    ``judges.chat``; a chat writer's ``model: gpt`` is the same endpoint; the key stays a reference."""
    from vx_eval.core.plugins import load_plugins

    plugins = load_plugins()
    config = _endpoints_config(
        project,
        evaluation={"metrics": ["ndcg@10"], "judge": "gpt"},
        judges={"chat": {"rubric": "plain", "temperature": 0.5}},
        writers={"chat": {"model": "gpt", "critic": {"endpoint": "gpt", "seed": 7}}},
    )
    experiment = load_config(config, plugins)
    assert experiment.config.evaluation.judge == "chat"
    judge = experiment.judges["chat"]
    assert (judge.url, judge.model, judge.rubric, judge.temperature) == (
        "https://api.openai.com/v1",
        "gpt-4o-mini",
        "plain",
        0.5,
    )
    assert judge.api_key is not None and judge.api_key.env == "VX_TEST_CHAT_KEY" and judge.endpoint == "gpt"
    writer = experiment.writers["chat"]
    assert writer.model.model == "gpt-4o-mini" and writer.critic.seed == 7 and writer.critic.model == "gpt-4o-mini"


@pytest.mark.parametrize(
    ("more", "said"),
    [
        ({"evaluation": {"judge": "gtp"}}, "no judge named 'gtp'"),
        ({"writers": {"chat": {"model": "te3"}}}, "'te3' is a dense endpoint; name a chat endpoint"),
        ({"writers": {"chat": {"model": "nope"}}}, "no endpoint named 'nope'; name a chat endpoint"),
        (
            {"evaluation": {"judge": "gpt"}, "judges": {"chat": {"url": "http://127.0.0.1:9/v1", "model": "m"}}},
            "names the chat endpoint 'gpt' and this block names a model too",
        ),
    ],
)
def test_a_chat_endpoint_named_wrong_is_a_config_error_naming_it(project, capsys, more, said):
    config = _endpoints_config(project, **more)
    code, _, err = call(capsys, "run", str(config), "--dry-run")
    assert code == 2 and said in err, err
    assert "Traceback" not in err


def test_a_chat_endpoint_of_another_provider_or_with_a_judges_name_is_refused(project, capsys):
    config = project.write_config(
        models={"endpoints": {"chat": {"provider": "openai", "kind": "chat", "model": "m"},
                              "c": {"provider": "cohere", "kind": "chat", "model": "command-r"}}},
    )  # fmt: skip
    code, _, err = call(capsys, "run", str(config), "--dry-run")
    assert code == 2
    assert "'chat' is the name of a judge plugin" in err and "provider cohere serves no chat models" in err
