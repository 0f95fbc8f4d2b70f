"""The background side of the receiver: spooled deliveries become Facts, pushes refresh mirrors.

One ingest thread owns the fact store. It drains the spool in arrival order (at start-up that
includes every delivery a previous process acknowledged but did not finish), translates each
delivery, appends its Facts and marks it done. A store that cannot be written (down, full)
leaves the delivery pending and is tried again after :data:`RETRY_SECONDS`; a delivery the
translators refuse (malformed for its route) is moved to ``refused/`` with the reason and
logged, and so is one a translator fails on (a bug: logged with its traceback, the worker goes
on); a delivery of several records some of which are refused has its good records stored
and is kept in ``refused/`` with the refused ones named (``[INDEX]: field: problem``). After a
stored Push, the pushed repository's mirror (when there is one) is fetched
and its new note edges stored, in a second thread so ingest never waits for git.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import ValidationError

from sediment.errors import SedimentError
from sediment.ingest import TranslationError
from sediment.ingest.git_notes import IDENTITY_TABLES
from sediment.ingest.reading.files import describe_refusal
from sediment.model.facts import FactModel, Push
from sediment.receiver.spool import Spool
from sediment.receiver.translators import Acting, translate_delivery

if TYPE_CHECKING:
    from sediment.store import FactStore

log = logging.getLogger(__name__)

RETRY_SECONDS: Final = 2.0


@dataclass
class WorkerStats:
    """What the worker did since it started (reported on the health endpoint)."""

    processed: int = 0
    refused: int = 0
    stored: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    problems: int = 0
    store_errors: int = 0
    mirror_refreshes: int = 0
    last_error: str | None = None


class IngestWorker:
    def __init__(self, spool: Spool, *, org_id: str, database_url: str, mirror_path: Path | None,
                 gitlab_host: str = "gitlab.com") -> None:
        self.spool = spool
        self.org_id = org_id
        self.acting = Acting(org_id=org_id, gitlab_host=gitlab_host)
        self.database_url = database_url
        self.stats = WorkerStats()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sediment-ingest", daemon=True)
        self._mirrors = MirrorRefresher(org_id=org_id, database_url=database_url, mirror_path=mirror_path,
                                        stats=self.stats)

    def start(self) -> None:
        self._mirrors.start()
        self._thread.start()

    def notify(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        self._mirrors.stop(timeout)

    def _run(self) -> None:
        from sediment.store import FactStore

        store: FactStore | None = None
        try:
            while not self._stop.is_set():
                self._wake.clear()
                if store is None:
                    try:
                        store = FactStore(self.database_url)
                    except SedimentError as exc:
                        self._store_failed(exc, "cannot open the fact store (retrying)")
                        self._wake.wait(RETRY_SECONDS)
                        continue
                if not self._drain(store):
                    self._wake.wait(RETRY_SECONDS)
                    continue
                self._wake.wait(1.0)
        finally:
            if store is not None:
                store.close()

    def _store_failed(self, exc: SedimentError, what: str) -> None:
        self.stats.store_errors += 1
        self.stats.last_error = str(exc)
        log.error("%s: %s", what, exc)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _drain(self, store: FactStore) -> bool:
        """Process every pending delivery; False when the store or disk failed and they must wait."""
        for key in self.spool.pending():
            if self._stop.is_set():
                return True
            try:
                if not self._process(store, key):
                    return False
            except OSError as exc:  # the spool's disk: the delivery stays pending
                self.stats.last_error = f"spool: {exc}"
                log.error("cannot move delivery %s through the spool (retrying): %s", key, exc)
                return False
            except Exception as exc:  # a bug in a translator: keep the delivery, go on with the others
                log.exception("delivery %s could not be processed (a bug; it is kept in refused/)", key)
                self.spool.mark_refused(key, f"internal error: {type(exc).__name__}: {exc}")
                self.stats.refused += 1
        return True

    def _process(self, store: FactStore, key: str) -> bool:
        try:
            delivery = self.spool.read(key)
        except FileNotFoundError:
            return True
        try:
            translations = translate_delivery(delivery, self.acting)
        except (TranslationError, ValidationError) as exc:
            reason = describe_refusal(exc)
            log.warning("refused delivery %s (%s): %s", key, delivery.route, reason)
            self.spool.mark_refused(key, reason)
            self.stats.refused += 1
            return True
        facts: list[FactModel] = []
        problems: list[str] = []
        for translation in translations:
            facts.extend(translation.facts)
            if translation.skipped:
                self.stats.skipped[translation.skipped] += 1
            self.stats.skipped.update(translation.skips)
            problems.extend(translation.problems)
        for problem in problems:
            log.warning("delivery %s (%s): %s", key, delivery.route, problem)
        self.stats.problems += len(problems)
        try:
            result = store.append(facts) if facts else None
        except SedimentError as exc:  # the store is down, full or read-only: keep the delivery
            self._store_failed(exc, f"cannot store delivery {key} yet (retrying)")
            return False
        if result is not None:
            self.stats.stored.update(result.stored)
            self.stats.duplicates.update(result.duplicates)
        if problems:  # the good records are stored; the delivery is kept with what was refused
            self.spool.mark_refused(key, "; ".join(problems))
            self.stats.refused += 1
        else:
            self.spool.mark_done(key)
        self.stats.processed += 1
        for fact in facts:
            if isinstance(fact, Push):
                self._mirrors.request(fact)
        if result is not None and any(count and table in IDENTITY_TABLES for table, count in result.stored.items()):
            self._mirrors.request(SETTLE)  # a legacy mirror of a name new Facts identify is keyed now
        return True


#: A refresher request: key legacy mirrors whose name an identified repository now holds.
SETTLE = "settle"


class MirrorRefresher:
    """Fetches a pushed repository's mirror and stores its new note edges, one repository at a time."""

    def __init__(self, *, org_id: str, database_url: str, mirror_path: Path | None, stats: WorkerStats) -> None:
        self.org_id = org_id
        self.database_url = database_url
        self.mirror_path = mirror_path
        self.stats = stats
        self._queue: queue.Queue[Push | str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="sediment-mirrors", daemon=True)

    def start(self) -> None:
        if self.mirror_path is not None:
            self._thread.start()

    def request(self, push: Push | str) -> None:
        """Refresh the mirror of a pushed repository, or (:data:`SETTLE`) key the legacy mirrors
        whose name one identified repository now holds."""
        if self.mirror_path is not None:
            self._queue.put(push)

    def stop(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            push = self._queue.get()
            if push is None:
                return
            if isinstance(push, str):
                try:
                    self._settle()
                except SedimentError as exc:
                    log.warning("keying legacy mirrors by their repository identity failed: %s", exc)
                continue
            try:
                self._refresh(push)
            except SedimentError as exc:
                log.warning("mirror refresh of %s after a push failed: %s", push.repo, exc)

    def _settle(self) -> None:
        from sediment.git.mirror_root import MirrorRoot
        from sediment.git.repositories import describe
        from sediment.ingest.git_notes import settle_legacy_mirrors
        from sediment.store import FactStore

        assert self.mirror_path is not None
        if not self.mirror_path.is_dir():
            return
        store = FactStore(self.database_url)
        try:
            settlement = settle_legacy_mirrors(MirrorRoot(self.mirror_path), store, self.org_id, datetime.now(UTC))
        finally:
            store.close()
        for settled in settlement.settled:
            log.info("keyed the mirror of %s by %s: %s", settled.repo, describe(settled.identity),
                     settled.observed.counts())

    def _refresh(self, push: Push) -> None:
        from sediment.git.mirror_root import MirrorRoot
        from sediment.git.repositories import RepositoryContext
        from sediment.ingest.git_notes import observe_notes
        from sediment.model.facts import RepositoryIdentity
        from sediment.store import FactStore

        assert self.mirror_path is not None
        if not self.mirror_path.is_dir():
            return
        mirrors = MirrorRoot(self.mirror_path)
        store = FactStore(self.database_url)
        try:
            identity = None
            if push.repository_id is not None and push.repository_provider is not None:
                identity = RepositoryIdentity(provider=push.repository_provider, host=push.repository_host or "",
                                              repository_id=push.repository_id)
            found = mirrors.locate(self.org_id, push.repo, identity, RepositoryContext.from_store(store, self.org_id))
            if found is None and identity is not None:
                found = mirrors.locate(self.org_id, push.repo)
            if found is None:
                log.info("no mirror of %s to refresh after its push", push.repo)
                return
            mirrors.fetch(self.org_id, found.repo, found.identity)
            result = observe_notes(mirrors, store, self.org_id, found.repo, datetime.now(UTC), found.identity)
            for problem in result.problems:
                log.warning("mirror %s: %s", found.repo, problem)
            self.stats.mirror_refreshes += 1
            log.info("refreshed the mirror of %s: %s", found.repo, result.counts())
        finally:
            store.close()
