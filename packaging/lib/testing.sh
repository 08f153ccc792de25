# The project's one set of shell test helpers: check, finish and the
# expect_* assertions, used by every shell test (packaging/deb/test.sh,
# packaging/rpm/test.sh, packaging/include-test.sh, test/slurm-docker/smoke),
# then the checks of an installed package that the deb and rpm tests share.
# Sourced, never run. Each check prints "ok - ..." or "FAIL - ..." with the
# command's output; finish prints "N passed, M failed".

passed=0
failed=0
checklog=$(mktemp "${TMPDIR:-/tmp}/spank-otel-check.XXXXXX")

# check DESCRIPTION COMMAND...: one test; it passes when COMMAND succeeds.
check() {
	local desc=$1
	shift
	if "$@" >"$checklog" 2>&1; then
		passed=$((passed + 1))
		echo "ok - $desc"
	else
		failed=$((failed + 1))
		echo "FAIL - $desc"
		sed -e 's/^/    /' "$checklog" | head -n 40
	fi
}

finish() {
	rm -f "$checklog"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# expect_eq WANT GOT: prints both when they differ.
expect_eq() {
	[ "$1" = "$2" ] && return 0
	printf 'want: %s\n got: %s\n' "$1" "$2"
	return 1
}

# expect_contains HAYSTACK NEEDLE
expect_contains() {
	case "$1" in
	*"$2"*) return 0 ;;
	esac
	printf 'missing: %s\nin: %s\n' "$2" "$1"
	return 1
}

# The documented example of SPEC section 4: cluster cluster-a, job 12345.
example_env=(SLURM_JOB_ID=12345 SLURM_CLUSTER_NAME=cluster-a)
example_uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7

# shim_targets ROOT PLUGINDIR SLURM: the installed plugin was compiled for
# SLURM and loads the library from where the package put it.
shim_targets() {
	local root=$1 plugindir=$2 slurm=$3 v
	v=$(shim_slurm_version "$root$plugindir/spank_otel.so") || { echo "no plugin_version symbol"; return 1; }
	expect_eq "$slurm" "$v" || return 1
	grep -a -q -F "$plugindir/libspankotel.so" "$root$plugindir/spank_otel.so" ||
		{ echo "$plugindir/libspankotel.so is not compiled into the shim (DEFAULT_LIB)"; return 1; }
}

# shim_hardened SO: the plugin was built with the hardening spank/Makefile
# asks for: marked for CET (IBT and shadow stack, the GNU property note),
# bound at load (BIND_NOW) with its relocations read-only after (GNU_RELRO),
# no executable stack, fortified and stack-protected calls, and no .init
# section (linked without crti.o/crtn.o, so one would be a broken fragment).
shim_hardened() {
	local so=$1 notes dyn prog sects syms
	notes=$(readelf -nW "$so") || return 1
	dyn=$(readelf -dW "$so") || return 1
	prog=$(readelf -lW "$so") || return 1
	sects=$(readelf -SW "$so") || return 1
	syms=$(nm -D --undefined-only "$so") || return 1
	expect_contains "$notes" "x86 feature: IBT, SHSTK" || return 1
	grep -q -E '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' <<<"$dyn" || { echo "no BIND_NOW in: $dyn"; return 1; }
	grep -q -E '^ +GNU_RELRO ' <<<"$prog" || { echo "no GNU_RELRO segment"; return 1; }
	grep -q -E '^ +GNU_STACK .* RW +0x' <<<"$prog" || { echo "the stack is executable or unmarked"; return 1; }
	grep -q -E ' U __[a-z_]+_chk(@|$)' <<<"$syms" || { echo "no _FORTIFY_SOURCE call (__*_chk)"; return 1; }
	grep -q -E ' U __stack_chk_fail(@|$)' <<<"$syms" || { echo "no stack protector"; return 1; }
	if grep -q -E ' \.init +PROGBITS' <<<"$sects"; then
		echo "a .init section: linked with crti.o after all?"
		return 1
	fi
}

# shim_never_drains ROOT PLUGINDIR SLURM: from Slurm 25.05 on, the shim
# declares slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE (3012 in
# slurm_errno.h), so that a failed init never drains a node; before, Slurm
# has no such symbol and the shim exports none.
shim_never_drains() {
	local so=$1$2/spank_otel.so slurm=$3 mode
	if [ "$(printf '%s\n' "$slurm" 25.05 | sort -V | head -n1)" = 25.05 ]; then
		mode=$(symbol_u32 "$so" slurm_spank_init_failure_mode) ||
			{ echo "no slurm_spank_init_failure_mode symbol"; return 1; }
		expect_eq 3012 "$mode"
	elif nm -D --defined-only "$so" | grep -w slurm_spank_init_failure_mode; then
		echo "Slurm $slurm does not read slurm_spank_init_failure_mode"
		return 1
	fi
}

