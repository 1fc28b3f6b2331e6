"""The hostile-input suite: every case of every ``hostile_cases_*.py`` through the real ``ansible-playbook``.

Each area lists its cases (tests/integration/hostile.py's :class:`Hostile`) in a module-level ``CASES``
of ``tests/integration/hostile_cases_<area>.py``; this runner collects every such file (imported by
path, so a new area's file is picked up without changing anything here), runs each case on localhost
as one task of a generated playbook (its module, its arguments never templated; two playbooks of half the
cases each, at once), and asserts what hostile.py lists: the expected outcome, every expected
substring in the message (or in the warnings for an ``ok`` outcome), no traceback, no secret anywhere
in the run's stdout or stderr, nothing written, and a bounded run time (the task's own duration).

In a case's ``args`` (and ``writes``), ``{endpoint}`` is the URL of the streaming simulator
(tests/utils/fake_vllm.py) started for the case with its ``server`` behaviour (a healthy simulator
when ``server`` is None), and ``{tmp}`` a fresh empty directory of the case.

The suite's size (cases per module, faulty-server behaviours) is printed in the terminal summary.
"""
from __future__ import annotations

import collections
import concurrent.futures
import datetime
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import BIN, TOP, _ansible_env

sys.path.insert(0, str(TOP / "tests" / "utils"))
from fake_vllm import FakeVLLM, behaviour  # noqa: E402  pylint: disable=wrong-import-position

HERE = Path(__file__).resolve().parent
#: Seconds ansible itself may need on top of a case's max_seconds before the run is killed.
KILL_GRACE = 60
#: Text of an uncaught exception. (ansible-core 2.19 gives every failure an "exception" field that says
#: "(traceback unavailable)" unless tracebacks are enabled: that is not a crash.)
TRACEBACK_MARKERS = ("Traceback (most recent call last)", "MODULE FAILURE", "module_stderr")


def _load_cases():
    cases = []
    for path in sorted(HERE.glob("hostile_cases_*.py")):
        spec = importlib.util.spec_from_file_location(f"_hostile_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for case in module.CASES:
            cases.append((path.name, case))
    return cases


CASES = _load_cases()


def suite_summary(cases=None):
    """'hostile-input suite: N cases (module: n, ...; S faulty-server behaviours)'."""
    cases = [case for _file, case in (CASES if cases is None else cases)]
    per_module = collections.Counter(case.module for case in cases)
    servers = sorted({case.server for case in cases if case.server})
    parts = ", ".join(f"{module}: {count}" for module, count in sorted(per_module.items()))
    return (f"hostile-input suite: {len(cases)} cases ({parts}); {len(servers)} faulty-server behaviours "
            f"({len(cases) - sum(1 for c in cases if c.server)} hostile inputs, "
            f"{sum(1 for c in cases if c.server)} runs against faulty servers)")


class _Summary:
    """Prints the suite's size at the end of the session (visible with or without -s)."""

    def __init__(self):
        self.ran = collections.Counter()

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_sep("-", "hostile-input suite")
        terminalreporter.write_line(suite_summary())
        if self.ran:
            terminalreporter.write_line("run in this session: " + ", ".join(
                f"{module}: {count}" for module, count in sorted(self.ran.items())))


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    plugin = _Summary()
    request.config.pluginmanager.register(plugin, "hostile-input-summary")
    yield plugin


def _substitute(value, names):
    if isinstance(value, str):
        for key, replacement in names.items():
            value = value.replace("{%s}" % key, replacement)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, names) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_substitute(v, names) for v in value]
    return value


class _Unsafe(str):
    """A string the playbook marks ``!unsafe``: the module gets it as it is, never templated."""


def _unsafe_dumper():
    dumper = type("_HostileDumper", (yaml.SafeDumper,), {})
    dumper.add_representer(_Unsafe, lambda d, v: d.represent_scalar("!unsafe", str(v), style='"'))
    return dumper


def _mark_unsafe(value):
    if isinstance(value, str):
        return _Unsafe(value)
    if isinstance(value, dict):
        return {k: _mark_unsafe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mark_unsafe(v) for v in value]
    return value


def _seconds(task):
    stamps = task["task"]["duration"]
    start, end = (datetime.datetime.fromisoformat(stamps[key].replace("Z", "+00:00")) for key in ("start", "end"))
    return (end - start).total_seconds()


