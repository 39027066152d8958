"""Batch jobs over HTTP: start one, watch its progress, cancel it."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from memreader.service.jobs import JobRequest
from memreader.service.scope_walls import check_whole_owner
from memreader.service.state import ServiceState, json_response

__all__ = ["router"]

router = APIRouter(tags=["jobs"])


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


@router.post("/v1/jobs", status_code=202)
async def start_job(body: JobRequest, request: Request) -> Response:
    """Start a batch job over files in the service's input roots, into the service's store
    (202 with the job; poll ``GET /v1/jobs/{id}``)."""
    state = _state(request)
    principal = state.principal(request)
    check_whole_owner(principal, "a batch job")

    async def answer() -> Response:
        job = state.jobs.submit(principal, body)
        return json_response(job.to_dict(), status=202)

    return await state.idempotent(request, principal, "jobs", answer)


@router.get("/v1/jobs/{job_id}")
async def get_job(job_id: str, request: Request) -> Response:
    """A job's status and progress (inputs, windows, items, errors, messages/s)."""
    state = _state(request)
    principal = state.principal(request)
    return json_response(state.jobs.get(principal, job_id).to_dict())


@router.delete("/v1/jobs/{job_id}")
async def cancel_job(job_id: str, request: Request) -> Response:
    """Ask a running job to stop; it ends ``cancelled`` after the batch it is in."""
    state = _state(request)
    principal = state.principal(request)
    return json_response(state.jobs.cancel(principal, job_id).to_dict(), status=202)
