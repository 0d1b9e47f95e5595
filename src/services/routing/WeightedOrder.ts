/**
 * The weighted random order inside one priority tier of the router
 * (`ChannelRouter.candidates`), over plain values and an injected draw.
 *
 * @since 0.1.0
 */

/**
 * Orders `items` by weighted random sampling without replacement (the first is
 * picked with probability weight / total, and so on). Zero weights go last.
 * `random` draws a number in [0, 1): the router passes its Effect `Random`'s
 * `nextDoubleUnsafe`, so a seeded `Random` makes the order reproducible.
 *
 * @category routing
 */
export const weightedOrder = <A>(
  items: ReadonlyArray<A>,
  weight: (item: A) => number,
  random: () => number
): Array<A> => {
  const pool = items.filter((item) => weight(item) > 0)
  const zero = items.filter((item) => weight(item) <= 0)
  const out: Array<A> = []
  while (pool.length > 0) {
    const total = pool.reduce((sum, item) => sum + weight(item), 0)
    let point = random() * total
    let index = 0
    for (; index < pool.length - 1; index++) {
      point -= weight(pool[index])
      if (point < 0) break
    }
    out.push(pool[index])
    pool.splice(index, 1)
  }
  return out.concat(zero)
}
