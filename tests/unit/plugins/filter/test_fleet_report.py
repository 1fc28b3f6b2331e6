"""The fleet report: rows from recorded outcomes, counts, the text table, the HTML and its JSON twin."""
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.jetson_llm.vllm.plugins.filter import fleet_report as flt
from ansible_collections.jetson_llm.vllm.plugins.module_utils import _fleet_report as fr

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "fleet" / "hosts.json"


def fixture_rows():
    hosts = json.loads(FIXTURE.read_text())
    return fr.rows_from_hosts(list(hosts), hosts)


def test_rows_carry_the_columns_from_the_record():
    rows = {item["host"]: item for item in fixture_rows()}
    thor = rows["thor-devkit"]
    assert thor["status"] == "enabled"
    assert thor["family"] == "thor-agx" and thor["jetpack"] == "7.0" and thor["vllm_version"] == "0.20.1"
    assert thor["method"] == "eagle3" and thor["num_speculative_tokens"] == 5
    assert (thor["gpu_memory_utilization_before"], thor["gpu_memory_utilization_after"]) == (0.75, 0.7)
    assert thor["c1"] == {"throughput_before": 21.1, "throughput_after": 29.75, "tpot_p50_before": 46.2,
                          "tpot_p50_after": 32.8, "ttft_p50_before": 80.0, "ttft_p50_after": 80.0}
    assert thor["c8"]["throughput_after"] == 122.8 and thor["c8"]["ttft_p50_after"] == 400.0
    assert thor["acceptance_rate"] == 0.71 and thor["verdict"] == "accept"
    orin = rows["agx-orin-64"]
    assert orin["status"] == "reverted" and "Remove --speculative-config" in orin["handoff"]
    assert rows["orin-nano-super"]["handoff"] == "Next: serve a smaller model; tune memory."


def test_hosts_without_a_record_are_shown_with_why():
    rows = {item["host"]: item for item in fixture_rows()}
    nx = rows["orin-nx-16"]
    assert nx["status"] == "unreachable" and nx["family"] == "orin-nx"  # family from the inventory group
    assert "unreachable" in nx["reason"]
    assert fr.row("h", None, [], "not_attempted")["status"] == "not_attempted"
    assert fr.row("h")["status"] == "no_record"
    # the role's failed record already says why: the play's error is not repeated
    failed = fr.row("h", {"status": "failed", "reasons": ["Task X failed: boom."]}, [], "failed", "Task X failed: boom.")
    assert failed["reason"] == "Task X failed: boom."
    # a pending record of a host that then went unreachable is shown as unreachable
    assert fr.row("h", {"status": "pending", "reasons": []}, [], "unreachable")["status"] == "unreachable"


def test_counts_never_hide_a_host_that_needs_attention():
    summary = fr.counts(fixture_rows())
    assert summary["total"] == 6
    assert summary["by_status"]["enabled"] == 1 and summary["by_status"]["refused"] == 2
    assert summary["by_status"]["unreachable"] == 1 and summary["by_status"]["failed"] == 1
    assert set(summary["attention"]) == {"agx-orin-64", "orin-nano-super", "build-server", "orin-nx-16",
                                         "agx-orin-32-lab"}
    assert set(summary["by_status"]) == set(fr.STATUSES)


def test_table_has_one_line_per_host_and_names_the_attention_hosts():
    lines = fr.table(fixture_rows())
    assert len(lines) == 1 + 6 + 2
    assert lines[1].startswith("thor-devkit") and "ENABLED" in lines[1] and "21.1 -> 29.8" in lines[1]
    assert lines[-1].startswith("Needs attention:") and "orin-nx-16 (unreachable)" in lines[-1]


