const { writeFileSync } = require('node:fs');
const { relative, resolve } = require('node:path');

const ROOT = resolve(__dirname, '..', '..');
const SLOWEST = 15;

/**
 * After jest's own report: the slowest suites with their wall times (how CI time grows shows here), and one closing
 * line `tests: N passed, N failed[, N skipped]` that CI reads. TTLSTREAM_TEST_DURATIONS_OUT=<file> also writes
 * every suite's seconds as JSON (test/jest/durations.json is such a file, read by sequencer.cjs).
 */
class TimingReporter {
  onRunComplete(_contexts, results) {
    const suites = results.testResults
      .map((r) => ({
        path: relative(ROOT, r.testFilePath),
        seconds: (r.perfStats.end - r.perfStats.start) / 1000,
        failed: r.numFailingTests > 0 || r.testExecError !== undefined,
      }))
      .sort((a, b) => b.seconds - a.seconds);
    const lines = suites
      .slice(0, SLOWEST)
      .map((s) => `${s.seconds.toFixed(1).padStart(8)} s  ${s.failed ? 'FAILED ' : ''}${s.path}`);
    process.stderr.write(
      `\n::: the ${Math.min(SLOWEST, suites.length)} slowest suites\n${lines.join('\n')}\n`,
    );
    const out = process.env.TTLSTREAM_TEST_DURATIONS_OUT;
    if (out) {
      const durations = Object.fromEntries(
        [...suites].sort((a, b) => a.path.localeCompare(b.path)).map((s) => [s.path, Math.round(s.seconds)]),
      );
      writeFileSync(out, `${JSON.stringify(durations, null, 2)}\n`);
    }
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\ntests: ${results.numPassedTests} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}\n`,
    );
  }
}

module.exports = TimingReporter;
