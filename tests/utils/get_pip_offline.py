"""Offline stand-in for the pip bootstrap script that ansible-test downloads.

`ansible-test sanity|units --venv` bootstraps pip into each fresh virtualenv by downloading
get-pip.py from ci-files.testing.ansible.com, a host these build machines cannot reach. This
file takes its place: run with `--install-cache` it copies itself to the cache path ansible-test
looks in (~/.ansible/test/cache/get_pip_<version>.py); run by ansible-test it does what
get-pip.py does, using the interpreter's own `ensurepip` and then pip with the normal package
index to install the exact versions ansible-test asks for.
"""
import ensurepip
import os
import re
import shutil
import subprocess
import sys


def _install_cache():
    import ansible_test  # pylint: disable=import-outside-toplevel

    source = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(source, encoding="utf-8") as handle:
        match = re.search(r"pip='([0-9.]+)'", handle.read())
    if not match:
        sys.exit("cannot find the pip version ansible-test bootstraps in %s" % source)
    cache = os.path.expanduser("~/.ansible/test/cache/get_pip_%s.py" % match.group(1).replace(".", "_"))
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    shutil.copyfile(__file__, cache)
    print(cache)


def _bootstrap(args):
    env = dict(os.environ)
    ensurepip.bootstrap(upgrade=True)  # sets PIP_CONFIG_FILE=/dev/null in os.environ
    wanted = [arg for arg in args if arg not in ("--no-setuptools", "--no-wheel")]
    # The machine's pip configuration (index, certificates) applies to the real install.
    return subprocess.call([sys.executable, "-m", "pip", "install"] + wanted, env=env)


if __name__ == "__main__":
    if sys.argv[1:] == ["--install-cache"]:
        _install_cache()
    else:
        sys.exit(_bootstrap(sys.argv[1:]))
