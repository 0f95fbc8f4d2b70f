"""The ``sediment`` command: a thin typer layer over the library.

Expected failures (:class:`sediment.errors.SedimentError`) are shown as one line with the
exit code of their class; anything else is a bug and keeps its traceback. Set
``SEDIMENT_RAISE_ERRORS=1`` to re-raise expected failures too. Messages are input: they are
printed literally, control characters written visibly (:mod:`sediment.cli.console`).
"""

from __future__ import annotations

import logging
import os

import typer

from sediment.cli import collector, console, help_text, interrupt
from sediment.cli.demo import demo
from sediment.cli.derive import derive
from sediment.cli.explain import explain
from sediment.cli.export import export_app
from sediment.cli.facts import facts, quarantine, release
from sediment.cli.hooks import hooks_app
from sediment.cli.ingest import ingest_app
from sediment.cli.library import library_app
from sediment.cli.mirror import mirror_app
from sediment.cli.policy import policy_app
from sediment.cli.report import report_app
from sediment.cli.schema import schema_app
from sediment.cli.serve import serve
from sediment.cli.targets import objectives, profiles, targets
from sediment.cli.trajectory import trajectory_app
from sediment.errors import SedimentError

app = typer.Typer(
    name="sediment",
    help=(
        "Turn recorded AI coding-agent sessions and the CI results of their commits into "
        "training rows whose every reward traces back to recorded CI attempts.\n\n"
        "Start with `sediment demo`, then `sediment objectives`, `sediment targets` and `sediment profiles` "
        "to see what you can export."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(demo)
app.add_typer(ingest_app, name="ingest")
app.add_typer(mirror_app, name="mirror")
app.add_typer(hooks_app, name="hooks")
app.command()(derive)
app.add_typer(policy_app, name="policy")
app.add_typer(export_app, name="export")
app.add_typer(report_app, name="report")
app.command()(explain)
app.command()(objectives)
app.command()(targets)
app.command()(profiles)
app.add_typer(schema_app, name="schema")
app.add_typer(library_app, name="library")
app.command()(facts)
app.command()(quarantine)
app.command()(release)
app.add_typer(trajectory_app, name="trajectory")
app.command()(serve)
help_text.summarize(app)


def _version(value: bool) -> None:
    if value:
        from sediment import __version__  # read from the installed metadata: only --version pays for it

        console.show(f"sediment {__version__}")
        raise typer.Exit()


class _OneLineFormatter(logging.Formatter):
    """Log messages carry input (paths, parse errors): each is one line, control characters visible."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        message = record.message
        record.message = console.visible(message)
        try:
            return super().formatMessage(record)
        finally:
            record.message = message


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log diagnostics to stderr."),
) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(interrupt.not_an_interrupt)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])


def main() -> None:
    """Console-script entry point with the error boundary. Ctrl-C exits 130 with the one line
    ``interrupted`` on stderr (every writer stages and publishes atomically, so nothing is left
    half-published; :mod:`sediment.cli.interrupt`)."""
    interrupt.install()  # an ignored SIGINT stays ignored
    collector.for_batch_work()  # see sediment.cli.collector
    try:
        _main()
    except SystemExit as exc:
        if interrupt.interrupted() and exc.code == 130:  # typer reports Ctrl-C as a bare exit code 130
            console.say("interrupted")
        raise


def _main() -> None:
    try:
        result = app(standalone_mode=False)
        if isinstance(result, int):
            raise SystemExit(result)
    except SedimentError as exc:
        if os.environ.get("SEDIMENT_RAISE_ERRORS"):
            raise
        if interrupt.interrupted():  # what Ctrl-C broke on its way (a worker it stopped): reported as the interrupt
            raise SystemExit(130) from None
        console.error(str(exc))
        raise SystemExit(int(exc.exit_code)) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:  # Ctrl-C outside the command (typer turns one inside it into exit code 130)
        interrupt.note()
        raise SystemExit(130) from None
    except typer.Abort:
        console.error("aborted")
        raise SystemExit(130) from None
    except typer.TyperException as exc:  # usage errors carry their own exit code
        # click lays out choices as "Choose from:\n\tA,\n\tB": on one line, as "Choose from: A, B"
        message = " ".join(part.strip() for part in exc.format_message().split("\n\t"))
        # typer coerces a value through pydantic, whose message starts "Value error, ": not ours to show
        message = message.replace(": Value error, ", ": ", 1)
        if message.strip():  # a bare group command (no_args_is_help) has printed its help: no empty error line
            console.error(message)
        raise SystemExit(exc.exit_code) from None
