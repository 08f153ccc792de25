# spank-otel build, test and demo.
#
#   make demo        bring the Slurm cluster up and show the attributes of a real job
#   make unit        go vet and go test -race in every Go module: no root, no apt
#   make ctest       the C shim in its harness and a mock Slurm (root; Slurm's
#                    headers are downloaded from Debian, nothing is installed)
#   make host-test   the shell helpers on a stand-in new machine (test/host/test.sh)
#   make gpu-selftest  test/gpu/check.sh (for a GPU machine) on a fake one (root)
#   make test        everything: host-test, unit, ctest, packages, the cluster on every
#                    Slurm version, each suite's time printed
#   make purge-host  remove what the targets put on this machine (packages, dockerd,
#                    images, caches, build/): the next make test is a cold run
#   make bench       speed figures
#   make slurm-testsuite  SchedMD's regression tests with spank-otel off and on
#                    (TESTS="test_7_11 ..."; SLURM=26.05 for one release)
#   make vm-test     a Slurm 26.05 node on cgroup v2 in a qemu VM, the checks
#                    that depend on the cgroup version (test/vm/run.sh; root)
#   make py-interop  the carriers decoded by the OpenTelemetry Python SDK, in
#                    the node image of SLURM (test/sdkinterop/python.sh; root,
#                    docker; make test runs it in cluster-test)
#
# SLURM picks the release of demo, ctest, deb, rpm and shim (default: the
# newest release SchedMD supports, packaging/releases.tsv);
# SLURM_INCLUDE=/dir/with/slurm/spank.h builds deb, rpm and shim against a
# site's own headers of that release instead of fetching them.
#
# test, demo and bench run as root on Debian: missing tools are installed
# with apt and dockerd is started when none runs.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := /usr/local/go/bin:$(PATH)

GO        ?= go
VERSION   ?= 0.1.0
# The release table (packaging/releases.tsv): the releases the cluster
# tests (every one), those whose packages make test builds and tests (the
# ones SchedMD supports), and the default release (the newest of those).
# Read once per make, by common.sh's reader of the table.
releases = $(shell bash -c '. packaging/lib/common.sh && slurm_releases $(1) | paste -sd" "')
RELEASES := $(call releases)
SUPPORTED_RELEASES := $(call releases,supported yes)
SLURMS    ?= $(RELEASES)
PACKAGE_SLURMS ?= $(SUPPORTED_RELEASES)
SLURM     ?= $(lastword $(SUPPORTED_RELEASES))
BUILD     := build
PLUGINDIR ?= /usr/lib/x86_64-linux-gnu/slurm-wlm
DEFAULT_LIB ?= $(PLUGINDIR)/libspankotel.so

GOFLAGS_BUILD := -trimpath -buildvcs=false
include golib.mk
# What the library and the command are built from: the plugin's module,
# without the modules nested in it (otelresource, the test programs).
GO_SOURCES := $(shell find . -name '*.go' -not -path './build/*' -not -path './test/*' -not -path './otelresource/*') go.mod go.sum \
	cgo/contract.h
