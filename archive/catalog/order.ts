/**
 * The order of archived versions of an item: deletion time, then the stream SequenceNumber (a
 * decimal string of up to 40 digits, compared as a number), then eventID so the order is total.
 */
export interface Versioned {
  deletedAtMs: number;
  sequenceNumber: string;
  eventID: string;
}

const DIGITS = /^\d+$/;

export function compareSequenceNumbers(a: string, b: string): number {
  if (DIGITS.test(a) && DIGITS.test(b)) {
    const x = a.replace(/^0+(?=\d)/, '');
    const y = b.replace(/^0+(?=\d)/, '');
    if (x.length !== y.length) return x.length - y.length;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

export function compareVersions(a: Versioned, b: Versioned): number {
  if (a.deletedAtMs !== b.deletedAtMs) return a.deletedAtMs - b.deletedAtMs;
  const bySeq = compareSequenceNumbers(a.sequenceNumber, b.sequenceNumber);
  if (bySeq !== 0) return bySeq;
  return a.eventID < b.eventID ? -1 : a.eventID > b.eventID ? 1 : 0;
}
