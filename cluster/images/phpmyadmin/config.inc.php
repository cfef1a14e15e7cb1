<?php
/**
 * phpMyAdmin configuration of Userland's phpmyadmin image, from the environment like the official
 * phpmyadmin image's (PMA_HOST, PMA_USER, ...). Replaces Debian's /etc/phpmyadmin/config.inc.php
 * (dbconfig-common is not used). Per-site additions: /etc/phpmyadmin/config.user.inc.php and
 * /etc/phpmyadmin/conf.d/*.php.
 *
 * With PMA_USER (and PMA_PASSWORD) set, phpMyAdmin logs everyone in as that user ("config"
 * authentication): only for a server that nobody but its one student can reach, e.g. behind
 * Userland's proxy, which has already authenticated them. Without it, a login form ("cookie").
 */

declare(strict_types=1);

// An environment variable, or the contents of the file named by NAME_FILE; null if neither.
$pmaEnv = static function (string $name): ?string {
    $value = getenv($name);
    if ($value !== false && $value !== '') {
        return $value;
    }
    $file = getenv($name . '_FILE');
    if ($file !== false && $file !== '' && is_readable($file)) {
        return rtrim((string) file_get_contents($file), "\r\n");
    }
    return null;
};
$pmaList = static fn (?string $value): array => $value === null ? [] : array_map('trim', explode(',', $value));

// The secret that encrypts cookies: 32 random bytes per container, made by docker-entrypoint.sh
// (or here, if phpMyAdmin runs without it).
$pmaRuntime = $pmaEnv('PMA_RUNTIME_DIR') ?? sys_get_temp_dir() . '/phpmyadmin';
$pmaSecretFile = $pmaRuntime . '/blowfish_secret';
$pmaSecret = @file_get_contents($pmaSecretFile);
if ($pmaSecret === false || strlen(trim($pmaSecret)) !== 64) {
    @mkdir($pmaRuntime . '/tmp', 0700, true);
    $pmaTemp = $pmaSecretFile . '.' . bin2hex(random_bytes(4));
    file_put_contents($pmaTemp, bin2hex(random_bytes(32)));
    if (! @link($pmaTemp, $pmaSecretFile)) { // the first writer wins; everyone reads its secret
        clearstatcache();
    }
    @unlink($pmaTemp);
    $pmaSecret = (string) file_get_contents($pmaSecretFile);
}
$cfg['blowfish_secret'] = (string) hex2bin(trim($pmaSecret));
$cfg['TempDir'] = $pmaRuntime . '/tmp';

// Servers: PMA_HOSTS (comma-separated) or PMA_HOST, default the MariaDB in the same pod.
$pmaHosts = $pmaList($pmaEnv('PMA_HOSTS')) ?: [$pmaEnv('PMA_HOST') ?? '127.0.0.1'];
$pmaPorts = $pmaList($pmaEnv('PMA_PORTS')) ?: [$pmaEnv('PMA_PORT')];
$pmaSockets = $pmaList($pmaEnv('PMA_SOCKETS')) ?: [$pmaEnv('PMA_SOCKET')];
$pmaVerboses = $pmaList($pmaEnv('PMA_VERBOSES')) ?: [$pmaEnv('PMA_VERBOSE')];
$pmaUser = $pmaEnv('PMA_USER');
$pmaPassword = $pmaEnv('PMA_PASSWORD') ?? '';

