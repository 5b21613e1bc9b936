"""Mixpeek's retriever-evaluation API, as its documentation words it, on vx-eval's own datasets and runs.

The routes sit under ``/v1/retrievers/...``: datasets are created, listed and read by name; an evaluation is
started on a retriever and read back with Mixpeek's keys (``overall_metrics``, ``metrics_by_k``,
``query_results`` and the counts). A *retriever* here is an experiment the server knows, or one setup of it
(``EXPERIMENT:SETUP_KEY``, as ``quickstart:local.keyword``); an experiment alone answers for the setup that
finds the most, every setup's scores under ``setups``. Behind them are the server's own datasets
(`serve.datasets`) and runs (`serve.jobs`): the same limits, the same roles (a runner's key starts
evaluations, as a Mixpeek API key does), the same access log, the same numbers as a vx-eval run on the
same data. ``X-Namespace`` is accepted and not read: a server is one namespace.

What Mixpeek says a query needs and vx-eval reads the same way: ``query_input`` holds ``query`` (the only
input a vx-eval retriever accepts; any other key skips that query, naming what is accepted), at least one
relevant document, ``relevance_scores`` of 0 to 5 covering them; ``relevance_field`` on the dataset grades
by that field of each result. A run whose every query skipped is ``failed``, never zeros.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.errors import GoldenError, StoreError
from vx_eval.core.report.history import read_report
from vx_eval.core.report.schema import Report, SetupResult
from vx_eval.core.stores import join
from vx_eval.serve.access import allowed, service_of
from vx_eval.serve.auth import Principal
from vx_eval.serve.datasets import DatasetIn, MixpeekQuery
from vx_eval.serve.mixpeek_records import (
    ACCEPTED_INPUTS,
    DEFAULT_METRICS,
    MEASURES,
    STATUS,
    UNCUT,
    CreateDataset,
    EvaluationConfig,
    Kept,
    StartEvaluation,
)
from vx_eval.serve.public import public_text
from vx_eval.serve.records import Job, RunRequest
from vx_eval.serve.runs_api import cannot_keep, submit
from vx_eval.serve.service import Service


def _invalid(where: list[str | int], message: str) -> Response:
    return JSONResponse({"detail": [{"loc": ["body", *where], "msg": message, "type": "value_error"}]}, status_code=422)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _read_queries(given: CreateDataset) -> tuple[list[MixpeekQuery], list[dict[str, Any]]] | Response:
    """The dataset's queries as vx-eval reads them, and those that skip (an input it does not accept: Mixpeek
    skips such a query at run time, naming what it accepts); or a 422 naming what is wrong."""
    kept: list[MixpeekQuery] = []
    skipped: list[dict[str, Any]] = []
    for i, raw in enumerate(given.queries):
        inputs = raw.get("query_input") if isinstance(raw, dict) else None
        unknown = sorted(k for k in inputs if k not in ACCEPTED_INPUTS) if isinstance(inputs, dict) else []
        if unknown and isinstance(raw.get("query_id"), str):
            names = ", ".join(repr(k) for k in unknown)
            error = f"Unknown input field(s) {names}. This retriever accepts: {list(ACCEPTED_INPUTS)}"
            skipped.append({"query_id": raw["query_id"], "error": error})
            continue
        try:
            query = MixpeekQuery.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            return _invalid(["queries", i, *map(str, first["loc"])], first["msg"])
        if given.relevance_field:
            query = query.model_copy(update={"relevance_field": given.relevance_field})
        kept.append(query)
    return kept, skipped


def _kept_at(service: Service, kind: str, name: str) -> str:
    return join(service.settings.store, "mixpeek", kind, f"{name}.json")


def _keep(service: Service, record: Kept) -> None:
    service.stores.write(_kept_at(service, record.kind, record.name), record.model_dump_json(indent=1).encode())


def _kept(service: Service, kind: str, name: str) -> Kept | None:
    """A kept record, or None where there is none or it cannot be read (a damaged record is not served)."""
    try:
        return Kept.model_validate_json(service.stores.read(_kept_at(service, kind, name)))
    except (StoreError, ValidationError):  # StoreNotFound among them
        return None


Served = Annotated[Service, Depends(service_of)]


def create_dataset(
    service: Served,
    who: Annotated[Principal, Depends(allowed("dataset.write"))],
    given: Annotated[CreateDataset, Body()],
) -> Response:
    read = _read_queries(given)
    if isinstance(read, Response):
        return read
    queries, skipped = read
    stamp = _now()
    if queries:
        try:
            info, _ = service.datasets.keep(DatasetIn(name=given.dataset_name, queries=queries))
        except GoldenError as exc:
            return _invalid(["queries"], public_text(str(exc)))
        except StoreError as exc:
            return cannot_keep("the dataset", exc)
        version = info.current
    else:  # every query skips: kept as Mixpeek keeps it, so that its run can say why it failed
        version = "skipped-only"
    record = Kept(kind="datasets", name=f"{given.dataset_name}@{version}", created_at=stamp,
                  description=given.description, metadata=given.metadata, relevance_field=given.relevance_field,
                  skipped=skipped, relevant={q.query_id: len(q.relevant_documents) for q in queries})  # fmt: skip
    try:
        _keep(service, record)
        _keep(service, record.model_copy(update={"name": given.dataset_name}))  # the dataset's newest version
    except StoreError as exc:
        return cannot_keep("the dataset", exc)
    service.log.write(event="dataset kept", dataset=given.dataset_name, sha256=version, caller=who.kind, name=who.name)
    body = _dataset_view(given.dataset_name, record, len(queries) + len(skipped), version)
    body["queries"] = given.queries  # what the caller sent, given back as Mixpeek does
    return JSONResponse(body, status_code=201)


def _dataset_view(name: str, record: Kept, count: int, version: str) -> dict[str, Any]:
    return {
        "dataset_id": name,
        "dataset_name": name,
        "description": record.description,
        "created_at": record.created_at,
        "updated_at": record.created_at,
        "namespace_id": "vx-eval",
        "internal_id": "vx-eval",
        "query_count": count,
        "metadata": record.metadata,
        "relevance_field": record.relevance_field,
        "version": version,
        "skipped_queries": record.skipped,
    }


def list_datasets(
    service: Served,
    _who: Annotated[Principal, Depends(allowed("dataset.list"))],
    page: Annotated[int, Query(ge=1)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    records = {n: r for n in service.datasets.names() if (r := _kept(service, "datasets", n)) is not None}
    shown = [_one_dataset(service, n, records[n]) for n in list(records)[(page - 1) * page_size : page * page_size]]
    return JSONResponse({"datasets": shown, "total": len(records), "page": page, "page_size": page_size})


def _one_dataset(service: Service, name: str, record: Kept) -> dict[str, Any]:
    """A dataset made through these routes, in Mixpeek's shape, from its kept `record`."""
    try:
        info = service.datasets.info(name)
        current = next(v for v in info.versions if v.sha256 == info.current)
        count, version = current.questions, info.current
    except StoreError:  # kept with every query skipped: no golden version
        count, version = 0, "skipped-only"
    return _dataset_view(name, record, count + len(record.skipped), version)