# Every Go module of the repository, each vetted and tested by make unit:
# the plugin's, otelresource (the OpenTelemetry Go SDK adapter, a module of
# its own so that the plugin's does not depend on the SDK), and the test
# modules (test/sdkinterop checks our carrier against the SDK's parser).
GO_MODULES := $(shell find . -name go.mod -not -path './build/*' -not -path './vendor/*' -printf '%h\n' | sort)
C_SOURCES  := $(wildcard spank/*.c spank/*.h spank/*.map spank/Makefile) cgo/contract.h

# Host packages the targets need, as [command=]package (host.sh:
# ensure_packages): installed when the command is missing. make deb and make
# rpm ask only for what building their package takes, so that a site's own
# build machine (an RPM distribution, where nothing is missing) needs
# nothing else; the tests need the rest. The backend tests and the demo
# need npm (the JS probe), Chromium and a font (the screenshot of Jaeger's
# UI) and curl.
DEB_PACKAGES := gcc make dpkg-buildpackage=dpkg-dev dh=debhelper help2man
RPM_PACKAGES := gcc make rpmbuild=rpm help2man
HOST_PACKAGES := $(DEB_PACKAGES) $(RPM_PACKAGES) git debootstrap dockerd=docker.io docker-compose \
	python3 readelf=binutils lintian rpmlint
# test/fusehang, the file whose reads never return (ctest, cluster-test).
FUSE_PACKAGES := pkg-config=pkgconf /usr/include/fuse3/fuse_lowlevel.h=libfuse3-dev
BACKEND_PACKAGES := npm chromium curl /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf=fonts-dejavu-core

.PHONY: all lib cli shim probe stephelper headers testlibs deb rpm install man deps dockerd unit ctest package-test package-test-one gpu-selftest \
        check-artifacts slurm-next glibc-floor \
        cluster-test test demo bench clean jaeger otelprobes backend-deps host-test purge-host slurm-testsuite \
        vm-test py-interop

all: lib cli

deps:
	@. packaging/lib/host.sh && ensure_packages $(HOST_PACKAGES)

dockerd: deps
	@. packaging/lib/host.sh && ensure_dockerd

lib: $(BUILD)/libspankotel.so
cli: $(BUILD)/spank-otel

# No VCS stamp and golib.mk's link flags keep the library small: its load
# time in every task grows with the pages the loader has to map and relocate.
$(BUILD)/libspankotel.so: $(GO_SOURCES) golib.mk
	@mkdir -p $(BUILD)
	$(GO_LIB_ENV) $(GO) build $(GOFLAGS_BUILD) -buildmode=c-shared -ldflags='$(GO_LIB_LDFLAGS)' -o $@ ./cgo
	@rm -f $(BUILD)/libspankotel.h

# The library with its call skipped (cgo/loadonly.go), for make bench only.
$(BUILD)/bench/libspankotel-loadonly.so: $(GO_SOURCES) golib.mk
	@mkdir -p $(dir $@)
	$(GO_LIB_ENV) $(GO) build $(GOFLAGS_BUILD) -tags spankotel_loadonly -buildmode=c-shared -ldflags='$(GO_LIB_LDFLAGS)' -o $@ ./cgo
	@rm -f $(basename $@).h

$(BUILD)/spank-otel: $(GO_SOURCES)
	@mkdir -p $(BUILD)
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -ldflags='-s -w' -o $@ ./cmd/spank-otel

# The command's manual page, made from its --help by help2man: it says what
# the command does and nothing more. SOURCE_DATE_EPOCH dates it.
man: $(BUILD)/spank-otel.1
$(BUILD)/spank-otel.1: $(BUILD)/spank-otel
	help2man --no-info --version-string=$(VERSION) \
	  --name='the Slurm job identity for OTEL_RESOURCE_ATTRIBUTES' --output=$@ ./$<

# spank-otel doctor's probe: the shim's own lib= checks and helper, without
# Slurm's headers (spank/probe_main.c), installed beside the plugin.
probe: $(BUILD)/spank-otel-probe
$(BUILD)/spank-otel-probe: $(C_SOURCES)
	$(MAKE) -C spank probe DEFAULT_LIB=$(DEFAULT_LIB) PROBE_OUT=$(abspath $@)

# The step's helper: an executable installed beside the
# library, which lib= names, so that the process that loads the library is
# a fresh image (spank/stephelper_main.c).
stephelper: $(BUILD)/spank-otel-helper
$(BUILD)/spank-otel-helper: $(C_SOURCES)
	$(MAKE) -C spank stephelper DEFAULT_LIB=$(DEFAULT_LIB) STEPHELPER_OUT=$(abspath $@)

headers: $(BUILD)/slurm-headers/$(SLURM)/VERSION
$(BUILD)/slurm-headers/%/VERSION:
	packaging/slurm-headers.sh $* $(BUILD)/slurm-headers/$*

shim: $(BUILD)/$(SLURM)/spank_otel.so
# The shim is compiled against the target Slurm's own spank.h: fetched from
# Debian (or built from source) by default, or SLURM_INCLUDE when given: a
# site's own headers, or the slurm-devel headers rpmbuild passes (it must
# not download anything).
SITE_INCLUDE := $(if $(filter command line environment,$(origin SLURM_INCLUDE)),$(abspath $(SLURM_INCLUDE)))
HEADERS_DEP := $(if $(SITE_INCLUDE),,$(BUILD)/slurm-headers/%/VERSION)
# Headers of another release than SLURM= are refused before compiling:
# Slurm would refuse the plugin they make.
$(BUILD)/%/spank_otel.so: $(C_SOURCES) | $(HEADERS_DEP)
	@bash -c '. packaging/lib/common.sh && check_headers "$$@"' slurm-headers $* $(call shim_include,$*)
	$(MAKE) -C spank SLURM_INCLUDE=$(call shim_include,$*) \
	  DEFAULT_LIB=$(DEFAULT_LIB) OUT=$(abspath $@)
shim_include = $(or $(SITE_INCLUDE),$(abspath $(BUILD)/slurm-headers/$(1)/usr/include))

# Test-only pieces the cluster's node images carry beside the package: the
# probe/container-like SPANK plugin (per Slurm release), a library that must
# never load, and a Go library that fails on request (test/cluster).
TESTLIBS := $(BUILD)/testlibs
testlibs: $(TESTLIBS)/$(SLURM)/spankprobe.so $(TESTLIBS)/libevil.so $(TESTLIBS)/libfault.so \
	$(TESTLIBS)/$(SLURM)/spank_otel-initfails.so $(TESTLIBS)/$(SLURM)/spank_otel-initfails-nomode.so
# The shim with a slurm_spank_init that fails, with and without the failure
# mode the real one declares (test/cluster/initfailure_test.go).
$(TESTLIBS)/%/spank_otel-initfails.so: $(C_SOURCES) | $(BUILD)/slurm-headers/%/VERSION
	$(MAKE) -C spank SLURM_INCLUDE=$(abspath $(BUILD)/slurm-headers/$*/usr/include) \
	  DEFAULT_LIB=$(DEFAULT_LIB) OUT=$(abspath $@) CPPFLAGS=-DSO_TEST_INIT_FAILS
