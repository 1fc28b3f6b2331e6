#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_state
short_description: Read a host's speculative-decoding state in one pass and decide what a run does
version_added: 0.1.0
description:
  - Reads, on the target, everything the lifecycle of M(jetson_llm.vllm.speculative_decoding) depends on, in one
    pass, and returns one action from a closed set with its reasons. The role dispatches on RV(action).
  - "What it reads: the deployed service as M(jetson_llm.vllm.vllm_service_info) reads it (the unit with its
    drop-ins or the project's compose files, and the command line of the B(running) process or container), this
    collection's overlay (M(jetson_llm.vllm.speculative_overlay)), the recorded outcome (O(fact_file), any schema
    this collection wrote; a damaged record counts as none, with a reason, and the host is verified again) and the
    guard (the timer O(guard_unit), the boot-time unit O(boot_guard))."
  - "The inputs are normalised the Ansible way before they are compared with the record: V(\"false\"), V(\"no\"),
    V(0) are false, numeric strings are numbers; a value that is neither fails with the option's name. An AWX
    survey's string booleans therefore give the same fingerprint as YAML booleans."
  - "Actions: V(in_sync) (nothing to do), V(verify) (benchmark, try, keep or revert), V(reconcile) (the record says
    speculation is off but the running process has it: remove it), V(resume) (a change was interrupted: roll it
    back, then decide again), V(disable), V(refuse) (speculation runs that this collection did not put there),
    V(skip) (no service, or it does not run). docs/lifecycle.md has the rules as a table."
  - The module changes nothing.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm.service.name
  - jetson_llm.vllm.service
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.reader
options:
  fact_file:
    description:
      - The outcome record (JSON) of earlier runs, an absolute path.
      - A record that cannot be read (not a regular file, not JSON, nested too deep, a number JSON cannot carry, an
        unknown status, no or an invalid schema) counts as none, with a warning saying why, and the host is verified
        again.
      - A record of a newer schema (written by a newer release of this collection) fails the module, naming both
        versions; nothing is read further and nothing changes.
    type: path
    required: true
  guard_unit:
    description:
      - The guard's systemd timer, without C(.timer). Armed means C(ActiveState) active or activating.
      - The same rule as O(name).
    type: str
    required: true
  boot_guard:
    description:
      - The guard's boot-time unit file (compose, where a container comes back with its configuration after a reboot).
        Armed means the file exists.
    type: path
  drain_marker:
    description:
      - The file the role writes when its drain hook takes the host out of service, and removes once its undrain hook
        has put it back.
      - Present (whatever it holds), the host is still out of service from an earlier run that was interrupted, so
        RV(drained) is true and a reason says so; the action is decided as without it (the role puts the host back at
        the end of the run).
    type: path
  state:
    description: V(enabled) runs the loop; V(disabled) removes speculation on purpose.
    type: str
    choices: [enabled, disabled]
    default: enabled
  force_verify:
    description: Verify again even when nothing changed.
    type: bool
    default: false
  default_gpu_memory_utilization:
    description:
      - The baseline C(--gpu-memory-utilization) when the running service does not say (vLLM's default is 0.9).
      - While speculation runs, the baseline value is the one recorded when the change was made.
    type: float
    default: 0.9
  baseline:
    description:
      - What the baseline's outcome depends on besides the workload (L4T, JetPack, vLLM version, image, model, the
        nvpmodel power mode, whether jetson_clocks locked the clocks, ...), as the role gathers it. Part of both
        fingerprints, as given; C(clocks_locked) only when known (a null or empty value is left out, so a host whose
        clock state cannot be read keeps its fingerprint).
    type: dict
    default: {}
  workload:
    description: The benchmark workload (the options of M(jetson_llm.vllm.vllm_benchmark)), normalised.
    type: dict
    default: {}
    suboptions:
      concurrency:
        description: The concurrency levels.
        type: list
        elements: int
      num_prompts:
        description: Prompts per level.
        type: int
      warmup_prompts:
        description: Warm-up prompts per level.
        type: int
      input_len:
        description: Prompt tokens.
        type: int
      output_len:
        description: Output tokens.
        type: int
      dataset:
        description: The prompt set.
        type: str
      prompts_file:
        description: A prompts file.
        type: str
      temperature:
        description: Sampling temperature.
        type: float
      ignore_eos:
        description: Ignore end-of-sequence.
        type: bool
      seed:
        description: The seed.
        type: int
      max_failed_ratio:
        description: Failed requests allowed.
        type: float
      request_timeout:
        description: Per-request timeout.
        type: float
      request_deadline:
        description: Whole-benchmark deadline.
        type: float
  inputs:
    description:
      - The decision inputs (method, models, K, concurrency, thresholds), normalised; part of the fingerprint.
        Options not given are left out of it.
    type: dict
    default: {}
    suboptions:
      method:
        description: jetson_spec_method.
        type: str
      eagle3_head:
        description: jetson_spec_eagle3_head.
        type: str
      draft_model:
        description: jetson_spec_draft_model.
        type: str
      smaller_draft_model:
        description: jetson_spec_smaller_draft_model.
        type: str
      num_speculative_tokens:
        description: jetson_spec_num_speculative_tokens.
        type: int
      expected_concurrency:
        description: jetson_spec_expected_concurrency.
        type: int
      allow_small_devices:
        description: jetson_spec_allow_small_devices.
        type: bool
      extra_config:
        description: jetson_spec_extra_config.
        type: dict
      min_throughput_gain:
        description: jetson_spec_min_throughput_gain.
        type: float
      min_tpot_reduction:
        description: jetson_spec_min_tpot_reduction.
        type: float
      disable_below_gain:
        description: jetson_spec_disable_below_gain.
        type: float
      c8_tolerance:
        description: jetson_spec_c8_tolerance.
        type: float
      c8_margin:
        description: jetson_spec_c8_margin.
        type: float
      max_ttft_increase:
        description: jetson_spec_max_ttft_increase (left out of the fingerprint when unset).
        type: float
      keep_marginal:
        description: jetson_spec_keep_marginal.
        type: bool
      phase_shift:
        description: jetson_spec_phase_shift.
        type: dict
        suboptions:
          c1:
            description: The shift at concurrency 1 (a fraction).
            type: float
          c8:
            description: The shift at concurrency 8 (a fraction).
            type: float
      decide_undetermined:
        description: jetson_spec_decide_undetermined.
        type: str
      measurement:
        description: jetson_spec_measurement.
        type: str
