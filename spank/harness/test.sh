#!/bin/bash
# Tests of the spank-otel shim's helper process and of spank_otel.so itself.
#
#   test.sh --harness PATH --testdata DIR [--mock PATH --shim PATH]
#           [--go PATH] [--real PATH] [--fault PATH]
#
# --harness   spank-otel-harness (make -C spank harness)
# --testdata  directory with libfake.so, libfake-noabi.so, libfake-abi2.so
# --mock      spank-otel-mockslurm; with --shim, the plugin is tested in it
# --go        an empty Go c-shared library (make -C spank goempty)
# --real      the real libspankotel.so
# --fault     the test library that crashes on request (test/faultlib)
#
# The checks (missing, empty, truncated, foreign ELF, unsafe owner or mode,
# the task's state, resource limits) run against every library given; the
# helper's identity, signals, placement and the cgroup code (on fake trees,
# as an unprivileged user, and in real cgroup v1 or v2 hierarchies) with
# the fake library. Needs root (it changes file owners, creates cgroups
# and runs children as uid 65534).
# Prints "N passed, M failed" last and exits non-zero when anything failed.

set -u

HARNESS= TESTDATA= MOCK= SHIM= GOLIB= REAL= FAULT=
while [ $# -gt 0 ]; do
	case "$1" in
	--harness) HARNESS=$2; shift 2 ;;
	--testdata) TESTDATA=$2; shift 2 ;;
	--mock) MOCK=$2; shift 2 ;;
	--shim) SHIM=$2; shift 2 ;;
	--go) GOLIB=$2; shift 2 ;;
	--real) REAL=$2; shift 2 ;;
	--fault) FAULT=$2; shift 2 ;;
	*) echo "test.sh: unknown argument $1" >&2; exit 64 ;;
	esac
done

PASS=0
FAIL=0
OUT=
RC=0

pass() { PASS=$((PASS + 1)); echo "ok   - $1"; }
fail() {
	FAIL=$((FAIL + 1))
	echo "FAIL - $1"
	[ -n "${2:-}" ] && echo "       $2"
	printf '%s\n' "$OUT" | sed 's/^/       | /' | head -40
}

# run CMD...: runs it (at most 60 s), output in $OUT, exit code in $RC.
run() {
	OUT=$(timeout 60 "$@" 2>&1)
	RC=$?
}

# check NAME RC PATTERN...: $RC must equal RC, and $OUT must match every
# PATTERN (grep -E); a PATTERN starting with ! must not match.
check() {
	local name=$1 want=$2 p
	shift 2
	if [ "$RC" != "$want" ]; then
		fail "$name" "exit code $RC, want $want"
		return
	fi
	for p in "$@"; do
		if [ "${p#!}" != "$p" ]; then
			if printf '%s\n' "$OUT" | grep -qE -- "${p#!}"; then
				fail "$name" "output matches /${p#!}/"
				return
			fi
		elif ! printf '%s\n' "$OUT" | grep -qE -- "$p"; then
			fail "$name" "output lacks /$p/"
			return
		fi
	done
	pass "$name"
}

if [ "$(id -u)" != 0 ]; then
	echo "test.sh: needs root (file owners, --as-user)"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ ! -x "$HARNESS" ] || [ ! -f "$TESTDATA/libfake.so" ]; then
	echo "test.sh: --harness and --testdata are required (make -C spank harness)"
	echo "0 passed, 1 failed"
	exit 1
fi

# A directory whose whole path is root-owned and not group/world-writable,
# as the loader demands (/tmp is world-writable, so it will not do).
T=$(mktemp -d /run/spank-otel-test.XXXXXX 2>/dev/null) ||
	T=$(mktemp -d "$TESTDATA/../test.XXXXXX")
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
ENVF=$T/env
printf 'SLURM_JOB_ID=12345\0SLURM_CLUSTER_NAME=cluster-a\0SLURM_JOB_NAME=t\0PATH=/usr/bin\0' > "$ENVF"

H() { run "$HARNESS" --env-file "$ENVF" "$@"; }

