import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", ".userland/", "artifacts/", "charts/", "deploy/"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ["eslint.config.js"] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", name: ["test", "it", "describe", "suite"], package: "node:test" },
          ],
        },
      ],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  {
    // The program does not lean on its tests: what benchmarks, scripts and the local platform share
    // with the tests lives outside test/ (cluster/harness/, reliability/; docs/decisions/0007).
    files: ["**/*.ts"],
    ignores: ["test/**", "**/test/**"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "(^|/)test/",
              message:
                "code outside test/ must not import from a test folder: move what it needs out of test/",
            },
          ],
        },
      ],
    },
  },
);
