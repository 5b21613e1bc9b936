"""The routes that start and follow runs and keep datasets (`serve.jobs`, `serve.datasets`).

A runner (or an admin, or a runner's API key) starts a run of an experiment the server knows and gets its id
at once (202); anyone who may read runs follows it (`pending`, `in_progress` with its progress, `completed`
with the report, `failed` with the reason, `cancelled`); a runner cancels it. Datasets are kept by runners
and listed for readers; their text (the questions) goes only to an admin signed in as a person, as the
golden download does. Every action is in the access log.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Form, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vx_eval.core.config.experiment import with_overrides
from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.errors import ConfigError, GoldenError, MetricError, StoreError
from vx_eval.core.measures.metrics import expand_cutoffs, parse
from vx_eval.core.report.history import list_runs
from vx_eval.core.run.selection import selection_problem
from vx_eval.serve.access import allowed, service_of
from vx_eval.serve.auth import Principal
from vx_eval.serve.datasets import DamagedFile, DatasetIn
from vx_eval.serve.jobs import Job, QueueFull, RunRequest
from vx_eval.serve.pages import job_view
from vx_eval.serve.public import public_text
from vx_eval.serve.service import Service, error_response


class NowRequest(BaseModel):
    """`evaluate_now`: what an ingestion pipeline sends when it finishes: the experiment (and the dataset)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"experiment": "quickstart"}]})
    experiment: str = Field(min_length=1, max_length=100)
    dataset: str | None = Field(None, max_length=64)


def _invalid(field: str, message: str) -> Response:
    """A 422 naming the field, shaped as FastAPI's own validation errors."""
    return JSONResponse({"detail": [{"loc": ["body", field], "msg": message, "type": "value_error"}]}, status_code=422)


def cannot_keep(what: str, exc: StoreError) -> Response:
    """507 where the store or the jobs folder takes no more writes (a full disk, a read-only file system, no
    permission); 409 where a file already there is damaged."""
    if isinstance(exc, DamagedFile):
        return _damaged(exc)
    return JSONResponse({"detail": f"the server cannot keep {what}: {public_text(str(exc))}"}, status_code=507)


def _damaged(exc: StoreError) -> Response:
    """409 for a file under the store that cannot be read: the server's state, not the request, is wrong."""
    return JSONResponse({"detail": public_text(str(exc)), "damaged": True}, status_code=409)


def check_request(service: Service, request: RunRequest) -> Response | None:
    """A run request checked as `vx-eval run` would check it, before anything is queued: the measures
    (spelling, and no cut-off deeper than the experiment searches), the cut-offs, and `only`/`skip` against
    the setups the experiment's newest run had (where it has run here before)."""

    names = expand_cutoffs(request.measure_names(), request.k_values)
    try:
        for name in names:
            parse(name)
    except MetricError as exc:
        return _invalid("metrics", str(exc))
    if request.experiment is None:
        return None
    experiment = service.experiment(request.experiment)
    if experiment is None:
        return None  # its config cannot be read here now: the run says why
    depth = experiment.config.evaluation.depth
    deep = [k for k in request.k_values if k > depth]
    if deep:
        return _invalid("k_values", f"a cut-off of {deep[0]} is deeper than the experiment searches (depth {depth})")
    try:
        with_overrides(experiment, None, request.measure_names(), request.k_values)
    except ConfigError as exc:
        return _invalid("metrics", str(exc))
    setups = service.setups_of(request.experiment)
    if setups is not None:
        keys, methods = setups
        problem = selection_problem(sorted(keys), methods, request.only, request.skip)
        if problem is not None:
            return _invalid(*problem)
    return None


def golden_for(service: Service, request: RunRequest) -> tuple[str | None, str | None] | Response:
    """The golden file a run request names (where it is kept and its sha256), or a 422 saying what is wrong."""
    if request.target is not None and request.target not in service.targets:
        known = ", ".join(sorted(service.targets)) or "none"
        return _invalid("target", f"no target {request.target!r} (the server knows: {known})")
    if request.experiment is not None and request.experiment not in service.experiments:
        known = ", ".join(sorted(service.experiments)) or "none"
        return _invalid("experiment", f"no experiment {request.experiment!r} (the server knows: {known})")
    refused = check_request(service, request)
    if refused is not None:
        return refused
    if request.dataset:
        try:
            where, sha = service.datasets.version(request.dataset, request.dataset_version)
        except StoreError as exc:
            return _invalid("dataset", public_text(str(exc)))
        return where, sha
    if request.experiment is None:
        return None, None  # a target's questions are drafted by the run, and kept beside its config
    return None, service.config_golden_sha(request.experiment)


