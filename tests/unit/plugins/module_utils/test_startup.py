"""Start-up failure classification and the health wait (module_utils/_server/startup.py)."""
import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.startup_failures import FAILURE_KINDS
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import startup as st
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.systemd import parse_systemctl_show

# Lines as vLLM prints them (reference: vllm-speculative-config.md, service-and-awx-facts.md, and the
# real test bed's journal).
BADVOCAB = ("(EngineCore pid=69) ERROR 11-30 17:21:59 [core.py:1510] ValueError: Target and draft model should have "
            "the same vocabulary size. Target model vocab_size=512. Draft model vocab_size=300.")
UNKNOWN_KEY = "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n  Unexpected keyword argument"
KV = ("ValueError: To serve at least one request with the model's max seq len (8192), (1.5 GiB KV cache is needed, "
      "which is larger than the available KV cache memory (0.8 GiB).")
NO_BLOCKS = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
CUDA = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
ENGINE = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
COMPILE = ("RuntimeError: Worker failed with error 'CppCompileError: C++ compile error\n" + ENGINE)


@pytest.mark.parametrize("log,kind,needle", [
    (BADVOCAB, "config_rejected", "same vocabulary size"),
    (UNKNOWN_KEY, "config_rejected", "Unexpected keyword argument"),
    ("ValidationError: 1 validation error for SpeculativeConfig", "config_rejected", "validation error"),
    ("num_speculative_tokens was provided but without speculative model.", "config_rejected", "num_speculative_tokens"),
    ("ValueError: Unsupported speculative method: 'foo'", "config_rejected", "Unsupported"),
    # vLLM 0.32 vllm/config/speculative.py, word for word
    ("ValueError: num_speculative_tokens:4 must be divisible by n_predict=3", "config_rejected", "n_predict=3"),
    ("ImportError: Arctic Inference is required for suffix decoding. Install via `pip install "
     "arctic-inference==0.1.1`.", "config_rejected", "Arctic Inference"),
    # any NotImplementedError at start-up (its message varies by model; this one is illustrative)
    ("NotImplementedError: MTP is not supported for NemotronHForCausalLM", "config_rejected", "NotImplementedError"),
    (KV, "kv_cache", "KV cache"),
    (NO_BLOCKS, "kv_cache", "No available memory"),
    # A Jetson out of memory (unified memory: NvMap, the kernel's OOM killer, SIGKILL during start-up).
    ("NvMapMemAllocInternalTagged: 1075072515 error 12", "oom", "error 12"),
    ("NvMapMemHandleAlloc: error 0\nNvMapMemAllocInternalTagged: 1075072515 error 12", "oom", "NvMapMemAllocInternalTagged"),
    ("vllm.service: A process of this unit has been killed by the OOM killer.", "oom", "OOM killer"),
    ("vllm.service: Failed with result 'oom-kill'.", "oom", "oom-kill"),
    ("kernel: Out of memory: Killed process 4242 (python3) total-vm:30123456kB", "oom", "Killed process"),
    ("vllm.service: Main process exited, code=killed, status=9/KILL", "oom", "status=9/KILL"),
    ("vllm-vllm-1 exited with code 137", "oom", "137"),
    (CUDA, "oom", "CUDA out of memory"),
    ("ValueError: Free memory on device (3.1/7.4 GiB) on startup is less than desired GPU memory utilization (0.9, 6.7 GiB).",
     "oom", "less than desired"),
    (ENGINE, "engine_init", "Engine core initialization failed"),
    (COMPILE, "engine_init", "Engine core"),
])
def test_classify_log_names_the_failure_with_its_line(log, kind, needle):
    found, evidence = st.classify_log("INFO starting\n" + log + "\nINFO shutting down")
    assert found == kind
    assert needle in evidence


def test_a_kv_cache_shortage_is_not_a_plain_oom_even_after_an_nvmap_line():
    kind, evidence = st.classify_log("NvMapMemAllocInternalTagged: 1075072515 error 12\n" + KV)
    assert kind == "kv_cache" and "KV cache" in evidence