$i = 0;
foreach ($pmaHosts as $n => $host) {
    $i++;
    $cfg['Servers'][$i]['host'] = $host;
    $cfg['Servers'][$i]['compress'] = false;
    $cfg['Servers'][$i]['AllowNoPassword'] = true;
    if (($pmaPorts[$n] ?? null) !== null && $pmaPorts[$n] !== '') {
        $cfg['Servers'][$i]['port'] = $pmaPorts[$n];
    }
    if (($pmaSockets[$n] ?? null) !== null && $pmaSockets[$n] !== '') {
        $cfg['Servers'][$i]['socket'] = $pmaSockets[$n];
    }
    if (($pmaVerboses[$n] ?? null) !== null && $pmaVerboses[$n] !== '') {
        $cfg['Servers'][$i]['verbose'] = $pmaVerboses[$n];
    }
    if ($pmaUser !== null) {
        $cfg['Servers'][$i]['auth_type'] = 'config';
        $cfg['Servers'][$i]['user'] = $pmaUser;
        $cfg['Servers'][$i]['password'] = $pmaPassword;
    } else {
        $cfg['Servers'][$i]['auth_type'] = 'cookie';
    }
    // phpMyAdmin configuration storage (bookmarks, history, ...), as in the official image.
    foreach (['controlhost' => 'PMA_CONTROLHOST', 'controlport' => 'PMA_CONTROLPORT',
              'controluser' => 'PMA_CONTROLUSER', 'controlpass' => 'PMA_CONTROLPASS'] as $key => $var) {
        if ($pmaEnv($var) !== null) {
            $cfg['Servers'][$i][$key] = $pmaEnv($var);
        }
    }
    if ($pmaEnv('PMA_PMADB') !== null) {
        $cfg['Servers'][$i]['pmadb'] = $pmaEnv('PMA_PMADB');
        foreach (['bookmarktable' => 'bookmark', 'relation' => 'relation', 'table_info' => 'table_info',
                  'table_coords' => 'table_coords', 'pdf_pages' => 'pdf_pages', 'column_info' => 'column_info',
                  'history' => 'history', 'table_uiprefs' => 'table_uiprefs', 'tracking' => 'tracking',
                  'userconfig' => 'userconfig', 'recent' => 'recent', 'favorite' => 'favorite',
                  'users' => 'users', 'usergroups' => 'usergroups', 'navigationhiding' => 'navigationhiding',
                  'savedsearches' => 'savedsearches', 'central_columns' => 'central_columns',
                  'designer_settings' => 'designer_settings', 'export_templates' => 'export_templates'] as $key => $table) {
            $cfg['Servers'][$i][$key] = 'pma__' . $table;
        }
    }
}
$cfg['ServerDefault'] = 1;

if ($pmaEnv('PMA_ARBITRARY') === '1') {
    $cfg['AllowArbitraryServer'] = true;
}
if ($pmaEnv('PMA_ABSOLUTE_URI') !== null) {
    $cfg['PmaAbsoluteUri'] = $pmaEnv('PMA_ABSOLUTE_URI');
}
if ($pmaEnv('PMA_QUERYHISTORYDB') !== null) {
    $cfg['QueryHistoryDB'] = filter_var($pmaEnv('PMA_QUERYHISTORYDB'), FILTER_VALIDATE_BOOLEAN);
}
if ($pmaEnv('PMA_QUERYHISTORYMAX') !== null) {
    $cfg['QueryHistoryMax'] = (int) $pmaEnv('PMA_QUERYHISTORYMAX');
}
if ($pmaEnv('MAX_EXECUTION_TIME') !== null) {
    $cfg['ExecTimeLimit'] = (int) $pmaEnv('MAX_EXECUTION_TIME');
}
if ($pmaEnv('MEMORY_LIMIT') !== null) {
    $cfg['MemoryLimit'] = $pmaEnv('MEMORY_LIMIT');
}
$cfg['UploadDir'] = $pmaEnv('PMA_UPLOADDIR') ?? '';
$cfg['SaveDir'] = $pmaEnv('PMA_SAVEDIR') ?? '';

// Nothing here reaches the Internet (NetworkPolicies): no version check, no error reports.
$cfg['VersionCheck'] = false;
$cfg['SendErrorReports'] = 'never';

if (is_readable('/etc/phpmyadmin/config.user.inc.php')) {
    include '/etc/phpmyadmin/config.user.inc.php';
}
foreach (glob('/etc/phpmyadmin/conf.d/*.php') ?: [] as $pmaFile) {
    include $pmaFile;
}
