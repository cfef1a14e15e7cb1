#!/bin/bash
# The entrypoint of Userland's mariadb image: what the official mariadb image's
# docker-entrypoint.sh does, for Debian's MariaDB 10.11 and a non-root start.
#   - arguments starting with "-" are options of mariadbd;
#   - started as root: creates and chowns the data and socket directories, then runs again as
#     mysql (setpriv instead of gosu);
#   - an empty data directory is initialised: mariadb-install-db, then a server without
#     networking applies MARIADB_* (root password, database, user), the time zones and
#     /docker-entrypoint-initdb.d/*, and stops; then the real server starts (exec).
set -eo pipefail
shopt -s nullglob

log() {
  local type=$1
  shift
  printf '%s [%s] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$type" "$*" >&2
}
note() { log Note "$@"; }
warn() { log Warn "$@"; }
error() {
  log ERROR "$@"
  exit 1
}

# file_env VAR [default]: VAR, MYSQL_VAR (MARIADB_* only), or the contents of the file VAR_FILE.
file_env() {
  local var=$1 def=${2:-} val
  local mysql_var=${var/#MARIADB_/MYSQL_}
  local fvar=${var}_FILE mysql_fvar=${mysql_var}_FILE
  if [[ -n ${!var:-} && -n ${!fvar:-} ]]; then error "both $var and $fvar are set (they are exclusive)"; fi
  val=$def
  if [[ -n ${!var:-} ]]; then
    val=${!var}
  elif [[ -n ${!fvar:-} ]]; then
    val=$(<"${!fvar}")
  elif [[ $mysql_var != "$var" && -n ${!mysql_var:-} ]]; then
    val=${!mysql_var}
  elif [[ $mysql_var != "$var" && -n ${!mysql_fvar:-} ]]; then
    val=$(<"${!mysql_fvar}")
  fi
  export "$var"="$val"
  unset "$fvar" "$mysql_var" "$mysql_fvar"
}

# mariadbd_config NAME ARGS...: the value mariadbd would use for NAME with these arguments.
mariadbd_config() {
  local conf=$1
  shift
  "$@" --verbose --help 2>/dev/null |
    awk -v conf="$conf" '$1 == conf && /^[^ \t]/ { sub(/^[^ \t]+[ \t]+/, ""); print; exit }'
}

# A string as an SQL literal's contents (between single quotes), and a name between backquotes.
sql_string() {
  local s=${1//\\/\\\\}
  s=${s//$'\n'/\\n}
  printf '%s' "${s//\'/\\\'}"
}
sql_name() { printf '%s' "${1//\`/\`\`}"; }

random_password() { head -c 24 /dev/urandom | base64 | tr -d '/+=' | cut -c1-24; }

process_sql() {
  mariadb --no-defaults --protocol=socket --socket="$SOCKET" -uroot --database=mysql "$@"
}

temp_server_start() {
  note "Starting temporary server"
  "$@" --skip-networking --default-time-zone=SYSTEM --socket="$SOCKET" --wsrep_on=OFF \
    --expire-logs-days=0 --skip-slave-start --loose-innodb_buffer_pool_load_at_startup=0 \
    --loose-innodb_buffer_pool_dump_at_shutdown=0 --skip-ssl &
  TEMP_PID=$!
  local _
  for _ in {1..60}; do
    if process_sql -e 'SELECT 1' >/dev/null 2>&1; then
      note "Temporary server started"
      return 0
    fi
    kill -0 "$TEMP_PID" 2>/dev/null || error "the temporary server stopped (see the errors above)"
    sleep 1
  done
  error "the temporary server did not answer within 60 s"
}

temp_server_stop() {
  note "Stopping temporary server"
  kill "$TEMP_PID"
  wait "$TEMP_PID" || error "the temporary server did not stop cleanly"
  note "Temporary server stopped"
}

init_database() {
  file_env MARIADB_ROOT_PASSWORD
  file_env MARIADB_ROOT_PASSWORD_HASH
  file_env MARIADB_RANDOM_ROOT_PASSWORD
  file_env MARIADB_ALLOW_EMPTY_ROOT_PASSWORD
  file_env MARIADB_ROOT_HOST %
  file_env MARIADB_DATABASE
  file_env MARIADB_USER
  file_env MARIADB_PASSWORD
  file_env MARIADB_PASSWORD_HASH
  file_env MARIADB_INITDB_SKIP_TZINFO
  file_env MARIADB_HEALTHCHECK_GRANTS USAGE
  file_env MARIADB_MYSQL_LOCALHOST_USER
  file_env MARIADB_MYSQL_LOCALHOST_GRANTS USAGE

  if [[ -z $MARIADB_ROOT_PASSWORD && -z $MARIADB_ROOT_PASSWORD_HASH &&
    -z $MARIADB_ALLOW_EMPTY_ROOT_PASSWORD && -z $MARIADB_RANDOM_ROOT_PASSWORD ]]; then
    error "Database is uninitialized and password option is not specified." \
      "You need to specify one of MARIADB_ROOT_PASSWORD, MARIADB_ROOT_PASSWORD_HASH," \
      "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and MARIADB_RANDOM_ROOT_PASSWORD"
  fi
  if [[ $MARIADB_USER == root ]]; then
    error "MARIADB_USER=root: use MARIADB_ROOT_PASSWORD for root's password"
  fi
  if [[ -n $MARIADB_USER && -z $MARIADB_PASSWORD && -z $MARIADB_PASSWORD_HASH ]]; then
    warn "MARIADB_USER=$MARIADB_USER has no MARIADB_PASSWORD: it gets an empty one"
  fi

  note "Initializing database files in $DATADIR"
  # The server's own arguments go along (e.g. InnoDB sizes), as in the official image.
  mariadb-install-db --datadir="$DATADIR" --rpm --auth-root-authentication-method=normal \
    --skip-test-db --default-time-zone=SYSTEM --enforce-storage-engine= --skip-log-bin \
    --expire-logs-days=0 --loose-innodb_buffer_pool_load_at_startup=0 \
    --loose-innodb_buffer_pool_dump_at_shutdown=0 "${@:2}" >&2
  note "Database files initialized"

  temp_server_start "$@"

  if [[ -z $MARIADB_INITDB_SKIP_TZINFO ]]; then
    # Named time zones (CONVERT_TZ(..., 'Europe/Berlin')), like the official image.
    mariadb-tzinfo-to-sql --skip-write-binlog /usr/share/zoneinfo 2>/dev/null | process_sql
  fi

  local set_root="" root_identified="" root_password_sql="" root_create="" healthcheck_pw
  if [[ -n $MARIADB_RANDOM_ROOT_PASSWORD && -z $MARIADB_ROOT_PASSWORD && -z $MARIADB_ROOT_PASSWORD_HASH ]]; then
    MARIADB_ROOT_PASSWORD=$(random_password)
    note "GENERATED ROOT PASSWORD: $MARIADB_ROOT_PASSWORD"
  fi
  if [[ -n $MARIADB_ROOT_PASSWORD_HASH ]]; then
    set_root="'$(sql_string "$MARIADB_ROOT_PASSWORD_HASH")'"
    root_identified="IDENTIFIED BY PASSWORD '$(sql_string "$MARIADB_ROOT_PASSWORD_HASH")'"
  elif [[ -n $MARIADB_ROOT_PASSWORD ]]; then
    set_root="PASSWORD('$(sql_string "$MARIADB_ROOT_PASSWORD")')"
    root_identified="IDENTIFIED BY '$(sql_string "$MARIADB_ROOT_PASSWORD")'"
  fi # else MARIADB_ALLOW_EMPTY_ROOT_PASSWORD: root keeps its empty password
  [[ -z $set_root ]] || root_password_sql="SET PASSWORD FOR 'root'@'localhost' = ${set_root};"
  local root_host
  root_host=$(sql_string "$MARIADB_ROOT_HOST")
  if [[ $MARIADB_ROOT_HOST != localhost ]]; then
    root_create="CREATE USER 'root'@'$root_host' ${root_identified};
      GRANT ALL ON *.* TO 'root'@'$root_host' WITH GRANT OPTION;
      GRANT PROXY ON ''@'%' TO 'root'@'$root_host' WITH GRANT OPTION;"
  fi
  local mysql_localhost=""
  if [[ -n $MARIADB_MYSQL_LOCALHOST_USER ]]; then
    mysql_localhost="CREATE USER mysql@localhost IDENTIFIED VIA unix_socket;"
    if [[ $MARIADB_MYSQL_LOCALHOST_GRANTS != USAGE ]]; then
      mysql_localhost+=" GRANT $MARIADB_MYSQL_LOCALHOST_GRANTS ON *.* TO mysql@localhost;"
    fi
  fi
  # The user healthcheck.sh logs in as (with the password in $DATADIR/.my-healthcheck.cnf).
  healthcheck_pw=$(random_password)
  local hc_grants=""
  if [[ $MARIADB_HEALTHCHECK_GRANTS != USAGE ]]; then
    hc_grants="GRANT $MARIADB_HEALTHCHECK_GRANTS ON *.* TO healthcheck@'127.0.0.1';
      GRANT $MARIADB_HEALTHCHECK_GRANTS ON *.* TO healthcheck@'::1';
      GRANT $MARIADB_HEALTHCHECK_GRANTS ON *.* TO healthcheck@localhost;"
  fi

  local db_sql="" user_sql=""
  if [[ -n $MARIADB_DATABASE ]]; then
    note "Creating database ${MARIADB_DATABASE}"
    db_sql="CREATE DATABASE IF NOT EXISTS \`$(sql_name "$MARIADB_DATABASE")\`;"
  fi
  if [[ -n $MARIADB_USER ]]; then
    note "Creating user ${MARIADB_USER}"
    local user_identified
    user_identified="IDENTIFIED BY '$(sql_string "$MARIADB_PASSWORD")'"
    [[ -z $MARIADB_PASSWORD_HASH ]] ||
      user_identified="IDENTIFIED BY PASSWORD '$(sql_string "$MARIADB_PASSWORD_HASH")'"
    user_sql="CREATE USER '$(sql_string "$MARIADB_USER")'@'%' ${user_identified};"
    if [[ -n $MARIADB_DATABASE ]]; then
      note "Giving user ${MARIADB_USER} access to schema ${MARIADB_DATABASE}"
      # "_" is a wildcard in a grant's database name.
      local grant_db
      grant_db=$(sql_name "$MARIADB_DATABASE")
      user_sql+=" GRANT ALL ON \`${grant_db//_/\\_}\`.* TO '$(sql_string "$MARIADB_USER")'@'%';"
    fi
  fi

  process_sql --binary-mode <<-SQL
	SET @@SESSION.SQL_LOG_BIN=0;
	SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');
	DROP USER IF EXISTS root@'127.0.0.1', root@'::1';
	EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\'', @@hostname,'\'');
	${root_password_sql}
	${root_create}
	${mysql_localhost}
	CREATE USER healthcheck@'127.0.0.1' IDENTIFIED BY '${healthcheck_pw}';
	CREATE USER healthcheck@'::1' IDENTIFIED BY '${healthcheck_pw}';
	CREATE USER healthcheck@localhost IDENTIFIED BY '${healthcheck_pw}';
	${hc_grants}
	${db_sql}
	${user_sql}
	SQL
  local port
  port=$(mariadbd_config port "$@")
  (
    umask 077
    printf '[mariadb-client]\nport=%s\nsocket=%s\nuser=healthcheck\npassword=%s\n' \
      "${port:-3306}" "$SOCKET" "$healthcheck_pw" >"$DATADIR/.my-healthcheck.cnf"
  )

  # From here on root has its password: init scripts log in with it.
  local -a client=(mariadb --no-defaults --protocol=socket --socket="$SOCKET" -uroot)
  [[ -z $MARIADB_ROOT_PASSWORD ]] || client+=("--password=$MARIADB_ROOT_PASSWORD")
  local f
  for f in /docker-entrypoint-initdb.d/*; do
    case $f in
      *.sh)
        if [[ -x $f ]]; then
          note "$0: running $f"
          "$f"
        else
          note "$0: sourcing $f"
          # shellcheck disable=SC1090
          . "$f"
        fi
        ;;
      *.sql)
        note "$0: running $f"
        "${client[@]}" ${MARIADB_DATABASE:+"--database=$MARIADB_DATABASE"} <"$f"
        ;;
      *.sql.gz)
        note "$0: running $f"
        gunzip -c "$f" | "${client[@]}" ${MARIADB_DATABASE:+"--database=$MARIADB_DATABASE"}
        ;;
      *) warn "$0: ignoring $f" ;;
    esac
  done

  temp_server_stop
  note "MariaDB init process done. Ready for start up."
}

# A data directory another MariaDB wrote: newer ones cannot be opened by this one.
check_version() {
  local file written ours
  for file in "$DATADIR/mariadb_upgrade_info" "$DATADIR/mysql_upgrade_info"; do
    [[ -f $file ]] || continue
    written=$(tr -cd '0-9.' <"$file" | cut -d. -f1,2)
    ours=$("$1" --version | sed -E 's/.*Ver ([0-9]+\.[0-9]+).*/\1/')
    if [[ -n $written && $(printf '%s\n%s\n' "$written" "$ours" | sort -V | tail -1) != "$ours" ]]; then
      error "$DATADIR was written by MariaDB $written; this image has MariaDB $ours, and" \
        "MariaDB cannot be downgraded. Dump the data with MariaDB $written and import it here."
    fi
    return 0
  done
}

if [[ ${1:0:1} == - ]]; then
  set -- mariadbd "$@"
fi

if [[ $1 == mariadbd || $1 == mysqld ]]; then
  for arg; do
    case $arg in
      --help | -'?' | --version | -V | --print-defaults) exec "$@" ;;
    esac
  done
  DATADIR=$(mariadbd_config datadir "$@")
  DATADIR=${DATADIR%/}
  SOCKET=$(mariadbd_config socket "$@")
  [[ -n $DATADIR && -n $SOCKET ]] || error "mariadbd does not start with these arguments: $*"

  if [[ $(id -u) == 0 ]]; then
    mkdir -p "$DATADIR" "$(dirname "$SOCKET")"
    find "$DATADIR" "$(dirname "$SOCKET")" \! -user mysql -exec chown mysql:mysql {} +
    note "Switching to dedicated user 'mysql'"
    exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
  fi

  if [[ ! -d $DATADIR/mysql ]]; then
    if ! touch "$DATADIR/.write-test" 2>/dev/null; then
      error "$DATADIR is not writable by uid $(id -u) gid $(id -g): mount a volume the" \
        "container's user may write (e.g. securityContext.fsGroup: 999), or start it as root"
    fi
    rm -f "$DATADIR/.write-test"
    init_database "$@"
  else
    check_version "$1"
  fi
fi

exec "$@"
