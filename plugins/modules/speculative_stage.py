#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_stage
short_description: Stage a draft model or an EAGLE-3 head on the host before the change, every file checked
version_added: 0.1.0
description:
  - >-
    Copies a model directory (a draft model, a smaller draft, an EAGLE-3 head) from O(source), a site mirror over
    HTTP(S) or a directory the host sees (a mounted mirror, a copy the controller put there), into O(dest), and checks
    every file's SHA-256 before anything is replaced. The speculative service then starts from O(dest), offline:
    the download happens before the change, not inside it, a failed or corrupt download leaves the service as it
    was, and an air-gapped site can speculate.
  - The checksums are O(checksums), or the manifest O(manifest) in the source, in C(sha256sum)'s format
    (C(<64 hex digits>  <relative path>) per line; make it on the mirror with
    C(cd MODEL && find . -type f ! -name SHA256SUMS ! -path './.cache/*' -printf '%P\0' | xargs -0 sha256sum > SHA256SUMS)).
    O(dest) ends holding exactly the listed files.
  - Whole or nothing. The files are copied into a hidden directory beside O(dest) (the same file system), each
    hashed as it is written; only when all match is the copy moved into place (a previous copy moved aside, then
    removed). Any failure removes the partial copy and leaves O(dest) as it was. The free space is checked before
    the first byte is written (the sizes from the source; HTTP C(HEAD)) and again while writing.
  - A O(dest) that already holds exactly the listed files with their checksums is left alone (C(changed=false));
    the files are hashed again on every run, so a corrupt copy is found and replaced. A O(dest) this module did not
    stage (it keeps a stamp file beside it, C(.NAME.jetson-llm-stage.json)) is never replaced - when it does not
    match, the module fails naming the difference (an empty directory is used).
  - Not from the Hugging Face hub itself; mirror the model first (C(huggingface-cli download --local-dir)) and
    publish it with its C(SHA256SUMS), or let vLLM download it at start-up as before (no staging).
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm._attributes
options:
  source:
    description:
      - Where the model directory comes from, an C(http://) or C(https://) URL of the directory on a mirror (its
        files are fetched as URL + relative path), or an absolute path of a directory on the host (symbolic links
        followed, regular files only).
      - A URL with credentials in it is refused (it would be shown in logs); give them as O(token).
    type: str
    required: true
  dest:
    description:
      - The local directory the model is staged into (absolute), the path the speculative configuration names.
        Its parent directories are created (mode C(0755)); files are C(0644).
    type: path
    required: true
  checksums:
    description:
      - The files to stage and their SHA-256 digests, relative path to 64 hex digits. When given, O(manifest) is not
        read.
    type: dict
  manifest:
    description: The manifest's relative path in the source, used when O(checksums) is not given.
    type: str
    default: SHA256SUMS
  min_free_mb:
    description: The free space (MB) that must remain on O(dest)'s file system after staging, 0 to 1048576.
    type: int
    default: 1024
  max_total_mb:
    description: The most the model may total (MB), 1 to 1048576; a source that sends more is refused.
    type: int
    default: 65536
  timeout:
    description: Seconds each connection and each read may wait, above 0 and at most 3600.
    type: float
    default: 30
  deadline:
    description:
      - Seconds the whole staging may take (hashing an existing copy included), above 0 and at most 86400. Past it
        the module fails and nothing is replaced.
    type: float
    default: 3600
  token:
    description:
      - "A bearer token for a mirror that asks for one (sent as C(Authorization: Bearer), never to another host a
        redirect names, never shown)."
    type: str
  validate_certs:
    description: Whether an C(https://) mirror's certificate is checked.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is copied; the module checks the existing copy, the sizes and the free space, and
        C(changed) says whether it would stage.
  diff_mode:
    support: full
    details:
      - The diff lists the files of O(dest) before and after.
  idempotent:
    support: full
    details:
      - A destination that holds the listed files reports no change.
  platform:
    description: Target platforms.
    support: full
    platforms: posix
    details:
      - Standard library only (a stock JetPack has no pip packages).
'''

EXAMPLES = r'''
- name: Stage the draft from the site mirror before the change
  jetson_llm.vllm.speculative_stage:
    source: http://mirror.site.example:8080/models/Qwen3-0.6B/
    dest: /var/lib/jetson_llm/models/Qwen3-0.6B

- name: Stage an EAGLE-3 head from an NFS mount, with the digests given
  jetson_llm.vllm.speculative_stage:
    source: /mnt/models/eagle3-head
    dest: /var/lib/jetson_llm/models/eagle3-head
    checksums:
      config.json: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
      model.safetensors: 60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752
'''

RETURN = r'''
dest:
  description: The staged directory.
  returned: always
  type: str
  sample: /var/lib/jetson_llm/models/Qwen3-0.6B
source:
  description: The source as given.
  returned: always
  type: str
  sample: http://mirror.site.example:8080/models/Qwen3-0.6B/
files:
  description: The staged files, relative path, size and SHA-256 each, in the manifest's order.
  returned: success
  type: list
  elements: dict
  sample: [{path: config.json, size: 684, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}]
bytes:
  description: The model's size (bytes), what O(dest) holds after the run.
  returned: success
  type: int
  sample: 1207959552
copied_bytes:
  description: The bytes copied this run (0 when O(dest) already matched, or in check mode).
  returned: success
  type: int
  sample: 0
reason:
  description: Why the copy was (or would be) made, or that O(dest) already matched.
  returned: success
  type: str
  sample: /var/lib/jetson_llm/models/Qwen3-0.6B does not exist
'''

import math
import os
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import stage as S

MAX_MB = 1024 * 1024


def _check_number(module, name, value, low, high, what):
    if value is None or math.isnan(value) or not low < value <= high:
        module.fail_json(msg='%s is %r; allowed: %s. Nothing was changed.' % (name, value, what))


def run(module):
    params = module.params
    _check_number(module, 'timeout', params['timeout'], 0, 3600, 'a number of seconds above 0 and at most 3600')
    _check_number(module, 'deadline', params['deadline'], 0, 86400, 'a number of seconds above 0 and at most 86400')
    if not 0 <= params['min_free_mb'] <= MAX_MB:
        module.fail_json(msg='min_free_mb is %r; allowed: 0 to %d. Nothing was changed.' % (params['min_free_mb'], MAX_MB))
    if not 1 <= params['max_total_mb'] <= MAX_MB:
        module.fail_json(msg='max_total_mb is %r; allowed: 1 to %d. Nothing was changed.' % (params['max_total_mb'], MAX_MB))
    deadline = S.Deadline(params['deadline'])
    dest = S.check_dest(params['dest'])
    src = S.open_source(params['source'], token=params['token'], timeout=params['timeout'],
                        validate_certs=params['validate_certs'])
    if params['checksums'] is not None:
        entries = S.check_checksums(params['checksums'])
    else:
        entries = S.read_manifest(src, params['manifest'], deadline)
    stager = S.Stager(src, dest, entries, params['min_free_mb'] * S.MB, params['max_total_mb'] * S.MB, deadline)
    before = S.existing_files(dest)
    difference = stager.difference()
    result = dict(changed=False, dest=dest, source=params['source'])
    if difference is None:
        sizes = before or {}
        files = [dict(path=path, size=sizes.get(path), sha256=digest) for path, digest in entries]
        result.update(files=files, bytes=sum(f['size'] or 0 for f in files), copied_bytes=0,
                      reason='%s holds the %d listed file(s), every checksum matching' % (dest, len(entries)))
        return result
    if before and not stager.owned():
        raise S.StageError('%s exists and was not staged by this module (no %s beside it), and it does not match the '
                           'checksums: %s. Nothing was replaced; name another dest, or move it away.'
                           % (dest, os.path.basename(S.stamp_path(dest)), difference))
    total = stager.measure()
    result['changed'] = True
    result['reason'] = difference
    if module._diff:
        result['diff'] = dict(before='\n'.join(sorted(before or {})) + '\n' if before else '',
                              after='\n'.join(sorted(path for path, _digest in entries)) + '\n',
                              before_header=dest, after_header=dest)
    if module.check_mode:
        files = [dict(path=path, size=stager.sizes.get(path), sha256=digest) for path, digest in entries]
        result.update(files=files, bytes=total, copied_bytes=0)
        return result
    S.remove_leftovers(dest)
    copied = stager.copy()
    stager.write_stamp(params['source'])
    after = S.existing_files(dest) or {}
    files = [dict(path=path, size=after.get(path), sha256=digest) for path, digest in entries]
    result.update(files=files, bytes=sum(f['size'] or 0 for f in files), copied_bytes=copied)
    return result


def hide_url_credentials(module, source):
    """A source URL with credentials is refused (run() says why); its user and password are masked in every output
    before that, the module's echo of its arguments included."""
    try:
        parts = urlsplit(source) if isinstance(source, str) else None
    except ValueError:
        return
    if parts is not None and (parts.username or parts.password):
        userinfo = parts.netloc.rpartition('@')[0]
        for value in (userinfo, parts.password, parts.username):
            if value:
                module.no_log_values.add(value)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            checksums=dict(type='dict'),
            manifest=dict(type='str', default='SHA256SUMS'),
            min_free_mb=dict(type='int', default=1024),
            max_total_mb=dict(type='int', default=65536),
            timeout=dict(type='float', default=30),
            deadline=dict(type='float', default=3600),
            token=dict(type='str', no_log=True),
            validate_certs=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    hide_url_credentials(module, module.params['source'])
    try:
        module.exit_json(**run(module))
    except S.StageError as exc:
        module.fail_json(msg='%s' % exc, dest=module.params['dest'])


if __name__ == '__main__':
    main()