'''

EXAMPLES = r'''
- name: What does this run do on the host?
  jetson_llm.vllm.speculative_state:
    name: vllm
    fact_file: /etc/ansible/facts.d/jetson_vllm_speculative.fact
    guard_unit: jetson-spec-guard-vllm
    inputs:
      keep_marginal: "false"   # an AWX survey's string: the same as false
      expected_concurrency: "1"
  register: state

- name: Dispatch on it
  ansible.builtin.debug:
    msg: "{{ state.action }}: {{ state.reasons | join(' ') }}"
'''

RETURN = r'''
action:
  description: What the run does, one of V(in_sync), V(verify), V(reconcile), V(resume), V(disable), V(refuse), V(skip).
  returned: always
  type: str
  sample: in_sync
rule:
  description: The rule that chose the action (its number in docs/lifecycle.md's table).
  returned: always
  type: int
remove_speculation:
  description: Whether the action restores the last-known-good (non-speculative) service first.
  returned: always
  type: bool
reasons:
  description: Why, in sentences.
  returned: always
  type: list
  elements: str
record:
  description: The recorded outcome (with its C(schema)), or an empty dictionary.
  returned: always
  type: dict
record_problem:
  description: Why the record file was ignored (damaged, unknown status, no schema), or null.
  returned: always
  type: str
running:
  description: The running process as read from C(/proc) or the container.
  returned: always
  type: dict
  contains:
    running: {description: "A main process or container runs.", type: bool, returned: always}
    speculative: {description: "Its command line has C(--speculative-config).", type: bool, returned: always}
    speculative_config: {description: "That configuration, or null.", type: dict, returned: always}
    gpu_memory_utilization: {description: "Its C(--gpu-memory-utilization), or null.", type: float, returned: always}
service:
  description: The service definition on disk.
  returned: always
  type: dict
  contains:
    exists: {description: "The unit or compose file exists.", type: bool, returned: always}
    path: {description: "Its path.", type: str, returned: always}
    sha256:
      description:
        - "systemd: one sha256 over the unit and its drop-ins without this collection's overlay (the baseline),
          so an operator's edit or new drop-in changes it. Compose: one sha256 over the project's own compose files
          and its C(.env), without this collection's override. Null when missing."
      type: str
      returned: always
    speculative: {description: "The effective definition (with the overlay) has C(--speculative-config).", type: bool, returned: always}
    model: {description: "The model it serves (running process first, else the file), or null.", type: str, returned: always}
    port: {description: "Its port, or null.", type: int, returned: always}
overlay:
  description: "This collection's overlay (M(jetson_llm.vllm.speculative_overlay)): a drop-in (systemd) or an override
    file (compose)."
  returned: always
  type: dict
  contains:
    candidate: {description: "The unverified overlay exists.", type: bool, returned: always}
    committed: {description: "The kept overlay exists.", type: bool, returned: always}
    baseline_speculative: {description: "The service without the overlay runs C(--speculative-config).", type: bool, returned: always}
compose:
  description: With O(manager=compose), the project's files (null for systemd).
  returned: always
  type: dict
  contains:
    base_files: {description: "The project's own compose files, in C(-f) order.", type: list, elements: str, returned: always}
    files: {description: "Every file the service runs from now (the project's, then the overrides that exist).", type: list, elements: str, returned: always}
can_restore:
  description:
    - Whether this collection can put a non-speculative service back by removing its overlay (not when the service
      without the overlay speculates, since that speculation is not this collection's to remove).
  returned: always
  type: bool
guard_armed:
  description: The guard timer is active, or the boot-time guard (O(boot_guard)) is installed.
  returned: always
  type: bool
drained:
  description: The drain marker (O(drain_marker)) is there, so an earlier run took the host out of service and did
    not put it back.
  returned: always
  type: bool
baseline_gpu_memory_utilization:
  description:
    - The baseline's C(--gpu-memory-utilization) (the running value; while speculation runs, the baseline's own from
      the unit without the overlay, or the recorded one).
  returned: always
  type: float
fingerprint:
  description: sha256 of the normalised baseline, workload and decision inputs.
  returned: always
  type: str
exposure:
  description:
    - Who can use the model the service serves, from vLLM's arguments (the running process, else the configured
      service); null when there is no service. When vLLM listens beyond the host (C(--host 0.0.0.0), a LAN address,
      no C(--host) at all) without an API key, RV(exposure.exposed) is true and the module warns.
  type: dict
  returned: always
  contains:
    listen_host: {description: "C(--host), or null when omitted (vLLM then listens on every address).", type: str, returned: always}
    api_key: {description: "An API key is set (C(--api-key) or C(VLLM_API_KEY)).", type: bool, returned: always}
    exposed: {description: "Listens beyond the host without an API key.", type: bool, returned: always}
    warning: {description: "The warning the module gave, or null.", type: str, returned: always}
