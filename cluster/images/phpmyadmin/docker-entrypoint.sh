#!/bin/sh
# The entrypoint of Userland's phpmyadmin image. `phpmyadmin-server` (the default command; the
# official image's `apache2-foreground` is the same here, and arguments starting with "-" are
# added to it as PHP options) serves phpMyAdmin at the root path on 0.0.0.0:$APACHE_PORT with
# PHP's built-in web server and $PHP_CLI_SERVER_WORKERS worker processes. Anything else is run
# as a command.
set -eu
# Run as phpmyadmin-server (a link to this script), it is that command.
if [ "$(basename "$0")" = phpmyadmin-server ]; then set -- phpmyadmin-server "$@"; fi
if [ "${1#-}" != "$1" ]; then set -- phpmyadmin-server "$@"; fi
case ${1:-} in
  phpmyadmin-server | apache2-foreground) shift ;;
  *) exec "$@" ;;
esac

# Per container: the cookie-encryption secret config.inc.php reads, its cache and PHP's sessions.
runtime=${PMA_RUNTIME_DIR:-/tmp/phpmyadmin}
export PMA_RUNTIME_DIR="$runtime"
(umask 077 && mkdir -p "$runtime/tmp" "$runtime/sessions")
if [ ! -s "$runtime/blowfish_secret" ]; then
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$runtime/blowfish_secret")
fi

port=${APACHE_PORT:-80}
if [ "$(id -u)" != 0 ] && [ -r /proc/sys/net/ipv4/ip_unprivileged_port_start ] &&
  [ "$port" -lt "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" ]; then
  echo "phpmyadmin: uid $(id -u) may not listen on port $port here" \
    "(net.ipv4.ip_unprivileged_port_start=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start));" \
    "set APACHE_PORT=8080 (and the container port), or that sysctl to 0" >&2
  exit 1
fi
export PHP_CLI_SERVER_WORKERS="${PHP_CLI_SERVER_WORKERS:-4}"
echo "phpmyadmin: serving phpMyAdmin on http://0.0.0.0:$port/ ($PHP_CLI_SERVER_WORKERS workers)," \
  "database server ${PMA_HOSTS:-${PMA_HOST:-127.0.0.1}}" >&2
exec php \
  -d "upload_max_filesize=${UPLOAD_LIMIT:-2048K}" -d "post_max_size=${UPLOAD_LIMIT:-2048K}" \
  -d "memory_limit=${MEMORY_LIMIT:-512M}" -d "max_execution_time=${MAX_EXECUTION_TIME:-600}" \
  -d "session.save_path=$runtime/sessions" -d session.gc_probability=1 \
  -d "sys_temp_dir=$runtime/tmp" -d "upload_tmp_dir=$runtime/tmp" \
  -d expose_php=0 -d display_errors=0 -d log_errors=1 \
  -d opcache.enable_cli=1 \
  "$@" \
  -S "0.0.0.0:$port" -t /usr/share/phpmyadmin /usr/local/lib/phpmyadmin/router.php
