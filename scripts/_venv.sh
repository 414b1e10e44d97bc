# Sourced by the scripts in this folder: make sure .venv exists and holds the project as installed from
# pyproject.toml (re-installed when pyproject.toml changes). Needs only Python 3.11+ on the PATH.
set -euo pipefail
ensure_venv() {
    local extras="${1:-dev}"
    local py="${PYTHON:-}"
    if [ -z "$py" ]; then
        for candidate in python3.13 python3.12 python3.11 python3; do
            if command -v "$candidate" >/dev/null 2>&1 \
               && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
                py="$candidate"; break
            fi
        done
    fi
    if [ -z "$py" ]; then
        echo "livememory needs Python 3.11 or newer on the PATH (or set PYTHON=/path/to/python3.11)." >&2
        exit 2
    fi
    if [ ! -x .venv/bin/python ]; then
        echo "creating .venv with $py" >&2
        "$py" -m venv .venv
    fi
    local stamp=".venv/.livememory-$extras-$(sha256sum pyproject.toml | cut -c1-16)"
    if [ ! -f "$stamp" ]; then
        echo "installing livememory[$extras] into .venv" >&2
        .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
        rm -f .venv/.livememory-"$extras"-*
        touch "$stamp"
    fi
}
