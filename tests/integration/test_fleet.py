"""Fleet use: enable_speculation.yml through ansible-runner (the library AWX runs jobs with) on a
real systemd host, the report playbook, and the HTML report in headless Chromium.

The runner test boots one systemd-nspawn host (tests/nspawn/fleet.py) with the Orin Nano identity
(fixture ``orin-nano-8gb-super``) and the serve role's unit for the test bed's vLLM written but not
started: the plan refuses an Orin Nano before any benchmark, so no vLLM runs and the job ends
``successful`` with the host ``refused`` and its unit untouched.
"""
from __future__ import annotations

import glob
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import ansible_runner  # tests/requirements.txt: a missing runner fails the suite, never skips it
import pytest

from conftest import BIN, COLLECTIONS, TOP, _ansible_env, recap, run_playbook

sys.path.insert(0, str(TOP / "tests" / "nspawn"))
import fleet as nspawn  # noqa: E402  pylint: disable=wrong-import-position

_ansible_env()  # links the collection under .build/collections
sys.path.insert(0, str(COLLECTIONS))
from ansible_collections.jetson_llm.vllm.plugins.module_utils import _fleet_report as fr  # noqa: E402  pylint: disable=wrong-import-position

OUT = TOP / "tests" / "output" / "fleet"
UNIT = "/etc/systemd/system/vllm.service"
FACT = "/etc/ansible/facts.d/jetson_vllm_speculative.fact"
NANO = "hf-fleet-nano"
PORT = 8231


def nano_vars():
    return {
        "vllm_runtime": "native",
        "vllm_native_command": [str(nspawn.TESTBED / "venv" / "bin" / "vllm"), "serve"],
        "vllm_model": str(nspawn.TESTBED / "models" / "target"),
        "vllm_served_model_name": "target",
        "vllm_host": "127.0.0.1",
        "vllm_port": PORT,
        "vllm_max_model_len": 1024,
        "jetson_spec_facts_root": nspawn.IDENTITY_DIR,
        "jetson_spec_method": "draft_model",
        "jetson_spec_draft_model": str(nspawn.TESTBED / "models" / "draft-perfect"),
        "jetson_spec_guard_timeout": 1800,  # more than a cold start (900 s allowed) plus the benchmark
        "vllm_startup_timeout": 900,  # beside the static suites (as docker_bed.container_vars)
        # In the foreground (no poll adds to each step); the long-benchmark test runs in the background, polled.
        "jetson_spec_progress_interval": 0,
    }


@pytest.fixture(scope="module")
def nano_host():
    if os.geteuid() != 0 or not shutil.which("systemd-nspawn"):
        pytest.skip("needs root and systemd-nspawn (make nspawn)")
    OUT.mkdir(parents=True, exist_ok=True)
    host = nspawn.Host(NANO, identity="orin-nano-8gb-super", vllm_port=PORT)
    host.create().boot()
    try:
        inventory = nspawn.write_inventory(OUT / "inventory.json", [host], host_vars={NANO: nano_vars()})
        run_playbook(TOP / "tests" / "integration" / "playbooks" / "fleet" / "serve_unit.yml", inventory=inventory)
        yield host, inventory
    finally:
        host.destroy()


def _events(artifact_dir):
    events = []
    for path in sorted(glob.glob(str(artifact_dir / "job_events" / "*.json"))):
        with open(path, encoding="utf-8") as handle:
            events.append(json.load(handle))
    return sorted(events, key=lambda event: event["counter"])