# Checks that hold for any library: $1 = kind, $2 = path, $3 = go when
# the library starts a Go runtime.
loader_suite() {
	local kind=$1 src=$2 isgo=${3:-} d=$T/$1 lib size other
	mkdir -p "$d"
	lib=$d/lib.so
	cp "$src" "$lib"
	chmod 644 "$lib"

	H --lib "$lib"
	check "$kind: loads from a safe path; the task is left as it was" 0 '^status=called$' \
		'^state=same$' '^after=threads=1 children=0 '

	H --lib "$lib" --ignore PIPE --block USR1 --block TERM
	check "$kind: SIGPIPE ignored before stays ignored, mask and altstack kept" 0 \
		'^status=called$' '^state=same$' '^ignored=.*PIPE'

	H --lib "$lib" --open-in-child
	check "$kind: open and check in the task works too" 0 '^status=called$' '^state=same$'

	H --lib "$lib" --reuse-fd
	check "$kind: descriptor reused for another file before loading: refused" 2 \
		'^status=open-failed$' 'its descriptor was closed or reused' '^state=same$'

	H --lib "$lib" --as-user 65534 --ignore PIPE
	check "$kind: helper and task running as another user" 0 '^status=called$' '^state=same$'

	H --lib "$d/missing.so"
	check "$kind: missing library: one error, not loaded" 2 '^status=open-failed$' \
		'msg error spank-otel: cannot open .*missing.so: No such file'

	: > "$d/empty.so"
	H --lib "$d/empty.so"
	check "$kind: zero-byte file: dlopen error logged" 4 '^status=load-failed$' \
		'msg error spank-otel: cannot load .*empty.so: .*(too short|invalid ELF)' '^state=same$'

	size=$(stat -c %s "$lib")
	head -c $((size / 2)) "$lib" > "$d/trunc.so"
	H --lib "$d/trunc.so"
	check "$kind: truncated copy: refused before dlopen (which would SIGBUS)" 4 \
		'^status=load-failed$' 'msg error spank-otel: cannot load .*trunc.so: truncated ELF file'

	# Cut inside the program headers, and just short of the end.
	head -c 100 "$lib" > "$d/trunc2.so"
	H --lib "$d/trunc2.so"
	check "$kind: copy cut inside the program headers: refused" 4 '^status=load-failed$' \
		'cannot load .*trunc2.so: damaged ELF file'
	head -c $((size - 1)) "$lib" > "$d/trunc3.so"
	H --lib "$d/trunc3.so"
	check "$kind: copy missing its last byte: loaded or refused, the task unharmed" 0 \
		'^status=(called|load-failed|helper-died)$' '^state=same$'

	printf 'not an ELF file, but long enough to hold an ELF header: %080d\n' 0 > "$d/text.so"
	H --lib "$d/text.so"
	check "$kind: not an ELF file: dlopen error logged" 4 '^status=load-failed$' \
		'msg error spank-otel: cannot load .*text.so: .*invalid ELF header'

	for other in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 \
		/lib/x86_64-linux-gnu/libgcc_s.so.1; do
		[ -e "$other" ] && break
	done
	cp -L "$other" "$d/other.so"
	H --lib "$d/other.so"
	check "$kind: a different ELF library ($(basename "$other")): symbols missing" 5 \
		'^status=symbol-missing$' 'msg error spank-otel: cannot use .*other.so: it does not export spank_otel_'

	cp "$lib" "$d/ww.so"
	chmod 666 "$d/ww.so"
	H --lib "$d/ww.so"
	check "$kind: world-writable file refused" 1 '^status=refused$' \
		'refusing to load .*ww.so: writable by group or others \(mode 0666\)'

	cp "$lib" "$d/gw.so"
	chmod 664 "$d/gw.so"
	H --lib "$d/gw.so"
	check "$kind: group-writable file refused" 1 '^status=refused$' 'writable by group or others'

	cp "$lib" "$d/user.so"
	chown 1000 "$d/user.so"
	H --lib "$d/user.so"
	check "$kind: file owned by a user refused" 1 '^status=refused$' \
		'refusing to load .*user.so: owned by uid 1000 and writable by it'

	H --lib "$d/user.so" --trusted-uid 1000
	check "$kind: file owned by the trusted (SlurmUser) uid accepted" 0 '^status=called$'

	mkdir -p "$d/open"
	chmod 777 "$d/open"
	cp "$lib" "$d/open/lib.so"
	H --lib "$d/open/lib.so"
	check "$kind: file in a world-writable directory refused" 1 '^status=refused$' \
		'directory .*/open is writable by group or others \(mode 0777\)'

	mkdir -p "$d/open/sub"
	chmod 755 "$d/open/sub"
	cp "$lib" "$d/open/sub/lib.so"
	H --lib "$d/open/sub/lib.so"
	check "$kind: file below a world-writable directory refused" 1 '^status=refused$' \
		'directory .*/open is writable'

	mkdir -p "$d/userdir"
	chown 1000 "$d/userdir"
	cp "$lib" "$d/userdir/lib.so"
	H --lib "$d/userdir/lib.so"
	check "$kind: file in a user-owned directory refused" 1 '^status=refused$' \
		'directory .*/userdir is owned by uid 1000'

	ln -sf "$lib" "$d/link.so"
	H --lib "$d/link.so"
	check "$kind: symbolic link to a safe file followed" 0 '^status=called$'

	# A link is only as safe as the directory it lives in: a user who can
	# write there can point it at another file before the next step.
	ln -sf "$lib" "$d/open/link.so"
	H --lib "$d/open/link.so"
	check "$kind: link in a world-writable directory to a safe file: refused" 1 '^status=refused$' \
		'refusing to load .*/open/link.so: directory .*/open is writable by group or others'
	mkdir -p "$d/safe/sub"
	chmod 755 "$d/safe" "$d/safe/sub"
	ln -sfn "$d/open" "$d/safe/openlink"
	ln -sf ../../lib.so "$d/open/rel.so"
	H --lib "$d/safe/openlink/rel.so"
	check "$kind: safe link to an unsafe directory holding a relative link: refused" 1 \
		'^status=refused$' 'directory .*/open is writable'
	ln -sfn .. "$d/safe/sub/up"
	ln -sf "$d/safe/sub/up/../lib.so" "$d/safe/chain.so"
	H --lib "$d/safe/chain.so"
	check "$kind: a chain of links, relative and absolute, in safe directories: loaded" 0 '^status=called$'
	mkdir -p "$d/userdir2"
	chown 1000 "$d/userdir2"
	ln -sf "$lib" "$d/userdir2/link.so"
	H --lib "$d/userdir2/link.so"
	check "$kind: link in a user-owned directory to a safe file: refused" 1 '^status=refused$' \
		'directory .*/userdir2 is owned by uid 1000'

	ln -sf "$d/open/lib.so" "$d/badlink.so"
	H --lib "$d/badlink.so"
	check "$kind: link to a file in an unsafe directory refused" 1 '^status=refused$' \
		'directory .*/open is writable'

	H --lib "relative/lib.so"
	check "$kind: relative path refused" 1 '^status=refused$' 'not an absolute path'

	mkfifo "$d/fifo.so"
	H --lib "$d/fifo.so"
	check "$kind: FIFO refused without hanging" 1 '^status=refused$' 'not a regular file'

	H --lib "$d"
	check "$kind: directory refused" 1 '^status=refused$' 'not a regular file'

	# Limits: the helper raises its own soft limits; whatever the hard
	# limits do to it, the task keeps its own limits and runs.
	H --lib "$lib" --setrlimit AS=512M:unlimited
	check "$kind: low RLIMIT_AS soft limit: the helper raises its own" 0 \
		'^status=called$' '^state=same$'

	H --lib "$lib" --setrlimit STACK=256K:unlimited
	check "$kind: small RLIMIT_STACK" 0 '^status=called$' '^state=same$'

	H --lib "$lib" --as-user 65534 --setrlimit NPROC=4:4096
	check "$kind: tight RLIMIT_NPROC soft limit" 0 '^status=called$' '^state=same$'

	if [ "$isgo" = go ]; then
		H --lib "$lib" --setrlimit AS=512M:512M
		check "$kind: RLIMIT_AS hard limit too low: Go aborts in the helper, the task runs" 8 \
			'^status=helper-died$' '^state=same$' \
			'msg error spank-otel: the helper process (exited with status 2|was killed by signal 6 \(Aborted\)) before it answered: (fatal error|runtime)'

		H --lib "$lib" --setrlimit DATA=64M:64M
		check "$kind: RLIMIT_DATA hard limit too low: the helper dies, the task runs" 8 \
			'^status=helper-died$' '^state=same$'

		H --lib "$lib" --as-user 65534 --setrlimit NPROC=4:4
		check "$kind: RLIMIT_NPROC exhausted: a thread cannot start, the task runs" 8 \
			'^status=helper-died$' '^state=same$' 'pthread_create failed'
	else
		H --lib "$lib" --setrlimit AS=512M:512M
		check "$kind: RLIMIT_AS hard limit 512M is enough for a C library" 0 \
			'^status=called$' '^state=same$'
	fi

	run "$HARNESS" --bench 3 --lib "$lib" --env-file "$ENVF"
	if [ "$RC" = 0 ] && [ "$(printf '%s\n' "$OUT" | grep -cE '^[0-9]+$')" = 3 ]; then
		pass "$kind: --bench 3 prints 3 timings"
	else
		fail "$kind: --bench 3 prints 3 timings"
	fi

	# A refusal names the rule that failed and the path, in --bench too
	# (make bench once stopped on ".../ours.0.so: refused" alone); a
	# checkout under /tmp fails the directory rule on /tmp itself.
	run "$HARNESS" --bench 3 --lib "$d/open/lib.so" --env-file "$ENVF"
	check "$kind: --bench: a refusal names the rule and the path" 1 \
		"^spank-otel-harness: refusing to load $d/open/lib\.so: directory $d/open is writable by group or others \(mode 0777\)$" \
		'!^[0-9]+$'
	local in_tmp
	in_tmp=$(mktemp -d /tmp/spank-otel-test.XXXXXX)
	chmod 755 "$in_tmp"
	cp "$lib" "$in_tmp/lib.so"
	run "$HARNESS" --bench 3 --lib "$in_tmp/lib.so" --env-file "$ENVF"
	rm -rf "$in_tmp"
	check "$kind: --bench: a library under /tmp is refused, naming /tmp and its mode" 1 \
		"^spank-otel-harness: refusing to load $in_tmp/lib\.so: directory /tmp is writable by group or others \(mode 1777\)$"
}

loader_suite fake "$TESTDATA/libfake.so"
[ -n "$GOLIB" ] && loader_suite go "$GOLIB" go
[ -n "$REAL" ] && loader_suite real "$REAL" go

# What only the fake library can show (it does what its environment says).
F=$T/fake/lib.so
fenv() { printf '%s\0' "$@" > "$T/fenv"; }

fenv SLURM_JOB_ID=99
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --exclude a,b --max-env 12345
check "fake: task environment, exclude and max_env reach the library" 0 \
	'^rc=1$' '^value=fake.job=99$' '^log=D exclude=a,b max_env=12345 envc=1$'

run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: default max_env is the execve budget (2 MiB - 8 KiB slack - 8)" 0 \
	"max_env=$((2 * 1024 * 1024 - 8192 - 8)) "

