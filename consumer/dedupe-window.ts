import { ValidationError } from '../core/errors';
/**
 * The last `capacity` ids seen, oldest forgotten first. A Map keeps insertion order, so the first
 * key is the least recently touched one once `touch` re-inserts on every hit.
 */
export class DedupeWindow {
  private readonly ids = new Map<string, true>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new ValidationError('dedupe window capacity must be a positive integer');
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Remember `id` as the most recent; forget the oldest beyond capacity. */
  touch(id: string): void {
    this.ids.delete(id);
    this.ids.set(id, true);
    while (this.ids.size > this.capacity) {
      const oldest = this.ids.keys().next();
      if (oldest.done) break;
      this.ids.delete(oldest.value);
    }
  }

  get size(): number {
    return this.ids.size;
  }
}
