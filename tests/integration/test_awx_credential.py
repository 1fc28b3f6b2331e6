"""The AWX credential type in awx/credential_type.yml, injected by AWX's own code into real jobs.

AWX renders a custom credential type's injectors with ``inject_credential`` of the
``awx_plugins.interfaces`` package (AWX's models call it; the same code, from PyPI): the
``extra_vars`` injector becomes a 0400 YAML file in the job's private data directory, passed as
``-e @file``. Here that function injects a credential of this collection's type, and
ansible-runner (the library AWX runs jobs with) runs:

* ``jetson_llm.vllm.benchmark`` against a REAL vLLM that requires an API key (the test bed's
  ``vllm_spec``): it succeeds only when the key arrived; the same job without the credential
  fails with the server's 401;
* the serve role's secrets tasks in check mode over the file the role writes for known values:
  unchanged only when both the HF token and the API key arrived as given; a credential with another
  token reports a change.

No job's output, events or results may contain either secret.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import ansible_runner
import yaml
# AWX's credential injection (tests/requirements.txt): a missing package fails the suite, never skips it
from awx_plugins.interfaces._temporary_private_api import ManagedCredentialType
from awx_plugins.interfaces._temporary_private_credential_api import Credential
from awx_plugins.interfaces._temporary_private_inject_api import inject_credential

from conftest import BIN, TOP, _ansible_env
# pytest fixtures, used by name as test arguments
from vllm_testbed import SPEC_API_KEY, testbed, vllm_spec  # noqa: F401  pylint: disable=unused-import

CREDENTIAL_TYPE = TOP / "awx" / "credential_type.yml"
SERVE_SPECS = TOP / "roles" / "serve" / "meta" / "argument_specs.yml"
SECRETS_PLAYBOOK = TOP / "tests" / "integration" / "playbooks" / "awx" / "secrets_file.yml"
OUT = TOP / "tests" / "output" / "awx"
HF_TOKEN = "hf_awxCredentialTest0123456789"
WORKLOAD = {"concurrency": [1], "num_prompts": 4, "warmup_prompts": 1, "input_len": 32, "output_len": 8,
            "dataset": "random", "temperature": 0, "seed": 3, "request_timeout": 120}


def credential_type():
    return yaml.safe_load(CREDENTIAL_TYPE.read_text())


def inject(inputs, private):
    """AWX's injection of a credential of this type: returns the ansible-playbook arguments it adds."""
    spec = credential_type()
    cred_type = ManagedCredentialType(namespace="jetson_llm_vllm", name=spec["name"], kind=spec["kind"],
                                      inputs=spec["inputs"], injectors=spec["injectors"])
    (private / "env").mkdir(parents=True, exist_ok=True)
    env, safe_env, args = {}, {}, []
    inject_credential(cred_type, Credential(inputs), env, safe_env, args, str(private),
                      container_root=str(private))  # no execution-environment container here
    assert env == {} and safe_env == {}, "the credential type injects no environment variable"
    return args


def run_job(private, playbook, inventory, args=(), extravars=None, check=False):
    """One job through ansible-runner, as AWX runs it; returns (status, stdout, every artefact's text)."""
    private.mkdir(parents=True, exist_ok=True)
    env = _ansible_env()
    cmdline = " ".join(list(args) + (["--check"] if check else []))
    result = ansible_runner.run(
        private_data_dir=str(private), playbook=str(playbook), inventory=str(inventory), ident="job",
        extravars=extravars or {}, cmdline=cmdline or None, quiet=True,
        envvars={key: env[key] for key in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_PYTHON_INTERPRETER", "PATH",
                                           "ANSIBLE_NOCOLOR", "ANSIBLE_HOST_KEY_CHECKING")})
    artifacts = private / "artifacts" / "job"
    stdout = (artifacts / "stdout").read_text(errors="replace")
    everything = "\n".join(path.read_text(errors="replace") for path in sorted(artifacts.rglob("*")) if path.is_file())
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{private.name}.log").write_text(stdout)
    return result.status, stdout, everything


def localhost_inventory(path, hostvars):
    path.write_text(json.dumps({"all": {"hosts": {"localhost": dict(
        {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}, **hostvars)}}}))
    return path


def test_the_credential_type_is_one_awx_accepts_and_injects_what_the_roles_read():
    spec = credential_type()
    assert set(spec) == {"name", "description", "kind", "inputs", "injectors"}  # awx.awx.credential_type's arguments
    assert spec["kind"] == "cloud"
    fields = {field["id"]: field for field in spec["inputs"]["fields"]}
    assert set(fields) == {"hf_token", "api_key"}
    for field in fields.values():
        assert field["type"] == "string" and field["secret"] is True and field["label"]
    assert set(spec["inputs"].get("required", [])) <= set(fields)
    assert set(spec["injectors"]) == {"extra_vars"}
    serve_options = yaml.safe_load(SERVE_SPECS.read_text())["argument_specs"]["main"]["options"]
    for var in spec["injectors"]["extra_vars"]:
        assert var in serve_options, f"{var} is not a variable of the serve role"
        assert serve_options[var].get("no_log") is True, f"{var} is not marked no_log in the serve role's spec"