$(TESTLIBS)/%/spank_otel-initfails-nomode.so: $(C_SOURCES) | $(BUILD)/slurm-headers/%/VERSION
	$(MAKE) -C spank SLURM_INCLUDE=$(abspath $(BUILD)/slurm-headers/$*/usr/include) \
	  DEFAULT_LIB=$(DEFAULT_LIB) OUT=$(abspath $@) CPPFLAGS='-DSO_TEST_INIT_FAILS -DSO_TEST_DEFAULT_FAILURE_MODE'
$(TESTLIBS)/%/spankprobe.so: test/spankprobe/spankprobe.c test/spankprobe/Makefile \
		spank/harness/procstate.c spank/harness/procstate.h | $(BUILD)/slurm-headers/%/VERSION
	$(MAKE) -C test/spankprobe SLURM_INCLUDE=$(abspath $(BUILD)/slurm-headers/$*/usr/include) OUT=$(abspath $@)
$(TESTLIBS)/libevil.so: spank/harness/testdata/evil.c cgo/contract.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -fPIC -shared -Wall -Wextra -Werror -fvisibility=hidden \
		-DEVIL_MARKER='"/shared/evil-ran"' -o $@ $<
$(TESTLIBS)/libfault.so: test/faultlib/main.go go.mod cgo/contract.h
	@mkdir -p $(dir $@)
	CGO_ENABLED=1 CGO_CFLAGS="$(CONTRACT_CGO_CFLAGS)" $(GO) build $(GOFLAGS_BUILD) -buildmode=c-shared -o $@ ./test/faultlib
	@rm -f $(TESTLIBS)/libfault.h

# The cluster's tracing backend and the programs that send to it. Jaeger is
# built once per module version and cached outside the tree (test/jaeger/build.sh).
JAEGER    := $(BUILD)/jaeger
OTELPROBE := $(BUILD)/otelprobe
jaeger: $(JAEGER)/jaeger
$(JAEGER)/jaeger: test/jaeger/go.mod test/jaeger/go.sum test/jaeger/uiassets/main.go test/jaeger/build.sh
	GO=$(GO) test/jaeger/build.sh $(JAEGER)
	@touch $@