def test_enable_speculation_through_ansible_runner_refuses_the_orin_nano(nano_host, tmp_path, monkeypatch):
    host, inventory = nano_host
    unit_before = host.path(UNIT).read_bytes()
    assert b"ExecStart=" in unit_before and str(PORT).encode() in unit_before
    assert not host.path(FACT).exists()

    private = tmp_path / "runner"
    (private / "project").mkdir(parents=True)
    report_dir = tmp_path / "reports"
    env = _ansible_env()
    monkeypatch.setenv("PATH", env["PATH"])
    result = ansible_runner.run(
        private_data_dir=str(private),
        playbook="jetson_llm.vllm.enable_speculation",          # a collection playbook, as on a controller
        inventory=str(inventory),
        ident="enable-1",
        extravars={"jetson_spec_hosts": "all", "jetson_spec_expected_concurrency": 1,
                   "jetson_spec_report_dir": str(report_dir)},
        envvars={key: env[key] for key in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_PYTHON_INTERPRETER", "PATH",
                                           "ANSIBLE_NOCOLOR", "ANSIBLE_HOST_KEY_CHECKING")},
        quiet=True,
    )
    artifacts = private / "artifacts" / "enable-1"
    stdout = (artifacts / "stdout").read_text(errors="replace") if (artifacts / "stdout").exists() else ""
    (OUT / "runner-enable.log").write_text(stdout)
    assert result.status == "successful", stdout[-6000:]
    assert result.rc == 0
    assert (artifacts / "status").read_text().strip() == "successful"
    assert (artifacts / "rc").read_text().strip() == "0"

    events = _events(artifacts)
    # 'verbose' events are ansible-playbook's own lines outside the play (a Python warning at start-up, e.g. the
    # cryptography DSA deprecation some ansible-core/cryptography pairs print): not the job's structure.
    kinds = [event["event"] for event in events if event["event"] != "verbose"]
    assert kinds[0] == "playbook_on_start" and kinds[-1] == "playbook_on_stats", kinds[:3]
    assert "runner_on_failed" not in kinds and "runner_on_unreachable" not in kinds
    # the plan refused the host: no benchmark ran, nothing was applied
    task_names = [event["event_data"].get("task", "") for event in events if event["event"] == "runner_on_ok"]
    assert any(name.startswith("A refusal ends the role") for name in task_names)
    assert not any(name.startswith("Benchmark the running service") for name in task_names)

    stats = [event for event in events if event["event"] == "playbook_on_stats"][-1]["event_data"]
    artifact_data = stats["artifact_data"]
    spec = artifact_data["jetson_spec_results"][NANO]
    assert spec["status"] == "refused"
    assert any("Orin Nano" in reason or "orin-nano" in reason.lower() for reason in spec["reasons"]), spec["reasons"]
    assert spec["changed_this_run"] is True
    fleet = artifact_data["jetson_spec_fleet"]
    assert fleet["total"] == 1 and fleet["by_status"]["refused"] == 1 and fleet["attention"] == [NANO]
    assert result.stats["failures"] == {} and result.stats["dark"] == {}

    # on the host: the refusal recorded, the unit byte for byte as it was, nothing started
    assert host.path(UNIT).read_bytes() == unit_before
    fact = json.loads(host.path(FACT).read_text())
    assert fact["status"] == "refused" and fact["jetson"]["product_line"] == "orin-nano"
    # who can use the model, read from the service (here: loopback only, so nobody else and no warning)
    assert fact["exposure"] == {"listen_host": "127.0.0.1", "api_key": False, "exposed": False, "warning": None}
    active = host.nsenter(["systemctl", "is-active", "vllm.service"], check=False).stdout.strip()
    assert active != "active"

    # the fleet report on the controller
    twin = json.loads((report_dir / "fleet-report.json").read_text())
    assert [row["host"] for row in twin["hosts"]] == [NANO]
    assert twin["hosts"][0]["status"] == "refused" and twin["hosts"][0]["family"] == "orin-nano"
    assert "data-host=\"%s\"" % NANO in (report_dir / "fleet-report.html").read_text()

    # report.yml reads the same outcome back from the host's fact file
    proc = run_playbook("jetson_llm.vllm.report", inventory=inventory,
                        extra_vars={"jetson_spec_hosts": "all", "jetson_spec_report_dir": str(tmp_path / "again")})
    again = json.loads((tmp_path / "again" / "fleet-report.json").read_text())
    assert again["hosts"][0]["status"] == "refused", proc.stdout[-3000:]


