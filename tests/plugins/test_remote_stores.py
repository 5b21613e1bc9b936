"""S3 (moto's server) and Azure Blob (Azurite) for real over HTTP on 127.0.0.1: read, atomic write, exists,
list, errors a person can act on; a run reading its golden file from one and saving to the other."""

from __future__ import annotations

import json
import uuid

import pytest

from vx_eval.core.contracts.store import StoreDenied, StoreNotFound
from vx_eval.core.errors import StoreError
from vx_eval.core.report.history import golden_bytes, list_runs, read_report
from vx_eval.core.stores import Stores, join
from vx_eval.plugins.stores.blob import connection_endpoint
from vx_eval.testing.replay import Replay


@pytest.fixture
def s3(moto_s3, plugins) -> tuple[Stores, str]:
    import boto3

    bucket = f"evals-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1").create_bucket(Bucket=bucket)
    return Stores(plugins, options={"s3": {"endpoint_url": moto_s3}}), f"s3://{bucket}"


@pytest.fixture
def blob(azurite, plugins, monkeypatch) -> tuple[Stores, str]:
    from azure.storage.blob import BlobServiceClient

    monkeypatch.setenv("VX_TEST_AZURITE", azurite)
    container = f"evals-{uuid.uuid4().hex[:10]}"
    BlobServiceClient.from_connection_string(azurite).create_container(container)
    stores = Stores(plugins, options={"azure-blob": {"connection_string": {"env": "VX_TEST_AZURITE"}}})
    return stores, f"{connection_endpoint(azurite)}/{container}"


@pytest.fixture(params=["s3", "blob"])
def place(request) -> tuple[Stores, str]:
    return request.getfixturevalue(request.param)


def test_write_read_exists_and_list(place):
    stores, root = place
    stores.write(join(root, "policies", "golden.jsonl"), b'{"id": "q1"}\n')
    stores.write(join(root, "policies", "retrieval", "runs", "r1", "report.json"), b"{}")
    stores.write(join(root, "policies", "retrieval", "runs", "r2", "report.json"), b"{}")
    assert stores.read(join(root, "policies", "golden.jsonl")) == b'{"id": "q1"}\n'
    stores.write(join(root, "policies", "golden.jsonl"), b"replaced")  # whole-object overwrite
    assert stores.read(join(root, "policies", "golden.jsonl")) == b"replaced"
    assert stores.exists(join(root, "policies", "golden.jsonl"))
    assert stores.exists(join(root, "policies", "retrieval"))  # a folder: something is below it
    assert not stores.exists(join(root, "policies", "nothing.jsonl"))
    assert stores.list(join(root, "policies")) == [
        join(root, "policies", "golden.jsonl"),
        join(root, "policies", "retrieval"),
    ]
    assert stores.list(join(root, "policies", "retrieval", "runs")) == [
        join(root, "policies", "retrieval", "runs", "r1"),
        join(root, "policies", "retrieval", "runs", "r2"),
    ]


def test_not_found_is_worded_for_a_person(place):
    stores, root = place
    with pytest.raises(StoreNotFound, match=r"golden\.jsonl does not exist"):
        stores.read(join(root, "golden.jsonl"))
    missing_root = root.rsplit("/", 1)[0] + "/no-such-place-" + uuid.uuid4().hex[:6]
    with pytest.raises(StoreNotFound, match="does not exist"):
        stores.read(join(missing_root, "golden.jsonl"))


def test_names_from_outside_cannot_climb_out_of_the_root(place):
    _, root = place
    for bad in ("../other", "a/../../b", "runs/..", "x y"):
        with pytest.raises(StoreError, match="is not a plain name"):
            join(root, bad)


def test_access_denied_is_told_apart_from_not_found(plugins, monkeypatch):
    denied_s3 = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>'
    with Replay() as server:
        server.route("GET", r"/evals/golden\.jsonl", (403, denied_s3), headers={"Content-Type": "application/xml"})
        stores = Stores(plugins, options={"s3": {"endpoint_url": server.url}})
        with pytest.raises(StoreDenied, match=r"may not read s3://evals/golden\.jsonl \(AccessDenied\)"):
            stores.read("s3://evals/golden.jsonl")
    denied_blob = b'<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthorizationFailure</Code><Message>This request is not authorized.</Message></Error>'
    with Replay() as server:
        endpoint = f"{server.url}/devstoreaccount1"
        monkeypatch.setenv(
            "VX_TEST_BLOB",
            f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint={endpoint};",
        )
        server.route(
            "GET",
            r"/devstoreaccount1/evals/golden\.jsonl",
            (403, denied_blob),
            headers={"x-ms-error-code": "AuthorizationFailure"},
        )
        stores = Stores(plugins, options={"azure-blob": {"connection_string": {"env": "VX_TEST_BLOB"}}})
        with pytest.raises(StoreDenied, match="may not read"):
            stores.read(f"{endpoint}/evals/golden.jsonl")