otelprobes: $(OTELPROBE)/otel-probe-go $(OTELPROBE)/otel-probe-js.tar
$(OTELPROBE)/otel-probe-go: test/otelprobe/main.go test/otelprobe/go.mod test/otelprobe/go.sum
	@mkdir -p $(dir $@)
	cd test/otelprobe && CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -ldflags='-s -w' -o $(abspath $@) .
# npm ci from the lock file; the node images carry the result (no registry there).
$(OTELPROBE)/otel-probe-js.tar: test/otelprobe/js/package.json test/otelprobe/js/package-lock.json test/otelprobe/js/probe.js
	@command -v npm >/dev/null || $(MAKE) backend-deps
	rm -rf $(OTELPROBE)/js && mkdir -p $(OTELPROBE)/js
	cp $^ $(OTELPROBE)/js/
	cd $(OTELPROBE)/js && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error
	tar -C $(OTELPROBE)/js --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf $@ .

backend-deps: deps
	@. packaging/lib/host.sh && ensure_packages $(BACKEND_PACKAGES)

# The Debian package: debian/ built with dpkg-buildpackage in a copy of the
# tree (packaging/deb/build.sh).
deb:
	@. packaging/lib/host.sh && ensure_packages $(DEB_PACKAGES)
	packaging/deb/build.sh --slurm $(SLURM) --out $(BUILD)/deb --version $(VERSION) \
	  $(if $(SITE_INCLUDE),--include $(SITE_INCLUDE))

# What the packages install, under DESTDIR: debian/rules runs it (through
# dh_auto_install) and so does the RPM spec's %install. SO_MODE is the
# plugin's and the library's mode: 0644 on Debian (Policy 10.2: shared
# objects that are not executables are not executable), 0755 in the RPM, as
# rpm's dependency and debuginfo generators expect of shared objects.
# What the package recipes ask the Makefile (debian/rules, the RPM spec:
# they call nothing else). check-artifacts fails unless the built files are
# what the packages claim: a SPANK plugin of SLURM's release, the library
# with its two entry points, an executable. slurm-next prints the first
# release after SLURM, the bound of a package's Slurm dependency;
# glibc-floor prints the glibc version the library needs beyond its
# symbols' (2.36 for packed relocations, golib.mk), or nothing.
check-artifacts:
	@bash -c '. packaging/lib/common.sh && check_artifacts "$$@"' check-artifacts $(SLURM) \
	  $(BUILD)/$(SLURM)/spank_otel.so $(BUILD)/libspankotel.so $(BUILD)/spank-otel
slurm-next:
	@bash -c '. packaging/lib/common.sh && slurm_next_minor "$$1"' slurm-next $(SLURM)
glibc-floor:
	@bash -c '. packaging/lib/common.sh && { ! needs_relr_glibc "$$1" || echo 2.36; }' glibc-floor $(or $(LIB),$(BUILD)/libspankotel.so)

DESTDIR ?=
BINDIR  ?= /usr/bin
DATADIR ?= /usr/share/spank-otel
MANDIR  ?= /usr/share/man
SO_MODE ?= 0644
install: lib cli shim probe stephelper man
	install -D -m $(SO_MODE) $(BUILD)/$(SLURM)/spank_otel.so $(DESTDIR)$(PLUGINDIR)/spank_otel.so
	install -D -m 0755 $(BUILD)/spank-otel-probe $(DESTDIR)$(PLUGINDIR)/spank-otel-probe
	install -D -m 0755 $(BUILD)/spank-otel-helper $(DESTDIR)$(PLUGINDIR)/spank-otel-helper
	install -D -m $(SO_MODE) $(BUILD)/libspankotel.so $(DESTDIR)$(PLUGINDIR)/libspankotel.so
	install -D -m 0755 $(BUILD)/spank-otel $(DESTDIR)$(BINDIR)/spank-otel
	install -D -m 0644 $(BUILD)/spank-otel.1 $(DESTDIR)$(MANDIR)/man1/spank-otel.1
	install -d -m 0755 $(DESTDIR)$(DATADIR)
	sed -e 's|@PLUGINDIR@|$(PLUGINDIR)|g' -e 's|@DATADIR@|$(DATADIR)|g' \
	  packaging/plugstack.conf.example.in >$(DESTDIR)$(DATADIR)/plugstack.conf.example
	chmod 0644 $(DESTDIR)$(DATADIR)/plugstack.conf.example