def test_rollout_stops_after_a_failed_batch_and_the_summary_names_every_host(nano_host, tmp_path):
    """The first batch of the rollout play (the Orin Nano: refused, not a failure; hf-gone-1: unreachable) fails
    more than 20 % of its hosts, so the rollout stops; the summary and the report name the refused, the unreachable
    and the not-attempted hosts. (No host is a canary: the Nano is refused by the rules, the others have no
    cohort; the first play only reads every host.)"""
    host, inventory = nano_host
    inv = json.loads(Path(inventory).read_text())
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                   "ansible_user": "nobody", "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}
    for name in ("hf-gone-1", "hf-gone-2", "hf-later-1"):
        inv["all"]["hosts"][name] = dict(unreachable)
    rollout = tmp_path / "rollout.json"
    rollout.write_text(json.dumps(inv))
    unit_before = host.path(UNIT).read_bytes()
    proc = run_playbook("jetson_llm.vllm.enable_speculation", inventory=rollout, check=False,
                        extra_vars={"jetson_spec_hosts": "all", "jetson_spec_canary_size": 1,
                                    "jetson_spec_batch_size": 2, "jetson_spec_max_fail_percentage": 20,
                                    "jetson_spec_report_dir": str(tmp_path / "reports")},
                        args=("--forks", "1"))
    out = proc.stdout + proc.stderr
    (OUT / "rollout.log").write_text(out)
    assert proc.returncode != 0, out[-4000:]
    # the later batch never started: after the first play (which only reads), no task ran on its hosts
    rollout_part = out.split("PLAY [The other hosts")[-1]
    assert "PLAY [The other hosts" in out and "[hf-later-1]" not in rollout_part and "[hf-gone-2]" not in rollout_part, \
        out[-4000:]
    twin = json.loads((tmp_path / "reports" / "fleet-report.json").read_text())
    status = {row["host"]: row["status"] for row in twin["hosts"]}
    assert status == {NANO: "refused", "hf-gone-1": "unreachable", "hf-gone-2": "not_attempted",
                      "hf-later-1": "not_attempted"}
    assert twin["counts"]["attention"] == [NANO, "hf-gone-1", "hf-gone-2", "hf-later-1"]
    assert "Needs attention: %s (refused), hf-gone-1 (unreachable), hf-gone-2 (not_attempted), hf-later-1 " \
           "(not_attempted)" % NANO in out
    assert host.path(UNIT).read_bytes() == unit_before
    # one fork for a batch of two: each step of the change would run in two waves under the guard
    assert "WARNING: this batch has 2 hosts and ansible-playbook runs 1 at a time (forks)" in out, out[-4000:]


def test_disable_speculation_leaves_a_host_that_never_speculated_alone(nano_host, tmp_path):
    """disable_speculation on the refused Orin Nano: nothing to restore, nothing changes, the record stays."""
    host, inventory = nano_host
    unit_before, fact_before = host.path(UNIT).read_bytes(), host.path(FACT).read_bytes()
    proc = run_playbook("jetson_llm.vllm.disable_speculation", inventory=inventory,
                        extra_vars={"jetson_spec_hosts": "all", "jetson_spec_report_dir": str(tmp_path / "r")})
    assert "%s: REFUSED (recorded earlier, nothing changed since)" % NANO in proc.stdout, proc.stdout[-3000:]
    assert host.path(UNIT).read_bytes() == unit_before and host.path(FACT).read_bytes() == fact_before
    twin = json.loads((tmp_path / "r" / "fleet-report.json").read_text())
    assert twin["title"] == "Speculative decoding disabled: fleet report"
    assert [(row["host"], row["status"]) for row in twin["hosts"]] == [(NANO, "refused")]


