/**
 * Galata in Debian's Chromium: Playwright cannot download its own browsers
 * here, and its ffmpeg for videos is missing, so video is off.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const path = require('path');

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
// UI_TESTS_PORT lets two checkouts run their browser tests side by side.
const PORT = Number(process.env.UI_TESTS_PORT || 8888);
// Extra kernel specs for the tests (a kernel replaying a recorded H200 session).
const JUPYTER_PATH = [
  path.resolve(__dirname, '../demo/jupyter-path'),
  // the tests' own kernels: replays of recorded sessions (40,000 blocks, an OOM, ...), and Bash (not Python)
  path.resolve(__dirname, 'jupyter-path'),
  process.env.JUPYTER_PATH
]
  .filter(Boolean)
  .join(path.delimiter);

module.exports = {
  ...baseConfig,
  // bench/ holds the panel benchmark (npm run bench:ui), not tests.
  testDir: './tests',
  reporter: [['list'], ['html', { open: 'never' }]],
  retries: 0,
  use: {
    ...baseConfig.use,
    baseURL: `http://localhost:${PORT}`,
    video: 'off',
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  },
  webServer: {
    command: `jupyter lab --config jupyter_server_test_config.py --ServerApp.port=${PORT}`,
    url: `http://localhost:${PORT}/lab`,
    timeout: 120 * 1000,
    reuseExistingServer: !process.env.CI,
    env: { ...process.env, JUPYTER_PATH }
  }
};
