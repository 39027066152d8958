"""Batch jobs over HTTP: start one, watch its progress, cancel it."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from memreader.service.depends import Caller, State
from memreader.service.jobs import JobRequest
from memreader.service.scope_walls import check_whole_owner
from memreader.service.state import json_response

__all__ = ["router"]

router = APIRouter(tags=["jobs"])


@router.post("/v1/jobs", status_code=202)
async def start_job(
    body: JobRequest, request: Request, state: State, principal: Caller
) -> Response:
    """Start a batch job over files in the service's input roots, into the service's store
    (202 with the job; poll ``GET /v1/jobs/{id}``)."""
    check_whole_owner(principal, "a batch job")

    async def answer() -> Response:
        job = state.jobs.submit(principal, body)
        return json_response(job.to_dict(), status=202)

    return await state.idempotent(request, principal, "jobs", answer)


@router.get("/v1/jobs/{job_id}")
async def get_job(job_id: str, state: State, principal: Caller) -> Response:
    """A job's status and progress (inputs, windows, items, errors, messages/s)."""
    return json_response(state.jobs.get(principal, job_id).to_dict())


@router.delete("/v1/jobs/{job_id}")
async def cancel_job(job_id: str, state: State, principal: Caller) -> Response:
    """Ask a running job to stop; it ends ``cancelled`` after the batch it is in."""
    return json_response(state.jobs.cancel(principal, job_id).to_dict(), status=202)
