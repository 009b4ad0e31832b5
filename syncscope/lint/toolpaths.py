"""Files of tools that are not serving: benchmarks and canaries (`[switches] tool-path-words`).

An engine ships tools next to its serving code: vLLM's `vllm/benchmarks/forward/` times a
model's forward for `vllm bench`, its `DecodeBenchConnector` fills the KV cache with dummy data
to benchmark decode, and SGLang's `srt/kv_canary/` perturbs and verifies KV-cache slots to catch
corruption, run only when an environment variable turns a canary mode on. They sync on purpose
(a benchmark reads timings back, a canary copies slots to the host to check them), every step
they run, but they do not run while serving. The path says so, as a platform's does
(branches.platform_path): a file whose path has a tool word is cold whole, the whole-program
pass does not enter its functions from a per-step root, and a call whose chain reaches its
sync only through such a file is cold too (the call into the tool is the tool's own choice
to sync, made where the tool is turned on).
"""

from __future__ import annotations

from .library import LibraryFacts, words


def tool_path(rel: str, library: LibraryFacts) -> str | None:
    """The tool word of a path (`decode_bench_connector.py` -> "bench") or its tool directory
    (`tools`), or None."""
    vocabulary = library.tool_path_words
    parts = rel.replace("\\", "/").split("/")
    for part in parts[:-1]:
        if part in library.tool_dirs:
            return part
    if not vocabulary:
        return None
    for part in parts:
        stem = part[:-3] if part.endswith(".py") else part
        for word in words(stem):
            if word in vocabulary:
                return word
    return None


def tool_in_chain(chain, library: LibraryFacts, cache: dict) -> str | None:
    """Why a finding's call chain goes cold: a step after the call site lies in a tool's file
    (the call site's own file is judged by the caller, as a whole file)."""
    for step in chain[1:]:
        word = cache.get(step.path)
        if word is None:
            word = cache[step.path] = tool_path(step.path, library) or ""
        if word:
            return f"reaches its sync only in a tool that is not serving (`{word}`: {step.path})"
    return None
