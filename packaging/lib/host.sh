# Shell helpers that change the development host: install Debian packages
# with its apt (recorded in a ledger that make purge-host reads), start
# dockerd, and fetch the upstream source archives into a cache. Sourced,
# never run, by the development targets only (the test cluster, make test
# and its suites, make deb and make rpm on a build host); the package
# recipes (debian/rules, the RPM spec) call only the Makefile. Sources
# common.sh.

# shellcheck source=packaging/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ensure_packages [WHAT=]PACKAGE... installs, with the host's apt, the
# Debian packages that provide what is missing: WHAT is a command, or a
# file when it starts with /; a bare PACKAGE stands for a command of its
# own name. apt-get update runs only when apt has no package lists yet or
# the install fails without it. Only root installs; for anyone else a
# missing package is an error that names it.
#
# It prints nothing on stdout, whatever apt says: callers run it inside
# functions whose stdout is their result ($(...)). Every package the install
# added, dependencies included, is appended to host_ledger, which `make
# purge-host` reads to take the machine back to where it was.
ensure_packages() {
	local spec what want=() before
	for spec in "$@"; do
		what=${spec%%=*}
		if [[ $what == /* ]]; then
			[ -e "$what" ] && continue
		else
			command -v "$what" >/dev/null 2>&1 && continue
		fi
		[[ " ${want[*]} " == *" ${spec#*=} "* ]] || want+=("${spec#*=}")
	done
	[ ${#want[@]} -gt 0 ] || return 0
	[ "$(id -u)" = 0 ] || die "missing host packages: ${want[*]}; install them as root (apt-get install ${want[*]})"
	note "installing host packages: ${want[*]}"
	mkdir -p "$(dirname "$(host_ledger)")"
	before=$(installed_packages)
	{
		if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null ||
			! apt_locked apt-get install -y -q --no-install-recommends "${want[@]}"; then
			apt_locked apt-get update -q || die "apt-get update failed"
			apt_locked apt-get install -y -q --no-install-recommends "${want[@]}" ||
				die "apt-get install ${want[*]} failed"
		fi
	} >&2
	LC_ALL=C comm -13 <(echo "$before") <(installed_packages) >>"$(host_ledger)"
}

# apt_locked CMD... runs CMD, an apt-get, when no other apt_locked runs
# (waiting at most 900 s): apt-get fails at once on a dpkg lock another
# holds, and make test's background builds (test/prebuild.sh) install
# beside its suites. -o: what CMD starts does not hold the lock.
apt_locked() {
	DEBIAN_FRONTEND=noninteractive flock -w 900 -o "$(dirname "$(host_ledger)")/.lock-apt" "$@"
}

# installed_packages prints the names of the host's installed Debian
# packages, sorted.
installed_packages() {
	dpkg-query -W -f '${db:Status-Status} ${binary:Package}\n' 2>/dev/null |
		awk '$1 == "installed" { print $2 }' | LC_ALL=C sort
}

# host_ledger prints the file that lists the host packages ensure_packages
# installed, one a line: SPANK_OTEL_LEDGER, else
# /var/lib/spank-otel/host-packages.
host_ledger() { echo "${SPANK_OTEL_LEDGER:-/var/lib/spank-otel/host-packages}"; }

# ensure_dockerd starts dockerd when no docker daemon answers (root only) and
# waits for it, up to 60 s. Its log is SPANK_OTEL_DOCKERD_LOG
# (/var/log/spank-otel-dockerd.log).
ensure_dockerd() {
	local log=${SPANK_OTEL_DOCKERD_LOG:-/var/log/spank-otel-dockerd.log} i
	docker info >/dev/null 2>&1 && return 0
	[ "$(id -u)" = 0 ] || die "docker is not running and only root can start dockerd"
	command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed (apt-get install docker.io)"
	note "starting dockerd (log: $log)"
	setsid dockerd >>"$log" 2>&1 </dev/null &
	for i in $(seq 120); do
		docker info >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	tail -n 20 "$log" >&2 || :
	die "dockerd did not start within 60 s (log: $log)"
}

# third_party_dir prints the folder of upstream source archives: the
# project's ../shared/third_party, or SPANK_OTEL_THIRD_PARTY.
third_party_dir() {
	local repo
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	echo "${SPANK_OTEL_THIRD_PARTY:-$(dirname "$repo")/shared/third_party}"
}

# third_party_manifest prints the file naming each upstream source
# (packaging/third-party.tsv; SPANK_OTEL_THIRD_PARTY_MANIFEST for tests).
third_party_manifest() {
	echo "${SPANK_OTEL_THIRD_PARTY_MANIFEST:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/third-party.tsv}"
}

# archive_tree FILE PATHS prints the git tree id of the contents of the
# archive FILE, its one top directory stripped, keeping only PATHS (comma-
# separated; "-" for all): the same for a `git archive` and GitHub's
# download of one tag.
archive_tree() {
	local file=$1 paths=$2 tmp src p tree
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-tree.XXXXXX")
	mkdir "$tmp/x"
	if ! tar -xzf "$file" -C "$tmp/x" 2>/dev/null; then
		rm -rf "$tmp"
		return 1
	fi
	src=$tmp/x
	shopt -s dotglob nullglob
	local top=("$tmp/x"/*)
	shopt -u dotglob nullglob
	[ ${#top[@]} -ne 1 ] || [ ! -d "${top[0]}" ] || src=${top[0]}
	if [ "$paths" != - ]; then
		mkdir "$tmp/kept"
		for p in ${paths//,/ }; do
			[ -e "$src/$p" ] && cp -a "$src/$p" "$tmp/kept/"
		done
		src=$tmp/kept
	fi
	tree=$(GIT_DIR=$tmp/git GIT_WORK_TREE=$src sh -c 'git init -q && git add -A -f && git write-tree' 2>/dev/null) || tree=''
	rm -rf "$tmp"
	[ -n "$tree" ] && echo "$tree"
}

# third_party_needed prints every archive of the manifest, one a line:
# file, project, ref, and where it is downloaded from.
third_party_needed() {
	awk -F'\t' '!/^#/ && NF >= 5 { printf "  %s (%s %s): %s\n", $1, $2, $3, $4 }' "$(third_party_manifest)"
}

# third_party_archive GLOB prints the path of the one upstream archive of
# the manifest whose name matches GLOB, after checking that its contents
# are that upstream ref's (its git tree id). It looks in
# SPANK_OTEL_THIRD_PARTY when set (the offline route, which wins), else in
# ../shared/third_party, then in the cache; otherwise it downloads the
# archive into the cache from SPANK_OTEL_MIRROR/<file> when set, else from
# its upstream address. A missing archive that cannot be had, or one whose
# contents differ, is an error naming it.
third_party_archive() {
	local glob=$1 manifest row file project ref url tree paths dir cache got from err
	manifest=$(third_party_manifest)
	[ -f "$manifest" ] || die "missing $manifest, which names the upstream archives"
	row=$(awk -F'\t' -v g="$glob" '!/^#/ && NF >= 5 { n = g; gsub(/\./, "\\.", n); gsub(/\*/, ".*", n); gsub(/\?/, ".", n); if ($1 ~ ("^" n "$")) print }' "$manifest")
	[ -n "$row" ] || die "$manifest names no archive like $glob"
	[ "$(wc -l <<<"$row")" -eq 1 ] || die "more than one archive of $manifest matches $glob"
	IFS=$'\t' read -r file project ref url tree paths <<<"$row"
	dir=$(third_party_dir)
	cache=${SPANK_OTEL_CACHE:-/var/cache/spank-otel}/third-party/archives
	if [ -n "${SPANK_OTEL_THIRD_PARTY:-}" ]; then
		got=$dir/$file
		[ -f "$got" ] || die "missing third-party archive $got (SPANK_OTEL_THIRD_PARTY is set, so nothing is downloaded); every archive needed:"$'\n'"$(third_party_needed)"
	elif [ -f "$dir/$file" ]; then
		got=$dir/$file
	elif [ -f "$cache/$file" ]; then
		got=$cache/$file
	else
		from=${SPANK_OTEL_MIRROR:+${SPANK_OTEL_MIRROR%/}/$file}
		from=${from:-$url}
		ensure_packages curl
		mkdir -p "$cache"
		note "downloading $file ($project $ref) from $from"
		if [ -t 2 ]; then
			err=$(curl -fL --connect-timeout 5 --retry 1 --progress-bar -o "$cache/$file.part" "$from" 2>&1 >/dev/null | tail -n 1)
		else
			err=$(curl -fsSL --connect-timeout 5 --retry 1 -o "$cache/$file.part" "$from" 2>&1)
		fi || {
			rm -f "$cache/$file.part"
			die "cannot download $file from $from (${err:-curl failed}); with no network, put the archives in a folder and set SPANK_OTEL_THIRD_PARTY to it, or serve them by name under SPANK_OTEL_MIRROR; every archive needed:"$'\n'"$(third_party_needed)"
		}
		mv "$cache/$file.part" "$cache/$file"
		got=$cache/$file
	fi
	third_party_check "$got" "$project" "$ref" "$tree" "$paths"
	echo "$got"
}

# third_party_check FILE PROJECT REF TREE PATHS dies unless FILE's contents
# have the git tree id TREE. An archive checked once is known by its sha256
# in the cache, and not unpacked again.
third_party_check() {
	local file=$1 project=$2 ref=$3 tree=$4 paths=$5 known sum got
	known=${SPANK_OTEL_CACHE:-/var/cache/spank-otel}/third-party/verified
	sum=$(sha256sum <"$file" | cut -d' ' -f1)
	if [ -f "$known" ] && grep -qx "$sum $tree" "$known"; then
		return 0
	fi
	got=$(archive_tree "$file" "$paths") || got=''
	[ "$got" = "$tree" ] || die "$file is not $project $ref: its contents have git tree ${got:-(not a gzip tar archive)}, the manifest $(third_party_manifest) says $tree"
	mkdir -p "$(dirname "$known")" 2>/dev/null && echo "$sum $tree" >>"$known" || :
}
