/** A DynamoDB number attribute value. */
export function n(value: number | string): { N: string } {
  return { N: String(value) };
}