def submit(service: Service, who: Principal, run: RunRequest) -> tuple[Job, bool] | Response:
    """The run queued (or the same run already queued: `new` False), or why not (422, 429, 507)."""
    found = golden_for(service, run)
    if isinstance(found, Response):
        return found
    try:
        job, new = service.jobs.submit(run, *found, owner=who.name or who.kind, key_id=who.key_id)
    except QueueFull as exc:
        service.log.write(event="run refused: queue full", caller=who.kind, name=who.name)
        return JSONResponse({"detail": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after)})
    except StoreError as exc:
        return cannot_keep("the run", exc)
    service.log.write(event="run started" if new else "run asked again", run=job.id, experiment=job.experiment,
                      target=job.target, caller=who.kind, name=who.name)  # fmt: skip
    return job, new


def _started(service: Service, who: Principal, run: RunRequest) -> Response:
    submitted = submit(service, who, run)
    if isinstance(submitted, Response):
        return submitted
    job, new = submitted
    return JSONResponse({**job_view(job), "new": new}, status_code=202)


Served = Annotated[Service, Depends(service_of)]


def start_run(
    service: Served,
    who: Annotated[Principal, Depends(allowed("evaluation.start"))],
    run: Annotated[RunRequest, Body()],
) -> Response:
    return _started(service, who, run)


def evaluate_now(
    service: Served,
    who: Annotated[Principal, Depends(allowed("evaluation.start"))],
    now: Annotated[NowRequest, Body()],
) -> Response:
    return _started(service, who, RunRequest(experiment=now.experiment, dataset=now.dataset))


