/**
 * CSV as RFC 4180 writes it: a field is quoted when it holds a comma, a double quote, CR or LF (or starts or ends
 * with a space, which some readers trim), and a double quote inside is doubled. Lines end with CRLF, as the RFC
 * says; null and undefined are empty fields. Values are never altered otherwise: an item key is evidence.
 */
export function csvField(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\r\n]|^ | $/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvLine(values: ReadonlyArray<string | number | boolean | null | undefined>): string {
  return values.map(csvField).join(',') + '\r\n';
}