fenv FAKE_RC=0
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: rc 0 passed back" 0 '^rc=0$'

fenv FAKE_RC=-1 'FAKE_LOG=E recovered panic: boom'
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: rc -1 and an E log line at error level" 0 '^rc=-1$' \
	'msg error spank-otel: recovered panic: boom'

fenv 'FAKE_LOG=V verbose line|D debug line|no prefix'
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: V, D and unprefixed log lines mapped" 0 'msg verbose spank-otel: verbose line' \
	'msg debug spank-otel: debug line' 'msg verbose spank-otel: no prefix'

fenv FAKE_CRASH=1 'FAKE_STDERR=fatal error: out of everything'
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: a library that aborts kills only the helper: one error line with its stderr" 8 \
	'^status=helper-died$' '^state=same$' \
	'msg error spank-otel: the helper process was killed by signal 6 \(Aborted\) before it answered: fatal error: out of everything; OTEL_RESOURCE_ATTRIBUTES left unchanged$'
n=$(printf '%s\n' "$OUT" | grep -c '^msg error')
[ "$n" = 1 ] && pass "fake: a crash costs one error line" || fail "fake: a crash costs one error line" "$n lines"

fenv FAKE_EXIT=3
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: a library that exits mid-call: reported, the task runs" 8 '^status=helper-died$' \
	'the helper process exited with status 3 before it answered' '^state=same$'

# within: the task's own figure for the whole call ("helper STATUS in N us")
# is at most $1 ms, and 5 ms for taking the time and logging.
within() {
	local us
	us=$(printf '%s\n' "$OUT" | sed -n 's/^msg debug spank-otel: helper [a-z-]* in \([0-9]*\) us .*/\1/p')
	[ -n "$us" ] && [ "$us" -le $(($1 * 1000 + 5000)) ]
}
fenv FAKE_HANG=1 SLURM_JOB_ID=1
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --timeout 300
check "fake: a hanging library: killed at the timeout, reaped, the task runs" 7 '^status=timeout$' \
	'msg error spank-otel: the helper process did not answer within 300 ms \(timeout=\); killed it' \
	'^state=same$' '^after=threads=1 children=0 ' '!left behind'
within 300 && pass "fake: the hang costs the task at most timeout= (killing and reaping included)" ||
	fail "fake: the hang costs the task at most timeout= (killing and reaping included)"

# A library that writes its answer to the socket itself and carries on:
# the task has its value at once and does not wait for the timeout.
fenv FAKE_FORGE=linger
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --timeout 3000
check "fake: a helper that answered and lingers: value taken, helper killed" 0 '^status=called$' \
	'^value=fake.forged=1$' '^state=same$' '^after=threads=1 children=0 ' '!left behind'
within 1000 && pass "fake: a helper that answered and lingers costs far less than timeout=" ||
	fail "fake: a helper that answered and lingers costs far less than timeout="

# The answer is checked: a value with a control character is a protocol
# error (a NUL would cut it short, a newline would reach the environment).
fenv FAKE_FORGE=nul
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: a value with an embedded NUL: rejected, the helper killed" 9 '^status=bad-answer$' \
	'msg error spank-otel: the helper process answered a value with control character 0x00 at byte 3 \(the library broke the protocol\); killed it; OTEL_RESOURCE_ATTRIBUTES left unchanged$' \
	'^state=same$' '^after=threads=1 children=0 '
printf 'FAKE_VALUE=a=1\nb=2\0' > "$T/fenv"
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: a value with a newline: rejected" 9 '^status=bad-answer$' \
	'control character 0x0a at byte 3' '!^value='
printf 'FAKE_LOG=I one\033[2Jtwo\rthree\ttab\0' > "$T/fenv"
run "$HARNESS" --lib "$F" --env-file "$T/fenv"
check "fake: control characters of a log line reach the log as '?' (tabs kept)" 0 '^status=called$' \
	$'msg info spank-otel: one\\?\\[2Jtwo\\?three\ttab$'

# What the helper is, from inside (the fake library's report): the job's
# user with no capability left, and exactly its five descriptors.
fenv FAKE_REPORT=1 SLURM_JOB_ID=1
nocaps='CapInh=0+,CapPrm=0+,CapEff=0+,CapBnd=0+,CapAmb=0+,NoNewPrivs=1,dumpable=0,keepcaps=0,securebits=0'
fds="fds=0:/dev/null;1:pipe;2:pipe;3:$F:cloexec;4:socket:cloexec,"
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534:65533
check "helper: uid, gid and groups of the job; no capability; no_new_privs; not dumpable" 0 \
	'^status=called$' '^value=uid=65534/65534/65534,gid=65533/65533/65533,groups=65533,' \
	"$nocaps" ',glibc_tid=ok,oom_score_adj=1000$' '^state=same$'
check "helper: exactly stdin /dev/null, stdout and stderr the pipe, the library and the socket" 0 "$fds"
# The library's descriptor away from 3 and 4, as in a real task: those
# numbers are free when the helper arranges its descriptors.
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 --lib-fd 100
check "helper: the same five descriptors when 3 and 4 were free (stdin never the library)" 0 "$fds"
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 --keepcaps
check "helper: PR_SET_KEEPCAPS set before the fork: still no capability" 0 '^status=called$' \
	'uid=65534/65534/65534,' "$nocaps"
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 --securebits 0x4
check "helper: SECBIT_NO_SETUID_FIXUP set before the fork: still no capability" 0 '^status=called$' \
	'uid=65534/65534/65534,' "$nocaps"
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 0
check "helper: a job of uid 0: uid 0 with every capability set empty and no_new_privs" 0 \
	'^status=called$' '^value=uid=0/0/0,gid=0/0/0,groups=0,' "$nocaps"
# slurmstepd as a user (SlurmdUser not root): the helper cannot change
# users, and need not for that user's own job.
chmod 755 "$T/fake"
run setpriv --reuid=65534 --regid=65534 --groups=65534 "$HARNESS" --lib "$F" --env-file "$T/fenv" \
	--as-user 65534 --trusted-uid 0
check "helper: a non-root parent, the job its own user: runs, no capability" 0 '^status=called$' \
	'^value=uid=65534/65534/65534,' 'CapPrm=0+,CapEff=0+,' 'NoNewPrivs=1' '^state=same$' \
	'helper keeps its capability bounding set \(no CAP_SETPCAP\)'
run setpriv --reuid=65534 --regid=65534 --clear-groups "$HARNESS" --lib "$F" --env-file "$T/fenv" \
	--as-user 1000 --task-user 65534 --trusted-uid 0
check "helper: a non-root parent asked for another user: refused with the reason" 3 \
	'^status=helper-failed$' \
	'msg error spank-otel: not loading the library: the helper process cannot become uid 1000 gid 1000: Operation not permitted' \
	'^state=same$'

# The task's signal state is exactly what it was, pending signals
# included: the helper sends no SIGCHLD when it ends.
fenv SLURM_JOB_ID=1
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --block CHLD
check "signals: SIGCHLD blocked: none left pending" 0 '^status=called$' '^state=same$' \
	'^after=.* pending=- '
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --block CHLD --raise CHLD --block USR1 --raise USR1
check "signals: SIGCHLD and SIGUSR1 pending before: still pending after" 0 '^status=called$' \
	'^state=same$' '^after=.* pending=USR1:CHLD '
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --ignore CHLD
check "signals: SIGCHLD ignored: the helper is reaped all the same" 0 '^status=called$' \
	'^state=same$' '^after=threads=1 children=0 ' 'exited with status 0'
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --handle CHLD
check "signals: SIGCHLD handled: the task's handler never runs for the helper" 0 '^status=called$' \
	'^state=same$' '^handled_CHLD=0$'