def test_a_limit_run_merges_into_the_fleet_report_and_drops_no_host(nano_host, tmp_path):
    """report.yml over two hosts, then with --limit on one of them: the other keeps its row (an earlier run's, with
    its time); the same --limit run again leaves the report on disk as it is."""
    _host, inventory = nano_host
    inv = json.loads(Path(inventory).read_text())
    inv["all"]["hosts"]["hf-gone-1"] = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                                        "ansible_user": "nobody",
                                        "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}
    two = tmp_path / "two.json"
    two.write_text(json.dumps(inv))
    report_dir = tmp_path / "reports"
    extra = {"jetson_spec_hosts": "all", "jetson_spec_report_dir": str(report_dir)}
    run_playbook("jetson_llm.vllm.report", inventory=two, extra_vars=extra)
    twin = json.loads((report_dir / "fleet-report.json").read_text())
    assert {row["host"]: row["status"] for row in twin["hosts"]} == {NANO: "refused", "hf-gone-1": "unreachable"}
    proc = run_playbook("jetson_llm.vllm.report", inventory=two, extra_vars=extra, args=("--limit", NANO))
    merged = json.loads((report_dir / "fleet-report.json").read_text())
    rows = {row["host"]: row for row in merged["hosts"]}
    assert sorted(rows) == sorted([NANO, "hf-gone-1"]), "the --limit run dropped a host from the fleet report"
    assert rows[NANO]["earlier_run"] is False and rows["hf-gone-1"]["earlier_run"] is True
    assert rows["hf-gone-1"]["status"] == "unreachable" and merged["counts"]["total"] == 2
    assert "UNREACHABLE*" in proc.stdout and "* not in this run (--limit or another play)" in proc.stdout, \
        proc.stdout[-3000:]
    html, data = (report_dir / "fleet-report.html").read_bytes(), (report_dir / "fleet-report.json").read_bytes()
    proc = run_playbook("jetson_llm.vllm.report", inventory=two, extra_vars=extra, args=("--limit", NANO))
    assert (report_dir / "fleet-report.html").read_bytes() == html
    assert (report_dir / "fleet-report.json").read_bytes() == data
    assert recap(proc.stdout, NANO)["changed"] == 0, proc.stdout[-3000:]


# --- facts.yml and benchmark.yml on local hosts ----------------------------------------------------------------
def _local_inventory(path, hosts):
    inv = {"jetsons": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"},
                       "hosts": hosts}}
    path.write_text(json.dumps(inv))
    return path


def test_facts_playbook_prints_one_line_per_host(tmp_path):
    fixtures = TOP / "tests" / "fixtures" / "rootfs"
    inventory = _local_inventory(tmp_path / "inv.json", {
        "f-thor": {"jetson_spec_facts_root": str(fixtures / "thor-t5000")},
        "f-nano": {"jetson_spec_facts_root": str(fixtures / "orin-nano-8gb-super")},
        "f-x86": {"jetson_spec_facts_root": str(fixtures / "non-jetson-x86")},
    })
    proc = run_playbook("jetson_llm.vllm.facts", inventory=inventory)
    lines = [line.strip().strip('",') for line in proc.stdout.splitlines()]
    table = {line.split()[0]: line for line in lines if line.startswith("f-") and " : ok=" not in line}
    assert set(table) == {"f-thor", "f-nano", "f-x86"}, proc.stdout[-3000:]
    assert "thor" in table["f-thor"].lower() and "upstream" in table["f-thor"]
    assert "nano" in table["f-nano"].lower() and "nvidia-ai-iot" in table["f-nano"]
    assert "not a Jetson" in table["f-x86"]


