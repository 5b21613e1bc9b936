"""The grading page and its routes: a person who may grade (a rater or an admin, signed in) grades
(question, passage) pairs 0-3 by keyboard; each grade is kept beside the experiment's golden file, and the
experiment's next run uses them (`core.usecases.grading`, `core.golden.human`)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from markupsafe import Markup, escape
from pydantic import BaseModel, ConfigDict, Field

from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.store import StoreBusy
from vx_eval.core.errors import VxEvalError
from vx_eval.core.golden.human import HumanGrade
from vx_eval.core.stores import Stores
from vx_eval.core.usecases import grading
from vx_eval.html.render import small_page
from vx_eval.serve.access import allowed, service_of
from vx_eval.serve.auth import Principal
from vx_eval.serve.public import public_text
from vx_eval.serve.service import Service

Served = Annotated[Service, Depends(service_of)]
Rater = Annotated[Principal, Depends(allowed("grade"))]


class GradeIn(BaseModel):
    """One grade from the page: the pair and its grade, 0 (not relevant) to 3 (perfectly relevant)."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=500)
    unit: str = Field(min_length=1, max_length=500)
    grade: int = Field(ge=0, le=3)


def _experiment(service: Service, name: str) -> tuple[Experiment, Stores] | Response:
    if name not in service.experiments:
        known = ", ".join(sorted(service.experiments)) or "none"
        return JSONResponse({"detail": f"no experiment {name!r} (the server knows: {known})"}, status_code=404)
    experiment = service.experiment(name)
    if experiment is None:
        return JSONResponse({"detail": f"the config of experiment {name!r} cannot be read now"}, status_code=409)
    return experiment, Stores(service.plugins, options=experiment.stores)


def _state(service: Service, experiment: Experiment, stores: Stores, rater: str) -> dict[str, Any]:
    now = grading.state(experiment, stores, service.settings.store)
    agreed = now.agreement
    return {
        "experiment": now.experiment,
        "run": now.run,
        "grades": now.grades,
        "pairs": now.pairs,
        "raters": list(now.raters),
        "yours": now.by_rater.get(rater, 0),
        "agreement": {
            "raters": list(agreed.raters) if agreed.raters else None,
            "pairs": agreed.pairs,
            "kappa": agreed.kappa,
            "exact": agreed.exact,
        },
    }


def next_pairs(service: Served, who: Rater, experiment: str, limit: Annotated[int, Query(ge=1, le=50)] = 5) -> Response:
    found = _experiment(service, experiment)
    if isinstance(found, Response):
        return found
    loaded, stores = found
    try:
        pairs = grading.next_pairs(loaded, service.plugins, stores, service.settings.store, who.name or "", limit)
    except VxEvalError as exc:
        return JSONResponse({"detail": public_text(str(exc))}, status_code=409)
    shown = [
        {"question_id": p.question_id, "question": p.question, "unit": p.unit, "title": p.title,
         "passage": p.passage, "settles": p.settles, "graded_by": len(p.graded_by)}
        for p in pairs
    ]  # fmt: skip
    return JSONResponse({"pairs": shown}, headers={"Cache-Control": "no-store"})


def keep_grade(
    service: Served, who: Rater, request: Request, experiment: str, grade: Annotated[GradeIn, Body()]
) -> Response:
    refused = service.foreign(request)
    if refused is not None:
        return refused
    found = _experiment(service, experiment)
    if isinstance(found, Response):
        return found
    loaded, stores = found
    kept = HumanGrade(question=grade.question, unit=grade.unit, grade=grade.grade, rater=who.name or "")
    try:
        grading.record(loaded, stores, service.settings.store, kept)
    except grading.GradeRefused as exc:
        return JSONResponse({"detail": public_text(str(exc))}, status_code=422)
    except StoreBusy as exc:
        return JSONResponse({"detail": public_text(str(exc))}, status_code=503, headers={"Retry-After": "1"})
    except VxEvalError as exc:
        return JSONResponse({"detail": public_text(str(exc))}, status_code=507)
    service.log.write(event="grade kept", experiment=experiment, question=grade.question, person=who.name)
    return JSONResponse(_state(service, loaded, stores, who.name or ""), status_code=201)


def grading_state(service: Served, who: Rater, experiment: str) -> Response:
    found = _experiment(service, experiment)
    if isinstance(found, Response):
        return found
    loaded, stores = found
    return JSONResponse(_state(service, loaded, stores, who.name or ""))


def grading_page(service: Served, request: Request, experiment: str) -> Response:
    who = service.caller(request, "grade")
    if not isinstance(who, Principal):
        caller = service.principal(request)
        if who.status_code == 401 or caller is None or caller.kind == "guest":  # not signed in: sign in first
            return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
        return who
    if experiment not in service.experiments:
        return HTMLResponse(small_page("Not found", Markup("<p>No such experiment.</p>")), status_code=404)
    as_js = json.dumps(experiment).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    page = resources.files("vx_eval.serve").joinpath("grade_page.html").read_text(encoding="utf-8")
    filled = (
        page.replace("__EXPERIMENT_JS__", as_js)
        .replace("__EXPERIMENT__", str(escape(experiment)))
        .replace("__RATER__", str(escape(who.name or "")))
    )
    body = Markup(filled)
    return HTMLResponse(small_page(f"Grade {experiment}", body), headers={"Cache-Control": "no-store"})


def grading_routes(route_class: type[APIRoute]) -> APIRouter:
    """The grading page and its API; only people who may grade reach them."""
    router = APIRouter(route_class=route_class)
    router.add_api_route("/grade/{experiment}", grading_page, methods=["GET"], response_class=HTMLResponse,
                         summary="The grading page: grade (question, passage) pairs 0-3 by keyboard")  # fmt: skip
    router.add_api_route("/api/v1/grading/{experiment}", grading_state, methods=["GET"],
                         summary="Where the grading stands: grades, pairs, raters, their agreement")  # fmt: skip
    router.add_api_route("/api/v1/grading/{experiment}/next", next_pairs, methods=["GET"],
                         summary="The next pairs for the signed-in rater, the most settling first")  # fmt: skip
    router.add_api_route("/api/v1/grading/{experiment}/grades", keep_grade, methods=["POST"], status_code=201,
                         summary="Keep one grade beside the experiment's golden file")  # fmt: skip
    return router