def test_the_table_columns_stay_aligned_for_the_longest_status():
    rows = fixture_rows()
    rows[0] = dict(rows[0], status="left_to_rollout", earlier_run=True)
    lines = fr.table(rows)
    family = lines[0].index("family")
    assert max(len(status) for status in fr.STATUSES) + 1 <= family - lines[0].index("status") - 1
    for line in lines[1:1 + len(rows)]:
        assert line[family - 1] == " " and line[family] != " ", line


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.rows, self.scripts, self.urls = [], [], 0, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "tr" and "data-host" in attrs:
            self.rows.append(attrs["data-host"])
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if key in attrs:
                self.urls.append(attrs[key])


def test_html_is_self_contained_escaped_and_has_every_row_and_the_chart():
    rows = fixture_rows()
    page = fr.report_html(rows, generated="2026-11-30T18:00:00Z")
    parsed = _Collector()
    parsed.feed(page)
    assert sorted(parsed.rows) == sorted(item["host"] for item in rows)
    assert "svg" in parsed.tags and parsed.scripts == 0 and parsed.urls == []
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "prefers-color-scheme: dark" in page and "@media print" in page and "max-width: 640px" in page
    # two bars (c=1, c=8) for each host with a candidate measured, none for the others (a baseline alone has no change)
    assert len(re.findall(r'<rect class="bar bar-c[18]" data-change=', page)) == 2 + 2
    assert page.count('<g class="host"') == 2


def test_hosts_are_sorted_by_outcome_with_the_totals_at_the_top():
    page = fr.report_html(fixture_rows(), generated="now")
    order = re.findall(r'<tr class="host-row[^"]*" data-host="([^"]+)" data-status="([^"]+)"', page)
    assert [status for _host, status in order] == ["failed", "unreachable", "reverted", "refused", "refused", "enabled"]
    assert [host for host, status in order if status == "refused"] == ["build-server", "orin-nano-super"]
    totals = re.search(r'<ul class="totals" id="totals">(.*?)</ul>', page).group(1)
    shown = re.findall(r'<li data-status="([a-z_]+)"><span class="badge status-\1">[^<]+</span><b>(\d+)</b></li>', totals)
    # the five outcomes of the loop always (zeros too), then any other status a host has
    assert shown[:5] == [("enabled", "1"), ("reverted", "1"), ("refused", "2"), ("skipped", "0"), ("failed", "1")]
    assert ("unreachable", "1") in shown and ("disabled", "0") not in shown
    assert page.index('id="totals"') < page.index('<svg id="change-chart"') < page.index('<table id="fleet"')


def test_each_line_shows_the_change_with_its_interval_method_and_k_and_the_reason_one_click_away():
    page = fr.report_html(fixture_rows(), generated="now")
    thor = re.search(r'<tr class="host-row" data-host="thor-devkit"[^>]*>(.*?</details></td>)</tr>', page, re.S).group(1)
    head, why = thor.split('<td class="why">')
    cells = re.findall(r"<td[^>]*>(.*?)</td>", head, re.S) + [why[:-len("</td>")]]
    assert len(cells) == 6 and why.endswith("</details></td>")
    assert '<span class="badge status-enabled">enabled</span>' in cells[1]
    assert cells[2] == '<span class="up">+41 %</span><small>95 % CI +33 % to +49 %</small>'
    assert cells[3] == '<span class="up">+2 %</span><small>95 % CI -3 % to +7 %</small>'
    assert cells[4] == "eagle3, K=5"
    details = re.search(r"<details><summary>(.*?)</summary><div>(.*?)</div></details>", cells[5], re.S)
    assert details.group(1) == "c=1 +41 % (95 % CI +33 % to +49 %), c=8 +2 % (95 % CI -3 % to +7 %): accept, kept"
    assert "Accepted." in details.group(2) and "<th>tok/s</th>" in details.group(2)
    assert "21.1 -&gt; 29.8" in details.group(2)  # the numbers behind the change, in the details
    # a record without intervals (an earlier release's) shows the point and says so; no measurement shows a dash
    nano = re.search(r'<tr class="host-row" data-host="orin-nano-super"[^>]*>(.*?</details></td>)</tr>', page,
                     re.S).group(1)
    assert re.findall(r"<td[^>]*>(.*?)</td>", nano, re.S)[2] == '<span class="muted">-</span>'
    rows = fixture_rows()
    rows[0]["interval_c1"] = None
    assert "<small>no interval</small>" in fr.report_html(rows)


