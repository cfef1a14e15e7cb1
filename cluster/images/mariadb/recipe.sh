# Stands in for Docker Hub's mariadb image (which cannot be pulled here), so that the mariadb
# container of deploy/phpmyadmin-mariadb.yaml runs unchanged on it: MariaDB from Debian bookworm
# (mariadb-server, 10.11 LTS), the user mysql as uid 999 / gid 999, data in /var/lib/mysql
# (initialised on first start from MARIADB_* variables), the socket in /run/mysqld, port 3306,
# docker-entrypoint.sh (arguments starting with "-" are mariadbd options) and healthcheck.sh.
#
#   bash cluster/images/build.sh mariadb
#
# Runs as uid 999 (non-root) by default; started as root it prepares the data directory and drops
# to mysql with setpriv, as the official image does with gosu. As any other uid it needs a data
# directory it may write (local-path volumes are mode 0777; otherwise fsGroup 999).
#
# docker-entrypoint.sh reads, like the official image (MYSQL_* names work too, and *_FILE forms):
#   MARIADB_ROOT_PASSWORD, MARIADB_ROOT_PASSWORD_HASH, MARIADB_RANDOM_ROOT_PASSWORD,
#   MARIADB_ALLOW_EMPTY_ROOT_PASSWORD (one of these is needed to initialise), MARIADB_ROOT_HOST
#   (default %), MARIADB_DATABASE, MARIADB_USER, MARIADB_PASSWORD, MARIADB_PASSWORD_HASH,
#   MARIADB_INITDB_SKIP_TZINFO, MARIADB_HEALTHCHECK_GRANTS, MARIADB_MYSQL_LOCALHOST_USER,
#   MARIADB_MYSQL_LOCALHOST_GRANTS, and runs /docker-entrypoint-initdb.d/*.{sh,sql,sql.gz}.
# healthcheck.sh knows --connect, --innodb_initialized and --innodb_buffer_pool_loaded.
#
# Differences from mariadb:11.4, on purpose or because Debian has no newer packages:
#   - MariaDB 10.11 (Debian bookworm), not 11.4: a data directory written by 11.4 cannot be opened
#     (downgrades are not supported; the entrypoint says so instead of starting). Volumes made with
#     the public image must be dumped and re-imported, or started with the public image.
#   - no MARIADB_AUTO_UPGRADE (the image's MariaDB is pinned with it; mariadb-upgrade is there),
#     no MARIADB_REPLICATION_*/MARIADB_MASTER_HOST, no .sql.xz/.sql.zst init files, no
#     healthcheck.sh --galera_online/--replication/--mariadbupgrade.
#   - Debian's configuration (/etc/mysql/mariadb.conf.d/50-server.cnf: utf8mb4, pid file in
#     /run/mysqld), plus 60-container.cnf: listens on every address like the official image (a
#     Template narrows it with --bind-address=127.0.0.1), no DNS look-ups, errors to stderr.
#   - galera, perl tools and rsync/socat come along as Debian's mariadb-server dependencies.
packages=(mariadb-server tzdata)
# The user and group exist before mariadb-server's preinst runs, so it keeps them (uid 999, the
# official image's) instead of picking a system uid.
mmdebstrap_args=(
  --essential-hook='echo "mysql:x:999:" >>"$1/etc/group"
    echo "mysql:x:999:999:MariaDB Server:/nonexistent:/bin/false" >>"$1/etc/passwd"'
)
files=(
  docker-entrypoint.sh:/usr/local/bin/docker-entrypoint.sh
  healthcheck.sh:/usr/local/bin/healthcheck.sh
  60-container.cnf:/etc/mysql/mariadb.conf.d/60-container.cnf
)
entrypoint=(docker-entrypoint.sh)
cmd=(mariadbd)
user=999:999
ports=(3306/tcp)
env=(LANG=C.UTF-8)

build() {
  [[ $(chroot "$rootfs" id -u mysql) == 999 && $(chroot "$rootfs" id -g mysql) == 999 ]] ||
    die "mariadb: the mysql user is not 999:999"
  # The data directory Debian's postinst initialised (the entrypoint does it on the volume), and
  # the directories mariadbd writes: 1777 as in the official image, so any uid may run it.
  rm -rf "$rootfs/var/lib/mysql" "$rootfs/docker-entrypoint-initdb.d"
  mkdir -p "$rootfs/var/lib/mysql" "$rootfs/run/mysqld" "$rootfs/docker-entrypoint-initdb.d"
  chown 999:999 "$rootfs/var/lib/mysql" "$rootfs/run/mysqld"
  chmod 1777 "$rootfs/var/lib/mysql" "$rootfs/run/mysqld"
  # Nothing here runs the Debian init script, logrotate, apparmor or systemd.
  rm -rf "$rootfs"/etc/init.d/mariadb "$rootfs"/etc/logrotate.d/mariadb "$rootfs"/etc/apparmor.d \
    "$rootfs"/etc/logcheck "$rootfs"/var/log/mysql
  rm -f "$rootfs"/var/log/lastlog "$rootfs"/var/log/faillog

  echo "mariadb: $(chroot "$rootfs" mariadbd --version)"
}
