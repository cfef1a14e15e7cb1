# Stands in for Jupyter Docker Stacks' quay.io/jupyter/minimal-notebook (which cannot be pulled
# here), so that deploy/jupyter.yaml's Template runs unchanged on it: the user jovyan (uid 1000,
# primary group users, gid 100, home /home/jovyan, work dir /home/jovyan/work, bash), tini as PID 1,
# CMD start-notebook.py, the server on 0.0.0.0:8888 at the root path, /api for the readiness probe.
#
#   bash cluster/images/build.sh jupyter
#
# The server is Debian bookworm's classic Jupyter Notebook 6.4 (jupyter-notebook, python3-notebook)
# with the Python 3.11 kernel (python3-ipykernel 6.17). Debian bookworm has no JupyterLab and no
# Notebook 7, so start-notebook.py runs `jupyter notebook` and translates the jupyter_server 2
# options a Template passes (--ServerApp.*, --IdentityProvider.token,
# --PasswordIdentityProvider.hashed_password) into their NotebookApp equivalents.
#
# No token and no password (/etc/jupyter/jupyter_notebook_config.py): Userland's proxy has already
# signed the student in (it sends X-User) and NetworkPolicies keep everyone else away from the
# pod, so the server accepts any Host and any Origin. It must never be reachable otherwise: anyone
# who reaches port 8888 can run code as jovyan.
#
# Differences from minimal-notebook, on purpose or because Debian has no newer packages:
#   - classic Notebook 6.4 UI (/tree, /notebooks/...), not JupyterLab 4 (/lab); no jupyterhub-
#     singleuser, no conda/mamba, no nbclassic, no Notebook 7; DOCKER_STACKS_JUPYTER_CMD=lab|notebook|
#     nbclassic|server all start it.
#   - Debian's Python 3.11 (not 3.12) at /usr/bin/python3; pip installs go to ~/.local (the system
#     site-packages are root's; PIP_BREAK_SYSTEM_PACKAGES=1 lets pip do that on Debian, PEP 668).
#   - no start.sh, no before-notebook.d hooks, no sudo/NB_USER/NB_UID/CHOWN_HOME switching: the
#     image runs as uid 1000 and expects to be started as it (runAsUser 1000, runAsGroup 100).
#   - no git, vim, nano, unzip, LaTeX or pandoc (nbconvert's HTML/notebook exports work, PDF not).
#   - one layer, Debian packages from today's bookworm mirror, no docs, manuals or translations.
packages=(
  jupyter-notebook python3-notebook python3-ipykernel
  jupyter-client jupyter-nbconvert # the `jupyter kernelspec|run|kernel|nbconvert` commands
  python3-pip
  tini ca-certificates
)
files=(
  start-notebook.py:/usr/local/bin/start-notebook.py
  jupyter_notebook_config.py:/etc/jupyter/jupyter_notebook_config.py
)
entrypoint=(tini -g --)
cmd=(start-notebook.py)
user=1000:100
workdir=/home/jovyan
env=(
  NB_USER=jovyan NB_UID=1000 NB_GID=100
  HOME=/home/jovyan SHELL=/bin/bash
  LANG=C.UTF-8 LC_ALL=C.UTF-8
  PIP_BREAK_SYSTEM_PACKAGES=1 PIP_NO_CACHE_DIR=1
  JUPYTER_PORT=8888
  # ipykernel's debugger (debugpy) warns about frozen modules in the server too; see build().
  PYDEVD_DISABLE_FILE_VALIDATION=1
)
ports=(8888/tcp)

build() {
  # jovyan as in docker-stacks: uid 1000 in the existing group users (gid 100). Written directly
  # (no passwd package in this image); home and work are group-writable and setgid, so a volume
  # with fsGroup 100 and the image's own directories behave the same.
  echo "jovyan:x:1000:100::/home/jovyan:/bin/bash" >>"$rootfs/etc/passwd"
  if [[ -f $rootfs/etc/shadow ]]; then echo "jovyan:*:20454:0:99999:7:::" >>"$rootfs/etc/shadow"; fi
  mkdir -p "$rootfs/home/jovyan/work"
  chown -R 1000:100 "$rootfs/home/jovyan"
  chmod 2775 "$rootfs/home/jovyan" "$rootfs/home/jovyan/work"

  # The kernel with frozen modules off, as ipykernel >= 6.22 writes its spec: otherwise its
  # debugger (debugpy) warns at every kernel start that breakpoints may be missed.
  chroot "$rootfs" python3 - <<'PY'
import json
path = "/usr/share/jupyter/kernels/python3/kernel.json"
spec = json.load(open(path))
if "-Xfrozen_modules=off" not in spec["argv"]:
    spec["argv"].insert(1, "-Xfrozen_modules=off")
json.dump(spec, open(path, "w"), indent=1)
PY

  # MathJax ships a second, unminified copy of itself that nothing loads.
  rm -rf "$rootfs/usr/share/javascript/mathjax/unpacked"

  # Smoke tests: the server's version, the kernel spec, and Python itself.
  echo "jupyter: notebook $(chroot "$rootfs" jupyter notebook --version)," \
    "ipykernel $(chroot "$rootfs" python3 -c 'import ipykernel; print(ipykernel.__version__)')," \
    "$(chroot "$rootfs" python3 --version)"
  chroot "$rootfs" jupyter kernelspec list | grep -q python3 || die "jupyter: no python3 kernel"
  chroot "$rootfs" python3 -m py_compile /usr/local/bin/start-notebook.py
  # What the smoke tests left behind (root's ~/.local, ~/.jupyter, byte code of the script).
  rm -rf "$rootfs/usr/local/bin/__pycache__"
  find "$rootfs/tmp" "$rootfs/root" -mindepth 1 -delete
}
