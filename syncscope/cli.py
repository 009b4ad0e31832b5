"""The `syncscope` command. Each subcommand lives in `syncscope/commands/<name>.py` and imports
what it needs inside its function body, so `syncscope lint` never pays for torch.

`syncscope lint` does not pay for typer either: it runs on every commit, so `main` hands it to
its own argparse front end before typer is imported (commands/lint.py says why). The typer
application is built on first use: `main` for the other commands, `from syncscope.cli import app`
for tests and embedders."""

from __future__ import annotations

import functools
import sys


@functools.cache
def build_app():
    import importlib
    import pkgutil

    import typer

    import syncscope.commands as commands

    app = typer.Typer(
        name="syncscope",
        help="Find, time and prevent host<->GPU synchronizations in PyTorch inference code.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    # The order `syncscope --help` lists them in: the main job first.
    order = ["run", "lint", "gate", "oracle"]
    names = [m.name for m in pkgutil.iter_modules(commands.__path__)]
    for name in sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n)):
        module = importlib.import_module(f"syncscope.commands.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
    return app


def __getattr__(name: str):
    if name == "app":  # `from syncscope.cli import app`
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    if sys.argv[1:2] == ["lint"]:
        from syncscope.commands.lint import main as lint_main

        sys.exit(lint_main(sys.argv[2:]))
    build_app()()


if __name__ == "__main__":
    main()
