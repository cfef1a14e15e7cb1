# Stands in for Docker Hub's phpmyadmin image (which cannot be pulled here), so that the
# phpmyadmin container of deploy/phpmyadmin-mariadb.yaml runs unchanged on it: phpMyAdmin 5.2 from
# Debian bookworm (phpmyadmin, PHP 8.2), served at the root path on port 80 (APACHE_PORT changes
# it), configured from the official image's variables (PMA_HOST, PMA_PORT, PMA_USER,
# PMA_PASSWORD, ...; see config.inc.php), running as www-data (uid 33, gid 33) rather than root.
#
#   bash cluster/images/build.sh phpmyadmin
#
# Port 80 as non-root: containerd's CRI (enable_unprivileged_ports, on by default since
# containerd 2.0 and set in cluster/node/config.ts) gives every pod
# net.ipv4.ip_unprivileged_port_start=0. Elsewhere set APACHE_PORT=8080 (the entrypoint says so).
#
# The web server is PHP's built-in one (php -S) with PHP_CLI_SERVER_WORKERS processes (4 unless
# set) and a router that keeps phpMyAdmin's libraries, templates and setup out of reach, as the
# official image's Apache configuration does: one student per server, no Apache needed.
#
# Differences from phpmyadmin:5.2, on purpose or because Debian has no newer packages:
#   - PHP's built-in web server instead of Apache + mod_php; no /etc/apache2 or .htaccess.
#   - Debian's phpMyAdmin 5.2.1 with Debian's PHP 8.2 (mysqli, mbstring, xml, zip, bz2, opcache;
#     no gd: no PNG export of GIS data, no curl: no version check or error reports, which need
#     the Internet anyway and are off).
#   - PMA_HOST defaults to 127.0.0.1 (the MariaDB in the same pod), not "db".
#   - the blowfish secret (cookie encryption) is made per container at start, in
#     $PMA_RUNTIME_DIR (/tmp/phpmyadmin), with the temp dir and PHP sessions.
#   - supported variables: PMA_HOST(S), PMA_PORT(S), PMA_SOCKET(S), PMA_VERBOSE(S), PMA_USER,
#     PMA_PASSWORD(_FILE), PMA_ARBITRARY, PMA_ABSOLUTE_URI, PMA_CONTROLHOST, PMA_CONTROLPORT,
#     PMA_CONTROLUSER, PMA_CONTROLPASS(_FILE), PMA_PMADB, PMA_QUERYHISTORYDB,
#     PMA_QUERYHISTORYMAX, PMA_UPLOADDIR, PMA_SAVEDIR, UPLOAD_LIMIT, MEMORY_LIMIT,
#     MAX_EXECUTION_TIME, APACHE_PORT, PHP_CLI_SERVER_WORKERS; /etc/phpmyadmin/config.user.inc.php
#     and /etc/phpmyadmin/conf.d/*.php are read if present. No PMA_SSL*, no TZ handling; PHP
#     never sends its version (as with HIDE_PHP_VERSION).
#   - no local documentation (the "?" links point at docs.phpmyadmin.net instead).
packages=(
  phpmyadmin dbconfig-no-thanks
  php8.2-cli php8.2-mysql php8.2-mbstring php8.2-xml php8.2-zip php8.2-bz2 php8.2-opcache
)
files=(
  config.inc.php:/etc/phpmyadmin/config.inc.php
  router.php:/usr/local/lib/phpmyadmin/router.php
  docker-entrypoint.sh:/usr/local/bin/docker-entrypoint.sh
)
entrypoint=(docker-entrypoint.sh)
cmd=(phpmyadmin-server)
user=33:33
ports=(80/tcp)
env=(
  LANG=C.UTF-8
  PMA_HOST=127.0.0.1
  APACHE_PORT=80 PHP_CLI_SERVER_WORKERS=4
  UPLOAD_LIMIT=2048K MEMORY_LIMIT=512M MAX_EXECUTION_TIME=600
)

build() {
  # The secret Debian's postinst made (every container makes its own), dbconfig leftovers and
  # the config directories of a local setup, which this image does not use.
  rm -rf "$rootfs/var/lib/phpmyadmin" "$rootfs/etc/phpmyadmin/config-db.php" \
    "$rootfs/etc/phpmyadmin/htpasswd.setup" "$rootfs/etc/dbconfig-common/phpmyadmin.conf"
  ln -s docker-entrypoint.sh "$rootfs/usr/local/bin/phpmyadmin-server"
  chmod 0644 "$rootfs/etc/phpmyadmin/config.inc.php"
  rm -f "$rootfs"/var/log/lastlog "$rootfs"/var/log/faillog

  echo "phpmyadmin: $(chroot "$rootfs" php -r 'echo PHP_VERSION;')," \
    "phpMyAdmin $(sed -n "s/.*VERSION = '\([^']*\)'.*/\1/p" \
      "$rootfs/usr/share/phpmyadmin/libraries/classes/Version.php")"
  local modules
  modules=$(chroot "$rootfs" php -m)
  for m in mysqli mbstring xml zip bz2 "Zend OPcache" sodium; do
    grep -qx "$m" <<<"$modules" || die "phpmyadmin: PHP has no $m"
  done
  chroot "$rootfs" php -l /etc/phpmyadmin/config.inc.php >/dev/null
  chroot "$rootfs" php -l /usr/local/lib/phpmyadmin/router.php >/dev/null
}
