"""``samedevice`` command line: one subcommand per module, imported only when used.

Every subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``. Errors the
user can fix are reported as one line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from samedevice import torch_support

# name -> (module, one-line help)
COMMANDS = {
    "explain": ("samedevice.explain.cli", "read a pasted error or traceback: template, causes, pages"),
    "cases": ("samedevice.verify.cli_cases", "list the cases and their metadata"),
    "verify": ("samedevice.verify.cli", "prove each case: broken fails as documented, fixed matches CPU"),
    "run": ("samedevice.sim.cli", "run a Python script on the simulated accelerator"),
    "snippet": ("samedevice.verify.cli_snippet", "print or write a case's broken or fixed program"),
    "notebook": ("samedevice.pages.cli", "generate (or check) the case notebooks from their files"),
    "check": ("samedevice.check.cli", "find device bugs in source files without running them"),
}
# the commands that run programs on the simulated GPU: they need a supported torch
NEEDS_SUPPORTED_TORCH = {"run", "verify", "notebook"}


class UserError(Exception):
    """A problem with the user's input; printed as one line, exit status 2."""


# Optional dependencies a command may need, and the line that installs them. `pip install
# samedevice` alone carries explain, cases, snippet and check (no torch); the rest need these.
_TORCH = torch_support.INSTALL
_PAGES = "pip install nbformat nbclient ipykernel"
OPTIONAL = {"torch": ("PyTorch", _TORCH), "numpy": ("NumPy", _TORCH),
            "nbformat": ("nbformat", _PAGES), "nbclient": ("nbclient", _PAGES),
            "ipykernel": ("ipykernel", _PAGES), "IPython": ("IPython", _PAGES)}


def missing_dependency(e: ModuleNotFoundError) -> str | None:
    """The one line to print when ``e`` is an optional dependency that is not installed (None
    for any other missing module: that is a bug, and keeps its traceback)."""
    top = (e.name or "").partition(".")[0]
    if top not in OPTIONAL:
        return None
    what, how = OPTIONAL[top]
    return f"needs {what}, which is not installed in this environment ({sys.executable}): {how}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("samedevice")
    except PackageNotFoundError:
        return "(not installed)"


def _tolerant_streams() -> None:
    """Output any encoding can carry: a redirected stdout on Windows is cp1252, a C locale is
    ASCII, and `≤` or a path with `é` crashed the command with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass


def _say(line: str) -> None:
    """One line on stderr, if there still is one (a closed stderr must not change the status)."""
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        pass


def report_case_problems(command: str, problems: Sequence[str]) -> None:
    """The case data a command left out, one line each on stderr: a broken case file costs its
    own case, not the command."""
    for problem in problems:
        _say(f"samedevice {command}: skipped broken case data: {problem}")


def drop_stdout() -> None:
    """After a reader went away: further output goes nowhere, not into a second BrokenPipeError
    at interpreter exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _tolerant_streams()
    parser = argparse.ArgumentParser(
        prog="samedevice", description="The field guide to PyTorch device errors."
    )
    parser.add_argument("--version", action="version", version=f"samedevice {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    if chosen not in (None, "explain"):  # explain never imports torch; its start-up stays lean
        from samedevice._quiet_numpy import quiet_missing_numpy

        quiet_missing_numpy()
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--docs-url", "--site-url", metavar="URL", dest="docs_url",
                       help="base of the site links printed (default: $SAMEDEVICE_DOCS_URL, else "
                            "the published site; http://127.0.0.1:8000/samedevice/ for a local make serve)")
        if name == chosen:  # import only the module that will run
            try:
                importlib.import_module(module).add_arguments(p)
            except ModuleNotFoundError as e:
                if (line := missing_dependency(e)) is None:
                    raise
                print(f"samedevice {name}: {line}", file=sys.stderr)
                return 2
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    if args.command in NEEDS_SUPPORTED_TORCH and (line := torch_support.problem()) is not None:
        print(f"samedevice {args.command}: {line}", file=sys.stderr)
        return 2
    if args.docs_url:  # through the environment, so programs run by `run` and `verify` see it
        os.environ["SAMEDEVICE_DOCS_URL"] = args.docs_url
    try:
        module = importlib.import_module(COMMANDS[args.command][0])
        return int(module.run(args) or 0)
    except ModuleNotFoundError as e:
        if (line := missing_dependency(e)) is None:
            raise
        print(f"samedevice {args.command}: {line}", file=sys.stderr)
        return 2
    except UserError as e:
        _say(f"samedevice {args.command}: {e}")
        return 2
    except KeyboardInterrupt:
        _say(f"samedevice {args.command}: interrupted")
        return 130
    except BrokenPipeError:
        drop_stdout()
        return 0