baseline_fingerprint:
  description: sha256 of the normalised baseline and workload (whether a stored baseline benchmark can be reused).
  returned: always
  type: str
fingerprint_parts:
  description:
    - What the fingerprints were computed from (C(baseline), with the workload and the baseline utilisation, and
      C(inputs)). The role records it, so the next run names what changed (for example the power mode).
  returned: always
  type: dict
inputs:
  description: The decision inputs as normalised (only those given).
  returned: always
  type: dict
workload:
  description: The workload as normalised (only the keys given).
  returned: always
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.endpoint import exposure_warning
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.lifecycle import decide, fingerprint
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import MAX_RECORD_BYTES, NewerSchema, parse
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_name, check_path, end_of_options
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.info import (
    Runner, ServiceInfoError, compose_config_runner, gather, model_config_reader)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.files import read_regular
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.options import (
    COMPOSE_NEEDS_PROJECT, name_argument_spec, service_argument_spec)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay_compose
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import systemd

LIVE_ROOT = '/'


def service_exposure(serve):
    """Who can use the model: {listen_host, api_key, exposed, warning} from vLLM's parsed arguments (running, else
    configured). No --host is vLLM's default, every address."""
    listen = serve.get('host')
    api_key = bool(serve.get('api_key_set'))
    warning = exposure_warning(listen if listen else '0.0.0.0', api_key, serve.get('port'))
    return {'listen_host': listen, 'api_key': api_key, 'exposed': warning is not None, 'warning': warning}


