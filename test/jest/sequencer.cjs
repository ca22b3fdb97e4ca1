const { readFileSync } = require('node:fs');
const { relative, resolve } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = resolve(__dirname, '..', '..');
/** Seconds each suite took in a full run (written by timing-reporter.cjs with TTLSTREAM_TEST_DURATIONS_OUT). */
const DURATIONS = resolve(__dirname, 'durations.json');
/** A suite not in durations.json yet: as long as a typical integration suite. */
const UNKNOWN_SECONDS = 30;

function knownDurations() {
  try {
    return JSON.parse(readFileSync(DURATIONS, 'utf8'));
  } catch {
    return {};
  }
}

/**
 * Longest suites first, from the committed durations: a fresh clone has no jest cache, and jest's fallback (file
 * size) would start a 150 s fault suite last and leave the other workers idle while it finishes alone.
 */
class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const durations = knownDurations();
    const seconds = (test) => durations[relative(ROOT, test.path)] ?? UNKNOWN_SECONDS;
    return [...tests].sort((a, b) => seconds(b) - seconds(a) || a.path.localeCompare(b.path));
  }
}

module.exports = LongestFirstSequencer;
