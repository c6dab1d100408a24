# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file replaced in one rename: a reader (apt, the next run) sees the old content or the new, never a part."""

from __future__ import annotations

import os
import tempfile


def write_atomic(path, data, mode=0o644):
    """Write `data` (bytes) to `path` through a temporary file beside it (its parent made 0755 when missing), with
    `mode`; nothing is left behind when it fails."""
    parent = os.path.dirname(path)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
