#!/bin/bash
# The official mariadb image's healthcheck.sh, for the checks Templates use:
#   healthcheck.sh [--datadir=DIR] [--defaults-file=F | --defaults-extra-file=F | --no-defaults]
#                  [--su-mysql] --connect | --innodb_initialized | --innodb_buffer_pool_loaded ...
# Every check given must pass (exit 0). --connect passes when the server answers on TCP (even
# with "access denied"); the others log in as the user healthcheck, with the password the
# entrypoint wrote to $DATADIR/.my-healthcheck.cnf when it initialised the data directory.
set -o pipefail
datadir=/var/lib/mysql
defaults=()
tests=()
for arg; do
  case $arg in
    --datadir=*) datadir=${arg#--datadir=} ;;
    --defaults-file=* | --defaults-extra-file=*) defaults=("$arg") ;;
    --no-defaults) defaults=(--no-defaults) ;;
    --su-mysql | --su=*) ;; # this image already runs as mysql
    --connect | --innodb_initialized | --innodb_buffer_pool_loaded) tests+=("${arg#--}") ;;
    *)
      echo "healthcheck.sh: unknown option $arg" >&2
      exit 1
      ;;
  esac
done
((${#tests[@]})) || tests=(connect)
if ((${#defaults[@]} == 0)) && [[ -r $datadir/.my-healthcheck.cnf ]]; then
  defaults=("--defaults-extra-file=$datadir/.my-healthcheck.cnf")
fi

sql() { mariadb "${defaults[@]}" --skip-ssl --skip-column-names --batch -e "$1"; }

for t in "${tests[@]}"; do
  case $t in
    connect)
      out=$(mariadb "${defaults[@]}" --skip-ssl -h localhost --protocol=tcp -e 'SELECT 1' 2>&1)
      if grep -qF "Can't connect" <<<"$out"; then
        echo "healthcheck.sh: connect: $out" >&2
        exit 1
      fi
      ;;
    innodb_initialized)
      [[ $(sql "SELECT 1 FROM information_schema.ENGINES WHERE engine = 'InnoDB' AND support IN ('YES', 'DEFAULT', 'ENABLED')") == 1 ]] || {
        echo "healthcheck.sh: innodb_initialized: InnoDB is not ready" >&2
        exit 1
      }
      ;;
    innodb_buffer_pool_loaded)
      [[ $(sql "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_LOAD_STATUS'") == "Buffer pool(s) load completed"* ]] || {
        echo "healthcheck.sh: innodb_buffer_pool_loaded: not loaded" >&2
        exit 1
      }
      ;;
  esac
done
exit 0
