# containers.sh, sourced by ./cluster: the real container stack of GPU
# sites, NVIDIA's pyxis (a SPANK plugin) driving the enroot runtime, built
# offline from the upstream archives in the project's third-party folder,
# and the squashfs image jobs run in (/srv/images/base.sqsh on every node).
#
#   third-party archives  packaging/third-party.tsv, found, downloaded and
#                       checked by host.sh's third_party_archive. A missing
#                       archive is an error.
#   enroot              built once (build-enroot.sh), pyxis per Slurm release
#                       against that release's headers (build-pyxis.sh,
#                       build/slurm-headers/<ver>/usr/include); both cached
#                       as install trees in $cache/third-party, keyed by the
#                       archive's hash, the build script and the headers.
#   containers layer    spank-otel-slurm:<ver>-base-containers, on the nodejs
#                       layer (backend.sh): enroot, pyxis, their packages and
#                       configuration (setup-containers.sh); the node image is
#                       built on it. The entrypoint enables pyxis on the site
#                       profile.
#   image               build-image.sh, per release, into build/images/<ver>.
# shellcheck shell=bash

# The archives, as packaging/third-party.tsv names them
# (third_party_archive).
enroot_archive=enroot-4.1.2.tar.gz
pyxis_archive=pyxis-0.24.0.tar.gz

# cached_build KIND NAME RECIPE CMD...: prints $cache/third-party/NAME-RECIPE.tar,
# made by CMD... OUT when missing (older builds of NAME are removed).
cached_build() {
	local kind=$1 name=$2 recipe=$3 out
	shift 3
	out=$cache/third-party/$name-$recipe.tar
	if [[ -f $out ]]; then
		log "$kind: using the cached build $out"
	else
		local t0=$SECONDS
		mkdir -p "$cache/third-party"
		exec 7>"$cache/third-party/.lock-$name"
		flock 7
		if [[ ! -f $out ]]; then
			log "$kind: building $name"
			"$@" "$out" 2>&1 | sed -u "s/^/  [$name] /" >&2 || die "building $name failed"
			[[ -f $out ]] || die "building $name left no $out"
			find "$cache/third-party" -maxdepth 1 -name "$name-*.tar" ! -path "$out" -delete
			log "$kind: built $name in $((SECONDS - t0))s"
		fi
		exec 7>&-
	fi
	echo "$out"
}

# enroot_build prints the path of enroot's install tree (one for every release).
enroot_build() {
	local archive recipe
	archive=$(third_party_archive "$enroot_archive")
	ensure_packages gcc make makeself \
		/usr/lib/x86_64-linux-gnu/libbsd.a=libbsd-dev nm=binutils
	recipe=$( {
		sha256sum <"$archive"
		cat "$here/build-enroot.sh"
	} | sha256sum | cut -c1-16)
	cached_build enroot "${enroot_archive%.tar.gz}" "$recipe" "$here/build-enroot.sh" "$archive"
}

# pyxis_build VERSION prints the path of pyxis's install tree built against
# Slurm VERSION's headers: build/slurm-headers/VERSION/usr/include, which
# `make headers SLURM=VERSION` provides when absent.
pyxis_build() {
	local ver=$1 archive include recipe
	archive=$(third_party_archive "$pyxis_archive")
	include=$(slurm_include "$ver")
	ensure_packages gcc make
	recipe=$( {
		sha256sum <"$archive"
		cat "$here/build-pyxis.sh"
		cd "$include" && find slurm -type f | LC_ALL=C sort | xargs sha256sum
	} | sha256sum | cut -c1-16)
	cached_build pyxis "${pyxis_archive%.tar.gz}-slurm$ver" "$recipe" "$here/build-pyxis.sh" "$archive" "$include"
}

# slurm_include VERSION prints the include directory of Slurm VERSION's
# headers, build/slurm-headers/VERSION/usr/include, made by `make headers`
# when absent.
slurm_include() {
	local ver=$1 include=$repo/build/slurm-headers/$1/usr/include
	if [[ ! -f $include/slurm/spank.h ]]; then
		make -C "$repo" -s headers SLURM="$ver" >&2 || die "make -C $repo headers SLURM=$ver failed"
	fi
	[[ -f $include/slurm/spank.h ]] || die "no Slurm $ver headers in $include"
	echo "$include"
}

# containers_layer_of VERSION: the image the node image is built on.
containers_layer_of() { echo "$image_name:$1-base-containers"; }

