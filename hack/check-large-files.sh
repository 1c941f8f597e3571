#!/usr/bin/env bash
# Fails when a tracked file outside a testdata/ directory is larger than
# MAX_BYTES (default 2 MiB): build outputs and binaries never belong in git.
# Usage: hack/check-large-files.sh [repo-dir]
set -euo pipefail
cd "${1:-.}"
max="${MAX_BYTES:-2097152}"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "check-large-files: not a git work tree; skipped" >&2
	exit 0
fi
status=0
while IFS= read -r -d '' f; do
	case "/$f" in */testdata/*) continue ;; esac
	[ -f "$f" ] || continue
	size=$(stat -c %s -- "$f")
	if [ "$size" -gt "$max" ]; then
		echo "tracked file too large ($size bytes > $max): $f; build outputs go to bin/ (gitignored)" >&2
		status=1
	fi
done < <(git ls-files -z)
exit $status
