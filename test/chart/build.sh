#!/usr/bin/env bash
# Builds Helm from the Go module proxy into <repo>/bin/helm-<version>, only
# when a binary of that version is missing. The version is pinned in
# tools/helm/go.mod, the single source of truth; the chart tests in this
# package run this script and read the path it prints. Same scheme as
# test/controlplane/build.sh (kube-apiserver, etcd).
#
# Usage: test/chart/build.sh        (prints the helm binary's path)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/test/chart/tools/helm"
bin="$root/bin"
mkdir -p "$bin"

# Tests of several packages (or a person's `make helm`) may ask at once; one
# builds, the others wait.
exec 9>"$bin/.helm.lock"
flock 9

modver() { (cd "$tools" && go list -m -f '{{.Version}}' "$1"); }

# progress prints a line per 100 packages compiled so a cold build (minutes)
# shows it is alive without flooding the log with hundreds of names.
progress() { awk -v what="$1" '{n++; if (n % 100 == 0) { printf "  %s: %d packages compiled\n", what, n; fflush() } } END { printf "  %s: done (%d packages)\n", what, n }'; }

hver=$(modver helm.sh/helm/v3)
hbin="$bin/helm-$hver"

if [ ! -x "$hbin" ]; then
	# The Kubernetes version helm assumes when it has no cluster (helm
	# template, helm lint: .Capabilities.KubeVersion, deprecation checks)
	# is that of the client-go it is built with, as helm's own Makefile does.
	kminor=$(modver k8s.io/client-go | cut -d. -f2)
	echo "building helm $hver from the Go module proxy (first time only: 2-5 minutes on 2 cores)..." >&2
	(cd "$tools" && CGO_ENABLED=0 go build -v -trimpath \
		-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$hver -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kminor \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kminor" \
		-o "$hbin.tmp" helm.sh/helm/v3/cmd/helm 2>&1 | progress helm) >&2
	mv "$hbin.tmp" "$hbin"
fi

echo "$hbin"
