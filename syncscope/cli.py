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

    # The order `syncscope --help` lists them in: the main job first.
    order = ["run", "lint", "gate", "oracle"]
    names = [m.name for m in pkgutil.iter_modules(commands.__path__)]
    for name in sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n)):
        module = importlib.import_module(f"syncscope.commands.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
