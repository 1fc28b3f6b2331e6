# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The ``attributes`` blocks modules of this collection share (the community.docker way).

    Use ``jetson_llm.vllm._attributes`` for the descriptions, together with one of the support
    fragments below, for example ``jetson_llm.vllm._attributes.decision``.
    """

    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return the same result without modifying the target.
  diff_mode:
    description: Returns details on what has changed (or would change in C(check_mode)) when in diff mode.
  idempotent:
    description:
      - When run twice in a row with the same input, the second run gives the same result and reports C(changed=false).
'''

    # Fact modules (jetson_facts): they read the target and set ansible_facts; nothing changes.
    FACTS = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - The module only reads; it behaves identically in check mode.
  diff_mode:
    support: none
    details:
      - Nothing is changed, so there is nothing to diff.
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
  idempotent:
    support: full
    details:
      - Never reports a change.
'''

    # Pure decision modules (speculative_plan, speculative_verdict): they read their input and
    # return a decision; nothing on the target changes, so check mode gives the same answer.
    DECISION = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - The module only decides; the decision is the same in check mode and nothing is changed.
  diff_mode:
    support: none
    details:
      - The module never changes anything, so there is no diff.
  idempotent:
    support: full
    details:
      - The same input always gives the same decision; C(changed) is always false.
  platform:
    description: Target platforms.
    support: full
    platforms: posix
    details:
      - Pure Python (standard library only); runs on any target, or on the controller with C(delegate_to=localhost).
'''

    # Modules that read the target and decide from it (speculative_state): nothing changes.
    READER = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - The module only reads the target; it behaves identically in check mode.
  diff_mode:
    support: none
    details:
      - Nothing is changed, so there is nothing to diff.
  idempotent:
    support: full
    details:
      - Never reports a change.
'''

    # Modules that write one file of this collection's own (speculative_record).
    WRITER = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - In check mode the file is not written; C(changed) says whether it would be.
  diff_mode:
    support: full
    details:
      - The diff shows the file before and after.
  idempotent:
    support: full
    details:
      - Writing the same content again reports no change.
'''
