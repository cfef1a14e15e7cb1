#!/usr/bin/python3
"""Starts the classic Jupyter Notebook server like Jupyter Docker Stacks' start-notebook.py.

Docker Stacks run JupyterLab on jupyter_server 2, and Templates written for them pass its options
(--ServerApp.port=8888, --IdentityProvider.token=, ...). Debian bookworm has only Notebook 6.4,
whose server is NotebookApp: this translates those options into NotebookApp ones and runs
`jupyter notebook` with them, after NOTEBOOK_ARGS (split like a shell would) as in Docker Stacks.
"""
import os
import shlex
import sys

# jupyter_server 2 option -> Notebook 6.4 option (None: no equivalent, dropped with a warning).
RENAMED = {
    "IdentityProvider.token": "NotebookApp.token",
    "PasswordIdentityProvider.hashed_password": "NotebookApp.password",
    "PasswordIdentityProvider.password_required": "NotebookApp.password_required",
    "PasswordIdentityProvider.allow_password_change": "NotebookApp.allow_password_change",
    "ServerApp.root_dir": "NotebookApp.notebook_dir",
    "ServerApp.preferred_dir": None,
    "ServerApp.jpserver_extensions": None,
}
DROPPED_CLASSES = ("LabApp.", "LabServerApp.", "ExtensionApp.", "ServerApp.jpserver_extensions")


def translate(name):
    """The NotebookApp name of a Class.trait option, or None to drop it."""
    if name in RENAMED:
        return RENAMED[name]
    if name.startswith(DROPPED_CLASSES):
        return None
    if name.startswith("ServerApp."):
        return "NotebookApp." + name[len("ServerApp."):]
    return name


def convert(args):
    out = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("--") or "." not in arg.split("=", 1)[0]:
            out.append(arg)
            continue
        name, eq, value = arg[2:].partition("=")
        has_value = bool(eq)
        if not has_value and i < len(args) and not args[i].startswith("--"):
            value, has_value = args[i], True  # the "--Class.trait value" form
            i += 1
        new = translate(name)
        if new is None:
            print(f"start-notebook.py: ignoring --{name} (no such option in Notebook 6.4)",
                  file=sys.stderr)
            continue
        out.append(f"--{new}={value}" if has_value else f"--{new}")
    return out


def main():
    command = ["jupyter", "notebook"]
    wanted = os.environ.get("DOCKER_STACKS_JUPYTER_CMD", "notebook")
    if wanted not in ("notebook", "nbclassic", "lab", "server"):
        sys.exit(f"start-notebook.py: DOCKER_STACKS_JUPYTER_CMD={wanted} is not available")
    if "JUPYTERHUB_API_TOKEN" in os.environ:
        print("start-notebook.py: JupyterHub single-user mode is not available in this image; "
              "starting the notebook server", file=sys.stderr)
    args = shlex.split(os.environ.get("NOTEBOOK_ARGS", "")) + sys.argv[1:]
    command += convert(args)
    print("start-notebook.py: running " + shlex.join(command), file=sys.stderr, flush=True)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