def test_the_chart_draws_relative_change_from_zero_with_the_keep_bar_and_intervals():
    page = fr.report_html(fixture_rows(), generated="now")
    svg = re.search(r'<svg id="change-chart".*?</svg>', page, re.S).group(0)
    scale = float(re.search(r'data-scale="([0-9.]+)"', svg).group(1))
    zero = float(re.search(r'<line class="zero" x1="([0-9.]+)"', svg).group(1))
    keep = float(re.search(r'<line class="threshold" x1="([0-9.]+)"', svg).group(1))
    assert keep - zero == pytest.approx(0.30 * scale, abs=0.1)
    bars = re.findall(r'data-change="(-?[0-9.]+)" x="([0-9.]+)" y="[0-9]+" width="([0-9.]+)"', svg)
    assert len(bars) == 4
    for change, x, width in bars:
        change, x, width = float(change), float(x), float(width)
        assert width == pytest.approx(abs(change) * scale, abs=0.1)       # proportional to the change
        assert (x == pytest.approx(zero, abs=0.1)) if change >= 0 else (x + width == pytest.approx(zero, abs=0.1))
    assert svg.count('<line class="ci"') == 4                          # the two hosts with recorded intervals


def test_report_returns_the_json_twin():
    result = fr.report(fixture_rows(), generated="now")
    twin = json.loads(result["json"])
    assert [h["host"] for h in twin["hosts"]] == [r["host"] for r in result["rows"]]
    assert twin["counts"]["by_status"]["reverted"] == 1


def test_filter_reads_hostvars_and_the_play_state():
    hostvars = {
        "a": {"group_names": ["thor"], "_jetson_fleet_attempted": True,
              "_jetson_spec_summary": {"status": "enabled", "reasons": []}},
        "b": {"group_names": ["orin_nx"], "_jetson_fleet_attempted": True},            # gone from the play
        "c": {"group_names": ["orin_nano"]},                                              # never reached
        "d": {"group_names": ["agx_orin"], "_jetson_fleet_attempted": True, "_jetson_fleet_error": "boom"},
        "e": {"group_names": [], "_jetson_fleet_state": "unreachable"},
    }
    rows = flt.fleet_rows(["a", "b", "c", "d", "e"], hostvars, active_hosts=["a"])
    assert [r["status"] for r in rows] == ["enabled", "unreachable", "not_attempted", "failed", "unreachable"]
    assert rows[3]["reason"] == "boom"
    with pytest.raises(AnsibleFilterError):
        flt.fleet_rows("a", hostvars)
    with pytest.raises(AnsibleFilterError):
        flt.fleet_report("not rows")
    with pytest.raises(AnsibleFilterError):
        flt.fleet_rows(["a"], {"a": {"_jetson_spec_summary": {"reasons": []}}})


