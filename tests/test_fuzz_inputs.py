"""Damaged input files (hypothesis): the report, baseline, lint-JSON and config readers, through
every command that reads them, keep the contract in tests/fuzz_support.py: a correct result or
exit 2 with one clear line; never a traceback, never a changed input. bench/fuzz.py runs the
same with many more cases."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests import fuzz_support as fz

FUZZ = settings(max_examples=25, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return fz.make_seeds(tmp_path_factory.mktemp("seeds"))


@pytest.fixture(scope="module")
def cli():
    return fz.runner_and_app()


def test_seed_files_are_read_cleanly(seeds, cli, tmp_path):
    runner, app = cli
    for kind in ("report", "report_bubbles", "baseline", "lint_json", "lint_baseline", "config"):
        codes = fz.outcome_counts(kind, fz.Damage("none", 0), seeds, tmp_path, runner, app)
        assert 2 not in codes, (kind, codes)  # undamaged: every command gives a result


@pytest.mark.parametrize("kind", ["report", "report_bubbles", "baseline", "lint_json", "lint_baseline", "config"])
def test_damaged_files_keep_the_contract(seeds, cli, tmp_path, kind):
    runner, app = cli

    @FUZZ
    @given(damage=fz.damages(fz.JSON_DAMAGE + fz.BUBBLE_DAMAGE if kind == "report_bubbles" else fz.JSON_DAMAGE))
    def check(damage):
        fz.outcome_counts(kind, damage, seeds, tmp_path, runner, app)

    check()


@pytest.mark.parametrize("how", ["truncate", "bad_utf8", "wrong_type", "drop", "huge", "bytes"])
def test_runtime_allow_config_is_a_clear_error_or_rules(seeds, tmp_path, how):
    from syncscope.runtime import config

    @FUZZ
    @given(damage=fz.damages([how]))
    def check(damage):
        (tmp_path / "pyproject.toml").write_bytes(damage.apply(seeds["config"].read_bytes()))
        try:
            rules = config.load_allow_rules(str(tmp_path))
        except config.ConfigError as exc:
            assert "\n" not in str(exc)
        else:
            assert all(isinstance(r.path, str) for r in rules)

    check()


@pytest.mark.parametrize(
    "bubbles",
    [3.5, [], {"idle_ns": []}, {"idle_ns": {"sync": "1"}}, {"notes": "x"}, {"devices": [0, None]}, {"gaps": {}},
     {"gaps": [7]}, {"gaps": [{"start_ns": "a", "end_ns": 2}]}, {"gaps": [{"end_ns": 2}]}, {"gaps": [{"start_ns": 0, "end_ns": 1, "site": 99}]},
     {"window_ns": 10**400}, {"release_lag_ns": True}, {"mode": 1}],
    ids=lambda b: repr(b)[:40],
)
def test_a_damaged_bubble_window_is_one_clear_line(seeds, cli, tmp_path, bubbles):
    import json

    runner, app = cli
    data = json.loads(seeds["report_bubbles"].read_text())
    for key, value in (bubbles.items() if isinstance(bubbles, dict) else [(None, bubbles)]):
        if key is None:
            data["bubbles"] = value
        else:
            data["bubbles"][key] = value
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(data))
    for args in (["report", str(damaged)], ["export", str(damaged), "--format", "perfetto"]):
        assert fz.check_command(runner, app, args, [damaged]) == 2
        assert "bubbles" in runner.invoke(app, args).stderr


@pytest.mark.parametrize(
    "toml",
    ['tool = "x"', "[tool]\nsyncscope = 3", "[[tool.syncscope]]\nlint = {}", "[tool.syncscope]\nlint = [1, 2]",
     '[tool.syncscope.lint]\nselect = 3', '[tool.syncscope.lint]\nall-functions = "yes"', "[tool.syncscope.lint]\ncache-dir = []",
     "[tool.syncscope.lint]\nskip-functions = [1]", '[tool.syncscope.lint]\nper-file-ignores = { "tests/*" = 3 }',
     '[tool.syncscope.lint]\nper-file-ignores = { "tests/*" = { "a" = 1 } }', '[tool.syncscope.lint]\nper-file-ignores = "SYN2"',
     'lint = "x"', "lint = 1979-05-27"],
    ids=lambda t: t.replace("\n", " ")[:40],
)
def test_a_wrong_type_in_the_lint_config_is_one_clear_line(seeds, cli, tmp_path, toml):
    runner, app = cli
    config = tmp_path / "pyproject.toml"
    config.write_text(toml + "\n")
    for args in (["lint", "--no-cache", "--config", str(config), str(seeds["source"])],
                 ["lint", "--no-cache", "--output-format", "json", "--config", str(config), str(seeds["source"])]):
        assert fz.check_command(runner, app, args, [config]) == 2
        assert "must be" in runner.invoke(app, args).stderr


@pytest.mark.parametrize("field,value", [("host", [1, "a"]), ("created", 3.5), ("rank", "0"), ("pid", "7"),
                                         ("combined_from", [{"pid": 1, "host": {}}]), ("combined_from", [{"pid": 1, "report": 2}])])
def test_a_damaged_process_identity_is_one_clear_line(seeds, cli, tmp_path, field, value):
    # combine keys, de-duplicates and sorts on (host, pid, created, rank): a list there was a
    # TypeError traceback (found by bench/fuzz.py --inputs 6000 --seed 23)
    import json

    runner, app = cli
    data = json.loads(seeds["report"].read_text())
    data[field] = value
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(data))
    for args in (["combine", str(damaged), str(seeds["report2"]), "-o", str(tmp_path / "out.json")], ["report", str(damaged)]):
        assert fz.check_command(runner, app, args, [damaged]) == 2
