"""Ops given by someone other than a model's turn (an agent through the MCP server's ``remember``),
held for review as a job of their own.

The job is written straight into the spool as ``held``: no worker ever runs it (there is no
turn to extract from), and a person approves or rejects it like any review-mode job (`memory
approve`, the app's pending screen), which validates each op again and writes it in one
transaction. The approved cards carry ``source``: the job's ``session`` is what an approval
writes as the source, so it is set to the proposer's name rather than a session id.

The spool keeps only what a store would: the turn that stands for the proposal is a redacted,
one-line excerpt, never the raw text.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memory.jobs.spool import HeldOp, Job, Spool, make_job
from memory.model import Rejection, Turn, TurnMessage
from memory.store.ops import IndexedOp
from memory.text.names import sanitize_line
from memory.text.redact import redact

__all__ = ["MAX_EXCERPT", "spool_held"]

MAX_EXCERPT = 200  # characters of the line that stands for the proposal in listings


def spool_held(
    spool: Spool,
    workspace: Path | str,
    ops: Sequence[IndexedOp],
    rejected: Sequence[Rejection],
    *,
    source: str,
    what: str,
) -> Job:
    """Write a held job of ``ops`` (validated) for ``workspace``; ``rejected``: the ops refused
    already, kept on the job for its history entry. ``what`` stands for the proposal in
    `memory pending` and the pending screen. Durable when it returns (``Spool.submit``)."""
    line = sanitize_line(redact(what), MAX_EXCERPT)
    turn = Turn(messages=[TurnMessage(role="user", text=line)], session=source)
    job = make_job(workspace, [turn], session=source, mode="review")
    job.held_ops = [HeldOp(index=o.index, op=o.op) for o in ops]
    job.rejected = list(rejected)
    job.state = "held"
    # Creates compare with no earlier note: an approval checks nothing but the ops themselves.
    job.snapshot_hashes = {}
    spool.submit(job)
    return job