def test_a_canary_job_leaves_its_other_hosts_to_the_rollout_job_and_says_so():
    """A canary job (rollout part canaries) names the hosts it leaves to the rollout job: not attempted there, they are
    left_to_rollout with the reason, not among the hosts that need attention; a host that was attempted and lost,
    failed, or has a record keeps its status, and one not in the list stays not_attempted."""
    hostvars = {
        "canary": {"group_names": ["thor"], "_jetson_fleet_attempted": True,
                   "_jetson_spec_summary": {"status": "enabled", "reasons": []}},
        "twin": {"group_names": ["thor"]},
        "lost": {"group_names": ["thor"], "_jetson_fleet_attempted": True},
        "broken": {"group_names": ["thor"], "_jetson_fleet_error": "boom"},
        "other": {"group_names": ["thor"]},
    }
    rows = flt.fleet_rows(["canary", "twin", "lost", "broken", "other"], hostvars, active_hosts=["canary", "twin"],
                          left_to_rollout=["twin", "lost", "broken", "canary"])
    status = dict((r["host"], r["status"]) for r in rows)
    assert status == {"canary": "enabled", "twin": "left_to_rollout", "lost": "unreachable", "broken": "failed",
                      "other": "not_attempted"}
    twin = [r for r in rows if r["host"] == "twin"][0]
    assert twin["reason"].startswith("Left to the rollout job"), twin
    report = fr.report(rows, generated="2026-11-30T10:00:00Z")
    assert "twin" not in report["counts"]["attention"] and "other" in report["counts"]["attention"]
    assert report["counts"]["by_status"]["left_to_rollout"] == 1
    assert report["counts"]["hosts_by_status"]["left_to_rollout"] == ["twin"]
    assert "status-left_to_rollout" in report["html"]
    for bad in ("twin", 3):
        with pytest.raises(AnsibleFilterError, match="left_to_rollout= takes a list of host names"):
            flt.fleet_rows(["twin"], hostvars, active_hosts=[], left_to_rollout=bad)


def test_a_rerun_that_finds_the_fleet_as_recorded_keeps_the_previous_report_byte_for_byte():
    rows = fixture_rows()
    first = fr.report(rows, generated="2026-11-30T10:00:00Z", report_dir="/tmp/r")
    assert first["unchanged"] is False
    # The same outcomes an hour later: the report on disk is kept, date included.
    again = fr.report(fixture_rows(), generated="2026-11-30T11:00:00Z", report_dir="/tmp/r", previous=first["json"])
    assert again["unchanged"] is True and again["json"] == first["json"] and again["html"] == first["html"]
    # The canary batch of a re-run: the other hosts are not reached yet; the previous report is still the truth.
    canary = [row if row["host"] == "thor-devkit" else fr.row(row["host"], None, [], "not_attempted")
              for row in fixture_rows()]
    kept = fr.report(canary, generated="2026-11-30T11:00:00Z", previous=first["json"])
    assert kept["unchanged"] is True and kept["json"] == first["json"]
    assert [row["host"] for row in kept["rows"]] == [row["host"] for row in canary]
    # So is a canary job's: the hosts it leaves to the rollout job are not reached either.
    canary_job = [row if row["host"] == "thor-devkit" else fr.row(row["host"], None, [], "left_to_rollout")
                  for row in fixture_rows()]
    kept = fr.report(canary_job, generated="2026-11-30T11:00:00Z", previous=first["json"])
    assert kept["unchanged"] is True and kept["json"] == first["json"]


@pytest.mark.parametrize("change", ["row", "hosts", "title", "json", "nothing_reached"])
def test_any_difference_gives_a_new_report(change):
    rows = fixture_rows()
    first = fr.report(rows, generated="2026-11-30T10:00:00Z")
    previous, title = first["json"], "Speculative decoding: fleet report"
    if change == "row":
        rows[0] = dict(rows[0], status="reverted")
    elif change == "hosts":
        rows = rows[1:]
    elif change == "title":
        title = "Another report"
    elif change == "json":
        previous = previous[:-20]
    else:
        rows = [fr.row(row["host"], None, [], "not_attempted") for row in rows]
    new = fr.report(rows, title=title, generated="2026-11-30T11:00:00Z", previous=previous)
    assert new["unchanged"] is False
    assert json.loads(new["json"])["generated"] == "2026-11-30T11:00:00Z"


def test_previous_must_be_the_twin_text():
    with pytest.raises(AnsibleFilterError, match="previous= takes the text"):
        flt.fleet_report(fixture_rows(), previous={"hosts": []})


