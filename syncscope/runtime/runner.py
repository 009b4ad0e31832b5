"""Run a script or a module exactly as `python script.py` / `python -m module` would (a
directory or zip archive with a `__main__.py` too).

Same `sys.argv`, a fresh `__main__`, the same `sys.path[0]`; the program's exit status comes back
as an `Outcome` instead of ending the process, so the caller can still write its report; a
traceback is printed as Python prints it, with syncscope's own frames taken out.
"""

from __future__ import annotations

import io
import os
import runpy
import signal
import sys
import traceback
import types
import zipfile
from dataclasses import dataclass

from syncscope.runtime import signal_backstop

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class TargetNotFound(Exception):
    """The script or module to run does not exist (Python's own 'can't open file' case)."""


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives, so the report is written on the way out."""


@dataclass
class Outcome:
    exit_code: int
    # How it ended: "ok", "exit" (sys.exit), "exception", "interrupted" (SIGINT), "terminated"
    # (SIGTERM); report/status.py turns it into the report's status (an `ending` there).
    status: str
    error: str | None = None
    signal: int | None = None  # re-raise this signal after cleanup, as Python's own exit would


def check_target(target: str, module: bool) -> None:
    if module:
        import importlib.util

        try:
            found = importlib.util.find_spec(target)
        except (ImportError, ValueError) as exc:
            raise TargetNotFound(f"No module named {target!r} ({exc})") from None
        if found is None:
            raise TargetNotFound(f"No module named {target!r}")
    elif not os.path.exists(target):
        raise TargetNotFound(f"can't open file {os.path.abspath(target)!r}: [Errno 2] No such file or directory")


def _run_path(path: str) -> None:
    path = os.path.abspath(path)  # Python >= 3.9 gives scripts an absolute __file__ and code path
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__loader__ = None
    main.__spec__ = None
    main.__cached__ = None
    sys.modules["__main__"] = main
    with io.open_code(path) as fh:
        source = fh.read()
    code = compile(source, path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _strip_own_frames(exc: BaseException) -> None:
    """Remove syncscope's frames from the traceback (and those of chained exceptions)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        kept = []
        while tb is not None:
            if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR) and tb.tb_frame.f_code.co_filename != runpy.__file__:
                kept.append(tb)
            tb = tb.tb_next
        for current, following in zip(kept, kept[1:] + [None]):
            current.tb_next = following
        exc.__traceback__ = kept[0] if kept else None
        exc = exc.__cause__ or exc.__context__


def _exit_code(code: object) -> tuple[int, str | None]:
    if code is None:
        return 0, None
    if isinstance(code, int):
        return code, None
    return 1, str(code)  # sys.exit("message") prints the message and exits 1


def run_target(target: str, args: list[str], *, module: bool = False, on_sigterm_now=None) -> Outcome:
    """Run the program in this process. Never raises for the program's own errors.
    `on_sigterm_now(signum)`, when given, handles SIGTERM where it arrives (write the report and
    die of the signal, as plain python dies without running `finally` blocks); without it SIGTERM
    unwinds the program as a `Terminated` exception."""
    check_target(target, module)
    saved_argv, saved_path0, saved_main = sys.argv[:], sys.path[0], sys.modules.get("__main__")
    previous_term = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        if on_sigterm_now is not None:
            on_sigterm_now(signum)
        raise Terminated()

    in_main_thread = True
    try:
        if on_sigterm_now is not None:  # it ends the process: watched (runtime/signal_backstop.py)
            signal_backstop.install(signal.SIGTERM, on_sigterm, on_stuck=on_sigterm_now)
        else:
            signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread: leave SIGTERM alone
        in_main_thread = False
    try:
        if module:
            sys.argv = [target] + list(args)  # runpy replaces argv[0] with the module's file
            sys.path[0] = os.getcwd()
            runpy._run_module_as_main(target, alter_argv=True)  # what `python -m` itself calls
        elif os.path.isdir(target) or zipfile.is_zipfile(target):
            # `python dir_or_zip`: its __main__ module, found on sys.path[0] (or Python's own
            # "can't find '__main__' module" exit)
            sys.argv = [target] + list(args)
            sys.path[0] = os.path.abspath(target)
            runpy._run_module_as_main("__main__", alter_argv=False)
        else:
            sys.argv = [target] + list(args)
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            _run_path(target)
        return Outcome(0, "ok")
    except SystemExit as exc:
        code, message = _exit_code(exc.code)
        if message is not None:
            print(message, file=sys.stderr)
        return Outcome(code, "exit" if code else "ok", message)  # the report keeps sys.exit("why")
    except KeyboardInterrupt as exc:
        _strip_own_frames(exc)
        traceback.print_exception(exc)
        return Outcome(130, "interrupted", "KeyboardInterrupt", signal=signal.SIGINT)
    except Terminated:
        return Outcome(143, "terminated", "SIGTERM", signal=signal.SIGTERM)
    except BaseException as exc:  # the program's own error: print it as Python would
        _strip_own_frames(exc)
        traceback.print_exception(exc)
        return Outcome(1, "exception", f"{type(exc).__name__}: {exc}")
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_term)
        sys.argv = saved_argv
        sys.path[0] = saved_path0
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def exit_like_python(outcome: Outcome) -> None:
    """End the process as Python would have for this outcome (a signal death for SIGINT/SIGTERM)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if outcome.signal is not None:
        signal.signal(outcome.signal, signal.SIG_DFL)
        os.kill(os.getpid(), outcome.signal)
    raise SystemExit(outcome.exit_code)