def test_a_long_benchmark_shows_it_is_alive_in_an_awx_job(tmp_path, monkeypatch):
    """A benchmark that takes a while runs in the background and is polled (jetson_spec_progress_interval): the job's
    output (ansible-runner, AWX's job runner) shows it is alive while it runs, and the result is the same."""
    sys.path.insert(0, str(TOP / "tests" / "utils"))
    from fake_vllm import FakeVLLM  # pylint: disable=import-outside-toplevel

    workload = {"concurrency": [1], "num_prompts": 3, "warmup_prompts": 1, "input_len": 32, "output_len": 8}
    private = tmp_path / "runner"
    (private / "project").mkdir(parents=True)
    env = _ansible_env()
    monkeypatch.setenv("PATH", env["PATH"])
    # 8 tokens 0.4 s apart: about 3 s a request, 4 requests one at a time
    with FakeVLLM(model="fake-model", ttft=0.05, itl=0.4) as server:
        host = {"vllm_host": "127.0.0.1", "vllm_port": server.port, "vllm_model": "fake-model",
                "jetson_spec_benchmark": workload}
        inventory = _local_inventory(tmp_path / "inv.json", {"slow-one": host})
        result = ansible_runner.run(
            private_data_dir=str(private), playbook="jetson_llm.vllm.benchmark", inventory=str(inventory),
            ident="bench-1", quiet=True,
            extravars={"jetson_spec_hosts": "all", "jetson_spec_report_dir": str(tmp_path / "reports"),
                       "jetson_spec_progress_interval": 2},
            envvars={key: env[key] for key in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_PYTHON_INTERPRETER", "PATH",
                                               "ANSIBLE_NOCOLOR", "ANSIBLE_HOST_KEY_CHECKING")})
    artifacts = private / "artifacts" / "bench-1"
    stdout = (artifacts / "stdout").read_text(errors="replace")
    (OUT / "runner-benchmark-progress.log").write_text(stdout)
    assert result.status == "successful", stdout[-4000:]
    polls = [event for event in _events(artifacts) if event["event"] == "runner_on_async_poll"]
    assert len(polls) >= 2, f"no sign of life while the benchmark ran:\n{stdout[-3000:]}"
    assert all(event["event_data"]["host"] == "slow-one" and event["event_data"]["task_action"] == "async_status"
               for event in polls), polls[0]["event_data"]
    assert re.search(r"ASYNC POLL on slow-one: jid=\S+ started=(1|True) finished=(0|False)", stdout), stdout[-2000:]
    saved = json.loads((tmp_path / "reports" / "benchmarks" / "slow-one.json").read_text())
    assert saved["runs"][0]["completed"] == 3 and saved["runs"][0]["failed"] == 0


def test_benchmark_playbook_writes_json_per_host(tmp_path):
    sys.path.insert(0, str(TOP / "tests" / "utils"))
    from fake_vllm import FakeVLLM  # pylint: disable=import-outside-toplevel

    workload = {"concurrency": [1, 2], "num_prompts": 3, "warmup_prompts": 1, "input_len": 32, "output_len": 8}
    with FakeVLLM(model="fake-model", ttft=0.01, itl=0.002) as server:
        host = {"vllm_host": "127.0.0.1", "vllm_port": server.port, "vllm_model": "fake-model",
                "jetson_spec_benchmark": workload}
        inventory = _local_inventory(tmp_path / "inv.json", {"b-one": host, "b-two": dict(host)})
        run_playbook("jetson_llm.vllm.benchmark", inventory=inventory,
                     extra_vars={"jetson_spec_report_dir": str(tmp_path / "reports")})
    for name in ("b-one", "b-two"):
        result = json.loads((tmp_path / "reports" / "benchmarks" / ("%s.json" % name)).read_text())
        assert result["model"] == "fake-model"
        assert [run["concurrency"] for run in result["runs"]] == [1, 2]
        assert all(run["completed"] == 3 and run["failed"] == 0 for run in result["runs"])
        assert result["runs"][0]["tpot_ms_p50"] > 0


# --- the HTML report in a real browser ---------------------------------------------------------------------
def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no Chromium (apt-get install chromium; make test installs it)", pytrace=False)
    return None


def _chromium_run(browser, args, profile, timeout=120):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, check=False)