def test_a_limit_run_merges_into_the_report_and_keeps_every_other_host_as_it_was():
    full = fr.report(fixture_rows(), generated="2026-11-30T10:00:00Z")
    before = {row["host"]: row for row in json.loads(full["json"])["hosts"]}
    # --limit thor-devkit: only that host is in the play, now reverted.
    thor = dict(next(row for row in fixture_rows() if row["host"] == "thor-devkit"), status="reverted",
                finished="2026-11-30T11:05:00Z")
    merged = fr.report([thor], generated="2026-11-30T11:06:00Z", previous=full["json"])
    twin = json.loads(merged["json"])
    assert merged["unchanged"] is False and twin["generated"] == "2026-11-30T11:06:00Z"
    hosts = {row["host"]: row for row in twin["hosts"]}
    assert sorted(hosts) == sorted(before), "a --limit run dropped hosts from the fleet report"
    assert hosts["thor-devkit"]["status"] == "reverted" and hosts["thor-devkit"]["earlier_run"] is False
    for name, row in hosts.items():
        if name != "thor-devkit":
            assert row["earlier_run"] is True
            assert dict(row, earlier_run=False) == before[name], f"{name}'s earlier row was changed"
    assert twin["counts"]["total"] == len(before)
    assert merged["table"][0].startswith("host")
    line = next(text for text in merged["table"] if text.startswith("agx-orin-64"))
    assert "REVERTED*" in line
    assert any(text.startswith("* not in this run (--limit or another play)") and "agx-orin-64 finished" in text
               for text in merged["table"]), merged["table"]
    assert 'class="host-row earlier-run" data-host="agx-orin-64"' in merged["html"]
    assert 'class="host-row" data-host="thor-devkit"' in merged["html"]
    # The same --limit run again: nothing new, the report on disk is kept byte for byte.
    again = fr.report([thor], generated="2026-11-30T12:00:00Z", previous=merged["json"])
    assert again["unchanged"] is True and again["json"] == merged["json"]
    # A full run afterwards: nobody is an earlier run any more.
    full_again = fr.report(fixture_rows(), generated="2026-11-30T13:00:00Z", previous=merged["json"])
    assert not any(row["earlier_run"] for row in json.loads(full_again["json"])["hosts"])
    assert not any(text.startswith("* not in this run") for text in full_again["table"])


def test_hosts_gone_from_the_inventory_and_foreign_rows_are_not_carried():
    full = json.loads(fr.report(fixture_rows(), generated="2026-11-30T10:00:00Z")["json"])
    full["hosts"] += [{"host": "hand-written", "status": "enabled"}, "not a row", {"status": "enabled"}]
    thor = next(row for row in fixture_rows() if row["host"] == "thor-devkit")
    merged = fr.report([thor], previous=json.dumps(full), inventory_hosts=["thor-devkit", "agx-orin-64"])
    assert [row["host"] for row in merged["rows"]] == ["thor-devkit", "agx-orin-64"]
    merged = fr.report([thor], previous=json.dumps(full))
    assert "hand-written" not in [row["host"] for row in merged["rows"]]
    assert len(merged["rows"]) == len(fixture_rows())


def test_inventory_hosts_must_be_a_list():
    with pytest.raises(AnsibleFilterError, match="inventory_hosts= takes a list of host names"):
        flt.fleet_report(fixture_rows(), inventory_hosts="thor-devkit")