def test_every_failure_kind_is_named_once():
    assert len(set(FAILURE_KINDS)) == len(FAILURE_KINDS)
    assert {kind for kind, _needles in st.LOG_PATTERNS} <= set(FAILURE_KINDS)


def test_a_memory_failure_wins_over_the_engine_line_that_follows_it():
    assert st.classify_log(NO_BLOCKS + "\n" + ENGINE)[0] == "kv_cache"
    assert st.classify_log(CUDA + "\n" + ENGINE)[0] == "oom"


def test_the_specific_reason_wins_over_the_generic_validation_header():
    log = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
           "  Value error, Target and draft model should have the same vocabulary size. Target model vocab_size=512. "
           "Draft model vocab_size=300. [type=value_error]")
    kind, evidence = st.classify_log(log)
    assert kind == "config_rejected" and "same vocabulary size" in evidence


def test_a_rejected_config_wins_over_everything():
    assert st.classify_log(ENGINE + "\n" + CUDA + "\n" + BADVOCAB)[0] == "config_rejected"


def test_nothing_recognised():
    assert st.classify_log("INFO all good\n") == (None, None)
    assert st.last_error_line("a\nKeyError: 'x'\nb") == "KeyError: 'x'"
    assert st.last_error_line("") is None


def test_evidence_is_bounded_and_ansi_free():
    found, evidence = st.classify_log("\x1b[31m" + "CUDA out of memory " + "x" * 5000 + "\x1b[0m")
    assert found == "oom" and len(evidence) <= st.MAX_EVIDENCE and "\x1b" not in evidence


def test_systemd_state():
    show = "ActiveState=activating\nSubState=auto-restart\nNRestarts=3\nMainPID=0\nLoadState=loaded\n"
    assert st.systemd_state(parse_systemctl_show(show)) == {
        "status": "restarting", "restarts": 3, "main_pid": None, "detail": "activating (auto-restart)",
        "exit_code": None, "exit_status": None, "oom_killed": None}
    assert st.systemd_state(parse_systemctl_show("ActiveState=active\nSubState=running\nMainPID=42\nNRestarts=0"))["status"] == "running"
    assert st.systemd_state(parse_systemctl_show("ActiveState=failed\nSubState=failed"))["status"] == "stopped"
    assert st.systemd_state(parse_systemctl_show("LoadState=not-found\nActiveState=inactive"))["status"] == "not-found"


def test_docker_state_never_reads_env():
    inspect = {"State": {"Status": "restarting", "Pid": 0}, "RestartCount": "2", "Config": {"Env": ["HF_TOKEN=x"]}}
    state = st.docker_state(inspect)
    assert state == {"status": "restarting", "restarts": 2, "main_pid": None, "detail": "restarting",
                     "exit_code": None, "exit_status": None, "oom_killed": None}
    assert "HF_TOKEN" not in repr(state)


class FakeEndpoint:
    """Answers like a vLLM that becomes healthy at poll ``ready_at`` (None: never)."""

    def __init__(self, ready_at=None, models=("m",)):
        self.polls = 0
        self.ready_at = ready_at
        self.models = models

    def call(self, method, path):
        self.polls += 1
        if self.ready_at is None or self.polls < self.ready_at:
            raise st.EndpointError("GET http://x/health failed: connection refused")
        return 200, b""

    def get_json(self, path):
        return {"data": [{"id": m} for m in self.models]}

    def within(self, seconds):
        self.limits = getattr(self, "limits", []) + [seconds]
        return self


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(seconds, 0.5)


def _wait(endpoint, states, log="", timeout=100, **kw):
    clock = Clock()
    it = iter(states)
    last = [None]

    def read_state():
        try:
            last[0] = next(it)
        except StopIteration:
            pass
        return last[0]
    return st.wait_healthy(endpoint, "m", read_state, lambda: log, timeout=timeout, interval=1, clock=clock,
                           sleep=clock.sleep, **kw)


