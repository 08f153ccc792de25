#!/usr/bin/env bash
# purge-host.sh: take this machine back to where it was before the project's
# Makefile and test cluster first ran on it, so that the next `make demo` or
# `make test` is a cold run, as on a machine that never ran them:
#
#   - every cluster of every instance taken down (containers, networks,
#     volumes of the compose projects spank-otel-*), and the images the
#     cluster built (spank-otel-*);
#   - dockerd stopped when this project started it (ensure_dockerd), and,
#     when docker.io is one of the packages below, its state in
#     /var/lib/docker and /var/lib/containerd: all of it the project's;
#   - the host packages ensure_packages installed, dependencies included, as
#     its ledger lists them (/var/lib/spank-otel/host-packages), purged;
#   - the caches: /var/cache/spank-otel (Slurm built from source, root file
#     systems, enroot, pyxis, Jaeger, bench copies), Go's build and module
#     caches, npm's cache;
#   - build/ of this checkout, and the dockerd log.
#
# --keep-tool-caches keeps Go's and npm's caches, for a machine where other
# work uses them at the same time.
#
# What it cannot take back is printed: kernel modules dockerd loaded stay
# loaded (unloading them under a running kernel is not safe to automate).
# Packages installed before the ledger existed are not known to it: they
# stay. Root only.
#
# Usage: purge-host.sh [--dry-run] [--keep-tool-caches]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=../packaging/lib/host.sh
. "$repo/packaging/lib/host.sh"

dry_run='' keep_tool_caches=''
parse_options "dry-run keep-tool-caches" "$@"
[ ${#args[@]} -eq 0 ] || script_usage
[ "$(id -u)" = 0 ] || die "purge-host needs root"

cache=${SPANK_OTEL_CACHE:-/var/cache/spank-otel}
dockerd_log=${SPANK_OTEL_DOCKERD_LOG:-/var/log/spank-otel-dockerd.log}
ledger=$(host_ledger)

# run CMD...: CMD, or only its words with --dry-run.
run() {
	note "${dry_run:+would run: }$*"
	[ -n "$dry_run" ] || "$@"
}

ledger_packages=()
if [ -f "$ledger" ]; then
	# The ledger may list a package twice or one already removed by hand.
	mapfile -t ledger_packages < <(LC_ALL=C sort -u "$ledger" | LC_ALL=C comm -12 - <(installed_packages))
fi
ours_docker=''
for p in "${ledger_packages[@]}"; do
	[ "$p" != docker.io ] || ours_docker=1
done

if docker info >/dev/null 2>&1; then
	mapfile -t containers < <(docker ps -aq --filter label=com.docker.compose.project | while read -r c; do
		docker inspect -f '{{index .Config.Labels "com.docker.compose.project"}} {{.Id}}' "$c"
	done | awk '$1 ~ /^spank-otel-/ { print $2 }')
	[ ${#containers[@]} -eq 0 ] || run docker rm -f -v "${containers[@]}"
	mapfile -t networks < <(docker network ls --format '{{.Name}}' | grep '^spank-otel-' || :)
	[ ${#networks[@]} -eq 0 ] || run docker network rm "${networks[@]}"
	mapfile -t volumes < <(docker volume ls --format '{{.Name}}' | grep '^spank-otel-' || :)
	[ ${#volumes[@]} -eq 0 ] || run docker volume rm -f "${volumes[@]}"
	mapfile -t images < <(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^spank-otel-' || :)
	[ ${#images[@]} -eq 0 ] || run docker rmi -f "${images[@]}"
	run docker image prune -f --filter label=org.spank-otel.slurm
fi

# A dockerd this project started (ensure_dockerd logs to $dockerd_log) or
# that runs from a docker.io it installed is stopped; another is the site's.
if pid=$(cat /var/run/docker.pid 2>/dev/null) && [ -d "/proc/$pid" ] &&
	{ [ -n "$ours_docker" ] || [ -f "$dockerd_log" ]; }; then
	run kill "$pid"
	if [ -z "$dry_run" ]; then
		for _ in $(seq 100); do
			[ -d "/proc/$pid" ] || break
			sleep 0.2
		done
		[ ! -d "/proc/$pid" ] || die "dockerd ($pid) did not stop within 20 s"
	fi
	# containerd, when dockerd started its own, ends with it.
fi

if [ ${#ledger_packages[@]} -gt 0 ]; then
	run env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${ledger_packages[@]}" >&2
fi
if [ -n "$ours_docker" ]; then
	# A directory that is a mount point of its own (a machine that gives
	# docker its own disk or bind mount) is emptied, not removed: rm
	# cannot remove it ("Device or resource busy").
	for d in /var/lib/docker /var/lib/containerd /run/docker /run/containerd; do
		if mountpoint -q "$d" 2>/dev/null; then
			run find "$d" -mindepth 1 -delete
		else
			run rm -rf "$d"
		fi
	done
fi
run rm -f "$ledger" "$dockerd_log"
run rm -rf "$cache" "$repo/build"
if [ -z "$keep_tool_caches" ] && command -v go >/dev/null 2>&1; then
	run go clean -cache -modcache
fi
if [ -z "$keep_tool_caches" ] && command -v npm >/dev/null 2>&1; then
	run npm cache clean --force --loglevel=error
fi
# A kernel without loadable modules has no /proc/modules.
mods=$(awk '$1 ~ /^(overlay|br_netfilter|veth|bridge|xt_.*|nf_nat|ip_tables|iptable_.*)$/ { print $1 }' /proc/modules 2>/dev/null | xargs) || mods=''
[ -z "$mods" ] || note "left as they are: kernel modules loaded by dockerd or the kernel ($mods)"
note "${dry_run:+(dry run) }the host is as before the project's first run, but for what the lines above leave"