def test_a_host_that_serves_anyone_is_named_in_the_summary_the_html_and_the_counts():
    hosts = json.loads(FIXTURE.read_text())
    warning = ("vLLM listens on every address of this host (port 8000) without an API key: anyone who can reach this "
               "host can use the model. Set an API key (vllm_api_key), or serve this host only (vllm_host: 127.0.0.1).")
    hosts["thor-devkit"]["record"]["exposure"] = {"listen_host": "0.0.0.0", "api_key": False, "exposed": True,
                                                  "warning": warning}
    hosts["agx-orin-64"]["record"]["exposure"] = {"listen_host": "127.0.0.1", "api_key": False, "exposed": False,
                                                  "warning": None}
    # A record that only says "exposed" without the module's words, or a hostile type, shows nothing.
    hosts["orin-nano-super"]["record"]["exposure"] = {"exposed": "yes", "warning": 12}
    report = fr.report(fr.rows_from_hosts(list(hosts), hosts))
    assert report["counts"]["exposed"] == ["thor-devkit"]
    assert "Exposed (vLLM listens beyond the host without an API key): thor-devkit" in report["table"]
    assert '<p class="note exposed" id="exposed"><strong>Exposed:</strong>' in report["html"]
    assert '<p class="exposed"><strong>Exposed:</strong> vLLM listens on every address' in report["html"]
    rows = {row["host"]: row for row in report["rows"]}
    assert rows["agx-orin-64"]["exposure_warning"] is None and rows["orin-nano-super"]["exposure_warning"] is None
    quiet = fr.report(fixture_rows())
    assert quiet["counts"]["exposed"] == [] and 'id="exposed"' not in quiet["html"]
    assert not any(line.startswith("Exposed") for line in quiet["table"])


def test_each_cohort_has_one_line_with_its_canary_and_its_hosts_by_outcome():
    def record(status, role, canary, key="8fff37054387", label="thor-t5000 MAXN vLLM 0.32.0 target draft_model K=4"):
        return {"record": {"status": status, "reasons": ["r"],
                           "cohort": {"key": key, "label": label, "role": role, "canary": canary}}}
    hosts = {"t1": record("enabled", "verified", "t1"), "t2": record("enabled", "confirmed", "t1"),
             "t3": record("reverted", "verified", "t1"),
             "o1": record("reverted", "verified", "o1", key="12a8f612a441", label="orin"),
             "o2": record("reverted", "followed", "o1", key="12a8f612a441", label="orin"),
             "x": {"record": {"status": "refused", "reasons": ["no"]}},
             "bad": {"record": {"status": "enabled", "reasons": [], "cohort": {"key": 7, "role": ["<b>"]}}}}
    rows = fr.rows_from_hosts(list(hosts), hosts)
    found = {entry["key"]: entry for entry in fr.counts(rows)["cohorts"]}
    assert set(found) == {"8fff37054387", "12a8f612a441"}, "a host without a cohort, or a damaged one, is in none"
    thor = found["8fff37054387"]
    assert thor["canary"] == "t1" and thor["canary_status"] == "enabled" and thor["hosts"] == ["t1", "t2", "t3"]
    assert thor["by_status"] == {"enabled": 2, "reverted": 1}
    assert found["12a8f612a441"]["canary"] == "o1" and found["12a8f612a441"]["canary_status"] == "reverted"
    lines = fr.table(rows)
    assert "Cohort 8fff37054387 (thor-t5000 MAXN vLLM 0.32.0 target draft_model K=4): canary t1 (enabled); " \
           "enabled 2, reverted 1" in lines
    html = fr.report_html(rows)
    assert '<table id="cohorts">' in html and 'data-cohort="12a8f612a441"' in html
    assert "cohort 8fff37054387 (confirmed), canary t1" in html
    assert json.loads(fr.report(rows)["json"])["counts"]["cohorts"][0]["key"] == "12a8f612a441"


