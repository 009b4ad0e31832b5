"""Read the `# expect:` annotations of the catalog: {line: kind or None}."""

import re
from pathlib import Path

CATALOG = Path(__file__).with_name("sync_catalog.py")
_EXPECT = re.compile(r"#\s*expect:\s*([a-z0-9_]+)\s*$")


def expectations(path: Path = CATALOG) -> dict[int, str | None]:
    found = {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = _EXPECT.search(text)
        if match:
            found[number] = None if match.group(1) == "none" else match.group(1)
    return found
