'use strict';
// A mocha reporter that appends one JSON line per event to the file named
// by `--reporter-option output=FILE`: first every test the run plans, then
// each result as it comes. Written as it goes, because an uncaught error can
// end the process without mocha's `end` event; the runner (run.js) counts a
// planned test with no result as not run.
const fs = require('fs');

function Reporter(runner, options) {
  const out = options.reporterOptions && options.reporterOptions.output;
  if (!out) {
    throw new Error('reporter.js needs --reporter-option output=FILE');
  }
  const write = (record) => fs.appendFileSync(out, JSON.stringify(record) + '\n');
  const planned = (suite) => {
    for (const test of suite.tests) {
      if (!test.isPending()) {
        write({ event: 'planned', title: test.fullTitle() });
      }
    }
    suite.suites.forEach(planned);
  };
  runner.once('start', () => planned(runner.suite));
  runner.on('pass', (test) => write({ event: 'pass', title: test.fullTitle() }));
  runner.on('pending', (test) => write({ event: 'pending', title: test.fullTitle() }));
  runner.on('fail', (runnable, err) => {
    // A failed hook is named as mocha names it ("before each" hook for ...);
    // the tests it stops stay planned without a result.
    const title = runnable.fullTitle();
    write({
      event: 'fail',
      title,
      hook: runnable.type === 'hook',
      error: String((err && (err.message || err.name)) || err).slice(0, 500),
    });
  });
  runner.once('end', () => write({ event: 'end' }));
}

module.exports = Reporter;
