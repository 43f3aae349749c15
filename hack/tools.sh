#!/usr/bin/env bash
# Provides the real binaries the tests run against — etcd, kube-apiserver,
# kube-controller-manager, kubectl, helm, the NATS CLI and an OCI registry (for chart
# tests) — built from Go modules
# with this machine's Go, because the module proxy is the only place we may get
# them from; and, only when asked (`hack/tools.sh compose`, for hack/images.sh), Docker
# Compose v2. Each tool is cached by version under
#   ${CNET_TOOLS_DIR:-$HOME/.cache/clusternet-nats/tools}/<tool>-<version>/
# so a second run only prints where the binaries are ("name=path" per line).
#
# Usage: hack/tools.sh [tool...]    tools: kubernetes etcd helm nats registry (default), compose
#
# A first build prints which tool and the elapsed time every 30 s on stderr: Kubernetes takes
# about 12 minutes on 2 cores, the others a minute or two each.
set -euo pipefail

K8S_VERSION=v1.34.4
K8S_STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.16
HELM_VERSION=v3.19.0
NATSCLI_VERSION=v0.5.0
REGISTRY_VERSION=v3.1.2
COMPOSE_VERSION=v2.40.3

TOOLS_DIR=${CNET_TOOLS_DIR:-$HOME/.cache/clusternet-nats/tools}
mkdir -p "$TOOLS_DIR"
TOOLS_DIR=$(cd "$TOOLS_DIR" && pwd)

# One Go workspace under the cache so module downloads and compiled packages are reused.
export GOPATH=$TOOLS_DIR/go
export GOMODCACHE=$TOOLS_DIR/go/pkg/mod
export GOCACHE=$TOOLS_DIR/go/cache
export GOFLAGS="-mod=mod -modcacherw -buildvcs=false"
export CGO_ENABLED=0
export GOTOOLCHAIN=local

fail() {
    echo "hack/tools.sh: cannot build $1: $2" >&2
    if [[ -n ${3:-} && -f $3 ]]; then
        echo "---- last lines of $3 ----" >&2
        tail -n 40 "$3" >&2
    fi
    exit 1
}

PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || fail "any tool" "Go is not installed (needed to build from the module proxy)"

# run_logged LOG MODULE CMD...: runs CMD with its output in LOG; names MODULE if it fails.
run_logged() {
    local log=$1 module=$2
    shift 2
    "$@" >>"$log" 2>&1 || fail "$module" "'$*' failed" "$log"
}

# progress WHAT START: says every 30 s that WHAT is still building and for how long, so a first
# `make test` does not look hung while Kubernetes compiles.
progress() {
    while sleep 30; do
        echo "hack/tools.sh: still building $1 ($(($(date +%s) - $2))s elapsed)" >&2
    done
}

# build TOOL VERSION BINARIES... : calls build_TOOL in a scratch dir once, under a lock,
# then moves the result to TOOLS_DIR/TOOL-VERSION atomically.
build() {
    local tool=$1 version=$2
    shift 2
    local dest=$TOOLS_DIR/$tool-$version
    (
        flock 9
        if [[ ! -f $dest/.complete ]]; then
            local work log start
            work=$(mktemp -d "$TOOLS_DIR/.build-$tool-XXXXXX")
            log=$TOOLS_DIR/$tool-$version.log
            : >"$log"
            start=$(date +%s)
            echo "hack/tools.sh: building $tool $version (log: $log)" >&2
            progress "$tool $version" "$start" >&2 9>&- &
            trap 'kill $! 2>/dev/null; rm -rf "$work"' EXIT
            "build_$tool" "$work" "$log" "$version"
            touch "$work/bin/.complete"
            rm -rf "$dest"
            mv "$work/bin" "$dest"
            echo "hack/tools.sh: built $tool $version in $(($(date +%s) - start))s" >&2
        fi
    ) 9>"$TOOLS_DIR/.$tool.lock"
    local bin
    for bin in "$@"; do
        [[ -x $dest/$bin ]] || fail "$tool" "$dest/$bin is missing after the build"
        echo "$bin=$dest/$bin"
    done
}