fenv FAKE_CRASH=1
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --handle CHLD --block USR2
check "signals: a crashing helper does not reach the task's SIGCHLD handler either" 8 \
	'^status=helper-died$' '^state=same$' '^handled_CHLD=0$' 'killed by signal 6'

# A task child another plugin made multithreaded: a process forked from
# it could hang on a lock another thread holds, so no helper.
fenv SLURM_JOB_ID=1
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --thread
check "a multithreaded task: no helper, one error line, the task as it was" 3 \
	'^status=helper-failed$' \
	'msg error spank-otel: not starting the helper process: the task process runs 2 threads' \
	'^state=same$' '^after=threads=2 children=0 '

# The left-behind path: a helper the task cannot kill (here it stays root
# while the task becomes a user) and that does not end is left behind
# within timeout=, with one line; it dies with the task (PR_SET_PDEATHSIG).
fenv FAKE_HANG=1
run "$HARNESS" --lib "$F" --env-file "$T/fenv" --task-user 65534 --timeout 300
check "left behind: a helper that cannot be killed costs timeout= and one line" 7 '^status=timeout$' \
	'msg error spank-otel: the helper process could not be killed \(Operation not permitted\) and did not end within 300 ms \(timeout=\); left behind' \
	'^state=changed children 0 -> 1; $'
within 300 && pass "left behind: the task waited no longer than timeout=" ||
	fail "left behind: the task waited no longer than timeout="

# Larger than the socket buffers both ways: the task writes while the helper
# reads, and reads while it writes.
{ printf 'SLURM_JOB_ID=7\0FAKE_VALUE_LEN=300000\0'; for i in $(seq 40); do
	printf 'FILL_%d=%s\0' "$i" "$(head -c 100000 /dev/zero | tr '\0' x)"; done; } > "$T/bigenv"
run "$HARNESS" --lib "$F" --env-file "$T/bigenv" --value-len
check "fake: a 4 MB environment in, a 300 kB value out" 0 '^status=called$' '^value_len=300000$' \
	'envc=42$' '^state=same$'

# A container plugin between the two callbacks owns /proc: the helper has
# loaded the checked file already, and never looks at that /proc.
chmod 755 "$T"
cp "$TESTDATA/libevil.so" "$T/evil.so"
chmod 644 "$T/evil.so"
mkdir -p "$T/markers" && chmod 1777 "$T/markers"
marker=$T/markers/evil-ran
rm -f "$marker"
fenv SLURM_JOB_ID=5
SPANK_OTEL_EVIL_MARKER=$marker run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 \
	--proc-overlay "$T/evil.so"
check "fake: /proc forged in the task's own user and mount namespace: the checked library answers" 0 \
	'^status=called$' '^value=fake.job=5$'
[ ! -e "$marker" ] && pass "fake: the forged /proc never ran the other library" ||
	fail "fake: the forged /proc never ran the other library"
rm -f "$marker"
SPANK_OTEL_EVIL_MARKER=$marker run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 \
	--proc-overlay "$T/evil.so" --load-in-task
check "fake: control: loading through /proc/self/fd in the task runs the other library" 0 \
	'^load_in_task=loaded$'
[ -e "$marker" ] && pass "fake: control: the forged /proc is a real attack on in-task loading" ||
	fail "fake: control: the forged /proc is a real attack on in-task loading"

cp "$TESTDATA/libfake-abi2.so" "$T/abi2.so"
run "$HARNESS" --lib "$T/abi2.so"
check "fake: wrong ABI refused after loading" 6 '^status=abi-mismatch$' 'library ABI 2, this plugin needs ABI 1'

cp "$TESTDATA/libfake-noabi.so" "$T/noabi.so"
run "$HARNESS" --lib "$T/noabi.so"
check "fake: library without spank_otel_abi refused" 5 '^status=symbol-missing$' 'does not export spank_otel_abi'
run "$HARNESS" --lib "$T/noabi.so" --no-abi-check
check "fake: --no-abi-check accepts it (empty-library baseline)" 0 '^status=called$'
run "$HARNESS" --bench 2 --lib "$T/noabi.so"
check "fake: --bench accepts a library without spank_otel_abi" 0 '^[0-9]+$'
run "$HARNESS" --bench 2 --lib "$T/abi2.so"
check "fake: --bench says why each task got no value" 1 \
	'^spank-otel-harness: cannot use .*/abi2\.so: library ABI [0-9]+, this plugin needs ABI [0-9]+' \
	'^spank-otel-harness: 2 of 2 tasks got no value$'

# A crash in C code called from Go: the helper dies, the task runs, and
# the report names the C function (internal/cgotraceback) with its library.
if [ -n "$FAULT" ]; then
	mkdir -p "$T/fault"
	cp "$FAULT" "$T/fault/lib.so"
	chmod 644 "$T/fault/lib.so"
	fenv SPANK_OTEL_TEST_FAULT=segv
	run "$HARNESS" --lib "$T/fault/lib.so" --env-file "$T/fenv"
	check "fault: a SIGSEGV in C: the report names the C function, library and offset" 8 \
		'^status=helper-died$' '^state=same$' \
		'msg error spank-otel: the helper process .* before it answered: SIGSEGV: segmentation violation;' \
		'msg debug spank-otel: helper stderr: signal arrived during cgo execution$' \
		'msg debug spank-otel: helper stderr: spank_otel_fault_segv\+0x[0-9a-f]+ \(/.*/fault/lib\.so\+0x[0-9a-f]+\)$' \
		'msg debug spank-otel: helper stderr: main\._Cfunc_spank_otel_fault_segv\(\)$'
fi

if [ -n "$REAL" ]; then
	run "$HARNESS" --lib "$T/real/lib.so" --env-file "$ENVF"
	check "real: Slurm identity and job UUID in the value" 0 '^rc=1$' \
		'^value=.*slurm\.job\.id=12345' 'nv\.dl\.job\.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7'

	# The helper binds itself to one CPU of the task's mask, so the Go
	# runtime starts with one P whatever the mask holds; the collector is
	# off (the library's own report, from inside Go).
	cpus=$(nproc --all)
	run taskset -c "0-$((cpus - 1))" "$HARNESS" --lib "$T/real/lib.so" --env-file "$ENVF" --task-index 1
	check "real: GOMAXPROCS 1 and no collector in the helper ($cpus CPUs in the task's mask)" 0 \
		'msg debug spank-otel: go runtime: GOMAXPROCS=1 threads<=[0-9]+ gc=off$' '^state=same$'
	check "real: the helper's debug line times the load and the call" 0 \
		'msg debug spank-otel: helper: placed in [0-9]+ us, library loaded and started in [1-9][0-9]* us, call [0-9]+ us$'
fi

# The cgroup code on fake trees, as an unprivileged user: where each
# cgroup of a task is, and whether the task's memory and pids cgroups have
# room for the helper (16 MiB, 16 tasks beyond what is in use).
# tree DIR: an empty fake tree; cg DIR PATH FILE=VALUE...: a cgroup
# directory under DIR/root with those files (cgroup.procs lists pid 4242).
tree() { rm -rf "$1"; mkdir -p "$1/root"; : > "$1/self.cgroup"; : > "$1/mountinfo"; }
cg() {
	local d=$1/root/$2 kv
	shift 2
	mkdir -p "$d"
	[ -e "$d/cgroup.procs" ] || printf '4242\n' > "$d/cgroup.procs"
	for kv in "$@"; do printf '%s\n' "${kv#*=}" > "$d/${kv%%=*}"; done
}
stat_v1() { printf 'cache 0\ntotal_active_file %d\ntotal_inactive_file %d\n' "$1" "$2"; }
stat_v2() { printf 'anon 0\nactive_file %d\ninactive_file %d\n' "$1" "$2"; }
CK() { run setpriv --reuid=65534 --regid=65534 --clear-groups "$HARNESS" --cgroup-check "$1" --pid 4242 "${@:2}"; }
M=$((1 << 20))
FK=$T/fakecg
mkdir -p "$FK"
chmod 755 "$FK"

