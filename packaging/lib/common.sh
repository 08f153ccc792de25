# Shell helpers shared by the packaging scripts, the Makefile and the test
# cluster (test/slurm-docker/cluster). Sourced, never run.
#
# Nothing here changes the host, except ensure_packages and ensure_dockerd:
# otherwise Debian's archive is read through a private apt configuration
# whose lists, cache and dpkg status live in a directory the caller owns.

# die prints a message to stderr and ends the script.
die() {
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

# note prints progress to stderr, so stdout stays free for results.
note() {
	printf '%s: %s\n' "${0##*/}" "$*" >&2
}

# script_usage prints the running script's leading comment, which is its
# usage, and exits 2.
script_usage() {
	sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}

# parse_options SPEC ARG... reads a script's options into its variables.
# SPEC lists the option names without their dashes: NAME: takes a value,
# given as --NAME VALUE or --NAME=VALUE, into the variable NAME; a bare NAME
# is a flag that sets it to 1. Dashes in NAME are underscores in the
# variable (--from-head sets from_head). -h and --help print the usage; any
# other option is an error. The other arguments, and all after --, are left
# in the array args, in order, for the script to check.
parse_options() {
	local _spec=" $1 " _opt _name
	shift
	args=()
	while [ $# -gt 0 ]; do
		_opt=$1 _name=${1#--}
		case "$_opt" in
		-h | --help) script_usage ;;
		--)
			args+=("${@:2}")
			return 0
			;;
		--*=*)
			[[ $_spec != *" ${_name%%=*} "* ]] || die "${_opt%%=*} takes no value"
			set -- "${_opt%%=*}" "${_opt#*=}" "${@:2}"
			;;
		--*)
			if [[ $_spec == *" $_name: "* ]]; then
				[ $# -ge 2 ] || die "$_opt needs a value"
				printf -v "${_name//-/_}" '%s' "$2"
				shift 2
			elif [[ $_spec == *" $_name "* ]]; then
				printf -v "${_name//-/_}" 1
				shift
			else
				die "unknown option $_opt (see --help)"
			fi
			;;
		-?*) die "unknown option $_opt (see --help)" ;;
		*)
			args+=("$_opt")
			shift
			;;
		esac
	done
}

need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || die "'$t' is not installed"
	done
}

# slurm_suite maps a Slurm major.minor to the Debian suite that ships it.
slurm_suite() {
	case "$1" in
	22.05) echo bookworm ;;
	24.11) echo trixie ;;
	26.05) echo sid ;;
	*) return 1 ;;
	esac
}

# Slurm releases no Debian suite ships, built from SchedMD's source archive
# (packaging/slurm-source.sh) on the Debian suite given here.
slurm_source_suite() {
	case "$1" in
	25.11) echo trixie ;;
	*) return 1 ;;
	esac
}

# slurm_supported succeeds for the releases SchedMD supports (25.11 to May
# 2027, 26.05): what the test cluster runs with the site profile. The others
# a Debian suite still ships (22.05 bookworm, 24.11 trixie) run the basic
# profile.
slurm_supported() {
	case "$1" in
	25.11 | 26.05) return 0 ;;
	*) return 1 ;;
	esac
}

# slurm_source_releases lists the releases slurm_source_suite knows.
slurm_source_releases() { echo 25.11; }

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

# check_slurm_version accepts only major.minor, the granularity at which Slurm
# loads SPANK plugins.
check_slurm_version() {
	[[ "$1" =~ ^[0-9]{2}\.[0-9]{2}$ ]] || die "Slurm version must be major.minor such as 24.11, got '$1'"
}

# header_version INCLUDEDIR prints the major.minor.micro that
# INCLUDEDIR/slurm/slurm_version.h declares.
header_version() {
	local h=$1/slurm/slurm_version.h n
	[ -f "$h" ] || return 1
	n=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3; exit }' "$h")
	[[ "$n" =~ ^0x[0-9a-fA-F]+$ ]] || return 1
	printf '%d.%02d.%d\n' $(((n >> 16) & 0xff)) $(((n >> 8) & 0xff)) $((n & 0xff))
}

