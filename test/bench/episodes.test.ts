import { describe, expect, it } from 'vitest';
import { episodeRates } from '../../bench/episodes.js';

describe('bench/episodes.ts', () => {
  it('times the cached-world modes on cached worlds and the fresh-world mode on worlds generated in the round', () => {
    // The fresh-world round used to clear the world cache, so the rounds after it in the same repeat (no_text,
    // value_only) generated their worlds again and were timed as "world cached" with world generation in them.
    const out = episodeRates(3, 2, ['text', 'text_fresh_world', 'text_bytes', 'no_text', 'value_only']) as { worlds_generated_per_round: Record<string, number> };
    expect(out.worlds_generated_per_round).toEqual({ text: 0, text_fresh_world: 3, text_bytes: 0, no_text: 0, value_only: 0 });
  }, 120_000);

  it('text_bytes reads the same text as text, as bytes', () => {
    const text = episodeRates(2, 1, ['text']) as { text_chars_per_round: number };
    const bytes = episodeRates(2, 1, ['text_bytes']) as { text_bytes_chars_per_round: number };
    expect(bytes.text_bytes_chars_per_round).toBeGreaterThan(100_000);
    expect(bytes.text_bytes_chars_per_round).toBe(text.text_chars_per_round);
  }, 120_000);
});
