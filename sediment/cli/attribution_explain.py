"""How ``derive --explain-attribution`` shows one Session's attribution figures."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import typer

from sediment.cli import console

if TYPE_CHECKING:
    from sediment.derive.attribution import AttributionExplanation


def _when(seconds: int | datetime) -> str:
    moment = seconds if isinstance(seconds, datetime) else datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat().replace("+00:00", "Z")


def show(found: AttributionExplanation, *, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(found.as_json()))
        return
    result = found.result
    if result.commits:
        console.show(f"Session {found.session_id}: bound by {result.source} to {len(result.commits)} commit(s)")
    else:
        reason = f"attribution.{result.unbound}" if result.unbound else "its notes name no qualifying commit"
        console.show(f"Session {found.session_id}: not bound ({reason})")
    for commit in result.commits:
        console.show(f"  {commit.repo} {commit.commit_sha}")
    if found.notes:
        console.show(f"notes ({len(found.notes)}): they bind the Session; the similarity scores below only inform")
        for note in found.notes:
            state = f"declined: {note.declined}" if note.declined else "bound"
            console.show(f"  {note.repo} {note.commit_sha} ({note.source}): {state}")
    else:
        console.show("notes: none (the Jaccard fallback decides)")
    if found.window is None:
        console.show("no calls: no candidate commits")
        return
    console.show(f"candidates: commits made {_when(found.window[0])} to {_when(found.window[1])}; "
                 f"threshold {found.threshold}; {found.calls} call(s) with completion text")
    if not found.candidates:
        console.show("  none")
    for candidate in found.candidates:
        flag = ("noted for another Session: never a candidate" if candidate.noted_elsewhere
                else "matched" if candidate.matched else "below the threshold" if candidate.files
                else "no code file adds tokens")
        console.show(f"  {candidate.commit.repo} {candidate.commit.commit_sha} "
                     f"{_when(candidate.committer_time)}: {flag}")
        for file in candidate.files:
            sign = ">=" if file.score >= found.threshold else "<"
            best = f" (best call {file.call_id})" if file.call_id else ""
            console.show(f"    {file.path}: {file.score:.3f} {sign} {found.threshold}{best}")
