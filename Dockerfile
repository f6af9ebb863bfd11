# objfs container image: objfs-csi (CSI plugin), objfs-mount (FUSE daemon) and
# objfs-holder (the node's mount holder)
# on Debian 12.  One file for every architecture Debian builds for:
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t <repo>/objfs:<tag> .
#
# Only Debian packages and this source tree go in; nothing is downloaded.
# The controller runs as the non-root user "objfs" (uid 10001, the image
# default); the node plugin's pod spec runs it as root, privileged, for FUSE.

# ---- build: the project's own autotools build ------------------------------
FROM debian:bookworm AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        build-essential autoconf automake pkg-config \
        protobuf-c-compiler libprotobuf-dev libprotobuf-c-dev \
        libfuse3-dev libcurl4-openssl-dev libssl-dev libgrpc-dev libexpat1-dev \
        libjson-c-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# mount.objfs in /usr/sbin: bookworm's /sbin is a link to it, which a real
# /out/sbin copied over / would replace.
RUN autoreconf -fi \
 && ./configure --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
 && make -j"$(nproc)" \
 && make install DESTDIR=/out mounthelperdir=/usr/sbin

# ---- runtime: programs and the shared libraries they link -----------------
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        fuse3 ca-certificates \
        libfuse3-3 libcurl4 libssl3 libprotobuf-c1 libgrpc29 libexpat1 libjson-c5 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /
# Fail the build if a library is missing, then make the self-contained
# objfs-mount bundle (binary, its libraries, the dynamic loader, libgcc_s
# which glibc loads at run time, CA certificates) that the chart's
# node.hostSystemd option copies to the host, where it runs as
# `<dir>/objfs-mount.sh ...` whatever the host distribution.
RUN set -e; \
    for p in /usr/bin/objfs-csi /usr/bin/objfs-mount /usr/bin/objfs-holder; do \
        test -x "$p"; \
        if ldd "$p" | grep 'not found'; then exit 1; fi; \
    done; \
    b=/usr/lib/objfs/bundle; mkdir -p "$b/lib"; \
    cp /usr/bin/objfs-mount "$b/"; \
    ldd /usr/bin/objfs-mount | awk '$2 == "=>" && $3 ~ /^\// {print $3}' \
        | xargs -r -I{} cp -L {} "$b/lib/"; \
    cp -L "$(ldd /usr/bin/objfs-mount | awk '$1 ~ /^\// {print $1}')" "$b/lib/ld.so"; \
    gcc_s=$(ldconfig -p | awk '/libgcc_s\.so\.1 /{print $NF; exit}'); \
    if [ -n "$gcc_s" ]; then cp -L "$gcc_s" "$b/lib/"; fi; \
    cp -L /etc/ssl/certs/ca-certificates.crt "$b/"; \
    printf '%s\n' '#!/bin/sh' 'd=$(dirname "$(readlink -f "$0")")' \
        'exec "$d/lib/ld.so" --library-path "$d/lib" "$d/objfs-mount" "$@"' \
        > "$b/objfs-mount.sh"; \
    chmod 0755 "$b/objfs-mount.sh"
RUN groupadd --system --gid 10001 objfs \
 && useradd --system --uid 10001 --gid objfs --no-create-home \
        --home-dir /var/lib/objfs --shell /usr/sbin/nologin objfs \
 && install -d -o objfs -g objfs /var/lib/objfs
USER 10001:10001
ENTRYPOINT ["/usr/bin/objfs-csi"]
CMD ["--help"]
