"""A static HTML gallery: one deterministic, compact representative per available
source × outcome × quality-tier combination, each on its own page, and an index of every
record, paged.

The representative of a combination is its retained attempt with the fewest events (ties: the
lowest ``trajectory_id``), so the gallery is a pure function of the library's contents. Pages
are self-contained (inline CSS, no script) and every value from a record is HTML-escaped.

A page's size is bounded: a text or JSON block longer than :data:`FOLD_CHARS` shows its head
and tail with the characters between them folded (counted), the interaction and the turn
samples each stop showing content once their budget (:data:`EVENTS_BUDGET`,
:data:`TURNS_BUDGET`) is spent (the rest is one counted line), and the alternatives table shows
at most :data:`MAX_ALTERNATIVES` rows. ``sediment library inspect --json`` shows everything.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.trajectory import facets
from sediment.trajectory.catalog import catalog
from sediment.trajectory.library import Library, _write_atomic
from sediment.trajectory.rankings import TIERS
from sediment.trajectory.views import assistant_turns

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;max-width:72rem;color:#1b1b1b}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #bbb;padding:.25rem .5rem;vertical-align:top}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.4rem;margin:.2rem 0}
.role-assistant{background:#eef6ff}.supervised{font-weight:bold;color:#0a5}.current{background:#fff6d5}
section{margin:1.2rem 0}details{margin:.3rem 0}.folded{color:#805;font-style:italic}
nav a,nav strong{margin-right:.5rem}dt{font-weight:bold}
"""

#: Records listed on one index page.
INDEX_PAGE_SIZE = 100
#: A text or JSON block longer than this (characters) is folded: head and tail shown.
FOLD_CHARS = 4000
_HEAD, _TAIL = 3000, 1000
#: Escaped bytes of event content shown on a page; later events are one counted line.
EVENTS_BUDGET = 600_000
#: Escaped bytes of turn-sample content shown on a page; later samples are one counted line.
TURNS_BUDGET = 300_000
#: Rows of the alternatives table on a page.
MAX_ALTERNATIVES = 100


