# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the site playbook reads its rolling settings from.

blackwell_inference_serial, blackwell_inference_max_fail_percentage and blackwell_inference_hosts become play keywords
(serial, max_fail_percentage, hosts), which Ansible works out before any inventory variable exists: set in group_vars
or host_vars they do nothing. The playbook loads them instead as a play vars file, rolling.yml in the inventory's
directory (beside hosts.yml), found from the inventory sources Ansible was given (-i or ansible.cfg's inventory), which
are known before any host is. `-e` sets them too, over the file."""

from __future__ import annotations

import os

FILENAME = "rolling.yml"


def vars_file(sources):
    """The rolling settings' file: rolling.yml in the directory of the first inventory source that has one (a source
    that is a directory: in it; a file: beside it), else where the first source's would be (a path that does not exist:
    the playbook then falls back to its defaults). Without sources: FILENAME, which the playbook finds among its own
    vars (its defaults)."""
    candidates = []
    for item in sources or []:
        source = str(item)
        if "," in source and not os.path.exists(source):  # a host list (-i host1,host2): no directory
            continue
        base = source if os.path.isdir(source) else os.path.dirname(source)
        candidates.append(os.path.join(os.path.abspath(base or "."), FILENAME))
    return next((c for c in candidates if os.path.isfile(c)), candidates[0] if candidates else FILENAME)
