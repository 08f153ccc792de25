# Shell helpers shared by the packaging scripts, the Makefile and the test
# cluster (test/slurm-docker/cluster). Sourced, never run.
#
# Nothing here changes the host or downloads anything: what does
# (apt, dockerd, the ledger, the upstream archives) is in host.sh, which
# only the development targets source. Debian's archive is read through
# a private apt configuration whose lists, cache and dpkg status live in
# a directory the caller owns.

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

# release_table prints the path of packaging/releases.tsv, the release
# table (SPANK_OTEL_RELEASES for tests).
release_table() {
	echo "${SPANK_OTEL_RELEASES:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/releases.tsv}"
}

# slurm_releases [COLUMN VALUE] prints the releases of the release table
# whose COLUMN (suite, source, supported) is VALUE, or all of them, one a
# line, in the table's order.
slurm_releases() {
	awk -F'\t' -v col="${1:-}" -v val="${2:-}" '
		/^#/ || NF < 4 { next }
		col == "" || (col == "suite" && $2 == val) || (col == "source" && $3 == val) ||
			(col == "supported" && $4 == val) { print $1 }' "$(release_table)"
}

# slurm_field RELEASE COLUMN prints that column of RELEASE's row, or fails
# for a release the table does not name.
slurm_field() {
	awk -F'\t' -v r="$1" -v col="$2" '
		/^#/ || NF < 4 || $1 != r { next }
		{ print (col == "suite" ? $2 : col == "source" ? $3 : $4); found = 1 }
		END { exit !found }' "$(release_table)"
}

# slurm_suite maps a Slurm major.minor to the Debian suite that ships it.
slurm_suite() {
	[ "$(slurm_field "$1" source)" = debian ] && slurm_field "$1" suite
}

# slurm_source_suite maps a release no Debian suite ships, built from
# SchedMD's source archive (packaging/slurm-source.sh), to the Debian
# suite it is built on.
slurm_source_suite() {
	[ "$(slurm_field "$1" source)" = schedmd ] && slurm_field "$1" suite
}

# slurm_supported succeeds for the releases SchedMD supports: what the test
# cluster runs with the site profile. The others run the basic profile.
slurm_supported() { [ "$(slurm_field "$1" supported)" = yes ]; }

# slurm_source_releases lists the releases slurm_source_suite knows.
slurm_source_releases() { slurm_releases source schedmd; }

# slurm_default prints the release used when none is named: the newest
# one SchedMD supports.
slurm_default() { slurm_releases supported yes | tail -n 1; }

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
