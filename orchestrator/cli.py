"""The command line: a registry. Each command's options and output live in orchestrator/commands/."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import typer

from orchestrator.commands.calibrate import calibrate_command
from orchestrator.commands.corpus import corpus_import_command
from orchestrator.commands.demo import demo_command
from orchestrator.commands.diff import diff_command
from orchestrator.commands.evaluate import eval_command
from orchestrator.commands.feedback import feedback_command
from orchestrator.commands.gc import gc_command
from orchestrator.commands.history import history_command
from orchestrator.commands.kill import kill_command
from orchestrator.commands.launch import launch_command
from orchestrator.commands.ledger import ledger_rebuild_command
from orchestrator.commands.logs import logs_command
from orchestrator.commands.nudge import nudge_command
from orchestrator.commands.replay import replay_command
from orchestrator.commands.report import report_command
from orchestrator.commands.serve import serve_command
from orchestrator.commands.snooze import snooze_command
from orchestrator.commands.status import status_command
from orchestrator.commands.watch import watch_command
from orchestrator.infra import collector
from orchestrator.infra.errors import UserError

app = typer.Typer(
    help="Run coding agents on tickets in fresh clones; page once when a run spirals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
corpus_app = typer.Typer(help="Recorded runs: turn real agent logs into corpus cases.", no_args_is_help=True)
ledger_app = typer.Typer(help="The DuckDB run ledger: an index over the run folders.", no_args_is_help=True)

# in the order `--help` lists them
COMMANDS: dict[str, Callable[..., None]] = {
    "replay": replay_command,
    "eval": eval_command,
    "launch": launch_command,
    "status": status_command,
    "watch": watch_command,
    "nudge": nudge_command,
    "snooze": snooze_command,
    "kill": kill_command,
    "feedback": feedback_command,
    "gc": gc_command,
    "report": report_command,
    "diff": diff_command,
    "serve": serve_command,
    "logs": logs_command,
    "demo": demo_command,
    "history": history_command,
    "calibrate": calibrate_command,
}
for _name, _command in COMMANDS.items():
    app.command(_name)(_command)
corpus_app.command("import")(corpus_import_command)
ledger_app.command("rebuild")(ledger_rebuild_command)
app.add_typer(corpus_app, name="corpus")
app.add_typer(ledger_app, name="ledger")


def main() -> None:
    collector.for_the_process()
    for stream in (sys.stdout, sys.stderr):
        # a terminal or pipe that cannot show a character (LANG=C, PYTHONIOENCODING=ascii) gets a "?"
        # for it, not a traceback halfway through a table
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    try:
        app()
    except UserError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except OSError as exc:  # the state folder (or a file named on the command line) the system refused
        name = str(exc.filename or "")
        where = f"{name[:60]}{'...' if len(name) > 60 else ''}: " if name else ""
        sys.stderr.write(f"error: {where}{exc.strerror or exc}\n")
        sys.exit(2)