def evaluations(
    service: Served,
    _who: Annotated[Principal, Depends(allowed("evaluation.read"))],
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> Response:
    entries, total = list_runs(service.stores, service.settings.store, limit=limit, offset=offset)
    shown = [
        {**{k: v for k, v in e.as_dict().items() if k != "location"}, "reason": public_text(e.reason or "") or None}
        for e in entries
    ]
    return JSONResponse({"runs": shown, "total": total, "limit": limit, "offset": offset})


def evaluation(
    service: Served,
    who: Annotated[Principal, Depends(allowed("evaluation.read"))],
    run_id: str,
    fields: Annotated[
        Literal["all", "summary"], Query(description="summary: every setup without its per-question lists")
    ] = "all",
) -> Response:
    job = service.jobs.get(run_id) if run_id != "latest" else None
    if job is not None and job.status != "completed":
        return JSONResponse(job_view(job))
    try:
        report = service.reports.get(run_id)
    except StoreNotFound as exc:
        return error_response(exc, 404)
    except StoreError as exc:  # unreadable, or a link out of the store
        return error_response(exc, 500)
    may = who.may("golden.download") and service.reports.has_golden(report)
    data = service.reports.json(report, who.admin, fields, may, lambda r: service.shown(who, r))
    return Response(data, media_type="application/json")


def cancel_run(
    service: Served, who: Annotated[Principal, Depends(allowed("evaluation.cancel"))], run_id: str
) -> Response:
    job = service.jobs.cancel(run_id) if service.jobs.get(run_id) else None
    if job is None:
        return JSONResponse({"detail": f"no run {run_id!r} started by this server"}, status_code=404)
    service.log.write(event="run cancelled", run=run_id, caller=who.kind, name=who.name)
    return JSONResponse(job_view(job))


def experiments(service: Served, _who: Annotated[Principal, Depends(allowed("evaluation.read"))]) -> Response:
    return JSONResponse({"experiments": sorted(service.experiments), "targets": sorted(service.targets)})


def keep_dataset(
    service: Served,
    who: Annotated[Principal, Depends(allowed("dataset.write"))],
    dataset: Annotated[DatasetIn, Body()],
) -> Response:
    try:
        info, left_out = service.datasets.keep(dataset)
    except GoldenError as exc:
        return _invalid(dataset.given_as, str(exc))
    except StoreError as exc:
        return cannot_keep("the dataset", exc)
    service.log.write(event="dataset kept", dataset=info.name, sha256=info.current, caller=who.kind, name=who.name)
    return JSONResponse({**info.model_dump(), "left_out": [p.render() for p in left_out]}, status_code=201)


def datasets(service: Served, _who: Annotated[Principal, Depends(allowed("dataset.list"))]) -> Response:
    rows: list[dict[str, Any]] = []
    for name in service.datasets.names():
        try:
            info = service.datasets.info(name)
        except StoreError as exc:  # damaged: listed with why; the others are still served
            rows.append({"name": name, "damaged": public_text(str(exc))})
            continue
        current = next(v for v in info.versions if v.sha256 == info.current)
        rows.append({"name": name, "current": info.current, "versions": len(info.versions),
                     "questions": current.questions})  # fmt: skip
    return JSONResponse({"datasets": rows})


def dataset(service: Served, _who: Annotated[Principal, Depends(allowed("dataset.list"))], name: str) -> Response:
    try:
        return JSONResponse(service.datasets.info(name).model_dump())
    except StoreNotFound as exc:
        return JSONResponse({"detail": public_text(str(exc))}, status_code=404)
    except StoreError as exc:
        return _damaged(exc)


def dataset_rows(service: Served, request: Request, name: str, version: str | None = None) -> Response:
    who = service.caller(request, "dataset.read")
    if not isinstance(who, Principal):  # refused here, not by a dependency: the refusal is logged with the name
        service.log.write(event="dataset text refused", dataset=name)
        return who
    try:
        data = service.datasets.rows(name, version)
    except StoreNotFound as exc:
        return JSONResponse({"detail": public_text(str(exc))}, status_code=404)
    except StoreError as exc:
        return _damaged(exc)
    sha = hashlib.sha256(data).hexdigest()
    service.log.write(event="dataset text read", dataset=name, sha256=sha, person=who.name)
    return Response(data, media_type="application/x-ndjson", headers={"Cache-Control": "no-store"})


def start_from_page(
    service: Served, request: Request, experiment: str = Form(min_length=1), dataset: str = Form("")
) -> Response:
    refused = service.foreign(request)  # before who: a cross-site post is refused whoever sends it
    if refused is not None:
        return refused
    who = service.caller(request, "evaluation.start")
    if not isinstance(who, Principal):
        return who
    target = experiment.removeprefix("target:") if experiment.startswith("target:") else None
    try:
        if target is not None:  # an index the server runs with no configuration (the menu's second group)
            run = RunRequest(target=target, dataset=dataset or None)
        else:
            run = RunRequest(experiment=experiment, dataset=dataset or None)
    except ValidationError as exc:
        return _invalid("experiment", str(exc.errors()[0]["msg"]))
    submitted = submit(service, who, run)
    if isinstance(submitted, Response):
        return submitted
    return RedirectResponse(f"/runs/{submitted[0].id}", status_code=303)


def run_routes(route_class: type[APIRoute]) -> APIRouter:
    """The run and dataset routes, each handler a function of its own; who may call each is its dependency."""
    router = APIRouter(route_class=route_class)
    add = router.add_api_route
    add("/api/v1/evaluations", evaluations, methods=["GET"], summary="The runs kept, newest first, a page at a time")
    add("/api/v1/evaluations/{run_id}", evaluation, methods=["GET"],
        summary="One run: its report, or where it is while it runs")  # fmt: skip
    add("/api/v1/evaluations", start_run, methods=["POST"], status_code=202,
        summary="Start a run of an experiment the server knows, or of a target with no configuration")  # fmt: skip
    add("/api/v1/evaluations/now", evaluate_now, methods=["POST"], status_code=202,
        summary="evaluate_now: a run on the latest golden version")  # fmt: skip
    add("/api/v1/evaluations/{run_id}/cancel", cancel_run, methods=["POST"], summary="Cancel a pending or running run")
    add("/api/v1/experiments", experiments, methods=["GET"], summary="The experiments this server can run")
    add("/api/v1/datasets", keep_dataset, methods=["POST"], status_code=201, summary="Keep a dataset's new version")
    add("/api/v1/datasets", datasets, methods=["GET"],
        summary="The datasets kept: names, current versions, question counts")  # fmt: skip
    add("/api/v1/datasets/{name}", dataset, methods=["GET"],
        summary="One dataset's versions (by sha256) and its current one")  # fmt: skip
    add("/api/v1/datasets/{name}/rows", dataset_rows, methods=["GET"],
        summary="A dataset's questions (admins signed in as a person)")  # fmt: skip
    add("/evaluations/start", start_from_page, methods=["POST"], summary="The page's form: start a run, then follow it")
    return router
