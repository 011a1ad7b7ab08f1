"""The ``tutormetrics`` command line: score → validate → heatmap, plus psychometrics.

Exit codes: 0 success; 1 completed but a gate the user asked for failed (``--strict``); 2 bad input,
usage, configuration, IO or model-load error. No traceback reaches the user unless ``--debug``
(or ``TUTORMETRICS_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

import typer

from tutormetrics import __version__
from tutormetrics.commands.lazy import LazyCommand, lazy_group
from tutormetrics.encoders.config import ensure_offline
from tutormetrics.errors import TutorMetricsError

EXIT_OK, EXIT_GATE, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
INTERRUPTED = "interrupted; rerun the same command to resume (finished chunks are kept and verified)"

#: Every command, in ``--help`` order: the module under ``tutormetrics.commands`` whose ``register`` adds it, and the
#: function (or ``typer.Typer``) whose help it shows. A module is imported only when one of its commands runs or
#: shows its own ``--help``; ``tutormetrics --help`` reads the help from the source (``docs/development.md#command-loading``).
COMMANDS = {
    "score": LazyCommand("score", "score"),
    "metrics": LazyCommand("metrics", "metrics"),
    "validate": LazyCommand("validity", "validate"),
    "heatmap": LazyCommand("validity", "heatmap"),
    "theta": LazyCommand("theta", "theta"),
    "agree": LazyCommand("agree", "agree"),
    "compare": LazyCommand("compare", "compare"),
    "summarize": LazyCommand("summarize", "summarize"),
    "aggregate": LazyCommand("studies", "aggregate"),
    "variability": LazyCommand("studies", "variability"),
    "run": LazyCommand("run", "run"),
    "report": LazyCommand("report", "report"),
    "convert": LazyCommand("convert", "convert"),
    "predict": LazyCommand("predict", "predict"),
    "ppi": LazyCommand("ppi", "ppi"),
    "encoder": LazyCommand("encoder", "encoder_app"),
}

app = typer.Typer(
    cls=lazy_group(COMMANDS),
    name="tutormetrics",
    help="Reference-free metrics for LLM tutor replies, validated against expert rubric ratings and Rasch theta.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tutormetrics {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks for errors."),
) -> None:
    """Score exchanges, validate metrics against ratings and theta, and draw heatmaps."""


def _dispatch(args: list[str]) -> None:
    """Build the click command tree once, refuse a single-value option given twice (exit 2 on every command,
    ``docs/guide/paper.md#repeated``), then run the command."""
    if not isinstance(app, typer.Typer):  # a stand-in app (tests of the last line of defence)
        app(args=args, prog_name="tutormetrics", standalone_mode=True)
        return
    from tutormetrics.commands.repeated_options import check_repeated_options

    command = typer.main.get_command(app)
    check_repeated_options(command, args)
    command.main(args=args, prog_name="tutormetrics", standalone_mode=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (and exits with it when run as a script)."""
    ensure_offline()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("TUTORMETRICS_DEBUG") == "1"
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning  # a warning is a message for people, not a code location
            _dispatch(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_ERROR)
        if code == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into a silent exit 130
            print(INTERRUPTED, file=sys.stderr)
        return _finish(code, argv)
    except TutorMetricsError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return _finish(exc.exit_code, argv)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return _finish(EXIT_INTERRUPTED, argv)
    except OSError as exc:  # a full disk or a refused write deep inside a command: plain words, no errno dump
        if debug:
            raise
        print(f"error: {_os_error(exc)}", file=sys.stderr)
        return _finish(EXIT_ERROR, argv)
    except MemoryError:
        if debug:
            raise
        print(f"error: out of memory\n  hint: {memory_hint(args)}", file=sys.stderr)
        return _finish(EXIT_ERROR, argv)
    except Exception as exc:
        if debug:
            raise
        print(f"error: {type(exc).__name__}: {exc}\n  hint: rerun with --debug for the full traceback", file=sys.stderr)
        return _finish(EXIT_ERROR, argv)
    return _finish(EXIT_OK, argv)


#: What lowers the memory of each command, in its own options; others get the default.
_MEMORY_HINTS = {
    "score": "lower --batch-size or --chunk-size (or --cache-mb)",
    "run": "lower --batch-size or --chunk-size (or --cache-mb)",
    "theta": "fit fewer ratings at a time (e.g. one criterion or a subset of raters per file), or leave out --effects",
}


def memory_hint(args: Sequence[str]) -> str:
    """The hint after ``out of memory``: only options the command given in ``args`` has.

    Example:
        >>> memory_hint(["theta", "r.csv", "-o", "t.csv"]).startswith("fit fewer ratings")
        True
    """
    command = next((a for a in args if not a.startswith("-")), "")
    return _MEMORY_HINTS.get(command, "free some memory or give a smaller input")


def _os_error(exc: OSError) -> str:
    """An OSError in words with a hint: ``no space left on device writing out/m.csv``."""
    import errno

    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno == errno.ENOSPC:
        return f"no space left on device{where}\n  hint: free some space or write to another folder; rerun the same command to resume"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"permission denied{where}\n  hint: choose files and folders you can write to"
    return f"{exc.strerror or exc}{where}\n  hint: rerun with --debug for the full traceback"


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: object = None, line: str | None = None) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _finish(code: int, argv: Sequence[str] | None) -> int:
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
