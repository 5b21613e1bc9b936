"""The Evaluate server's routes and who may call them: guests, readers, admins, API keys, the server's key."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from vx_eval.core.report.saving import golden_copy_location
from vx_eval.core.stores import Stores
from vx_eval.serve.app import ServeSettings, create_app
from vx_eval.serve.auth import Users
from vx_eval.serve.service import MENU_SIZE

ADMIN_KEY = "the-servers-own-admin-key"


def client(evaluations, people, tmp_path: Path, **settings) -> TestClient:
    users, _ = people
    serve = ServeSettings(
        store=str(evaluations.runs),
        users=users,
        admin_key=ADMIN_KEY,
        access_log=tmp_path / "access.log",
        **settings,
    )
    return TestClient(create_app(serve, Stores(_plugins())))


def _plugins():
    from vx_eval.core.plugins import load_plugins

    return load_plugins()


def sign_in(c: TestClient, name: str, password: str) -> None:
    response = c.post("/login", data={"username": name, "password": password}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/"


def golden_file(evaluations) -> bytes:
    sha = evaluations.newest_json["golden"]["sha256"]
    return Path(golden_copy_location(str(evaluations.runs), sha)).read_bytes()


def log_lines(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "access.log").read_text().splitlines()]


def test_runs_are_listed_newest_first_a_page_at_a_time(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path)
    every = [r.id for r in [*evaluations.quick, *evaluations.rich]][::-1]
    first = c.get("/api/v1/evaluations", params={"limit": 5}).json()
    assert first["total"] == 14 and [r["id"] for r in first["runs"]] == every[:5]
    assert first["runs"][0]["collections"] == ["quickstart"]
    assert rest_collections(c) == ["quickstart-keyword"]
    assert "location" not in first["runs"][0]  # where the server keeps files is not the caller's business
    rest = c.get("/api/v1/evaluations", params={"limit": 20, "offset": 5}).json()
    assert [r["id"] for r in rest["runs"]] == every[5:]
    assert c.get("/api/v1/evaluations", params={"limit": 0}).status_code == 422


def rest_collections(c: TestClient) -> list[str]:
    return c.get("/api/v1/evaluations", params={"limit": 1, "offset": 13}).json()["runs"][0]["collections"]


def test_one_run_by_id_or_latest_with_missing_notes_in_words(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path)
    latest = c.get("/api/v1/evaluations/latest").json()
    assert latest["id"] == evaluations.newest_json["id"]
    assert latest["picks"] == evaluations.newest_json["picks"]
    assert any("cannot be found there: q-oslo" in note for note in latest["missing_notes"])
    assert latest["golden_download"] is False  # a guest
    older = evaluations.quick[0].id
    assert c.get(f"/api/v1/evaluations/{older}").json()["id"] == older
    missing = c.get("/api/v1/evaluations/20990101T000000000000Z-000000")
    assert missing.status_code == 404 and "no run" in missing.json()["detail"]
    for climbing in ("..%2F..%2Fusers", "..", "%2E%2E"):
        response = c.get(f"/api/v1/evaluations/{climbing}")
        assert response.status_code == 404, climbing  # from the router (a '/' inside) or from the id's check


def test_guests_read_runs_unless_the_server_admits_none(evaluations, people, tmp_path):
    assert client(evaluations, people, tmp_path).get("/api/v1/evaluations").status_code == 200
    closed = client(evaluations, people, tmp_path, guests=False)
    assert closed.get("/api/v1/evaluations").status_code == 401
    page = closed.get("/", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    _, keys = people
    assert closed.get("/api/v1/evaluations", headers={"X-API-Key": keys["rita"]}).status_code == 200
    sign_in(closed, "rita", "rita-password")
    assert closed.get("/api/v1/evaluations").status_code == 200


def test_golden_download_is_refused_to_guests_readers_and_every_key(evaluations, people, tmp_path):
    _, keys = people
    c = client(evaluations, people, tmp_path)
    route = "/api/v1/evaluations/latest/golden"
    assert c.get(route).status_code == 403  # guest
    for key in (keys["ada"], keys["rita"], ADMIN_KEY):  # an admin's own key, a reader's, the server's admin key
        assert c.get(route, headers={"X-API-Key": key}).status_code == 403
        assert c.get(route, headers={"Authorization": f"Bearer {key}"}).status_code == 403
        assert c.get("/api/v1/evaluations/latest", headers={"X-API-Key": key}).json()["golden_download"] is False
    assert c.get(route, headers={"X-API-Key": "vxk_0000_forged"}).status_code == 401
    sign_in(c, "rita", "rita-password")
    assert c.get(route).status_code == 403  # a person, but not an admin
    refusals = [e for e in log_lines(tmp_path) if e.get("event") == "golden download refused"]
    assert len(refusals) == 9
    assert not any(e.get("event") == "golden download" for e in log_lines(tmp_path))


def test_an_admin_signed_in_gets_the_exact_file_and_the_log_names_them(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path)
    sign_in(c, "ada", "ada-password")
    assert c.get("/api/v1/evaluations/latest").json()["golden_download"] is True
    response = c.get("/api/v1/evaluations/latest/golden")
    assert response.status_code == 200
    expected = golden_file(evaluations)
    assert hashlib.sha256(response.content).hexdigest() == evaluations.newest_json["golden"]["sha256"]
    assert response.content == expected
    assert response.headers["content-type"].startswith("application/x-ndjson")
    (download,) = [e for e in log_lines(tmp_path) if e.get("event") == "golden download"]
    assert download["person"] == "ada" and download["run"] == evaluations.newest_json["id"]
    assert download["sha256"] == evaluations.newest_json["golden"]["sha256"] and download["bytes"] == len(expected)


def test_a_run_whose_golden_file_was_not_kept_gives_404_and_no_button(evaluations, people, tmp_path):
    copy = tmp_path / "runs"
    shutil.copytree(evaluations.runs, copy)
    shutil.rmtree(copy / "golden_dataset")
    users, _ = people
    c = TestClient(
        create_app(ServeSettings(store=str(copy), users=users, access_log=tmp_path / "access.log"), Stores(_plugins()))
    )
    sign_in(c, "ada", "ada-password")
    assert c.get("/api/v1/evaluations/latest").json()["golden_download"] is False
    response = c.get("/api/v1/evaluations/latest/golden")
    assert response.status_code == 404 and "not kept" in response.json()["detail"]
    assert 'id="golden-download"' not in c.get("/").text


def test_sign_in_refuses_a_wrong_password_and_a_forged_or_stale_session(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path)
    wrong = c.post("/login", data={"username": "ada", "password": "nope-nope"}, follow_redirects=False)
    assert wrong.headers["location"].startswith("/login?failed=1")
    assert c.get("/api/v1/evaluations/latest").json()["golden_download"] is False
    sign_in(c, "ada", "ada-password")
    cookie = c.cookies.get("vx_eval_session")
    assert cookie and "ada" not in cookie.split(".")[-1]  # signed, not a bare name
    c.cookies.clear()
    c.cookies.set("vx_eval_session", cookie[:-3] + ("AAA" if not cookie.endswith("AAA") else "BBB"))
    assert c.get("/api/v1/evaluations/latest/golden").status_code == 403  # a tampered cookie is a guest's
    c.cookies.clear()
    c.cookies.set("vx_eval_session", cookie)
    assert c.get("/api/v1/evaluations/latest/golden").status_code == 200  # the cookie as signed still works
    # a session of somebody removed from the users file since is no longer an admin's
    users, _ = people
    other = tmp_path / "users.json"
    shutil.copy(users, other)
    gone = TestClient(
        create_app(ServeSettings(store=str(evaluations.runs), users=other, access_log=None), Stores(_plugins()))
    )
    sign_in(gone, "ada", "ada-password")
    data = json.loads(other.read_text())
    del data["people"]["ada"]
    other.write_text(json.dumps(data))
    assert gone.get("/api/v1/evaluations/latest/golden").status_code == 403
    fresh = client(evaluations, people, tmp_path)
    sign_in(fresh, "ada", "ada-password")
    assert fresh.get("/api/v1/evaluations/latest").json()["golden_download"] is True
    fresh.post("/logout")
    assert fresh.get("/api/v1/evaluations/latest").json()["golden_download"] is False


def test_the_page_shows_the_newest_run_a_menu_of_twelve_and_marks_an_older_run(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path)
    page = c.get("/").text
    assert f'data-run="{evaluations.newest_json["id"]}"' in page
    assert page.count('<li><a href="/runs/') == MENU_SIZE
    assert 'id="menu-older"' in page and 'id="older-run"' not in page
    second = c.get("/?runs=12").text
    assert second.count('<li><a href="/runs/') == 2
    older = evaluations.quick[0].id
    shown = c.get(f"/runs/{older}").text
    assert f'data-run="{older}"' in shown and 'id="older-run"' in shown and 'href="/"' in shown
    assert c.get("/runs/nope").status_code == 404
    # every request is in the access log with who made it
    entries = [e for e in log_lines(tmp_path) if "path" in e]
    assert {e["path"] for e in entries} >= {"/", f"/runs/{older}"} and all("caller" in e for e in entries)


def test_people_and_keys_are_kept_as_hashes(people):
    users, keys = people
    text = users.read_text()
    assert "ada-password" not in text and "$argon2id$" in text
    assert all(key not in text for key in keys.values())
    assert Users(users).key(keys["rita"]).role == "reader"
    with pytest.raises(Exception, match="at least 8"):
        Users(users).add_person("bob", "short", "admin")
    with pytest.raises(Exception, match="no role 'owner'"):
        Users(users).add_person("bob", "long-enough", "owner")


def test_the_server_reads_runs_from_s3(evaluations, people, tmp_path, moto_s3):
    import boto3

    s3 = boto3.client("s3", endpoint_url=moto_s3)
    s3.create_bucket(Bucket="evals")
    for path in evaluations.runs.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), "evals", f"team/{path.relative_to(evaluations.runs).as_posix()}")
    users, keys = people
    stores = Stores(_plugins(), options={"s3": {"endpoint_url": moto_s3}})
    c = TestClient(
        create_app(ServeSettings(store="s3://evals/team", users=users, access_log=tmp_path / "a.log"), stores)
    )
    listed = c.get("/api/v1/evaluations", params={"limit": 3}).json()
    assert listed["total"] == 14 and listed["runs"][0]["id"] == evaluations.newest_json["id"]
    assert c.get("/api/v1/evaluations/latest/golden", headers={"X-API-Key": keys["ada"]}).status_code == 403
    sign_in(c, "ada", "ada-password")
    golden = c.get("/api/v1/evaluations/latest/golden")
    assert hashlib.sha256(golden.content).hexdigest() == evaluations.newest_json["golden"]["sha256"]
    assert f'data-run="{evaluations.newest_json["id"]}"' in c.get("/").text


def test_serve_takes_its_store_from_a_config_and_says_what_is_missing(
    evaluations, people, tmp_path, capsys, monkeypatch
):
    import sys
    import urllib.request

    import yaml

    from vx_eval.testing.processes import free_port, start_server

    from ..test_cli import call

    monkeypatch.delenv("VX_EVAL_EVALUATIONS", raising=False)
    code, _, err = call(capsys, "serve", "--users", str(tmp_path / "u.json"))
    assert code == 2 and "--store LOCATION, --config CONFIG, or set VX_EVAL_EVALUATIONS" in err
    config = tmp_path / "served.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "served",
                "golden": str(evaluations.root / "golden.jsonl"),
                "save_to": str(evaluations.runs),
                "targets": [{"name": "Local", "engine": "sqlite", "options": {"path": "x.db"}}],
            }
        )
    )
    users, _ = people
    port = free_port()
    argv = [sys.executable, "-m", "vx_eval", "serve", "--config", config, "--users", users, "--port", str(port)]
    with (
        start_server(argv, port=port, what="vx-eval serve", cwd=tmp_path),
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/evaluations?limit=1") as response,
    ):
        assert json.loads(response.read())["total"] == 14


def test_a_summary_leaves_out_every_per_question_list_and_is_served_from_one_serialisation(
    evaluations, people, tmp_path
):
    c = client(evaluations, people, tmp_path)
    whole = c.get("/api/v1/evaluations/latest").json()
    summary = c.get("/api/v1/evaluations/latest?fields=summary")
    assert summary.status_code == 200
    body = summary.json()
    assert body["id"] == whole["id"] and body["picks"] == whole["picks"]
    assert all("per_question" not in s for s in body["setups"]) and all("per_question" in s for s in whole["setups"])
    assert [s["summary"] for s in body["setups"]] == [s["summary"] for s in whole["setups"]]
    assert c.get("/api/v1/evaluations/latest?fields=summary").content == summary.content
    assert c.get("/api/v1/evaluations/latest?fields=everything").status_code == 422


def test_the_openapi_description_has_the_run_and_dataset_routes_with_examples(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path)
    spec = c.get("/openapi.json").json()
    paths = spec["paths"]
    for path, method in [
        ("/api/v1/evaluations", "post"),
        ("/api/v1/evaluations/now", "post"),
        ("/api/v1/evaluations/{run_id}/cancel", "post"),
        ("/api/v1/datasets", "post"),
        ("/api/v1/datasets/{name}", "get"),
    ]:
        assert method in paths[path], (path, method)
    schemas = spec["components"]["schemas"]
    assert schemas["RunRequest"]["examples"] and schemas["DatasetIn"]["examples"]
    assert c.get("/docs").status_code == 200
    admin = {"X-API-Key": ADMIN_KEY}
    refused = c.post("/api/v1/evaluations", json={"experiment": "quickstart", "metrics": 5}, headers=admin)
    assert refused.status_code == 422 and ["body", "metrics"] in [e["loc"] for e in refused.json()["detail"]]
    assert c.post("/api/v1/evaluations", json={"experiment": "quickstart"}).status_code == 403  # a guest


def test_the_start_form_offers_the_targets_and_starts_a_run_on_one(evaluations, people, tmp_path):
    c = client(evaluations, people, tmp_path, targets={"help": "sqlite:/nonexistent/help.db"}, jobs=tmp_path / "jobs")
    assert "target:help" not in c.get("/").text  # a guest may not start runs
    sign_in(c, "ada", "ada-password")
    page = c.get("/").text
    assert '<option value="target:help">help</option>' in page and "Indexes, no configuration" in page
    refused = c.post("/evaluations/start", data={"experiment": "target:help", "dataset": "x"}, follow_redirects=False)
    assert refused.status_code == 422 and "a dataset goes with an experiment" in refused.text
    started = c.post("/evaluations/start", data={"experiment": "target:help"}, follow_redirects=False)
    assert started.status_code == 303 and started.headers["location"].startswith("/runs/")
    run_id = started.headers["location"].removeprefix("/runs/")
    job = c.get(f"/api/v1/evaluations/{run_id}", headers={"X-API-Key": ADMIN_KEY}).json()
    assert job["target"] == "help" and job["experiment"] is None
    assert "Target <b>help</b>" in c.get(f"/runs/{run_id}").text