def run_batch(cases, tmp_path):
    """Run ``cases`` as the tasks of one ansible-playbook (localhost, each task its case's module and arguments,
    ``ignore_errors``, a ``timeout`` of max_seconds + KILL_GRACE). One ansible start-up for the batch instead of one
    per case: the module runs exactly as before (the task's arguments, the same interpreter), without the ~1 s of
    the ``ansible`` CLI's own start. Returns {case id: (result dict, output, seconds, the path it must not write)}:
    the output is the case's own result and the run's stderr, with the secrets of the case found anywhere in the whole
    run's output appended (they fail that case, and that case only); ``seconds`` the task's own duration (the json
    callback's)."""
    sims, tasks, writes = {}, [], {}
    try:
        for case in cases:
            if case.server or "{endpoint}" in json.dumps(case.args):
                sims[case.id] = FakeVLLM(ttft=0.001, itl=0.001,
                                         **(behaviour(case.server) if case.server else {})).start()
            case_tmp = tmp_path / case.id
            case_tmp.mkdir()
            names = {"endpoint": sims[case.id].url if case.id in sims else "http://127.0.0.1:9", "tmp": str(case_tmp)}
            writes[case.id] = _substitute(case.writes, names) if case.writes else None
            tasks.append({"name": case.id, case.module: _mark_unsafe(_substitute(case.args, names)),
                          "ignore_errors": True, "timeout": int(case.max_seconds + KILL_GRACE)})
        playbook = tmp_path / "hostile.yml"
        playbook.write_text(yaml.dump([{"hosts": "localhost", "connection": "local", "gather_facts": False,
                                        "tasks": tasks}], Dumper=_unsafe_dumper(), sort_keys=False))
        env = dict(_ansible_env(), ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
        bound = sum(case.max_seconds for case in cases) + KILL_GRACE
        try:
            proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(playbook)], cwd=TOP, env=env,
                                  text=True, capture_output=True, check=False, timeout=bound)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"the batch did not end within {bound} s (a module hangs): "
                                 f"{(exc.stdout or '')[-2000:]}") from None
    finally:
        for sim in sims.values():
            sim.stop()
    try:
        ran = json.loads(proc.stdout)["plays"][0]["tasks"]
    except (ValueError, KeyError, IndexError) as exc:
        raise AssertionError(f"no JSON result from ansible-playbook ({exc}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}") from exc
    whole = proc.stdout + "\n" + proc.stderr
    runs = {}
    for task in ran:
        case_id = task["task"]["name"]
        result = task["hosts"]["localhost"]
        runs[case_id] = (result, json.dumps(result, default=str) + "\n" + proc.stderr, _seconds(task), writes[case_id])
    missing = [case.id for case in cases if case.id not in runs]
    assert not missing, f"cases without a result (the run stopped?): {missing}\n{proc.stderr[-3000:]}"
    for case in cases:
        leaked = [secret for secret in case.secrets if secret in whole]
        if leaked:
            result, output, seconds, written = runs[case.id]
            runs[case.id] = (result, output + "\n" + "\n".join(leaked), seconds, written)
    return runs


#: Batches run at a time (one ansible-playbook each; some cases also run a simulator thread here): two on a
#: 2-core machine. The time bound is still checked per case, against its own task's duration.
PARALLEL = 2


@pytest.fixture(scope="module")
def _runs(request, tmp_path_factory):
    """Every selected case, in PARALLEL batches, before the first test asserts: {id: (result...) or exception}."""
    selected = {item.callspec.params["case"].id for item in request.session.items
                if getattr(item, "callspec", None) and "case" in item.callspec.params
                and item.module is request.module}
    cases = [case for _source, case in CASES if case.id in selected]
    batches = [cases[start::PARALLEL] for start in range(PARALLEL)]

    def one(batch):
        try:
            return run_batch(batch, tmp_path_factory.mktemp("hostile"))
        # Any error is kept and re-raised by each case of the batch.
        except Exception as exc:  # pylint: disable=broad-except
            return {case.id: exc for case in batch}

    runs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        for batch_runs in pool.map(one, [batch for batch in batches if batch]):
            runs.update(batch_runs)
    return runs


@pytest.mark.parametrize("source, case", CASES, ids=[case.id for _source, case in CASES])
def test_hostile_input(source, case, _runs, _summary):  # pylint: disable=redefined-outer-name
    assert case.outcome in ("failed", "ok"), f"{source}: {case.id}: outcome must be 'failed' or 'ok'"
    ran = _runs[case.id]
    if isinstance(ran, BaseException):
        raise ran
    result, output, seconds, writes = ran
    _summary.ran[case.module] += 1
    shown = json.dumps(result, indent=1, default=str)[:3000]
    for marker in TRACEBACK_MARKERS:
        assert marker not in output, f"{case.id}: traceback text in the output:\n{output[-4000:]}"
    assert result.get("exception") in (None, "(traceback unavailable)"), f"{case.id}: the module raised:\n{shown}"
    for secret in case.secrets:
        assert secret not in output, f"{case.id}: secret #{case.secrets.index(secret) + 1} appears in the output"
    if case.outcome == "failed":
        assert result.get("failed") is True, f"{case.id}: expected a clear failure, got:\n{shown}"
        text = result.get("msg") or ""
    else:
        assert not result.get("failed"), f"{case.id}: expected success (a documented fallback), got:\n{shown}"
        text = "\n".join(result.get("warnings") or [])
    assert isinstance(text, str), f"{case.id}: no message:\n{shown}"
    if case.outcome == "failed":
        assert text.strip(), f"{case.id}: a failure without a message:\n{shown}"
    for expected in case.expect:
        assert expected.lower() in text.lower(), f"{case.id}: {expected!r} not in the message:\n{text}"
    if writes:
        assert not Path(writes).exists(), f"{case.id}: {writes} was written"
    assert seconds <= case.max_seconds, f"{case.id}: took {seconds:.1f} s, more than {case.max_seconds} s"


def test_the_suite_is_large_enough_and_its_ids_are_unique():
    ids = [case.id for _source, case in CASES]
    assert len(ids) == len(set(ids)), [i for i, n in collections.Counter(ids).items() if n > 1]
    benchmark = [case for _source, case in CASES if case.module == "jetson_llm.vllm.vllm_benchmark"]
    assert sum(1 for case in benchmark if not case.server) >= 30, suite_summary()
    assert len({case.server for case in benchmark if case.server}) >= 10, suite_summary()
    print(suite_summary())