# check_headers SLURM INCLUDEDIR fails unless INCLUDEDIR holds spank.h of
# Slurm release SLURM (major.minor): a shim compiled against other headers
# records their release, and Slurm refuses to load it.
check_headers() {
	local want=$1 dir=$2 hv
	[ -f "$dir/slurm/spank.h" ] || die "$dir/slurm/spank.h does not exist (SLURM_INCLUDE is the directory that holds slurm/spank.h)"
	hv=$(header_version "$dir") || die "cannot read SLURM_VERSION_NUMBER from $dir/slurm/slurm_version.h"
	[ "${hv%.*}" = "$want" ] ||
		die "the headers in $dir are Slurm $hv, not $want (SLURM=$want): Slurm would refuse a plugin built against them"
}

# slurm_next_minor prints the first major.minor after $1 (24.11 -> 24.12): the
# exclusive upper bound of a dependency on that Slurm release.
slurm_next_minor() {
	local major=${1%%.*} minor=${1#*.}
	printf '%s.%02d\n' "$major" $((10#$minor + 1))
}

# debian_mirror prints the URI of the Debian archive the host already uses.
# It reads deb822 *.sources files and one-line *.list files, and picks the
# first enabled "deb" entry whose suite is a Debian release name (so the
# security archive and third-party repositories are passed over).
# SPANK_OTEL_DEBIAN_MIRROR overrides it. (SPANK_OTEL_MIRROR, its older
# name, is now the mirror of the upstream archives: third_party_archive.)
debian_mirror() {
	local override=${SPANK_OTEL_DEBIAN_MIRROR:-}
	if [ -n "$override" ]; then
		echo "${override%/}"
		return
	fi
	local etc=${SPANK_OTEL_APT_ETC:-/etc/apt} files=() f uri
	[ -f "$etc/sources.list" ] && files+=("$etc/sources.list")
	for f in "$etc"/sources.list.d/*.list "$etc"/sources.list.d/*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || die "no apt sources found under $etc"
	uri=$(awk '
		BEGIN {
			n = split("oldoldstable oldstable stable testing unstable sid experimental " \
			          "buster bullseye bookworm trixie forky duke", r, " ")
			for (i = 1; i <= n; i++) release[r[i]] = 1
		}
		function flush(   i, n, t, s, u, isdeb, isrel) {
			if (types != "" && enabled != "no") {
				n = split(types, t, /[ \t]+/)
				for (i = 1; i <= n; i++) if (t[i] == "deb") isdeb = 1
				n = split(suites, s, /[ \t]+/)
				for (i = 1; i <= n; i++) if (s[i] in release) isrel = 1
				split(uris, u, /[ \t]+/)
				if (isdeb && isrel && u[1] != "") { print u[1]; found = 1; exit }
			}
			types = ""; uris = ""; suites = ""; enabled = ""; field = ""
		}
		FNR == 1 { flush(); deb822 = (FILENAME ~ /\.sources$/) }
		deb822 {
			if ($0 ~ /^#/) next
			if ($0 ~ /^[ \t]*$/) { flush(); next }
			if ($0 ~ /^[ \t]/) {   # continuation line
				sub(/^[ \t]+/, "")
				if (field == "types") types = types " " $0
				if (field == "uris") uris = uris " " $0
				if (field == "suites") suites = suites " " $0
				next
			}
			line = $0
			name = tolower(substr(line, 1, index(line, ":") - 1))
			value = substr(line, index(line, ":") + 1)
			gsub(/^[ \t]+|[ \t]+$/, "", value)
			field = name
			if (name == "types") types = value
			else if (name == "uris") uris = value
			else if (name == "suites") suites = value
			else if (name == "enabled") enabled = tolower(value)
			next
		}
		!deb822 {
			sub(/#.*/, "")
			if ($1 != "deb") next
			line = $0
			sub(/^[ \t]*deb[ \t]+/, "", line)
			if (line ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "", line)
			split(line, w, /[ \t]+/)
			if (w[2] in release) { print w[1]; found = 1; exit }
		}
		END { if (!found) flush() }
	' "${files[@]}")
	[ -n "$uri" ] || die "no Debian archive found in the apt sources under $etc (set SPANK_OTEL_DEBIAN_MIRROR)"
	echo "${uri%/}"
}

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
	before=$(installed_packages)
	{
		if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null ||
			! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${want[@]}"; then
			apt-get update -q || die "apt-get update failed"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${want[@]}" ||
				die "apt-get install ${want[*]} failed"
		fi
	} >&2
	mkdir -p "$(dirname "$(host_ledger)")"
	LC_ALL=C comm -13 <(echo "$before") <(installed_packages) >>"$(host_ledger)"
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

# debapt_init <suite> <dir> prepares a private apt configuration in <dir> for
# Debian <suite> and fills the array DEBAPT with the options that select it:
# run "apt-get "${DEBAPT[@]}" update". The host's sources, lists, cache,
# preferences and dpkg status are not read or written; its other settings
# (a proxy, for example) still apply.
debapt_init() {
	local suite=$1 dir=$2 mirror keyring arch
	keyring=${SPANK_OTEL_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
	[ -r "$keyring" ] || die "Debian archive keyring $keyring is missing (apt-get install debian-archive-keyring)"
	mirror=$(debian_mirror) || exit 1
	arch=${SPANK_OTEL_ARCH:-amd64}
	mkdir -p "$dir/state/lists/partial" "$dir/cache/archives/partial" "$dir/etc/preferences.d"
	: >"$dir/status"
	printf 'deb [arch=%s signed-by=%s] %s %s main\n' "$arch" "$keyring" "$mirror" "$suite" >"$dir/sources.list"
	cat >"$dir/apt.conf" <<-EOF
	Dir::Etc::SourceList "$dir/sources.list";
	Dir::Etc::SourceParts "/dev/null";
	Dir::Etc::Preferences "$dir/etc/preferences";
	Dir::Etc::PreferencesParts "$dir/etc/preferences.d";
	Dir::State "$dir/state";
	Dir::State::status "$dir/status";
	Dir::Cache "$dir/cache";
	Dir::Cache::pkgcache "";
	Dir::Cache::srcpkgcache "";
	APT::Architecture "$arch";
	#clear APT::Architectures;
	APT::Architectures { "$arch"; };
	Acquire::Languages "none";
	Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
	Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled "false";
	#clear APT::Update::Pre-Invoke;
	#clear APT::Update::Post-Invoke;
	#clear APT::Update::Post-Invoke-Success;
	#clear DPkg::Post-Invoke;
	APT::Sandbox::User "root";
	EOF
	# shellcheck disable=SC2034 # read by the caller
	DEBAPT=(-c "$dir/apt.conf")
	note "using $mirror $suite through a private apt configuration in $dir"
}

# symbol_u32 <object> <symbol> prints the 32-bit value of a defined dynamic
# symbol of an x86-64 object, or fails when it has none.
symbol_u32() {
	local so=$1 sym=$2 addr hex
	addr=$(nm -D --defined-only "$so" 2>/dev/null | awk -v s="$sym" '$3 == s { print $1; exit }')
	[ -n "$addr" ] || return 1
	# objdump prints the 4 bytes as one little-endian hex word.
	hex=$(objdump -s --start-address=0x"$addr" --stop-address=$((0x$addr + 4)) "$so" 2>/dev/null |
		awk '/^ [0-9a-f]+ [0-9a-f]+/ && length($2) == 8 { print $2; exit }')
	[ ${#hex} -eq 8 ] || return 1
	echo $((0x${hex:6:2}${hex:4:2}${hex:2:2}${hex:0:2}))
}

# shim_slurm_version <spank_otel.so> prints the major.minor of the Slurm the
# shim was compiled for, read from its plugin_version symbol (the
# SLURM_VERSION_NUMBER that SPANK_PLUGIN records and slurmd compares).
shim_slurm_version() {
	local v
	v=$(symbol_u32 "$1" plugin_version) || return 1
	printf '%d.%02d\n' $(((v >> 16) & 0xff)) $(((v >> 8) & 0xff))
}

# elf_kind prints "shared", "exec", "pie" or nothing for a file.
elf_kind() {
	local type
	type=$(readelf -h "$1" 2>/dev/null | awk -F: '/^ *Type:/ { gsub(/^[ \t]+/, "", $2); print $2 }')
	case "$type" in
	DYN*)
		# A PIE executable is DYN too; it has an interpreter.
		if readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'; then echo pie; else echo shared; fi ;;
	EXEC*) echo exec ;;
	esac
}

# needs_relr_glibc LIB succeeds when LIB asks for the glibc version that
# applies packed relocations (golib.mk), GLIBC_ABI_DT_RELR: glibc 2.36.
needs_relr_glibc() { readelf -V "$1" 2>/dev/null | grep -q GLIBC_ABI_DT_RELR; }

# check_artifacts <slurm> <shim> <lib> <cli> fails unless the three files are
# what the packages claim: a SPANK plugin for that Slurm release, the Go
# library with the two entry points the shim looks up, and an executable.
check_artifacts() {
	local slurm=$1 shim=$2 lib=$3 cli=$4 v sym
	need readelf nm objdump
	[ -f "$shim" ] || die "shim $shim does not exist (make shim SLURM=$slurm)"
	[ -f "$lib" ] || die "library $lib does not exist (make lib)"
	[ -f "$cli" ] || die "command $cli does not exist (make cli)"
	[ "$(elf_kind "$shim")" = shared ] || die "$shim is not an ELF shared object"
	[ "$(elf_kind "$lib")" = shared ] || die "$lib is not an ELF shared object"
	case "$(elf_kind "$cli")" in
	exec | pie) ;;
	*) die "$cli is not an ELF executable" ;;
	esac
	v=$(shim_slurm_version "$shim") || die "$shim has no plugin_version symbol: not a SPANK plugin"
	[ "$v" = "$slurm" ] || die "$shim was compiled for Slurm $v, not $slurm: Slurm would refuse to load it"
	for sym in spank_otel_abi spank_otel_task_env; do
		nm -D --defined-only "$lib" | awk -v s="$sym" '$3 == s { f = 1 } END { exit !f }' ||
			die "$lib does not export $sym"
	done
	# Packed relocations (golib.mk) only with the version that makes a glibc
	# too old to apply them refuse the file: unapplied, they would crash.
	if readelf -d "$lib" | grep -q '(RELR)' && ! needs_relr_glibc "$lib"; then
		die "$lib has packed relocations but does not require GLIBC_ABI_DT_RELR"
	fi
}

