"""The server's doors: sessions that end, sign-ins that are throttled and bounded, forms only from its own
pages, one bad report that takes nothing else down, and guests that see no place on the server's disk."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from vx_eval.core.stores import Stores
from vx_eval.serve import auth
from vx_eval.serve.app import ServeSettings, create_app
from vx_eval.serve.auth import PER_PAIR, Session, Throttle, Users

from ..test_cli import call
from .test_routes import _plugins, sign_in


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def users(tmp_path: Path, people) -> Path:
    """A copy of the people file this test may change."""
    path = tmp_path / "people" / "users.json"
    path.parent.mkdir()
    shutil.copy(people[0], path)
    return path


def serve(evaluations, users: Path, store: str | None = None, throttle: Throttle | None = None) -> TestClient:
    settings = ServeSettings(store=store or str(evaluations.runs), users=users, access_log=None)
    return TestClient(create_app(settings, Stores(_plugins()), throttle))


def at(c: TestClient, address: str) -> TestClient:
    """Another caller of the same server, from `address`."""
    return TestClient(c.app, client=(address, 5000))


def is_admin(c: TestClient) -> bool:
    return c.get("/api/v1/evaluations/latest").json()["golden_download"]


def test_a_session_ends_at_sign_out_even_where_the_cookie_was_copied(evaluations, users):
    c = serve(evaluations, users)
    sign_in(c, "ada", "ada-password")
    copied = c.cookies.get("vx_eval_session")
    assert is_admin(c)
    assert c.post("/logout", follow_redirects=False).status_code == 303
    thief = serve(evaluations, users)
    thief.cookies.set("vx_eval_session", copied)
    assert not is_admin(thief) and thief.get("/api/v1/evaluations/latest/golden").status_code == 403
    sign_in(c, "ada", "ada-password")  # signing in again makes a new session that works
    assert is_admin(c)


def test_a_new_password_or_users_signout_ends_every_session(evaluations, users, capsys):
    c = serve(evaluations, users)
    sign_in(c, "ada", "ada-password")
    Users(users).add_person("ada", "a-new-password", "admin")
    assert not is_admin(c)
    sign_in(c, "ada", "a-new-password")
    assert is_admin(c)
    code, _, err = call(capsys, "users", "signout", "ada", "--users", str(users))
    assert code == 0 and "every session of ada has ended" in err
    assert not is_admin(c)


def test_a_session_lasts_twelve_hours_however_busy(users):
    people = Users(users)
    session = Session(person="ada", epoch=people.load().people["ada"].epoch, made=time.time())
    assert people.person(session) is not None
    assert people.person(session, now=session.made + auth.SESSION_HOURS * 3600 + 1) is None


def test_sixty_wrong_passwords_then_the_right_one_is_held_back_for_a_bounded_time(evaluations, users):
    clock = Clock()
    c = at(serve(evaluations, users, throttle=Throttle(clock=clock)), "203.0.113.9")
    statuses = [
        c.post("/login", data={"username": "ada", "password": f"guess-{i}"}, follow_redirects=False).status_code
        for i in range(60)
    ]
    assert statuses[: PER_PAIR.free] == [303] * PER_PAIR.free  # refused (wrong), and checked
    assert set(statuses[PER_PAIR.free + 1 :]) == {429}  # held back, not checked: no argon2 spent
    right = c.post("/login", data={"username": "ada", "password": "ada-password"}, follow_redirects=False)
    assert right.status_code == 429 and "Too many tries" in right.text and int(right.headers["retry-after"]) > 0
    elsewhere = at(c, "198.51.100.7")  # ada at her own desk is not locked out by the attack
    sign_in(elsewhere, "ada", "ada-password")
    assert is_admin(elsewhere)
    sign_in(at(c, "203.0.113.10"), "rita", "rita-password")  # nor is anybody else
    clock.now += PER_PAIR.ceiling + 1  # a lock never outlasts its ceiling
    sign_in(c, "ada", "ada-password")
    assert is_admin(c)


def test_an_attack_from_many_addresses_never_locks_a_person_out_of_an_address_they_used():
    clock = Clock()
    throttle = Throttle(clock=clock)
    throttle.succeeded("ada", "10.0.0.1")  # ada signed in from here last week
    for i in range(500):
        throttle.failed("ada", f"192.0.2.{i % 250}")
    assert throttle.begin("ada", "10.0.0.1") == 0  # her own address: not held back
    held = throttle.begin("ada", "10.9.9.9")  # a new address: slowed, for at most a minute
    assert 0 < held <= auth.PER_PERSON.ceiling
    assert throttle.begin("bob", "10.9.9.9") == 0  # nobody else is touched
    clock.now += auth.PER_PERSON.ceiling + 1
    assert throttle.begin("ada", "10.9.9.9") == 0


def test_the_throttle_keeps_a_bounded_number_of_buckets():
    throttle = Throttle(tracked=100)
    for i in range(5000):
        throttle.failed(f"name-{i}", f"addr-{i}")
    assert len(throttle._buckets) <= 100


def test_password_checks_run_at_most_a_few_at_once_and_a_flood_waits_its_turn(users, monkeypatch):
    running, most = 0, 0
    lock = threading.Lock()
    real = auth._hasher()

    class Counting:
        def _enter(self) -> None:
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(0.02)
            with lock:
                running -= 1

        def verify(self, hashed: str, password: str) -> bool:
            self._enter()
            return real.verify(hashed, password)

        def hash(self, password: str) -> str:
            self._enter()
            return "x"

    monkeypatch.setattr(auth, "_hasher", Counting)
    monkeypatch.setattr(auth, "CHECK_WAIT_S", 600)  # every one of the 50 waits its turn, however loaded the machine
    people = Users(users, checks_at_once=2)
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda n=n: results.append(people.sign_in("ada" if n % 2 else "nobody", "wrong-pw")))
        for n in range(50)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 50 and all(r is None for r in results)
    assert most == 2


def test_a_sign_in_that_cannot_get_a_turn_is_told_the_server_is_busy(evaluations, users, monkeypatch):
    monkeypatch.setattr(auth, "CHECK_WAIT_S", 0.05)
    c = serve(evaluations, users)
    people = c.app.state.service.users
    while people._checks.acquire(blocking=False):  # every turn taken
        pass
    busy = c.post("/login", data={"username": "ada", "password": "ada-password"}, follow_redirects=False)
    assert busy.status_code == 503 and "busy" in busy.text and busy.headers["retry-after"]


@pytest.mark.parametrize("header", ["origin", "referer"])
def test_sign_in_and_sign_out_refuse_a_form_from_another_site(evaluations, users, header):
    c = serve(evaluations, users)
    foreign = {header: "https://evil.example/page" if header == "referer" else "https://evil.example"}
    refused = c.post("/login", data={"username": "ada", "password": "ada-password"}, headers=foreign)
    assert refused.status_code == 403 and "own pages" in refused.json()["detail"]
    assert not is_admin(c)
    ours = {header: "http://testserver/login" if header == "referer" else "http://testserver"}
    assert c.post("/login", data={"username": "ada", "password": "ada-password"}, headers=ours).status_code == 200
    assert is_admin(c)
    assert c.post("/logout", headers=foreign).status_code == 403
    assert is_admin(c)  # a foreign page cannot sign the person out either


BAD_REPORTS = {
    "20000101T000000000001Z-aaaaaa": b"[]",
    "20000101T000000000002Z-bbbbbb": b'{"format": "abc"}',
    "20000101T000000000003Z-cccccc": b'{"id": "20000101T000000000003Z-cccccc", "setups": "abc"}',
    "20000101T000000000004Z-dddddd": b'{"id": "x", "name": "\xff\xfe"}',
}


@pytest.fixture
def damaged(evaluations, tmp_path) -> Path:
    """A copy of the runs with four unreadable reports, older than the rest, and the newest one broken."""
    store = tmp_path / "store"
    shutil.copytree(evaluations.runs, store, symlinks=True)
    for run_id, raw in BAD_REPORTS.items():
        (store / "retrieval" / "runs" / run_id).mkdir()
        (store / "retrieval" / "runs" / run_id / "report.json").write_bytes(raw)
    (store / "retrieval" / "runs" / "29991231T000000000000Z-eeeeee").mkdir()
    (store / "retrieval" / "runs" / "29991231T000000000000Z-eeeeee" / "report.json").write_bytes(b"{")
    return store


def test_one_bad_report_is_listed_as_unreadable_and_the_rest_are_served(evaluations, users, damaged):
    c = serve(evaluations, users, store=str(damaged))
    page = c.get("/")
    assert page.status_code == 200 and evaluations.newest_json["id"] in page.text  # the newest readable run
    listed = c.get("/api/v1/evaluations", params={"limit": 200}).json()["runs"]
    unreadable = {r["id"]: r["reason"] for r in listed if r["status"] == "unreadable"}
    assert set(unreadable) == {*BAD_REPORTS, "29991231T000000000000Z-eeeeee"}
    assert "not a report (it holds a JSON list" in unreadable["20000101T000000000001Z-aaaaaa"]
    assert "its format is 'abc'" in unreadable["20000101T000000000002Z-bbbbbb"]
    assert "setups" in unreadable["20000101T000000000003Z-cccccc"]
    assert "UTF-8" in unreadable["20000101T000000000004Z-dddddd"]
    assert str(damaged) not in json.dumps(listed)
    for run_id in BAD_REPORTS:
        one = c.get(f"/api/v1/evaluations/{run_id}")
        assert one.status_code == 500 and "not" in one.json()["detail"] and str(damaged) not in one.text
        assert c.get(f"/runs/{run_id}").status_code == 500
    assert c.get(f"/api/v1/evaluations/{evaluations.newest_json['id']}").status_code == 200
    assert c.get("/api/v1/evaluations/x" * 60).status_code in (404, 422)


def test_runs_list_and_show_take_a_bad_report_in_their_stride(damaged, capsys):
    code, out, err = call(capsys, "runs", "list", str(damaged), "--limit", "100")
    assert code == 0 and out.count("unreadable") >= 5 and "Traceback" not in err
    code, _, err = call(capsys, "runs", "show", "20000101T000000000001Z-aaaaaa", str(damaged))
    assert code == 2 and "is not a report (it holds a JSON list, not an object)" in err
    code, out, _ = call(capsys, "runs", "show", "latest", str(damaged))
    assert code == 0
    code, _, err = call(capsys, "runs", "show", "x" * 300, str(damaged))
    assert code == 2 and "a run id is at most 100 letters" in err and len(err) < 300


ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:tmp|home|root|work|srv|usr|var)/")


def test_a_guest_sees_no_place_on_the_disk_and_no_platform_an_admin_sees_all(evaluations, users):
    guest = serve(evaluations, users)
    shown = guest.get("/api/v1/evaluations/latest").json()
    text = json.dumps(shown)
    assert not ABSOLUTE.search(text), ABSOLUTE.search(text)
    assert shown["provenance"]["platform"] == "" and shown["golden"]["source"] == "golden.jsonl"
    assert shown["question_ids"] == evaluations.newest_json["question_ids"]  # ids and scores untouched
    assert shown["setups"][0]["summary"] == evaluations.newest_json["setups"][0]["summary"]
    page = guest.get("/").text
    assert str(evaluations.runs) not in page and not ABSOLUTE.search(page)
    missing = guest.get("/runs/20000101T000000000000Z-ffffff")
    assert missing.status_code == 404 and str(evaluations.runs) not in missing.text
    admin = serve(evaluations, users)
    sign_in(admin, "ada", "ada-password")
    assert admin.get("/api/v1/evaluations/latest").json()["provenance"]["platform"]


def test_a_flood_at_once_cannot_race_past_the_free_tries():
    throttle = Throttle(clock=Clock())
    admitted = [throttle.begin("ada", "203.0.113.9") == 0 for _ in range(50)]  # none has finished yet
    assert sum(admitted) == PER_PAIR.free
    for _ in range(PER_PAIR.free):
        throttle.failed("ada", "203.0.113.9")
    assert throttle.begin("ada", "203.0.113.9") > 0  # and then the lock holds
