# Stands in for codercom/code-server (Docker Hub, which cannot be pulled here), so that
# deploy/code-server.yaml's Template runs on it with only its image changed: VS Code in the browser
# (code-server) for the user coder (uid 1000, gid 1000, home /home/coder, bash), on 0.0.0.0:8080 at
# the root path, /healthz for the readiness probe, dumb-init as PID 1.
#
#   NODE_BIN=node_modules/node/bin/node bash cluster/images/build.sh code-server
#
# code-server comes from the npm registry (the package code-server, pinned below with its sha512),
# installed the way its postinstall.sh does it (docs/npm.md upstream), but outside `npm install -g`:
# code-server's own dependencies with `npm ci`, then `npm install --omit=dev` in lib/vscode and
# lib/vscode/extensions as postinstall.sh runs it, which then keeps to the npm-shrinkwrap.json
# files the package ships (under `npm install -g` those nested installs re-resolve every range;
# lib/vscode's shrinkwrap lacks tslib, so `npm ci` refuses it). It runs on NODE_BIN, Node 24 (its
# engines field and postinstall.sh require exactly v24), at /usr/local/bin/node, with npm (pinned)
# beside it.
#
# Nothing is downloaded from outside the npm registry and Debian's mirror:
#   - the native modules (@vscode/spdlog, @vscode/sqlite3, @vscode/native-watchdog, kerberos,
#     @vscode/deviceid, ssh2's crypto binding, ...) are compiled by node-gyp in a throwaway Debian
#     builder (build-essential, python3, libkrb5-dev), so the image has no compiler. node-gyp would
#     fetch Node's C headers from nodejs.org: they come instead from the npm package
#     node-linux-<arch> of NODE_BIN's exact version (the package the npm package node installs;
#     its bin/node is checked to be NODE_BIN), through npm_config_nodedir.
#   - node-pty, @parcel/watcher, argon2, ripgrep and esbuild ship their Linux binaries inside
#     their npm packages.
#   - kerberos first asks github.com for a prebuilt binary (prebuild-install); without a route
#     there that fails at once (ENOTFOUND) and it is compiled, as above.
#   - npm 11 runs dependencies' install scripts; npm 12 will not without an allow list, hence the pin.
#
# Settings (/etc/code-server/config.yaml, CODE_SERVER_CONFIG; arguments override them):
# --auth none (Userland's proxy has already signed the student in and sends X-User; a second
# password would only be in the way, and NetworkPolicies keep everyone else off the port), --bind-addr
# 0.0.0.0:8080, --disable-telemetry, --disable-update-check. The default command opens /home/coder;
# a Template's args replace it (entrypoint: dumb-init code-server).
#
# Differences from codercom/code-server, on purpose:
#   - no sudo (the student stays uid 1000 with no way to root), no fixuid and no entrypoint.sh
#     (DOCKER_USER, ENTRYPOINTD hooks): run it as uid 1000 (runAsUser: 1000, fsGroup: 1000).
#   - node 24 and npm on PATH (/usr/local/bin), which the official image does not have (its node
#     is private to /usr/lib/code-server).
#   - LANG=C.UTF-8 (built into libc) instead of a generated en_US.UTF-8; no locales, man-db, or
#     manuals (build.sh's dpkg filters).
#   - code-server lives at /usr/local/lib/node_modules/code-server (npm's global layout), with
#     /usr/local/bin/code-server, not /usr/lib/code-server and /usr/bin/code-server.
#   - the extension gallery (open-vsx.org) and VS Code's other online services are unreachable
#     from a node without a route out; extensions that ship with code-server all work.
#   - one layer, Debian packages from today's bookworm mirror.
variant=minbase
# libstdc++6/libgcc-s1: node; libgssapi-krb5-2: kerberos.node loads it (proxy authentication);
# dumb-init: PID 1 that reaps the terminals' orphans; the rest is what a student expects in a
# terminal (the official image has the same, plus sudo, man-db, locales).
packages=(
  ca-certificates libstdc++6 libgcc-s1 libgssapi-krb5-2 dumb-init
  bash git git-lfs openssh-client procps less nano vim-tiny curl wget htop zsh lsb-release
)
inputs=("NODE_BIN  a Node 24 linux binary: node_modules/node/bin/node after npm ci (the npm package node)")
files=(
  NODE_BIN:/usr/local/bin/node
  config.yaml:/etc/code-server/config.yaml
)
code_server_version=4.139.1
code_server_integrity=sha512-fUYvJVdz4ZoVJfakGiGWXFMpF8K1ObsrpGvX17ZxNpKOzdNHs7lANT670JTr4ZhA8DnWqyvvmFG/d3HV9Yy6ew==
npm_version=11.21.2
npm_integrity=sha512-7HPApk+AflMUavSseL1Pm6CnYqMIHk53x+KmuhqmTDqPkjPMgxIpTPcTqsE91EKNw4gFBJV9fnXiSdGm1DXq9A==
# What the builder needs to compile the native modules (node-gyp: make, g++, python3; kerberos:
# the GSS-API headers).
build_packages=(build-essential python3 libkrb5-dev ca-certificates)
entrypoint=(dumb-init code-server)
cmd=(/home/coder)
user=1000:1000
workdir=/home/coder
env=(USER=coder LANG=C.UTF-8 SHELL=/bin/bash CODE_SERVER_CONFIG=/etc/code-server/config.yaml)
ports=(8080/tcp)
if [[ -n ${NODE_BIN:-} && -x $NODE_BIN ]]; then
  env+=("NODE_VERSION=$("$NODE_BIN" --version | sed 's/^v//')")