RUNNING = {"status": "running", "restarts": 0, "main_pid": 5, "detail": "active"}


def test_healthy_after_a_few_polls():
    result = _wait(FakeEndpoint(ready_at=4), [RUNNING])
    assert result["healthy"] and result["failure"] is None and result["polls"] == 4


def test_model_must_be_listed():
    result = _wait(FakeEndpoint(ready_at=1, models=("other",)), [RUNNING], timeout=5)
    assert not result["healthy"] and result["failure"] == "timeout"
    assert '"other"' in result["probe"]


def test_crash_loop_ends_the_wait_at_once_with_the_log_reason():
    states = [RUNNING, dict(RUNNING, status="restarting", restarts=1)]
    result = _wait(FakeEndpoint(), states, log=BADVOCAB, timeout=1000)
    assert result["failure"] == "config_rejected" and result["elapsed_s"] < 10
    assert result["restarts_during_wait"] == 1


def test_crash_loop_without_a_known_line():
    states = [RUNNING, dict(RUNNING, restarts=2)]
    result = _wait(FakeEndpoint(), states, log="boom\nKeyError: 'x'", timeout=1000)
    assert result["failure"] == "crash_loop" and result["evidence"] == "KeyError: 'x'"


def test_restarts_allowed():
    states = [RUNNING, dict(RUNNING, restarts=1), dict(RUNNING, restarts=1)]
    result = _wait(FakeEndpoint(ready_at=5), states, max_restarts=1)
    assert result["healthy"]


def test_early_exit_after_the_grace_period():
    stopped = {"status": "stopped", "restarts": 0, "main_pid": None, "detail": "failed (failed)"}
    result = _wait(FakeEndpoint(), [stopped], log=KV, timeout=1000)
    assert result["failure"] == "kv_cache" and 20 <= result["elapsed_s"] < 30


def test_timeout_when_it_never_answers():
    result = _wait(FakeEndpoint(), [RUNNING], timeout=30)
    assert result["failure"] == "timeout" and result["elapsed_s"] >= 30


def test_no_manager_only_http():
    clock = Clock()
    result = st.wait_healthy(FakeEndpoint(ready_at=2), "m", None, None, timeout=10, clock=clock, sleep=clock.sleep)
    assert result["healthy"] and result["state"] is None


def test_every_look_is_bounded_by_the_time_left_in_the_wait():
    """A server that trickles its answer cannot hold a look past the wait's own timeout (request_deadline aside)."""
    endpoint = FakeEndpoint(ready_at=None)
    result = _wait(endpoint, [None], timeout=10)
    assert result["failure"] == "timeout"
    assert endpoint.limits and all(limit <= 10 for limit in endpoint.limits)
    # the looks' limits shrink with the time left
    assert endpoint.limits[-1] < endpoint.limits[0]


# --- out of memory seen by the manager, not in vLLM's own log (issue: docker run under systemd exits 137) ---------
DOCKER_RUN_137_JOURNAL = (
    "Dec 06 10:00:01 orin docker[812]: INFO 12-06 10:00:01 [gpu_model_runner.py] Loading model weights took 7.1 GiB\n"
    "Dec 06 10:00:09 orin systemd[1]: vllm.service: Main process exited, code=exited, status=137/n/a\n"
    "Dec 06 10:00:09 orin systemd[1]: vllm.service: Failed with result 'exit-code'.\n")


def test_docker_run_under_systemd_exiting_137_is_oom_from_the_journal():
    kind, evidence = st.classify_log(DOCKER_RUN_137_JOURNAL)
    assert kind == "oom" and "status=137/n/a" in evidence


