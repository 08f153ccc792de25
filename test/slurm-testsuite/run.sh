#!/usr/bin/env bash
# run.sh [--slurm V] [--up] [TEST...]: SchedMD's own regression tests
# against the test cluster of Slurm V (default 26.05, a supported release,
# site profile), twice: without spank-otel (its plugstack line moved away on
# every node) and with it. Prints a table (test, result without, result
# with, time) and fails when a test passes without the plugin and not with
# it, or when a test does not pass in both modes and is not in known.tsv
# beside this script with its reason (there, it must fail or skip in both
# modes alike).
#
# TEST is a test file name of the suite (test_7_11, test_116_40.py, ...);
# without one, the four `make test` runs. The suite comes from
# slurm-testsuite-*.tar.gz (packaging/third-party.tsv, found and checked by
# third_party_archive), unpacked into a copy in which the changes Debian needs are
# made and printed: Debian's `slurmd -V` says "slurm-wlm 26.05.5" where the
# suite parses "slurm 26.05.5".
#
# The cluster must be up (test/slurm-docker/cluster up --slurm V), or --up
# brings it up and takes it down. The copy and the suite's base temp dir
# live in /tmp/slurm-testsuite, a volume every node mounts; pytest runs on
# slurmctld as atf, the runner user with passwordless sudo the node image
# has (setup-testsuite.sh). test_7_11 appends its plugin to plugstack.conf
# and reconfigures: it runs alone, with slurmctld's, c1's and c2's
# plugstack.conf a link to one shared file, and every node's file is put
# back byte for byte afterwards, which is checked.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../../packaging/lib/host.sh
. "$repo/packaging/lib/host.sh"

