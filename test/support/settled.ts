/**
 * Waits until every promise has settled. A test that acts with several promises and then asserts their rejections one
 * after another must call it first: while it awaits the first assertion, a second promise that rejects has no handler
 * yet, which Node reports as an unhandled rejection — and vitest fails the whole run for it, whichever test is last.
 */
export async function settled(...promises: readonly Promise<unknown>[]): Promise<void> {
  await Promise.allSettled(promises);
}
