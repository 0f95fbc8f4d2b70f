"""One record, rendered for a person at a terminal (rich renderables; the CLI prints them).

Every text that comes from a record is shown as a :class:`rich.text.Text` (never markup), with
control characters written visibly, so a record cannot style or forge terminal output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sediment.trajectory import facets
from sediment.trajectory.library import Library
from sediment.trajectory.views import assistant_turns, full_trajectory


def visible(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return "".join(c if c.isprintable() or c == "\n" else f"\\x{ord(c):02x}" if ord(c) < 0x100
                   else f"\\u{ord(c):04x}" for c in text)


def _json(value: Any) -> Text:
    return Text(visible(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)))


def _content(event: Mapping[str, Any]) -> str:
    text = facets.text(event)
    if facets.reasoning(event):
        text = f"(reasoning) {facets.reasoning(event)}\n{text}"
    calls = [f"→ {c.get('name')}({json.dumps(c.get('arguments'), ensure_ascii=False)}) [{facets.call_id(c)}]"
             for c in facets.tool_calls(event)]
    link = facets.result_link(event)
    return visible("\n".join(p for p in [text, *calls, f"← result of {link}" if link else ""] if p))


def alternatives_table(library: Library, task_key: str, current: str | None = None) -> Table:
    table = Table(title=Text(visible(f"alternatives for {task_key}")), expand=True)
    for column in ("rank", "tier", "outcome", "verification", "completeness", "provenance", "source", "model",
                   "events", "trajectory"):
        table.add_column(column)
    rows = {r["trajectory_id"]: r for r in library.query(
        "SELECT trajectory_id, source_id, model, event_count FROM records WHERE task_key = ?", [task_key])}
    for row in library.alternatives(task_key):
        meta = rows.get(row["trajectory_id"], {})
        marker = " ◀" if row["trajectory_id"] == current else ""
        table.add_row(*(Text(visible(v)) for v in (
            f"{row['within_task_rank']} ({row['environment_key']})", str(row["quality_tier"]),
            row["outcome_category"], row["verification_strength"], row["completeness"] or "-",
            row["demonstration_provenance"], meta.get("source_id") or "-", meta.get("model") or "-",
            str(meta.get("event_count", "-")), row["trajectory_id"] + marker)))
    return table


def render(library: Library, trajectory_id: str) -> RenderableType:
    """Everything about one record: identity and ranking, the interaction, every causal turn
    sample (exact model input and supervised target), verification evidence, missing fields and
    the task's alternatives."""
    record = library.record(trajectory_id)
    ranking = library.query("SELECT k.* FROM retained r JOIN rankings k ON k.trajectory_id = r.retained_trajectory_id "
                            "WHERE r.trajectory_id = ?", [trajectory_id])
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for label, value in (("trajectory", record["trajectory_id"]), ("task", f"{record.get('task_key')} "
                                                                             f"(native {record.get('task_id')})"),
                         ("source", dict(facets.source(record))), ("provenance", dict(facets.provenance(record))),
                         ("outcome", dict(facets.outcome(record))), ("completeness", record.get("completeness"))):
        head.add_row(label, Text(visible(value)))
    if ranking:
        row = ranking[0]
        head.add_row("ranking", Text(visible(
            f"tier {row['quality_tier']}, rank {row['within_task_rank']} in {row['environment_key']}; "
            f"retained {row['trajectory_id']} (collapsed with {row['contributing_trajectory_ids']})")))
        head.add_row("reasons", Text(visible("; ".join(json.loads(row["ranking_reasons"])))))
    events = Table(title="interaction (canonical events, causal order)", expand=True, show_lines=True)
    for column in ("#", "event", "role", "supervised", "text"):
        events.add_column(column)
    for index, event in enumerate(facets.events(record)):
        events.add_row(str(index), Text(visible(facets.event_id(event) or "")), Text(visible(facets.role(event) or "")),
                       "✓" if facets.supervised(event) else "", Text(_content(event)))
    turns: list[RenderableType] = []
    for sample in assistant_turns(record):
        ids = [facets.event_id(e) for e in sample["model_input"]["events"]]
        body = Group(
            Text(visible(f"model_input.events = events[:{sample['target_index']}] → {ids}")),
            Text(visible("model_input.tool_definitions: " + (
                "none published (declared missing)" if sample["model_input"]["tool_definitions"] is None
                else f"{len(sample['model_input']['tool_definitions'])} published tool(s)"))),
            Text("supervised target:", style="bold"),
            Text(_content(sample["supervised_target"])))
        turns.append(Panel(body, title=Text(visible(f"{sample['sample_id']} (target {sample['target_event_id']})"))))
    if not turns:
        turns.append(Text("no supervised assistant decision: no turn samples"))
    missing: list[Any] = list(facets.missing_fields(record))
    for event in facets.events(record):
        for item in event.get("missing_fields") or []:
            missing.append({"event_id": facets.event_id(event), "missing": item})
    return Group(
        Panel(head, title="trajectory"),
        events,
        Panel(Group(*turns), title=f"assistant-turn samples ({len(turns)})"),
        Panel(_json(dict(facets.verification(record))), title="verification evidence"),
        Panel(_json(missing) if missing else Text("none declared"), title="missing fields"),
        alternatives_table(library, str(record.get("task_key")), trajectory_id),
    )


def report(library: Library, trajectory_id: str) -> dict[str, Any]:
    """What :func:`render` shows, as JSON: the record, the ranking row it belongs to, its
    full-trajectory sample, every assistant-turn sample and the task's alternatives."""
    record = library.record(trajectory_id)
    retained = library.query("SELECT retained_trajectory_id FROM retained WHERE trajectory_id = ?", [trajectory_id])
    alternatives = library.alternatives(str(record.get("task_key")))
    keep = retained[0]["retained_trajectory_id"] if retained else None
    ranking = next((r for r in alternatives if r["trajectory_id"] == keep), None)
    return {"record": record, "ranking": ranking, "full_trajectory": full_trajectory(record),
            "assistant_turns": list(assistant_turns(record)), "alternatives": alternatives}
