"""Paths of the collection's own files that unit tests read."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE_VARS = os.path.join(ROOT, "roles", "cuda_toolkit", "vars", "main.yml")
