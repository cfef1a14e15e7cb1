/**
 * The IDEs `npm start` serves with the real node (dev/realPlatform.ts: deploy/'s Templates with
 * locally built images), as a browser knows each has arrived: an element only its own page draws.
 * `npm run bench:signin` and test/node/start.alone.ts sign in to each; both check that this list is
 * every Template the platform installs, so a Template added to `npm start` cannot go untried.
 */
export const IDE_PAGES = [
  { template: "code-server", title: "VS Code", selector: ".monaco-workbench" },
  { template: "jupyter", title: "Jupyter", selector: "#notebook_list" },
  { template: "phpmyadmin", title: "phpMyAdmin", selector: "#pma_navigation" },
] as const;

/**
 * The installed Templates' names that IDE_PAGES lacks, and the IDE_PAGES entries no installed
 * Template has: both empty when every Template is signed in to.
 */
export function idePagesMismatch(installed: string[]): { untried: string[]; notInstalled: string[] } {
  const known = new Set<string>(IDE_PAGES.map((p) => p.template));
  return {
    untried: installed.filter((name) => !known.has(name)).sort(),
    notInstalled: [...known].filter((name) => !installed.includes(name)).sort(),
  };
}
