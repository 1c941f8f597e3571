# multicloud-ccm image.
#
#   docker build -t multicloud-ccm .                        # every backend
#   docker build --build-arg PROVIDERS=aws,gce -t ccm .     # only AWS and GCE
#
# Build stage: the full Go toolchain, discarded after the build.
FROM golang:1.26 AS build

# Backends to compile in, comma-separated (aws, azure, gce, openstack).
# Empty means all of them. Each backend's files are guarded by
# `//go:build !providerless || <cloud>`, so a slim build sets the tag
# providerless plus the names to keep.
ARG PROVIDERS=

WORKDIR /src

# Modules first, in their own layer: it is rebuilt only when go.mod/go.sum
# change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

# CGO_ENABLED=0: a static binary, so the runtime image needs no libc.
# -trimpath and -s -w: reproducible paths and a smaller binary (no symbol
# table or DWARF).
RUN TAGS=""; \
    if [ -n "$PROVIDERS" ]; then TAGS="providerless,$PROVIDERS"; fi; \
    echo "build tags: ${TAGS:-<none, all backends>}"; \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -tags "$TAGS" \
        -o /out/multicloud-ccm ./cmd/multicloud-ccm

# Runtime stage: distroless static has CA certificates (for cloud APIs) and
# tzdata but no shell or package manager, and its :nonroot variant runs as
# 65532.
FROM gcr.io/distroless/static-debian12:nonroot

COPY --from=build /out/multicloud-ccm /multicloud-ccm

# Numeric UID:GID so that the kubelet can verify runAsNonRoot; it matches
# runAsUser in deploy/deployment.yaml.
USER 65532:65532

ENTRYPOINT ["/multicloud-ccm"]
