# testsuite.sh, sourced by ./cluster: the layer that lets SchedMD's
# regression suite run in the cluster of a release SchedMD supports
# (test/slurm-testsuite/run.sh). Built on the containers layer with the
# network; the node image is built on it.
#   testsuite layer  spank-otel-slurm:<ver>-base-testsuite: the suite's
#                    Debian packages, Slurm's headers of the release (the
#                    ones the shim is built against, make headers) and the
#                    runner user atf (setup-testsuite.sh).
# shellcheck shell=bash

# node_layer_of VERSION: the image the node image of VERSION is built on.
node_layer_of() {
	if slurm_supported "$1"; then
		echo "$image_name:$1-base-testsuite"
	else
		containers_layer_of "$1"
	fi
}

# ensure_testsuite_layer VERSION adds the suite's needs to the containers
# layer of a supported release, once per input.
ensure_testsuite_layer() {
	local ver=$1 from image include from_id recipe staging
	slurm_supported "$ver" || return 0
	from=$(containers_layer_of "$ver")
	image=$(node_layer_of "$ver")
	include=$(slurm_include "$ver")
	from_id=$(docker image inspect -f '{{.Id}}' "$from")
	recipe=$( {
		echo "$from_id"
		cat "$here/setup-testsuite.sh"
		cd "$include" && find slurm -type f | LC_ALL=C sort | xargs sha256sum
	} | sha256sum | cut -c1-16)
	if [[ $(label_of "$image" org.spank-otel.testsuite-recipe) == "$recipe" ]]; then
		log "testsuite layer $image is up to date"
		return
	fi
	log "adding what SchedMD's testsuite needs to $from ($image)"
	staging=$(mktemp -d)
	cp "$here/setup-testsuite.sh" "$staging/"
	tar -C "$include" --owner=0 --group=0 -cf "$staging/slurm-include.tar" slurm
	commit_layer "$from" "$image" "testsuite layer" org.spank-otel.testsuite-recipe="$recipe" \
		"$staging" setup-testsuite.sh
}
