/**
 * The panel benchmark (npm run bench:ui): the same server and browser as the
 * tests, a longer timeout, one run. It prints figures and asserts nothing.
 */
const config = require('./playwright.config');

module.exports = {
  ...config,
  testDir: './bench',
  timeout: 600 * 1000,
  reporter: [['list']]
};
