#!/usr/bin/env bash
# Builds ptcd's OCI image without a container daemon: a static ptcd
# (CGO_ENABLED=0, -trimpath) on an empty base, run as uid 65532, with no
# shell and Debian's CA certificates. Every time in the image is
# SOURCE_DATE_EPOCH (default: the time of the last commit), so two builds of
# one commit have one digest. Prints the digest. docs/deploy.md.
#
#   scripts/build-image.sh [OUT]   write the OCI layout directory OUT
#                                  (default: $TMPDIR/ptcd-image) and OUT.tar
#
# Load it with `skopeo copy oci:OUT:ptcd:VERSION docker://REGISTRY/ptcd:VERSION`
# or `crane push OUT.tar ...` after `tar -xf`; see docs/deploy.md.
# Environment: SOURCE_DATE_EPOCH, PTC_IMAGE_TAG (default ptcd:VERSION),
# PTC_CA_CERTS (default /etc/ssl/certs/ca-certificates.crt, from Debian's
# ca-certificates package).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-${TMPDIR:-/tmp}/ptcd-image}"
ca="${PTC_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
if [ ! -s "$ca" ]; then
  echo "build-image: $ca is missing: install Debian's ca-certificates (apt-get install ca-certificates) or set PTC_CA_CERTS" >&2
  exit 1
fi
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
tag="${PTC_IMAGE_TAG:-ptcd:$version}"

work="$(mktemp -d "${TMPDIR:-/tmp}/ptc-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags="-buildid=" -o "$work/ptcd" ./cmd/ptcd
go build -o "$work/imagetool" ./scripts/imagetool

rm -rf "$out" "$out.tar"
mkdir -p "$(dirname "$out")"
"$work/imagetool" build -binary "$work/ptcd" -ca "$ca" -epoch "$epoch" \
  -out "$out" -tar "$out.tar" -tag "$tag" -version "$version"
