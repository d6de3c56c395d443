#!/usr/bin/env bash
# Rewrites the regression goldens (tests/regression/golden) from runs of the current build,
# prints what changed in each, and shows the diff for review. Commit the goldens only when
# every change is one you meant.
#   scripts/bless-goldens.sh [--case NAME ...]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build --preset release --target podsim >/dev/null
build/release/podsim regress --dir tests/regression --bless -j "$(nproc)" "$@"
git --no-pager diff --stat -- tests/regression/golden || true