#: Baseline parts left out of the fingerprint while unknown (null).
OPTIONAL_PARTS = ('clocks_locked',)


def _given(options):
    return dict((key, value) for key, value in (options or {}).items() if value is not None)


def decision_inputs(inputs):
    """The inputs as the decision uses them (and the fingerprint keeps): the given ones, an unset (None) one left out,
    so an option added later leaves every record made without it in sync."""
    return _given(inputs)


def _read(path, limit):
    read = read_regular(LIVE_ROOT, path, limit=limit)
    problem = None
    if read.exists and read.data is None:
        problem = '%s cannot be read (%s)' % (path, read.error or 'not a regular file')
    return read, problem


def guard_armed(module, unit, boot_guard=None):
    if boot_guard and read_regular(LIVE_ROOT, boot_guard, limit=65536).exists:
        return True
    systemctl = module.get_bin_path('systemctl')
    if not systemctl:
        return False
    rc, out, _err = module.run_command(end_of_options([systemctl, 'show', '--property=ActiveState', '--value'],
                                                      [unit + '.timer']),
                                       check_rc=False, environ_update={'LC_ALL': 'C', 'SYSTEMD_PAGER': ''})
    return rc == 0 and out.strip() in ('active', 'activating')


def argument_spec():
    """The module's argument spec: the shared service options, then its own."""
    spec = name_argument_spec()
    spec.update(service_argument_spec())
    spec.update(
        fact_file=dict(type='path', required=True),
        guard_unit=dict(type='str', required=True),
        boot_guard=dict(type='path'),
        drain_marker=dict(type='path'),
        state=dict(type='str', default='enabled', choices=['enabled', 'disabled']),
        force_verify=dict(type='bool', default=False),
        default_gpu_memory_utilization=dict(type='float', default=0.9),
        baseline=dict(type='dict', default={}),
        workload=dict(type='dict', default={}, options=dict(
            concurrency=dict(type='list', elements='int'), num_prompts=dict(type='int'),
            warmup_prompts=dict(type='int'), input_len=dict(type='int'), output_len=dict(type='int'),
            dataset=dict(type='str'), prompts_file=dict(type='str'), temperature=dict(type='float'),
            ignore_eos=dict(type='bool'), seed=dict(type='int'), max_failed_ratio=dict(type='float'),
            request_timeout=dict(type='float'), request_deadline=dict(type='float'))),
        inputs=dict(type='dict', default={}, options=dict(
            method=dict(type='str'), eagle3_head=dict(type='str'), draft_model=dict(type='str'),
            smaller_draft_model=dict(type='str'), num_speculative_tokens=dict(type='int', no_log=False),
            expected_concurrency=dict(type='int'), allow_small_devices=dict(type='bool'),
            extra_config=dict(type='dict'), min_throughput_gain=dict(type='float'),
            min_tpot_reduction=dict(type='float'), disable_below_gain=dict(type='float'),
            c8_tolerance=dict(type='float'), c8_margin=dict(type='float'), max_ttft_increase=dict(type='float'),
            keep_marginal=dict(type='bool'),
            phase_shift=dict(type='dict', options=dict(c1=dict(type='float'), c8=dict(type='float'))),
            decide_undetermined=dict(type='str'), measurement=dict(type='str'))),
    )
    return spec


