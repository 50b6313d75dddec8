# The weir image: the static release binary of weir, CA certificates and a
# non-root user (65532, "nonroot"), on an empty base: no shell, no package
# manager, about 50 MB. Its build context is not the repository but the
# directory .ci/release prepares (the linux binary, ca-certificates.crt,
# passwd):
#
#   .ci/release --image OUTDIR
#
# builds it with buildah, podman or docker (whichever can run) for
# linux/amd64 and linux/arm64 and writes each as an OCI archive beside the
# release archives (podman load -i FILE; for Docker, skopeo copy
# oci-archive:FILE docker-daemon:weir:VERSION). Jobs run in /work: mount the
# job file, its inputs and a writable directory for checkpoints and outputs
# there, e.g.
#
#   docker run --rm -v "$PWD:/work" --user "$(id -u)" weir:VERSION run job.yaml
FROM scratch
COPY passwd /etc/passwd
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY weir /usr/local/bin/weir
WORKDIR /work
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/weir"]
CMD ["help"]