def test_a_literal_connection_string_in_a_config_is_refused(plugins):
    stores = Stores(plugins, options={"azure-blob": {"connection_string": "AccountKey=abc"}})
    with pytest.raises(StoreError, match=r"connection_string: .*write \{env: VARIABLE\}") as caught:
        stores.read("https://acct.blob.core.windows.net/c/golden.jsonl")
    assert "abc" not in str(caught.value)  # the secret itself is never repeated


def test_an_unknown_store_setting_is_named(plugins):
    with pytest.raises(StoreError, match="no store plugin is named 'azure_blob'; did you mean 'azure-blob'"):
        Stores(plugins, options={"azure_blob": {}})


def run_cli(*args: str) -> int:
    from vx_eval.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.parametrize("golden_at, save_at", [("s3", "blob"), ("blob", "s3")])
def test_a_run_reads_golden_from_one_store_saves_to_the_other_and_lists_history(
    golden_at, save_at, request, project, moto_s3, capsys
):
    golden_stores, golden_root = request.getfixturevalue(golden_at)
    save_stores, save_root = request.getfixturevalue(save_at)
    golden_location = join(golden_root, "policies", "golden.jsonl")
    raw = (project.root / "golden.jsonl").read_bytes()
    golden_stores.write(golden_location, raw)
    save_to = join(save_root, "policies")
    config = project.write_config(
        golden=golden_location,
        save_to=save_to,
        stores={"s3": {"endpoint_url": moto_s3}, "azure-blob": {"connection_string": {"env": "VX_TEST_AZURITE"}}},
    )
    assert run_cli("run", str(config)) == 0
    assert run_cli("run", str(config)) == 0  # the same golden bytes again
    entries, total = list_runs(save_stores, save_to)
    assert total == 2 and entries[0].id > entries[1].id  # newest first
    assert entries[0].golden_sha256 == entries[1].golden_sha256 and entries[0].questions == 6
    assert entries[0].collections == ["tiny"] and entries[0].picks["finds_the_most"] == "local.keyword"
    kept = save_stores.list(join(save_to, "golden_dataset"))
    assert len(kept) == 1  # one copy per version, however many runs read it
    assert golden_bytes(save_stores, save_to, read_report(save_stores, save_to, "latest")) == raw
    capsys.readouterr()
    assert run_cli("runs", "list", "--config", str(config), "--json") == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["total"] == 2 and [r["id"] for r in listing["runs"]] == [e.id for e in entries]
    golden_stores.write(golden_location, raw + b'{"id": "q9", "question": "A new one?", "expected": ["wire"]}\n')
    out = project.root / "given-back.jsonl"
    assert run_cli("runs", "golden", entries[1].id, "--config", str(config), "--out", str(out)) == 0
    assert out.read_bytes() == raw  # the file as that run read it, after it changed


def test_a_store_host_that_cannot_be_reached_is_said_as_such_within_seconds(plugins, monkeypatch, capsys, project):
    """No network, or a mistyped account: said as unreachable at once, not after the credential chain's and the
    client's own retries as "the credentials in use may not read" (85 s before)."""
    import time

    from vx_eval.testing.processes import free_port

    from ..conftest import call

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "AZURE_STORAGE_CONNECTION_STRING"):
        monkeypatch.delenv(name, raising=False)
    started = time.monotonic()
    with pytest.raises(
        StoreError,
        match=r"cannot reach https://vx-eval-no-such-account\.invalid\.blob\.core\.windows\.net: .* does not resolve",
    ):
        Stores(plugins).read("https://vx-eval-no-such-account.invalid.blob.core.windows.net/c/golden.jsonl")
    closed = f"http://127.0.0.1:{free_port()}/devstoreaccount1"  # nothing listens there
    monkeypatch.setenv(
        "VX_TEST_BLOB",
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint={closed};",
    )
    stores = Stores(plugins, options={"azure-blob": {"connection_string": {"env": "VX_TEST_BLOB"}}})
    with pytest.raises(
        StoreError, match=r"cannot reach http://127\.0\.0\.1:\d+/devstoreaccount1: 127\.0\.0\.1:\d+: Connection refused"
    ):
        stores.read(f"{closed}/evals/golden.jsonl")
    code, _, err = call(
        capsys,
        "run",
        str(project.write_config()),
        "--golden",
        "https://vx-eval-no-such-account.invalid.blob.core.windows.net/c/golden.jsonl",
    )
    assert code == 2 and "cannot reach" in err and "credentials" not in err
    assert time.monotonic() - started < 10
