#!/usr/bin/env bash
# Reruns each study in docs/study-*.md (the command after its "<!-- study-command -->" line)
# and writes the table it prints between the page's "study-results" markers. A test
# (regression/"study pages show what their commands print") keeps the pages honest.
#   scripts/run-studies.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build --preset release --target podsim >/dev/null
for doc in docs/study-*.md; do
  cmd=$(awk '/<!-- study-command -->/ {f = 1; next} f && /^```/ {if (in_block) exit; in_block = 1; next} in_block {print}' "$doc")
  [[ "$cmd" == build/release/podsim\ sweep* ]] || { echo "$doc: no study command" >&2; exit 1; }
  out=$(mktemp -d)
  # A page whose sweep has a failing point on purpose says so: <!-- study-exit: N -->.
  want=$(sed -n 's/.*<!-- study-exit: \([0-9]*\) -->.*/\1/p' "$doc")
  # shellcheck disable=SC2086  # the command is words, as a user would type them
  rc=0; $cmd --quiet --out "$out/sweep" || rc=$?
  [[ "$rc" == "${want:-0}" ]] || { echo "$doc: the sweep exited $rc, not ${want:-0}" >&2; exit 1; }
  awk -v table="$out/sweep/sweep.md" '
    /<!-- study-results: begin -->/ {print; while ((getline line < table) > 0) print line; skip = 1; next}
    /<!-- study-results: end -->/ {skip = 0}
    !skip {print}' "$doc" > "$out/doc.md"
  mv "$out/doc.md" "$doc"
  rm -rf "$out"
  echo "$doc: results rewritten"
done
git --no-pager diff --stat -- docs/study-*.md || true