# k8s.io/kubernetes points its staging modules (k8s.io/api, ...) at ./staging with
# version v0.0.0, so our own go.mod replaces each with its published v0.X.Y release.
build_kubernetes() {
    local work=$1 log=$2 version=$3 gomod
    mkdir -p "$work/src" "$work/bin"
    gomod=$(cd "$work/src" && go mod download -json "k8s.io/kubernetes@$version" 2>>"$log" |
        sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p') || true
    [[ -n $gomod && -f $gomod ]] || fail "k8s.io/kubernetes@$version" "module not served by the Go module proxy" "$log"
    {
        echo "module cnet.local/kubetools"
        echo
        echo "go 1.24"
        echo
        echo "require k8s.io/kubernetes $version"
        echo
        sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#replace \1 => \1 '"$K8S_STAGING_VERSION"'#p' "$gomod"
    } >"$work/src/go.mod"
    grep -q '^replace k8s.io/api ' "$work/src/go.mod" ||
        fail "k8s.io/kubernetes@$version" "no staging replacements found in its go.mod" "$log"
    local pkg=k8s.io/component-base/version
    local minor=${version#v1.}
    minor=${minor%%.*}
    local ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags="$ldflags -X $pkg.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$version"
    cd "$work/src"
    run_logged "$log" "k8s.io/kubernetes@$version" go mod download k8s.io/kubernetes
    run_logged "$log" "k8s.io/kubernetes@$version" go build -p 2 -trimpath -ldflags="$ldflags" -o "$work/bin/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kubectl
}

# etcd's server module holds the etcd main package; its go.mod replaces siblings with
# local paths, so (as for Kubernetes) we build it from a go.mod of our own.
build_etcd() {
    local work=$1 log=$2 version=$3
    mkdir -p "$work/src" "$work/bin"
    printf 'module cnet.local/etcdtools\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$version" >"$work/src/go.mod"
    cd "$work/src"
    run_logged "$log" "go.etcd.io/etcd/server/v3@$version" go mod download go.etcd.io/etcd/server/v3
    run_logged "$log" "go.etcd.io/etcd/server/v3@$version" go build -p 2 -trimpath -ldflags="-s -w" \
        -o "$work/bin/etcd" go.etcd.io/etcd/server/v3
}

# go_install WORK LOG MODULE PACKAGE VERSION LDFLAGS: `go install pkg@version` into WORK/bin.
go_install() {
    local work=$1 log=$2 module=$3 package=$4 version=$5 ldflags=$6
    mkdir -p "$work/bin"
    GOBIN=$work/bin run_logged "$log" "$module@$version" \
        go install -p 2 -trimpath -ldflags="$ldflags" "$package@$version"
}

build_helm() {
    go_install "$1" "$2" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$3" \
        "-s -w -X helm.sh/helm/v3/internal/version.version=$3"
}

build_nats() {
    go_install "$1" "$2" github.com/nats-io/natscli github.com/nats-io/natscli/nats "$3" "-s -w"
}

# CNCF distribution's registry: an OCI registry tests push charts to with `helm push`.
build_registry() {
    go_install "$1" "$2" github.com/distribution/distribution/v3 \
        github.com/distribution/distribution/v3/cmd/registry "$3" "-s -w"
}

# Docker Compose v2, for hack/images.sh (installed there as the docker CLI plugin). Its go.mod
# has exclude directives, which `go install pkg@version` refuses, so it is built as the main
# module from a copy of its source.
build_compose() {
    local work=$1 log=$2 version=$3 dir
    local module=github.com/docker/compose/v2
    mkdir -p "$work/bin"
    dir=$(cd "$work" && go mod download -json "$module@$version" 2>>"$log" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true
    [[ -n $dir && -d $dir ]] || fail "$module@$version" "module not served by the Go module proxy" "$log"
    cp -r "$dir" "$work/src"
    chmod -R u+w "$work/src"
    cd "$work/src"
    run_logged "$log" "$module@$version" go build -p 2 -trimpath \
        -ldflags="-s -w -X $module/internal.Version=$version" -o "$work/bin/docker-compose" ./cmd
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(kubernetes etcd helm nats registry)
for tool in "${tools[@]}"; do
    case $tool in
    kubernetes) build kubernetes "$K8S_VERSION" kube-apiserver kube-controller-manager kubectl ;;
    etcd) build etcd "$ETCD_VERSION" etcd ;;
    helm) build helm "$HELM_VERSION" helm ;;
    nats) build nats "$NATSCLI_VERSION" nats ;;
    registry) build registry "$REGISTRY_VERSION" registry ;;
    compose) build compose "$COMPOSE_VERSION" docker-compose ;;
    *) fail "$tool" "unknown tool (known: kubernetes etcd helm nats registry compose)" ;;
    esac
done
