#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver and etcd) from the Go module
# proxy into <repo>/bin, named by version, only when a binary of that version
# is missing. The versions are pinned in tools/*/go.mod, the single source of
# truth; the Go harness in this package reads the same files.
#
# Usage: test/controlplane/build.sh        (prints the two binary paths)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/test/controlplane/tools"
bin="$root/bin"
mkdir -p "$bin"

# Tests of several packages may ask at once; one builds, the others wait.
exec 9>"$bin/.controlplane.lock"
flock 9

modver() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }

# progress prints a line per 100 packages compiled so a cold build (minutes)
# shows it is alive without flooding the log with thousands of names.
progress() { awk -v what="$1" '{n++; if (n % 100 == 0) { printf "  %s: %d packages compiled\n", what, n; fflush() } } END { printf "  %s: done (%d packages)\n", what, n }'; }

kver=$(modver "$tools/kube-apiserver" k8s.io/kubernetes)
ever=$(modver "$tools/etcd" go.etcd.io/etcd/server/v3)
kbin="$bin/kube-apiserver-$kver"
ebin="$bin/etcd-$ever"

if [ ! -x "$ebin" ]; then
	echo "building etcd $ever from the Go module proxy (about 1 minute)..." >&2
	(cd "$tools/etcd" && go build -v -trimpath -o "$ebin.tmp" go.etcd.io/etcd/server/v3 2>&1 | progress etcd) >&2
	mv "$ebin.tmp" "$ebin"
fi

if [ ! -x "$kbin" ]; then
	minor=$(echo "$kver" | cut -d. -f2)
	echo "building kube-apiserver $kver from the Go module proxy (first time only: 8-18 minutes on 2 cores)..." >&2
	(cd "$tools/kube-apiserver" && go build -v -trimpath \
		-ldflags "-X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		-o "$kbin.tmp" k8s.io/kubernetes/cmd/kube-apiserver 2>&1 | progress kube-apiserver) >&2
	mv "$kbin.tmp" "$kbin"
fi

echo "$kbin"
echo "$ebin"
