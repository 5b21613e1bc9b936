"""schemathesis over the server's own OpenAPI description: every operation, a few hundred generated requests
each (as a guest, and with an admin's key), must never be answered with a 5xx, and every answer must be one
the description names (status, content type, body's schema, headers); requests the description says are
wrong must be refused.

One schemathesis check is left out: `positive_data_acceptance`, that a request valid by the schema is
accepted. Whether a run request or a dataset is good depends on what the server holds (the experiments it
knows, the dataset it names, labels covering every relevant document), which no schema can say: such a
request is answered 404 or 422 with the reason, as described."""

from __future__ import annotations

import os
import shutil

import pytest
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from schemathesis.checks import positive_data_acceptance

from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.serve.app import ServeSettings, create_app
from vx_eval.serve.auth import Users

EXAMPLES = int(os.environ.get("VX_EVAL_SCHEMATHESIS_EXAMPLES", "300"))
"""Examples per operation, half as a guest, half with an admin's key."""


@pytest.fixture(scope="module")
def api(evaluations, tmp_path_factory):
    folder = tmp_path_factory.mktemp("conformance")
    shutil.copytree(evaluations.runs, folder / "runs")  # datasets posted here touch no other test's runs
    users = Users(folder / "users.json")
    users.add_person("ada", "ada-password", "admin")
    key = users.add_key("ada")
    served = ServeSettings(
        store=str(folder / "runs"), users=folder / "users.json", access_log=folder / "access.log", jobs=folder / "jobs"
    )
    app = create_app(served, Stores(load_plugins()))
    return schemathesis.openapi.from_asgi("/openapi.json", app), key


def operations(schema):
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.slow
def test_every_operation_answers_as_described_never_a_5xx(api):
    schema, key = api
    failures: dict[str, set[str]] = {}
    for operation in operations(schema):
        for who in ({}, {"X-API-Key": key}):
            checked(operation, who, failures)()
    assert failures == {}


def checked(operation, who: dict[str, str], failures: dict[str, set[str]]):
    """The hypothesis test of one operation, as one caller; what fails is added to `failures`."""

    @seed(20261205)
    @settings(max_examples=EXAMPLES // 2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def check(case) -> None:
        response = case.call(headers=who)
        try:
            case.validate_response(response, excluded_checks=[positive_data_acceptance], headers=who)
        except BaseException as exc:  # a FailureGroup: every failure of this answer
            found = [str(e).splitlines()[0] for e in getattr(exc, "exceptions", [exc])]
            failures.setdefault(f"{operation.method.upper()} {operation.path}", set()).update(
                f"{f} ({response.status_code})" for f in found
            )

    return check
