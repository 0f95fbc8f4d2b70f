"""The one family of expected failures, and the exit codes the CLI maps them to.

Anything raised from the library that is *not* a :class:`SedimentError` is a bug and
is shown with a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of the ``sediment`` command (documented in ``docs/cli.md``)."""

    OK = 0
    ERROR = 1  #: configuration, missing mirror root, invalid input values
    USAGE = 2  #: bad command line: missing or unknown ``--target``, unknown objective or recipe
    OUTPUT_DIRECTORY = 3  #: output directory claimed by another export, locked, or holding artifacts
    BUNDLE = 4  #: bundle missing, unreadable or invalid
    PLUGIN = 5  #: a plugin is broken: duplicate name, bad vocabulary, unknown hook
    VALIDATION = 6  #: ``sediment schema validate`` found invalid rows
    CAPACITY = 7  #: a byte budget was exceeded; nothing was published
    INPUT = 8  #: some input records failed to ingest (every other record was ingested)
    PROFILE = 9  #: a consumer profile refused the export as a whole (train/eval prompt overlap); nothing published
    EVIDENCE_GONE = 10  #: ``sediment explain``: the evidence behind the row no longer derives it (or none of it)
    DRIFT = 11  #: ``sediment explain --verify``: the row re-derives, but not byte-identical
    LEAKAGE = 12  #: ``report leakage --fail-on KIND`` found that kind of overlap (the report was still written)


class SedimentError(Exception):
    """An expected failure: shown to the user as one line, with :attr:`exit_code`."""

    exit_code: ExitCode = ExitCode.ERROR


class ConfigurationError(SedimentError):
    """A required setting is missing or invalid."""


class UsageError(SedimentError):
    """The command was called with missing or unknown arguments."""

    exit_code = ExitCode.USAGE


class UnknownTargetError(UsageError):
    """No installed export target has the requested name."""


class UnknownObjectiveError(UsageError):
    """No installed export objective (or recipe of it) has the requested name."""


class UnknownProfileError(UsageError):
    """No installed profile has the requested name, it is retired, or it adapts another target."""


class ProfileError(SedimentError):
    """A consumer profile refused the export as a whole; nothing was published."""

    exit_code = ExitCode.PROFILE


class OutputDirectoryError(SedimentError):
    """The output directory is claimed by another target, locked, or holds stale artifacts."""

    exit_code = ExitCode.OUTPUT_DIRECTORY


class BundleError(SedimentError):
    """A derived bundle is missing, unreadable or fails validation."""

    exit_code = ExitCode.BUNDLE


class PluginError(SedimentError):
    """A plugin broke the plugin contract (names, vocabularies, hook shape)."""

    exit_code = ExitCode.PLUGIN


class CapacityError(SedimentError):
    """A byte budget was exceeded; nothing was published."""

    exit_code = ExitCode.CAPACITY


class SchemaValidationError(SedimentError):
    """Rows failed validation against the published JSON Schemas."""

    exit_code = ExitCode.VALIDATION


class RowNotFoundError(UsageError):
    """``sediment explain`` was given a row that is not there: no such file, line or instance id."""


class EvidenceGoneError(SedimentError):
    """The evidence an exported row came from no longer derives it (quarantined, removed)."""

    exit_code = ExitCode.EVIDENCE_GONE


#: What pydantic puts before the text of a validator's ValueError or failed assert: noise to an
#: operator, who reads ``run_id: identifier must not be empty``.
_VALIDATOR_PREFIXES = ("Value error, ", "Assertion failed, ")


def validation_message(error: Mapping[str, object]) -> str:
    """One pydantic error's text as a problem line shows it: its ``msg``, without the prefix
    pydantic adds to a validator's own message (``Value error, ``). Every place that turns a
    ValidationError into a problem line or an error message reads the text through this."""
    message = str(error["msg"])
    for prefix in _VALIDATOR_PREFIXES:
        if message.startswith(prefix):
            return message[len(prefix):]
    return message
