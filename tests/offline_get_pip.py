"""Offline stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test downloads get-pip.py from ci-files.testing.ansible.com, which this machine kind
cannot reach; its error message says to place the script in its cache instead. This one does
the same job from what is reachable: ensurepip from the interpreter, then pip from PyPI.
"""

import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *args])
