#!/usr/bin/env bash
# ansible-test sanity needs the tree at .../ansible_collections/blackwell/inference and no Docker here:
# copy the files git would ship into a scratch collection root and run with --venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.venv/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/blackwell/inference"
mkdir -p "$dest"
cd "$root"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && { mkdir -p "$dest/$(dirname "$f")"; cp -a "$f" "$dest/$f"; }
done
# ansible-test bootstraps pip in its sanity venvs from a host that is unreachable here: give it
# the offline equivalent at the cache path its error message names
pip_version=$("$bin/python" - <<'PY'
import re, ansible_test, os
src = open(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")).read()
print(re.search(r"pip='([0-9.]+)'", src).group(1))
PY
)
mkdir -p ~/.ansible/test/cache
install -m 0644 tests/offline_get_pip.py ~/.ansible/test/cache/get_pip_"${pip_version//./_}".py
cd "$dest"
# ansible-test wants a git work tree or none at all; give it a fresh one so it lists exactly these files
git init -q && git add -A && git -c user.email=ci@localhost -c user.name=ci commit -qm sanity
# the controller's Python for every test, then the targets' Pythons (Debian 12: 3.11) for compile/import
"$bin/ansible-test" sanity --local --requirements --python 3.12 --color no
"$bin/ansible-test" sanity --local --python 3.11 --test compile --color no