# ensure_containers_layer VERSION adds enroot, pyxis and their packages
# (setup-containers.sh) to the nodejs layer, once per input; a layer of its
# own, so the shared base image recipe stays as it is.
ensure_containers_layer() {
	local ver=$1 from image from_id enroot pyxis recipe staging
	from=$(node_base_of "$ver")
	image=$(containers_layer_of "$ver")
	enroot=$(enroot_build)
	pyxis=$(pyxis_build "$ver")
	from_id=$(docker image inspect -f '{{.Id}}' "$from")
	recipe=$( {
		printf '%s\n' "$from_id" "${enroot##*/}" "${pyxis##*/}"
		cat "$here/setup-containers.sh" "$here/enroot.conf" "$here/enroot-slurm.fstab"
	} | sha256sum | cut -c1-16)
	if [[ $(label_of "$image" org.spank-otel.containers-recipe) == "$recipe" ]]; then
		log "containers layer $image is up to date"
		return
	fi
	log "adding enroot and pyxis to $from ($image)"
	staging=$(mktemp -d)
	cp "$here/setup-containers.sh" "$here/enroot.conf" "$here/enroot-slurm.fstab" "$staging/"
	cp "$enroot" "$staging/enroot.tar"
	cp "$pyxis" "$staging/pyxis.tar"
	commit_layer "$from" "$image" "containers layer" org.spank-otel.containers-recipe="$recipe" \
		"$staging" setup-containers.sh
}

# commit_layer FROM IMAGE NAME LABEL=VALUE STAGING SCRIPT makes IMAGE: a
# container of FROM, with the network for apt, runs STAGING/SCRIPT (STAGING
# copied to /tmp/spank-otel-layer, which SCRIPT removes), and is committed
# with LABEL; its output goes to stderr, prefixed with [NAME]. STAGING is
# removed.
commit_layer() {
	local from=$1 image=$2 name=$3 label=$4 staging=$5 script=$6 cid
	chmod -R a+rX "$staging"
	cid=$(docker create --entrypoint /bin/sh "$from" "/tmp/spank-otel-layer/$script")
	build_cids+=("$cid")
	if ! docker cp "$staging" "$cid:/tmp/spank-otel-layer" ||
		! docker start -a "$cid" 2>&1 | sed -u "s/^/  [$name] /" >&2 ||
		[[ $(docker inspect -f '{{.State.ExitCode}}' "$cid") != 0 ]]; then
		docker rm -f "$cid" >/dev/null
		rm -rf "$staging"
		die "building $image failed"
	fi
	docker commit --change 'ENTRYPOINT []' --change 'CMD ["/bin/bash"]' \
		--change "LABEL $label" "$cid" "$image" >/dev/null
	docker rm "$cid" >/dev/null
	rm -rf "$staging"
}

# container_inputs VERSION builds the squashfs image of Slurm VERSION's
# nodes (build-image.sh) and prints its path, for setup-node.sh to install
# at /srv/images/base.sqsh. The image holds the spank-otel command and the
# probes, so it is rebuilt when they change.
container_inputs() {
	local ver=$1 from from_id dir recipe files
	[[ -f $repo/Makefile && ${SPANK_OTEL_DEB:-} != none ]] || return 0
	make -C "$repo" -s cli otelprobes >&2 || die "make -C $repo cli otelprobes failed"
	files=("$repo/build/spank-otel" "$repo/build/otelprobe/otel-probe-go" "$repo/build/otelprobe/otel-probe-js.tar")
	from=$(node_base_of "$ver")
	from_id=$(docker image inspect -f '{{.Id}}' "$from")
	recipe=$( {
		echo "$from_id"
		sha256sum "${files[@]}" | cut -d' ' -f1
		cat "$here/build-image.sh"
	} | sha256sum | cut -c1-16)
	dir=$repo/build/images/$ver
	if [[ -f $dir/base.sqsh && $(cat "$dir/base.sqsh.recipe" 2>/dev/null) == "$recipe" ]]; then
		log "container image $dir/base.sqsh is up to date"
	else
		local t0=$SECONDS
		ensure_packages mksquashfs=squashfs-tools
		log "building the container image $dir/base.sqsh from $from"
		mkdir -p "$dir"
		rm -f "$dir/base.sqsh.recipe"
		"$here/build-image.sh" "$from" "$dir/base.sqsh" "${files[@]}" 2>&1 |
			sed -u 's/^/  [image] /' >&2 || die "building $dir/base.sqsh failed"
		echo "$recipe" >"$dir/base.sqsh.recipe"
		log "built $dir/base.sqsh ($(du -h "$dir/base.sqsh" | cut -f1)) in $((SECONDS - t0))s"
	fi
	echo "$dir/base.sqsh"
}
