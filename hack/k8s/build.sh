#!/usr/bin/env bash
# Builds the Kubernetes control-plane binaries navarch's tests and `navarch dev` run:
# kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes), etcd and kwok,
# into a cache directory outside the repository keyed by version. A complete cache is reused
# as is, so only the first run on a machine pays the ~10 minute build.
#
# Usage: hack/k8s/build.sh            # prints the directory holding the binaries
# Env:   NAVARCH_CACHE_DIR            # cache root (default ~/.cache/navarch)
set -euo pipefail

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
KWOK_VERSION=v0.8.0

here=$(cd "$(dirname "$0")" && pwd)
cache_root=${NAVARCH_CACHE_DIR:-${HOME}/.cache/navarch}
dir="${cache_root}/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}"
stamp="${dir}/.complete"

if [[ -f "${stamp}" ]]; then
  echo "${dir}"
  exit 0
fi

mkdir -p "${dir}"
log() { echo "hack/k8s: $*" >&2; }
start=$(date +%s)

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitTreeState=clean"
log "building kube-apiserver, kube-controller-manager, kube-scheduler ${K8S_VERSION} and etcd ${ETCD_VERSION} into ${dir} (about 10 minutes on 2 cores the first time)"
(cd "${here}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${dir}/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler)
(cd "${here}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${dir}/etcd" go.etcd.io/etcd/server/v3)

# kwok's own module carries no replace directives, so it installs straight from the proxy
# with its own dependency versions, independent of the kubernetes module above.
log "building kwok ${KWOK_VERSION}"
CGO_ENABLED=0 GOBIN="${dir}" GOFLAGS=-trimpath go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"

for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok; do
  [[ -x "${dir}/${b}" ]] || { log "missing ${dir}/${b} after build"; exit 1; }
done
touch "${stamp}"
log "done in $(( $(date +%s) - start ))s"
echo "${dir}"
