"""The leakage report as one self-contained HTML page (docs/leakage.md, Output).

Inline CSS and inline SVG only: no script, no stylesheet, font or image fetched from anywhere,
so the page opens offline and a row's text cannot run in it. Every text taken from a row (ids,
prompts, patches, keys, repositories) is HTML-escaped. The page's size is bounded whatever the
exports hold: at most :data:`EXAMPLES` findings a kind, :data:`IDS` row ids a split of a
finding, and :data:`TEXT_CHARS` characters of a shared text, of which the first
:data:`PREVIEW_CHARS` show and the rest is folded. leakage.json holds everything.

The page is a pure function of the report, which is sorted: the same exports give the same page.
"""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from sediment.reports.leakage import Finding, LeakageReport

EXAMPLES = 10  #: findings shown per kind
IDS = 20  #: row ids shown per split of a finding
PREVIEW_CHARS = 300  #: characters of a shared prompt or patch shown unfolded
TEXT_CHARS = 4000  #: characters of a shared prompt or patch on the page at most
PROBLEMS = 20  #: unreadable lines listed

#: Bar colours of the splits, in sorted split order (cycled).
PALETTE = ("#3b6fb6", "#d9822b", "#3a9a5b", "#a8459e", "#c23b3b", "#6b6b6b")
#: Kinds whose findings share a text worth showing: which text of the first row.
_TEXT_OF = {"exact_prompt": "prompt", "near_duplicate_prompt": "prompt", "benchmark_problem_statement": "prompt",
            "near_duplicate_patch": "patch", "benchmark_patch_hunk": "patch", "benchmark_patch_file": "patch"}

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;max-width:76rem;color:#1b1b1b}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #bbb;padding:.25rem .5rem;vertical-align:top}
td.n{text-align:right}pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.4rem;margin:.2rem 0}
.finding{border-left:3px solid #bbb;padding-left:.6rem;margin:.8rem 0}.muted{color:#666}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;vertical-align:middle}
code{word-break:break-all}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _colours(splits: list[str]) -> dict[str, str]:
    return {split: PALETTE[i % len(PALETTE)] for i, split in enumerate(splits)}


def _chart(summary: dict[str, Any]) -> str:
    """Horizontal bars: per kind, per split, the share of that split's rows the kind flags."""
    splits: list[str] = list(summary["splits"])
    colours = _colours(splits)
    kinds = summary["kinds"]
    label_w, bar_w, bar_h, gap = 230, 420, 12, 10
    group_h = max(1, len(splits)) * bar_h + gap
    height = len(kinds) * group_h + 20
    parts = [f'<svg role="img" width="{label_w + bar_w + 130}" '
             f'height="{height}" aria-label="rows flagged per kind and split">']
    for k, (kind, counts) in enumerate(kinds.items()):
        top = k * group_h + 10
        parts.append(f'<text x="{label_w - 8}" y="{top + group_h / 2}" text-anchor="end" font-size="12" '
                     f'dominant-baseline="middle">{_e(kind)}</text>')
        for s, split in enumerate(splits):
            flagged = int(counts["rows"].get(split, 0))
            total = int(summary["splits"][split]) or 1
            width = round(bar_w * flagged / total, 1)
            y = top + s * bar_h
            parts.append(f'<rect x="{label_w}" y="{y}" width="{bar_w}" height="{bar_h - 2}" fill="#eee"/>'
                         f'<rect x="{label_w}" y="{y}" width="{width}" height="{bar_h - 2}" '
                         f'fill="{colours[split]}"><title>{_e(kind)}, {_e(split)}: {flagged} of '
                         f'{summary["splits"][split]} rows</title></rect>'
                         f'<text x="{label_w + bar_w + 6}" y="{y + bar_h - 3}" font-size="10">'
                         f'{flagged}/{summary["splits"][split]}</text>')
    parts.append("</svg>")
    legend = "".join(f'<span style="background:{colours[s]}"></span>{_e(s)}' for s in splits)
    return f'<div class="legend">{legend}</div>' + "".join(parts)


def _count_table(summary: dict[str, Any]) -> str:
    splits: list[str] = list(summary["splits"])
    head = "".join(f"<th>{_e(s)}</th>" for s in splits)
    rows = []
    for kind, counts in summary["kinds"].items():
        cells = "".join(f'<td class="n">{int(counts["rows"].get(s, 0))}</td>' for s in splits)
        rows.append(f'<tr><td>{_e(kind)}</td><td class="n">{int(counts["findings"])}</td>{cells}</tr>')
    return (f"<table><thead><tr><th>kind</th><th>findings</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def folded(text: str) -> str:
    """A shared text: its first characters shown, the rest (up to the cap) folded."""
    shown, rest = text[:PREVIEW_CHARS], text[PREVIEW_CHARS:TEXT_CHARS]
    if not rest:
        return f"<pre>{_e(shown)}</pre>"
    cut = len(text) - PREVIEW_CHARS - len(rest)
    more = f"\n… {cut} more characters (leakage.json names the rows)" if cut > 0 else ""
    return (f"<pre>{_e(shown)}…</pre><details><summary>{len(text) - PREVIEW_CHARS} more characters</summary>"
            f"<pre>{_e(rest)}{_e(more)}</pre></details>")


def _finding(finding: Finding) -> str:
    head = [f"<code>{_e(finding.key)}</code>"]
    if finding.eval_set:
        head.append(_e(finding.eval_set))
    if finding.similarity is not None:
        head.append(f"similarity {finding.similarity:.3f}")
    if finding.detail:
        head.append(_e(finding.detail))
    per_split: dict[str, set[str]] = defaultdict(set)
    for row in finding.rows:
        per_split[row.split].add(row.row_id)
    lines = []
    for split, ids in sorted(per_split.items()):
        shown = ", ".join(f"<code>{_e(i)}</code>" for i in sorted(ids)[:IDS])
        extra = f" <span class=muted>… +{len(ids) - IDS} more</span>" if len(ids) > IDS else ""
        lines.append(f"<div>{_e(split)} ({len(ids)}): {shown}{extra}</div>")
    which = _TEXT_OF.get(finding.kind)
    text = next((getattr(r, which) for r in finding.rows if getattr(r, which)), "") if which else ""
    return (f'<div class="finding"><div>{" · ".join(head)}</div>{"".join(lines)}'
            f'{folded(text) if text else ""}</div>')


def leakage_page(report: LeakageReport) -> str:
    """The page: the rows read, the counts per kind and split (a chart and a table, the numbers
    of leakage.json's ``kinds``), then up to :data:`EXAMPLES` findings of each kind."""
    summary = report.as_json()
    inputs = ", ".join(f"<code>{_e(i['dir'])}</code> ({i['files']} files)" for i in summary["inputs"]) or "none"
    splits = ", ".join(f"{_e(s)}: {n}" for s, n in summary["splits"].items()) or "none"
    settings = ", ".join(f"{_e(k)} {_e(v)}" for k, v in summary["settings"].items())
    body = [f"<h1>Leakage report</h1><p>{summary['rows']} rows ({splits}) from {inputs}.</p>",
            f"<p class=muted>Settings: {settings}.</p>"]
    if report.benchmark is not None:
        b = report.benchmark
        body.append(f"<p>Benchmark <b>{_e(b['name'])}</b>: {_e(b['instances'])} instances from "
                    f"<code>{_e(b['file'])}</code> (ancestry: {_e(b['ancestry'])}).</p>")
    body += ["<h2>Flagged rows per kind and split</h2>", _chart(summary), _count_table(summary)]
    for note in report.notes:
        body.append(f"<p class=muted>note: {_e(note)}</p>")
    if report.problems:
        listed = "".join(f"<li><code>{_e(p)}</code></li>" for p in sorted(report.problems)[:PROBLEMS])
        more = f"<p>… {len(report.problems) - PROBLEMS} more</p>" if len(report.problems) > PROBLEMS else ""
        body.append(f"<h2>Unreadable lines ({len(report.problems)})</h2><ul>{listed}</ul>{more}")
    body.append("<h2>Findings</h2>")
    for kind in summary["kinds"]:
        found = [f for f in report.findings if f.kind == kind]
        if not found:
            continue
        body.append(f"<h3>{_e(kind)} ({len(found)})</h3>")
        body += [_finding(f) for f in found[:EXAMPLES]]
        if len(found) > EXAMPLES:
            body.append(f"<p class=muted>… {len(found) - EXAMPLES} more {_e(kind)} findings in leakage.json</p>")
    if not report.findings:
        body.append("<p>No overlaps.</p>")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">'
            f"<title>Leakage report</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
