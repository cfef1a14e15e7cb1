# System-wide defaults of the classic Jupyter Notebook server in Userland's jupyter image; options
# on the command line (start-notebook.py, a Template's args) override them.
import os

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)

# Reached only through Userland's proxy, at the root of the student's own host name.
c.NotebookApp.ip = "0.0.0.0"
c.NotebookApp.port = int(os.environ.get("JUPYTER_PORT", "8888"))  # as in Docker Stacks
c.NotebookApp.port_retries = 0  # fail rather than listen on a port the probe does not check
c.NotebookApp.base_url = "/"
c.NotebookApp.open_browser = False

# No token and no password: the proxy has already authenticated the student (and sends X-User),
# and NetworkPolicies keep everything but the proxy away from the pod. Any Host and Origin are
# accepted, as the proxy serves the notebook under a host name of its own.
c.NotebookApp.token = ""
c.NotebookApp.password = ""
c.NotebookApp.allow_remote_access = True
c.NotebookApp.allow_origin = "*"
c.NotebookApp.trust_xheaders = True

# As in Jupyter Docker Stacks: terminals run bash, deleted files are gone rather than moved to a
# trash folder (which would fill the volume unseen).
c.NotebookApp.terminado_settings = {"shell_command": ["/bin/bash"]}
c.FileContentsManager.delete_to_trash = False