def _png_decode(path):
    """(width, height, channels, rows of raw pixel bytes) of an 8-bit RGB(A) PNG, with the standard library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            chunks["IHDR"] = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks["IHDR"][:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, pos = [], bytearray(stride), 0
    for _row in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = prev[i], (prev[i - channels] if i >= channels else 0)
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def _png_crop(path, width):
    """Keep the ``width`` leftmost columns of a PNG (written back as RGB(A), no filter)."""
    old_w, height, channels, rows = _png_decode(path)
    assert width <= old_w
    raw = b"".join(b"\x00" + line[:width * channels] for line in rows)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2 if channels == 3 else 6, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))
                     + chunk(b"IEND", b""))


def _png_pixels(path):
    """(width, height, distinct colours of a sample) of an 8-bit RGB(A) PNG."""
    width, height, channels, rows = _png_decode(path)
    colours = set()
    for line in rows[::7]:
        for x in range(0, width * channels, channels * 5):
            colours.add(line[x:x + 3])
    return width, height, colours


# Measured in the page once it has loaded (a copy of the report for the test only: the report itself has no script).
_LAYOUT_SCRIPT = """<script>
window.addEventListener('load', function () {
  var each = function (selector, f) { return Array.prototype.map.call(document.querySelectorAll(selector), f); };
  var out = {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
             rows: each('tr.host-row', function (r) { return r.getBoundingClientRect().height; })};
  var d = document.querySelector('tr.host-row details');
  var closed = d.getBoundingClientRect().height;
  d.open = true;
  out.details = {count: document.querySelectorAll('tr.host-row details').length, closed: closed,
                 open: d.getBoundingClientRect().height,
                 text: d.querySelector('div').getBoundingClientRect().height};
  d.open = false;
  out.bars = each('rect.bar', function (b) {
    return {change: parseFloat(b.getAttribute('data-change')), width: b.getBoundingClientRect().width}; });
  document.body.setAttribute('data-layout', JSON.stringify(out));
  if (window.parent !== window) { window.parent.postMessage(JSON.stringify(out), '*'); }
});
</script>"""
# Headless Chromium keeps a window at least 500 px wide: a phone's 390 px is a frame of that width, in this page.
_FRAME_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe src="%s" style="border:0;margin:0;width:%dpx;height:%dpx;display:block"></iframe>
<script>window.addEventListener('message', function (e) { document.body.setAttribute('data-layout', e.data); });</script>
</body></html>"""
MIN_WINDOW = 500


@pytest.mark.parametrize("scheme, width, row_limit", [("light", 1400, 90), ("dark", 1400, 90), ("light", 390, 240)],
                         ids=["light-1400", "dark-1400", "phone-390"])
