#!/bin/sh
# Runs in a container of spank-otel-slurm:<version>-base (no network) to make
# the node image spank-otel-slurm:<version>: the plugin package, installed
# with apt, and the cluster's configuration. Usage: setup-node.sh SLURM-VERSION
# with the inputs (and spank-otel.deb, if any) next to this script; they are
# removed when it ends.
set -eu
version=$1
src=$(dirname "$0")
# The inputs must not end up in the image.
trap 'rm -rf "$src"' EXIT
plugindir=/usr/lib/x86_64-linux-gnu/slurm-wlm

install -m 0755 "$src/entrypoint.sh" /usr/local/sbin/spank-otel-entrypoint

# The configuration pieces; the entrypoint assembles slurm.conf and
# cgroup.conf from them for the profile the cluster runs (basic or site).
confdir=/etc/slurm/spank-otel
install -d -m 0755 "$confdir"
for f in "$src"/slurm.conf "$src"/profile-*.conf "$src"/slurm-*.conf "$src"/cgroup-*.conf "$src"/gres-*.conf; do
	[ ! -f "$f" ] || install -m 0644 "$f" "$confdir/"
done
echo "$version" >"$confdir/version"

# Slurm reads plugstack.conf.d only through this include line.
mkdir -p /etc/slurm/plugstack.conf.d
touch /etc/slurm/plugstack.conf
if ! grep -qx 'include /etc/slurm/plugstack.conf.d/\*.conf' /etc/slurm/plugstack.conf; then
	echo 'include /etc/slurm/plugstack.conf.d/*.conf' >>/etc/slurm/plugstack.conf
fi

# Test-only pieces (test/spankprobe, test/faultlib): installed, never
# enabled by default; the cluster tests write their plugstack.conf lines.
testdir=/usr/lib/spank-otel-test
install -d -m 0755 "$testdir"
install -m 0644 "$src/image.env" "$testdir/image.env"
for f in spankprobe.so libevil.so libfault.so spank_otel-initfails.so spank_otel-initfails-nomode.so; do
	[ ! -f "$src/$f" ] || install -m 0644 "$src/$f" "$testdir/$f"
done

# The tracing backend's side (backend.sh): the TaskProlog that points every
# task's OpenTelemetry SDK at the cluster's Jaeger, and the probe programs.
install -m 0755 "$src/task-prolog.sh" /etc/slurm/task-prolog.sh
install -d -m 0755 /etc/slurm/task-prolog.d
install -m 0755 "$src/otlp-endpoint.sh" /etc/slurm/task-prolog.d/otlp-endpoint
[ ! -f "$src/otel-probe-go" ] || install -m 0755 "$src/otel-probe-go" /usr/local/bin/otel-probe-go
if [ -f "$src/otel-probe-js.tar" ]; then
	install -d -m 0755 "$testdir/otel-probe-js"
	tar -C "$testdir/otel-probe-js" --no-same-owner -xf "$src/otel-probe-js.tar"
	printf '#!/bin/sh\nexec node %s/otel-probe-js/probe.js "$@"\n' "$testdir" >/usr/local/bin/otel-probe-js
	chmod 0755 /usr/local/bin/otel-probe-js
fi

# The Python job (test/pyjob), where the node has the Python SDK (python.sh).
for f in train.py launch.py; do
	[ ! -f "$src/$f" ] || install -D -m 0644 "$src/$f" "$testdir/pyjob/$f"
done

# The image of the container jobs (containers.sh): pyxis's
# --container-image=/srv/images/base.sqsh.
[ ! -f "$src/base.sqsh" ] || install -D -m 0644 "$src/base.sqsh" /srv/images/base.sqsh

if [ ! -f "$src/spank-otel.deb" ]; then
	echo "setup-node: no plugin package given; the image has no spank-otel" >&2
	exit 0
fi
# apt (not dpkg -i) so the package's Depends on the matching Slurm are checked.
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$src/spank-otel.deb"
# The test libraries' step helper: the shim looks for it beside lib=.
install -m 0755 /usr/lib/x86_64-linux-gnu/slurm-wlm/spank-otel-helper "$testdir/spank-otel-helper"
apt-get clean
rm -rf /var/lib/apt/lists/*
for f in "$plugindir/spank_otel.so" "$plugindir/libspankotel.so"; do
	if [ ! -f "$f" ]; then
		echo "setup-node: the package did not install $f" >&2
		exit 1
	fi
done
echo "optional $plugindir/spank_otel.so lib=$plugindir/libspankotel.so" \
	>/etc/slurm/plugstack.conf.d/spank-otel.conf
chmod 0644 /etc/slurm/plugstack.conf.d/spank-otel.conf
dpkg-query -W -f 'setup-node: installed ${Package} ${Version}\n' spank-otel