def get_dataset(service: Served, _who: Annotated[Principal, Depends(allowed("dataset.list"))], name: str) -> Response:
    record = _kept(service, "datasets", name)
    if record is None:
        return JSONResponse({"detail": f"no dataset {name!r} created through /v1/retrievers/evaluations/datasets"}, 404)
    return JSONResponse(
        _one_dataset(service, name, record)
    )  # the queries' text goes to admins only: GET /api/v1/datasets/{name}/rows


def _retriever(service: Service, retriever_id: str) -> tuple[str, str | None] | Response:
    """The experiment a retriever id names, and the setup of it where it names one."""
    experiment, _, setup = retriever_id.partition(":")
    if experiment not in service.experiments:
        known = ", ".join(sorted(service.experiments)) or "none"
        return JSONResponse(
            {"detail": f"no retriever {retriever_id!r}: a retriever is an experiment this server knows "
                       f"({known}), or EXPERIMENT:SETUP_KEY for one setup of it"}, status_code=404)  # fmt: skip
    return experiment, setup or None


async def _json_body(request: Request, model: type[StartEvaluation]) -> StartEvaluation | Response:
    """The request's body read as JSON whatever its content type says: the page's own curl commands send it
    with ``-d`` and no ``Content-Type``, which curl then sends as a form's type."""
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        return _invalid([], "the body is not JSON")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        return _invalid([str(p) for p in first["loc"]], first["msg"])


