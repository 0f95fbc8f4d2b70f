"""What would change a skip: the remedy of each reason, and the hint of an export that wrote nothing.

Every plugin may declare, per reason of its vocabulary, one short line saying what would change
it (``remedies`` of its ``ObjectiveInfo``, ``TargetInfo`` or ``ProfileInfo``); the core declares
those of its own reasons (:data:`CORE_REMEDIES`: the CI resolver's and the representation
reasons). When an export read units but every one was skipped, :func:`nothing_written` names the
dominant reason (the most counted, over every tally of the export), its count and its remedy;
when it read none at all (an empty bundle or store), it says so with :data:`NO_UNITS_REMEDY`;
the CLI ends the summary with it and ``--json`` carries it as ``nothing_written``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

#: The remedies of the core's own reasons (docs/exports.md, "Skip reasons").
CORE_REMEDIES: Mapping[str, str] = {
    "conflicting_run_identity": "the attempts of one CI run name different repositories; check the CI deliveries "
                                "ingested for that run (docs/operate.md, Repository identity)",
    "ambiguous_workflow_verdicts": "the commit's workflows disagree (one passed, one failed); a CI run that "
                                   "settles it, once ingested, gives a verdict",
    "repository_identity_absent": "the CI evidence names the repository without its id; ingest deliveries that "
                                  "carry repository.id (GitHub webhooks do)",
    "repository_identity_conflict": "the stored evidence contradicts itself about the repository; quarantine the "
                                    "wrong Fact (`sediment quarantine`)",
    "repository_identity_unresolved": "export Rollouts with the repository context they were derived with: "
                                      "`sediment derive`, then export --from that bundle, or export directly",
    "repository_mirror_identity_unresolved": "add the mirror for one repository: `sediment mirror add OWNER/REPO "
                                             "SOURCE --repository-id ID`",
    "repository_source_absent": "the Fact was captured after the repository context was read; derive again",
    "non_finite_number": "the recorded evidence holds NaN or Infinity, which JSON rows cannot carry; fix the capture "
                         "and re-ingest",
    "unrepresentable_unicode": "the recorded evidence holds lone surrogates, which JSON rows cannot carry; fix the "
                               "capture and re-ingest",
}


#: What would change an export that read no unit at all (reason ``None``): the evidence holds none.
NO_UNITS_REMEDY = ("ingest the Sessions' calls and their CI, add the repositories' mirrors and bind Sessions to "
                   "commits (`sediment hooks install`; `sediment derive --explain-attribution SESSION` says why a "
                   "Session bound none, and derive's `file_attribution.no_match` count the files of bound commits "
                   "no call of their Session matched), then derive again")


def dominant(tallies: Iterable[Mapping[str, int]]) -> tuple[str, int] | None:
    """The most counted reason over ``tallies`` (ties: the first in alphabetical order), or ``None``."""
    total: Counter[str] = Counter()
    for tally in tallies:
        total.update({reason: count for reason, count in tally.items() if count})
    if not total:
        return None
    reason, count = min(total.items(), key=lambda item: (-item[1], item[0]))
    return reason, count


def nothing_written(units_key: str, units: int, tallies: Iterable[Mapping[str, int]],
                    remedies: Mapping[str, str]) -> dict[str, Any] | None:
    """The summary's ``nothing_written`` of an export that published no row: ``units`` (the
    summary key of the unit count, e.g. ``rollouts``), ``read`` (that count), the dominant
    ``reason`` and its ``count``, and its ``remedy`` (``None`` if none is declared); ``None``
    when units were read and none was skipped. With no unit read at all the ``reason`` is ``None``
    and the remedy :data:`NO_UNITS_REMEDY`."""
    found = dominant(tallies)
    if found is None:
        if units:
            return None
        return {"units": units_key, "read": 0, "reason": None, "count": 0, "remedy": NO_UNITS_REMEDY}
    reason, count = found
    return {"units": units_key, "read": units, "reason": reason, "count": count, "remedy": remedies.get(reason)}


def hint_line(nothing: Mapping[str, Any]) -> str:
    """``nothing written: all 4 attributed completions skipped, mostly REASON (4): REMEDY``."""
    units, noun = nothing["read"], str(nothing["units"]).replace("_", " ")
    if nothing["reason"] is None:  # nothing read at all
        return f"nothing written: no {noun} in the evidence: {nothing['remedy']}"
    read = f"all {units} {noun} skipped" if units else f"no {noun} derived"
    remedy = nothing.get("remedy")
    line = f"nothing written: {read}, mostly {nothing['reason']} ({nothing['count']})"
    return line + (f": {remedy}" if remedy else "")
