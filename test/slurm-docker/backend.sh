# backend.sh, sourced by ./cluster: the cluster's tracing backend, Jaeger v2
# (service "jaeger" in docker-compose.yml), and what the node images need to
# send to it: Debian's nodejs, the probe programs (test/otelprobe) and the
# TaskProlog that sets OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318 for
# every task.
# shellcheck shell=bash

jaeger_image=${SPANK_OTEL_JAEGER_IMAGE:-spank-otel-jaeger:local}

# node_base_of VERSION: the image a node image is built on.
node_base_of() { echo "$image_name:$1-base-nodejs"; }

# ensure_nodejs_layer VERSION adds Debian's nodejs (for otel-probe-js) to
# the base image, once per base image, from the mirror the base image was
# bootstrapped from. A layer of its own, so the base image recipe (shared
# by every checkout on the machine) stays as it is.
ensure_nodejs_layer() {
	local ver=$1 base image base_id cid
	base=$image_name:$ver-base
	image=$(node_base_of "$ver")
	base_id=$(docker image inspect -f '{{.Id}}' "$base")
	if [[ $(label_of "$image" org.spank-otel.layer-of) == "$base_id" ]]; then
		log "base image with nodejs $image is up to date"
		return
	fi
	log "adding Debian's nodejs to $base ($image)"
	cid=$(docker create "$base" /bin/sh -c 'set -e
		apt-get update -q
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs
		apt-get clean
		rm -rf /var/lib/apt/lists/*
		echo "nodejs $(node --version)"')
	build_cids+=("$cid")
	if ! docker start -a "$cid" 2>&1 | sed -u 's/^/  [nodejs layer] /' >&2 ||
		[[ $(docker inspect -f '{{.State.ExitCode}}' "$cid") != 0 ]]; then
		docker rm -f "$cid" >/dev/null
		die "installing nodejs into $image failed"
	fi
	docker commit --change 'CMD ["/bin/bash"]' \
		--change "LABEL org.spank-otel.layer-of=$base_id" "$cid" "$image" >/dev/null
	docker rm "$cid" >/dev/null
}

# backend_inputs prints the files setup-node.sh installs for the backend:
# the TaskProlog and, with the repository, the probes (make otelprobes) and
# the Python job (test/pyjob).
backend_inputs() {
	printf '%s\n' "$here/task-prolog.sh" "$here/otlp-endpoint.sh"
	[[ -f $repo/Makefile ]] || return 0
	make -C "$repo" -s otelprobes >&2 || die "make -C $repo otelprobes failed"
	printf '%s\n' "$repo/build/otelprobe/otel-probe-go" "$repo/build/otelprobe/otel-probe-js.tar" \
		"$repo/test/pyjob/train.py" "$repo/test/pyjob/launch.py"
}

# ensure_jaeger_image makes $jaeger_image from make jaeger's static binary
# and UI (test/jaeger) and jaeger.yaml: a file system of those files only,
# imported; no registry.
ensure_jaeger_image() {
	local dir=$repo/build/jaeger recipe tmp
	make -C "$repo" -s jaeger >&2 || die "make -C $repo jaeger failed"
	recipe=$( (
		cd "$dir" && find jaeger ui -type f | LC_ALL=C sort | xargs sha256sum
		cat "$here/jaeger.yaml"
	) | sha256sum | cut -c1-16)
	exec 8>"$cache/.lock-jaeger-image"
	flock 8
	if [[ $(label_of "$jaeger_image" org.spank-otel.jaeger-recipe) == "$recipe" ]]; then
		log "Jaeger image $jaeger_image is up to date"
		exec 8>&-
		return
	fi
	log "building the Jaeger image $jaeger_image"
	tmp=$(mktemp -d)
	install -d "$tmp/usr/local/bin" "$tmp/opt/jaeger" "$tmp/etc/jaeger"
	install -d -m 1777 "$tmp/tmp"
	install -m 0755 "$dir/jaeger" "$tmp/usr/local/bin/jaeger"
	cp -r "$dir/ui" "$tmp/opt/jaeger/ui"
	install -m 0644 "$here/jaeger.yaml" "$tmp/etc/jaeger/config.yaml"
	chmod -R a+rX "$tmp"
	tar -C "$tmp" --numeric-owner --owner=0 --group=0 -cf - . |
		docker import \
			--change 'ENTRYPOINT ["/usr/local/bin/jaeger", "--config", "/etc/jaeger/config.yaml"]' \
			--change "LABEL org.spank-otel.jaeger-recipe=$recipe" \
			- "$jaeger_image" >/dev/null
	rm -rf "$tmp"
	exec 8>&-
}

# jaeger_url prints the Jaeger UI and API address the host reaches: the
# container's address on the cluster network.
jaeger_url() {
	local ip
	ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(container jaeger)" 2>/dev/null) ||
		die "$(container jaeger) does not exist; start the cluster with: $0 up --slurm $version"
	[[ -n $ip ]] || die "$(container jaeger) has no address"
	echo "http://$ip:16686"
}

# wait_jaeger waits until Jaeger answers its health check.
wait_jaeger() {
	local url i
	ensure_packages curl
	url=$(jaeger_url)
	for ((i = 0; i < 120; i++)); do
		if curl -fsS -o /dev/null "${url%:*}:13133/status" 2>/dev/null; then
			log "Jaeger is up: $url"
			return
		fi
		sleep 0.5
	done
	docker logs --tail 30 "$(container jaeger)" >&2 || :
	die "Jaeger did not answer at ${url%:*}:13133 within 60s"
}
