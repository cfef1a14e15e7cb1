#!/bin/sh
# The entrypoint of the official node images, in effect: arguments that are not a command to run
# (an option such as --version, a script file such as app.js, or nothing found on PATH) are
# arguments for node.
set -e
if [ "${1#-}" != "$1" ] || [ -z "$(command -v "$1")" ] || { [ -f "$1" ] && ! [ -x "$1" ]; }; then
  set -- node "$@"
fi
exec "$@"