rpm:
	@. packaging/lib/host.sh && ensure_packages $(RPM_PACKAGES)
	packaging/rpm/build.sh --slurm $(SLURM) --version $(VERSION) --topdir $(BUILD)/rpm \
	  $(if $(SITE_INCLUDE),--include $(SITE_INCLUDE))

# What a machine that never ran the project sees, on stand-in tools: no
# root, no network, no docker.
host-test:
	test/host/test.sh

# test/gpu/check.sh (for a machine with NVIDIA GPUs) against a fake
# machine: device nodes in a temporary directory (root), a fake nvidia-smi.
gpu-selftest: cli
	SPANK_OTEL=$(BUILD)/spank-otel test/gpu/selftest.sh

# The race detector on every test: the allocation and stack guards of the
# per-task path hold under it too (TestTaskPathStack measures the library's
# own build). About a minute on 2 cores with a warm build cache.
unit:
	@for m in $(GO_MODULES); do \
	  echo "== $$m"; \
	  (cd $$m && $(GO) vet ./... && $(GO) test -race -count=1 ./...) || exit 1; \
	done
	$(GO) vet -tags cluster ./test/cluster/
	$(GO) vet -tags harness ./spank/harness/test/

# The shim's Go test (spank/harness/test, build tag harness) drives the
# harness binaries; it changes file owners and runs children as another
# user: root.
# It compiles against the headers `make headers` downloads, as the shim does,
# into a build directory of that release's own (make notices no header change
# from another release: their files are older than the objects).
ctest: lib headers
	@. packaging/lib/host.sh && ensure_packages $(FUSE_PACKAGES)
	$(MAKE) -C spank test SLURM_INCLUDE=$(abspath $(BUILD)/slurm-headers/$(SLURM)/usr/include) \
	  BUILD=$(abspath $(BUILD))/ctest-$(SLURM) REAL=$(abspath $(BUILD)/libspankotel.so)

# Newest release first: under make test, a release built from source
# (25.11) then comes last, and its build in the background (PREBUILD) has
# had the most time.
package-test: deps
	packaging/third-party-test.sh
	for v in $$(printf '%s\n' $(PACKAGE_SLURMS) | tac); do $(MAKE) --no-print-directory package-test-one SLURM=$$v; done
	packaging/include-test.sh $(lastword $(PACKAGE_SLURMS))