def test_an_awx_job_with_the_credential_benchmarks_a_key_protected_vllm_and_echoes_no_secret(vllm_spec, tmp_path):
    inventory = localhost_inventory(tmp_path / "inventory.json", {
        "vllm_host": "127.0.0.1", "vllm_port": vllm_spec.port, "vllm_served_model_name": vllm_spec.name})
    extravars = {"jetson_spec_hosts": "all", "jetson_spec_benchmark": WORKLOAD}

    # AWX's injection of the credential: one extra-vars file, readable by its owner only
    private = tmp_path / "with-credential"
    args = inject({"hf_token": HF_TOKEN, "api_key": SPEC_API_KEY}, private)
    assert len(args) == 2 and args[0] == "-e" and args[1].startswith("@")
    injected = Path(args[1][1:])
    assert stat.S_IMODE(injected.stat().st_mode) == 0o400
    assert yaml.safe_load(injected.read_text()) == {"vllm_hf_token": HF_TOKEN, "vllm_api_key": SPEC_API_KEY}

    reports = tmp_path / "reports"
    extravars["jetson_spec_report_dir"] = str(reports)
    status, stdout, everything = run_job(private, "jetson_llm.vllm.benchmark", inventory, args, extravars)
    assert status == "successful", stdout[-4000:]
    result = json.loads((reports / "benchmarks" / "localhost.json").read_text())
    assert result["runs"][0]["completed"] == WORKLOAD["num_prompts"] and result["runs"][0]["failed"] == 0
    for secret in (SPEC_API_KEY, HF_TOKEN):
        assert secret not in everything, "a secret appears in the job's artefacts"
        assert secret not in json.dumps(result), "a secret appears in the benchmark result"

    # the same job template without the credential: the server refuses the requests
    private = tmp_path / "without-credential"
    status, stdout, everything = run_job(private, "jetson_llm.vllm.benchmark", inventory, (), extravars)
    assert status == "failed", stdout[-4000:]
    assert "401" in stdout, stdout[-4000:]
    assert SPEC_API_KEY not in everything


def _reference_secrets_file(config_dir, hf_token, api_key):
    """The file the serve role's template gives for these values (rendered by the template module, no role)."""
    template = TOP / "roles" / "serve" / "templates" / "env.j2"
    cmd = [str(BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m", "ansible.builtin.template",
           "-a", json.dumps({"src": str(template), "dest": str(config_dir / "vllm.env"), "mode": "0600"}),
           "-e", json.dumps({"vllm_service_name": "vllm", "vllm_hf_token": hf_token, "vllm_api_key": api_key})]
    proc = subprocess.run(cmd, cwd=TOP, env=_ansible_env(), text=True, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _secrets_task(stdout):
    """'ok' or 'changed': the status of the serve role's "Write the secrets file" task in a default-callback log."""
    block = stdout.split("TASK [jetson_llm.vllm.serve : Write the secrets file (HF token, API key), mode 0600]")[1]
    starts = ("ok:", "changed:", "skipping:", "fatal:")
    line = next(item for item in block.splitlines() if item.strip().startswith(starts))
    return line.split(":")[0].strip()


def test_the_credential_reaches_the_serve_roles_secrets_file_exactly(tmp_path):
    config_dir = tmp_path / "etc-vllm"
    config_dir.mkdir(mode=0o700)
    os.chmod(config_dir, 0o700)
    _reference_secrets_file(config_dir, HF_TOKEN, SPEC_API_KEY)
    reference = (config_dir / "vllm.env").read_bytes()
    assert HF_TOKEN.encode() in reference and SPEC_API_KEY.encode() in reference
    assert os.geteuid() == 0, "the serve role writes root:root files: run the suite as root"
    inventory = localhost_inventory(tmp_path / "inventory.json", {
        "vllm_config_dir": str(config_dir), "vllm_service_name": "vllm", "vllm_service_manager": "systemd"})

    outcomes = {}
    for label, inputs in (("same", {"hf_token": HF_TOKEN, "api_key": SPEC_API_KEY}),
                          ("other-token", {"hf_token": HF_TOKEN + "x", "api_key": SPEC_API_KEY})):
        private = tmp_path / f"secrets-{label}"
        args = inject(inputs, private)
        status, stdout, everything = run_job(private, SECRETS_PLAYBOOK, inventory, args, check=True)
        assert status == "successful", stdout[-4000:]
        outcomes[label] = _secrets_task(stdout)
        for secret in (HF_TOKEN, SPEC_API_KEY):
            assert secret not in everything, f"a secret appears in the {label} job's artefacts"
    # the injected values give the role's file byte for byte; another token would change it
    assert outcomes == {"same": "ok", "other-token": "changed"}
    assert (config_dir / "vllm.env").read_bytes() == reference  # check mode wrote nothing