class _Budget:
    """What one section of a page may still show, in escaped bytes."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    @property
    def spent(self) -> bool:
        return self.left <= 0

    def pre(self, text: str) -> str:
        """``text`` as a ``<pre>`` block, folded when long; counted against the budget."""
        shown = _fold(text)
        self.left -= len(shown)
        return shown


def _fold(text: str) -> str:
    if len(text) <= FOLD_CHARS:
        return f"<pre>{html.escape(text)}</pre>"
    hidden = len(text) - _HEAD - _TAIL
    return (f"<pre>{html.escape(text[:_HEAD])}</pre><p class=folded>… {hidden:,} characters folded "
            f"(<code>sediment library inspect --json</code> shows them) …</p><pre>{html.escape(text[-_TAIL:])}</pre>")


def _e(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return html.escape(text)


def _json(value: Any, budget: _Budget | None = None) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return budget.pre(text) if budget is not None else _fold(text)


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


def _event_html(index: int, event: Mapping[str, Any], budget: _Budget) -> str:
    role = facets.role(event) or ""
    calls = "".join(f"<div>call <code>{_e(facets.call_id(c) or '')}</code>: <code>{_e(c.get('name') or '')}</code>"
                    f"{_json(c.get('arguments'), budget)}</div>" for c in facets.tool_calls(event))
    link = facets.result_link(event)
    reasoning = facets.reasoning(event)
    thought = f"<div>reasoning</div>{budget.pre(reasoning)}" if reasoning else ""
    return (f"<tr class=\"role-{_e(role)}\"><td>{index}</td><td><code>{_e(facets.event_id(event) or '')}</code></td>"
            f"<td>{_e(role)}</td><td>{'<span class=supervised>supervised</span>' if facets.supervised(event) else ''}"
            f"</td><td>{thought}{budget.pre(facets.text(event))}{calls}"
            f"{f'<div>result of <code>{_e(link)}</code></div>' if link else ''}</td></tr>")


def _events_html(events: Sequence[Mapping[str, Any]]) -> str:
    budget = _Budget(EVENTS_BUDGET)
    rows = []
    for index, event in enumerate(events):
        if budget.spent:
            rows.append(f"<tr><td>{index}–{len(events) - 1}</td><td colspan=4 class=folded>{len(events) - index:,} "
                        "more event(s) folded: this page's budget for the interaction is spent "
                        "(<code>sediment library inspect</code> shows them)</td></tr>")
            break
        rows.append(_event_html(index, event, budget))
    return "".join(rows)


def _alternatives_html(library: Library, task_key: str, current: str) -> str:
    meta = {r["trajectory_id"]: r for r in library.query(
        "SELECT trajectory_id, source_id, model, event_count FROM records WHERE task_key = ?", [task_key])}
    rows = []
    alternatives = library.alternatives(task_key)
    for row in alternatives[:MAX_ALTERNATIVES]:
        m = meta.get(row["trajectory_id"], {})
        css = " class=current" if row["trajectory_id"] == current else ""
        rows.append(f"<tr{css}><td>{row['within_task_rank']}</td><td>{_e(row['environment_key'])}</td>"
                    f"<td>{row['quality_tier']}</td><td>{_e(row['outcome_category'])}</td>"
                    f"<td>{_e(row['verification_strength'])}</td><td>{_e(row['completeness'] or '-')}</td>"
                    f"<td>{_e(m.get('source_id') or '-')}</td><td>{_e(m.get('model') or '-')}</td>"
                    f"<td>{m.get('event_count', '-')}</td><td><code>{_e(row['trajectory_id'])}</code></td></tr>")
    more = len(alternatives) - MAX_ALTERNATIVES
    if more > 0:
        rows.append(f"<tr><td colspan=10 class=folded>{more:,} more alternative(s) folded</td></tr>")
    return ("<table><tr><th>rank</th><th>environment</th><th>tier</th><th>outcome</th><th>verification</th>"
            "<th>completeness</th><th>source</th><th>model</th><th>events</th><th>trajectory</th></tr>"
            + "".join(rows) + "</table>")


def record_page(library: Library, trajectory_id: str) -> bytes:
    record = library.record(trajectory_id)
    ranking = next(r for r in library.rankings() if r["trajectory_id"] == trajectory_id)
    events = facets.events(record)
    turns = []
    budget = _Budget(TURNS_BUDGET)
    samples = list(assistant_turns(record))
    for number, sample in enumerate(samples):
        if budget.spent:
            turns.append(f"<p class=folded>{len(samples) - number:,} more turn sample(s) folded: this page's budget "
                         "for turn samples is spent (<code>sediment library inspect --json</code> shows them)</p>")
            break
        turns.append(
            f"<details><summary>turn at event {sample['target_index']}: <code>{_e(sample['target_event_id'])}</code>"
            f" — context is events[:{sample['target_index']}]</summary>"
            f"<h4>exact model input</h4>{_json(sample['model_input'], budget)}"
            f"<h4>supervised target</h4>{_json(sample['supervised_target'], budget)}</details>")
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
        f"<th>mask</th><th>text</th></tr>{_events_html(events)}</table>"
        "</section>",
        f"<section><h2>Assistant-turn samples ({len(samples)})</h2>{''.join(turns) or '<p>none</p>'}</section>",
        f"<section><h2>Verification evidence</h2>{_json(facets.verification(record))}</section>",
        f"<section><h2>Missing fields</h2>{_json(missing) if missing else '<p>none declared</p>'}</section>",
        f"<section><h2>Alternatives</h2>{_alternatives_html(library, str(record.get('task_key')), trajectory_id)}"
        "</section>",
    ])
    return _page(trajectory_id, body)


@dataclass(frozen=True)
class Gallery:
    """What :func:`write_gallery` wrote: the record pages (one per representative), the index
    pages (``index.html``, ``index-2.html``, …) and how many records they list."""

    pages: list[str]
    index_pages: list[str]
    records: int
    sizes: dict[str, int] = field(default_factory=dict)  #: bytes of every page written


def index_name(number: int) -> str:
    """The file of index page ``number`` (1-based)."""
    return "index.html" if number == 1 else f"index-{number}.html"


def _legend() -> str:
    return ("<details open><summary>Quality tiers</summary><dl>"
            + "".join(f"<dt>tier {tier}</dt><dd>{_e(text)}</dd>" for tier, text in sorted(TIERS.items()))
            + "</dl><p>A record's tier, rank and SFT eligibility are those of the attempt it is retained as "
              "(duplicates collapse into one).</p></details>")


def _nav(number: int, count: int) -> str:
    if count <= 1:
        return ""
    links = [f"<strong>{n}</strong>" if n == number else f"<a href=\"{index_name(n)}\">{n}</a>"
             for n in range(1, count + 1)]
    previous = f"<a href=\"{index_name(number - 1)}\">← previous</a>" if number > 1 else ""
    following = f"<a href=\"{index_name(number + 1)}\">next →</a>" if number < count else ""
    return f"<nav>pages: {previous}{''.join(links)}{following}</nav>"


def _records_table(rows: list[dict[str, Any]], pages: Mapping[str, str]) -> str:
    cells = []
    for row in rows:
        page = pages.get(row["trajectory_id"])
        shown = (f"<a href=\"{_e(page)}\">{_e(row['trajectory_id'])}</a>" if page
                 else f"<code>{_e(row['trajectory_id'])}</code>")
        tier = "-" if row["quality_tier"] is None else str(row["quality_tier"])
        rank = "-" if row["within_task_rank"] is None else str(row["within_task_rank"])
        eligible = {True: "yes", False: "no", None: "-"}[row["sft_eligible"]]
        cells.append(f"<tr><td>{shown}</td><td>{_e(row['source_id'] or '-')}</td><td>{_e(row['task_key'] or '-')}</td>"
                     f"<td>{_e(row['outcome_category'] or '-')}</td><td>{tier}</td><td>{rank}</td><td>{eligible}</td>"
                     f"<td>{_e(row['split'] or '-')}</td><td>{row['event_count']}</td></tr>")
    return ("<table><tr><th>trajectory</th><th>source</th><th>task</th><th>outcome</th><th>tier</th><th>rank</th>"
            "<th>SFT-eligible</th><th>split</th><th>events</th></tr>" + "".join(cells) + "</table>")


def write_gallery(library: Library, out: Path, page_size: int = INDEX_PAGE_SIZE) -> Gallery:
    """Write one page per representative and the index pages (every record, ``page_size`` a
    page; the first also lists the representatives) into ``out``."""
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
    chosen = representatives(library)
    rows = []
    pages: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for row in chosen:
        name = page_name(row["trajectory_id"])
        data = record_page(library, row["trajectory_id"])
        _write_atomic(out / name, data)
        pages[row["trajectory_id"]] = name
        sizes[name] = len(data)
        rows.append(f"<tr><td>{_e(row['source_id'] or '-')}</td><td>{_e(row['outcome_category'])}</td>"
                    f"<td>{row['quality_tier']}</td><td>{_e(row['task_key'])}</td><td>{row['event_count']}</td>"
                    f"<td><a href=\"{_e(name)}\">{_e(row['trajectory_id'])}</a></td></tr>")
    records = catalog(library)
    count = max(1, -(-len(records) // page_size))
    index_pages = []
    for number in range(1, count + 1):
        listed = records[(number - 1) * page_size:number * page_size]
        first = (number - 1) * page_size + 1
        parts = ["<h1>Trajectory library gallery</h1>"]
        if number == 1:
            parts.append(f"<p>{len(chosen)} representative(s): the most compact retained attempt of every source × "
                         "outcome × tier combination.</p><table><tr><th>source</th><th>outcome</th><th>tier</th>"
                         "<th>task</th><th>events</th><th>representative</th></tr>" + "".join(rows) + "</table>")
        parts += [_legend(),
                  f"<h2>All records: {first if listed else 0}–{first + len(listed) - 1 if listed else 0} "
                  f"of {len(records)} (page {number} of {count})</h2>",
                  _nav(number, count), _records_table(listed, pages), _nav(number, count)]
        name = index_name(number)
        data = _page("Trajectory library gallery" + (f" (page {number})" if number > 1 else ""), "".join(parts))
        _write_atomic(out / name, data)
        sizes[name] = len(data)
        index_pages.append(name)
    return Gallery(pages=list(pages.values()), index_pages=index_pages, records=len(records), sizes=sizes)
