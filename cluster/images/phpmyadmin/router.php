<?php
/**
 * Router of PHP's built-in web server for phpMyAdmin (docker-entrypoint.sh): what the official
 * image's Apache configuration keeps out of reach (libraries, templates, vendor code, setup,
 * SQL scripts, dot files) answers 404; everything else is served as usual (false).
 */
// The path as the server resolves it (not parse_url(), which reads "//x/..." as a host name).
$path = rawurldecode(explode('?', (string) ($_SERVER['REQUEST_URI'] ?? '/'), 2)[0]);
$path = (string) preg_replace('#/+#', '/', '/' . $path);
if (
    str_contains($path, '/.')
    || str_contains($path, "\0")
    || preg_match('#^/(libraries|templates|vendor|setup|sql|locale|examples|test|po|scripts|tmp|doc|config)(/|$)#', $path)
    || preg_match('#^/(autoload|config\.sample\.inc|config\.inc)\.php$#', $path)
    || preg_match('#\.(json|lock|md|twig|sh|dist|neon|sql)$#', $path)
) {
    http_response_code(404);
    header('Content-Type: text/plain');
    echo "Not Found\n";
    return true;
}
return false;
