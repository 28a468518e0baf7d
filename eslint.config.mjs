// ESLint for src/ (flat config): the JupyterLab extension template's rules
// (eslint:recommended, typescript-eslint's recommended, Prettier, the
// interface naming, curly, eqeqeq, single quotes) plus React's and the hooks'.
import js from '@eslint/js';
import prettierRecommended from 'eslint-plugin-prettier/recommended';
import react from 'eslint-plugin-react';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules',
      'dist',
      'lib',
      'coverage',
      '**/*.d.ts',
      'tests',
      '**/__tests__',
      'ui-tests',
      'jupyterlab_cuda_memdiff/labextension',
      '.venv',
      '.demo-work',
      'src/engine/protocol.generated.ts',
      'src/engine/manifest.generated.ts'
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: {
      globals: { ...globals.browser, ...globals.node },
      // The CLI is built by tsconfig.node.json, the rest by tsconfig.json.
      parserOptions: { project: ['tsconfig.json', 'tsconfig.node.json'], tsconfigRootDir: import.meta.dirname }
    },
    plugins: { react, 'react-hooks': reactHooks },
    settings: { react: { version: 'detect' } },
    rules: {
      ...react.configs.recommended.rules,
      ...reactHooks.configs.recommended.rules,
      // The template's rules.
      // The template asks every interface for an I prefix. Here the domain's data types are interfaces named as the
      // domain names them (Snapshot, Block, Frame, SnapshotDiff, CellRecord: STYLE.md's habit 12), so the rule keeps
      // PascalCase and lets the prefix be: `IFoo` for contracts, plain nouns for data.
      '@typescript-eslint/naming-convention': ['error', { selector: 'interface', format: ['PascalCase'] }],
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-use-before-define': 'off',
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error',
      // Components are function components typed by TypeScript, not by propTypes.
      'react/prop-types': 'off'
    }
  },
  {
    // The build and bench scripts are CommonJS for Node.
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      // `const crypto = require('crypto')` is how a CommonJS script takes Node's module, not a redeclaration.
      'no-redeclare': ['error', { builtinGlobals: false }],
      // The template's setting; rest siblings drop keys on purpose (jest.config.js).
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none', ignoreRestSiblings: true }]
    }
  },
  prettierRecommended,
  {
    // After Prettier's config, which turns `quotes` off: the template keeps single quotes as an error.
    files: ['src/**/*.{ts,tsx}'],
    rules: { quotes: ['error', 'single', { avoidEscape: true, allowTemplateLiterals: false }] }
  }
);
