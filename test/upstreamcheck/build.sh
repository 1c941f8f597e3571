#!/usr/bin/env bash
# Builds a cloud's upstream cloud-controller-manager from the Go module proxy
# into <repo>/bin/<binary>-<version>, only when a binary of that version is
# missing. The version is pinned in tools/<cloud>/go.mod (a scratch module
# that requires upstream as a tool), the single source of truth. Same scheme
# as test/chart/build.sh (Helm) and test/controlplane/build.sh. The
# upstream-check harness in this package runs this script and reads the path
# it prints.
#
# Usage: test/upstreamcheck/build.sh <cloud> [node-manager]   (prints the binary's path)
#
# node-manager builds the node agent upstream installs beside its CCM
# (azure: cmd/cloud-node-manager, the DaemonSet that initializes Nodes).
#
# FACTS.md "The upstream CCMs, built from the Go module proxy" has what
# each needs; openstack's tools module repeats upstream's replace block
# (its k8s.io/kubernetes dependency names staging modules at v0.0.0).
set -euo pipefail

cloud=${1:?usage: $0 <cloud>}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"

if [ -n "${2:-}" ] && { [ "$2" != node-manager ] || [ "$cloud" != azure ]; }; then
	echo "upstream-check: no \"$2\" for cloud \"$cloud\" (only: azure node-manager)" >&2
	exit 2
fi

case "$cloud" in
aws)
	mod=k8s.io/cloud-provider-aws
	pkg=k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager
	name=aws-cloud-controller-manager
	;;
azure)
	mod=sigs.k8s.io/cloud-provider-azure
	pkg=sigs.k8s.io/cloud-provider-azure/cmd/cloud-controller-manager
	name=azure-cloud-controller-manager
	if [ "${2:-}" = node-manager ]; then
		pkg=sigs.k8s.io/cloud-provider-azure/cmd/cloud-node-manager
		name=azure-cloud-node-manager
	fi
	;;
gce)
	# The newest the module proxy serves here is a 2024 pseudo-version;
	# tools/gce/go.mod repeats upstream's replace block, with its
	# providers module (./providers upstream) at its tagged v0.28.2.
	mod=k8s.io/cloud-provider-gcp
	pkg=k8s.io/cloud-provider-gcp/cmd/cloud-controller-manager
	name=gcp-cloud-controller-manager
	;;
openstack)
	mod=k8s.io/cloud-provider-openstack
	pkg=k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager
	name=openstack-cloud-controller-manager
	;;
*)
	echo "upstream-check: no upstream build for cloud \"$cloud\" yet; add tools/$cloud/go.mod and a case here" >&2
	exit 2
	;;
esac

tools="$root/test/upstreamcheck/tools/$cloud"
mkdir -p "$bin"

# Tests (or a person's `make upstream-check`) may ask at once; one builds,
# the others wait.
exec 9>"$bin/.upstream-$cloud.lock"
flock 9

ver=$(cd "$tools" && go list -m -f '{{.Version}}' "$mod")
out="$bin/$name-$ver"

# progress prints a line per 100 packages compiled so a cold build (minutes)
# shows it is alive without flooding the log with hundreds of names.
progress() { awk -v what="$1" '{n++; if (n % 100 == 0) { printf "  %s: %d packages compiled\n", what, n; fflush() } } END { printf "  %s: done (%d packages)\n", what, n }'; }

if [ ! -x "$out" ]; then
	echo "building $name $ver from the Go module proxy (first time only: 3-9 minutes on 2 cores)..." >&2
	# -mod=mod: the scratch module lists upstream's dependencies as
	# indirect requirements; a module-proxy download may still add go.sum
	# lines for packages only the build (not `go get -tool`) reaches.
	# The -X flags are upstream's own (its Makefile's LDFLAGS), so
	# --version reports the release rather than v0.0.0-master.
	(cd "$tools" && GOFLAGS=-mod=mod go build -v -trimpath \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$ver -X main.gitVersion=$ver" \
		-o "$out.tmp" "$pkg" 2>&1 | progress "$name") >&2
	mv "$out.tmp" "$out"
fi

echo "$out"
