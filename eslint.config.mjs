// ESLint for the browser modules (ui/static/*.js, the loaders in ui/assets/*.js) and their node tests
// (tests/js/*.mjs): `make lint-js`, run by `make test`. ESLint comes from package.json (npm ci, into node_modules).
// The recommended rules, and those that catch a mistake rather than a taste; await in a loop is allowed (a chart's
// operations are applied in order on purpose).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/**", "ui/vendor/**", ".venv/**"] },
  js.configs.recommended,
  {
    files: ["ui/static/**/*.js", "ui/assets/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.browser } },
  },
  {
    files: ["tests/js/**/*.mjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
  {
    rules: {
      "array-callback-return": "error",
      "consistent-return": "error",
      curly: ["error", "multi-line"],
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-console": ["error", { allow: ["error", "warn"] }],
      "no-eval": "error",
      "no-implicit-coercion": ["error", { boolean: false }],
      "no-loop-func": "error",
      "no-new-func": "error",
      "no-promise-executor-return": "error",
      "no-return-assign": "error",
      "no-self-compare": "error",
      "no-sequences": "error",
      "no-shadow": "error",
      "no-template-curly-in-string": "error",
      "no-throw-literal": "error",
      "no-unused-expressions": "error",
      "no-unused-vars": ["error", { argsIgnorePattern: "^_", caughtErrors: "all", caughtErrorsIgnorePattern: "^_" }],
      "no-use-before-define": ["error", { functions: false }],
      "no-var": "error",
      "prefer-const": "error",
      "prefer-promise-reject-errors": "error",
      radix: "error",
    },
  },
];
