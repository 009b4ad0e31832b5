"""GitHub Actions workflow commands (`::error file=...,line=...::message`): findings show up as
annotations on the pull request. Shared by the linter and the runtime reports; takes the same
result records as `sarif.py` (rule_id, message, level, site, fingerprint, optional column)."""

from __future__ import annotations

from typing import IO, Iterable

from syncscope.terminal import safe_text

_COMMANDS = {"error": "error", "warning": "warning", "note": "notice", "info": "notice"}


def _escape_data(text: str) -> str:
    # GitHub's own rules (actions/toolkit escapeData), after control characters other than
    # newlines are shown escaped: the log viewer would otherwise interpret ANSI sequences.
    text = safe_text(text, multiline=True)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(record) -> str:
    site = record.site
    command = _COMMANDS.get(record.level, "warning")
    props = [f"file={_escape_property(site.path)}", f"line={int(site.line)}"]
    column = getattr(record, "column", None)
    if column:
        props.append(f"col={int(column)}")
    props.append(f"title={_escape_property(record.rule_id)}")
    return f"::{command} {','.join(props)}::{_escape_data(f'{record.rule_id} {record.message}')}"


def write_github(results: Iterable, stream: IO[str]) -> None:
    for record in results:
        stream.write(format_github(record) + "\n")
