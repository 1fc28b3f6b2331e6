# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""Quoting for service definitions: see systemd_quote.yml and compose_escape.yml beside this file."""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text


def _text(value, name):
    if isinstance(value, (list, dict)) or value is None:
        raise AnsibleFilterError('%s takes one argument as text, not %s' % (name, type(value).__name__))
    text = to_text(value)
    for char in text:
        if ord(char) < 32 or ord(char) == 127:
            raise AnsibleFilterError('%s: control character %r in argument %r: it cannot be passed on a service '
                                     'command line; remove it' % (name, char, text[:80]))
    return text


def systemd_quote(value, environment=False):
    text = _text(value, 'systemd_quote')
    escaped = text.replace('\\', '\\\\').replace('"', '\\"').replace('%', '%%')
    # Exec lines expand $VAR and ${VAR} ($$ is a literal $); Environment= assignments do not (systemd.exec(5)),
    # so there a $ stays as it is.
    if not environment:
        escaped = escaped.replace('$', '$$')
    return '"%s"' % escaped


def compose_escape(value):
    return _text(value, 'compose_escape').replace('$', '$$')


class FilterModule(object):
    def filters(self):
        return {'systemd_quote': systemd_quote, 'compose_escape': compose_escape}