async def start_evaluation(
    service: Served,
    who: Annotated[Principal, Depends(allowed("evaluation.start"))],
    retriever_id: str,
    request: Request,
) -> Response:
    body = await _json_body(request, StartEvaluation)
    if isinstance(body, Response):
        return body
    return await run_in_threadpool(_start, service, who, retriever_id, body)


def _start(service: Service, who: Principal, retriever_id: str, body: StartEvaluation) -> Response:
    found = _retriever(service, retriever_id)
    if isinstance(found, Response):
        return found
    experiment, setup = found
    name = body.dataset_name or body.dataset_id
    if not name:
        return _invalid(["dataset_name"], "name the dataset: dataset_name (or dataset_id)")
    unknown = [m for m in body.evaluation_config.metrics if m not in MEASURES and m not in UNCUT]
    if unknown:
        return _invalid(["evaluation_config", "metrics"], f"no metric {unknown[0]!r}: {', '.join(DEFAULT_METRICS)}")
    dataset = _kept(service, "datasets", name)
    if dataset is None:
        return _invalid(["dataset_name"], f"no dataset {name!r}: create it at /v1/retrievers/evaluations/datasets")
    config = body.evaluation_config.model_dump()
    stamp = _now()
    if not dataset.relevant:  # every query skipped: a failed run at once, as Mixpeek's
        run_id = f"skipped-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%fZ')}"
        job: Job | None = None
    else:
        run = RunRequest(experiment=experiment, dataset=name, metrics=body.evaluation_config.measure_names(),
                         only=[setup] if setup else [])  # fmt: skip
        submitted = submit(service, who, run)
        if isinstance(submitted, Response):
            return submitted
        job = submitted[0]
        run_id = job.id
    update = {"kind": "evaluations", "name": run_id, "created_at": stamp, "retriever_id": retriever_id,
              "config": {**config, "dataset_name": name}}  # fmt: skip
    record = dataset.model_copy(update=update)
    try:
        _keep(service, record)
    except StoreError as exc:
        return cannot_keep("the evaluation", exc)
    answer = {"task_id": run_id, "evaluation_id": run_id, "task_type": "retriever.evaluation",
              "status": "failed" if job is None else STATUS.get(job.status, "failed"), "created_at": stamp}  # fmt: skip
    return JSONResponse(answer, status_code=202)


def _key(measure: str) -> tuple[str, str | None]:
    """Mixpeek's key for a vx-eval measure (``p@5`` is ``precision_at_5``, ``f2@2r`` ``f2_at_2r``, ``map``
    ``map``), and its ``metrics_by_k`` group (None for the uncut ones)."""
    if "@" not in measure:
        return measure, None
    name, k = measure.split("@", 1)
    mixpeek = next((m for m, ours in MEASURES.items() if ours == name), name)
    return f"{mixpeek}_at_{k}", k


def _scores(setup: SetupResult, asked: set[str], index: int | None = None) -> dict[str, float | None]:
    if index is None:
        return {_key(m)[0]: v for m, v in setup.summary.items() if m in asked}
    return {_key(m)[0]: values[index] for m, values in setup.per_question.metrics.items() if m in asked}