tree "$FK/v1"
printf '4:memory:/slurm/uid_1000/job_1/step_0/task_0\n3:pids:/slurm/uid_1000/job_1/step_0\n2:cpu,cpuacct:/\n1:name=systemd:/system.slice\n' \
	> "$FK/v1/task.cgroup"
cg "$FK/v1" memory/slurm/uid_1000/job_1 memory.limit_in_bytes=$((64 * M)) \
	memory.usage_in_bytes=$((60 * M)) "memory.stat=$(stat_v1 $((10 * M)) $((46 * M)))"
cg "$FK/v1" memory/slurm/uid_1000/job_1/step_0/task_0 memory.limit_in_bytes=9223372036854771712 \
	memory.usage_in_bytes=$((58 * M)) "memory.stat=$(stat_v1 $((10 * M)) $((46 * M)))"
cg "$FK/v1" pids/slurm/uid_1000/job_1/step_0 pids.max=max pids.current=3
chmod -R a+rX "$FK"
CK "$FK/v1"
check "cgroup v1: each hierarchy found where Slurm mounts it" 0 \
	"^cgroup 4:memory:/slurm/uid_1000/job_1/step_0/task_0 dir=$FK/v1/root/memory/slurm/uid_1000/job_1/step_0/task_0$" \
	"^cgroup 3:pids:/slurm/uid_1000/job_1/step_0 dir=$FK/v1/root/pids/slurm/uid_1000/job_1/step_0$"
check "cgroup v1: 60 of 64 MiB in use, 56 MiB of it page cache: room for the helper" 0 '^headroom=ok$'
cg "$FK/v1" memory/slurm/uid_1000/job_1 "memory.stat=$(stat_v1 $((1 * M)) $((1 * M)))"
CK "$FK/v1"
check "cgroup v1: 60 of 64 MiB in use, 2 MiB of it page cache: no room, the job's cgroup named" 0 \
	"^headroom=short memory cgroup $FK/v1/root/memory/slurm/uid_1000/job_1 has 6144 KiB left of its 65536 KiB limit \(61440 KiB in use, 2048 KiB of that page cache\) and the helper needs about 16384 KiB$"
cg "$FK/v1" memory/slurm/uid_1000/job_1 memory.limit_in_bytes=9223372036854771712
cg "$FK/v1" pids/slurm/uid_1000/job_1/step_0 pids.max=20 pids.current=10
CK "$FK/v1"
check "cgroup v1: a pids cgroup running 10 of 20 tasks: no room" 0 \
	"^headroom=short pids cgroup $FK/v1/root/pids/slurm/uid_1000/job_1/step_0 runs 10 of its 20 tasks and the helper needs up to 16$"
cg "$FK/v1" pids/slurm/uid_1000/job_1/step_0 pids.max=26
CK "$FK/v1"
check "cgroup v1: 10 of 26 tasks: room" 0 '^headroom=ok$'
# A directory at the usual place that does not list the task is someone
# else's (a mount of another part of the hierarchy): not used.
printf '1\n' > "$FK/v1/root/pids/slurm/uid_1000/job_1/step_0/cgroup.procs"
cg "$FK/v1" pids/slurm/uid_1000/job_1/step_0 pids.max=12
CK "$FK/v1"
check "cgroup v1: a directory that does not list the task is not taken for its cgroup" 0 \
	"^cgroup 3:pids:/slurm/uid_1000/job_1/step_0 dir=-$" '^headroom=ok$'

tree "$FK/v2"
printf '0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0\n' > "$FK/v2/task.cgroup"
: > "$FK/v2/root/cgroup.controllers"
cg "$FK/v2" system.slice/slurmstepd.scope/job_1 memory.max=$((64 * M)) memory.current=$((60 * M)) \
	"memory.stat=$(stat_v2 $((8 * M)) $((48 * M)))" pids.max=max pids.current=4
cg "$FK/v2" system.slice/slurmstepd.scope/job_1/step_0/user/task_0 memory.max=max \
	memory.current=$((59 * M)) "memory.stat=$(stat_v2 $((8 * M)) $((48 * M)))" pids.max=max pids.current=2
chmod -R a+rX "$FK"
CK "$FK/v2"
check "cgroup v2: found at the root of the unified hierarchy" 0 \
	"^cgroup 0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0 dir=$FK/v2/root/system.slice/slurmstepd.scope/job_1/step_0/user/task_0$"
check "cgroup v2: 60 of 64 MiB in use, 56 MiB of it page cache: room for the helper" 0 '^headroom=ok$'
cg "$FK/v2" system.slice/slurmstepd.scope/job_1 "memory.stat=$(stat_v2 0 $((2 * M)))"
CK "$FK/v2"
check "cgroup v2: 60 of 64 MiB in use, 2 MiB of it page cache: no room" 0 \
	"^headroom=short memory cgroup $FK/v2/root/system.slice/slurmstepd.scope/job_1 has 6144 KiB left of its 65536 KiB limit \(61440 KiB in use, 2048 KiB of that page cache\)"
cg "$FK/v2" system.slice/slurmstepd.scope/job_1 memory.max=max pids.max=12 pids.current=4
CK "$FK/v2"
check "cgroup v2: pids.max 12 with 4 running: no room" 0 \
	"^headroom=short pids cgroup $FK/v2/root/system.slice/slurmstepd.scope/job_1 runs 4 of its 12 tasks"

# Hybrid: v1 controllers plus an empty unified hierarchy at unified/; the
# limits are the v1 ones.
tree "$FK/hybrid"
printf '4:memory:/job_1\n0::/job_1\n' > "$FK/hybrid/task.cgroup"
cg "$FK/hybrid" memory/job_1 memory.limit_in_bytes=$((20 * M)) memory.usage_in_bytes=$((8 * M)) \
	"memory.stat=$(stat_v1 0 0)"
cg "$FK/hybrid" unified/job_1 memory.max=$((1 * M)) memory.current=0
chmod -R a+rX "$FK"
CK "$FK/hybrid"
check "cgroup hybrid: the unified hierarchy at unified/, the memory limit from v1 only" 0 \
	"^cgroup 0::/job_1 dir=$FK/hybrid/root/unified/job_1$" \
	"^headroom=short memory cgroup $FK/hybrid/root/memory/job_1 has 12288 KiB left"

# Mounted elsewhere and from a directory of the hierarchy (Docker without
# a cgroup namespace): mountinfo says where, octal escapes and all.
tree "$FK/moved"
printf '7:memory:/docker/ab/job_1\n' > "$FK/moved/task.cgroup"
mkdir -p "$FK/moved/mnt/my mem/job_1"
printf '4242\n' > "$FK/moved/mnt/my mem/job_1/cgroup.procs"
printf '%s\n' "$((20 * M))" > "$FK/moved/mnt/my mem/job_1/memory.limit_in_bytes"
printf '%s\n' "$((12 * M))" > "$FK/moved/mnt/my mem/job_1/memory.usage_in_bytes"
stat_v1 0 $((10 * M)) > "$FK/moved/mnt/my mem/job_1/memory.stat"
{
	printf '30 20 0:26 / /sys rw - sysfs sysfs rw\n'
	printf '40 30 0:30 /docker/other %s/mnt/my\\040mem rw - cgroup cgroup rw,memory\n' "$FK/moved"
	printf '41 30 0:31 /docker/ab %s/mnt/my\\040mem rw shared:5 - cgroup cgroup rw,memory\n' "$FK/moved"
	printf '42 30 0:32 / %s/mnt/cpu rw - cgroup cgroup rw,cpu,cpuacct\n' "$FK/moved"
} > "$FK/moved/mountinfo"
chmod -R a+rX "$FK"
CK "$FK/moved"
check "cgroup mounted elsewhere, from a subdirectory: found through mountinfo (the later mount wins)" 0 \
	"^cgroup 7:memory:/docker/ab/job_1 dir=$FK/moved/mnt/my mem/job_1$" '^headroom=ok$'