def test_fleet_report_renders_in_headless_chromium(tmp_path, scheme, width, row_limit):
    """The report in real headless Chromium at a desktop width and on a phone: no horizontal overflow, every host line
    under a fixed height, the reasons collapsed and expandable, the chart's bars proportional to the relative change.
    Screenshots: tests/output/fleet/ (docs/images/ holds the committed light ones, shown in the README)."""
    browser = _chromium()
    hosts = json.loads((TOP / "tests" / "fixtures" / "fleet" / "hosts.json").read_text())
    rows = fr.rows_from_hosts(list(hosts), hosts)
    result = fr.report(rows, generated="2026-11-30T18:00:00Z", report_dir=str(tmp_path))
    page = Path(result["html_path"])
    page.write_text(result["html"], encoding="utf-8")
    measured = tmp_path / "measured.html"
    measured.write_text(result["html"].replace("</body>", _LAYOUT_SCRIPT + "</body>"), encoding="utf-8")
    OUT.mkdir(parents=True, exist_ok=True)
    extra = ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] if scheme == "dark" else \
        ["--blink-settings=preferredColorScheme=1"]

    framed = width < MIN_WINDOW
    target = measured
    if framed:
        target = tmp_path / "frame-measured.html"
        target.write_text(_FRAME_PAGE % (measured.name, width, 900), encoding="utf-8")
    dom = _chromium_run(browser, [*extra, f"--window-size={max(width, MIN_WINDOW)},900", "--virtual-time-budget=5000",
                                  "--dump-dom", target.as_uri()], tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-layout="([^"]*)"', dom.stdout)
    assert found, f"the page's measurements did not arrive:\n{dom.stdout[-2000:]}"
    layout = json.loads(html.unescape(found.group(1)))
    if not framed:
        for item in rows:
            assert f'data-host="{item["host"]}" data-status="{item["status"]}"' in dom.stdout
        assert dom.stdout.count('class="host-row') == len(rows)
    assert layout["innerWidth"] == width, layout
    assert layout["scrollWidth"] <= layout["innerWidth"], f"horizontal overflow at {width} px: {layout}"
    assert len(layout["rows"]) == len(rows) and max(layout["rows"]) <= row_limit, \
        f"a host line is taller than {row_limit} px at {width} px: {layout['rows']}"
    details = layout["details"]
    assert details["count"] == len(rows), details
    assert details["open"] > details["closed"] + 20 and details["text"] > 20, f"the reason does not expand: {details}"
    bars = layout["bars"]
    assert len(bars) == 4, bars
    ratios = [item["width"] / abs(item["change"]) for item in bars if abs(item["change"]) >= 0.05]
    assert ratios and max(ratios) - min(ratios) <= 0.02 * max(ratios) + 1.0, \
        f"the bars are not proportional to the relative change: {bars}"

    shot = OUT / f"fleet-report-{scheme}-{width}.png"
    if shot.exists():
        shot.unlink()
    height = 1000 if width > 600 else 1700
    shown = page
    if framed:
        shown = tmp_path / "frame.html"
        shown.write_text(_FRAME_PAGE % (page.name, width, height), encoding="utf-8")
    proc = _chromium_run(browser, [*extra, f"--screenshot={shot}", f"--window-size={max(width, MIN_WINDOW)},{height}",
                                   "--hide-scrollbars", shown.as_uri()], tmp_path / "profile-shot")
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    if framed:
        _png_crop(shot, width)
    got_w, got_h, colours = _png_pixels(shot)
    assert (got_w, got_h) == (width, height)
    assert len(colours) >= 6, f"the screenshot looks blank: {len(colours)} colours"
    # the concurrency-1 bars' colour is on the page (light: #0969da, dark: #4493f8)
    c1_colour = bytes.fromhex("0969da" if scheme == "light" else "4493f8")
    assert c1_colour in colours or any(sum(abs(a - b) for a, b in zip(c, c1_colour)) < 24 for c in colours), \
        f"no concurrency-1 bar colour in the {scheme} screenshot"


_HEIGHT_SCRIPT = """<script>
window.addEventListener('load', function () {
  var out = {height: document.documentElement.scrollHeight, scrollWidth: document.documentElement.scrollWidth,
             innerWidth: window.innerWidth, bars: document.querySelectorAll('rect.bar').length,
             visibleRows: Array.prototype.filter.call(document.querySelectorAll('tr.host-row'),
                                                      function (r) { return r.checkVisibility(); }).length};
  var more = document.getElementById('more-hosts');
  more.open = true;
  out.openHeight = document.documentElement.scrollHeight;
  more.open = false;
  document.body.setAttribute('data-layout', JSON.stringify(out));
});
</script>"""


def test_the_report_of_100_hosts_stays_a_bounded_page_in_headless_chromium(tmp_path):
    """100 hosts in five cohorts (the fixture's six records, repeated): the page, as Chromium lays it out at a desktop
    width, is bounded in height (the chart a screenful, 25 host lines open, the others one click away) and the
    hidden lines are really there once opened."""
    browser = _chromium()
    base = json.loads((TOP / "tests" / "fixtures" / "fleet" / "hosts.json").read_text())
    templates = [base[name] for name in sorted(base)]
    hosts = {}
    for index in range(100):
        data = json.loads(json.dumps(templates[index % len(templates)]))
        if isinstance(data.get("record"), dict):
            data["record"]["cohort"] = {"key": "%012d" % (index % 5), "label": "cohort %d" % (index % 5),
                                        "role": "verified" if index < 5 else "confirmed", "canary": "h%03d" % (index % 5)}
        hosts["h%03d" % index] = data
    rows = fr.rows_from_hosts(list(hosts), hosts)
    result = fr.report(rows, generated="2026-12-06T18:00:00Z", report_dir=str(tmp_path))
    page = tmp_path / "measured.html"
    page.write_text(result["html"].replace("</body>", _HEIGHT_SCRIPT + "</body>"), encoding="utf-8")
    dom = _chromium_run(browser, ["--window-size=1400,900", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                        tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-layout="([^"]*)"', dom.stdout)
    assert found, f"the page's measurements did not arrive:\n{dom.stdout[-2000:]}"
    layout = json.loads(html.unescape(found.group(1)))
    assert layout["scrollWidth"] <= layout["innerWidth"], layout
    assert layout["bars"] <= 2 * fr.CHART_MAX_HOSTS, layout
    assert layout["visibleRows"] == fr.HOST_ROWS_OPEN, layout
    assert layout["height"] <= 4000, f"the page of 100 hosts is {layout['height']} px high"
    assert layout["openHeight"] > layout["height"] + 75 * 30, "the other hosts' lines are not in the page"
    assert dom.stdout.count('class="host-row') == 100