slurm=${SPANK_OTEL_SLURM:-$(slurm_default)} up=''
parse_options "slurm: up" "$@"
tests=("${args[@]}")
[ ${#tests[@]} -gt 0 ] || tests=(test_7_11 test_7_9 test_7_15 test_116_40)
check_slurm_version "$slurm"
slurm_supported "$slurm" || die "Slurm $slurm is not a supported release: the suite runs on the site profile of $(slurm_releases supported yes | paste -sd' ')"
need docker python3

cluster=$repo/test/slurm-docker/cluster
top=/tmp/slurm-testsuite
nodes=(slurmctld c1 c2 c3)
plugstack_nodes=(slurmctld c1 c2)
conf_d=/etc/slurm/plugstack.conf.d/spank-otel.conf
parked=/etc/slurm/spank-otel.conf.parked
started=$SECONDS

on() { # on NODE CMD...: CMD as root on NODE
	local node=$1
	shift
	"$cluster" exec --slurm "$slurm" --root --node "$node" -- "$@"
}

[ -z "$up" ] || "$cluster" up --slurm "$slurm" --profile site

# --- the suite, and the copy Debian needs ---------------------------------

archive=$(third_party_archive "slurm-testsuite-*.tar.gz")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$archive"
src=("$work"/slurm-testsuite-*)
[ -d "$src/testsuite/python" ] || die "$archive has no testsuite/python"
cp -a "$src" "$work/orig"
sed -i 's/\.replace("slurm ", "")/.replace("slurm-wlm ", "").replace("slurm ", "")/' "$src/testsuite/python/lib/atf.py"
sed -i 's/string map {"slurm " ""}/string map {"slurm-wlm " "" "slurm " ""}/' "$src/testsuite/expect/globals"
sed -i 's/regexp {slurm (\\d+\\.\\d+)}/regexp {slurm(?:-wlm)? (\\d+\\.\\d+)}/' "$src/testsuite/expect/test7.11"
note "the suite ${archive##*/}, with these changes for Debian's version string:"
changes=$(diff -ru "$work/orig" "$src" | grep '^[-+][^-+]' || :)
printf '%s\n' "$changes" >&2
[ "$(grep -c '^+' <<<"$changes")" -eq 3 ] || die "the version-string changes no longer apply to ${archive##*/}"

# Test names as the suite's files: test_7_11 -> expect/test_7_11.py.
files=()
for t in "${tests[@]}"; do
	t=${t%.py}
	t=${t##*/}
	if [ -f "$src/testsuite/python/tests/$t.py" ]; then
		files+=("tests/$t.py")
	elif [ -f "$src/testsuite/python/expect/$t.py" ]; then
		files+=("expect/$t.py")
	else
		die "no test $t in the suite (python/tests or python/expect)"
	fi
done

on slurmctld test -x /usr/bin/pytest-3 -o -x /usr/bin/pytest ||
	die "the node image of $slurm has no pytest: it is built with the testsuite layer (test/slurm-docker/testsuite.sh)"
on slurmctld sh -c "rm -rf $top/src $top/base-* $top/results-* && mkdir -p $top/src && chown atf:atf $top $top/src"
tar -C "$src" -cf - . | on slurmctld tar -C "$top/src" --no-same-owner -xf -
on slurmctld chown -R atf:atf "$top/src"
printf '%s\n' "SlurmSourceDir=$top/src" "SlurmBuildDir=$top/src" "SlurmInstallDir=/usr" \
	"SlurmConfigDir=/etc/slurm" | on slurmctld sh -c "cat >$top/testsuite.conf"

# --- plugstack.conf, kept and put back ------------------------------------

declare -A plugstack_sum
for n in "${nodes[@]}"; do
	plugstack_sum[$n]=$(on "$n" sh -c 'sha256sum /etc/slurm/plugstack.conf '"$conf_d"' 2>/dev/null || :')
	on "$n" sh -c "cp -a /etc/slurm/plugstack.conf /etc/slurm/plugstack.conf.testsuite-saved 2>/dev/null || :"
done
restore_plugstack() {
	local n
	for n in "${nodes[@]}"; do
		on "$n" sh -c "
			[ ! -f $parked ] || mv -f $parked $conf_d
			if [ -f /etc/slurm/plugstack.conf.testsuite-saved ]; then
				rm -f /etc/slurm/plugstack.conf
				mv /etc/slurm/plugstack.conf.testsuite-saved /etc/slurm/plugstack.conf
			fi"
	done
	on slurmctld scontrol reconfigure >/dev/null
}
cleanup() {
	restore_plugstack || :
	rm -rf "$work"
	[ -z "$up" ] || "$cluster" down --slurm "$slurm" >/dev/null 2>&1 || :
}
trap cleanup EXIT

# mode off|on: spank-otel's plugstack line away from, or back on, every
# node; new steps read it, no reconfigure needed. Checked with a real step.
mode() {
	local n attrs
	for n in "${nodes[@]}"; do
		if [ "$1" = off ]; then
			on "$n" sh -c "[ ! -f $conf_d ] || mv $conf_d $parked"
		else
			on "$n" sh -c "[ ! -f $parked ] || mv $parked $conf_d"
		fi
	done
	attrs=$("$cluster" exec --slurm "$slurm" -- srun -N2 -n2 sh -c 'printenv OTEL_RESOURCE_ATTRIBUTES || :' |
		grep -c 'slurm.job.id=' || :)
	case $1 in
	off) [ "$attrs" -eq 0 ] || die "spank-otel is still active with its line removed ($attrs tasks with attributes)" ;;
	on) [ "$attrs" -eq 2 ] || die "spank-otel is not active with its line back ($attrs of 2 tasks with attributes)" ;;
	esac
	note "spank-otel $1: $attrs of 2 tasks of a step have its attributes"
}

# pytest_as_runner MODE NAME FILE...: the suite's tests as atf, its junit
# report in $work/results-MODE-NAME.xml.
pytest_as_runner() {
	local m=$1 name=$2 report=$top/results-$1-$2.xml
	shift 2
	on slurmctld rm -rf "$top/base-$m-$name"
	"$cluster" exec --slurm "$slurm" --root --node slurmctld -- \
		runuser -u atf -- env SLURM_TESTSUITE_CONF="$top/testsuite.conf" PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		sh -c 'cd "$1" && shift && exec python3 -m pytest -p no:cacheprovider -q -rA "$@"' sh \
		"$top/src/testsuite/python" --basetemp="$top/base-$m-$name" --junitxml="$report" \
		--log-file="$top/base-$m-$name.log" "$@" >"$work/pytest-$m-$name.out" 2>&1 || :
	on slurmctld cat "$report" >"$work/results-$m-$name.xml" 2>/dev/null ||
		{ tail -n 30 "$work/pytest-$m-$name.out" >&2; die "pytest left no report ($m, $name)"; }
}

# share_plugstack / unshare_plugstack: test_7_11 writes plugstack.conf and
# reconfigures; the nodes' steps must read what it wrote.
share_plugstack() {
	on slurmctld sh -c "cp /etc/slurm/plugstack.conf $top/plugstack.conf && chown slurm:slurm $top/plugstack.conf && chmod 0644 $top/plugstack.conf"
	for n in "${plugstack_nodes[@]}"; do
		on "$n" sh -c "ln -sfn $top/plugstack.conf /etc/slurm/plugstack.conf"
	done
}
unshare_plugstack() {
	for n in "${plugstack_nodes[@]}"; do
		on "$n" sh -c "rm -f /etc/slurm/plugstack.conf && cp -a /etc/slurm/plugstack.conf.testsuite-saved /etc/slurm/plugstack.conf"
	done
	on slurmctld scontrol reconfigure >/dev/null
}

alone=() together=()
for f in "${files[@]}"; do
	case ${f##*/} in
	test_7_11.py) alone+=("$f") ;;
	*) together+=("$f") ;;
	esac
done

for m in off on; do
	mode "$m"
	t0=$SECONDS
	[ ${#together[@]} -eq 0 ] || pytest_as_runner "$m" tests "${together[@]}"
	if [ ${#alone[@]} -gt 0 ]; then
		share_plugstack
		pytest_as_runner "$m" alone "${alone[@]}"
		unshare_plugstack
	fi
	note "the suite ran with spank-otel $m in $((SECONDS - t0)) s"
done

restore_plugstack
for n in "${nodes[@]}"; do
	now=$(on "$n" sh -c 'sha256sum /etc/slurm/plugstack.conf '"$conf_d"' 2>/dev/null || :')
	[ "$now" = "${plugstack_sum[$n]}" ] || die "plugstack.conf of $n was not put back as it was: before ${plugstack_sum[$n]}, now $now"
done

# --- the table and the gate -----------------------------------------------

python3 "$here/table.py" "$here/known.tsv" "$work" "${files[@]}" || {
	for out in "$work"/pytest-*.out; do
		printf '==> %s <==\n' "${out##*/}"
		tail -n 40 "$out"
	done
	echo "slurm-testsuite: Slurm $slurm FAILED after $((SECONDS - started)) s"
	exit 1
}
echo "slurm-testsuite: Slurm $slurm passed in $((SECONDS - started)) s"