printf '7:memory:/docker/ab/../../etc\n' > "$FK/moved/task.cgroup"
CK "$FK/moved"
check "cgroup outside the namespace (a .. in its path): never looked for" 0 \
	"^cgroup 7:memory:/docker/ab/../../etc dir=-$"

# Joining: the hierarchies whose path differs from the helper's own.
tree "$FK/join"
printf '5:memory:/job_1/task_0\n4:cpuset:/job_1\n3:pids:/\n0::/job_1\n' > "$FK/join/task.cgroup"
printf '5:memory:/\n4:cpuset:/job_1\n3:pids:/\n0::/stepd\n' > "$FK/join/self.cgroup"
cg "$FK/join" memory/job_1/task_0
cg "$FK/join" cpuset/job_1
cg "$FK/join" unified/job_1
chmod -R a+rX "$FK"
chmod a+w "$FK/join/root/memory/job_1/task_0/cgroup.procs" "$FK/join/root/unified/job_1/cgroup.procs"
CK "$FK/join" --join
check "cgroup join: the memory and unified cgroups, not those the helper shares" 0 '^joined=2$'
[ "$(tail -c 2 "$FK/join/root/memory/job_1/task_0/cgroup.procs")" = $'\n0' ] &&
	[ "$(cat "$FK/join/root/cpuset/job_1/cgroup.procs")" = 4242 ] &&
	pass "cgroup join: \"0\" written to cgroup.procs where joined, nowhere else" ||
	fail "cgroup join: \"0\" written to cgroup.procs where joined, nowhere else"
chmod a-w "$FK/join/root/unified/job_1/cgroup.procs"
CK "$FK/join" --join
check "cgroup join: a cgroup that cannot be joined is named" 0 \
	"^join_error=cannot join the task's cgroup $FK/join/root/unified/job_1: Permission denied$"

# The same in real cgroups (root): between the callbacks the task moves
# into a cgroup and onto one CPU, as slurmstepd's parent does; the helper
# follows it before it loads the library, and checks the room there.
incg() { # incg DIR CMD...: run CMD inside the cgroup DIR
	local d=$1
	shift
	run sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' incg "$d" "$@"
}
# field NAME: the value of NAME= in the report line value=.
field() { printf '%s\n' "$OUT" | sed -n 's/^value=//p' | tr ',' '\n' | sed -n "s/^$1=//p"; }
if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] && [ -f /sys/fs/cgroup/pids/cgroup.procs ]; then
	mem=/sys/fs/cgroup/memory/spank-otel-test.$$
	pids=/sys/fs/cgroup/pids/spank-otel-test.$$
	mkdir "$mem" "$pids"
	echo $((64 << 20)) > "$mem/memory.limit_in_bytes"
	echo 100 > "$pids/pids.max"
	cpu=$(( $(nproc) - 1 ))
	fenv FAKE_REPORT=1
	run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 --place-cgroup "$mem" \
		--place-cgroup "$pids" --place-cpus "$cpu" --place-pgid
	task_cg=$(printf '%s\n' "$OUT" | sed -n 's/^task_cgroup=//p')
	check "placement (cgroup v1): the task was moved" 0 '^status=called$' \
		"^task_cgroup=.*:memory:/spank-otel-test.$$;" "^task_cpus=$cpu$"
	[ "$(field cgroup)" = "${task_cg%;}" ] &&
		pass "placement (cgroup v1): the helper is in every cgroup of the task" ||
		fail "placement (cgroup v1): the helper is in every cgroup of the task" "helper $(field cgroup) task $task_cg"
	[ "$(field cpus)" = "$cpu" ] && [ "$(field pgid)" = "$(printf '%s\n' "$OUT" | sed -n 's/^task_pgid=//p')" ] &&
		pass "placement: the helper on the task's CPU, in its process group" ||
		fail "placement: the helper on the task's CPU, in its process group" "cpus=$(field cpus) pgid=$(field pgid)"
	echo $((8 << 20)) > "$mem/memory.limit_in_bytes"
	fenv SLURM_JOB_ID=1
	run "$HARNESS" --lib "$F" --env-file "$T/fenv" --place-cgroup "$mem"
	check "placement: room is checked in the cgroup the task ends up in (8 MiB: none)" 3 \
		'^status=helper-failed$' '^state=same$' \
		"msg error spank-otel: not loading the library: memory cgroup $mem has [0-9]+ KiB left of its 8192 KiB limit"
	incg "$mem" "$HARNESS" --lib "$F" --env-file "$ENVF"
	check "memory cgroup with 8 MiB: the library is not loaded" 3 '^status=helper-failed$' \
		"msg error spank-otel: not loading the library: memory cgroup $mem has [0-9]+ KiB left of its 8192 KiB limit"
	# Page cache: a file of 56 MiB written in the cgroup leaves its usage
	# near the 64 MiB limit, and the kernel takes the cache back on demand.
	echo $((64 << 20)) > "$mem/memory.limit_in_bytes"
	pc=$(mktemp -d /var/tmp/spank-otel-pc.XXXXXX)
	incg "$mem" dd if=/dev/zero of="$pc/file" bs=1M count=56 status=none
	used=$(( $(cat "$mem/memory.usage_in_bytes") >> 20 ))
	incg "$mem" "$HARNESS" --lib "$F" --env-file "$ENVF"
	check "memory cgroup of 64 MiB with $used MiB in use, mostly page cache: the helper runs" 0 \
		'^status=called$'
	rm -rf "$pc"
	echo 6 > "$pids/pids.max"
	incg "$pids" "$HARNESS" --lib "$F" --env-file "$ENVF"
	check "pids cgroup with room for 6 tasks: the library is not loaded" 3 '^status=helper-failed$' \
		"msg error spank-otel: not loading the library: pids cgroup $pids runs [0-9]+ of its 6 tasks"
	rmdir "$mem" "$pids"
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	# cgroup v2 (a systemd host): the same in a child of the root cgroup.
	base=/sys/fs/cgroup/spank-otel-test.$$
	mkdir "$base"
	if ! grep -qw memory "$base/cgroup.controllers" || ! grep -qw pids "$base/cgroup.controllers"; then
		fail "placement (cgroup v2): the memory and pids controllers are not enabled below /sys/fs/cgroup" \
			"enable them: echo +memory +pids > /sys/fs/cgroup/cgroup.subtree_control"
	else
		echo $((64 << 20)) > "$base/memory.max"
		fenv FAKE_REPORT=1
		run "$HARNESS" --lib "$F" --env-file "$T/fenv" --as-user 65534 --place-cgroup "$base" --place-pgid
		task_cg=$(printf '%s\n' "$OUT" | sed -n 's/^task_cgroup=//p')
		check "placement (cgroup v2): the task was moved" 0 '^status=called$' "^task_cgroup=0::/spank-otel-test.$$;"
		[ "$(field cgroup)" = "${task_cg%;}" ] &&
			pass "placement (cgroup v2): the helper is in the task's cgroup" ||
			fail "placement (cgroup v2): the helper is in the task's cgroup" "helper $(field cgroup) task $task_cg"
		echo $((8 << 20)) > "$base/memory.max"
		fenv SLURM_JOB_ID=1
		run "$HARNESS" --lib "$F" --env-file "$T/fenv" --place-cgroup "$base"
		check "placement (cgroup v2): room is checked in the task's final cgroup (8 MiB: none)" 3 \
			'^status=helper-failed$' "not loading the library: memory cgroup $base has"
	fi
	rmdir "$base"