def test_exec_main_status_137_is_oom_when_the_log_says_nothing():
    props = {"ActiveState": "failed", "SubState": "failed", "NRestarts": "0", "MainPID": "0", "LoadState": "loaded",
             "ExecMainCode": "1", "ExecMainStatus": "137"}
    state = st.systemd_state(props)
    assert state["exit_code"] == "exited" and state["exit_status"] == 137
    result = _wait(FakeEndpoint(), [state], log="INFO loading\n", timeout=100)
    assert result["failure"] == "oom" and "status 137" in result["evidence"]


def test_sigkill_of_the_main_process_is_oom_and_a_plain_exit_is_not():
    killed = st.systemd_state({"ActiveState": "failed", "SubState": "failed", "ExecMainCode": "2",
                               "ExecMainStatus": "9"})
    assert _wait(FakeEndpoint(), [killed], log="", timeout=100)["failure"] == "oom"
    plain = st.systemd_state({"ActiveState": "failed", "SubState": "failed", "ExecMainCode": "1",
                              "ExecMainStatus": "1"})
    result = _wait(FakeEndpoint(), [plain], log="ValueError: something else\n", timeout=100)
    assert result["failure"] == "early_exit" and result["evidence"] == "ValueError: something else"


def test_docker_oom_killed_is_oom_and_config_rejected_still_wins():
    inspect = {"State": {"Status": "exited", "ExitCode": 137, "OOMKilled": True, "Pid": 0}, "RestartCount": 0}
    state = st.docker_state(inspect)
    assert state["oom_killed"] is True and state["exit_status"] == 137
    result = _wait(FakeEndpoint(), [state], log="", timeout=100)
    assert result["failure"] == "oom" and "State.OOMKilled" in result["evidence"]
    # a log that says why (vLLM refused the config) names the failure, whatever killed the container then
    rejected = _wait(FakeEndpoint(), [state], log="ValueError: validation error for SpeculativeConfig\n", timeout=100)
    assert rejected["failure"] == "config_rejected"


@pytest.mark.parametrize("line", [
    # vLLM 0.25+ with VLLM_USE_V2_MODEL_RUNNER=1 and a method Model Runner V2 does not run yet
    "ValueError: Model Runner V2 does not yet support: speculative method 'suffix'",
    # vLLM 0.20 to 0.24, the same
    "ValueError: VLLM_USE_V2_MODEL_RUNNER does not yet support: ngram/ngram_gpu speculative decoding",
    # vLLM 0.33+: a speculators checkpoint whose verifier is a local path (offline Jetsons)
    "ValueError: Speculators verifier must name a remote model repository. Select local verifiers explicitly with "
    "--model and --speculative-config.",
    "ValueError: P-EAGLE (parallel drafting EAGLE-3) is not supported.",
    "ValueError: parallel_drafting is only supported by the dflash and dspark methods, not 'eagle3'.",
])
def test_texts_of_newer_vllm_releases_are_config_rejected(line):
    kind, evidence = st.classify_log("INFO starting\n" + line + "\nEngine core initialization failed\n")
    assert kind == "config_rejected" and evidence == line[:st.MAX_EVIDENCE]


def test_the_previous_process_s_kill_at_its_stop_is_not_this_start_s_oom():
    """docker stop that ended in SIGKILL (exit 137) belongs to the process that was stopped, not to the new start."""
    log = ("Dec 06 10:00:00 orin systemd[1]: Stopping vllm.service - vLLM...\n"
           "Dec 06 10:00:10 orin systemd[1]: vllm.service: Main process exited, code=exited, status=137/n/a\n"
           "Dec 06 10:00:10 orin systemd[1]: Starting vllm.service - vLLM...\n"
           "Dec 06 10:00:10 orin systemd[1]: Started vllm.service - vLLM.\n"
           "Dec 06 10:00:40 orin docker[9]: ValueError: something else went wrong\n")
    assert st.classify_log(log) == (None, None)
    again = log + "Dec 06 10:00:41 orin systemd[1]: vllm.service: Main process exited, code=exited, status=137/n/a\n"
    assert st.classify_log(again)[0] == "oom"