fi

# Fetches a package tarball from the npm registry with the host's npm and checks its sha512.
code_server_fetch() { # spec integrity
  local tgz
  tgz=$(npm pack --silent "$1" | tail -n1)
  [[ -z $2 || "sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)" == "$2" ]] ||
    die "code-server: $tgz does not match the pinned integrity $2"
  echo "$tgz"
}

# Runs a command as root in the builder, with /proc, /dev and the host's DNS, in a mount namespace
# of its own (the mounts end with it), with npm trusting what the host trusts.
code_server_in_builder() {
  unshare --mount --propagation private -- bash -c '
    set -e
    b=$1; shift
    mount -t proc proc "$b/proc"
    mount --rbind /dev "$b/dev"
    mount -t tmpfs tmpfs "$b/tmp"
    exec chroot "$b" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
      NODE_EXTRA_CA_CERTS=/etc/build-ca.pem npm_config_cafile=/etc/build-ca.pem \
      npm_config_nodedir=/usr/local npm_config_update_notifier=false npm_config_fund=false \
      npm_config_audit=false "$@"' bash "$builder" "$@"
}

build() {
  local version arch tgz builder=$PWD/builder cs=/usr/local/lib/node_modules/code-server
  version=$(chroot "$rootfs" /usr/local/bin/node --version)
  [[ $version == v24.* ]] || die "code-server: NODE_BIN is Node $version; code-server $code_server_version needs Node 24"
  arch=$(chroot "$rootfs" /usr/local/bin/node -p process.arch)
  command -v npm >/dev/null || die "code-server: needs npm on this machine to fetch packages"

  # npm, laid out as `npm install -g` would, less its documentation (as the node24 image).
  tgz=$(code_server_fetch "npm@$npm_version" "$npm_integrity")
  mkdir npm && tar -xzf "$tgz" -C npm --no-same-owner --no-same-permissions
  rm -rf npm/package/docs npm/package/man
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  mv npm/package "$rootfs/usr/local/lib/node_modules/npm"
  chmod 0755 "$rootfs"/usr/local/lib/node_modules/npm/bin/{npm,npx}-cli.js
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

  # Node's C headers, from the npm package of the very build NODE_BIN is.
  tgz=$(code_server_fetch "node-linux-$arch@${version#v}" "")
  mkdir headers && tar -xzf "$tgz" -C headers --no-same-owner package/include/node package/bin/node
  cmp -s headers/package/bin/node "$rootfs/usr/local/bin/node" ||
    die "code-server: node-linux-$arch@${version#v} from the registry is not NODE_BIN; its headers may not match"

  # The builder: Debian bookworm (build.sh's suite and mirror) with the compilers, Node and npm.
  echo "code-server: builder with ${build_packages[*]}" >&2
  mmdebstrap --mode=root --variant=minbase --format=directory \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --include="$(IFS=,; echo "${build_packages[*]}")" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$suite" "$builder" "${sources[@]}" >&2
  cp -a "$rootfs/usr/local/." "$builder/usr/local/"
  cp -R headers/package/include/node "$builder/usr/local/include/"
  cp /etc/resolv.conf "$builder/etc/resolv.conf"
  cp /etc/hosts "$builder/etc/hosts"
  { # npm's cafile replaces Node's roots, so it gets them too (as cluster/images/platform.sh).
    "$rootfs/usr/local/bin/node" -e 'process.stdout.write(require("node:tls").rootCertificates.join("\n") + "\n")'
    if [[ -r /etc/ssl/certs/ca-certificates.crt ]]; then cat /etc/ssl/certs/ca-certificates.crt; fi
    if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -r $NODE_EXTRA_CA_CERTS ]]; then cat "$NODE_EXTRA_CA_CERTS"; fi
  } >"$builder/etc/build-ca.pem"

  # code-server, as its postinstall.sh installs it, on its shrinkwraps.
  tgz=$(code_server_fetch "code-server@$code_server_version" "$code_server_integrity")
  mkdir -p "$builder$cs"
  tar -xzf "$tgz" -C "$builder$cs" --strip-components=1 --no-same-owner --no-same-permissions
  code_server_in_builder bash -euc '
    cd '"$cs"'
    # Its own dependencies; --ignore-scripts skips postinstall.sh (done below, pinned), then
    # argon2 install step (it picks its bundled linux prebuild).
    npm ci --omit=dev --ignore-scripts --no-audit
    npm rebuild --foreground-scripts argon2
    cd lib/vscode
    npm install --omit=dev --foreground-scripts
    cd extensions
    npm install --omit=dev --foreground-scripts
  ' >&2
  # postinstall.sh also links bin/remote-cli/code-server and bin/helpers/browser.sh to their Linux
  # scripts; the package already ships both as copies of them.
  cmp -s "$builder$cs/lib/vscode/bin/remote-cli/code-server" "$builder$cs/lib/vscode/bin/remote-cli/code-linux.sh" &&
    cmp -s "$builder$cs/lib/vscode/bin/helpers/browser.sh" "$builder$cs/lib/vscode/bin/helpers/browser-linux.sh" ||
    die "code-server: lib/vscode/bin does not hold the Linux scripts postinstall.sh links"
  # Compilers' leftovers: object files and dependency lists next to each built module.
  find "$builder$cs" -type d \( -name obj.target -o -name .deps \) -path '*/build/*' -prune \
    -exec rm -rf {} +
  find "$builder$cs" -type f -path '*/build/*' \( -name '*.o' -o -name '*.a' -o -name Makefile -o -name '*.mk' \) -delete
  mv "$builder$cs" "$rootfs$cs"
  ln -s ../lib/node_modules/code-server/out/node/entry.js "$rootfs/usr/local/bin/code-server"

  # The official image's user: coder, 1000:1000, /home/coder, bash.
  chroot "$rootfs" groupadd --gid 1000 coder
  chroot "$rootfs" useradd --uid 1000 --gid coder --shell /bin/bash --create-home coder
  rm -f "$rootfs"/var/log/lastlog "$rootfs"/var/log/faillog

  # Smoke test, with the image's config (without it code-server writes a default one, with a
  # generated password, to ~/.config), as root in the rootfs; nothing it leaves in /root is kept.
  local says
  says=$(chroot "$rootfs" /usr/bin/env CODE_SERVER_CONFIG=/etc/code-server/config.yaml code-server --version)
  rm -rf "$rootfs"/root/.config "$rootfs"/root/.local "$rootfs"/root/.cache "$rootfs"/root/.npm
  echo "code-server: $says, on node $version" >&2
  [[ $says == "$code_server_version "* ]] ||
    die "code-server: code-server --version does not print $code_server_version"
}