class StateReader(object):
    """One pass over the host, step by step: ``run()`` lists the steps; each method does one of them and keeps what
    it found as attributes for the steps after it."""

    def __init__(self, module):
        self.module = module
        self.params = module.params

    def run(self):
        """Read the host, decide, and exit with the result (or fail with a sentence saying why)."""
        self.check_options()
        self.read_service()
        self.read_record()
        self.read_overlay()
        self.read_baseline_utilisation()
        self.compute_fingerprints()
        self.read_guard()
        self.read_drain_marker()
        self.decide_action()
        self.read_exposure()
        self.module.exit_json(**self.result())

    def run_command(self, argv):
        return self.module.run_command(argv, check_rc=False, environ_update={'LC_ALL': 'C', 'SYSTEMD_PAGER': ''})

    def check_options(self):
        """The names and paths, before anything is read."""
        params = self.params
        try:
            check_name(params['name'], 'name')
            check_name(params['guard_unit'], 'guard_unit')
            for option in ('fact_file', 'boot_guard', 'drain_marker', 'project_src'):
                check_path(params[option], option, allow_none=option != 'fact_file')
        except InputError as exc:
            self.module.fail_json(msg='%s. Nothing was read or changed.' % exc)

    def read_service(self):
        """The deployed service as vllm_service_info reads it, and what runs: the process's and the configured
        vLLM arguments."""
        try:
            service, warnings = gather(self.params['name'], manager=self.params['manager'],
                                       project_src=self.params['project_src'], run_command=self.run_command,
                                       which=self.module.get_bin_path)
        except ServiceInfoError as exc:
            self.module.fail_json(msg=str(exc))
        for warning in warnings:
            self.module.warn(warning)
        self.service = service
        self.running = service.get('running') or None
        self.run_serve = (self.running or {}).get('serve') or {}
        self.configured = (service.get('configured') or {}).get('serve') or {}
        state = service.get('state') or {}
        self.is_running = self.running is not None or state.get('status') in ('running', 'active')
        self.speculative = self.run_serve.get('speculative_config') is not None
        self.service_file = service.get('file') or {}

    def read_record(self):
        """The recorded outcome; a damaged one counts as none, with a warning saying why."""
        record_read, record_problem = _read(self.params['fact_file'], MAX_RECORD_BYTES)
        try:
            self.record, parse_problem = parse(record_read.data) if record_read.data is not None else ({}, None)
        except NewerSchema as exc:
            self.module.fail_json(msg='%s: %s. Nothing was changed.' % (self.params['fact_file'], exc))
        self.record_problem = record_problem or parse_problem
        if self.record_problem:
            self.module.warn('The recorded outcome %s is ignored: %s. It counts as no record: the host is verified '
                             'again.' % (self.params['fact_file'], self.record_problem))

    def read_overlay(self):
        """The collection's overlay and the baseline, the service without it (removing the overlay restores the
        baseline, unless the baseline itself speculates); per manager."""
        self.overlay_info = {'candidate': False, 'committed': False, 'baseline_speculative': False}
        self.baseline_serve = self.configured
        self.service_sha256 = self.service_file.get('sha256')
        self.can_restore = False  # no service: nothing to put back
        self.compose = None
        if self.params['manager'] == 'compose':
            self.read_compose_overlay()
        elif self.service.get('exists') and self.service_file.get('path'):
            self.read_systemd_overlay()

    def read_compose_overlay(self):
        """compose: the collection's override files, and the service as the project's own files define it."""
        project = self.service.get('compose') or {}
        self.compose = {'base_files': project.get('base_files') or [], 'files': project.get('files') or []}
        present = project.get('overlay') or {}
        self.overlay_info = {'candidate': 'candidate' in present, 'committed': 'committed' in present,
                             'baseline_speculative': False}
        if not self.service.get('exists'):
            return
        base = overlay_compose.read_baseline(
            LIVE_ROOT, project['project_dir'], self.params['name'], self.compose['base_files'],
            compose_config_runner(Runner(self.run_command, self.module.get_bin_path), project['project_dir'],
                                  self.compose['base_files']))
        self.baseline_serve = base['serve'] or {}
        self.overlay_info['baseline_speculative'] = self.baseline_serve.get('speculative_config') is not None
        self.service_sha256 = base['sha256']
        self.can_restore = not self.overlay_info['baseline_speculative']

    def read_systemd_overlay(self):
        """systemd: the collection's drop-ins, and the unit with its other drop-ins."""
        unit = systemd.unit_name(self.params['name'])
        base = overlay.read_baseline(LIVE_ROOT, unit, self.service_file['path'])
        present = overlay.read_overlay(LIVE_ROOT, unit)
        base_info = analyse_command(base['argv'], env=base['env'],
                                    read_model_config=model_config_reader(LIVE_ROOT))[0] if base['argv'] else {}
        self.baseline_serve = base_info.get('serve') or {}
        self.overlay_info = {'candidate': present['candidate'].exists, 'committed': present['committed'].exists,
                             'baseline_speculative': self.baseline_serve.get('speculative_config') is not None}
        self.service_sha256 = base['sha256']
        self.can_restore = not self.overlay_info['baseline_speculative']

    def read_baseline_utilisation(self):
        """The baseline's --gpu-memory-utilization: while speculation runs, the baseline's own, else the recorded one;
        otherwise the running (or configured) value; default_gpu_memory_utilization when none is a number."""
        if self.speculative:
            value = self.baseline_serve.get('gpu_memory_utilization')
            if value is None or self.overlay_info['baseline_speculative']:
                value = self.record.get('baseline_gpu_memory_utilization')
        elif self.running:
            value = self.run_serve.get('gpu_memory_utilization')
        else:
            value = self.baseline_serve.get('gpu_memory_utilization')
        default = self.params['default_gpu_memory_utilization']
        try:
            self.baseline_gmu = float(value) if value is not None else default
        except (TypeError, ValueError):
            self.baseline_gmu = default

    def compute_fingerprints(self):
        """The baseline fingerprint (whether a stored baseline benchmark can be reused) and the full one."""
        params = self.params
        self.workload = _given(params['workload'])
        self.inputs = decision_inputs(params['inputs'])
        # A part that is only known on some hosts (the clock state) counts when it is known: a host where it cannot be
        # read keeps the fingerprint it had before the part existed.
        given_baseline = dict((k, v) for k, v in params['baseline'].items()
                              if not (k in OPTIONAL_PARTS and v in (None, '')))
        baseline_parts = dict(given_baseline, baseline_gpu_memory_utilization=self.baseline_gmu,
                              workload=self.workload)
        # The service itself without the overlay (systemd: the unit and its other drop-ins; compose: the project's
        # files and .env): an operator's edit is a new baseline, whose stored benchmark must not be reused.
        baseline_parts['service'] = self.service_sha256
        self.fingerprint_parts = {'baseline': baseline_parts, 'inputs': self.inputs}
        try:
            self.baseline_fingerprint = fingerprint(baseline_parts)
            self.full_fingerprint = fingerprint({'baseline': self.baseline_fingerprint, 'inputs': self.inputs})
        except (TypeError, ValueError) as exc:
            self.module.fail_json(msg='baseline, workload or inputs hold a value that cannot be fingerprinted (%s)'
                                  % exc)

    def read_guard(self):
        """Whether the guard is armed (its timer, or the boot-time unit)."""
        self.armed = guard_armed(self.module, self.params['guard_unit'], self.params['boot_guard'])

    def read_drain_marker(self):
        """Whether an earlier run left the host out of service (its drain marker is there: any file type counts)."""
        marker = self.params['drain_marker']
        self.drained = bool(marker) and read_regular(LIVE_ROOT, marker, limit=4096).exists

    def decide_action(self):
        """The action, from everything observed (docs/lifecycle.md's rules)."""
        speculators = (self.baseline_serve or {}).get('speculators') or (self.run_serve or {}).get('speculators')
        if speculators:
            self.module.warn(
                '%s serves a speculators-format checkpoint (%s, method %s%s): vLLM speculates with it without '
                '--speculative-config, so speculation runs that this collection did not put there, and a second '
                'configuration is never added on top of it.'
                % (self.params['name'], (self.baseline_serve or self.run_serve or {}).get('model'),
                   speculators.get('method') or 'unknown',
                   ', K %s' % speculators['num_speculative_tokens']
                   if speculators.get('num_speculative_tokens') is not None else ''))
        self.answer = decide({
            'service': self.params['name'],
            'service_exists': bool(self.service.get('exists')),
            'running': bool(self.is_running),
            'running_speculative': self.speculative,
            'record': self.record,
            'record_problem': self.record_problem,
            'last_known_good': self.can_restore,
            'guard_armed': self.armed,
            'state': self.params['state'],
            'force_verify': self.params['force_verify'],
            'fingerprint': self.full_fingerprint,
            'fingerprint_parts': self.fingerprint_parts,
            'service_sha256': self.service_sha256,
        })
        if self.drained:
            self.answer = dict(self.answer, reasons=list(self.answer['reasons']) + [
                'An earlier run took the host out of service (%s is there) and was interrupted before it put it back: '
                'the role puts it back at the end of its next run on this host where vLLM serves.'
                % self.params['drain_marker']])

    def read_exposure(self):
        """Who can use the model (None without a service), with a warning when anyone who reaches the host can."""
        self.exposure = None
        if self.service.get('exists'):
            self.exposure = service_exposure(self.run_serve if self.running else self.configured)
        if self.exposure and self.exposure['warning']:
            self.module.warn(self.exposure['warning'])

    def result(self):
        """The module's result."""
        answer, serve = self.answer, self.service.get('serve') or {}
        return dict(
            changed=False,
            action=answer['action'], rule=answer['rule'], remove_speculation=answer['remove_speculation'],
            reasons=answer['reasons'], record=self.record, record_problem=self.record_problem,
            running={'running': bool(self.is_running), 'speculative': self.speculative,
                     'speculative_config': self.run_serve.get('speculative_config'),
                     'gpu_memory_utilization': self.run_serve.get('gpu_memory_utilization')},
            service={'exists': bool(self.service.get('exists')), 'path': self.service_file.get('path'),
                     'sha256': self.service_sha256,
                     'speculative': self.configured.get('speculative_config') is not None,
                     'model': serve.get('model'), 'port': serve.get('port')},
            overlay=self.overlay_info, compose=self.compose, can_restore=self.can_restore,
            guard_armed=self.armed, drained=self.drained,
            baseline_gpu_memory_utilization=self.baseline_gmu,
            fingerprint=self.full_fingerprint, baseline_fingerprint=self.baseline_fingerprint,
            fingerprint_parts=self.fingerprint_parts,
            inputs=self.inputs, workload=self.workload, exposure=self.exposure,
        )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), required_if=[COMPOSE_NEEDS_PROJECT], supports_check_mode=True)
    StateReader(module).run()


if __name__ == '__main__':
    main()
