# python.sh, sourced by ./cluster: the OpenTelemetry Python SDK on the nodes
# of the releases SchedMD supports, for Python jobs as ML engineers write
# them (test/pyjob) and for the Python side of the SDK interop tests
# (test/sdkinterop/python.sh). Built on the testsuite layer with the
# network; the node image is built on it.
#   python layer  spank-otel-slurm:<ver>-base-python: Debian's packages the
#                 SDK and its OTLP/HTTP exporter import, and the SDK itself
#                 from packaging/third-party.tsv's upstream archive, its
#                 packages' source folders put on Python's path by a .pth
#                 file (setup-python.sh). No package index is reached.
# A layer of its own, on top of the shared ones, so that adding it rebuilds
# none of them.
# shellcheck shell=bash

python_archive='opentelemetry-python-*.tar.gz'

# python_layer_of VERSION: the image the node image of VERSION is built on.
# The older releases' nodes get no Python SDK: bookworm's
# python3-typing-extensions (4.4.0) is older than the SDK's >= 4.5.0.
python_layer_of() {
	if slurm_supported "$1"; then
		echo "$image_name:$1-base-python"
	else
		node_layer_of "$1"
	fi
}

# ensure_python_layer VERSION adds the Python SDK to the node layer of a
# supported release, once per input.
ensure_python_layer() {
	local ver=$1 from image archive from_id recipe staging
	slurm_supported "$ver" || return 0
	from=$(node_layer_of "$ver")
	image=$(python_layer_of "$ver")
	archive=$(third_party_archive "$python_archive")
	from_id=$(docker image inspect -f '{{.Id}}' "$from")
	recipe=$( {
		echo "$from_id"
		sha256sum <"$archive"
		cat "$here/setup-python.sh"
	} | sha256sum | cut -c1-16)
	if [[ $(label_of "$image" org.spank-otel.python-recipe) == "$recipe" ]]; then
		log "Python layer $image is up to date"
		return
	fi
	log "adding the OpenTelemetry Python SDK (${archive##*/}) to $from ($image)"
	staging=$(mktemp -d)
	cp "$here/setup-python.sh" "$staging/"
	cp "$archive" "$staging/opentelemetry-python.tar.gz"
	commit_layer "$from" "$image" "python layer" org.spank-otel.python-recipe="$recipe" \
		"$staging" setup-python.sh
}