def _by_k(setup: SetupResult, asked: set[str]) -> dict[str, dict[str, float]]:
    grouped: dict[str, dict[str, float]] = {}
    for measure, value in setup.summary.items():
        key, k = _key(measure)
        if measure in asked and k is not None and value is not None:
            grouped.setdefault(k, {})[key.split("_at_")[0]] = value
    return grouped


ALL_SKIPPED = "every query skipped: none could be evaluated (see query_results for why)"


def _record_view(record: Kept, job: Job | None) -> dict[str, Any]:
    """What an evaluation says before its report: who, on what, when, and where it stands."""
    config = record.config or {}
    finished = job.finished_at if job else None
    return {
        "evaluation_id": record.name,
        "retriever_id": record.retriever_id,
        "dataset_id": config.get("dataset_name"),
        "dataset_name": config.get("dataset_name"),
        "config": {k: v for k, v in config.items() if k != "dataset_name"},
        "created_at": record.created_at,
        "updated_at": (finished or job.started_at or record.created_at) if job else record.created_at,
        "completed_at": finished,
        "namespace_id": "vx-eval",
        "internal_id": "vx-eval",
        "status": STATUS.get(job.status, "failed") if job else "failed",
        "error_message": public_text(job.reason) if job and job.reason else None,
        "overall_metrics": None,
        "metrics_by_k": None,
    }


def _report_view(view: dict[str, Any], record: Kept, report: Report, fields: str) -> list[dict[str, Any]]:
    """The report's numbers added to `view` (the chosen setup's, and every setup's for an experiment); its
    per-query outcomes."""
    view["status"] = "completed"
    setup = _chosen(report, record.retriever_id)
    asked = set(EvaluationConfig.model_validate(view["config"]).measure_names())
    view["overall_metrics"] = _scores(setup, asked)
    view["metrics_by_k"] = _by_k(setup, asked)
    view["setup"] = setup.key
    if ":" not in (record.retriever_id or ""):
        view["setups"] = {s.key: _scores(s, asked) for s in report.setups}
    return _outcomes(report, setup, asked, record, fields)


def evaluation_view(record: Kept, job: Job | None, report: Report | None, fields: str = "all") -> dict[str, Any]:
    """One evaluation in Mixpeek's shape: its status, the counts, the metrics and the per-query outcomes; a run
    whose every query skipped is failed, never zeros."""
    view = _record_view(record, job)
    skipped = [{"query_id": s["query_id"], "status": "skipped", "error": s["error"], "retrieved_count": None,
                "relevant_count": None} for s in record.skipped]  # fmt: skip
    outcomes = _report_view(view, record, report, fields) if report is not None else []
    evaluated = sum(1 for o in outcomes if o["status"] == "evaluated")
    view["query_results"] = [*outcomes, *skipped]
    view["total_queries"] = len(outcomes) + len(skipped)
    view["evaluated_queries"], view["skipped_queries"] = evaluated, view["total_queries"] - evaluated
    view["query_count"] = evaluated
    if (job is None and report is None) or (report is not None and evaluated == 0):
        view.update(status="failed", error_message=ALL_SKIPPED, overall_metrics=None, metrics_by_k=None)
    return view


def _chosen(report: Report, retriever_id: str | None) -> SetupResult:
    _, _, key = (retriever_id or "").partition(":")
    by_key = report.by_key
    return by_key.get(key) or report.best or report.setups[0]


