/**
 * DynamoDB ignores a TTL more than 5 years in the past (FAQ Q19) so that small numbers written by
 * mistake do not delete data. The line is 1826 days = 157,766,400 s: the shortest run of 5 calendar
 * years (5 × 365 days + the one leap day any 5 consecutive years contain). A fixed length keeps the
 * verdict independent of the calendar, and the shortest one errs toward keeping: an item between
 * 1826 and 1827 days past its TTL is ignored, never deleted. (5 × 365.25 days would be 157,788,000 s;
 * that is not the value used.)
 */
export const FIVE_YEARS_SECONDS = 157_766_400;
export const FIVE_YEARS_MS = FIVE_YEARS_SECONDS * 1000;

/**
 * A seconds value at or above 1e11 (the year 5138) is almost certainly milliseconds written by
 * mistake: every millisecond epoch since March 1973 is larger. Such items are reported with
 * `looksLikeMillis` and, being thousands of years away, are not deleted. A fixed line (not "now + N
 * years") keeps the flag a property of the item alone.
 */
export const LOOKS_LIKE_MILLIS_SECONDS = 1e11;

/** Cosmos DB's largest TTL in seconds (a signed 32-bit integer, about 68 years). */
export const COSMOS_MAX_TTL_SECONDS = 2_147_483_647;

/** The instants the engine accepts: the range of a JavaScript Date, in ms since the epoch. */
export const MAX_INSTANT_MS = 8.64e15;
