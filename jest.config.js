const jestJupyterLab = require('@jupyterlab/testing/lib/jest-config');

// ES-module-only packages jest must transform (d3 v7 among them); this list
// replaces the base config's, which would otherwise skip them.
const esModules = [
  '@codemirror',
  '@jupyter/ydoc',
  '@jupyter/react-components',
  '@jupyter/web-components',
  '@jupyterlab/',
  '@marijn',
  '@microsoft',
  'color',
  'd3',
  'd3-[a-z-]+',
  'internmap',
  'exenv-es6',
  'lib0',
  'marked',
  'nanoid',
  'vscode-ws-jsonrpc',
  'y-protocols',
  'y-websocket',
  'yjs'
].join('|');

// testTimeout is a global option in jest 29, not a per-project one.
const { reporters, coverageReporters, coverageDirectory, testTimeout, ...base } = jestJupyterLab(__dirname);
const shared = {
  modulePathIgnorePatterns: ['<rootDir>/jupyterlab_cuda_memdiff/labextension', '<rootDir>/ui-tests'],
  // d3 v7 ships .mjs files: babel must transform those too.
  transform: { ...base.transform, '^.+\\.mjs$': 'babel-jest' },
  moduleFileExtensions: base.moduleFileExtensions
};

module.exports = {
  reporters: ['default'],
  testTimeout: 120000,
  projects: [
    {
      // The engine and the CLI are plain TypeScript for Node: no DOM, no shims.
      ...shared,
      displayName: 'engine',
      testEnvironment: 'node',
      testRegex: 'src/(engine|cli)/.*__tests__/.*\\.spec\\.ts$'
    },
    {
      ...base,
      ...shared,
      displayName: 'frontend',
      testRegex: 'src/(?!engine/|cli/).*__tests__/.*\\.spec\\.tsx?$',
      transformIgnorePatterns: [`/node_modules/(?!${esModules}).+`]
    }
  ]
};
