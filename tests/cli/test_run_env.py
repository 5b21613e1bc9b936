"""`vx-eval run` lands where the server reads runs: --save-to, else the config's save_to, else
$VX_EVAL_EVALUATIONS (set, or read from --env-file: the server's settings file), else runs/."""

from __future__ import annotations

import os

import yaml

from ..conftest import call


def _config_without_save_to(project):
    config = project.write_config()
    data = yaml.safe_load(config.read_text())
    del data["save_to"]
    config.write_text(yaml.safe_dump(data))
    return config


def _reports(folder):
    return sorted(folder.rglob("report.json"))


def test_the_run_saves_where_the_environment_or_the_env_file_says_unless_told_otherwise(project, capsys, monkeypatch):
    monkeypatch.delenv("VX_EVAL_EVALUATIONS", raising=False)
    monkeypatch.chdir(project.root)
    config = _config_without_save_to(project)
    settings = project / "server.env"
    settings.write_text(f"# the server's settings\nexport VX_EVAL_EVALUATIONS='{project / 'evaluations'}'\nOTHER=1\n")

    code, _, err = call(capsys, "run", str(config), "--env-file", str(settings))
    assert code == 0, err
    assert len(_reports(project / "evaluations" / "retrieval")) == 1 and not (project / "runs").exists()
    assert os.environ["VX_EVAL_EVALUATIONS"] == str(project / "evaluations")

    monkeypatch.setenv("VX_EVAL_EVALUATIONS", str(project / "set-here"))  # the environment wins over the file
    code, _, err = call(capsys, "run", str(config), "--env-file", str(settings))
    assert code == 0, err
    assert len(_reports(project / "set-here")) == 1 and len(_reports(project / "evaluations")) == 1

    code, _, err = call(capsys, "run", str(config), "--save-to", str(project / "given"))
    assert code == 0, err
    assert len(_reports(project / "given")) == 1 and len(_reports(project / "set-here")) == 1

    named = project.write_config("named.yaml")  # save_to: runs, said by the config itself
    code, _, err = call(capsys, "run", str(named))
    assert code == 0, err
    assert len(_reports(project / "runs")) == 1 and len(_reports(project / "set-here")) == 1


def test_an_env_file_that_is_not_there_is_a_usage_error(project, capsys):
    code, _, err = call(capsys, "run", str(project.write_config()), "--env-file", str(project / "nothing.env"))
    assert code == 2 and "nothing.env" in err and "does not exist" in err and "Traceback" not in err
