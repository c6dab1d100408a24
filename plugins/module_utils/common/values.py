# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values as the roles' Jinja read them, for the checks and summaries that moved to Python."""

from __future__ import annotations


def to_int(value):
    """Jinja's int filter: the integer, through a float for '1.5', else 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def is_true(value):
    """A summary's `ready` as set_fact leaves it: a boolean, or its string form."""
    return value is True or str(value).lower() == "true"