def _outcomes(report: Report, setup: SetupResult, asked: set[str], record: Kept, fields: str) -> list[dict[str, Any]]:
    out = []
    per = setup.per_question
    for i, qid in enumerate(report.question_ids):
        status = per.status[i] if i < len(per.status) else "evaluated"
        row: dict[str, Any] = {"query_id": qid, "status": "evaluated" if status == "evaluated" else "skipped"}
        if status == "evaluated":
            row["error"] = None
            # the rankings are read for one evaluation; the list leaves them out (None: not read, never 0)
            row["retrieved_count"] = len(per.results[i]) if i < len(per.results) else None
            row["relevant_count"] = record.relevant.get(qid)
            if fields == "all":
                row["metrics"] = _scores(setup, asked, i)
        else:
            error = per.errors[i] if i < len(per.errors) else None
            row.update(error=public_text(error or status), retrieved_count=None, relevant_count=None)
        out.append(row)
    return out


def _report_of(service: Service, run_id: str, *, rankings: bool = True) -> Report | None:
    """The run's report, with its rankings (``retrieved_count``) where asked; None while there is none."""
    if run_id.startswith("skipped-"):
        return None
    try:
        if rankings:
            return read_report(service.stores, service.settings.store, run_id, rankings=True)
        return service.reports.get(run_id)
    except StoreError:
        return None


def get_evaluation(
    service: Served,
    _who: Annotated[Principal, Depends(allowed("evaluation.read"))],
    retriever_id: str,
    evaluation_id: str,
) -> Response:
    record = _kept(service, "evaluations", evaluation_id)
    if record is None or record.retriever_id != retriever_id:
        return JSONResponse({"detail": f"no evaluation {evaluation_id!r} of retriever {retriever_id!r}"}, 404)
    job = service.jobs.get(evaluation_id)
    report = _report_of(service, evaluation_id) if job is None or job.status == "completed" else None
    return JSONResponse(evaluation_view(record, job, report))


def list_evaluations(
    service: Served,
    _who: Annotated[Principal, Depends(allowed("evaluation.read"))],
    retriever_id: str,
    page: Annotated[int, Query(ge=1)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    try:
        listed = service.stores.list(join(service.settings.store, "mixpeek", "evaluations"))
    except StoreNotFound:
        listed = []
    records = []
    for location in sorted(listed, reverse=True):
        name = location.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".json")
        record = _kept(service, "evaluations", name)
        if record is not None and record.retriever_id == retriever_id:
            records.append(record)
    shown = []
    for record in records[(page - 1) * page_size : page * page_size]:
        job = service.jobs.get(record.name)
        finished = job is None or job.status == "completed"
        report = _report_of(service, record.name, rankings=False) if finished else None
        shown.append(evaluation_view(record, job, report, fields="summary"))  # the list omits per-query metrics
    return JSONResponse({"evaluations": shown, "total": len(records), "page": page, "page_size": page_size})


def mixpeek_routes(route_class: type[APIRoute]) -> APIRouter:
    """Mixpeek's evaluation routes (see the module's docstring)."""
    router = APIRouter(route_class=route_class, tags=["Mixpeek's evaluation API"])
    add = router.add_api_route
    add("/v1/retrievers/evaluations/datasets", create_dataset, methods=["POST"], status_code=201,
        summary="Create a ground-truth dataset (Mixpeek's shape)")  # fmt: skip
    add("/v1/retrievers/evaluations/datasets", list_datasets, methods=["GET"], summary="List the datasets")
    add("/v1/retrievers/evaluations/datasets/{name}", get_dataset, methods=["GET"], summary="One dataset")
    add("/v1/retrievers/{retriever_id}/evaluations", start_evaluation, methods=["POST"], status_code=202,
        summary="Start an evaluation of a retriever (an experiment, or EXPERIMENT:SETUP_KEY)",
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
            "schema": StartEvaluation.model_json_schema()}}}})  # fmt: skip
    add("/v1/retrievers/{retriever_id}/evaluations", list_evaluations, methods=["GET"],
        summary="A retriever's evaluations, newest first (no per-query metrics)")  # fmt: skip
    add("/v1/retrievers/{retriever_id}/evaluations/{evaluation_id}", get_evaluation, methods=["GET"],
        summary="One evaluation: status, overall_metrics, metrics_by_k, query_results")  # fmt: skip
    return router