def fleet_of(size, cohorts=5):
    """``size`` hosts in ``cohorts`` cohorts: each cohort's first host its canary (verified, measured), the others
    confirmed (measured, shorter) or followed; every 10th host failed, every 17th unreachable."""
    hosts = {}
    for index in range(size):
        cohort = index % cohorts
        name = "h%03d" % index
        canary = "h%03d" % cohort
        role = "verified" if name == canary else ("confirmed" if cohort % 2 == 0 else "followed")
        status = "enabled" if cohort % 2 == 0 else "reverted"
        record = {"status": status, "reasons": ["r %d" % index],
                  "cohort": {"key": "c%011d" % cohort, "label": "cohort %d" % cohort, "role": role, "canary": canary}}
        if role != "followed":
            change = 0.5 if status == "enabled" else -0.2
            record["baseline"] = [{"concurrency": 1, "throughput_tok_s": 20.0, "tpot_ms_p50": 40.0}]
            record["candidate"] = [{"concurrency": 1, "throughput_tok_s": 20.0 * (1 + change), "tpot_ms_p50": 30.0}]
            record["deltas"] = {"throughput_gain_c1": change, "acceptance_rate": 0.7}
        hosts[name] = {"record": record}
        if index and index % 10 == 0:
            hosts[name] = {"record": {"status": "failed", "reasons": ["boom %d" % index]}}
        if index % 17 == 16:
            hosts[name] = {"record": None, "state": "unreachable", "error": "no route"}
    return hosts


def test_at_fleet_size_the_page_stays_bounded_attention_first_cohorts_with_their_canarys_evidence():
    hosts = fleet_of(100)
    rows = fr.rows_from_hosts(list(hosts), hosts)
    page = fr.report_html(rows, generated="now")
    # the chart: at most a screenful of hosts, the cohorts' canaries first, and it says how many are left out
    svg = re.search(r'<svg id="change-chart".*?</svg>', page, re.S).group(0)
    charted = re.findall(r'<g class="host" data-host="([^"]+)"', svg)
    measured = [item["host"] for item in rows if item["change_c1"] is not None]
    assert len(measured) > fr.CHART_MAX_HOSTS and len(charted) == fr.CHART_MAX_HOSTS, charted
    assert set(charted[:5]) == {"h000", "h001", "h002", "h003", "h004"}, charted
    assert "%d more measured hosts in the table" % (len(measured) - fr.CHART_MAX_HOSTS) in page
    # the table: HOST_ROWS_OPEN lines open, the hosts that need attention first; the others one click away
    open_part, more = page.split('<details id="more-hosts">')
    opened = re.findall(r'<tr class="host-row[^"]*" data-host="([^"]+)" data-status="([^"]+)"', open_part)
    hidden = re.findall(r'<tr class="host-row[^"]*" data-host="([^"]+)" data-status="([^"]+)"', more)
    assert len(opened) == fr.HOST_ROWS_OPEN and len(opened) + len(hidden) == 100
    attention = [host for host, status in opened + hidden if status in fr.ATTENTION]
    assert [host for host, _status in (opened + hidden)[:len(attention)]] == attention, "attention is not first"
    assert [status for _host, status in opened[:3]] == ["failed", "failed", "failed"]
    summary = re.search(r'<details id="more-hosts"><summary>(.*?)</summary>', page).group(1)
    assert summary.startswith("%d more hosts: " % len(hidden)) and "enabled" in summary, summary
    # one line per cohort, its canary's evidence in it, expandable to its hosts
    cohort_rows = re.findall(r'<tr data-cohort="([^"]+)"><td>.*?</td><td>(.*?)</td>', page)
    assert len(cohort_rows) == 5
    canary_cell = dict(cohort_rows)["c00000000000"]
    assert canary_cell.startswith("h000 (enabled)") and "c=1 +50 %" in canary_cell and "acceptance 0.70" in canary_cell


def test_a_small_fleet_keeps_every_line_open_and_every_measured_host_on_the_chart():
    rows = fixture_rows()
    page = fr.report_html(rows, generated="now")
    assert 'id="more-hosts"' not in page and "more measured host" not in page
    measured = [item["host"] for item in rows if item["change_c1"] is not None or item["change_c8"] is not None]
    in_order = [item["host"] for item in fr.sort_rows(rows) if item["host"] in measured]
    assert re.findall(r'<g class="host" data-host="([^"]+)"', page) == in_order