package-test-one: deps
	test/prebuild.sh wait slurm-source:$(SLURM)
	$(MAKE) deb SLURM=$(SLURM)
	packaging/deb/test.sh $(BUILD)/deb/spank-otel_$(VERSION)-1+sl$(subst .,,$(SLURM))_amd64.deb
	$(MAKE) rpm SLURM=$(SLURM)
	packaging/rpm/test.sh $$(ls -t $(BUILD)/rpm/RPMS/*/slurm-spank-otel-*.sl$(subst .,,$(SLURM)).*.rpm | head -n1)

# Each release in a cluster of its own, CLUSTER_JOBS suites at once: the
# images are built one release at a time, beside the suite that runs, and
# each suite starts once its images are (test/cluster/run.sh,
# docs/testing.md). One at a time by default: two site suites at once on
# two cores made helpers miss timeout= (docs/testing.md).
CLUSTER_JOBS ?= 1
cluster-test: dockerd cli backend-deps
	@. packaging/lib/host.sh && ensure_packages $(FUSE_PACKAGES)
	@mkdir -p $(BUILD)
	test/prebuild.sh wait $(PREBUILD_CLUSTER)
	test/cluster/run.sh --jobs $(CLUSTER_JOBS) $(SLURMS)

# SchedMD's regression tests (test/slurm-testsuite/run.sh) on the releases it
# supports, each with spank-otel off and on: the list docs/testing.md
# discusses; make test runs the first four on 26.05 (test/cluster/run.sh).
TESTS ?= test_7_11 test_7_9 test_7_15 test_116_40 test_116_1 test_116_6 test_116_8 \
	test_116_19 test_116_24 test_116_25 test_116_21 test_116_37 test_116_44 test_122_1 \
	test_103_2 test_15_13 test_17_13 test_17_14 test_1_77
TESTSUITE_SLURMS := $(if $(filter command line environment,$(origin SLURM)),$(SLURM),$(PACKAGE_SLURMS))
slurm-testsuite: dockerd cli backend-deps
	@for v in $(TESTSUITE_SLURMS); do test/slurm-testsuite/run.sh --up --slurm $$v $(TESTS) || exit 1; done

# A node on cgroup v2, which this host cannot boot (its v1 hierarchies are
# busy): Debian's kernel in qemu under TCG, the 26.05 node image as its root
# file system (test/vm/run.sh, docs/testing.md). Boots, checks, powers off;
# qemu is killed if it outlives SPANK_OTEL_VM_TIMEOUT. The kernel and busybox
# come with apt-get download into /var/cache/spank-otel/vm (not installed).
VM_PACKAGES := qemu-system-x86_64=qemu-system-x86 mkfs.ext4=e2fsprogs debugfs=e2fsprogs cpio
vm-test: dockerd backend-deps
	@. packaging/lib/host.sh && ensure_packages $(VM_PACKAGES)
	test/slurm-docker/cluster build --slurm 26.05
	test/vm/run.sh

# The Python SDK's side of test/sdkinterop (TestPythonSDKAgrees), whose
# Python and SDK are the node image's: Debian bookworm's are too old for the
# SDK. test/cluster/run.sh runs it on every release whose nodes have it.
py-interop: dockerd backend-deps
	test/slurm-docker/cluster build --slurm $(SLURM)
	test/sdkinterop/python.sh $(SLURM)

# Each suite in turn, stopping at the first that fails, with its time.
# vm-test comes last: it boots the 26.05 node image cluster-test built.
TEST_SUITES := host-test gpu-selftest unit ctest package-test cluster-test vm-test
# What the later suites need and takes minutes cold, built in the
# background at nice 19 from the start of make test (test/prebuild.sh;
# lanes side by side, the products of a lane joined by +): Slurm built from
# source, whose headers and packages package-test needs, and the image
# layers of the first release test/cluster/run.sh tests (the newest
# supported one of SLURMS) and Jaeger, which cluster-test needs. Each suite waits for
# its products (package-test-one, cluster-test), with a deadline, and fails
# if their build did; make test stops the rest when it ends.
SOURCE_SLURMS := $(call releases,source schedmd)
PREBUILD_SOURCE := $(addprefix slurm-source:,$(filter $(SOURCE_SLURMS),$(PACKAGE_SLURMS)))
FIRST_SITE := $(lastword $(filter $(SUPPORTED_RELEASES),$(SLURMS)))
PREBUILD_CLUSTER := $(if $(FIRST_SITE),layers:$(FIRST_SITE)) jaeger
PREBUILD := $(PREBUILD_SOURCE) $(subst $(eval) ,+,$(strip $(PREBUILD_CLUSTER)))
# dockerd is started first, at make's own priority: one the background
# builds started would run at nice 19, and so would every cluster node.
test: deps dockerd
	@export SPANK_OTEL_PREBUILD=$(abspath $(BUILD))/prebuild; \
	trap 'test/prebuild.sh stop' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP; \
	test/prebuild.sh start $(PREBUILD); \
	total=$$SECONDS; for suite in $(TEST_SUITES); do \
	  start=$$SECONDS; \
	  if ! $(MAKE) --no-print-directory $$suite; then \
	    echo "=== suite time: $$suite FAILED after $$((SECONDS - start)) s"; exit 1; \
	  fi; \
	  echo "=== suite time: $$suite $$((SECONDS - start)) s"; \
	done; \
	echo "=== make test passed in $$((SECONDS - total)) s"

demo: dockerd backend-deps
	test/slurm-docker/cluster up --slurm $(SLURM)
	test/slurm-docker/demo.sh $(SLURM)

bench: lib dockerd
	test/bench/bench.sh

clean:
	rm -rf $(BUILD)

# PURGE_FLAGS=--keep-tool-caches keeps Go's and npm's caches.
purge-host:
	test/purge-host.sh $(PURGE_FLAGS)
