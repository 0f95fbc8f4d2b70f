"""Near-duplicate prompts and reference patches across splits, by MinHash LSH (rensa).

Each distinct text (prompts compared case folded and whitespace collapsed; patches as their
added and removed lines) is shingled into n-grams of tokens (words and runs of punctuation,
``Settings.shingle`` tokens; a shorter text is one shingle), hashed into a MinHash of
``num_perm`` permutations with a fixed seed, and inserted into an LSH index whose band count
is chosen for ``threshold``. Only the candidate pairs the index returns are compared (never
all pairs); a pair is a finding when its estimated Jaccard similarity is at least
``threshold``, its texts differ, and its rows stand on two splits. An identical prompt is
``exact_prompt``; an identical patch on two splits is a near-duplicate patch of similarity 1.0.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from rensa import RMinHash, RMinHashLSH

from sediment.reports.leakage import Finding, Settings, digest, row_order
from sediment.reports.leakage_rows import ExportedRow, normal_text

SEED = 23  #: MinHash seed: the same texts give the same signatures in every run
_TOKEN = re.compile(r"\w+|[^\w\s]+")  #: words and runs of punctuation (``//`` is not ``*``)


def bands_for(threshold: float, num_perm: int) -> int:
    """The band count ``b`` (a divisor of ``num_perm``, ``r = num_perm / b`` rows a band) whose
    LSH threshold ``(1/b) ** (1/r)`` is closest to ``threshold`` from below: recall first, as the
    similarity estimate then removes the false candidates."""
    best, best_gap = num_perm, float("inf")
    for b in range(1, num_perm + 1):
        if num_perm % b:
            continue
        r = num_perm // b
        point = (1 / b) ** (1 / r)
        if point <= threshold and threshold - point < best_gap:
            best, best_gap = b, threshold - point
    return best


def shingles(text: str, size: int) -> list[str]:
    words = _TOKEN.findall(text.casefold())
    if len(words) <= size:
        return [" ".join(words)] if words else []
    return sorted({" ".join(words[i:i + size]) for i in range(len(words) - size + 1)})


def patch_text(patch: str) -> str:
    """What a patch changes: its added and removed lines (headers and context left out)."""
    return "\n".join(line[1:] for line in patch.splitlines()
                     if line[:1] in "+-" and not line.startswith(("+++", "---")))


def near_duplicates(kind: str, rows: Sequence[ExportedRow], texts: dict[str, str], settings: Settings, *,
                    identical: bool = False) -> list[Finding]:
    """``texts``: the normalised text of each row's source (rows without one are left out).
    ``identical``: a text shared across splits is a finding too (similarity 1.0)."""
    groups: dict[str, list[ExportedRow]] = defaultdict(list)
    for row in sorted(rows, key=row_order):
        text = texts.get(row.source, "")
        if text:
            groups[text].append(row)
    distinct = sorted(groups)
    found = []
    if identical:
        found += [Finding(kind, digest(text), tuple(groups[text]), similarity=1.0) for text in distinct
                  if len({r.split for r in groups[text]}) > 1]
    lsh = RMinHashLSH(threshold=settings.threshold, num_perm=settings.num_perm,
                      num_bands=bands_for(settings.threshold, settings.num_perm))
    hashes = []
    for key, text in enumerate(distinct):
        minhash = RMinHash(num_perm=settings.num_perm, seed=SEED)
        minhash.update(shingles(text, settings.shingle))
        hashes.append(minhash)
        lsh.insert(key, minhash)
    for key, minhash in enumerate(hashes):
        for other in sorted(lsh.query(minhash)):
            if other <= key:
                continue
            a, b = groups[distinct[key]], groups[distinct[other]]
            if len({r.split for r in a} | {r.split for r in b}) < 2:
                continue
            similarity = round(float(minhash.jaccard(hashes[other])), 3)
            if similarity < settings.threshold:
                continue
            pair = sorted((digest(distinct[key]), digest(distinct[other])))
            found.append(Finding(kind, f"{pair[0]}~{pair[1]}", tuple(sorted({*a, *b}, key=row_order)),
                                 similarity=similarity))
    return found


def near_duplicate_findings(rows: Sequence[ExportedRow], settings: Settings) -> list[Finding]:
    prompts = {r.source: normal_text(r.prompt) for r in rows if r.prompt}
    patches = {r.source: normal_text(patch_text(r.patch)) for r in rows if r.patch}
    return (near_duplicates("near_duplicate_prompt", rows, prompts, settings)
            + near_duplicates("near_duplicate_patch", rows, patches, settings, identical=True))
