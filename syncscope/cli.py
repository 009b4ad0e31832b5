"""The `syncscope` command. Each subcommand lives in `syncscope/commands/<name>.py` and imports
what it needs inside its function body, so `syncscope lint` never pays for torch."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="syncscope",
    help="Find, time and prevent host<->GPU synchronizations in PyTorch inference code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    import importlib
    import pkgutil

    import syncscope.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"syncscope.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