# source_date_epoch prints SOURCE_DATE_EPOCH, else the time of the last commit,
# else now: the timestamp written into packages, so rebuilding one commit gives
# the same bytes.
source_date_epoch() {
	local repo=$1 t
	if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
		echo "$SOURCE_DATE_EPOCH"
		return
	fi
	t=$(git -C "$repo" log -1 --format=%ct 2>/dev/null) || t=""
	[ -n "$t" ] || t=$(date +%s)
	echo "$t"
}

# packager prints who the packages name as their maintainer (Debian) and
# packager (RPM): SPANK_OTEL_MAINTAINER, else the project's address, the one
# debian/control names.
packager() { echo "${SPANK_OTEL_MAINTAINER:-spank-otel developers <spank-otel@users.noreply.github.com>}"; }

# stage_source SRC DEST FROM_HEAD copies the spank-otel source tree SRC into
# the directory DEST, as a package build takes it: with FROM_HEAD 1 the last
# commit (git archive HEAD); else the work tree, tracked and untracked files
# alike but nothing .gitignore excludes, never build/ (a tree outside git:
# everything but build/ and .git/).
stage_source() {
	local src=$1 dest=$2 from_head=$3
	mkdir -p "$dest"
	if [ "$from_head" = 1 ]; then
		git -C "$src" rev-parse --verify -q HEAD >/dev/null || die "$src has no commit to archive (leave out --from-head)"
		git -C "$src" archive --format=tar HEAD | tar -x -C "$dest"
	elif git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
			(cd "$src" && while IFS= read -r -d '' f; do
				[ -e "$f" ] || [ -L "$f" ] || continue # deleted, not yet staged
				case "$f" in build/*) continue ;; esac
				printf '%s\0' "$f"
			done) | tar -C "$src" --null -T - -c | tar -x -C "$dest"
	else
		tar -C "$src" --exclude=./build --exclude=./.git -c . | tar -x -C "$dest"
	fi
}