# --- the execution environment -------------------------------------------------------------------------------
def test_execution_environment_build_context(tmp_path):
    """`ansible-builder create` writes a context with the collection, its dependencies and the pinned tools."""
    env = _ansible_env()
    proc = subprocess.run(["make", "ee"], cwd=TOP, env=env, text=True, capture_output=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # make ee installs what building the context needs, not the test toolchain (pytest, ansible-lint, chromium)
    tools = TOP / ".build" / "ee-venv" / "bin"
    assert (tools / "ansible-builder").exists() and (tools / "ansible-galaxy").exists()
    assert not (tools / "pytest").exists() and not (tools / "ansible-lint").exists()
    assert "chromium" not in proc.stdout and "pip install -q -r tests/requirements.txt" not in proc.stdout
    context = TOP / ".build" / "ee" / "context"
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists())
    text = containerfile.read_text()
    ee = __import__("yaml").safe_load((TOP / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    assert 'ANSIBLE_INSTALL_REFS="ansible-core==2.19.14 ansible-runner==2.4.3"' in text
    assert 'ARG EE_BASE_IMAGE="%s"' % ee["images"]["base_image"]["name"] in text
    assert "COPY _build/collection /build/collection" in text
    assert "ansible-galaxy collection install" in text and "introspect" in text
    requirements = __import__("yaml").safe_load((context / "_build" / "requirements.yml").read_text())
    names = [item["name"] for item in requirements["collections"]]
    assert names == ["/build/collection/jetson_llm-vllm.tar.gz", "community.docker"]
    tarball = context / "_build" / "collection" / "jetson_llm-vllm.tar.gz"
    assert tarball.is_file()

    # the tarball is this collection, with what AWX runs and what the EE reads
    import tarfile  # pylint: disable=import-outside-toplevel
    with tarfile.open(tarball) as archive:
        members = set(archive.getnames())
        manifest = json.load(archive.extractfile("MANIFEST.json"))
    assert manifest["collection_info"]["namespace"] == "jetson_llm" and manifest["collection_info"]["name"] == "vllm"
    assert "community.docker" in manifest["collection_info"]["dependencies"]
    for path in ("meta/execution-environment.yml", "meta/ee-bindep.txt", "playbooks/enable_speculation.yml",
                 "playbooks/tasks/fleet_report.yml", "roles/speculative_decoding/tasks/main.yml",
                 "plugins/filter/fleet_report.py", "awx/survey_enable_speculation.json"):
        assert path in members, path

    # ansible-builder's introspection (what the image build runs) finds the collection's system dependencies
    collections = tmp_path / "collections"
    install = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force", "-p",
                              str(collections), str(tarball)], env=env, text=True, capture_output=True, timeout=300,
                             check=False)
    assert install.returncode == 0, install.stderr
    found = subprocess.run([str(tools / "ansible-builder"), "introspect", "--sanitize", str(collections)], env=env, text=True,
                           capture_output=True, timeout=120, check=False)
    assert found.returncode == 0, found.stderr
    assert "openssh-client [platform:dpkg]  # from collection jetson_llm.vllm" in found.stdout
