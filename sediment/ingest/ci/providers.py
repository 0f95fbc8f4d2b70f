"""The one table of webhook providers: what the CLI, the receiver and the webhook registry know
about each.

A :class:`WebhookProvider` holds the facts about one provider's deliveries: the request header
whose value names the event, the header naming the delivery (kept as the Facts'
``source_event_id``), the headers a redelivery repeats, where its translator lives, and the
first paragraph of its ``sediment ingest NAME --help``. ``sediment ingest`` builds its
provider commands' help from it, the receiver (``sediment serve``) its forge routes and the
headers it reads, and :mod:`sediment.ingest.ci.webhooks` its dispatch. Adding a provider is a
row here, its translator module, its signature check in the receiver and its docs
(docs/ci-providers.md, docs/receiver.md).

Header names are written as the providers document them; HTTP header names are
case-insensitive, so the receiver compares them lower-cased.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class WebhookProvider:
    """One webhook provider (or capture source) whose deliveries become Facts."""

    name: str
    """The provider's name: its ``sediment ingest`` command and its receiver route ``/ingest/NAME``."""
    title: str
    """How the provider names itself in prose."""
    translator: str
    """``module:function`` of the translator a delivery's payload goes through."""
    event_header: str | None = None
    """The header whose value names the event; None: the payload alone says what it is."""
    delivery_header: str | None = None
    """The header naming the delivery, kept as the Facts' ``source_event_id``; None: not kept."""
    redelivery_headers: tuple[str, ...] = ()
    """The headers naming a delivery that a redelivery repeats, in order (first present wins)."""
    summary: str | None = None
    """The first paragraph of ``sediment ingest NAME --help``; None: no command of its own."""

    @property
    def forge(self) -> bool:
        """Whether the provider sends signed webhooks that name their event in a header."""
        return self.event_header is not None

    def load(self) -> Callable[..., Any]:
        """The translator (imported on first use, so reading the table imports nothing heavy)."""
        module, _, function = self.translator.partition(":")
        translate: Callable[..., Any] = getattr(importlib.import_module(module), function)
        return translate


TABLE: Final[tuple[WebhookProvider, ...]] = (
    WebhookProvider(
        "github", "GitHub", "sediment.ingest.ci.github:translate_github",
        event_header="X-GitHub-Event", delivery_header="X-GitHub-Delivery",
        redelivery_headers=("X-GitHub-Delivery",),
        summary="GitHub webhook deliveries: workflow_run, workflow_job, check_run, check_suite, push, "
                "pull_request, repository (others are skipped)."),
    WebhookProvider(
        "gitlab", "GitLab", "sediment.ingest.ci.gitlab:translate_gitlab",
        event_header="X-Gitlab-Event", delivery_header="X-Gitlab-Event-UUID",
        redelivery_headers=("Idempotency-Key", "X-Gitlab-Event-UUID"),
        summary="GitLab webhooks: Pipeline Hook and Job Hook deliveries."),
    WebhookProvider(
        "circleci", "CircleCI", "sediment.ingest.ci.circleci:translate_circleci",
        event_header="circleci-event-type",
        summary="CircleCI webhooks: workflow-completed and job-completed deliveries. A rerun is a new workflow of "
                "the same pipeline and name; CI resolution judges them as one lineage, ordered by "
                "workflow.created_at (docs/ci-providers.md, Re-runs)."),
    WebhookProvider(
        "buildkite", "Buildkite", "sediment.ingest.ci.buildkite:translate_buildkite",
        event_header="X-Buildkite-Event",
        summary="Buildkite webhooks: build.finished and job.finished deliveries (other build.* and job.* events "
                "until final). A build that finishes again after a job retry is stored again, keyed by "
                "build.finished_at; a rebuild joins the lineage of the build it rebuilt (docs/ci-providers.md, "
                "Re-runs)."),
    WebhookProvider(
        "ci", "vendor-neutral CI", "sediment.ingest.ci.neutral:translate_ci",
        summary="Vendor-neutral CI outcomes (GitLab, CircleCI, Buildkite, Jenkins senders)."),
    WebhookProvider("litellm", "LiteLLM", "sediment.ingest.calls:translate_call"),
)
"""Every provider, in the order ``sediment ingest --help`` and the receiver list them."""

PROVIDERS: Final[dict[str, WebhookProvider]] = {provider.name: provider for provider in TABLE}
"""Provider name → its row."""

FORGES: Final[tuple[WebhookProvider, ...]] = tuple(provider for provider in TABLE if provider.forge)
"""The providers whose signed webhooks name their event in a header (a receiver route each)."""


def provider(name: str) -> WebhookProvider:
    """The row of ``name``; ValueError naming the known providers for any other."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise ValueError(f"unknown webhook provider {name!r}; known: {', '.join(PROVIDERS)}") from None