else
	fail "placement in real cgroups" "no cgroup v1 memory and pids hierarchies and no cgroup v2 at /sys/fs/cgroup"
fi

# The plugin itself, in a stand-in for Slurm.
if [ -n "$MOCK" ] && [ -n "$SHIM" ]; then
	syms=$(nm -D --defined-only "$SHIM" | awk '{print $3}' | sort | tr '\n' ' ')
	OUT=$syms
	RC=0
	# slurm_spank_init_failure_mode from Slurm 25.05 on (the package tests
	# check which releases get it).
	check "shim: exports only Slurm's entry points" 0 \
		'^plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init (slurm_spank_init_failure_mode )?slurm_spank_init_post_opt slurm_spank_task_init slurm_spank_task_init_privileged spank_plugin_version $'

	OUT=$(readelf -dlW "$SHIM")
	RC=0
	check "shim: BIND_NOW, RELRO, non-executable stack, needs only libc" 0 \
		'BIND_NOW' 'GNU_RELRO' 'GNU_STACK +(0x0+ +){5}RW ' '\(NEEDED\).*\[libc\.so\.6\]' \
		'!\(NEEDED\).*\[(libspankotel|libgo|libdl|libpthread)'

	FL=$T/fake/lib.so
	M() { run "$MOCK" --plugin "$SHIM" "$@"; }

	M --context local
	check "shim: plugin name, type and version; option registered with its usage" 0 \
		'^plugin_name=spank-otel$' '^plugin_type=spank$' '^plugin_version_ok=yes$' '^init=0$' \
		"^options=--otel-attrs=on\|off has_arg=1 usage=Write this job's Slurm identity into OTEL_RESOURCE_ATTRIBUTES of every task \(default here: on\)$"

	M --context local --arg default=off
	check "shim: with default=off the help says the default is off" 0 \
		"usage=.*\(default here: off\)$" '!^log '

	for ctx in local allocator; do
		M --context $ctx --option maybe
		check "shim: $ctx: --otel-attrs=maybe rejected, naming option and values" 0 '^option_cb=-1$' \
			'log error spank-otel: --otel-attrs: invalid value "maybe"; accepted values are on and off'
		for v in on off OFF; do
			M --context $ctx --option $v
			check "shim: $ctx: --otel-attrs=$v accepted" 0 '^option_cb=0$' '!log error'
		done
	done

	M --context local --arg lib=relative.so --arg bogus
	check "shim: local context says nothing about plugstack arguments" 0 '^init=0$' '!^log '

	M --context remote --arg lib="$FL" --arg bogus=1 --env SLURM_JOB_ID=77 --argv /bin/true \
		--tasks 2 --watch-lib "$T/"
	check "shim: remote: every task gets the value; neither the parent nor a task maps the library" 0 \
		'^init=0$' '^init_post_opt=0$' '^exit=0$' '^parent_mapped_lib=no$' \
		'^task_init_privileged=0$' '!^task_mapped_lib=yes' '^task_mapped_lib=no$' \
		'!^task_threads=[^1]' '!^task_children=[^0]' \
		'log info spank-otel: ignoring unknown plugstack.conf argument "bogus=1"' \
		'!_SLURM_SPANK_OPTION'
	n=$(printf '%s\n' "$OUT" | grep -c '^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$')
	[ "$n" = 2 ] && pass "shim: remote: both tasks set OTEL_RESOURCE_ATTRIBUTES" ||
		fail "shim: remote: both tasks set OTEL_RESOURCE_ATTRIBUTES" "$n of 2"
	n=$(printf '%s\n' "$OUT" | grep -c 'ignoring unknown')
	[ "$n" = 1 ] && pass "shim: unknown argument logged once per step" ||
		fail "shim: unknown argument logged once per step" "$n times"

	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --fail-item uid --watch-lib "$T/"
	check "shim: the job's uid unknown: no helper, one error, and the task keeps no descriptor of the library" 0 \
		"log error spank-otel: cannot read the job's uid and gid" '^task_lib_fd=no$' \
		'^task_init=0$' '!^env=OTEL'
	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --watch-lib "$T/"
	check "shim: the task keeps no descriptor of the library after a normal call" 0 \
		'^task_lib_fd=no$' '^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$'

	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --argv /bin/true
	check "shim: max_env = execve budget minus argv (2 MiB - 10 - 8 - 8 KiB)" 0 \
		"max_env=$((2 * 1024 * 1024 - 10 - 8 - 8192)) "

	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --env SLURM_RLIMIT_STACK=U1048576 --argv /bin/true
	check "shim: max_env follows the propagated SLURM_RLIMIT_STACK" 0 \
		"max_env=$((1024 * 1024 / 4 - 10 - 8 - 8192)) "

	M --context remote --arg lib="$FL" --arg max_env=5000 --arg exclude=x.y --env SLURM_JOB_ID=77
	check "shim: max_env= and exclude= arguments reach the library" 0 'exclude=x.y max_env=5000 '

	M --context remote --arg lib="$FL" --arg max_env=lots --env SLURM_JOB_ID=77
	check "shim: bad max_env= logged, limit computed instead" 0 'max_env=lots: expected a positive' \
		'^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$'

	M --context remote --arg lib="$FL" --option off --env SLURM_JOB_ID=77
	check "shim: srun --otel-attrs=off: step untouched, choice passed on to later steps" 0 \
		'^option_cb=0$' 'disabled for this step \(--otel-attrs=off\)' \
		'!^env=OTEL_RESOURCE_ATTRIBUTES' '^env=_SLURM_SPANK_OPTION_spank_otel_otel_attrs=off$'

	M --context remote --arg lib="$FL" --env _SLURM_SPANK_OPTION_spank_otel_otel_attrs=off \
		--env SLURM_JOB_ID=77
	check "shim: off inherited from sbatch (job environment): step untouched" 0 \
		'^option_cb_env=0$' '!^env=OTEL_RESOURCE_ATTRIBUTES' \
		'^env=_SLURM_SPANK_OPTION_spank_otel_otel_attrs=off$'

	M --context remote --arg lib="$FL" --option on \
		--env _SLURM_SPANK_OPTION_spank_otel_otel_attrs=off --env SLURM_JOB_ID=77
	check "shim: a step's --otel-attrs=on wins over an inherited off" 0 \
		'^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$' \
		'^env=_SLURM_SPANK_OPTION_spank_otel_otel_attrs=on$'

	M --context remote --arg lib="$FL" --arg default=off --env SLURM_JOB_ID=77
	check "shim: default=off: nothing written without the option" 0 \
		'disabled for this step \(default=off\)' '!^env=OTEL_RESOURCE_ATTRIBUTES'

	M --context remote --arg lib="$FL" --arg default=off --option on --env SLURM_JOB_ID=77
	check "shim: default=off with --otel-attrs=on: written" 0 '^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$'

	M --context remote --arg lib="$FL" --arg default=maybe --env SLURM_JOB_ID=77
	check "shim: bad default= logged, treated as on" 0 'default=maybe: expected on or off' \
		'^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$'

	M --context remote --arg lib=relative/lib.so --env SLURM_JOB_ID=77
	check "shim: relative lib= logged, plugin does nothing, callbacks return 0" 0 \
		'lib=relative/lib.so is not an absolute path' '^task_init=0$' '!^env=OTEL'

	M --context remote --arg lib="$T/fake/missing.so" --env SLURM_JOB_ID=77 --tasks 2
	check "shim: missing library: callbacks return 0, task untouched" 0 '^init_post_opt=0$' \
		'^task_init=0$' '!^env=OTEL' 'cannot open .*missing.so'
	n=$(printf '%s\n' "$OUT" | grep -c 'cannot open')
	[ "$n" = 1 ] && pass "shim: missing library reported once per step, not per task" ||
		fail "shim: missing library reported once per step, not per task" "$n times"

	M --context remote --arg lib="$T/fake/ww.so" --env SLURM_JOB_ID=77
	check "shim: unsafe library refused, task untouched" 0 'refusing to load .*ww.so' \
		'^task_init=0$' '!^env=OTEL'

	M --context remote --arg lib="$T/fake/empty.so" --env SLURM_JOB_ID=77
	check "shim: broken library: one error, task untouched" 0 'cannot load .*empty.so' \
		'^task_init=0$' '!^env=OTEL'

	M --context remote --arg lib="$FL" --env FAKE_RC=0 --env OTEL_RESOURCE_ATTRIBUTES=a=1
	check "shim: rc 0 leaves the variable exactly as it was" 0 \
		'^env=OTEL_RESOURCE_ATTRIBUTES=a=1$' 'left unchanged'

	M --context remote --arg lib="$FL" --env FAKE_RC=-1 --env 'FAKE_LOG=E panic: x'
	check "shim: rc -1: library log and one line of its own" 0 'log error spank-otel: panic: x' \
		'log error spank-otel: the library failed \(rc=-1\)' '!^env=OTEL'

	M --context remote --arg lib="$FL" --env FAKE_NULL=1
	check "shim: rc 1 without a value handled" 0 'returned no value' '!^env=OTEL' '^task_init=0$'

	M --context remote --arg lib="$FL" --env FAKE_RC=2 --env OTEL_RESOURCE_ATTRIBUTES=a=1
	check "shim: rc 2 unsets the variable" 0 '!^env=OTEL' 'log debug spank-otel: unset OTEL_RESOURCE_ATTRIBUTES'

	# One entry "OTEL_RESOURCE_ATTRIBUTES=value" with its NUL must stay under
	# 131072 bytes: 26 bytes of it are the name, '=' and the NUL.
	M --context remote --arg lib="$FL" --env FAKE_VALUE_LEN=$((131072 - 27)) --env OTEL_RESOURCE_ATTRIBUTES=a=1
	check "shim: an entry of 131071 bytes is written" 0 '^env=OTEL_RESOURCE_ATTRIBUTES=xxxx' \
		'!log error'
	M --context remote --arg lib="$FL" --env FAKE_VALUE_LEN=$((131072 - 26)) --env OTEL_RESOURCE_ATTRIBUTES=a=1
	check "shim: an entry of 131072 bytes is never written, and never logged as set" 0 \
		'^env=OTEL_RESOURCE_ATTRIBUTES=a=1$' \
		'log error spank-otel: OTEL_RESOURCE_ATTRIBUTES would be 131072 bytes with its name and NUL, over the 131072-byte limit' \
		'!log debug spank-otel: set ' '!environment variable .* is too long'

	# Slurm drops an entry it finds too long and still reports success.
	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --max-entry 20 \
		--env OTEL_RESOURCE_ATTRIBUTES=a=1
	check "shim: a value Slurm silently refuses is reported, not logged as set" 0 \
		'^env=OTEL_RESOURCE_ATTRIBUTES=a=1$' 'log error spank-otel: Slurm did not store OTEL_RESOURCE_ATTRIBUTES' \
		'!log debug spank-otel: set '

	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --step-id 0xfffffffc --watch-lib "$T/"
	check "shim: extern step: the library is not even opened" 0 \
		'extern step: no tasks, library not opened' '^parent_mapped_lib=no$'
	M --context remote --arg lib="$T/fake/missing.so" --env SLURM_JOB_ID=77 --step-id 0xfffffffc --tasks 0
	check "shim: extern step: a missing library is not reported there" 0 '!cannot open'

	M --context remote --arg lib="$FL" --arg timeout=150 --env FAKE_HANG=1
	check "shim: timeout= bounds a hanging library; the task goes on" 0 '^task_init=0$' \
		'the helper process did not answer within 150 ms' '^task_children=0$' '!^env=OTEL'
	M --context remote --arg lib="$FL" --arg timeout=soon --env SLURM_JOB_ID=77
	check "shim: bad timeout= logged, default used" 0 'timeout=soon: expected milliseconds' \
		'^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$'

	M --context remote --arg lib="$FL" --env FAKE_CRASH=1 --ignore-sigpipe
	check "shim: a crash of the library costs the task nothing but the attributes" 0 '^task_init=0$' \
		'the helper process was killed by signal 6' '^sigpipe=ignored$' '^task_children=0$' '!task_killed'

	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77 --as-user 65534 --ignore-sigpipe
	check "shim: task running as a user; SIGPIPE still ignored after task_init" 0 \
		'^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$' '^sigpipe=ignored$'

	M --context remote --arg lib="$FL" --env SLURM_JOB_ID=77
	check "shim: default SIGPIPE stays default after task_init" 0 '^sigpipe=default$'

	if [ -n "$GOLIB" ]; then
		M --context remote --arg lib="$T/go/lib.so" --env SLURM_JOB_ID=77 --ignore-sigpipe \
			--tasks 3 --watch-lib "$T/"
		check "shim + Go runtime: tasks keep SIGPIPE and one thread; Go only in the helpers" 0 \
			'^sigpipe=ignored$' '!^sigpipe=(handler|default)' '^parent_mapped_lib=no$' \
			'^task_mapped_lib=no$' '!^task_mapped_lib=yes' '!^task_threads=[^1]' '!task_killed'
	fi
	if [ -n "$FAULT" ]; then
		M --context remote --arg lib="$T/fault/lib.so" --env SLURM_JOB_ID=77 \
			--env SPANK_OTEL_TEST_FAULT=segv
		check "shim + faulting library: the task runs; the log names the C function" 0 \
			'^log error spank-otel: the helper process .* before it answered: SIGSEGV: segmentation violation;' \
			'^log debug[0-9]* spank-otel: helper stderr: spank_otel_fault_segv\+0x[0-9a-f]+ \(/.*/fault/lib\.so\+0x[0-9a-f]+\)$' \
			'!^env=OTEL_RESOURCE_ATTRIBUTES'
	fi
	if [ -n "$REAL" ]; then
		M --context remote --arg lib="$T/real/lib.so" --env SLURM_JOB_ID=12345 \
			--env SLURM_CLUSTER_NAME=cluster-a --ignore-sigpipe --as-user 65534
		check "shim + real library: value written, SIGPIPE kept, one thread" 0 \
			'^env=OTEL_RESOURCE_ATTRIBUTES=.*slurm\.job\.id=12345' '^sigpipe=ignored$' \
			'^task_threads=1$' 'go runtime: GOMAXPROCS=1 '
	fi

	# What slurmd logs for a refused library: the rule and the path.
	M --context remote --arg lib="$T/fake/open/lib.so" --env SLURM_JOB_ID=77
	check "shim: a refusal is logged as an error naming the rule and the path" 0 \
		"^log error spank-otel: refusing to load $T/fake/open/lib\.so: directory $T/fake/open is writable by group or others \(mode 0777\)$" \
		'^task_init=0$' '!^env=OTEL'
fi

# Nothing is ever skipped: a check whose prerequisite is missing fails,
# naming it.
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