# contract_number NAME: the number NAME is #defined to in cgo/contract.h,
# the contract between the shim and the library.
contract_number() {
	local h n
	h=$(dirname "${BASH_SOURCE[0]}")/../../cgo/contract.h
	n=$(awk -v name="$1" '$1 == "#define" && $2 == name { print $3 }' "$h") || return 1
	[[ $n =~ ^[0-9]+$ ]] || { echo "no number for $1 in $h: '$n'" >&2; return 1; }
	echo "$n"
}

# lib_computes ROOT PLUGINDIR: load the installed Go library the way the shim
# does (dlopen, dlsym, the ABI check; libcall.c, built here against
# cgo/contract.h) and compute the attributes of the example job.
lib_computes() {
	local dir bin out set
	dir=$(dirname "${BASH_SOURCE[0]}")
	bin=$(mktemp) || return 1
	set=$(contract_number SO_RC_SET) || return 1
	cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$bin" "$dir/libcall.c" -ldl || { rm -f "$bin"; return 1; }
	out=$("$bin" "$1$2/libspankotel.so" "${example_env[@]}")
	local rc=$?
	rm -f "$bin"
	echo "$out"
	[ "$rc" -eq 0 ] || return 1
	expect_contains "$out" "rc=$set" || return 1
	expect_contains ",$(sed -n 's/^value=//p' <<<"$out")," ",nv.dl.job.uuid=$example_uuid,"
}

# cli_runs ROOT: the installed command prints its usage and computes the
# example job's attributes.
cli_runs() {
	local out
	out=$("$1/usr/bin/spank-otel" --help) || { echo "--help failed: $out"; return 1; }
	expect_contains "$out" "Usage: spank-otel" || return 1
	out=$(env -i "${example_env[@]}" "$1/usr/bin/spank-otel" task-env) || { echo "task-env failed: $out"; return 1; }
	expect_contains ",$out," ",nv.dl.job.uuid=$example_uuid,"
}

# plugstack_example FILE ROOT PLUGINDIR: the example has exactly one active
# line, and it names the installed shim and library.
plugstack_example() {
	local file=$1 root=$2 plugindir=$3 lines
	lines=$(grep -v -E '^[[:space:]]*(#|$)' "$file")
	expect_eq "optional $plugindir/spank_otel.so lib=$plugindir/libspankotel.so" "$lines" || return 1
	[ -f "$root$plugindir/spank_otel.so" ] && [ -f "$root$plugindir/libspankotel.so" ]
}

# plugstack_arguments FILE SHIM: the example describes every argument the
# installed shim knows, as the shim lists them in its log line for an
# unknown one ("(known: lib=, exclude=, ...)").
plugstack_arguments() {
	local file=$1 shim=$2 known arg missing=""
	known=$(grep -a -o '(known: [^)]*)' "$shim" | head -n1)
	[ -n "$known" ] || { echo "no '(known: ...)' list of arguments in $shim"; return 1; }
	for arg in $(sed -e 's/^(known: //; s/)$//; s/,/ /g' <<<"$known"); do
		grep -q -E "^#   ${arg}[^ ]* " "$file" || missing+=" $arg"
	done
	[ -z "$missing" ] || { echo "the example does not describe:$missing (the shim: $known)"; return 1; }
}

# check_installed ROOT PLUGINDIR SLURM: the checks of the files a package
# installed under ROOT that the deb and the rpm tests share.
check_installed() {
	local root=$1 plugindir=$2 slurm=$3
	check "the shim is a SPANK plugin for Slurm $slurm that loads the packaged library" \
		shim_targets "$root" "$plugindir" "$slurm"
	check "a failed slurm_spank_init of the shim never drains a node (Slurm 25.05 and later)" \
		shim_never_drains "$root" "$plugindir" "$slurm"
	check "the shim is hardened: CET note, BIND_NOW, RELRO, no executable stack, fortified" \
		shim_hardened "$root$plugindir/spank_otel.so"
	check "the Go library exports the ABI and computes the example job" lib_computes "$root" "$plugindir"
	check "spank-otel --help and task-env run" cli_runs "$root"
	check "plugstack.conf.example enables the installed plugin" \
		plugstack_example "$root/usr/share/spank-otel/plugstack.conf.example" "$root" "$plugindir"
	check "plugstack.conf.example describes every argument the shim knows" \
		plugstack_arguments "$root/usr/share/spank-otel/plugstack.conf.example" "$root$plugindir/spank_otel.so"
}
