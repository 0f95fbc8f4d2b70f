"""A static HTML gallery: one deterministic, compact representative per available
source × outcome × quality-tier combination, each on its own page.

The representative of a combination is its retained attempt with the fewest events (ties: the
lowest ``trajectory_id``), so the gallery is a pure function of the library's contents. Pages
are self-contained (inline CSS, no script) and every value from a record is HTML-escaped.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sediment.trajectory import facets
from sediment.trajectory.library import Library, _write_atomic
from sediment.trajectory.rankings import TIERS
from sediment.trajectory.views import assistant_turns

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;max-width:72rem;color:#1b1b1b}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #bbb;padding:.25rem .5rem;vertical-align:top}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.4rem;margin:.2rem 0}
.role-assistant{background:#eef6ff}.supervised{font-weight:bold;color:#0a5}.current{background:#fff6d5}
section{margin:1.2rem 0}details{margin:.3rem 0}
"""


def _e(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return html.escape(text)


def _json(value: Any) -> str:
    return f"<pre>{_e(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))}</pre>"


def _page(title: str, body: str) -> bytes:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n{body}\n</body></html>\n").encode()


def page_name(trajectory_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", trajectory_id) + ".html"


def representatives(library: Library) -> list[dict[str, Any]]:
    """One row per (source, outcome, tier): its most compact retained attempt, sorted by the combination."""
    rows = library.query(
        "SELECT k.trajectory_id, r.source_id, k.quality_tier, r.outcome_category, r.event_count, r.task_key "
        "FROM rankings k JOIN records r ON r.trajectory_id = k.trajectory_id")
    chosen: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["source_id"] or "-", row["outcome_category"], row["quality_tier"])
        best = chosen.get(key)
        if best is None or (row["event_count"], row["trajectory_id"]) < (best["event_count"], best["trajectory_id"]):
            chosen[key] = row
    return [chosen[key] for key in sorted(chosen)]


def _event_html(index: int, event: Mapping[str, Any]) -> str:
    role = facets.role(event) or ""
    calls = "".join(f"<div>call <code>{_e(facets.call_id(c) or '')}</code>: <code>{_e(c.get('name') or '')}</code>"
                    f"{_json(c.get('arguments'))}</div>" for c in facets.tool_calls(event))
    link = facets.result_link(event)
    reasoning = facets.reasoning(event)
    thought = f"<div>reasoning</div><pre>{_e(reasoning)}</pre>" if reasoning else ""
    return (f"<tr class=\"role-{_e(role)}\"><td>{index}</td><td><code>{_e(facets.event_id(event) or '')}</code></td>"
            f"<td>{_e(role)}</td><td>{'<span class=supervised>supervised</span>' if facets.supervised(event) else ''}"
            f"</td><td>{thought}<pre>{_e(facets.text(event))}</pre>{calls}"
            f"{f'<div>result of <code>{_e(link)}</code></div>' if link else ''}</td></tr>")


def _alternatives_html(library: Library, task_key: str, current: str) -> str:
    meta = {r["trajectory_id"]: r for r in library.query(
        "SELECT trajectory_id, source_id, model, event_count FROM records WHERE task_key = ?", [task_key])}
    rows = []
    for row in library.alternatives(task_key):
        m = meta.get(row["trajectory_id"], {})
        css = " class=current" if row["trajectory_id"] == current else ""
        rows.append(f"<tr{css}><td>{row['within_task_rank']}</td><td>{_e(row['environment_key'])}</td>"
                    f"<td>{row['quality_tier']}</td><td>{_e(row['outcome_category'])}</td>"
                    f"<td>{_e(row['verification_strength'])}</td><td>{_e(row['completeness'] or '-')}</td>"
                    f"<td>{_e(m.get('source_id') or '-')}</td><td>{_e(m.get('model') or '-')}</td>"
                    f"<td>{m.get('event_count', '-')}</td><td><code>{_e(row['trajectory_id'])}</code></td></tr>")
    return ("<table><tr><th>rank</th><th>environment</th><th>tier</th><th>outcome</th><th>verification</th>"
            "<th>completeness</th><th>source</th><th>model</th><th>events</th><th>trajectory</th></tr>"
            + "".join(rows) + "</table>")


def record_page(library: Library, trajectory_id: str) -> bytes:
    record = library.record(trajectory_id)
    ranking = next(r for r in library.rankings() if r["trajectory_id"] == trajectory_id)
    events = facets.events(record)
    turns = []
    for sample in assistant_turns(record):
        turns.append(
            f"<details><summary>turn at event {sample['target_index']}: <code>{_e(sample['target_event_id'])}</code>"
            f" — context is events[:{sample['target_index']}]</summary>"
            f"<h4>exact model input</h4>{_json(sample['model_input'])}"
            f"<h4>supervised target</h4>{_json(sample['supervised_target'])}</details>")
    missing: list[Any] = list(facets.missing_fields(record))
    for event in events:
        for item in event.get("missing_fields") or []:
            missing.append({"event_id": facets.event_id(event), "missing": item})
    body = "\n".join([
        "<p><a href=\"index.html\">← gallery</a></p>",
        f"<h1>{_e(trajectory_id)}</h1>",
        f"<p>task <code>{_e(record.get('task_key'))}</code> (native <code>{_e(record.get('task_id'))}</code>); "
        f"tier {ranking['quality_tier']} ({_e(TIERS[ranking['quality_tier']])}); outcome "
        f"{_e(ranking['outcome_category'])}; verification {_e(ranking['verification_strength'])}; completeness "
        f"{_e(ranking['completeness'] or '-')}; rank {ranking['within_task_rank']}</p>",
        "<ul>" + "".join(f"<li>{_e(reason)}</li>" for reason in ranking["ranking_reasons"]) + "</ul>",
        f"<section><h2>Source and provenance</h2>{_json({'source': facets.source(record), 'provenance': facets.provenance(record), 'outcome': facets.outcome(record)})}</section>",  # noqa: E501
        f"<section><h2>Interaction ({len(events)} events)</h2><table><tr><th>#</th><th>event</th><th>role</th>"
        f"<th>mask</th><th>text</th></tr>{''.join(_event_html(i, e) for i, e in enumerate(events))}</table>"
        "</section>",
        f"<section><h2>Assistant-turn samples ({len(turns)})</h2>{''.join(turns) or '<p>none</p>'}</section>",
        f"<section><h2>Verification evidence</h2>{_json(facets.verification(record))}</section>",
        f"<section><h2>Missing fields</h2>{_json(missing) if missing else '<p>none declared</p>'}</section>",
        f"<section><h2>Alternatives</h2>{_alternatives_html(library, str(record.get('task_key')), trajectory_id)}"
        "</section>",
    ])
    return _page(trajectory_id, body)


def write_gallery(library: Library, out: Path) -> list[str]:
    """Write ``index.html`` and one page per representative into ``out``; the page file names."""
    chosen = representatives(library)
    rows = []
    pages = []
    for row in chosen:
        name = page_name(row["trajectory_id"])
        _write_atomic(out / name, record_page(library, row["trajectory_id"]))
        pages.append(name)
        rows.append(f"<tr><td>{_e(row['source_id'] or '-')}</td><td>{_e(row['outcome_category'])}</td>"
                    f"<td>{row['quality_tier']}</td><td>{_e(row['task_key'])}</td><td>{row['event_count']}</td>"
                    f"<td><a href=\"{_e(name)}\">{_e(row['trajectory_id'])}</a></td></tr>")
    body = ("<h1>Trajectory library gallery</h1>"
            f"<p>{len(chosen)} representative(s): the most compact retained attempt of every source × outcome × "
            "tier combination.</p><table><tr><th>source</th><th>outcome</th><th>tier</th><th>task</th><th>events</th>"
            "<th>representative</th></tr>" + "".join(rows) + "</table>")
    _write_atomic(out / "index.html", _page("Trajectory library gallery", body))
    return pages
